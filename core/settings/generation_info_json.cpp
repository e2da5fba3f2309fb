// Best-effort readers for the JSON metadata of InvokeAI and Fooocus (ComfyUI's graph: comfyui_prompt.cpp).
// Ref: InvokeAI invokeai/app/invocations/metadata.py (CoreMetadataInvocation) and backend/stable_diffusion/schedulers.
#include "core/settings/generation_info.h"
#include "core/settings/generation_info_detail.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace dd::settings {
namespace {

using nlohmann::json;

json parseObject(std::string_view text, const char* what) { return detail::parseJsonObject(text, what); }

template <typename T>
bool number(const json& j, const char* key, T& out) {
    return detail::jsonNumber(j, key, out);
}

std::string str(const json& j, const char* key) { return detail::jsonString(j, key); }

} // namespace

// --- InvokeAI ------------------------------------------------------------------------------------------

GenerationInfo readInvokeAiMetadata(std::string_view text) {
    const json j = parseObject(text, "InvokeAI metadata");
    GenerationInfo info;
    info.format = "invokeai";
    auto& s = info.settings;
    using detail::found;
    // 3.x+ names; older images used positive_conditioning / negative_conditioning.
    for (const char* k : {"positive_prompt", "positive_conditioning"})
        if (j.contains(k) && j[k].is_string()) { s.prompt = j[k].get<std::string>(); break; }
    for (const char* k : {"negative_prompt", "negative_conditioning"})
        if (j.contains(k) && j[k].is_string()) { s.negativePrompt = j[k].get<std::string>(); break; }
    found(info, "prompt");
    found(info, "negative_prompt");
    if (number(j, "seed", s.seed) && s.seed >= 0) found(info, "seed");
    if (number(j, "steps", s.steps)) found(info, "steps");
    if (number(j, "cfg_scale", s.cfgScale)) found(info, "cfg_scale");
    if (number(j, "cfg_rescale_multiplier", s.guidanceRescale)) found(info, "guidance_rescale");
    if (number(j, "width", s.width) && number(j, "height", s.height)) found(info, "width"), found(info, "height");
    if (int skip = 0; number(j, "clip_skip", skip) && skip >= 0 && skip < 24) s.clipSkip = skip + 1, found(info, "clip_skip");
    if (number(j, "strength", s.strength)) found(info, "strength");
    if (const auto sched = str(j, "scheduler"); !sched.empty()) {
        static const std::map<std::string, std::string> names{
            {"euler", "Euler"}, {"euler_a", "Euler a"}, {"ddim", "DDIM"}, {"pndm", "PLMS"}, {"lms", "LMS"},
            {"heun", "Heun"}, {"dpmpp_2m", "DPM++ 2M"}, {"dpmpp_2m_sde", "DPM++ 2M SDE"}, {"dpmpp_sde", "DPM++ SDE"},
            {"dpmpp_2s", "DPM++ 2S a"}, {"unipc", "UniPC"}, {"lcm", "LCM"}, {"kdpm_2", "DPM2"}, {"kdpm_2_a", "DPM2 a"}};
        std::string base = sched, schedule;
        if (base.size() > 2 && base.compare(base.size() - 2, 2, "_k") == 0) base.resize(base.size() - 2), schedule = "Karras";
        const auto it = names.find(base);
        detail::setSampler(info, it != names.end() ? it->second : sched, schedule, false, true, false);  // diffusers' schedulers
    }
    if (const auto it = j.find("model"); it != j.end() && it->is_object()) {
        const std::string name = !str(*it, "name").empty() ? str(*it, "name") : str(*it, "model_name");
        info.modelName = safeModelName(name);
        info.modelHash = str(*it, "hash");  // "blake3:…": InvokeAI's own hash, not comparable to A1111's
    }
    info.version = str(j, "app_version");
    if (const auto dev = str(j, "rand_device"); !dev.empty() && dev != "cpu")
        info.warnings.push_back("the image was made with " + dev + " noise; DiffusionDesk draws noise on the CPU");
    for (const char* k : {"generation_mode", "loras", "vae", "hrf_enabled"})
        if (j.contains(k)) info.unknown.emplace_back(k, j[k].dump(-1, ' ', false, json::error_handler_t::replace));
    return info;
}

// --- Fooocus ---------------------------------------------------------------------------------------------
// Ref: lllyasviel/Fooocus modules/meta_parser.py (FooocusMetadataParser: to_json / parse_json) and
// modules/async_worker.py (the d list of "Title Case" labels written before 2.2).

