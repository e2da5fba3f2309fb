#pragma once
// Memory telemetry: process RSS and its peak on CPU; CUDA allocator statistics and device free/total on GPU.
// Torch-free header (the GUI gauge includes it); the CUDA half lives in memory_probe.cpp and is safe to call on
// machines without a GPU (the CUDA fields stay zero, `cuda` stays false).
#include <cstdint>
#include <string>

namespace dd::memory {

struct MemorySample {
    int64_t hostRss = 0;          // bytes resident now (VmRSS)
    int64_t hostPeak = 0;         // peak resident since the last resetPeaks() (VmHWM)
    int64_t hostTotal = 0;        // physical RAM
    bool cuda = false;            // the fields below are meaningful
    int cudaDevice = -1;
    std::string deviceName;       // "NVIDIA H200" / "CPU"
    int64_t deviceAllocated = 0;  // caching allocator: bytes in live tensors
    int64_t deviceReserved = 0;   // caching allocator: bytes held from the driver
    int64_t devicePeak = 0;       // peak allocated since the last resetPeaks()
    int64_t deviceFree = 0;       // driver: free on the device
    int64_t deviceTotal = 0;      // driver: total on the device
};

// Cheap (a /proc read, and allocator counters on CUDA): call it every step. cudaDevice < 0, or a device that
// does not exist, samples the host only.
MemorySample sampleMemory(int cudaDevice = -1);
// Starts a new peak window (VmHWM via /proc/self/clear_refs; CUDA peak stats).
void resetPeaks(int cudaDevice = -1);

int cudaDeviceCount();  // 0 without a GPU or a CUDA driver
int64_t physicalMemoryBytes();

// The memory a preset is chosen against: the CUDA device's total memory when one exists (cudaDevice, default
// the first), else physical RAM. Feed it to recommendPreset(presets, bytes, cuda).
struct PresetTarget {
    int64_t bytes = 0;
    bool cuda = false;
    std::string deviceName;  // "NVIDIA H200" or "CPU"
};
PresetTarget presetTarget(int cudaDevice = 0);

} // namespace dd::memory
