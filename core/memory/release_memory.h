#pragma once
// Gives freed memory back after a model is released: glibc keeps freed heap pages (malloc_trim returns
// them to the OS, so RSS really drops) and the CUDA caching allocator keeps freed blocks reserved.
namespace dd::memory {

void releaseFreedMemory();

} // namespace dd::memory
