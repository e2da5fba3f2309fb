#pragma once
// The three upscaler networks behind makeUpscaler (upscaler.h); internal to core/nn.
#include "core/nn/upscaler.h"

namespace dd::nn {

std::shared_ptr<UpscalerImpl> makeEsrgan(const UpscalerConfig& c);
std::shared_ptr<UpscalerImpl> makeCompact(const UpscalerConfig& c);
std::shared_ptr<UpscalerImpl> makeSwinIR(const UpscalerConfig& c);

// spandrel's pad_to_multiple: reflect-pad the bottom and right edges up to a multiple of `m`.
torch::Tensor padToMultiple(const torch::Tensor& x, int64_t m);

} // namespace dd::nn
