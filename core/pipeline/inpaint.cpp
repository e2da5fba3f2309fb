#include "core/pipeline/inpaint.h"

#include "core/pipeline/pil_resample.h"
#include "core/sched/scheduler.h"

#include <stdexcept>
#include <string>

namespace dd::pipeline {

torch::Tensor binaryMask(const api::Image& mask) {
    if (mask.rgb.size() != size_t(mask.width) * size_t(mask.height) * 3 || mask.rgb.empty())
        throw std::invalid_argument("the inpainting mask has no pixels");
    const auto rgb = torch::from_blob(const_cast<uint8_t*>(mask.rgb.data()), {mask.height, mask.width, 3}, torch::kUInt8);
    // diffusers: L / 255, then binarize at 0.5, so 128..255 repaint and 0..127 keep.
    return rgb.select(2, 0).ge(128).to(torch::kFloat32).unsqueeze(0).unsqueeze(0).contiguous();
}

torch::Tensor latentMaskOf(const torch::Tensor& binary, int64_t h, int64_t w, int64_t batch) {
    namespace F = torch::nn::functional;
    return F::interpolate(binary, F::InterpolateFuncOptions().size(std::vector<int64_t>{h, w}).mode(torch::kNearest)).repeat({batch, 1, 1, 1});
}

torch::Tensor withMaskedContent(const torch::Tensor& imageLatents, const torch::Tensor& noise, const torch::Tensor& latentMask,
                                const std::string& content) {
    if (content == "original" || content == "fill") return imageLatents;  // fill acted on the pixels before
    const auto kept = imageLatents * (1 - latentMask);
    return content == "latent noise" ? kept + noise * latentMask : kept;
}

torch::Tensor InpaintLatents::unetInput(const torch::Tensor& scaled, int64_t copies) const {
    if (!concat) return scaled;
    const auto repeated = [&](const torch::Tensor& t) {
        return copies == 1 ? t : copies == 2 ? torch::cat({t, t}) : t.repeat({copies, 1, 1, 1});
    };
    const auto mask = repeated(latentMask);
    const auto masked = repeated(maskedLatents);
    return torch::cat({scaled, mask.to(scaled.dtype()), masked.to(scaled.dtype())}, 1);
}

torch::Tensor InpaintLatents::blend(const sched::Scheduler& scheduler, const torch::Tensor& latents, int64_t i,
                                    int64_t total) const {
    if (concat) return latents;
    const auto kept = i + 1 < total ? scheduler.addNoise(imageLatents, noise, i + 1) : imageLatents;
    return (1 - latentMask) * kept + latentMask * latents;
}

// apply_overlay, step by step: the init image is pasted onto a transparent premultiplied canvas through the
// inverted mask (alpha = 255 - m, colour rounded once), turned back into straight alpha (a truncating division),
// then alpha-composited over the generated image. (Checked byte for byte against Pillow: tests/parity.)
api::Image overlay(const api::Image& generated, const api::Image& init, const api::Image& mask) {
    const auto same = [&](const api::Image& a) { return a.width == generated.width && a.height == generated.height; };
    if (!same(init) || !same(mask))
        throw std::invalid_argument("the inpainting overlay needs image, init image and mask of one size");
    constexpr uint32_t kPrecisionBits = 7;
    api::Image out = generated;
    const size_t pixels = size_t(generated.width) * size_t(generated.height);
    for (size_t p = 0; p < pixels; ++p) {
        const uint32_t alpha = 255u - mask.rgb[3 * p];  // how much of the init image shows
        if (alpha == 0) continue;
        const uint32_t coef1 = alpha * 255u * 255u * (1u << kPrecisionBits) / (alpha * 255u + 255u * (255u - alpha));
        const uint32_t coef2 = 255u * (1u << kPrecisionBits) - coef1;
        for (size_t c = 0; c < 3; ++c) {
            const uint32_t premultiplied = pilDiv255(uint32_t(init.rgb[3 * p + c]) * alpha);
            const uint32_t straight = alpha == 255 ? premultiplied : std::min(255u, 255u * premultiplied / alpha);
            const uint32_t mixed = straight * coef1 + uint32_t(generated.rgb[3 * p + c]) * coef2 + (0x80u << kPrecisionBits);
            out.rgb[3 * p + c] = uint8_t(pilShiftDiv255(mixed) >> kPrecisionBits);
        }
    }
    return out;
}

} // namespace dd::pipeline
