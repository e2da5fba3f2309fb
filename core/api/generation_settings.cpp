#include "core/api/generation_settings.h"

#include "core/api/json_optional.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace dd::api {

void to_json(nlohmann::json& j, const LoraSetting& l) {
    j = {{"name", l.name}, {"unet_weight", l.unetWeight}, {"text_encoder_weight", l.textEncoderWeight}, {"hash", l.hash},
         {"from_prompt", l.fromPrompt}};
}

void from_json(const nlohmann::json& j, LoraSetting& l) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("name", l.name);
    get("unet_weight", l.unetWeight);
    get("text_encoder_weight", l.textEncoderWeight);
    get("hash", l.hash);
    get("from_prompt", l.fromPrompt);
}

void to_json(nlohmann::json& j, const EmbeddingSetting& e) { j = {{"name", e.name}, {"hash", e.hash}}; }

void from_json(const nlohmann::json& j, EmbeddingSetting& e) {
    readIfPresent(j, "name", e.name);
    readIfPresent(j, "hash", e.hash);
}

void to_json(nlohmann::json& j, const RefinerSetting& r) {
    j = {{"model", r.model}, {"switch_at", r.switchAt}, {"aesthetic_score", r.aestheticScore},
         {"negative_aesthetic_score", r.negativeAestheticScore}, {"hash", r.hash}};
}

void from_json(const nlohmann::json& j, RefinerSetting& r) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("model", r.model);
    get("switch_at", r.switchAt);
    get("aesthetic_score", r.aestheticScore);
    get("negative_aesthetic_score", r.negativeAestheticScore);
    get("hash", r.hash);
}

void to_json(nlohmann::json& j, const InpaintSetting& p) {
    j = {{"mask", p.mask}, {"mask_blur", p.maskBlur}, {"invert_mask", p.invertMask}, {"masked_content", p.maskedContent},
         {"mask_hash", p.maskHash}};
    if (p.onlyMasked) j.update({{"only_masked", true}, {"masked_padding", p.maskedPadding}});
}

void from_json(const nlohmann::json& j, InpaintSetting& p) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("mask", p.mask);
    get("mask_blur", p.maskBlur);
    get("invert_mask", p.invertMask);
    get("masked_content", p.maskedContent);
    get("mask_hash", p.maskHash);
    get("only_masked", p.onlyMasked);
    get("masked_padding", p.maskedPadding);
}

void to_json(nlohmann::json& j, const OutpaintSetting& o) {
    j = {{"left", o.left}, {"top", o.top}, {"right", o.right}, {"bottom", o.bottom}, {"fill", o.fill}, {"overlap", o.overlap}};
}

void from_json(const nlohmann::json& j, OutpaintSetting& o) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("left", o.left);
    get("top", o.top);
    get("right", o.right);
    get("bottom", o.bottom);
    get("fill", o.fill);
    get("overlap", o.overlap);
}

void to_json(nlohmann::json& j, const HiresSetting& h) {
    j = {{"enabled", h.enabled}, {"scale", h.scale}, {"resize_width", h.resizeWidth}, {"resize_height", h.resizeHeight},
         {"steps", h.steps}, {"denoising", h.denoising}, {"upscaler", h.upscaler}};
    if (!h.upscalerHash.empty()) j["upscaler_hash"] = h.upscalerHash;
}

void from_json(const nlohmann::json& j, HiresSetting& h) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("enabled", h.enabled);
    get("scale", h.scale);
    get("resize_width", h.resizeWidth);
    get("resize_height", h.resizeHeight);
    get("steps", h.steps);
    get("denoising", h.denoising);
    get("upscaler", h.upscaler);
    get("upscaler_hash", h.upscalerHash);
}

void to_json(nlohmann::json& j, const VariationSetting& v) {
    j = {{"seed", v.seed}, {"strength", v.strength}, {"resize_from_width", v.resizeFromWidth},
         {"resize_from_height", v.resizeFromHeight}};
}

void from_json(const nlohmann::json& j, VariationSetting& v) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("seed", v.seed);
    get("strength", v.strength);
    get("resize_from_width", v.resizeFromWidth);
    get("resize_from_height", v.resizeFromHeight);
}

ImageSeeds imageSeeds(const GenerationSettings& s, int64_t i) {
    if (s.variation.blends()) return {s.seed, s.variation.seed + i};
    return {s.seed + i, s.variation.seed + i};
}

GenerationSettings fromImage(GenerationSettings s, int64_t i) {
    const ImageSeeds first = imageSeeds(s, i);
    s.seed = first.seed;
    s.variation.seed = first.variationSeed;
    return s;
}

