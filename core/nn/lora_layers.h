#pragma once
// Linear and Conv2d layers that can carry LoRA side paths: y = W·x + Σ scale · up(down(x)), the weights left
// untouched (the "side path" application mode; the "merge" mode edits W instead, see core/nn/lora.h).
// Every Linear / Conv2d of the UNet and the CLIP text encoders (and of the blocks the VAE shares) is one of
// these, so any layer a LoRA file names can take one. They are core/nn/layers.h's guarded leaves plus side
// paths: the offload guard (core/memory/offload) wraps the whole forward, base weights and side path alike,
// and the offload handles only the leaf's own parameters (side paths are not parameters). With no side path attached the
// forward is exactly the guarded layer's.
// Ref: peft tuners/lora/layer.py (Linear.forward, Conv2d._conv_forward: lora_A is a conv with the base
// layer's kernel, stride and padding, lora_B a 1×1 conv).
#include "core/nn/layers.h"

#include <memory>
#include <vector>

namespace dd::nn {

// One LoRA's contribution to one layer. down/up as stored in the file (Linear: [r, in] / [out, r]; Conv2d:
// [r, in, k, k] / [out, r, 1, 1]); the layer keeps a copy in the input's device and dtype, because model
// offload moves the network between devices without knowing about side paths.
struct LoraSidePath {
    torch::Tensor down, up;
    double scale = 1.0;  // user weight · alpha / rank

    // down/up on x's device in x's dtype (cached until either changes).
    std::pair<torch::Tensor, torch::Tensor> on(const torch::Tensor& x);

private:
    torch::Tensor m_down, m_up;
};

struct LoraLinearImpl : LinearImpl {
    using LinearImpl::LinearImpl;
    torch::Tensor forward(const torch::Tensor& x);
    std::vector<std::shared_ptr<LoraSidePath>> sidePaths;
};
TORCH_MODULE(LoraLinear);

struct LoraConv2dImpl : Conv2dImpl {
    using Conv2dImpl::Conv2dImpl;
    torch::Tensor forward(const torch::Tensor& x);
    std::vector<std::shared_ptr<LoraSidePath>> sidePaths;
};
TORCH_MODULE(LoraConv2d);

} // namespace dd::nn
