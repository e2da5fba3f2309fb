#pragma once
// libtorch's CUDA backend, loaded only where it can be used. libtorch_cuda registers CUDA's kernels, caching
// allocator, streams and hooks with the rest of libtorch when it is loaded; linking it made every start pay for it
// and for the CUDA libraries under it (measured: +0.3–0.45 s and +370 MB resident per process on a machine without a
// GPU). So no program links it: dd_core loads it while the program starts, and only where the NVIDIA driver
// (libcuda.so.1) exists, without which it would find no device anyway. At start, not on first use: libtorch
// caches its CUDA hooks on the first question about CUDA (torch::manual_seed asks), so a backend loaded after
// that question would never be seen.
// Torch-free header.
#include <string>

namespace dd::memory {

// Loads libtorch_cuda (once; thread-safe; already done at start) when the driver is there. True when CUDA's
// backend is registered.
bool ensureCudaBackend();
// Whether it is loaded.
bool cudaBackendLoaded();
// The driver's name for a device ("NVIDIA H200"); empty when it cannot say. Needs the backend loaded.
std::string cudaDeviceName(int cudaDevice);

} // namespace dd::memory
