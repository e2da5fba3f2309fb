#include "core/memory/cpu_load.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

#ifdef __linux__
#include <sched.h>
#endif

namespace dd::memory {
namespace {

// "procs_running" in /proc/stat: the tasks (threads) on all run queues at this instant, this process' included.
int runnableThreadsSystemWide() {
    std::ifstream in("/proc/stat");
    for (std::string key; in >> key;) {
        if (key == "procs_running") {
            int n = -1;
            in >> n;
            return n;
        }
        in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return -1;
}

// This process' threads in state R (running or runnable): the one sampling, OpenMP workers still spinning...
int ownRunnableThreads() {
    int n = 0;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        std::ifstream in(task.path() / "stat");
        std::string stat;
        std::getline(in, stat);
        const auto close = stat.rfind(')');  // "tid (name) S ...": the name may hold spaces and parentheses
        if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'R') ++n;
    }
    return n;
}

} // namespace

int usableCpus() {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
    return int(std::max(1u, std::thread::hardware_concurrency()));
}

int otherRunnableThreads() {
    const int all = runnableThreadsSystemWide();
    if (all < 0) return -1;
    return std::max(0, all - ownRunnableThreads());
}

int threadsForFreeCores(int most, int cpus, int others) {
    if (others < 0) return std::max(1, most);
    return std::clamp(cpus - others, 1, std::max(1, most));
}

int threadsForSharedCores(int base, int cpus, int others) {
    base = std::max(1, base);
    return others <= 0 ? base : base + std::min(others, cpus);
}

namespace {

// The least of three samples a millisecond apart (-1: unknown).
int otherRunnableThreadsSteady() {
    int least = -1;
    for (int i = 0; i < 3; ++i) {
        if (i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const int others = otherRunnableThreads();
        if (others >= 0 && (least < 0 || others < least)) least = others;
    }
    return least;
}

} // namespace

int threadsForFreeCoresNow(int most) { return threadsForFreeCores(most, usableCpus(), otherRunnableThreadsSteady()); }

int threadsForSharedCoresNow(int base) { return threadsForSharedCores(base, usableCpus(), otherRunnableThreadsSteady()); }

} // namespace dd::memory
