// Ref: AUTOMATIC1111/stable-diffusion-webui modules/processing.py::create_infotext,
// modules/infotext_utils.py::{quote, unquote, re_param, parse_generation_parameters},
// modules/sd_samplers.py::get_sampler_and_scheduler, modules/sd_schedulers.py::schedulers,
// modules/sd_samplers_kdiffusion.py::samplers_k_diffusion (per-sampler default schedule since 1.9).
#include "core/settings/a1111_controlnet.h"
#include "core/settings/a1111_parameters.h"

#include "core/settings/generation_info_detail.h"
#include "core/text/prompt_parser.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <type_traits>
#include <unordered_map>

namespace dd::settings {
namespace {

struct Schedule {
    const char* name;
    const char* label;
    const char* alias;
};

// A1111's order matters: get_sampler_and_scheduler strips the first matching suffix of each, in this order.
constexpr std::array<Schedule, 12> kSchedules{{
    {"automatic", "Automatic", nullptr}, {"uniform", "Uniform", nullptr}, {"karras", "Karras", nullptr},
    {"exponential", "Exponential", nullptr}, {"polyexponential", "Polyexponential", nullptr},
    {"sgm_uniform", "SGM Uniform", "SGMUniform"}, {"kl_optimal", "KL Optimal", nullptr},
    {"align_your_steps", "Align Your Steps", nullptr}, {"simple", "Simple", nullptr}, {"normal", "Normal", nullptr},
    {"ddim", "DDIM", nullptr}, {"beta", "Beta", nullptr},
}};

const Schedule* findSchedule(std::string_view s) {
    for (const auto& x : kSchedules)
        if (s == x.name || s == x.label || (x.alias && s == x.alias)) return &x;
    return nullptr;
}

bool isWordByte(char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= '0' && u <= '9') || (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || u == '_' || u >= 0x80;
}
bool isKeyByte(char c) { return isWordByte(c) || c == ' ' || c == '-' || c == '/'; }
bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

struct Pair {
    std::string key;
    std::string value;
};

// findall of re_param = \s*(\w[\w \-/]+):\s*("(?:\\.|[^\\"])+"|[^,]*)(?:,|$) over one line, without std::regex
// (which recurses per character and would overflow the stack on a 1 MB line).
std::vector<Pair> findParams(std::string_view line) {
    std::vector<Pair> out;
    const std::size_t n = line.size();
    std::size_t pos = 0;
    while (pos < n) {
        std::size_t i = pos;
        while (i < n && isSpace(line[i])) ++i;
        if (i >= n || !isWordByte(line[i])) {
            pos = std::max(pos + 1, i);
            continue;
        }
        std::size_t j = i + 1;
        while (j < n && isKeyByte(line[j])) ++j;
        if (j - i < 2 || j >= n || line[j] != ':') {
            pos = j;  // every start inside this run ends at the same j and fails the same way
            continue;
        }
        std::size_t k = j + 1;
        while (k < n && isSpace(line[k])) ++k;
        std::size_t end = std::string_view::npos;
        if (k < n && line[k] == '"') {
            std::size_t m = k + 1;
            while (m < n && line[m] != '"') {
                if (line[m] == '\\') {
                    if (m + 1 >= n || line[m + 1] == '\n') break;
                    ++m;
                }
                ++m;
            }
            if (m < n && line[m] == '"' && m > k + 1 && (m + 1 == n || line[m + 1] == ',')) end = m + 1;
        }
        if (end == std::string_view::npos) {
            end = k;
            while (end < n && line[end] != ',') ++end;
        }
        out.push_back({std::string(line.substr(i, j - i)), std::string(line.substr(k, end - k))});
        pos = end < n ? end + 1 : n;
    }
    return out;
}

// infotext_utils.quote, plus quoting what A1111's parser would otherwise change or drop: an empty value, a
// leading '"', leading or trailing blanks.
std::string quote(const std::string& v) {
    const bool plain = !v.empty() && v.front() != '"' && !isSpace(v.front()) && !isSpace(v.back());
    if (plain && v.find_first_of(",:\n") == std::string::npos) return v;
    return nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string unquote(const std::string& v) {
    if (v.size() < 2 || v.front() != '"' || v.back() != '"') return v;
    try {
        const auto j = nlohmann::json::parse(v);
        if (j.is_string()) return j.get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
    return v;
}

bool validKey(std::string_view k) {
    if (k.size() < 2 || !isWordByte(k[0])) return false;
    return std::all_of(k.begin() + 1, k.end(), isKeyByte);
}

// A LoRA named by path appears in tags under its file name without extension, as A1111 names it.
std::string loraTagName(const std::string& name) {
    std::string n = name.substr(name.find_last_of('/') + 1);
    if (n.ends_with(".safetensors")) n.resize(n.size() - 12);
    return n;
}

std::string loraTag(const api::LoraSetting& l) {
    std::string tag = "<lora:" + loraTagName(l.name) + ":" + detail::formatNumber(l.textEncoderWeight);
    if (l.unetWeight != l.textEncoderWeight) tag += ":" + detail::formatNumber(l.unetWeight);
    return tag + ">";
}

std::string defaultModelName(std::string model) {
    while (!model.empty() && (model.back() == '/' || model.back() == '\\')) model.pop_back();
    if (const auto s = model.find_last_of("/\\"); s != std::string::npos) model = model.substr(s + 1);
    // Every extension and the spaces around it, so that what is written reads back unchanged ("x .pt.ckpt" is
    // "x", not "x .pt" that would come back as "x").
    for (bool stripped = true; stripped;) {
        stripped = false;
        model = std::string(detail::trim(model));
        for (const char* ext : {".safetensors", ".ckpt", ".pt", ".pth", ".bin", ".sft", ".gguf"}) {
            const std::string_view e(ext);
            if (model.size() > e.size() && model.compare(model.size() - e.size(), e.size(), e) == 0) {
                model.resize(model.size() - e.size());
                stripped = true;
                break;
            }
        }
    }
    return model;
}

std::vector<std::string> splitLines(std::string_view s) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (;;) {
        const auto nl = s.find('\n', start);
        lines.emplace_back(s.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
        if (nl == std::string_view::npos) return lines;
        start = nl + 1;
    }
}

} // namespace

std::pair<std::string, std::string> splitSamplerSchedule(std::string_view sampler) {
    std::string name(sampler);
    std::string schedule;
    for (const auto& s : kSchedules) {
        for (const char* option : {s.label, s.name, s.alias}) {
            if (!option) continue;
            const std::string suffix = std::string(" ") + option;
            if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
                name.resize(name.size() - suffix.size());
                schedule = s.label;
                break;
            }
        }
    }
    return {name, schedule};
}

namespace detail {

void found(GenerationInfo& info, const char* field) {
    if (!info.has(field)) info.fields.emplace_back(field);
}

// The sampler of ours that works most like one we lack: same order and kind (ancestral, SDE, multistep).
std::string nearestSampler(const std::string& name) {
    static const std::pair<const char*, const char*> kNearest[] = {
        {"DDPM", "Euler a"},   {"DPM fast", "DPM++ 2M"}, {"DPM adaptive", "DPM++ 2M"}, {"DEIS", "DPM++ 2M"},
        {"iPNDM", "PLMS"},     {"res_multistep", "DPM++ 2M"}, {"Restart", "Heun"}, {"SDE", "DPM++ SDE"}};
    for (const auto& [prefix, ours] : kNearest)
        if (name.rfind(prefix, 0) == 0) return ours;
    return name.find("ancestral") != std::string::npos || name.ends_with(" a") ? "Euler a" : "Euler";
}

void setSampler(GenerationInfo& info, std::string_view sampler, std::string_view schedule, bool explicitAutomatic, bool nearest,
                bool kDiffusion, bool a1111Timesteps) {
    const auto& timestepSamplers = api::a1111TimestepSamplers();
    auto [base, label] = splitSamplerSchedule(sampler);
    if (label.empty()) {
        if (const Schedule* s = findSchedule(schedule)) label = s->label;
        else if (!schedule.empty()) info.warnings.push_back("schedule type '" + std::string(schedule) + "' is unknown; using the sampler's own");
    }
    // A1111 1.9+ runs "Automatic" as the sampler's own schedule; before it, a bare name meant k-diffusion's.
    if (label.empty()) label = explicitAutomatic ? "Automatic" : "Uniform";
    if (!api::isScheduleType(label)) {
        info.warnings.push_back("schedule type '" + label + "' is not one DiffusionDesk has: the sampler's own is used");
        label = "Automatic";
    }
    const std::string resolved = label == "Automatic" ? api::automaticSchedule(base) : label;
    const auto& known = api::samplerNames();
    const auto has = [&](const std::string& n) { return std::find(known.begin(), known.end(), n) != known.end(); };
    api::GenerationSettings& s = info.settings;
    if (a1111Timesteps && std::find(timestepSamplers.begin(), timestepSamplers.end(), base) != timestepSamplers.end()) {
        s.sampler = base, s.scheduleType = "Automatic";  // A1111's own DDIM or PLMS, on its own grid whatever the label
        if (resolved != "Uniform")
            info.warnings.push_back("schedule type '" + label + "' does not apply to A1111's " + base + ", which keeps its own timesteps: not used");
    } else if (api::isKDiffusionSampler(base) && (kDiffusion || !has(base))) {
        s.sampler = base, s.scheduleType = label;  // the tool sampled with k-diffusion: so do we
    } else if (has(base + " " + resolved)) {
        s.sampler = base + " " + resolved, s.scheduleType.clear();
    } else if (has(base)) {
        s.sampler = base, s.scheduleType.clear();
        if (resolved != "Uniform" && resolved != api::automaticSchedule(base))
            info.warnings.push_back("schedule type '" + label + "' does not apply to '" + base + "', which has its own: not used");
    } else if (nearest) {
        // A restore never fails for one field: the nearest sampler we have, said plainly.
        s.sampler = nearestSampler(base);
        s.scheduleType = api::isKDiffusionSampler(s.sampler) ? label : "";
        info.warnings.push_back("sampler '" + base + "' is not one DiffusionDesk has: restored as '" + s.sampler +
                                "', the nearest (the picture will differ)");
    } else {
        s.sampler = base, s.scheduleType = label;  // refused where it is used, naming the sampler
    }
    found(info, "sampler");
    found(info, "schedule_type");
}

} // namespace detail

namespace {

// parse_generation_parameters' prompt lines: stripped, joined by '\n'; "Negative prompt:" starts the negative.
void readPromptLines(const std::vector<std::string>& lines, GenerationInfo& info) {
    std::string prompt, negative;
    bool inNegative = false;
    for (const auto& l : lines) {
        std::string_view line = detail::trim(l);
        if (line.substr(0, 16) == "Negative prompt:") {
            inNegative = true;
            line = detail::trim(line.substr(16));
        }
        std::string& dst = inNegative ? negative : prompt;
        if (!dst.empty()) dst += '\n';
        dst += line;
    }
    info.settings.prompt = std::move(prompt);
    info.settings.negativePrompt = std::move(negative);
    detail::found(info, "prompt");
    detail::found(info, "negative_prompt");
}

// Ref: leejet/stable-diffusion.cpp examples/cli/main.cpp (sample_method_str, " karras" suffix).
std::string sdcppSampler(const std::string& raw, GenerationInfo& info) {
    static const std::pair<const char*, const char*> kNames[] = {
        {"euler_a", "Euler a"}, {"euler", "Euler"}, {"heun", "Heun"}, {"dpm2", "DPM2"}, {"dpm++2s_a", "DPM++ 2S a"},
        {"dpm++2m", "DPM++ 2M"}, {"dpm++2mv2", "DPM++ 2M"}, {"ipndm", "iPNDM"}, {"ipndm_v", "iPNDM_V"}, {"lcm", "LCM"},
        {"ddim_trailing", "DDIM"}, {"tcd", "TCD"}};
    std::string base = raw, suffix;
    if (const auto sp = raw.find(' '); sp != std::string::npos) base = raw.substr(0, sp), suffix = raw.substr(sp);
    for (const auto& [from, to] : kNames) {
        if (base != from) continue;
        if (base == "dpm++2mv2") info.warnings.push_back("stable-diffusion.cpp's dpm++2mv2 is read as DPM++ 2M (a close variant)");
        if (base == "ddim_trailing") info.warnings.push_back("stable-diffusion.cpp's ddim_trailing is read as DDIM");
        return to + suffix;
    }
    return raw;
}

// As a Python dict: a repeated key keeps its first position and its last value; empty values are dropped
// (A1111 indexes v[0] inside a try, so the key is lost).
std::vector<Pair> toDict(std::vector<Pair> params) {
    std::vector<Pair> dict;
    std::unordered_map<std::string, std::size_t> index;
    for (auto& p : params) {
        if (p.value.empty()) continue;
        p.value = unquote(p.value);
        const auto [it, added] = index.emplace(p.key, dict.size());
        if (added) dict.push_back(std::move(p)); else dict[it->second].value = std::move(p.value);
    }
    return dict;
}


using Settings = api::GenerationSettings;
using Written = std::optional<std::string>;  // nullopt: the key is left out

// The sampler and schedule A1111 reads back as the ones that ran.
std::pair<std::string, std::string> writtenSamplerSchedule(const Settings& s) {
    auto [base, suffix] = splitSamplerSchedule(s.sampler);
    // k-diffusion's sampler over its schedule, as A1111 writes it (1.9+ runs "Automatic" as the sampler's own).
    if (api::runsKDiffusion(s) || api::runsA1111Timesteps(s)) return {base, s.scheduleType.empty() ? "Automatic" : s.scheduleType};
    std::string schedule = suffix;
    // A1111 1.9+ reads "Automatic" as Karras for DPM++ 2M: name the plain schedule so it is reproduced as run.
    if (schedule.empty()) schedule = api::automaticSchedule(base) == "Uniform" ? "Automatic" : "Uniform";
    return {base, schedule};
}

// extra_networks_lora.py: "Lora hashes" lists name: short hash, ':' and ',' taken out of the names.
Written writtenLoraHashes(const Settings& s) {
    std::string hashes;
    for (const auto& l : s.loras) {
        if (l.hash.empty()) continue;
        std::string name = loraTagName(l.name);
        std::erase_if(name, [](char c) { return c == ':' || c == ','; });
        hashes += (hashes.empty() ? "" : ", ") + name + ": " + l.hash;
    }
    if (hashes.empty()) return std::nullopt;
    return hashes;
}

// sd_hijack.py: "TI hashes" lists name: short hash of every embedding the prompts used, ':' and ',' taken out.
Written writtenEmbeddingHashes(const Settings& s) {
    std::string hashes;
    for (const auto& e : s.embeddings) {
        if (e.hash.empty()) continue;
        std::string name = e.name;
        std::erase_if(name, [](char c) { return c == ':' || c == ','; });
        hashes += (hashes.empty() ? "" : ", ") + name + ": " + e.hash;
    }
    if (hashes.empty()) return std::nullopt;
    return hashes;
}

Written writtenModel(const Settings& s, const A1111WriteOptions& o) {
    std::string model = o.modelName.empty() ? defaultModelName(s.model) : o.modelName;
    if (model.empty()) return std::nullopt;
    return model;
}

// A1111's refiner script: the checkpoint's short title ("name [hash]"). A1111 has no keys for the aesthetic
// scores (they are its settings); the sidecar keeps them.
Written writtenRefiner(const Settings& s) {
    if (!s.refiner.enabled()) return std::nullopt;
    const std::string name = defaultModelName(s.refiner.model);
    return s.refiner.hash.empty() ? name : name + " [" + s.refiner.hash + "]";
}

// What a reader of one key sees: the settings being filled, the keys not read yet, the dialect.
struct Reading {
    GenerationInfo& info;
    const std::function<std::optional<std::string>(std::string_view)>& take;
    bool sdcpp;  // stable-diffusion.cpp writes this layout with its own sampler and RNG names
};

// A1111's inpainting keys (img2img's extra parameters). Mask mode and Masked content are left out at their
// defaults (Inpaint masked, original) as A1111 does; Mask blur is written for every inpainting (0 too, which A1111
// omits: a reader would take the missing key for 4). A1111 writes no mask file, so read back they wait for one
// (the sidecar names it); a value that is not the default is written even then, so text reads back as written.
Written writtenMaskBlur(const Settings& s) {
    const int blur = s.inpaint.maskBlur;
    return s.inpaint.enabled() || blur != api::InpaintSetting().maskBlur ? Written(std::to_string(blur)) : Written();
}

bool readMaskBlur(std::string_view v, Reading& r) {
    const auto d = detail::parseNumber(v);
    if (!d || *d < 0 || *d > 64 || *d != double(int(*d))) return false;
    r.info.settings.inpaint.maskBlur = int(*d);
    return true;
}

bool readMaskMode(std::string_view v, Reading& r) {
    const std::string_view mode = detail::trim(v);
    if (mode != "Inpaint masked" && mode != "Inpaint not masked") return false;
    r.info.settings.inpaint.invertMask = mode == "Inpaint not masked";
    return true;
}

bool readMaskedContent(std::string_view v, Reading& r) {
    const std::string content(detail::trim(v));
    if (!api::isMaskedContent(content)) return false;
    r.info.settings.inpaint.maskedContent = content;
    return true;
}

bool readInpaintArea(std::string_view v, Reading& r) {
    const std::string_view area = detail::trim(v);
    if (area != "Only masked" && area != "Whole picture") return false;
    r.info.settings.inpaint.onlyMasked = area == "Only masked";
    return true;
}

bool readMaskedPadding(std::string_view v, Reading& r) {
    const auto d = detail::parseNumber(v);
    if (!d || *d < 0 || *d > 256 || *d != double(int(*d))) return false;
    r.info.settings.inpaint.maskedPadding = int(*d);
    return true;
}

void badValue(GenerationInfo& info, std::string_view key, std::string_view v) {
    info.warnings.push_back("'" + std::string(key) + ": " + std::string(v.substr(0, 80)) + "' is not a valid value; ignored");
}

template <auto Field, int64_t Lo, int64_t Hi>
bool readInteger(std::string_view v, Reading& r) {
    const auto n = detail::parseInteger(v);
    if (!n || *n < Lo || *n > Hi) return false;
    r.info.settings.*Field = static_cast<std::remove_reference_t<decltype(r.info.settings.*Field)>>(*n);
    return true;
}

template <auto Field>
bool readNumber(std::string_view v, Reading& r) {
    const auto d = detail::parseNumber(v);
    if (!d) return false;
    r.info.settings.*Field = *d;
    return true;
}

template <auto Field, bool (*Valid)(const std::string&)>
bool readChoice(std::string_view v, Reading& r) {
    if (!Valid(std::string(v))) return false;
    r.info.settings.*Field = std::string(v);
    return true;
}

bool readSampler(std::string_view v, Reading& r) {
    const auto schedule = r.take("Schedule type");
    const auto implementation = r.take("Sampler implementation");  // ours: "diffusers" where that ran
    const std::string sampler = r.sdcpp ? sdcppSampler(std::string(v), r.info) : std::string(v);
    // A1111 (and Forge) ran DDIM and PLMS as its own timestep samplers; stable-diffusion.cpp has neither.
    detail::setSampler(r.info, sampler, schedule.value_or(""), schedule && *schedule == "Automatic", true,
                       implementation != "diffusers", implementation != "diffusers" && !r.sdcpp);
    return true;
}

// Only reached without a Sampler key (readSampler takes the schedule with it): A1111's default sampler.
bool readScheduleOnly(std::string_view v, Reading& r) {
    detail::setSampler(r.info, "Euler a", v, v == "Automatic");
    return true;
}

// A1111's re_imagesize: ^(\d+)x(\d+)$
// "WxH" with 1 ≤ W, H ≤ 65536.
std::optional<std::pair<int, int>> parseSize(std::string_view v) {
    const auto x = v.find('x');
    const bool digits = x != std::string_view::npos && x > 0 && x + 1 < v.size() &&
                        std::all_of(v.begin(), v.end(), [](char c) { return (c >= '0' && c <= '9') || c == 'x'; });
    const int64_t w = digits ? detail::parseInteger(v.substr(0, x)).value_or(0) : 0;
    const int64_t h = digits ? detail::parseInteger(v.substr(x + 1)).value_or(0) : 0;
    if (w <= 0 || h <= 0 || w > 65536 || h > 65536) return std::nullopt;
    return std::pair{int(w), int(h)};
}

bool readSize(std::string_view v, Reading& r) {
    const auto size = parseSize(v);
    if (!size) return false;
    r.info.settings.width = size->first, r.info.settings.height = size->second;
    detail::found(r.info, "width"), detail::found(r.info, "height");
    return true;
}

// A1111's hires fix keys: any of them means the fix was on; its "Denoising strength" is the second pass's
// (applyParams moves it there once every key is read).
bool readHiresUpscale(std::string_view v, Reading& r) {
    const auto d = detail::parseNumber(v);
    if (!d || !(*d >= 1 && *d <= 8)) return false;
    r.info.settings.hires.scale = *d;
    r.info.settings.hires.enabled = true;
    return true;
}

bool readHiresResize(std::string_view v, Reading& r) {
    const auto size = parseSize(detail::trim(v));
    if (!size || size->first > 8192 || size->second > 8192) return false;
    r.info.settings.hires.resizeWidth = size->first, r.info.settings.hires.resizeHeight = size->second;
    r.info.settings.hires.scale = api::HiresSetting().scale;  // unused beside a size, and not written back
    r.info.settings.hires.enabled = true;
    return true;
}

bool readHiresSteps(std::string_view v, Reading& r) {
    const auto n = detail::parseInteger(detail::trim(v));
    if (!n || *n < 0 || *n > 1000) return false;
    r.info.settings.hires.steps = int(*n);
    r.info.settings.hires.enabled = true;
    return true;
}

bool readHiresUpscaler(std::string_view v, Reading& r) {
    const std::string name(detail::trim(v));
    if (name.empty()) return false;
    if (api::isUpscalerNetwork(name))  // A1111 names its networks by file (ours) or built-in names
        r.info.warnings.push_back("Hires upscaler '" + name + "' is an upscaler network: the hires pass needs " + name +
                                  ".safetensors in an upscaler folder (docs/upscalers.md)");
    r.info.settings.hires.upscaler = name;
    r.info.settings.hires.enabled = true;
    return true;
}

bool isHexHash(std::string_view h) {
    return h.size() <= 64 && std::all_of(h.begin(), h.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

bool readModelHash(std::string_view v, Reading& r) {
    const std::string_view h = detail::trim(v);
    if (h.empty() || !isHexHash(h)) return false;
    r.info.modelHash = std::string(h);
    return true;
}

// "name: hash" pairs; A1111 appends a hires pass's list to the first one's, so a name may come twice.
bool readEmbeddingHashes(std::string_view v, Reading& r) {
    auto& list = r.info.settings.embeddings;
    for (std::string_view rest = v; !rest.empty();) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        const size_t colon = item.rfind(':');
        if (colon == std::string_view::npos) return false;
        api::EmbeddingSetting e{std::string(detail::trim(item.substr(0, colon))), std::string(detail::trim(item.substr(colon + 1)))};
        if (e.name.empty()) return false;
        if (std::none_of(list.begin(), list.end(), [&](const auto& x) { return x.name == e.name; })) list.push_back(std::move(e));
    }
    return !list.empty();
}

bool readModel(std::string_view v, Reading& r) {
    r.info.modelName = safeModelName(detail::trim(v));
    return !r.info.modelName.empty();
}

// "name: hash" pairs; the weights are in the prompt's tags.
bool readLoraHashes(std::string_view v, Reading& r) {
    GenerationInfo& info = r.info;
    std::map<std::string, std::string> hashes;
    for (std::string_view rest = v; !rest.empty();) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        const size_t colon = item.rfind(':');
        if (colon != std::string_view::npos)
            hashes[std::string(detail::trim(item.substr(0, colon)))] = std::string(detail::trim(item.substr(colon + 1)));
        else badValue(info, "Lora hashes", v);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    try {
        for (const auto& tag : text::extractExtraNetworks(info.settings.prompt).loras) {
            api::LoraSetting l{tag.name, tag.unetWeight, tag.textEncoderWeight, "", true};
            if (const auto h = hashes.find(tag.name); h != hashes.end()) l.hash = h->second, hashes.erase(h);
            info.settings.loras.push_back(l);
        }
    } catch (const text::PromptError& e) {
        // The tags cannot be read, so which LoRA had which weight is unknown; written back as extra tags they
        // would land in a prompt that still cannot be read, growing on every round trip.
        info.warnings.push_back(std::string("LoRA tags in the prompt: ") + e.what() + "; Lora hashes ignored");
        hashes.clear();
    }
    // A hash without its tag (the prompt was edited): the LoRA was applied, its weight is not known.
    for (const auto& [name, hash] : hashes) {
        // Written back, it becomes a <lora:name:1> tag: a name that cannot be one is not a LoRA file name.
        const bool tagSafe = !name.empty() && loraTagName(name) == name &&
                             name.find_first_of("<>:\\") == std::string::npos &&  // control characters: below
                             std::all_of(name.begin(), name.end(), [](unsigned char c) { return c >= 0x20; });
        if (!tagSafe) {
            info.warnings.push_back("Lora hashes names a LoRA that cannot be a file name; ignored");
            continue;
        }
        info.settings.loras.push_back({name, 1.0, 1.0, hash, false});
        info.warnings.push_back("Lora hashes names '" + name + "', which has no <lora:…> tag in the prompt: restored with weight 1");
    }
    detail::found(info, "loras");
    return true;
}

// "name [short hash]": a name to look up in the model folders, like Model / Model hash.
bool readRefiner(std::string_view v, Reading& r) {
    // A1111 writes the name without its extension; one written with it ("x.pt", even "x [hash].pt") reads as
    // A1111's would be, so that what is written back reads back the same.
    // A bracket that holds no hex is part of the name ("model [v2]"); an empty one holds no hash, so the name
    // before it is read again ("x [ab] []" is "x" with hash ab, as its written form "x [ab]" reads back).
    std::string name = defaultModelName(safeModelName(detail::trim(v)));
    std::string hash;
    while (hash.empty()) {
        const auto open = name.rfind(" [");
        if (open == std::string::npos || name.back() != ']') break;
        std::string inside = name.substr(open + 2, name.size() - open - 3);
        if (!isHexHash(inside)) break;
        hash = std::move(inside);
        name = defaultModelName(name.substr(0, open));
    }
    if (name.empty()) return false;
    r.info.settings.refiner.model = std::move(name);
    r.info.settings.refiner.hash = std::move(hash);
    return true;
}

// Without a refiner the fraction means nothing (and would not be written back): it is ignored.
// Ours: ComfyUI's k-diffusion (whole timesteps, its noise) where that is what ran.
bool readSampleAs(std::string_view v, Reading& r) {
    if (v != "A1111" && v != "ComfyUI") return false;
    r.info.settings.sampleAs = std::string(v);
    return true;
}

// "Pad conds: True" is written when A1111 padded the shorter side; without it, each side ran at its own length.
bool readPadConds(std::string_view v, Reading& r) {
    if (v != "True" && v != "False") return false;
    r.info.settings.padConds = v == "True";
    return true;
}

bool readRefinerSwitch(std::string_view v, Reading& r) {
    const auto d = detail::parseNumber(v);
    if (!d || *d <= 0 || *d >= 1 || !r.info.settings.refiner.enabled()) return false;
    r.info.settings.refiner.switchAt = *d;
    return true;
}

bool readVariationSeed(std::string_view v, Reading& r) {
    const auto n = detail::parseInteger(detail::trim(v));
    if (!n || *n < 0) return false;
    r.info.settings.variation.seed = *n;
    return true;
}

bool readVariationStrength(std::string_view v, Reading& r) {
    const auto d = detail::parseNumber(v);
    if (!d || *d < 0 || *d > 1) return false;
    r.info.settings.variation.strength = *d;
    return true;
}

bool readSeedResize(std::string_view v, Reading& r) {
    const auto size = parseSize(detail::trim(v));
    if (!size || size->first > 8192 || size->second > 8192) return false;
    r.info.settings.variation.resizeFromWidth = size->first, r.info.settings.variation.resizeFromHeight = size->second;
    return true;
}

// One A1111 key: how it is written and read. The table's order is create_infotext's (the writer's) and the
// reader's; ControlNet units, extra keys and Version follow it.
struct Key {
    const char* key;
    Written (*write)(const Settings&, const A1111WriteOptions&);  // nullptr: only read (an older spelling)
    bool (*read)(std::string_view, Reading&);                     // nullptr: read by hand (RNG, with Version)
    const char* field = nullptr;    // marked in GenerationInfo::fields when read
    bool missingIsDefault = false;  // A1111 leaves the key out at its default, so a missing key is read too
};

using S = const Settings&;
using O = const A1111WriteOptions&;
using detail::formatNumber;

const Key kKeys[] = {
    {"Steps", [](S s, O) -> Written { return std::to_string(s.steps); }, readInteger<&Settings::steps, 1, 100000>, "steps"},
    {"Sampler", [](S s, O) -> Written { return writtenSamplerSchedule(s).first; }, readSampler},
    {"Schedule type", [](S s, O) -> Written { return writtenSamplerSchedule(s).second; }, readScheduleOnly},
    // Ours (A1111 ignores it): a name both families have ran as diffusers runs it, not as A1111 would read it.
    {"Sampler implementation", [](S s, O) -> Written {
         return !api::runsKDiffusion(s) && !api::runsA1111Timesteps(s) && api::takesScheduleType(splitSamplerSchedule(s.sampler).first)
                    ? Written("diffusers") : Written();
     }, nullptr},
    {"CFG scale", [](S s, O) -> Written { return formatNumber(s.cfgScale); }, readNumber<&Settings::cfgScale>, "cfg_scale"},
    {"Seed", [](S s, O o) -> Written { return std::to_string(api::imageSeeds(s, o.batchIndex).seed); },
     readInteger<&Settings::seed, 0, INT64_MAX>, "seed"},
    {"Size", [](S s, O) -> Written { return std::to_string(s.width) + "x" + std::to_string(s.height); }, readSize},
    {"Model hash", [](S, O o) -> Written { return o.modelHash.empty() ? Written() : o.modelHash; }, readModelHash},
    {"Model", writtenModel, readModel},
    {"Variation seed", [](S s, O o) -> Written {
         return s.variation.blends() ? Written(std::to_string(api::imageSeeds(s, o.batchIndex).variationSeed)) : Written();
     }, readVariationSeed, "variation"},
    {"Variation seed strength", [](S s, O) -> Written {
         return s.variation.blends() ? Written(formatNumber(s.variation.strength)) : Written();
     }, readVariationStrength, "variation"},
    {"Seed resize from", [](S s, O) -> Written {
         const auto& v = s.variation;
         return v.resizes() ? Written(std::to_string(v.resizeFromWidth) + "x" + std::to_string(v.resizeFromHeight)) : Written();
     }, readSeedResize, "variation"},
    {"Denoising strength", [](S s, O) -> Written {
         return s.hires.enabled ? Written(formatNumber(s.hires.denoising)) : s.initImage.empty() ? Written() : formatNumber(s.strength);
     }, readNumber<&Settings::strength>, "strength"},
    {"Hires upscale", [](S s, O) -> Written {
         return s.hires.enabled && s.hires.resizeWidth == 0 ? Written(formatNumber(s.hires.scale)) : Written();
     }, readHiresUpscale, "hires"},
    {"Hires resize", [](S s, O) -> Written {
         const auto& h = s.hires;
         return h.enabled && h.resizeWidth > 0 ? Written(std::to_string(h.resizeWidth) + "x" + std::to_string(h.resizeHeight)) : Written();
     }, readHiresResize, "hires"},
    {"Hires steps", [](S s, O) -> Written { return s.hires.enabled && s.hires.steps > 0 ? Written(std::to_string(s.hires.steps)) : Written(); },
     readHiresSteps, "hires"},
    {"Hires upscaler", [](S s, O) -> Written { return s.hires.enabled ? Written(s.hires.upscaler) : Written(); }, readHiresUpscaler, "hires"},
    {"Mask blur", [](S s, O) { return writtenMaskBlur(s); }, readMaskBlur, "mask_blur"},
    {"Mask mode", [](S s, O) -> Written { return s.inpaint.invertMask ? Written("Inpaint not masked") : Written(); },
     readMaskMode, "invert_mask"},
    {"Masked content", [](S s, O) -> Written {
         return s.inpaint.maskedContent != "original" ? Written(s.inpaint.maskedContent) : Written();
     }, readMaskedContent, "masked_content"},
    // Written as A1111 writes them: only for "Only masked", the padding beside it.
    {"Inpaint area", [](S s, O) -> Written { return s.inpaint.onlyMasked ? Written("Only masked") : Written(); },
     readInpaintArea, "only_masked"},
    {"Masked area padding", [](S s, O) -> Written {
         return s.inpaint.onlyMasked ? Written(std::to_string(s.inpaint.maskedPadding)) : Written();
     }, readMaskedPadding, "masked_padding"},
    {"Clip skip", [](S s, O) -> Written { return s.clipSkip > 1 ? std::to_string(s.clipSkip) : Written(); },
     readInteger<&Settings::clipSkip, 1, 12>, "clip_skip", true},
    {"ENSD", [](S s, O) -> Written { return s.ensd != 0 ? Written(std::to_string(s.ensd)) : Written(); },
     readInteger<&Settings::ensd, INT32_MIN, INT32_MAX>, "ensd"},
    // Always written: A1111 leaves out only its default, GPU, and our noise is CPU or NV.
    {"RNG", [](S s, O) -> Written { return s.rng; }, nullptr},
    {"Batch size", [](S s, O) -> Written { return s.batchSize > 1 ? std::to_string(s.batchSize) : Written(); },
     readInteger<&Settings::batchSize, 1, 64>, "batch_size"},
    {"CFG Rescale", [](S s, O) -> Written { return s.guidanceRescale != 0 ? formatNumber(s.guidanceRescale) : Written(); },
     readNumber<&Settings::guidanceRescale>, "guidance_rescale"},
    {"CFG Rescale \xcf\x86", nullptr, readNumber<&Settings::guidanceRescale>, "guidance_rescale"},
    {"Pad conds", [](S s, O) -> Written { return s.padConds ? Written("True") : Written(); }, readPadConds, "pad_conds"},
    {"Sample as", [](S s, O) -> Written { return s.sampleAs != "A1111" ? Written(s.sampleAs) : Written(); }, readSampleAs, "sample_as"},
    {"Emphasis", [](S s, O) -> Written { return s.emphasis != "Original" ? s.emphasis : Written(); },
     readChoice<&Settings::emphasis, api::isEmphasis>, "emphasis", true},
    // Our keys (A1111 ignores them): the scheduler settings a single file may need (docs/single-file.md).
    {"Prediction type", [](S s, O) -> Written { return s.predictionType.empty() ? Written() : s.predictionType; },
     readChoice<&Settings::predictionType, api::isPredictionType>, "prediction_type", true},
    {"Timestep spacing", [](S s, O) -> Written { return s.timestepSpacing.empty() ? Written() : s.timestepSpacing; },
     readChoice<&Settings::timestepSpacing, api::isTimestepSpacing>, "timestep_spacing", true},
    {"Lora hashes", [](S s, O) { return writtenLoraHashes(s); }, readLoraHashes},
    {"TI hashes", [](S s, O) { return writtenEmbeddingHashes(s); }, readEmbeddingHashes, "embeddings"},
    {"Refiner", [](S s, O) { return writtenRefiner(s); }, readRefiner, "refiner"},
    {"Refiner switch at", [](S s, O) -> Written { return s.refiner.enabled() ? formatNumber(s.refiner.switchAt) : Written(); },
     readRefinerSwitch},
};

// A1111's noise sources: CPU as it is; NV, its Philox, as it is; GPU (what A1111 leaves out) as NV, the same
// sequence in the card's float arithmetic. stable-diffusion.cpp's "cuda" is that sequence in float as well.
void readNoiseSource(const std::optional<std::string>& rng, Reading& r) {
    GenerationInfo& info = r.info;
    const bool a1111Version = !info.version.empty() && (info.version[0] == 'v' || info.version[0] == 'f');
    std::string source = rng.value_or(r.sdcpp || !a1111Version ? "CPU" : "GPU");
    if (r.sdcpp) source = source == "cuda" ? "sd.cpp cuda" : source == "std_default" ? "CPU" : source;
    if (source == "CPU" || source == "NV") {
        info.settings.rng = source;
    } else if (source == "GPU" || source == "sd.cpp cuda") {
        info.settings.rng = "NV";
        info.warnings.push_back("the image was made with " + source + " noise (RNG): restored as NV, the same numbers computed "
                                "on the CPU, which differ from the card's in the last digits (a very close picture, not bit for bit)");
    } else {
        info.warnings.push_back("the image was made with " + source + " noise (RNG), which DiffusionDesk does not draw: the same "
                                "seed gives a different picture");
        return;
    }
    detail::found(info, "rng");
}

void applyParams(std::vector<Pair> dict, GenerationInfo& info) {
    const std::function<std::optional<std::string>(std::string_view)> take = [&](std::string_view key) {
        auto it = std::find_if(dict.begin(), dict.end(), [&](const Pair& d) { return d.key == key; });
        if (it == dict.end()) return std::optional<std::string>();
        std::optional<std::string> v = std::move(it->value);
        dict.erase(it);
        return v;
    };
    const auto version = std::find_if(dict.begin(), dict.end(), [](const Pair& d) { return d.key == "Version"; });
    Reading reading{info, take, version != dict.end() && version->value.rfind("stable-diffusion.cpp", 0) == 0};
    if (reading.sdcpp) info.format = "sdcpp";
    for (const Key& k : kKeys) {
        if (!k.read) continue;
        if (const auto v = take(k.key)) {
            if (!k.read(*v, reading)) badValue(info, k.key, *v);
            else if (k.field) detail::found(info, k.field);
        }
        if (k.missingIsDefault) detail::found(info, k.field);
    }
    if (info.settings.hires.enabled && info.has("strength")) {  // a txt2img's strength is its hires pass's
        info.settings.hires.denoising = info.settings.strength;
        info.settings.strength = api::GenerationSettings().strength;
    }
    detail::found(info, "prompt_syntax");  // A1111 text means A1111 prompt syntax
    readA1111ControlNets(take, info);
    const auto rng = take("RNG");
    if (const auto v = take("Version")) info.version = *v;
    // How the tool read clip skip on SDXL: A1111 (and Forge) not at all; Fooocus as ComfyUI; our own text as ours.
    const bool ours = info.version.rfind("DiffusionDesk", 0) == 0;
    if (!ours) info.settings.sdxlClipSkip = info.version.rfind("Fooocus", 0) == 0 ? "ComfyUI" : "A1111";
    readNoiseSource(rng, reading);
    for (auto& p : dict) info.unknown.emplace_back(std::move(p.key), std::move(p.value));
}

} // namespace

std::string writeA1111Parameters(const api::GenerationSettings& s, const A1111WriteOptions& o) {
    std::vector<std::pair<std::string, std::string>> kv;
    for (const Key& k : kKeys)
        if (k.write)
            if (auto v = k.write(s, o)) kv.emplace_back(k.key, std::move(*v));
    for (auto& unit : a1111ControlNetParameters(s)) kv.push_back(std::move(unit));  // sd-webui-controlnet's units
    for (const auto& [k, v] : o.extra) {
        if (!validKey(k) || k.find('\n') != std::string::npos)
            throw std::invalid_argument("A1111 parameter key '" + k + "' cannot be read back (letters, digits, ' ', '-', '/' only)");
        kv.emplace_back(k, v);
    }
    if (!o.version.empty()) kv.emplace_back("Version", o.version);

    std::string params;
    for (const auto& [k, v] : kv) {
        if (!params.empty()) params += ", ";
        params += k + ": " + quote(v);
    }
    std::string text = s.prompt;
    // A1111 only knows LoRAs as prompt tags: LoRAs given beside the prompt are written as tags.
    for (const auto& l : s.loras)
        if (!l.fromPrompt) text += (text.empty() ? "" : " ") + loraTag(l);
    if (!s.negativePrompt.empty()) text += "\nNegative prompt: " + s.negativePrompt;
    text += "\n" + params;
    const auto first = text.find_first_not_of(" \t\n\r\f\v");
    return first == std::string::npos ? std::string() : text.substr(first);
}



GenerationInfo parseA1111Parameters(std::string_view raw) {
    checkUntrustedText("A1111 parameters", raw);
    GenerationInfo info;
    info.format = "a1111";
    auto lines = splitLines(detail::trim(raw));
    std::vector<Pair> params = findParams(lines.back());
    if (params.size() < 3) {
        params.clear();
        info.warnings.push_back("no 'Steps: ..., Sampler: ...' line was found; only the prompt was read");
    } else {
        lines.pop_back();
    }
    readPromptLines(lines, info);
    if (!params.empty()) applyParams(toDict(std::move(params)), info);
    return info;
}

std::string writeA1111Extras(int upscaleBy, const std::string& upscaler) {
    return "Postprocess upscale by: " + std::to_string(upscaleBy) + ", Postprocess upscaler: " + upscaler;
}

} // namespace dd::settings
