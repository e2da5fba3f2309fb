#include "core/pipeline/hires.h"

namespace dd::pipeline {

torch::Tensor upscaleLatents(const torch::Tensor& latents, int64_t h, int64_t w, const std::string& upscaler) {
    namespace F = torch::nn::functional;
    auto o = F::InterpolateFuncOptions().size(std::vector<int64_t>{h, w});
    if (upscaler == "Latent (nearest)") return F::interpolate(latents, o.mode(torch::kNearest));
    if (upscaler == "Latent (nearest-exact)") return F::interpolate(latents, o.mode(torch::kNearestExact));
    const bool bicubic = upscaler.find("bicubic") != std::string::npos;
    const bool antialias = upscaler.find("antialiased") != std::string::npos;
    o = bicubic ? o.mode(torch::kBicubic) : o.mode(torch::kBilinear);
    return F::interpolate(latents, o.align_corners(false).antialias(antialias));
}

} // namespace dd::pipeline