void to_json(nlohmann::json& j, const GenerationSettings& s) {
    j = {{"model", s.model}, {"prompt", s.prompt}, {"negative_prompt", s.negativePrompt}, {"seed", s.seed},
         {"steps", s.steps}, {"cfg_scale", s.cfgScale}, {"guidance_rescale", s.guidanceRescale}, {"sampler", s.sampler},
         {"schedule_type", s.scheduleType}, {"prediction_type", s.predictionType},
         {"timestep_spacing", s.timestepSpacing},
         {"width", s.width}, {"height", s.height}, {"batch_size", s.batchSize}, {"clip_skip", s.clipSkip},
         {"prompt_syntax", s.promptSyntax}, {"emphasis", s.emphasis}, {"pad_conds", s.padConds},
         {"init_image", s.initImage}, {"strength", s.strength}, {"preset", s.preset},
         {"memory_plan", s.plan}, {"deterministic", s.deterministic}};
    // Only when used, so sidecars of runs without LoRA stay as they were.
    if (!s.loras.empty()) j["loras"] = s.loras;
    if (s.loraMode != "merge") j["lora_mode"] = s.loraMode;
    if (s.sampleAs != "A1111") j["sample_as"] = s.sampleAs;
    if (s.sdxlClipSkip != "diffusers") j["sdxl_clip_skip"] = s.sdxlClipSkip;
    if (!s.embeddings.empty()) j["embeddings"] = s.embeddings;
    if (s.refiner.enabled()) j["refiner"] = s.refiner;
    if (!s.controlnets.empty()) j["controlnets"] = s.controlnets;
    if (!s.initImageHash.empty()) j["init_image_hash"] = s.initImageHash;
    if (s.inpaint.enabled()) j["inpaint"] = s.inpaint;
    if (s.hires.enabled) j["hires"] = s.hires;
    if (s.outpaint.enabled()) j["outpaint"] = s.outpaint;
    if (s.variation.enabled()) j["variation"] = s.variation;
    if (s.rng != "CPU") j["rng"] = s.rng;
    if (s.ensd != 0) j["ensd"] = s.ensd;
    if (!s.promptTemplate.empty()) j["prompt_template"] = s.promptTemplate;
    if (!s.negativeTemplate.empty()) j["negative_template"] = s.negativeTemplate;
    if (!s.styles.empty()) j["styles"] = s.styles;
}

void from_json(const nlohmann::json& j, GenerationSettings& s) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("model", s.model);
    get("prompt", s.prompt);
    get("negative_prompt", s.negativePrompt);
    get("seed", s.seed);
    get("steps", s.steps);
    get("cfg_scale", s.cfgScale);
    get("guidance_rescale", s.guidanceRescale);
    get("sampler", s.sampler);
    get("schedule_type", s.scheduleType);
    get("prediction_type", s.predictionType);
    get("timestep_spacing", s.timestepSpacing);
    get("width", s.width);
    get("height", s.height);
    get("batch_size", s.batchSize);
    get("clip_skip", s.clipSkip);
    get("prompt_syntax", s.promptSyntax);
    get("emphasis", s.emphasis);
    s.padConds = true;  // absent: settings from before the choice, when both sides were always padded
    get("pad_conds", s.padConds);
    get("init_image", s.initImage);
    get("strength", s.strength);
    get("preset", s.preset);
    get("memory_plan", s.plan);
    get("deterministic", s.deterministic);
    get("loras", s.loras);
    get("lora_mode", s.loraMode);
    get("sample_as", s.sampleAs);
    get("sdxl_clip_skip", s.sdxlClipSkip);
    get("embeddings", s.embeddings);
    get("refiner", s.refiner);
    get("controlnets", s.controlnets);
    get("init_image_hash", s.initImageHash);
    get("inpaint", s.inpaint);
    get("hires", s.hires);
    get("outpaint", s.outpaint);
    get("variation", s.variation);
    get("rng", s.rng);
    get("ensd", s.ensd);
    get("prompt_template", s.promptTemplate);
    get("negative_template", s.negativeTemplate);
    get("styles", s.styles);
}

namespace {

bool isOneOf(const std::vector<std::string>& choices, const std::string& v) {
    return std::find(choices.begin(), choices.end(), v) != choices.end();
}

// "\"a\", \"b\" or \"c\"", for a message that lists what may be used instead.
std::string quotedChoices(const std::vector<std::string>& choices) {
    std::string text;
    for (size_t i = 0; i < choices.size(); ++i)
        text += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + ("\"" + choices[i] + "\"");
    return text;
}

} // namespace

