#include "core/memory/memory_probe.h"

#include <fstream>
#include <sstream>
#include <string>

namespace dd::memory {
namespace {

// "VmRSS:    123456 kB" → bytes.
int64_t procStatusBytes(const std::string& key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ":", 0) == 0) {
            std::istringstream fields(line.substr(key.size() + 1));
            int64_t kb = 0;
            fields >> kb;
            return kb * 1024;
        }
    return 0;
}

int64_t physicalMemory() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    int64_t kb = 0;
    while (in >> key >> kb) {
        if (key == "MemTotal:") return kb * 1024;
        in.ignore(1 << 10, '\n');
    }
    return 0;
}

} // namespace

MemorySample sampleMemory(int cudaDevice) {
    MemorySample s;
    s.hostRss = procStatusBytes("VmRSS");
    s.hostPeak = procStatusBytes("VmHWM");
    s.hostTotal = physicalMemory();
    s.deviceName = "CPU";
    s.cudaDevice = cudaDevice;
    // CUDA statistics: filled in by the CUDA half (issue 5).
    return s;
}

void resetPeaks(int /*cudaDevice*/) {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux ≥ 4.0).
    std::ofstream("/proc/self/clear_refs") << "5";
}

} // namespace dd::memory
