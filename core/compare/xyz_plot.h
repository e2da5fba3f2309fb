#pragma once
// A1111's X/Y/Z plot (docs/explore.md): up to three axes, each a settings field and its values; every combination
// is one cell, one image made with the base settings and the cell's values (batch of one: no batch effects). Pure.
//
//   auto axes = {parseAxis("steps", "10-30 (+10)"), parseAxis("cfg_scale", "5, 7.5")};
//   for (const auto& cell : plotCells(base, axes)) run(cell.settings);   // x fastest, then y, then z
#include "core/api/generation_settings.h"

#include <string>
#include <vector>

namespace dd::compare {

// A field an axis can vary: a settings JSON path ("steps", "memory_plan.vae_tiling", "hires.denoising",
// "variation.strength", "loras.0.unet_weight") or one of A1111's own: "prompt_sr" (Prompt S/R: each value replaces
// the first value's text in both prompts), "size" (values "WxH") and "lora_weight" (the first listed LoRA's weights).
struct PlotAxis {
    std::string field;
    std::vector<std::string> values;  // as written in the cell labels
};
// {"field": …, "values": […]}: in a sheet's metadata and the window's plots under way.
void to_json(nlohmann::json& j, const PlotAxis& a);
void from_json(const nlohmann::json& j, PlotAxis& a);

// A1111's value syntax: a comma-separated list (CSV quoting for values with commas), or for numbers ranges
// "1-5" (every integer), "1-10 (+2)" (a step), "7-9 [3]" (a count, evenly spaced), "5.0-6.0 (+0.25)".
// Numeric fields expand ranges; `integer` makes the numbers whole. Throws std::invalid_argument naming the text.
std::vector<std::string> parseAxisValues(const std::string& text, bool numeric, bool integer);
// The axis for `field` with its values expanded by the field's kind in `base` (integer, number, text).
PlotAxis parseAxis(const api::GenerationSettings& base, const std::string& field, const std::string& text);

struct PlotCell {
    int x = 0, y = 0, z = 0;
    api::GenerationSettings settings;
};
// Every combination, x fastest, then y, then z; each cell's settings validated. Throws std::invalid_argument naming
// the axis and value that does not fit.
std::vector<PlotCell> plotCells(const api::GenerationSettings& base, const std::vector<PlotAxis>& axes);

// The fields offered by name in menus (path, label); any other settings path works too.
struct PlotField {
    std::string path, label;
};
const std::vector<PlotField>& plotFields();

} // namespace dd::compare
