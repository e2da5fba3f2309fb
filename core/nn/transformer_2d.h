#pragma once
// Transformer2DModel (continuous input) with BasicTransformerBlock and the GEGLU FeedForward.
// Ref: diffusers models/transformers/transformer_2d.py (Transformer2DModel), models/attention.py
// (BasicTransformerBlock, FeedForward), models/activations.py (GEGLU).
#include "core/nn/attention.h"

#include <torch/nn/modules/conv.h>

namespace dd::nn {

// GEGLU: proj → first half · GELU(second half) (exact erf GELU).
struct GegluImpl : torch::nn::Module {
    GegluImpl(int64_t dimIn, int64_t dimOut);
    torch::Tensor forward(const torch::Tensor& x);

    LoraLinear proj{nullptr};
};
TORCH_MODULE(Geglu);

// FeedForward(dim, mult 4, "geglu"): net.0 = GEGLU(dim → 4·dim), net.1 = dropout (no weights), net.2 Linear(4·dim → dim).
struct FeedForwardImpl : torch::nn::Module {
    explicit FeedForwardImpl(int64_t dim, int64_t mult = 4);
    torch::Tensor forward(const torch::Tensor& x);

    torch::nn::ModuleList net{nullptr};
    Geglu geglu{nullptr};             // net.0
    LoraLinear out{nullptr};   // net.2
};
TORCH_MODULE(FeedForward);

// norm_type "layer_norm": self-attention, cross-attention, GEGLU feed-forward, each pre-normed and residual.
struct BasicTransformerBlockImpl : torch::nn::Module {
    BasicTransformerBlockImpl(int64_t dim, int64_t heads, int64_t headDim, int64_t crossAttentionDim,
                              bool upcastAttention);
    torch::Tensor forward(torch::Tensor x, const torch::Tensor& context);

    LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
    Attention attn1{nullptr}, attn2{nullptr};
    FeedForward ff{nullptr};
};
TORCH_MODULE(BasicTransformerBlock);

struct Transformer2DConfig {
    int64_t heads = 8;
    int64_t headDim = 40;
    int64_t inChannels = 320;
    int64_t layers = 1;
    int64_t crossAttentionDim = 768;
    int64_t normGroups = 32;
    bool useLinearProjection = false;  // SD2/SDXL: Linear proj_in/out; SD1: 1×1 convs
    bool upcastAttention = false;
};

struct Transformer2DModelImpl : torch::nn::Module {
    explicit Transformer2DModelImpl(const Transformer2DConfig& config);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context);

    GroupNorm norm{nullptr};
    LoraConv2d proj_in_conv{nullptr}, proj_out_conv{nullptr};
    LoraLinear proj_in_linear{nullptr}, proj_out_linear{nullptr};
    torch::nn::ModuleList transformer_blocks{nullptr};
    Transformer2DConfig config;
};
TORCH_MODULE(Transformer2DModel);

} // namespace dd::nn
