#include "core/memory/release_memory.h"

#include <torch/cuda.h>

#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define DD_RELEASE_CUDA 1
#endif

#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

namespace dd::memory {

void releaseFreedMemory() {
#ifdef DD_RELEASE_CUDA
    if (torch::cuda::is_available()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

} // namespace dd::memory
