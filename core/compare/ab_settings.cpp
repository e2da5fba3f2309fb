#include "core/compare/ab_settings.h"

#include <cmath>
#include <stdexcept>

namespace dd::compare {
namespace {

std::string valueText(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

bool sameKind(const nlohmann::json& a, const nlohmann::json& b) {
    if (a.is_number() && b.is_number()) return !(a.is_number_integer() && b.is_number_float());  // no 7.5 steps
    return a.type() == b.type();
}

// The node at a dotted path of the settings' JSON; throws if there is none.
nlohmann::json& field(nlohmann::json& j, const std::string& path) {
    nlohmann::json* node = &j;
    std::size_t start = 0;
    while (true) {
        const std::size_t dot = path.find('.', start);
        const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool index = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos && key.size() < 6;
        if (node->is_array() && index && std::stoul(key) < node->size()) node = &(*node)[std::stoul(key)];
        else if (node->is_object() && !key.empty() && node->contains(key)) node = &(*node)[key];
        else if (path.rfind("hires.", 0) == 0) throw std::invalid_argument("'" + path + "': turn the hires fix on first");
        else throw std::invalid_argument("'" + path + "' is not a generation setting" +
                                         (node->is_array() ? std::string(" (the list has ") + std::to_string(node->size()) + ")" : ""));
        if (dot == std::string::npos) return *node;
        start = dot + 1;
    }
}

// The settings as JSON with the sections to_json leaves out while unused that a person may still vary: a variation
// seed's strength can be plotted from 0.
nlohmann::json settingsJson(const api::GenerationSettings& s) {
    nlohmann::json j = s;
    if (!j.contains("variation")) j["variation"] = s.variation;
    return j;
}

} // namespace

AbPair abSeeds(const api::GenerationSettings& base, int64_t seedB) {
    if (seedB < 0) throw std::invalid_argument("seed B must not be negative");
    if (seedB == base.seed) throw std::invalid_argument("seed B equals seed A (" + std::to_string(seedB) + ")");
    AbPair p{base, base, "seed " + std::to_string(base.seed) + " vs " + std::to_string(seedB)};
    p.b.seed = seedB;
    return p;
}

AbPair abSetting(const api::GenerationSettings& base, const std::string& path, const nlohmann::json& value) {
    nlohmann::json j = base;
    nlohmann::json* node = &field(j, path);
    if (node->is_object() || !sameKind(*node, value))
        throw std::invalid_argument("'" + path + "' cannot be set to " + value.dump() + " (it holds " + node->dump() + ")");
    if (*node == value) throw std::invalid_argument("'" + path + "' is already " + valueText(value) + " in A");
    const std::string label = path + " " + valueText(*node) + " vs " + valueText(value);
    *node = value;
    AbPair p{base, base, label};
    try {
        p.b = j.get<api::GenerationSettings>();
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument("'" + path + "' = " + valueText(value) + ": " + e.what());
    }
    api::validate(p.b);  // std::invalid_argument with validate()'s message
    return p;
}

namespace {

// Text a person typed, as the JSON kind of the field at `path` holds.
nlohmann::json valueFromText(const nlohmann::json& current, const std::string& path, const std::string& text) {
    const auto bad = [&](const char* kind) {
        return std::invalid_argument("'" + path + "' expects " + kind + ", got '" + text + "'");
    };
    nlohmann::json value;
    if (current.is_string()) {
        value = text;
    } else if (current.is_boolean()) {
        if (text == "true" || text == "on" || text == "1") value = true;
        else if (text == "false" || text == "off" || text == "0") value = false;
        else throw bad("true or false");
    } else if (current.is_number()) {
        std::size_t used = 0;
        try {
            if (current.is_number_float()) {
                const double v = std::stod(text, &used);
                if (!std::isfinite(v)) used = 0;  // "inf", "nan": no setting takes them
                value = v;
            } else {
                value = std::stoll(text, &used);
            }
        } catch (const std::exception&) {
            used = 0;
        }
        if (text.empty() || used != text.size()) throw bad(current.is_number_float() ? "a number" : "a whole number");
    } else {
        throw std::invalid_argument("'" + path + "' cannot be varied on its own");
    }
    return value;
}

} // namespace

AbPair abSettingFromText(const api::GenerationSettings& base, const std::string& path, const std::string& text) {
    return abSetting(base, path, valueFromText(settingAt(base, path), path, text));
}

nlohmann::json settingAt(const api::GenerationSettings& s, const std::string& path) {
    nlohmann::json j = settingsJson(s);
    return field(j, path);
}

api::GenerationSettings withSettingFromText(const api::GenerationSettings& base, const std::string& path, const std::string& text) {
    nlohmann::json j = settingsJson(base);
    nlohmann::json& node = field(j, path);
    node = valueFromText(node, path, text);
    api::GenerationSettings out;
    try {
        out = j.get<api::GenerationSettings>();
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument("'" + path + "' = " + text + ": " + e.what());
    }
    api::validate(out);
    return out;
}

AbPair abPreset(const api::GenerationSettings& base, const memory::Preset& preset) {
    AbPair p{base, base, "preset " + (base.preset.empty() ? std::string("(none)") : base.preset) + " vs " + preset.name};
    p.b.preset = preset.name;
    p.b.plan = preset.plan;
    if (p.b.plan == p.a.plan && p.b.preset == p.a.preset)
        throw std::invalid_argument("preset '" + preset.name + "' is what A already uses");
    api::validate(p.b);
    return p;
}

const std::vector<AbField>& abFields() {
    static const std::vector<AbField> fields = {
        {"sampler", "Sampler", api::samplerNames()},
        {"schedule_type", "Schedule type", [] {
             std::vector<std::string> v{""};  // "": the sampler's default
             for (const auto& l : api::scheduleTypes()) v.push_back(l);
             return v;
         }()},
        {"cfg_scale", "CFG scale", {}},
        {"steps", "Steps", {}},
        {"guidance_rescale", "Guidance rescale", {}},
        {"clip_skip", "Clip skip", {}},
        {"emphasis", "Emphasis", api::emphasisModes()},
        {"strength", "Denoising strength", {}},
        {"memory_plan.precision.unet", "UNet precision", {"fp32", "fp16", "bf16"}},
        {"memory_plan.precision.vae", "VAE precision", {"fp32", "fp16", "bf16"}},
        {"memory_plan.precision.text_encoder", "Text encoder precision", {"fp32", "fp16", "bf16"}},
        {"memory_plan.attention", "Attention", {"sdpa", "sdpa-math", "sliced", "chunked"}},
        {"memory_plan.vae_tiling", "VAE tiling", {"false", "true"}},
        {"deterministic", "Determinism mode", {"false", "true"}},
    };
    return fields;
}

} // namespace dd::compare