void validate(const GenerationSettings& s) {
    auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
    if (s.width <= 0 || s.height <= 0 || s.width % 8 || s.height % 8)
        fail("size " + std::to_string(s.width) + "x" + std::to_string(s.height) + " is not a positive multiple of 8");
    if (s.steps < 1 || s.steps > 1000) fail("steps must be between 1 and 1000 (got " + std::to_string(s.steps) + ")");
    if (s.batchSize < 1 || s.batchSize > 64) fail("batch size must be between 1 and 64 (got " + std::to_string(s.batchSize) + ")");
    if (s.cfgScale < 0) fail("CFG scale must not be negative");
    if (s.clipSkip < 1) fail("clip skip must be 1 or more (A1111 numbering: 1 = last layer)");
    if (s.promptSyntax != "a1111" && s.promptSyntax != "reference")
        fail("prompt syntax '" + s.promptSyntax + "' is unknown (use \"a1111\" or \"reference\")");
    if (!isEmphasis(s.emphasis)) fail("emphasis '" + s.emphasis + "' is unknown (use " + quotedChoices(emphasisModes()) + ")");
    if (!s.predictionType.empty() && !isPredictionType(s.predictionType))
        fail("prediction type '" + s.predictionType + "' is unknown (use \"epsilon\" or \"v_prediction\")");
    if (!s.timestepSpacing.empty() && !isTimestepSpacing(s.timestepSpacing))
        fail("timestep spacing '" + s.timestepSpacing + "' is unknown (use \"linspace\", \"leading\" or \"trailing\")");
    if (!s.scheduleType.empty() && !isScheduleType(s.scheduleType))
        fail("schedule type '" + s.scheduleType + "' is unknown (use " + quotedChoices(scheduleTypes()) + ")");
    if (runsA1111Timesteps(s) && s.scheduleType != "Automatic")
        fail("A1111's " + s.sampler + " keeps its own timesteps: its schedule type is \"Automatic\" (or none, for diffusers' " + s.sampler + ")");
    if (!s.scheduleType.empty() && !takesScheduleType(s.sampler))
        fail("the sampler '" + s.sampler + "' has its own schedule: leave the schedule type empty (it applies to A1111's samplers: k-diffusion's, DDIM and PLMS)");
    if (!s.initImage.empty() && (s.strength <= 0 || s.strength > 1)) fail("img2img strength must be in (0, 1]");
    if (s.seed < 0) fail("seed must not be negative");
    const VariationSetting& v = s.variation;
    if (v.seed < 0) fail("variation seed must not be negative");
    if (!(v.strength >= 0 && v.strength <= 1)) fail("variation seed strength must be between 0 and 1");
    if ((v.resizeFromWidth > 0) != (v.resizeFromHeight > 0) || v.resizeFromWidth < 0 || v.resizeFromHeight < 0)
        fail("seed resize from needs both a width and a height (or neither)");
    if (v.resizeFromWidth > 8192 || v.resizeFromHeight > 8192) fail("seed resize from must be at most 8192x8192");
    if (!isOneOf(sdxlClipSkipModes(), s.sdxlClipSkip))
        fail("SDXL clip skip '" + s.sdxlClipSkip + "' is unknown (use " + quotedChoices(sdxlClipSkipModes()) + ")");
    if (!isOneOf(sampleAsTools(), s.sampleAs))
        fail("sample as '" + s.sampleAs + "' is unknown (use " + quotedChoices(sampleAsTools()) + ")");
    if (s.rng != "CPU" && s.rng != "NV") fail("random numbers '" + s.rng + "' are unknown (use \"CPU\" or \"NV\")");
    if (s.loraMode != "merge" && s.loraMode != "side")
        fail("LoRA mode '" + s.loraMode + "' is unknown (use \"merge\" or \"side\")");
    for (const auto& l : s.loras)
        if (l.name.empty()) fail("a LoRA without a name");
    for (const auto& e : s.embeddings)
        if (e.name.empty()) fail("an embedding without a name");
    if (s.refiner.enabled() && !(s.refiner.switchAt > 0 && s.refiner.switchAt < 1))
        fail("refiner switch must be between 0 and 1, exclusive (got " + std::to_string(s.refiner.switchAt) + ")");
    for (size_t i = 0; i < s.controlnets.size(); ++i) validate(s.controlnets[i], i);
    if (s.hires.enabled) {
        const auto& h = s.hires;
        if (!s.initImage.empty()) fail("hires fix is for txt2img: turn it off to start from an image");
        if (s.refiner.enabled()) fail("hires fix with a refiner is not supported: turn one of them off");
        if (!(h.scale >= 1 && h.scale <= 8)) fail("hires upscale must be between 1 and 8 (got " + std::to_string(h.scale) + ")");
        if ((h.resizeWidth > 0) != (h.resizeHeight > 0) || h.resizeWidth < 0 || h.resizeHeight < 0)
            fail("hires resize needs both a width and a height (or neither)");
        if (h.steps < 0 || h.steps > 1000) fail("hires steps must be between 0 (the run's steps) and 1000");
        if (!(h.denoising > 0 && h.denoising <= 1)) fail("hires denoising strength must be in (0, 1]");
        if (h.upscaler.empty()) fail("hires upscaler is empty (use \"Latent\" or an upscaler network's name)");
        if (h.upscaler.rfind("Latent", 0) == 0 && !isLatentUpscaler(h.upscaler))
            fail("hires upscaler '" + h.upscaler + "' is unknown (use \"Latent\", \"Latent (antialiased)\", \"Latent (bicubic)\", "
                 "\"Latent (bicubic antialiased)\", \"Latent (nearest)\" or \"Latent (nearest-exact)\")");
        const Size to = hiresSize(s);
        if (to.width < s.width || to.height < s.height || to.width > 8192 || to.height > 8192)
            fail("the hires size " + std::to_string(to.width) + "x" + std::to_string(to.height) + " must be at least the image's and at most 8192");
    }
    if (s.outpaint.enabled()) {
        const auto& o = s.outpaint;
        if (s.initImage.empty()) fail("outpainting needs an init image to extend");
        if (s.inpaint.enabled()) fail("outpainting makes its own mask: leave the inpainting mask empty");
        for (int side : {o.left, o.top, o.right, o.bottom})
            if (side < 0 || side > 2048) fail("an outpainting side must be between 0 and 2048 pixels");
        if (!isOutpaintFill(o.fill)) fail("outpainting fill '" + o.fill + "' is unknown (use \"edge\", \"mirror\", \"blur\" or \"noise\")");
        if (o.overlap < 0 || o.overlap > 256) fail("the outpainting overlap must be between 0 and 256 pixels");
    }
    if (s.inpaint.enabled()) {
        if (s.initImage.empty()) fail("inpainting needs an init image to repaint (the mask alone is not enough)");
        if (s.inpaint.maskBlur < 0 || s.inpaint.maskBlur > 64)
            fail("mask blur must be between 0 and 64 pixels (got " + std::to_string(s.inpaint.maskBlur) + ")");
        if (!isMaskedContent(s.inpaint.maskedContent))
            fail("masked content '" + s.inpaint.maskedContent +
                 "' is unknown (use \"original\", \"fill\", \"latent noise\" or \"latent nothing\")");
        if (s.inpaint.maskedPadding < 0 || s.inpaint.maskedPadding > 256)
            fail("the masked area padding must be between 0 and 256 pixels (got " + std::to_string(s.inpaint.maskedPadding) + ")");
    }
    if (s.inpaint.onlyMasked && !s.inpaint.enabled())
        fail("\"only masked\" inpainting needs a mask (outpainting always repaints the whole picture)");
    validate(s.plan);
}

