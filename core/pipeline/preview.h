#pragma once
// Cheap live preview: a fixed linear map from 4 latent channels to RGB at latent resolution, no VAE.
// Ref: A1111 modules/sd_vae_approx.py::cheap_approximation (coefficients), sd_reference.md §9.1.
#include "core/api/image.h"
#include "core/io/checkpoint.h"

#include <ATen/core/Tensor.h>

namespace dd::pipeline {

// `latent` is one UNet-space latent [C,h,w] (any dtype/device). Models whose latents are not 4 channels
// get a grey-level view of channel 0.
api::Image latentPreview(const at::Tensor& latent, io::ModelFamily family);

// [B,3,H,W] in [0,1] → 8-bit images; rounds like diffusers' postprocess (numpy_to_pil: ×255 round).
std::vector<api::Image> toImages(const at::Tensor& rgb01);

} // namespace dd::pipeline
