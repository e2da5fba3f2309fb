#pragma once
// Live preview through TAESD: a real decode at full resolution for about the cost of one UNet block, instead of
// latentPreview's linear map. Ref: ComfyUI latent_preview.py TAESDPreviewerImpl (decode x0[:1], bytes like the
// linear previewer); sd_reference.md §9.2.
#include "core/api/image.h"
#include "core/nn/taesd.h"

#include <ATen/core/Tensor.h>

namespace dd::pipeline {

// `latent` is one UNet-space latent [C,h,w] (any dtype/device); it is moved to the model's device and dtype.
// Returns an 8-bit RGB image [8h × 8w], truncated like latentPreview. Throws std::logic_error when the
// model has no decoder.
api::Image taesdPreview(nn::AutoencoderTinyImpl& taesd, const at::Tensor& latent);

} // namespace dd::pipeline
