#include "core/memory/device_cap.h"

#include <torch/cuda.h>

#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDACachingAllocator.h>
#define DD_CAP_CUDA 1
#endif

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dd::memory {

double capDeviceMemory(int cudaDevice, int64_t bytes) {
#ifdef DD_CAP_CUDA
    if (!torch::cuda::is_available() || cudaDevice < 0 || cudaDevice >= int(torch::cuda::device_count()))
        throw std::runtime_error("cannot cap CUDA memory: no CUDA device " + std::to_string(cudaDevice));
    const auto total = at::cuda::getDeviceProperties(c10::DeviceIndex(cudaDevice))->totalGlobalMem;
    const double fraction = std::clamp(double(bytes) / double(total), 0.0, 1.0);
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, c10::DeviceIndex(cudaDevice));
    return fraction;
#else
    (void)cudaDevice;
    (void)bytes;
    throw std::runtime_error("cannot cap CUDA memory: this build has no CUDA");
#endif
}

} // namespace dd::memory
