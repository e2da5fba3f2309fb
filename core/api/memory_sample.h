#pragma once
// Memory at one moment: the process on the CPU, the caching allocator and the device on CUDA
// (core/memory/memory_probe.h takes it; the engine reports it per step).
#include <cstdint>
#include <string>

namespace dd::api {

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

} // namespace dd::api
