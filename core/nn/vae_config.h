#pragma once
// diffusers AutoencoderKL config.json, read and checked (vae/config.json).
// Pure: no torch, so the fuzzers and the memory predictor can read configs without libtorch.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::nn {

struct VaeConfig {
    int64_t inChannels = 3, outChannels = 3, latentChannels = 4;
    std::vector<int64_t> blockOutChannels{128, 256, 512, 512};
    int64_t layersPerBlock = 2;
    int64_t normGroups = 32;
    int64_t sampleSize = 512;         // tile size in pixels when tiling
    double scalingFactor = 0.18215;
    bool useQuantConv = true, usePostQuantConv = true, midBlockAddAttention = true;
    bool forceUpcast = true;          // SDXL VAE: decode in fp32 when the weights are fp16 (the caller's choice)

    // 2^(levels − 1): 8 for real models, 2 for diffusers' tiny test VAE.
    int64_t scaleFactor() const { return int64_t(1) << (blockOutChannels.size() - 1); }
    // Throws dd::io::ModelFileError (naming "vae/config.json") for settings this implementation lacks.
    static VaeConfig fromJson(const nlohmann::json& j);
};

} // namespace dd::nn
