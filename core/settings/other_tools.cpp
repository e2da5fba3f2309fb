// Readers for the metadata of tools whose images artists bring along: InvokeAI's first two formats ("Dream" text,
// "sd-metadata" JSON), NovelAI, SwarmUI, Easy Diffusion and Draw Things. Each reads what it can and lists the rest.
// Ref (layouts): InvokeAI 2.x ldm/invoke/pngwriter.py and args.py (dream_prompt_str); NovelAI's PNG text chunks
// (Description, Software, Source, Comment) and novelai-image-metadata; SwarmUI T2IParamInput.GenFullMetadataObject;
// sdkit save_dicts (Easy Diffusion's TASK_TEXT_MAPPING); Draw Things' XMP (exif:UserComment JSON); the sd-parsers
// 0.6 and sd-prompt-reader 1.3 readers of the same files.
#include "core/settings/generation_info.h"
#include "core/settings/generation_info_detail.h"
#include "core/settings/image_metadata.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

namespace dd::settings {
namespace {

using nlohmann::json;
using detail::found;
using detail::jsonString;

// A number written as a number or as a string ("20", "7.5"): several of these tools write both.
template <typename T>
bool looseNumber(const json& j, const char* key, T& out) {
    const auto it = j.find(key);
    if (it == j.end()) return false;
    if (it->is_number()) return detail::jsonNumber(j, key, out);
    if (!it->is_string()) return false;
    const auto v = detail::parseNumber(it->get<std::string>());
    if (!v) return false;
    if constexpr (std::is_integral_v<T>) {
        if (*v != double(int64_t(*v)) || *v < 0 || *v > 9.0e15) return false;
    }
    out = static_cast<T>(*v);
    return true;
}

std::string stem(const std::string& name) { return safeModelName(std::filesystem::path(name).filename().string()); }

void keepUnknown(GenerationInfo& info, const json& j, const std::set<std::string>& used) {
    for (const auto& [k, v] : j.items())
        if (!used.count(k)) info.unknown.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace));
}

void setSize(GenerationInfo& info, int64_t w, int64_t h) {
    if (w <= 0 || h <= 0 || w > 65536 || h > 65536) return;
    info.settings.width = int(w), info.settings.height = int(h);
    found(info, "width"), found(info, "height");
}

// The fields every JSON format here has, under its own names.
struct CommonKeys {
    const char *prompt, *negative, *seed, *steps, *cfg;
};
void readCommon(const json& j, const CommonKeys& k, GenerationInfo& info) {
    auto& s = info.settings;
    s.prompt = jsonString(j, k.prompt);
    s.negativePrompt = jsonString(j, k.negative);
    found(info, "prompt"), found(info, "negative_prompt");
    if (looseNumber(j, k.seed, s.seed)) found(info, "seed");
    if (looseNumber(j, k.steps, s.steps) && s.steps >= 1) found(info, "steps");
    if (looseNumber(j, k.cfg, s.cfgScale)) found(info, "cfg_scale");
}

// "k_euler_ancestral", "k_lms", "ddim"… (InvokeAI 2.x, NovelAI), "euler_a" (Easy Diffusion): ComfyUI's names after
// the prefix, with the abbreviations.
std::string samplerLabel(std::string name) {
    if (name.rfind("k_", 0) == 0) name.erase(0, 2);
    static const std::map<std::string, std::string> abbreviations{
        {"euler_a", "euler_ancestral"}, {"dpm_2_a", "dpm_2_ancestral"}, {"dpm2", "dpm_2"}, {"dpm2_a", "dpm_2_ancestral"},
        {"dpmpp_2s_a", "dpmpp_2s_ancestral"}, {"dpmpp_2", "dpmpp_2s_ancestral"}, {"unipc_snr", "uni_pc"}, {"unipc_tu", "uni_pc"},
        {"unipc_tq", "uni_pc"}, {"unipc_snr_2", "uni_pc"}, {"unipc_tu_2", "uni_pc"}, {"plms", "PLMS"}};
    if (const auto it = abbreviations.find(name); it != abbreviations.end()) name = it->second;
    return detail::comfySamplerLabel(name);
}

