#pragma once
// The values that cross threads and layers: plain structs, no torch, no Qt.
#include "core/memory/memory_probe.h"
#include "core/settings/generation_settings.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace dd::pipeline {

// 8-bit RGB, row-major, owned pixels.
struct Image {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> rgb;  // width * height * 3
};

struct StageTimings {
    double loadSeconds = 0;
    double encodeSeconds = 0;
    std::vector<double> stepSeconds;
    double decodeSeconds = 0;
};

// Peak memory per stage, bytes (memory::MemorySample peaks over the stage's window).
struct StagePeak {
    int64_t host = 0;    // process RSS peak
    int64_t device = 0;  // CUDA allocator peak (0 on CPU)
};
struct StageMemory {
    StagePeak load, encode, denoise, decode;
};

// What produced the pixels, so two results can be told apart (determinism, A/B, sidecars).
struct Environment {
    std::string appVersion;      // DD_VERSION
    std::string torchVersion;    // libtorch
    std::string device;          // "CPU", "NVIDIA H200"
    std::string precision;       // "unet=fp16 text_encoder=fp16 vae=fp32"
    std::string attention;       // backend actually used
    std::string offload;         // offload mode actually used
    int threads = 0;             // torch intra-op threads (at the end of the run: they may follow the load)
    bool deterministic = false;
};

struct GenerationResult {
    std::vector<Image> images;
    settings::GenerationSettings settings;
    StageTimings timings;
    std::string modelName;  // what was actually run (e.g. "tiny random-weight demo (not a real model)")
    std::string modelHash;  // A1111 short hash of the checkpoint ("" for the built-in demo)
    StageMemory memory;
    Environment environment;
    bool textEncodeCached = false;       // the conditioning came from the cache (issue 15)
    std::vector<std::string> warnings;   // what the engine changed to make the run work (NaN retry, OOM fallback)
};

// Polled once per step by the worker; set from any thread.
class CancelToken {
public:
    void cancel() { m_cancelled.store(true); }
    void reset() { m_cancelled.store(false); }
    bool cancelled() const { return m_cancelled.load(); }

private:
    std::atomic<bool> m_cancelled{false};
};

struct Cancelled : std::exception {
    const char* what() const noexcept override { return "generation cancelled"; }
};

// Per-step progress. `preview` is the live preview of the first image (TAESD or the latent→RGB approximation);
// empty on steps for which wantsPreview said no.
class Observer {
public:
    virtual ~Observer() = default;
    // Asked after each step, before the preview is computed: a "no" costs nothing (the UI's adaptive cadence).
    virtual bool wantsPreview(int /*step*/, int /*totalSteps*/) { return true; }
    virtual void onStep(int step, int totalSteps, const Image& preview) = 0;
    // The whole latent batch after each step (engine thread, torch users only: tests, tools).
    virtual void onLatents(int /*step*/, const at::Tensor& /*latents*/) {}
    // Memory sampled at least once per step and at every stage boundary (`stage`: "load", "encode",
    // "denoise", "decode").
    virtual void onMemory(const char* /*stage*/, const memory::MemorySample& /*sample*/) {}
};

} // namespace dd::pipeline