bool isPredictionType(const std::string& v) { return v == "epsilon" || v == "v_prediction"; }

const std::vector<std::string>& samplerNames() {
    static const std::vector<std::string> names{
        "Euler",        "Euler a",    "DDIM",      "PLMS",         "DPM++ 2M",          "DPM++ 2M Karras",
        "DPM++ 2M SDE", "Heun",       "LMS",       "UniPC",        "LCM",               "DPM2",
        "DPM2 a",       "DPM++ 2S a", "DPM++ SDE", "DPM++ 3M SDE", "DPM++ 2M SDE Heun"};
    return names;
}

const std::vector<std::string>& diffusersSamplers() {
    static const std::vector<std::string> names{"Euler", "Euler a", "DDIM",  "PLMS",  "DPM++ 2M", "DPM++ 2M Karras",
                                                "DPM++ 2M SDE", "Heun", "LMS", "UniPC", "LCM"};
    return names;
}

const std::vector<std::string>& kDiffusionSamplers() {
    static const std::vector<std::string> names{"Euler",  "Euler a",    "Heun",     "DPM2",      "DPM2 a",
                                                "DPM++ 2S a", "DPM++ 2M", "DPM++ SDE", "DPM++ 2M SDE",
                                                "DPM++ 2M SDE Heun", "DPM++ 3M SDE", "LMS", "LCM"};
    return names;
}

bool isKDiffusionSampler(const std::string& sampler) { return isOneOf(kDiffusionSamplers(), sampler); }

