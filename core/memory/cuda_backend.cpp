#include "core/memory/cuda_backend.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace dd::memory {
namespace {

std::atomic<bool> g_loaded{false};

#ifdef DD_CUDA_BACKEND
// The directory libtorch_cpu was loaded from: libtorch_cuda sits beside it, in the wheel and in our packages.
std::string torchLibraryDir() {
    std::string dir;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            const std::string name = info->dlpi_name ? info->dlpi_name : "";
            const auto slash = name.rfind('/');
            if (slash == std::string::npos || name.compare(slash, std::string::npos, "/libtorch_cpu.so") != 0) return 0;
            *static_cast<std::string*>(out) = name.substr(0, slash);
            return 1;
        },
        &dir);
    return dir;
}

void load() {
    // The driver first: without it libtorch_cuda would load (~0.4 s, ~370 MB) only to report no device.
    if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) return;
    const std::string dir = torchLibraryDir();
    if (dir.empty()) return;
    // RTLD_GLOBAL, as if linked: libtorch_cuda_linalg, which torch opens later, resolves symbols against it.
    if (!dlopen((dir + "/libtorch_cuda.so").c_str(), RTLD_NOW | RTLD_GLOBAL)) {
        // A driver without the backend (a CPU-only package, a broken install): say why CUDA is not offered.
        std::fprintf(stderr, "DiffusionDesk: NVIDIA driver found but libtorch's CUDA backend did not load: %s\n",
                     dlerror());
        return;
    }
    g_loaded = true;
}
#else
void load() {}  // a DD_TORCH_CUDA=OFF build: the CPU-only package has no libtorch_cuda
#endif

} // namespace

bool ensureCudaBackend() {
    static std::once_flag once;
    std::call_once(once, load);
    return g_loaded;
}

bool cudaBackendLoaded() { return g_loaded; }

namespace {
// While the program starts (after libtorch's own initialisers, which never ask about CUDA): see the header.
[[maybe_unused]] const bool g_loadedAtStart = ensureCudaBackend();
} // namespace

std::string cudaDeviceName(int cudaDevice) {
    // The driver API's C entry points (stable across CUDA versions, unlike the runtime's device-properties struct),
    // looked up once: the probe asks every step. The driver stays loaded for the process's life.
    struct Driver {
        int (*get)(int*, int) = nullptr;
        int (*name)(char*, int, int) = nullptr;
    };
    static const Driver driver = [] {
        Driver d;
        void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        const auto init = lib ? reinterpret_cast<int (*)(unsigned)>(dlsym(lib, "cuInit")) : nullptr;
        if (!init || init(0) != 0) return d;
        d.get = reinterpret_cast<int (*)(int*, int)>(dlsym(lib, "cuDeviceGet"));
        d.name = reinterpret_cast<int (*)(char*, int, int)>(dlsym(lib, "cuDeviceGetName"));
        return d;
    }();
    char buffer[256] = {};
    int device = 0;
    const bool ok = driver.get && driver.name && driver.get(&device, cudaDevice) == 0 &&
                    driver.name(buffer, int(sizeof buffer), device) == 0;
    return ok ? buffer : std::string();
}

} // namespace dd::memory
