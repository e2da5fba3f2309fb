#include "core/nn/lora_layers.h"

#include <torch/nn/functional/conv.h>
#include <torch/nn/functional/linear.h>

namespace dd::nn {

namespace F = torch::nn::functional;

std::pair<torch::Tensor, torch::Tensor> LoraSidePath::on(const torch::Tensor& x) {
    if (!m_down.defined() || m_down.device() != x.device() || m_down.scalar_type() != x.scalar_type()) {
        m_down = down.to(x.device(), x.scalar_type());
        m_up = up.to(x.device(), x.scalar_type());
    }
    return {m_down, m_up};
}

// The side path runs inside the leaf's guard too: while it runs, the offload may have the weights anywhere.
torch::Tensor LoraLinearImpl::forward(const torch::Tensor& x) {
    const LeafScope scope(leafHook, *this);
    auto y = nn::linear(x, weight, bias);
    for (const auto& p : sidePaths) {
        const auto [down, up] = p->on(x);
        y = y + F::linear(F::linear(x, down), up) * p->scale;
    }
    return y;
}

torch::Tensor LoraConv2dImpl::forward(const torch::Tensor& x) {
    const LeafScope scope(leafHook, *this);
    auto y = convolve(x);
    for (const auto& p : sidePaths) {
        const auto [down, up] = p->on(x);
        // lora_A takes the base layer's geometry (a 3×3 LoRA on a 3×3 conv); lora_B is 1×1.
        const auto h = F::conv2d(x, down, F::Conv2dFuncOptions().stride(options.stride()).padding(options.padding()).dilation(options.dilation()));
        y = y + F::conv2d(h, up) * p->scale;
    }
    return y;
}

} // namespace dd::nn
