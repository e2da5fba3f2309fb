#pragma once
// One ControlNet of a run (docs/controlnet.md): the model, the control image and how it was preprocessed, and how
// strongly and when it steers. Fields follow sd-webui-controlnet's infotext ("Module", "Weight", "Guidance Start"
// ...), so a run written by either restores in the other. Pure: no torch.
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace dd::api {

struct ControlNetSetting {
    std::string model;                     // diffusers ControlNet folder (or its .safetensors with config.json beside it)
    std::string hash;                      // first 8 hex of the weights file's SHA-256 (A1111's [hash]); filled in by the engine
    std::string image;                     // the control image as given (before preprocessing)
    std::string preprocessor = "none";     // "none", "canny", "scribble", "blur" (A1111 "Module")
    double thresholdA = -1;                // canny: low threshold; blur: sigma; -1 = the preprocessor's default
    double thresholdB = -1;                // canny: high threshold
    double weight = 1.0;                   // diffusers controlnet_conditioning_scale
    double guidanceStart = 0.0;            // fraction of the steps (diffusers control_guidance_start)
    double guidanceEnd = 1.0;
    std::string resizeMode = "Crop and Resize";  // "Crop and Resize", "Just Resize", "Resize and Fill"
    bool operator==(const ControlNetSetting&) const = default;
};

// The preprocessors (imaging/control_preprocess implements them) and their defaults for thresholdA/B.
const std::vector<std::string>& controlPreprocessors();
void defaultThresholds(const std::string& preprocessor, double& a, double& b);

void to_json(nlohmann::json& j, const ControlNetSetting& c);
void from_json(const nlohmann::json& j, ControlNetSetting& c);
// Throws std::invalid_argument naming the ControlNet (its 0-based index as A1111's "ControlNet 0").
void validate(const ControlNetSetting& c, size_t index);

} // namespace dd::api
