#include "core/compare/xyz_plot.h"

#include "core/compare/ab_settings.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <stdexcept>

namespace dd::compare {
namespace {

std::string trimmed(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// Python's csv reader with skipinitialspace, on one line: quoted items may hold commas and "".
std::vector<std::string> csvItems(const std::string& text) {
    std::vector<std::string> items;
    std::string item;
    bool quoted = false, started = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') item += '"', ++i;
            else if (c == '"') quoted = false;
            else item += c;
        } else if (c == '"' && !started) {
            quoted = started = true;
        } else if (c == ',') {
            items.push_back(trimmed(item)), item.clear(), started = false;
        } else if (!(c == ' ' && !started)) {
            item += c, started = true;
        }
    }
    if (quoted) throw std::invalid_argument("'" + text + "': a quote is never closed");
    items.push_back(trimmed(item));
    std::vector<std::string> out;
    for (auto& v : items)
        if (!v.empty()) out.push_back(std::move(v));
    return out;
}

std::string numberText(double v, bool integer) {
    if (integer) return std::to_string(int64_t(v));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return buf;
}

// A range's number; whole numbers past 10^15 are refused (they would not convert back exactly).
double number(const std::string& s) {
    const double v = std::strtod(std::regex_replace(s, std::regex(R"(\s)"), "").c_str(), nullptr);
    if (!(std::abs(v) < 1e15)) throw std::invalid_argument("'" + s + "' is too large for a range");
    return v;
}

// One item: a range expanded (A1111's re_range / re_range_count and their float forms), or the item itself.
std::vector<std::string> expand(const std::string& item, bool integer) {
    if (item.size() > 64) return {item};  // no range is that long
    static const std::regex intStep(R"(\s*([+-]?\s*\d+)\s*-\s*([+-]?\s*\d+)(?:\s*\(([+-]\d+)\s*\))?\s*)");
    static const std::regex intCount(R"(\s*([+-]?\s*\d+)\s*-\s*([+-]?\s*\d+)(?:\s*\[(\d+)\s*\])\s*)");
    static const std::regex floatStep(R"(\s*([+-]?\s*\d+(?:\.\d*)?)\s*-\s*([+-]?\s*\d+(?:\.\d*)?)(?:\s*\(([+-]\d+(?:\.\d*)?)\s*\))?\s*)");
    static const std::regex floatCount(R"(\s*([+-]?\s*\d+(?:\.\d*)?)\s*-\s*([+-]?\s*\d+(?:\.\d*)?)(?:\s*\[(\d+(?:\.\d*)?)\s*\])\s*)");
    std::smatch m;
    std::vector<std::string> out;
    const auto tooMany = [&](double n) {
        if (n > 1000) throw std::invalid_argument("'" + item + "' makes " + numberText(n, true) + " values (1000 at most)");
    };
    if (std::regex_match(item, m, integer ? intStep : floatStep)) {
        const double a = number(m[1]), b = number(m[2]), step = m[3].matched ? number(m[3]) : 1;
        if (step == 0) throw std::invalid_argument("'" + item + "': a step of 0");
        if (integer) {  // range(a, b + sign(step), step)
            const int64_t end = int64_t(b) + (step > 0 ? 1 : -1);
            tooMany(std::abs(double(end - int64_t(a)) / step));
            for (int64_t v = int64_t(a); step > 0 ? v < end : v > end; v += int64_t(step)) out.push_back(std::to_string(v));
        } else {  // numpy.arange(a, b + step, step)
            const double n = std::ceil((b + step - a) / step);
            tooMany(n);
            for (int i = 0; i < (n > 0 ? int(n) : 0); ++i) out.push_back(numberText(a + i * step, false));  // n < 0: none
        }
        return out;
    }
    if (std::regex_match(item, m, integer ? intCount : floatCount)) {
        const double a = number(m[1]), b = number(m[2]), count = number(m[3]);
        tooMany(count);
        const int n = int(count);
        for (int i = 0; i < n; ++i) {  // numpy.linspace(a, b, n), truncated for whole numbers
            const double v = n == 1 ? a : a + (b - a) * i / (n - 1);
            out.push_back(numberText(v, integer));
        }
        return out;
    }
    return {item};
}

api::GenerationSettings withValue(const api::GenerationSettings& base, const PlotAxis& axis, const std::string& value) {
    if (axis.field == "prompt_sr") {
        api::GenerationSettings s = base;
        const std::string& from = axis.values.front();
        for (std::string* text : {&s.prompt, &s.negativePrompt})
            for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at + value.size()))
                text->replace(at, from.size(), value);
        return s;
    }
    if (axis.field == "lora_weight") {
        api::GenerationSettings s = base;
        char* end = nullptr;
        const double weight = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !std::isfinite(weight)) throw std::invalid_argument("'" + value + "' is not a LoRA weight");
        s.loras.at(0).unetWeight = s.loras.at(0).textEncoderWeight = weight;
        return s;
    }
    if (axis.field == "size") {
        api::GenerationSettings s = base;
        const size_t x = value.find('x');
        try {
            if (x == std::string::npos) throw std::invalid_argument("");
            s.width = std::stoi(value.substr(0, x));
            s.height = std::stoi(value.substr(x + 1));
        } catch (const std::exception&) {
            throw std::invalid_argument("size expects WxH, got '" + value + "'");
        }
        api::validate(s);
        return s;
    }
    return withSettingFromText(base, axis.field, value);
}

} // namespace

