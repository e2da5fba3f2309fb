#pragma once
// The values that cross threads and layers: plain structs, no torch, no Qt.
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

struct GenerationResult {
    std::vector<Image> images;
    settings::GenerationSettings settings;
    StageTimings timings;
    std::string modelName;  // what was actually run (e.g. "tiny random-weight demo (not a real model)")
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

// Per-step progress. `preview` is a cheap latent→RGB approximation of the first image (may be empty).
class Observer {
public:
    virtual ~Observer() = default;
    virtual void onStep(int step, int totalSteps, const Image& preview) = 0;
    // The whole latent batch after each step (engine thread, torch users only: tests, tools).
    virtual void onLatents(int /*step*/, const at::Tensor& /*latents*/) {}
};

} // namespace dd::pipeline
