#pragma once
// diffusers AutoencoderTiny (TAESD) config.json, read and checked.
// Pure: no torch, so the fuzzers and the memory predictor can read configs without libtorch.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::nn {

struct TaesdConfig {
    int64_t inChannels = 3, outChannels = 3, latentChannels = 4;
    std::vector<int64_t> encoderBlockOutChannels{64, 64, 64, 64}, decoderBlockOutChannels{64, 64, 64, 64};
    std::vector<int64_t> numEncoderBlocks{1, 3, 3, 3}, numDecoderBlocks{3, 3, 3, 1};
    int64_t upsamplingScalingFactor = 2;
    double latentMagnitude = 3.0, latentShift = 0.5;  // only for the 8-bit latent helpers below
    double scalingFactor = 1.0, shiftFactor = 0.0;
    bool forceUpcast = false;

    // Throws dd::io::ModelFileError naming `source` for settings this implementation lacks.
    static TaesdConfig fromJson(const nlohmann::json& j, const std::string& source = "taesd/config.json");
};

} // namespace dd::nn
