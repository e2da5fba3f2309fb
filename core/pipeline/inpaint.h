#pragma once
// Inpainting inside the denoising loop, as diffusers' StableDiffusionInpaintPipeline computes it
// (docs/inpainting.md): the mask is binarized (>= 128 repaints) and sampled at latent size (nearest), the masked
// image is the init image with the repainted pixels set to 0 (mid-grey). A 4-channel UNet denoises everything
// and the kept region is put back after each step, noised to the next step's level; a 9-channel inpainting UNet
// is given mask and masked-image latents as input channels and nothing is blended. Used by engine.cpp only.
#include "core/api/image.h"

#include <torch/torch.h>

#include <string>

namespace dd::sched {
class Scheduler;
}

namespace dd::pipeline {

// [1, 1, H, W] float32 on the CPU: 1 where `mask` (grey: channel 0 is read) is >= 128, the pixels to repaint.
torch::Tensor binaryMask(const api::Image& mask);
// That mask at latent size h × w for each of `batch` images, sampled nearest as diffusers' prepare_mask_latents does.
torch::Tensor latentMaskOf(const torch::Tensor& binary, int64_t h, int64_t w, int64_t batch);
// A1111's "Masked content" on the init latents of the repainted region: "original" and "fill" (whose pixels were
// filled before they were encoded) keep them, "latent nothing" zeroes them, "latent noise" puts the run's own
// noise there.
torch::Tensor withMaskedContent(const torch::Tensor& imageLatents, const torch::Tensor& noise, const torch::Tensor& latentMask,
                                const std::string& content);


// What the denoising loop needs of an inpainting run (all float32, on the latents' device).
struct InpaintLatents {
    bool concat = false;          // a 9-channel inpainting UNet
    torch::Tensor latentMask;     // [B, 1, h, w], 1 = repaint
    torch::Tensor maskedLatents;  // [B, 4, h, w] scaled latents of the masked image (9-channel UNets)
    torch::Tensor imageLatents;   // [B, 4, h, w] scaled latents of the init image (the 4-channel blend)
    torch::Tensor noise;          // the run's initial noise: the blend noises the init image with it

    // The UNet's input: `scaled` (the latents after scale_model_input, doubled under CFG) followed by the mask and
    // the masked-image latents (9-channel), or `scaled` as it is.
    torch::Tensor unetInput(const torch::Tensor& scaled, int64_t copies) const;  // copies: the sides of the batch (CFG: 2)
    // The latents after step i of `total` (4-channel UNets): the kept region replaced by the init image's latents
    // noised to step i + 1's level, clean after the last step.
    torch::Tensor blend(const sched::Scheduler& scheduler, const torch::Tensor& latents, int64_t i, int64_t total) const;
};

// `generated` pasted over `init` through the soft `mask` (grey, 255 = all generated) with Pillow's integer
// arithmetic, as diffusers' VaeImageProcessor.apply_overlay does it: unmasked pixels stay exactly the init image's.
api::Image overlay(const api::Image& generated, const api::Image& init, const api::Image& mask);

} // namespace dd::pipeline
