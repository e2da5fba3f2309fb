#pragma once
// Caps what this process may allocate on a CUDA device (torch.cuda.set_per_process_memory_fraction): the
// GPU checks run each preset inside its budget on a larger card. Allocations past the cap raise the same
// out-of-memory error a full card does.
#include <cstdint>

namespace dd::memory {

// Throws std::runtime_error when there is no such CUDA device (or the build has no CUDA).
// Returns the fraction of the device's total memory that was set.
double capDeviceMemory(int cudaDevice, int64_t bytes);

} // namespace dd::memory
