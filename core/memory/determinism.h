#pragma once
// Determinism mode for the duration of one run (issue 8): deterministic algorithms, no cuDNN autotuning,
// no TF32 (cuBLAS, cuDNN), a fixed intra-op thread count. Torch's switches are process-global, so the
// guard saves them and puts them back when the run ends, whichever way it ends.
namespace dd::memory {

class DeterminismGuard {
public:
    // deterministic: the switches above; threads > 0: torch intra-op threads for the run (either mode).
    DeterminismGuard(bool deterministic, int threads);
    ~DeterminismGuard();
    DeterminismGuard(const DeterminismGuard&) = delete;
    DeterminismGuard& operator=(const DeterminismGuard&) = delete;

    int threads() const;  // the intra-op thread count in force during the run

private:
    bool m_deterministic, m_deterministicWarnOnly, m_benchmarkCudnn, m_deterministicCudnn, m_tf32Cublas, m_tf32Cudnn;
    int m_threads;
};

} // namespace dd::memory