// InvokeAI 2.x's prompt: "[…]" spans are the negative prompt, joined.
void splitBracketedNegative(const std::string& text, GenerationInfo& info) {
    std::string positive, negative;
    int depth = 0;
    for (const char c : text) {
        if (c == '[' && depth++ == 0) continue;
        if (c == ']' && depth > 0 && --depth == 0) {
            negative += ", ";
            continue;
        }
        (depth > 0 ? negative : positive) += c;
    }
    while (negative.ends_with(", ")) negative.resize(negative.size() - 2);
    info.settings.prompt = std::string(detail::trim(positive));
    info.settings.negativePrompt = std::string(detail::trim(negative));
    found(info, "prompt"), found(info, "negative_prompt");
}

} // namespace

GenerationInfo readInvokeAiDream(std::string_view text) {
    GenerationInfo info;
    info.format = "invokeai";
    const std::string t(detail::trim(text));
    if (t.empty() || t[0] != '"') throw MetadataError("InvokeAI 'Dream': the prompt is not in quotes");
    const size_t close = t.rfind('"');
    if (close == 0) throw MetadataError("InvokeAI 'Dream': the prompt's quote is not closed");
    splitBracketedNegative(t.substr(1, close - 1), info);
    auto& s = info.settings;
    int64_t w = 0, h = 0;
    // "-s 50 -S 1234 -W 512 -H 768 -C 7.5 -A k_lms": flags and their first value.
    std::string_view rest = std::string_view(t).substr(close + 1);
    while (!rest.empty()) {
        const size_t dash = rest.find(" -");
        if (dash == std::string_view::npos) break;
        rest.remove_prefix(dash + 2);
        const size_t sp = rest.find(' ');
        const std::string flag(rest.substr(0, sp));
        if (sp == std::string_view::npos) break;
        std::string_view value = detail::trim(rest.substr(sp + 1));
        value = value.substr(0, value.find(' '));
        const std::string v(value);
        const auto n = detail::parseNumber(v);
        const auto i = detail::parseInteger(v);  // whole numbers in range, or nothing
        if (flag == "s" && i && *i >= 1 && *i <= 100000) s.steps = int(*i), found(info, "steps");
        else if (flag == "S" && i && *i >= 0) s.seed = *i, found(info, "seed");
        else if (flag == "W" && i) w = *i;
        else if (flag == "H" && i) h = *i;
        else if (flag == "C" && n) s.cfgScale = *n, found(info, "cfg_scale");
        else if (flag == "A") detail::setSampler(info, samplerLabel(v), "", false);
        else if (flag == "f" && n && *n > 0 && *n < 1) s.strength = *n, found(info, "strength");
        else info.unknown.emplace_back("-" + flag, v);
    }
    setSize(info, w, h);
    return info;
}

GenerationInfo readInvokeAiSdMetadata(std::string_view text) {
    const json j = detail::parseJsonObject(text, "InvokeAI sd-metadata");
    GenerationInfo info;
    info.format = "invokeai";
    const auto it = j.find("image");
    if (it == j.end() || !it->is_object()) throw MetadataError("InvokeAI sd-metadata: no \"image\" object");
    const json& im = *it;
    auto& s = info.settings;
    if (const auto p = im.find("prompt"); p != im.end()) {
        if (p->is_string()) splitBracketedNegative(p->get<std::string>(), info);
        else if (p->is_array() && !p->empty() && p->front().is_object()) splitBracketedNegative(jsonString(p->front(), "prompt"), info);
    }
    if (looseNumber(im, "steps", s.steps) && s.steps >= 1) found(info, "steps");
    if (looseNumber(im, "seed", s.seed)) found(info, "seed");
    if (looseNumber(im, "cfg_scale", s.cfgScale)) found(info, "cfg_scale");
    int64_t w = 0, h = 0;
    if (looseNumber(im, "width", w) && looseNumber(im, "height", h)) setSize(info, w, h);
    if (const auto sampler = jsonString(im, "sampler"); !sampler.empty()) detail::setSampler(info, samplerLabel(sampler), "", false);
    if (double strength = 0; jsonString(im, "type") == "img2img" && looseNumber(im, "strength", strength) && strength > 0 && strength <= 1)
        s.strength = strength, found(info, "strength");
    info.modelName = safeModelName(jsonString(j, "model_weights"));
    info.version = jsonString(j, "app_version");
    keepUnknown(info, im, {"prompt", "steps", "seed", "cfg_scale", "width", "height", "sampler", "type", "strength"});
    return info;
}

