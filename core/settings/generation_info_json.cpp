// Best-effort readers for the JSON metadata of ComfyUI and InvokeAI.
// Ref: ComfyUI nodes.py (KSampler, KSamplerAdvanced, CLIPTextEncode, CheckpointLoaderSimple, EmptyLatentImage,
// CLIPSetLastLayer) and comfy/samplers.py (KSAMPLER_NAMES, SCHEDULER_NAMES); InvokeAI
// invokeai/app/invocations/metadata.py (CoreMetadataInvocation) and backend/stable_diffusion/schedulers.
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

json parseObject(std::string_view text, const char* what) {
    checkUntrustedText(what, text);
    detail::checkJsonDepth(text, what);
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw MetadataError(std::string(what) + ": not a JSON object");
    return j;
}

template <typename T>
bool number(const json& j, const char* key, T& out) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return false;
    const double v = it->get<double>();
    if (!std::isfinite(v)) return false;
    if constexpr (std::is_integral_v<T>) {
        if (v != std::floor(v) || v < double(std::numeric_limits<T>::min()) || v >= double(std::numeric_limits<T>::max()))
            return false;
    }
    out = static_cast<T>(v);
    return true;
}

std::string str(const json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// --- ComfyUI -------------------------------------------------------------------------------------------

// Sampler names in comfy/samplers.py -> the A1111 labels.
std::string comfySampler(const std::string& s) {
    static const std::map<std::string, std::string> m{
        {"euler", "Euler"}, {"euler_ancestral", "Euler a"}, {"heun", "Heun"}, {"lms", "LMS"}, {"ddim", "DDIM"},
        {"dpmpp_2m", "DPM++ 2M"}, {"dpmpp_2m_sde", "DPM++ 2M SDE"}, {"dpmpp_sde", "DPM++ SDE"}, {"uni_pc", "UniPC"},
        {"uni_pc_bh2", "UniPC"}, {"lcm", "LCM"}, {"dpm_2", "DPM2"}, {"dpm_2_ancestral", "DPM2 a"},
        {"dpmpp_2s_ancestral", "DPM++ 2S a"}, {"dpmpp_3m_sde", "DPM++ 3M SDE"}, {"dpmpp_2m_sde_gpu", "DPM++ 2M SDE"}};
    const auto it = m.find(s);
    return it != m.end() ? it->second : s;
}

std::string comfySchedule(const std::string& s) {
    static const std::map<std::string, std::string> m{
        {"normal", ""}, {"karras", "Karras"}, {"exponential", "Exponential"}, {"sgm_uniform", "SGM Uniform"},
        {"simple", "Simple"}, {"ddim_uniform", "DDIM"}, {"beta", "Beta"}, {"kl_optimal", "KL Optimal"}};
    const auto it = m.find(s);
    return it != m.end() ? it->second : s;
}

class ComfyGraph {
public:
    explicit ComfyGraph(const json& g) : m_g(g) {}

    // The node an input is linked to (["4", 0] or [4, 0]), or nullptr.
    const json* linked(const json& node, const char* input) const {
        const auto* in = inputs(node);
        if (!in) return nullptr;
        const auto it = in->find(input);
        if (it == in->end() || !it->is_array() || it->empty()) return nullptr;
        const json& id = (*it)[0];
        const std::string key = id.is_string() ? id.get<std::string>() : id.is_number_integer() ? std::to_string(id.get<int64_t>()) : "";
        const auto n = m_g.find(key);
        return n != m_g.end() && n->is_object() ? &*n : nullptr;
    }

    static const json* inputs(const json& node) {
        const auto it = node.find("inputs");
        return it != node.end() && it->is_object() ? &*it : nullptr;
    }

    // Follows links from `input` until a node with a string in one of `fields`; depth-limited against cycles.
    std::string findText(const json& node, const char* input, std::initializer_list<const char*> fields) const {
        const json* cur = linked(node, input);
        for (int depth = 0; cur && depth < 16; ++depth) {
            const json* in = inputs(*cur);
            if (!in) return {};
            for (const char* f : fields) {
                if (const auto s = str(*in, f); !s.empty() || (in->contains(f) && (*in)[f].is_string())) return s;
                if (const json* next = linked(*cur, f)) {  // a text fed from a primitive / string node
                    const json* nin = inputs(*next);
                    for (const char* g : {"text", "string", "value", "text_g"})
                        if (nin && nin->contains(g) && (*nin)[g].is_string()) return (*nin)[g].get<std::string>();
                }
            }
            // Through conditioning nodes (ConditioningCombine, ControlNetApply...): their first linked input.
            const json* next = nullptr;
            for (const char* via : {"conditioning", "conditioning_1", "positive", "negative", "clip"})
                if ((next = linked(*cur, via))) break;
            cur = next;
        }
        return {};
    }

private:
    const json& m_g;
};

std::string classOf(const json& node) { return node.is_object() ? str(node, "class_type") : std::string(); }

} // namespace

