#pragma once
// What other programs leave of the CPU, read from Linux's /proc. An OpenMP team waits at every barrier for its
// slowest thread, and a thread whose core another program holds is slow: on a busy machine fewer threads
// finish sooner (docs/benchmarks.md, "A busy computer"). Torch-free; elsewhere than Linux nothing is known
// and every core counts as free.
#include <chrono>

namespace dd::memory {

int usableCpus();             // CPUs this process may run on (its affinity mask)
int otherRunnableThreads();   // threads of other processes on a run queue now; -1 when unknown

// The thread count for a team on `cpus` CPUs while `others` threads of other programs want to run: the free
// cores, at least 1 and at most `most`.
int threadsForFreeCores(int most, int cpus, int others);

// Sampled between steps: at most one sample per `interval`; the answer is for the least load among the last
// three samples, so a blip (a short command) takes no thread away while load that went gives threads back at once.
class FreeCores {
public:
    explicit FreeCores(int most, std::chrono::milliseconds interval = std::chrono::milliseconds(100));
    int threads();  // samples when due

private:
    int m_most, m_cpus;
    std::chrono::milliseconds m_interval;
    std::chrono::steady_clock::time_point m_last{};
    int m_samples[3] = {-1, -1, -1};
    int m_next = 0;
};

} // namespace dd::memory
