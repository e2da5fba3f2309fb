#include "core/memory/memory_probe.h"

#include <fstream>
#include <sstream>
#include <string>

// The CUDA half compiles wherever the torch wheel ships its CUDA headers; every call is guarded by
// device_count(), which is 0 (no exception) on machines without a GPU or driver.
#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#define DD_PROBE_CUDA 1
#endif

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

bool validDevice(int cudaDevice) { return cudaDevice >= 0 && cudaDevice < cudaDeviceCount(); }

#ifdef DD_PROBE_CUDA
void sampleCuda(MemorySample& s, int device) {
    const auto index = c10::DeviceIndex(device);
    s.cuda = true;
    s.deviceName = at::cuda::getDeviceProperties(index)->name;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    const auto all = size_t(c10::CachingAllocator::StatType::AGGREGATE);
    s.deviceAllocated = stats.allocated_bytes[all].current;
    s.deviceReserved = stats.reserved_bytes[all].current;
    s.devicePeak = stats.allocated_bytes[all].peak;
    const auto [freeBytes, totalBytes] = c10::cuda::CUDACachingAllocator::get()->getMemoryInfo(index);
    s.deviceFree = int64_t(freeBytes);
    s.deviceTotal = int64_t(totalBytes);
}
#endif

} // namespace

int cudaDeviceCount() {
#ifdef DD_PROBE_CUDA
    return int(c10::cuda::device_count());
#else
    return 0;
#endif
}

int64_t physicalMemoryBytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    int64_t kb = 0;
    while (in >> key >> kb) {
        if (key == "MemTotal:") return kb * 1024;
        in.ignore(1 << 10, '\n');
    }
    return 0;
}

MemorySample sampleMemory(int cudaDevice) {
    MemorySample s;
    s.hostRss = procStatusBytes("VmRSS");
    s.hostPeak = procStatusBytes("VmHWM");
    s.hostTotal = physicalMemoryBytes();
    s.deviceName = "CPU";
    s.cudaDevice = cudaDevice;
#ifdef DD_PROBE_CUDA
    if (validDevice(cudaDevice)) sampleCuda(s, cudaDevice);
#endif
    return s;
}

void resetPeaks(int cudaDevice) {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux ≥ 4.0).
    std::ofstream("/proc/self/clear_refs") << "5";
#ifdef DD_PROBE_CUDA
    if (validDevice(cudaDevice)) c10::cuda::CUDACachingAllocator::resetPeakStats(c10::DeviceIndex(cudaDevice));
#endif
}

PresetTarget presetTarget(int cudaDevice) {
    PresetTarget t;
    if (validDevice(cudaDevice)) {
        const auto s = sampleMemory(cudaDevice);
        t.bytes = s.deviceTotal;
        t.cuda = true;
        t.deviceName = s.deviceName;
        return t;
    }
    t.bytes = physicalMemoryBytes();
    t.deviceName = "CPU";
    return t;
}

} // namespace dd::memory
