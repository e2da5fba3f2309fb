#include "core/memory/determinism.h"

#include "core/memory/cpu_load.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

namespace dd::memory {

int DeterminismGuard::startupThreadCount() {
    static const int count = at::get_num_threads();  // first asked by the first run's guard, before it sets any
    return count;
}

DeterminismGuard::DeterminismGuard(bool deterministic, int threads) {
    if (deterministic && threads <= 0) threads = startupThreadCount();
    auto& ctx = at::globalContext();
    m_deterministic = ctx.deterministicAlgorithms();
    m_deterministicWarnOnly = ctx.deterministicAlgorithmsWarnOnly();
    m_benchmarkCudnn = ctx.benchmarkCuDNN();
    m_deterministicCudnn = ctx.deterministicCuDNN();
    m_tf32Cublas = ctx.allowTF32CuBLAS();
    m_tf32Cudnn = ctx.allowTF32CuDNN();
    m_threads = at::get_num_threads();
    if (deterministic) {
        // warn_only: an op without a deterministic kernel should not abort an artist's render; the
        // kernels this app uses (conv, matmul, SDPA math, group norm) all have one.
        ctx.setDeterministicAlgorithms(true, /*warn_only=*/true);
        ctx.setDeterministicCuDNN(true);
        ctx.setBenchmarkCuDNN(false);
        ctx.setAllowTF32CuBLAS(false);
        ctx.setAllowTF32CuDNN(false);
    }
    if (threads > 0 && threads != m_threads) at::set_num_threads(threads);
}

DeterminismGuard::~DeterminismGuard() {
    auto& ctx = at::globalContext();
    ctx.setDeterministicAlgorithms(m_deterministic, m_deterministicWarnOnly);
    ctx.setDeterministicCuDNN(m_deterministicCudnn);
    ctx.setBenchmarkCuDNN(m_benchmarkCudnn);
    ctx.setAllowTF32CuBLAS(m_tf32Cublas);
    ctx.setAllowTF32CuDNN(m_tf32Cudnn);
    if (at::get_num_threads() != m_threads) at::set_num_threads(m_threads);
}

int DeterminismGuard::threads() const { return at::get_num_threads(); }

void LoadAwareThreads::beforeSteps(double stepWork) {
    if (!m_active || m_chosen) return;
    m_chosen = true;
    const int startup = DeterminismGuard::startupThreadCount();
    const int want = stepWork < kSmallStepWork ? threadsForFreeCoresNow(startup) : threadsForSharedCoresNow(startup);
    if (want != at::get_num_threads()) at::set_num_threads(want);
}

} // namespace dd::memory
