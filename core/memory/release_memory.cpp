#include "core/memory/release_memory.h"

#include "core/memory/memory_probe.h"

#include <c10/core/CachingDeviceAllocator.h>

#if __has_include(<malloc.h>)
#include <malloc.h>
#endif
#include <dlfcn.h>

namespace dd::memory {

namespace {

// tcmalloc's C entry point, looked up rather than linked: the same code runs under glibc malloc (the sanitized
// builds, DD_TCMALLOC=OFF), where the name does not exist.
using ReleaseFn = void (*)();
ReleaseFn tcmallocRelease() {
    static const auto fn = reinterpret_cast<ReleaseFn>(dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
    return fn;
}

void setTcmallocDecommit(bool eager) {
    using SetFn = int (*)(const char*, size_t);
    static const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "MallocExtension_SetNumericProperty"));
    if (set) set("tcmalloc.aggressive_memory_decommit", eager ? 1 : 0);
}

} // namespace

void releaseFreedMemory() {
    if (cudaDeviceCount() > 0) c10::getDeviceAllocator(c10::DeviceType::CUDA)->emptyCache();
    releaseFreedHostMemory();
}

void releaseFreedHostMemory() {
    if (const auto release = tcmallocRelease()) release();
#if defined(__GLIBC__)
    else malloc_trim(0);
#endif
}

ReturnFreedMemoryAtOnce::ReturnFreedMemoryAtOnce() { setTcmallocDecommit(true); }
ReturnFreedMemoryAtOnce::~ReturnFreedMemoryAtOnce() { setTcmallocDecommit(false); }

const char* cpuAllocatorName() { return tcmallocRelease() ? "tcmalloc" : "glibc malloc"; }

} // namespace dd::memory
