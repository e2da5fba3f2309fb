#pragma once
// Determinism mode for the duration of one run: deterministic algorithms, no cuDNN autotuning,
// no TF32 (cuBLAS, cuDNN), a fixed intra-op thread count. Torch's switches are process-global, so the
// guard saves them and puts them back when the run ends, whichever way it ends.
namespace dd::memory {

class DeterminismGuard {
public:
    // deterministic: the switches above; threads > 0: torch intra-op threads for the run (either mode).
    // Determinism mode without a count pins the process's start-up count (startupThreadCount), so nothing
    // that changed torch's count in between changes how the sums are split.
    DeterminismGuard(bool deterministic, int threads);
    ~DeterminismGuard();
    DeterminismGuard(const DeterminismGuard&) = delete;
    DeterminismGuard& operator=(const DeterminismGuard&) = delete;

    int threads() const;  // the intra-op thread count in force during the run

    // Torch's intra-op thread count before any run changed it (physical cores, or OMP_NUM_THREADS).
    static int startupThreadCount();

private:
    bool m_deterministic, m_deterministicWarnOnly, m_benchmarkCudnn, m_deterministicCudnn, m_tf32Cublas, m_tf32Cudnn;
    int m_threads;
};

// With no thread count in the plan, outside determinism mode, a run's denoising and decoding take a thread
// count chosen for the load once, before the first step, and kept to the end (the sidecar records it; a rerun
// that pins it reproduces the run to the bit). Small steps are dominated by the team's barriers, where one
// thread that lost its core to another program stalls the rest: they run on the cores other programs leave
// free. Big steps are dominated by arithmetic, where each thread is a share of the CPU the kernel hands out:
// they take one more thread per busy core (threadsForSharedCores), the start-up count on an idle machine, and
// spin only briefly while they wait (app/openmp_waiting.cpp). Measured in
// docs/benchmarks.md, "A busy computer". Made after the run's DeterminismGuard, which puts torch's count back
// when the run ends.
class LoadAwareThreads {
public:
    // A step's work in UNet parameters x latent positions x UNet batch rows. Below it a step is small: the
    // built-in model's 128 px step is 5e8 (8 ms on 2 cores), SD 1.5's 512 px step with CFG 7e12 (9.5 s);
    // SD 1.5 at 64 px is 1.1e11.
    static constexpr double kSmallStepWork = 1e11;

    explicit LoadAwareThreads(bool active) : m_active(active) {}
    void beforeSteps(double stepWork);  // once a run; later calls keep the first choice

private:
    bool m_active;
    bool m_chosen = false;
};

} // namespace dd::memory
