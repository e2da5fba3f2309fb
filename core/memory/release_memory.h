#pragma once
// Gives freed memory back after a model is released, and says which CPU allocator the process runs on.
// glibc keeps freed heap pages (malloc_trim returns them to the OS, so RSS really drops); tcmalloc, which the
// programs link (cmake/DDAllocator.cmake), keeps freed spans for reuse until asked to release them; the CUDA
// caching allocator keeps freed blocks reserved.
namespace dd::memory {

void releaseFreedMemory();

// The CPU half alone: what the allocator keeps of freed blocks goes back to the OS. The engine calls it as each
// stage begins, so a stage's peak is its own and not what an earlier stage left cached (the predictor's model).
void releaseFreedHostMemory();

// "tcmalloc" when gperftools' allocator serves malloc in this process, else "glibc malloc".
const char* cpuAllocatorName();

// tcmalloc keeps freed blocks for reuse, which is what makes the denoising loop fast: it allocates the same sizes
// every step, and reused memory spares it about a million page faults a step (SD 1.5 at 512²; glibc unmaps every
// large block at free and the next step gets fresh zero-filled pages). Where sizes grow as a stage goes (the VAE
// decoder: every level's tensors are larger than the last's) the kept blocks are too small for what comes next
// and pile up on top of the live ones. While one of these is alive, freed blocks go back to the OS at once
// (tcmalloc's aggressive decommit), as under glibc.
class ReturnFreedMemoryAtOnce {
public:
    ReturnFreedMemoryAtOnce();
    ~ReturnFreedMemoryAtOnce();
    ReturnFreedMemoryAtOnce(const ReturnFreedMemoryAtOnce&) = delete;
    ReturnFreedMemoryAtOnce& operator=(const ReturnFreedMemoryAtOnce&) = delete;
};

} // namespace dd::memory
