#include "core/memory/memory_probe.h"

#include "core/memory/cuda_backend.h"

// The CUDA half goes through c10's device-generic allocator interface, which the CUDA caching allocator
// implements once libtorch_cuda is loaded; every call is guarded by cudaDeviceCount(), 0 without a GPU or driver.
#include <c10/core/CachingDeviceAllocator.h>
#include <torch/cuda.h>

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

bool validDevice(int cudaDevice) { return cudaDevice >= 0 && cudaDevice < cudaDeviceCount(); }

c10::DeviceAllocator& cudaAllocator() { return *c10::getDeviceAllocator(c10::DeviceType::CUDA); }

void sampleCuda(api::MemorySample& s, int device) {
    const auto index = c10::DeviceIndex(device);
    s.cuda = true;
    s.deviceName = cudaDeviceName(device);
    const auto stats = cudaAllocator().getDeviceStats(index);
    const auto all = size_t(c10::CachingAllocator::StatType::AGGREGATE);
    s.deviceAllocated = stats.allocated_bytes[all].current;
    s.deviceReserved = stats.reserved_bytes[all].current;
    s.devicePeak = stats.allocated_bytes[all].peak;
    const auto [freeBytes, totalBytes] = cudaAllocator().getMemoryInfo(index);
    s.deviceFree = int64_t(freeBytes);
    s.deviceTotal = int64_t(totalBytes);
}

} // namespace

int cudaDeviceCount() { return ensureCudaBackend() ? int(torch::cuda::device_count()) : 0; }

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

api::MemorySample sampleMemory(int cudaDevice) {
    api::MemorySample s;
    s.hostRss = procStatusBytes("VmRSS");
    s.hostPeak = procStatusBytes("VmHWM");
    s.hostTotal = physicalMemoryBytes();
    s.deviceName = "CPU";
    s.cudaDevice = cudaDevice;
    if (validDevice(cudaDevice)) sampleCuda(s, cudaDevice);
    return s;
}

void resetPeaks(int cudaDevice) {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux ≥ 4.0).
    std::ofstream("/proc/self/clear_refs") << "5";
    if (validDevice(cudaDevice)) cudaAllocator().resetPeakStats(c10::DeviceIndex(cudaDevice));
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
