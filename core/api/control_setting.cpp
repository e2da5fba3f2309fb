#include "core/api/control_setting.h"

#include "core/api/json_optional.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace dd::api {

const std::vector<std::string>& controlPreprocessors() {
    static const std::vector<std::string> names{"none", "canny", "scribble", "blur"};
    return names;
}

// sd-webui-controlnet's defaults: canny 100 / 200; our scribble takes canny's thresholds on a blurred image
// (sigma 1.4 first); blur is the tile ControlNets' "tile_resample"-like input, sigma 3.
void defaultThresholds(const std::string& p, double& a, double& b) {
    if (p == "canny" || p == "scribble") {
        if (a < 0) a = 100;
        if (b < 0) b = 200;
    } else if (p == "blur") {
        if (a < 0) a = 3;
    }
}

void to_json(nlohmann::json& j, const ControlNetSetting& c) {
    j = {{"model", c.model}, {"hash", c.hash}, {"image", c.image}, {"preprocessor", c.preprocessor},
         {"threshold_a", c.thresholdA}, {"threshold_b", c.thresholdB}, {"weight", c.weight},
         {"guidance_start", c.guidanceStart}, {"guidance_end", c.guidanceEnd}, {"resize_mode", c.resizeMode}};
}

void from_json(const nlohmann::json& j, ControlNetSetting& c) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("model", c.model);
    get("hash", c.hash);
    get("image", c.image);
    get("preprocessor", c.preprocessor);
    get("threshold_a", c.thresholdA);
    get("threshold_b", c.thresholdB);
    get("weight", c.weight);
    get("guidance_start", c.guidanceStart);
    get("guidance_end", c.guidanceEnd);
    get("resize_mode", c.resizeMode);
}

void validate(const ControlNetSetting& c, size_t index) {
    const std::string which = "ControlNet " + std::to_string(index) + ": ";
    auto fail = [&](const std::string& m) { throw std::invalid_argument(which + m); };
    if (c.model.empty()) fail("no model");
    const auto& pre = controlPreprocessors();
    if (std::find(pre.begin(), pre.end(), c.preprocessor) == pre.end())
        fail("preprocessor '" + c.preprocessor + "' is unknown (use none, canny, scribble or blur)");
    if (!(c.weight >= 0 && c.weight <= 10)) fail("weight must be between 0 and 10");
    if (!(c.guidanceStart >= 0 && c.guidanceStart <= 1 && c.guidanceEnd >= 0 && c.guidanceEnd <= 1))
        fail("guidance start and end are fractions of the steps, between 0 and 1");
    if (c.guidanceStart >= c.guidanceEnd) fail("guidance start must be before guidance end");
    if (c.resizeMode != "Crop and Resize" && c.resizeMode != "Just Resize" && c.resizeMode != "Resize and Fill")
        fail("resize mode '" + c.resizeMode + "' is unknown (use \"Crop and Resize\", \"Just Resize\" or \"Resize and Fill\")");
    if (c.preprocessor == "canny" || c.preprocessor == "scribble") {
        if ((c.thresholdA >= 0 && c.thresholdA > 255) || (c.thresholdB >= 0 && c.thresholdB > 255) ||
            (c.thresholdA >= 0 && c.thresholdB >= 0 && c.thresholdA > c.thresholdB))
            fail("canny thresholds must be 0..255 with low <= high");
    }
    if (c.preprocessor == "blur" && c.thresholdA > 64) fail("blur sigma must be at most 64");
}

} // namespace dd::api
