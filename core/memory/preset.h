#pragma once
// A named memory plan with the budget it promises: presets/*.json (shipped, core/memory/shipped_presets.h) and the
// user's custom presets.
#include "core/api/memory_plan.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::memory {

struct Preset {
    std::string name;         // "4gb", "6gb", ..., "cpu", or a user's name
    int64_t budgetBytes = 0;  // memory the plan must fit in (device memory on GPU, RAM for "cpu")
    std::string family;       // model family the row is written for: "sd1", "sdxl"
    int width = 512, height = 512;  // the row's resolution
    std::string strategy;     // the recipe table's words ("SDXL + fp16 + attention slicing + VAE tiling")
    std::string expectedTime; // the table's figure ("25–45 s at 1024², 30 steps")
    api::MemoryPlan plan;
};

void to_json(nlohmann::json& j, const Preset& p);
void from_json(const nlohmann::json& j, Preset& p);
// Throws std::runtime_error naming the file and the problem.
Preset loadPreset(const std::string& path);
// Atomic write (temporary file + rename).
void savePreset(const Preset& p, const std::string& path);
// All *.json presets in a folder, sorted by budget; files that fail to parse are skipped and named in `errors`.
std::vector<Preset> loadPresets(const std::string& dir, std::vector<std::string>* errors = nullptr);
// The largest preset whose budget fits `availableBytes` for that device kind ("cuda" → GPU rows, "cpu" → the
// cpu preset); nullptr if none fits.
const Preset* recommendPreset(const std::vector<Preset>& presets, int64_t availableBytes, bool cuda);

} // namespace dd::memory