GenerationInfo readNovelAiMetadata(std::string_view comment, std::string_view description, std::string_view source) {
    const json j = detail::parseJsonObject(comment, "NovelAI 'Comment'");
    GenerationInfo info;
    info.format = "novelai";
    auto& s = info.settings;
    readCommon(j, {"prompt", "uc", "seed", "steps", "scale"}, info);
    if (s.prompt.empty()) s.prompt = std::string(description);
    if (looseNumber(j, "cfg_rescale", s.guidanceRescale) && s.guidanceRescale > 0) found(info, "guidance_rescale");
    int64_t w = 0, h = 0;
    if (looseNumber(j, "width", w) && looseNumber(j, "height", h)) setSize(info, w, h);
    static const std::map<std::string, std::string> schedules{{"native", ""}, {"karras", "karras"}, {"exponential", "exponential"}};
    const std::string schedule = jsonString(j, "noise_schedule");
    const auto sched = schedules.find(schedule);
    if (const auto sampler = jsonString(j, "sampler"); !sampler.empty())
        detail::setSampler(info, samplerLabel(sampler), detail::comfyScheduleLabel(sched != schedules.end() ? sched->second : schedule), false);
    if (double strength = 0; jsonString(j, "request_type").find("Img2Img") != std::string::npos && looseNumber(j, "strength", strength))
        s.strength = strength, found(info, "strength");
    // "Stable Diffusion XL C1E1DE52": NovelAI's own models (the last word tags the version), not files anyone else has.
    std::string model(detail::trim(source));
    if (const size_t sp = model.rfind(' ');
        sp != std::string::npos && model.find_first_not_of("0123456789ABCDEF", sp + 1) == std::string::npos)
        model.resize(sp);
    info.modelName = safeModelName(model);
    info.warnings.push_back("NovelAI's models are its own: choose the nearest model you have (the picture will differ)");
    keepUnknown(info, j, {"prompt", "uc", "steps", "seed", "scale", "cfg_rescale", "width", "height", "sampler", "noise_schedule"});
    return info;
}

GenerationInfo readSwarmUiParameters(std::string_view text) {
    const json j = detail::parseJsonObject(text, "SwarmUI parameters");
    const auto it = j.find("sui_image_params");
    if (it == j.end() || !it->is_object()) throw MetadataError("SwarmUI parameters: no \"sui_image_params\" object");
    const json& p = *it;
    GenerationInfo info;
    info.format = "swarmui";
    auto& s = info.settings;
    s.sampleAs = "ComfyUI";  // SwarmUI samples through a ComfyUI backend
    readCommon(p, {"prompt", "negativeprompt", "seed", "steps", "cfgscale"}, info);
    int64_t w = 0, h = 0;
    if (looseNumber(p, "width", w) && looseNumber(p, "height", h)) setSize(info, w, h);
    if (int skip = 0; looseNumber(p, "clipstopatlayer", skip) && skip <= -1 && skip >= -24) s.clipSkip = -skip, found(info, "clip_skip");
    // Its sampler and scheduler are ComfyUI's ids (older files: comfyuisampler).
    std::string sampler = jsonString(p, "sampler");
    if (sampler.empty()) sampler = jsonString(p, "comfyuisampler");
    if (!sampler.empty()) detail::setSampler(info, detail::comfySamplerLabel(sampler), detail::comfyScheduleLabel(jsonString(p, "scheduler")), false);
    if (const auto model = jsonString(p, "model"); !model.empty()) info.modelName = stem(model);
    info.version = jsonString(p, "swarm_version");
    keepUnknown(info, p, {"prompt", "negativeprompt", "seed", "steps", "cfgscale", "width", "height", "clipstopatlayer", "sampler",
                          "comfyuisampler", "scheduler", "model", "swarm_version"});
    return info;
}

