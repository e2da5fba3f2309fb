#pragma once
// Memory telemetry: process RSS and its peak on CPU; CUDA allocator statistics and device free/total on GPU.
// Torch-free header (the GUI gauge includes it); the CUDA half lives in memory_probe.cpp and is safe to call on
// machines without a GPU (the CUDA fields stay zero, `cuda` stays false).
#include "core/api/memory_sample.h"

#include <cstdint>
#include <string>

namespace dd::memory {

// Cheap (a /proc read, and allocator counters on CUDA): call it every step. cudaDevice < 0, or a device that
// does not exist, samples the host only.
api::MemorySample sampleMemory(int cudaDevice = -1);
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
