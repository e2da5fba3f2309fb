#pragma once
// What to try after a stage runs out of memory: the next more frugal setting, one step at a time.
//   VAE decode: VAE slicing (batches), VAE tiling, then smaller tiles (halved down to minTileSize), then the
//               VAE on the CPU (when the compute device is not the CPU);
//   denoise:    sliced attention ("auto": heads / 2), then smaller slices (heads / 4, ... 1), then the next
//               lower preset;
//   load, text encode: the next lower preset.
// "Next lower preset": the GPU preset (presets/*.json, not "cpu") with the largest budget below the current
// preset's (or the largest one when the plan came from no preset) whose plan differs from the current plan;
// its plan is taken whole, keeping the device and thread count. Pure: no torch.
#include "core/memory/preset.h"

#include <optional>
#include <string>
#include <vector>

namespace dd::memory {

enum class Stage { Load, Encode, Denoise, Decode };
const char* stageName(Stage s);  // "load", "text encode", "denoise", "VAE decode"

struct FrugalState {
    api::MemoryPlan plan;
    std::string preset;     // the preset the plan came from ("" = none)
    bool vaeOnCpu = false;  // decode on the CPU (not a plan setting: an emergency measure)
};

struct RetryContext {
    bool computeIsCpu = true;
    int batch = 1;
    int vaeSampleSize = 512;  // the VAE's own tile (pixels)
    int minTileSize = 128;    // smallest tile worth trying (pixels)
    int maxHeads = 8;         // the most attention heads of any UNet layer
    const std::vector<Preset>* presets = nullptr;
};

struct Fallback {
    FrugalState state;
    std::string change;      // "VAE tiling on", "256-px VAE tiles", "sliced attention (auto)", "preset 6gb"
    bool presetSwitch = false;
};

std::optional<Fallback> nextFallback(Stage stage, const FrugalState& current, const RetryContext& ctx);

} // namespace dd::memory