GenerationInfo readComfyUiPrompt(std::string_view text) {
    const json g = parseObject(text, "ComfyUI prompt");
    const ComfyGraph graph(g);
    GenerationInfo info;
    info.format = "comfyui";
    std::vector<const json*> samplers;
    for (const auto& [id, node] : g.items()) {
        const auto cls = classOf(node);
        if (cls == "KSampler" || cls == "KSamplerAdvanced" || cls == "SamplerCustom") samplers.push_back(&node);
    }
    if (samplers.empty()) {
        info.warnings.push_back("no KSampler node in the ComfyUI graph; nothing to read");
        return info;
    }
    if (samplers.size() > 1)
        info.warnings.push_back(std::to_string(samplers.size()) + " sampler nodes (a hires or refiner pass?); read the first");
    const json& ks = *samplers.front();
    const json* in = ComfyGraph::inputs(ks);
    if (!in) return info;
    auto& s = info.settings;
    using detail::found;
    if (number(*in, "seed", s.seed) || number(*in, "noise_seed", s.seed)) found(info, "seed");
    if (number(*in, "steps", s.steps)) found(info, "steps");
    if (number(*in, "cfg", s.cfgScale)) found(info, "cfg_scale");
    if (const auto name = str(*in, "sampler_name"); !name.empty())
        detail::setSampler(info, comfySampler(name), comfySchedule(str(*in, "scheduler")), false);
    if (double d = 1; number(*in, "denoise", d) && d < 1) s.strength = d, found(info, "strength");

    for (const auto* f : {"text", "text_g"}) {
        if (s.prompt.empty()) s.prompt = graph.findText(ks, "positive", {f});
        if (s.negativePrompt.empty()) s.negativePrompt = graph.findText(ks, "negative", {f});
    }
    found(info, "prompt");
    found(info, "negative_prompt");

    if (const json* latent = graph.linked(ks, "latent_image")) {
        const json* lin = ComfyGraph::inputs(*latent);
        int w = 0, h = 0, b = 1;
        if (lin && number(*lin, "width", w) && number(*lin, "height", h) && w > 0 && h > 0) {
            s.width = w, s.height = h;
            found(info, "width"), found(info, "height");
            if (number(*lin, "batch_size", b) && b >= 1) s.batchSize = b, found(info, "batch_size");
        }
    }
    std::set<std::string> seen;
    for (const auto& [id, node] : g.items()) {
        const json* nin = ComfyGraph::inputs(node);
        if (!nin) continue;
        if (const auto ckpt = str(*nin, "ckpt_name"); !ckpt.empty() && info.modelName.empty()) {
            info.modelName = safeModelName(ckpt);
            if (info.modelName.empty()) info.warnings.push_back("model name '" + ckpt.substr(0, 80) + "' is not a safe file name; ignored");
        }
        int layer = 0;
        if (classOf(node) == "CLIPSetLastLayer" && number(*nin, "stop_at_clip_layer", layer) && layer <= -1 && layer >= -24)
            s.clipSkip = -layer, found(info, "clip_skip");
        if (const auto cls = classOf(node); cls.find("Lora") != std::string::npos && seen.insert(cls).second)
            info.unknown.emplace_back(cls, str(*nin, "lora_name"));
    }
    return info;
}

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
        detail::setSampler(info, it != names.end() ? it->second : sched, schedule, false);
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
        detail::setSampler(info, comfySampler(sampler), comfySchedule(fooocusString(j, {"scheduler", "Scheduler"})), false);
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
