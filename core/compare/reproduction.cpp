#include "core/compare/reproduction.h"

#include "core/pipeline/model_search.h"
#include "core/text/prompt_parser.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace dd::compare {
namespace {

// Settings JSON names → the words a person reads.
std::string label(const std::string& field) {
    static const std::map<std::string, std::string> names{
        {"prompt", "prompt"}, {"negative_prompt", "negative prompt"}, {"seed", "seed"}, {"steps", "steps"},
        {"cfg_scale", "CFG scale"}, {"sampler", "sampler"}, {"schedule_type", "schedule type"}, {"width", "width"},
        {"height", "height"}, {"batch_size", "batch size"}, {"clip_skip", "clip skip"}, {"strength", "denoising strength"},
        {"loras", "LoRAs"}, {"embeddings", "embeddings"}, {"hires", "hires fix"}, {"variation", "variation seed"},
        {"guidance_rescale", "CFG rescale"}, {"emphasis", "emphasis"}, {"prompt_syntax", "prompt syntax"},
        {"refiner", "refiner"}, {"controlnets", "ControlNets"}, {"inpaint", "inpainting"}, {"init_image", "init image"},
        {"prediction_type", "prediction type"}, {"timestep_spacing", "timestep spacing"}, {"memory_plan", "memory plan"},
        {"deterministic", "determinism mode"}, {"rng", "noise source (RNG)"}, {"ensd", "ENSD"},
        {"pad_conds", "padded prompt sides"}, {"sample_as", "sampled as"}};
    const auto it = names.find(field);
    return it != names.end() ? it->second : field;
}

std::string dialect(const settings::GenerationInfo& read) {
    static const std::map<std::string, std::string> names{
        {"a1111", "AUTOMATIC1111"}, {"diffusiondesk", "DiffusionDesk"}, {"comfyui", "ComfyUI"}, {"invokeai", "InvokeAI"},
        {"fooocus", "Fooocus"}, {"sdcpp", "stable-diffusion.cpp"}, {"novelai", "NovelAI"}, {"swarmui", "SwarmUI"},
        {"easydiffusion", "Easy Diffusion"}, {"drawthings", "Draw Things"}};
    const auto it = names.find(read.format);
    std::string s = it != names.end() ? it->second : read.format.empty() ? "unknown" : read.format;
    return read.version.empty() ? s : s + " (" + read.version + ")";
}

} // namespace

void dropMissingLoras(api::GenerationSettings& s, const std::vector<std::string>& loraFolders, std::vector<std::string>& notes) {
    std::vector<std::string> missing;
    std::erase_if(s.loras, [&](const api::LoraSetting& l) {
        try {
            pipeline::findLoraFile(l.name, loraFolders, false);
            return false;
        } catch (const std::invalid_argument&) {
            missing.push_back(l.name);
            return true;
        }
    });
    // Their <lora:…> tags go too (the engine would look for them again).
    try {
        for (const auto& tag : text::extractExtraNetworks(s.prompt).loras) {
            if (std::find(missing.begin(), missing.end(), tag.name) != missing.end()) continue;
            try {
                pipeline::findLoraFile(tag.name, loraFolders, false);
            } catch (const std::invalid_argument&) {
                missing.push_back(tag.name);
            }
        }
    } catch (const text::PromptError&) {
    }
    for (const auto& name : missing) {
        for (size_t at = s.prompt.find("<lora:" + name); at != std::string::npos; at = s.prompt.find("<lora:" + name)) {
            const size_t end = s.prompt.find('>', at);
            s.prompt.erase(at, end == std::string::npos ? std::string::npos : end - at + 1);
        }
        notes.push_back("LoRA '" + name + "' is in none of the LoRA folders: the rerun is without it");
    }
}

std::string describeReproduction(const VerifyFile& file, const VerifyReport& report, double ssim) {
    const auto& read = file.read;
    std::string s = "made with: " + dialect(read) + "\n";
    std::string matched;
    for (const auto& f : read.fields) matched += (matched.empty() ? "" : ", ") + label(f);
    if (!read.modelName.empty() || !read.modelHash.empty())
        matched += (matched.empty() ? "" : ", ") + std::string("model ") + read.modelName + (read.modelHash.empty() ? "" : " [" + read.modelHash + "]");
    s += "matched:   " + (matched.empty() ? std::string("nothing the file said") : matched) + "\n";
    std::vector<std::string> notMatched = file.notes;
    for (const auto& w : report.rerun.warnings)
        if (std::find(notMatched.begin(), notMatched.end(), w) == notMatched.end()) notMatched.push_back(w);
    s += "not matched:" + std::string(notMatched.empty() ? " nothing\n" : "\n");
    for (const auto& n : notMatched) s += "  - " + n + "\n";
    if (!read.unknown.empty()) {
        s += "not used (keys no reader here knows, e.g. another tool's extensions):\n";
        for (const auto& [k, v] : read.unknown) s += "  - " + k + ": " + (v.size() > 80 ? v.substr(0, 77) + "..." : v) + "\n";
    }
    if (report.images.empty()) return s + "pixels:    no image to compare\n";
    const auto& v = report.images.front();
    s += std::string("pixels:    ") + (v.identical() ? "identical" : describe(v.pixels));
    if (!v.identical() && !std::isnan(ssim)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, ", SSIM %.4f", ssim);
        s += buf;
    }
    return s + "\n";
}

} // namespace dd::compare
