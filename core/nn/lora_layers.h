#pragma once
// Linear and Conv2d layers that can carry LoRA side paths: y = W·x + Σ scale · up(down(x)), the weights left
// untouched (the "side path" application mode; the "merge" mode edits W instead, see core/nn/lora.h).
// Every Linear / Conv2d of the UNet and the CLIP text encoders is one of these, so any layer a LoRA file
// names can take one. With no side path attached the forward is exactly the plain layer's.
// Ref: peft tuners/lora/layer.py (Linear.forward, Conv2d._conv_forward: lora_A is a conv with the base
// layer's kernel, stride and padding, lora_B a 1×1 conv).
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

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

struct LoraLinearImpl : torch::nn::LinearImpl {
    using torch::nn::LinearImpl::LinearImpl;
    torch::Tensor forward(const torch::Tensor& x);
    std::vector<std::shared_ptr<LoraSidePath>> sidePaths;
};
TORCH_MODULE(LoraLinear);

struct LoraConv2dImpl : torch::nn::Conv2dImpl {
    using torch::nn::Conv2dImpl::Conv2dImpl;
    torch::Tensor forward(const torch::Tensor& x);
    std::vector<std::shared_ptr<LoraSidePath>> sidePaths;
};
TORCH_MODULE(LoraConv2d);

} // namespace dd::nn