namespace {

// The first present key among spellings; Fooocus wrote numbers as strings in its older format.
const json* fooocusKey(const json& j, std::initializer_list<const char*> keys) {
    for (const char* k : keys)
        if (const auto it = j.find(k); it != j.end() && !it->is_null()) return &*it;
    return nullptr;
}

template <typename T>
bool fooocusNumber(const json& j, std::initializer_list<const char*> keys, T& out) {
    const json* v = fooocusKey(j, keys);
    if (!v) return false;
    if (v->is_string()) {
        const auto d = detail::parseNumber(v->get<std::string>());
        if (!d) return false;
        json tmp = *d;
        return number(json{{"v", tmp}}, "v", out);
    }
    return number(json{{"v", *v}}, "v", out);
}

std::string fooocusString(const json& j, std::initializer_list<const char*> keys) {
    const json* v = fooocusKey(j, keys);
    return v && v->is_string() ? v->get<std::string>() : std::string();
}

} // namespace

GenerationInfo readFooocusMetadata(std::string_view text) {
    const json j = parseObject(text, "Fooocus metadata");
    GenerationInfo info;
    info.format = "fooocus";
    auto& s = info.settings;
    using detail::found;
    s.prompt = fooocusString(j, {"prompt", "Prompt"});
    s.negativePrompt = fooocusString(j, {"negative_prompt", "Negative Prompt"});
    found(info, "prompt");
    found(info, "negative_prompt");
    if (fooocusNumber(j, {"steps", "Steps"}, s.steps) && s.steps >= 1) found(info, "steps");
    if (fooocusNumber(j, {"guidance_scale", "Guidance Scale"}, s.cfgScale)) found(info, "cfg_scale");
    if (fooocusNumber(j, {"seed", "Seed"}, s.seed) && s.seed >= 0) found(info, "seed");
    if (int skip = 0; fooocusNumber(j, {"clip_skip", "CLIP Skip"}, skip) && skip >= 1 && skip <= 12) s.clipSkip = skip, found(info, "clip_skip");
    // "(1152, 896)" in both formats; "1152×896" in some 2.x images.
    if (const auto res = fooocusString(j, {"resolution", "Resolution"}); !res.empty()) {
        std::string digits;
        for (const char c : res) digits += (c >= '0' && c <= '9') ? c : ' ';
        const auto sp = digits.find_first_not_of(' ');
        const auto mid = sp == std::string::npos ? sp : digits.find(' ', sp);
        const auto w = mid == std::string::npos ? std::nullopt : detail::parseInteger(digits.substr(sp, mid - sp));
        const auto h = mid == std::string::npos ? std::nullopt : detail::parseInteger(digits.substr(mid));
        if (w && h && *w > 0 && *h > 0 && *w <= 65536 && *h <= 65536) s.width = int(*w), s.height = int(*h), found(info, "width"), found(info, "height");
        else info.warnings.push_back("Fooocus resolution '" + res.substr(0, 40) + "' is not WIDTHxHEIGHT; ignored");
    }
    if (const auto sampler = fooocusString(j, {"sampler", "Sampler"}); !sampler.empty())
        detail::setSampler(info, detail::comfySamplerLabel(sampler), detail::comfyScheduleLabel(fooocusString(j, {"scheduler", "Scheduler"})), false);
    info.modelName = safeModelName(fooocusString(j, {"base_model", "Base Model"}));
    info.modelHash = fooocusString(j, {"base_model_hash"});
    if (!info.modelHash.empty() && (info.modelHash.size() > 64 || info.modelHash.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos))
        info.modelHash.clear();
    info.version = fooocusString(j, {"version", "Version"});
    static const std::set<std::string> used{"prompt", "Prompt", "negative_prompt", "Negative Prompt", "steps", "Steps",
                                            "guidance_scale", "Guidance Scale", "seed", "Seed", "clip_skip", "CLIP Skip",
                                            "resolution", "Resolution", "sampler", "Sampler", "scheduler", "Scheduler",
                                            "base_model", "Base Model", "base_model_hash", "version", "Version"};
    for (const auto& [k, v] : j.items())
        if (!used.count(k)) info.unknown.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace));
    info.warnings.push_back("Fooocus adds its own prompt expansion and styles; the same settings give a different picture here");
    return info;
}

} // namespace dd::settings