GenerationInfo readEasyDiffusion(const std::map<std::string, std::string>& text) {
    // Two spellings: the task's own keys, or the display names when the text export is on as well.
    const auto get = [&](const char* key, const char* display) -> std::optional<std::string> {
        for (const char* k : {key, display})
            if (const auto it = text.find(k); it != text.end()) return it->second;
        return std::nullopt;
    };
    GenerationInfo info;
    info.format = "easydiffusion";
    auto& s = info.settings;
    s.prompt = get("prompt", "Prompt").value_or("");
    s.negativePrompt = get("negative_prompt", "Negative Prompt").value_or("");
    found(info, "prompt"), found(info, "negative_prompt");
    const auto integer = [&](const char* key, const char* display) { return detail::parseInteger(get(key, display).value_or("")); };
    if (const auto v = integer("seed", "Seed"); v && *v >= 0) s.seed = *v, found(info, "seed");
    if (const auto v = integer("num_inference_steps", "Steps"); v && *v >= 1 && *v <= 100000) s.steps = int(*v), found(info, "steps");
    if (const auto v = detail::parseNumber(get("guidance_scale", "Guidance Scale").value_or(""))) s.cfgScale = *v, found(info, "cfg_scale");
    if (const auto w = integer("width", "Width"), h = integer("height", "Height"); w && h) setSize(info, *w, *h);
    if (get("clip_skip", "Clip Skip").value_or("") == "True") s.clipSkip = 2, found(info, "clip_skip");
    if (const auto sampler = get("sampler_name", "Sampler"); sampler && !sampler->empty())
        detail::setSampler(info, samplerLabel(*sampler), detail::comfyScheduleLabel(get("scheduler_name", "Scheduler").value_or("")), false);
    if (const auto model = get("use_stable_diffusion_model", "Stable Diffusion model"); model && !model->empty()) info.modelName = stem(*model);
    if (const auto lora = get("use_lora_model", "LoRA model"); lora && !lora->empty() && *lora != "None")
        info.unknown.emplace_back("use_lora_model", *lora);
    return info;
}

GenerationInfo readDrawThings(std::string_view xmp) {
    const std::string comment = xmpProperty(xmp, "exif:UserComment");
    if (comment.empty()) throw MetadataError("Draw Things XMP: no exif:UserComment");
    const json j = detail::parseJsonObject(comment, "Draw Things exif:UserComment");
    GenerationInfo info;
    info.format = "drawthings";
    auto& s = info.settings;
    readCommon(j, {"c", "uc", "seed", "steps", "scale"}, info);
    if (const auto size = jsonString(j, "size"); !size.empty()) {
        const size_t x = size.find('x');
        const auto w = detail::parseInteger(size.substr(0, x)), h = x == std::string::npos ? std::nullopt : detail::parseInteger(size.substr(x + 1));
        if (w && h) setSize(info, *w, *h);
    }
    // Display names: "DPM++ 2M Karras", "Euler A", "UniPC Trailing".
    if (std::string sampler = jsonString(j, "sampler"); !sampler.empty()) {
        for (const char* suffix : {" Trailing", " AYS"})
            if (sampler.ends_with(suffix)) {
                info.warnings.push_back("Draw Things' '" + sampler + "' timesteps are not ours: restored without '" + std::string(suffix + 1) + "'");
                sampler.resize(sampler.size() - std::string_view(suffix).size());
            }
        if (sampler == "Euler A") sampler = "Euler a";
        detail::setSampler(info, sampler, "", false);
    }
    if (double strength = 1; looseNumber(j, "strength", strength) && strength > 0 && strength < 1) s.strength = strength, found(info, "strength");
    if (const auto model = jsonString(j, "model"); !model.empty()) info.modelName = stem(model);
    keepUnknown(info, j, {"c", "uc", "seed", "steps", "scale", "size", "sampler", "strength", "model", "v2"});
    return info;
}

} // namespace dd::settings
