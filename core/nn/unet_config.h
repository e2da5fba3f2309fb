#pragma once
// diffusers UNet2DConditionModel config.json, read and checked (unet/config.json).
// Pure: no torch, so the fuzzers and the memory predictor can read configs without libtorch.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::nn {

struct UNetConfig {
    int64_t inChannels = 4, outChannels = 4;
    std::vector<int64_t> blockOutChannels{320, 640, 1280, 1280};
    std::vector<std::string> downBlockTypes, upBlockTypes;
    std::vector<int64_t> layersPerBlock;              // per down block
    std::vector<int64_t> heads;                        // config "attention_head_dim" (= heads), per down block
    std::vector<int64_t> crossAttentionDim;            // per down block
    std::vector<int64_t> transformerLayers;            // per down block
    std::vector<int64_t> reverseTransformerLayers;     // per up block (config or reversed transformerLayers)
    bool useLinearProjection = false;
    bool upcastAttention = false;
    bool flipSinToCos = true;
    double freqShift = 0;
    int64_t normGroups = 32;
    double normEps = 1e-5;
    int64_t downsamplePadding = 1;
    double midBlockScaleFactor = 1;
    int64_t timeCondProjDim = 0;
    std::string additionEmbedType;                     // "" or "text_time"
    int64_t additionTimeEmbedDim = 0;
    int64_t projectionClassEmbeddingsInputDim = 0;
    int64_t sampleSize = 64;

    // Throws dd::io::ModelFileError (naming "unet/config.json") for settings this implementation lacks.
    static UNetConfig fromJson(const nlohmann::json& j);
};

} // namespace dd::nn
