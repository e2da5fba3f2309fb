#pragma once
// The hires fix's latent upscale (docs/hires.md). Used by engine.cpp only (its second pass runs in the loop there).
#include <torch/torch.h>

#include <string>

namespace dd::pipeline {

// A1111's latent upscalers (api::hiresUpscalers): torch's interpolate in the mode, and with the antialiasing, that
// the name says.
torch::Tensor upscaleLatents(const torch::Tensor& latents, int64_t h, int64_t w, const std::string& upscaler);

} // namespace dd::pipeline
