#pragma once
// diffusers ControlNetModel config.json (controlnet/config.json), read and checked before a module is built.
// Pure: no torch, so the memory predictor and the fuzzers read it without libtorch.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::nn {

struct ControlNetConfig {
    int64_t inChannels = 4;
    int64_t conditioningChannels = 3;
    std::vector<int64_t> blockOutChannels{320, 640, 1280, 1280};
    std::vector<std::string> downBlockTypes;
    std::vector<int64_t> layersPerBlock;       // per down block (the config has one int for all)
    std::vector<int64_t> heads;                // num_attention_heads, else attention_head_dim, per down block
    std::vector<int64_t> crossAttentionDim;    // per down block
    std::vector<int64_t> transformerLayers;    // per down block
    bool useLinearProjection = false;
    bool upcastAttention = false;
    bool flipSinToCos = true;
    double freqShift = 0;
    int64_t normGroups = 32;
    double normEps = 1e-5;
    int64_t downsamplePadding = 1;
    double midBlockScaleFactor = 1;
    std::string additionEmbedType;             // "" or "text_time" (SDXL)
    int64_t additionTimeEmbedDim = 0;
    int64_t projectionClassEmbeddingsInputDim = 0;
    // The hint encoder's widths; each one after the first halves the size, so the control image is this
    // factor times the latent size (8 for every released ControlNet, 2^(n-1) in general).
    std::vector<int64_t> embeddingChannels{16, 32, 96, 256};
    bool bgr = false;                          // controlnet_conditioning_channel_order "bgr"
    bool globalPoolConditions = false;         // shuffle-type ControlNets: residuals averaged over H, W

    int64_t hintFactor() const { return int64_t(1) << (embeddingChannels.size() - 1); }
    // One residual per UNet skip: conv_in's output, every resnet of every down block, every downsampler.
    int64_t downResiduals() const;

    // Throws dd::io::ModelFileError (naming `source`) for settings this implementation lacks.
    static ControlNetConfig fromJson(const nlohmann::json& j, const std::string& source = "controlnet/config.json");
};

} // namespace dd::nn
