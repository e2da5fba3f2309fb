#include "core/memory/device_cap.h"

#include "core/memory/memory_probe.h"

#include <c10/core/CachingDeviceAllocator.h>

// The cap is a method of the CUDA caching allocator itself (no device-generic form): its declaration needs the
// CUDA headers the wheel ships. Only that pure virtual is called here, and this file is kept out of the unity
// build: the header's inline methods call libc10_cuda and the CUDA runtime, which no program links.
#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define DD_CAP_CUDA 1
#endif

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dd::memory {

double capDeviceMemory(int cudaDevice, int64_t bytes) {
#ifdef DD_CAP_CUDA
    if (cudaDevice < 0 || cudaDevice >= cudaDeviceCount())
        throw std::runtime_error("cannot cap CUDA memory: no CUDA device " + std::to_string(cudaDevice));
    const double total = double(sampleMemory(cudaDevice).deviceTotal);
    const double fraction = std::clamp(double(bytes) / total, 0.0, 1.0);
    // c10's CUDA allocator slot holds the CUDA caching allocator once libtorch_cuda is loaded (it registers it).
    static_cast<c10::cuda::CUDACachingAllocator::CUDAAllocator*>(c10::getDeviceAllocator(c10::DeviceType::CUDA))
        ->setMemoryFraction(fraction, c10::DeviceIndex(cudaDevice));
    return fraction;
#else
    (void)cudaDevice;
    (void)bytes;
    throw std::runtime_error("cannot cap CUDA memory: this build has no CUDA");
#endif
}

} // namespace dd::memory