void to_json(nlohmann::json& j, const PlotAxis& a) { j = {{"field", a.field}, {"values", a.values}}; }

void from_json(const nlohmann::json& j, PlotAxis& a) {
    j.at("field").get_to(a.field);
    j.at("values").get_to(a.values);
}

std::vector<std::string> parseAxisValues(const std::string& text, bool numeric, bool integer) {
    std::vector<std::string> out;
    for (const auto& item : csvItems(text)) {
        if (!numeric) {
            out.push_back(item);
            continue;
        }
        for (auto& v : expand(item, integer)) out.push_back(std::move(v));
    }
    if (out.empty()) throw std::invalid_argument("no values in '" + text + "'");
    if (out.size() > 1000) throw std::invalid_argument("'" + text + "' makes " + std::to_string(out.size()) + " values (1000 at most)");
    return out;
}

PlotAxis parseAxis(const api::GenerationSettings& base, const std::string& field, const std::string& text) {
    if (field == "prompt_sr") {
        PlotAxis axis{field, parseAxisValues(text, false, false)};
        const std::string& from = axis.values.front();
        if (base.prompt.find(from) == std::string::npos && base.negativePrompt.find(from) == std::string::npos)
            throw std::invalid_argument("Prompt S/R did not find '" + from + "' in the prompt or the negative prompt");
        return axis;
    }
    if (field == "size") return {field, parseAxisValues(text, false, false)};
    if (field == "lora_weight") {
        if (base.loras.empty()) throw std::invalid_argument("LoRA weight: no LoRA in the list (for a <lora:…> tag, Prompt S/R on its weight)");
        return {field, parseAxisValues(text, true, false)};
    }
    const auto current = settingAt(base, field);
    return {field, parseAxisValues(text, current.is_number(), current.is_number_integer())};
}

std::vector<PlotCell> plotCells(const api::GenerationSettings& base, const std::vector<PlotAxis>& axes) {
    if (axes.empty() || axes.size() > 3) throw std::invalid_argument("a plot has one to three axes");
    const auto count = [&](size_t a) { return a < axes.size() ? int(axes[a].values.size()) : 1; };
    if (double(count(0)) * count(1) * count(2) > 10000) throw std::invalid_argument("a plot of more than 10000 images");
    static const char* kNames[] = {"X", "Y", "Z"};
    std::vector<PlotCell> cells;
    for (int z = 0; z < count(2); ++z)
        for (int y = 0; y < count(1); ++y)
            for (int x = 0; x < count(0); ++x) {
                PlotCell cell{x, y, z, base};
                const int at[] = {x, y, z};
                for (size_t a = 0; a < axes.size(); ++a) {
                    const std::string& value = axes[a].values[size_t(at[a])];
                    try {
                        cell.settings = withValue(cell.settings, axes[a], value);
                    } catch (const std::invalid_argument& e) {
                        throw std::invalid_argument(std::string(kNames[a]) + " axis (" + axes[a].field + ") value '" + value + "': " + e.what());
                    }
                }
                cell.settings.batchSize = 1;
                cells.push_back(std::move(cell));
            }
    return cells;
}

const std::vector<PlotField>& plotFields() {
    static const std::vector<PlotField> fields = {
        {"seed", "Seed"},
        {"steps", "Steps"},
        {"cfg_scale", "CFG scale"},
        {"sampler", "Sampler"},
        {"schedule_type", "Schedule type"},
        {"prompt_sr", "Prompt S/R"},
        {"model", "Checkpoint"},
        {"lora_weight", "LoRA weight (the first listed)"},
        {"clip_skip", "Clip skip"},
        {"size", "Size"},
        {"strength", "Denoising strength"},
        {"variation.seed", "Variation seed"},
        {"variation.strength", "Variation strength"},
        {"hires.denoising", "Hires denoising"},
        {"hires.scale", "Hires upscale"},
        {"hires.steps", "Hires steps"},
        {"hires.upscaler", "Hires upscaler"},
        {"memory_plan.precision.unet", "UNet precision"},
        {"memory_plan.attention", "Attention"},
        {"memory_plan.vae_tiling", "VAE tiling"},
    };
    return fields;
}

} // namespace dd::compare
