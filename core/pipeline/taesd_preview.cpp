#include "core/pipeline/taesd_preview.h"

#include <torch/torch.h>

namespace dd::pipeline {

api::Image taesdPreview(nn::AutoencoderTinyImpl& taesd, const at::Tensor& latent) {
    c10::InferenceMode guard;
    const auto params = taesd.parameters();
    const auto options = params.empty() ? torch::TensorOptions() : torch::TensorOptions(params.front().options());
    const auto z = latent.detach().unsqueeze(0).to(options.device(), options.dtype());
    const auto rgb = taesd.decodeLatents(z)[0].permute({1, 2, 0}).to(torch::kCPU, torch::kFloat32);
    const auto bytes = rgb.mul(255).to(torch::kUInt8).contiguous();
    api::Image img{int(bytes.size(1)), int(bytes.size(0)), {}};
    img.rgb.assign(bytes.data_ptr<uint8_t>(), bytes.data_ptr<uint8_t>() + bytes.numel());
    return img;
}

} // namespace dd::pipeline
