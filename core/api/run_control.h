#pragma once
// How a caller steers a run on another thread: a cancel flag polled each step, and an observer told of each step
// (progress, live preview, memory). Torch users that also want the latents implement pipeline::LatentObserver.
#include "core/api/image.h"
#include "core/api/memory_sample.h"

#include <atomic>

namespace dd::api {

// Polled once per step by the worker; set from any thread.
class CancelToken {
public:
    void cancel() { m_cancelled.store(true); }
    void reset() { m_cancelled.store(false); }
    bool cancelled() const { return m_cancelled.load(); }

private:
    std::atomic<bool> m_cancelled{false};
};

// Per-step progress. `preview` is the live preview of the first image (TAESD or the latent→RGB approximation);
// empty on steps for which wantsPreview said no.
class Observer {
public:
    virtual ~Observer() = default;
    // Asked after each step, before the preview is computed: a "no" costs nothing (the UI's adaptive cadence).
    virtual bool wantsPreview(int /*step*/, int /*totalSteps*/) { return true; }
    virtual void onStep(int step, int totalSteps, const Image& preview) = 0;
    // Memory sampled at least once per step and at every stage boundary (`stage`: "load", "encode",
    // "denoise", "decode").
    virtual void onMemory(const char* /*stage*/, const MemorySample& /*sample*/) {}
};

} // namespace dd::api
