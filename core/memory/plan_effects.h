#pragma once
// What a memory plan's toggles do to the picture, as the project measured them (docs/determinism.md, "What may
// and may not change pixels"; docs/benchmarks.md for Winograd): the preset dialog's simple view shows, for the
// plan that will run, which of its choices change the picture and which cannot. Pure: no torch, no Qt.
#include "core/api/memory_plan.h"

#include <string>
#include <vector>

namespace dd::memory {

struct PlanEffect {
    std::string toggle;         // "UNet fp16", "VAE slicing", ...
    bool changesPicture = false;
    std::string measured;       // "mean |Δ| 0.10 / 255, PSNR 58 dB" or "byte-identical (tested)"
};

// One row per toggle the plan turns on away from the full-precision, unsliced, resident default.
std::vector<PlanEffect> planEffects(const api::MemoryPlan& plan);

} // namespace dd::memory