bool runsKDiffusion(const GenerationSettings& s) {
    return isKDiffusionSampler(s.sampler) && (!s.scheduleType.empty() || !isOneOf(diffusersSamplers(), s.sampler));
}

const std::vector<std::string>& a1111TimestepSamplers() {
    static const std::vector<std::string> names{"DDIM", "PLMS"};
    return names;
}

bool runsA1111Timesteps(const GenerationSettings& s) {
    return !s.scheduleType.empty() && isOneOf(a1111TimestepSamplers(), s.sampler);
}

bool takesScheduleType(const std::string& sampler) {
    return isKDiffusionSampler(sampler) || isOneOf(a1111TimestepSamplers(), sampler);
}

const std::vector<std::string>& scheduleTypes() {
    static const std::vector<std::string> labels{"Automatic", "Uniform",    "Karras", "Exponential", "Polyexponential",
                                                 "SGM Uniform", "KL Optimal", "Simple", "Normal",      "DDIM", "Beta"};
    return labels;
}

bool isScheduleType(const std::string& v) { return isOneOf(scheduleTypes(), v); }

std::string automaticSchedule(const std::string& sampler) {
    if (sampler == "DPM++ 2M" || sampler == "DPM++ SDE" || sampler == "DPM++ 2S a" || sampler == "DPM2" || sampler == "DPM2 a")
        return "Karras";
    if (sampler == "DPM++ 2M SDE" || sampler == "DPM++ 2M SDE Heun" || sampler == "DPM++ 3M SDE") return "Exponential";
    return "Uniform";
}

bool isTimestepSpacing(const std::string& v) { return v == "linspace" || v == "leading" || v == "trailing"; }

const std::vector<std::string>& emphasisModes() {
    static const std::vector<std::string> modes{"Original", "No norm", "Ignore", "None"};
    return modes;
}

bool isEmphasis(const std::string& v) { return isOneOf(emphasisModes(), v); }

const std::vector<std::string>& sdxlClipSkipModes() {
    static const std::vector<std::string> modes{"diffusers", "A1111", "ComfyUI"};
    return modes;
}

const std::vector<std::string>& sampleAsTools() {
    static const std::vector<std::string> tools{"A1111", "ComfyUI"};
    return tools;
}

const std::vector<std::string>& hiresUpscalers() {
    static const std::vector<std::string> names{"Latent", "Latent (antialiased)", "Latent (bicubic)",
                                                "Latent (bicubic antialiased)", "Latent (nearest)", "Latent (nearest-exact)"};
    return names;
}

bool isLatentUpscaler(const std::string& name) {
    const auto& ups = hiresUpscalers();
    return std::find(ups.begin(), ups.end(), name) != ups.end();
}

const std::vector<std::string>& resizeUpscalers() {
    static const std::vector<std::string> names{"None", "Lanczos", "Nearest"};
    return names;
}

bool isResizeUpscaler(const std::string& name) {
    const auto& ups = resizeUpscalers();
    return std::find(ups.begin(), ups.end(), name) != ups.end();
}

bool isUpscalerNetwork(const std::string& name) { return !isLatentUpscaler(name) && !isResizeUpscaler(name); }

Size hiresSize(const GenerationSettings& s) {
    const auto& h = s.hires;
    if (h.resizeWidth > 0 && h.resizeHeight > 0) return {h.resizeWidth / 8 * 8, h.resizeHeight / 8 * 8};
    return {int(s.width * h.scale) / 8 * 8, int(s.height * h.scale) / 8 * 8};
}

Size fitOutpaint(OutpaintSetting& o, int imageWidth, int imageHeight) {
    o.right += (8 - (imageWidth + o.left + o.right) % 8) % 8;
    o.bottom += (8 - (imageHeight + o.top + o.bottom) % 8) % 8;
    return {imageWidth + o.left + o.right, imageHeight + o.top + o.bottom};
}

bool isOutpaintFill(const std::string& v) { return v == "edge" || v == "mirror" || v == "blur" || v == "noise"; }

bool isMaskedContent(const std::string& v) {
    return v == "original" || v == "fill" || v == "latent noise" || v == "latent nothing";
}

nlohmann::json schedulerOverrides(const GenerationSettings& s) {
    nlohmann::json o = nlohmann::json::object();
    if (!s.predictionType.empty()) o["prediction_type"] = s.predictionType;
    if (!s.timestepSpacing.empty()) o["timestep_spacing"] = s.timestepSpacing;
    if (s.sampleAs != "A1111") o["sample_as"] = s.sampleAs;  // read by the k-diffusion samplers only
    return o;
}

} // namespace dd::api
