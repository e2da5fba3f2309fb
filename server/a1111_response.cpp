#include "server/a1111_response.h"

#include "core/settings/a1111_parameters.h"
#include "core/settings/generation_info.h"
#include "core/settings/generation_info_detail.h"

namespace dd::server {

using nlohmann::json;

json runInfo(const ApiRun& request, const ServiceResult& result, const std::string& version) {
    const auto& s = result.settings;
    json seeds = json::array(), prompts = json::array(), negatives = json::array(), subseeds = json::array(),
         infotexts = json::array();
    for (const auto& image : result.images) {
        seeds.push_back(image.seed);
        subseeds.push_back(image.variationSeed);
        prompts.push_back(s.prompt);
        negatives.push_back(s.negativePrompt);
        infotexts.push_back(image.infotext);
    }
    json warnings = json::array();
    for (const auto& w : request.warnings) warnings.push_back(w);
    for (const auto& w : result.warnings) warnings.push_back(w);
    if (result.interrupted) warnings.push_back("interrupted: " + std::to_string(result.images.size()) + " images were finished");
    const bool img2img = !s.initImage.empty();
    return json{
        {"prompt", s.prompt}, {"all_prompts", prompts}, {"negative_prompt", s.negativePrompt},
        {"all_negative_prompts", negatives}, {"seed", result.images.empty() ? s.seed : result.images.front().seed},
        {"all_seeds", seeds}, {"subseed", result.images.empty() ? s.variation.seed : result.images.front().variationSeed},
        {"all_subseeds", subseeds}, {"subseed_strength", s.variation.strength}, {"width", s.width}, {"height", s.height},
        {"sampler_name", s.sampler}, {"cfg_scale", s.cfgScale}, {"steps", s.steps}, {"batch_size", s.batchSize},
        {"restore_faces", false}, {"face_restoration_model", nullptr}, {"sd_model_name", result.modelName},
        {"sd_model_hash", result.modelHash.empty() ? json(nullptr) : json(result.modelHash)}, {"sd_vae_name", nullptr},
        {"sd_vae_hash", nullptr}, {"seed_resize_from_w", s.variation.resizes() ? s.variation.resizeFromWidth : -1},
        {"seed_resize_from_h", s.variation.resizes() ? s.variation.resizeFromHeight : -1},
        {"denoising_strength", img2img ? json(s.strength) : s.hires.enabled ? json(s.hires.denoising) : json(nullptr)},
        {"extra_generation_params", json::object()}, {"index_of_first_image", 0}, {"infotexts", infotexts},
        {"styles", json::array()}, {"job_timestamp", result.jobTimestamp}, {"clip_skip", s.clipSkip},
        {"is_using_inpainting_conditioning", false}, {"version", version}, {"warnings", warnings},
        {"interrupted", result.interrupted}, {"task_id", result.id},
    };
}

json pngInfo(const std::map<std::string, std::string>& text) {
    json items = json::object();
    for (const auto& [key, value] : text)
        if (key != "parameters") items[key] = value;
    const auto parameters = text.find("parameters");
    if (parameters == text.end()) return json{{"info", ""}, {"items", items}, {"parameters", json::object()}};
    const auto info = settings::parseA1111Parameters(parameters->second);
    const auto& s = info.settings;
    json dict{{"Prompt", s.prompt}, {"Negative prompt", s.negativePrompt}};
    const auto num = [](double v) { return settings::detail::formatNumber(v); };
    if (info.has("steps")) dict["Steps"] = std::to_string(s.steps);
    if (info.has("sampler")) dict["Sampler"] = s.sampler;
    if (!s.scheduleType.empty()) dict["Schedule type"] = s.scheduleType;
    if (info.has("cfg_scale")) dict["CFG scale"] = num(s.cfgScale);
    if (info.has("seed")) dict["Seed"] = std::to_string(s.seed);
    if (info.has("width")) dict["Size-1"] = std::to_string(s.width), dict["Size-2"] = std::to_string(s.height);
    if (!info.modelName.empty()) dict["Model"] = info.modelName;
    if (!info.modelHash.empty()) dict["Model hash"] = info.modelHash;
    dict["Clip skip"] = std::to_string(s.clipSkip);
    for (const auto& [key, value] : info.unknown) dict[key] = value;
    return json{{"info", parameters->second}, {"items", items}, {"parameters", dict}};
}

json samplerList() {
    json out = json::array();
    for (const auto& name : api::samplerNames()) out.push_back({{"name", name}, {"aliases", json::array()}, {"options", json::object()}});
    return out;
}

json schedulerList() {
    json out = json::array();
    for (const auto& s : apiSchedulers())
        out.push_back({{"name", s.name}, {"label", s.label}, {"aliases", nullptr}, {"default_rho", -1}, {"need_inner_model", false}});
    return out;
}

json validationError(const std::string& field, const std::string& message, const std::string& type) {
    json loc = json::array({"body"});
    size_t at = 0;
    while (at <= field.size()) {  // "override_settings.sd_model_checkpoint" → ["body", "override_settings", "sd_model_checkpoint"]
        const size_t dot = std::min(field.find('.', at), field.size());
        const std::string part = field.substr(at, dot - at);
        const bool index = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
        loc.push_back(index ? json(std::stoi(part)) : json(part));
        at = dot + 1;
    }
    return json{{"detail", json::array({{{"loc", loc}, {"msg", message}, {"type", type}}})}};
}

json failureBody(const std::string& error, const std::string& message) {
    return json{{"error", error}, {"detail", ""}, {"body", ""}, {"errors", message}};
}

} // namespace dd::server
