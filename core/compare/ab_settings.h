#pragma once
// The two settings of an A/B quick action. "A/B seeds": the same settings with two seeds. "A/B setting": one
// field varied (sampler, CFG, steps, preset, precision...). Pure: the GUI runs the pair on the worker and shows
// the results in the compare view; tests and the CLI can build the same pairs.
#include "core/api/generation_settings.h"
#include "core/memory/preset.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace dd::compare {

struct AbPair {
    api::GenerationSettings a, b;
    std::string label;  // "seed 42 vs 43", "cfg_scale 7 vs 4.5"
};

// B = A with `seedB`. Throws std::invalid_argument if seedB is negative or equal to A's seed.
AbPair abSeeds(const api::GenerationSettings& base, int64_t seedB);

// B = A with the field at `path` (diffSettings' JSON path: "sampler", "cfg_scale", "memory_plan.precision.unet")
// set to `value`. Throws std::invalid_argument naming the field when it does not exist, when the value's type
// does not fit (a number for a number, a string for a string...), when it equals A's value, or when the
// result is not valid settings (validate()'s message).
AbPair abSetting(const api::GenerationSettings& base, const std::string& path, const nlohmann::json& value);

// The same from text a person typed or picked ("4.5", "true", "DPM++ 2M"), converted to the field's kind.
AbPair abSettingFromText(const api::GenerationSettings& base, const std::string& path, const std::string& text);

// `base` with the field at `path` set from text, as abSettingFromText converts it ("loras.0.weight": an array's
// element by index), validated; the value may equal base's. Throws std::invalid_argument naming the field.
api::GenerationSettings withSettingFromText(const api::GenerationSettings& base, const std::string& path, const std::string& text);
// The field's current value at `path` in `s`'s JSON; throws std::invalid_argument when there is none.
nlohmann::json settingAt(const api::GenerationSettings& s, const std::string& path);

// B = A run with a preset's plan (and its name in `preset`).
AbPair abPreset(const api::GenerationSettings& base, const memory::Preset& preset);

// The fields the "A/B setting" action offers, for menus. `choices` empty: a number the user types.
struct AbField {
    std::string path;
    std::string label;
    std::vector<std::string> choices;
};
const std::vector<AbField>& abFields();

} // namespace dd::compare
