#include "core/pipeline/preview.h"

#include <torch/torch.h>

namespace dd::pipeline {
namespace {

api::Image fromHwc(const torch::Tensor& hwcUint8) {
    const auto t = hwcUint8.contiguous();
    api::Image img{int(t.size(1)), int(t.size(0)), {}};
    img.rgb.assign(t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + t.numel());
    return img;
}

} // namespace

api::Image latentPreview(const at::Tensor& latent, io::ModelFamily family) {
    torch::NoGradGuard noGrad;
    const auto z = latent.detach().to(torch::kCPU, torch::kFloat32);
    torch::Tensor rgb;  // [h,w,3] in [-1,1]
    if (z.size(0) == 4) {
        const bool xl = family == io::ModelFamily::SDXL || family == io::ModelFamily::SDXLRefiner;
        const auto m = xl ? torch::tensor({0.3448f, 0.4168f, 0.4395f, -0.1953f, -0.0290f, 0.0250f, 0.1074f, 0.0886f, -0.0163f,
                                           -0.3730f, -0.2499f, -0.2088f})
                          : torch::tensor({0.298f, 0.207f, 0.208f, 0.187f, 0.286f, 0.173f, -0.158f, 0.189f, 0.264f, -0.184f,
                                           -0.271f, -0.473f});
        rgb = torch::einsum("chw,cr->hwr", {z, m.view({4, 3})});
    } else {
        rgb = z[0].unsqueeze(-1).expand({-1, -1, 3});
    }
    // Previews truncate (A1111), final images round (diffusers).
    return fromHwc(((rgb + 1) / 2).clamp(0, 1).mul(255).to(torch::kUInt8));
}

std::vector<api::Image> toImages(const at::Tensor& rgb01) {
    const auto bytes = rgb01.detach().to(torch::kCPU, torch::kFloat32).clamp(0, 1).mul(255).round().to(torch::kUInt8).permute({0, 2, 3, 1});
    std::vector<api::Image> out;
    for (int64_t i = 0; i < bytes.size(0); ++i) out.push_back(fromHwc(bytes[i]));
    return out;
}

} // namespace dd::pipeline
