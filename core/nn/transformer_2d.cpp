// Ref: diffusers models/transformers/transformer_2d.py Transformer2DModel (_operate_on_continuous_inputs,
// _get_output_for_continuous_inputs), models/attention.py BasicTransformerBlock / FeedForward,
// models/activations.py GEGLU.
#include "core/nn/transformer_2d.h"

#include <torch/torch.h>

namespace dd::nn {

GegluImpl::GegluImpl(int64_t dimIn, int64_t dimOut) {
    proj = register_module("proj", LoraLinear(dimIn, dimOut * 2));
}

torch::Tensor GegluImpl::forward(const torch::Tensor& x) {
    if (!proj->sidePaths.empty()) return gegluOfProjection(proj(x));  // a LoRA side path needs the whole projection
    const LeafScope scope(proj->leafHook, *proj);
    return geglu(x, proj->weight, proj->bias);
}

FeedForwardImpl::FeedForwardImpl(int64_t dim, int64_t mult) {
    net = register_module("net", torch::nn::ModuleList());
    geglu = Geglu(dim, dim * mult);
    out = LoraLinear(dim * mult, dim);
    net->push_back(geglu);
    net->push_back(torch::nn::Identity());  // diffusers' Dropout slot keeps the index of net.2
    net->push_back(out);
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) { return out(geglu(x)); }

BasicTransformerBlockImpl::BasicTransformerBlockImpl(int64_t dim, int64_t heads, int64_t headDim,
                                                     int64_t crossAttentionDim, bool upcastAttention) {
    auto layerNorm = [&] { return LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5)); };
    AttentionConfig self;
    self.queryDim = dim;
    self.heads = heads;
    self.headDim = headDim;
    self.upcastAttention = upcastAttention;
    AttentionConfig cross = self;
    cross.crossAttentionDim = crossAttentionDim;
    norm1 = register_module("norm1", layerNorm());
    attn1 = register_module("attn1", Attention(self));
    norm2 = register_module("norm2", layerNorm());
    attn2 = register_module("attn2", Attention(cross));
    norm3 = register_module("norm3", layerNorm());
    ff = register_module("ff", FeedForward(dim));
}

torch::Tensor BasicTransformerBlockImpl::forward(torch::Tensor x, const torch::Tensor& context) {
    // Each residual sum lands in the sublayer's fresh output (same bits as x + out).
    x = attn1(norm1(x)).add_(x);
    x = attn2(norm2(x), context).add_(x);
    return ff(norm3(x)).add_(x);
}

Transformer2DModelImpl::Transformer2DModelImpl(const Transformer2DConfig& c) : config(c) {
    const int64_t inner = c.heads * c.headDim;
    norm = register_module("norm", GroupNorm(torch::nn::GroupNormOptions(c.normGroups, c.inChannels).eps(1e-6)));
    if (c.useLinearProjection)
        proj_in_linear = register_module("proj_in", LoraLinear(c.inChannels, inner));
    else
        proj_in_conv = register_module("proj_in", LoraConv2d(torch::nn::Conv2dOptions(c.inChannels, inner, 1)));
    transformer_blocks = register_module("transformer_blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i)
        transformer_blocks->push_back(
            BasicTransformerBlock(inner, c.heads, c.headDim, c.crossAttentionDim, c.upcastAttention));
    if (c.useLinearProjection)
        proj_out_linear = register_module("proj_out", LoraLinear(inner, c.inChannels));
    else
        proj_out_conv = register_module("proj_out", LoraConv2d(torch::nn::Conv2dOptions(inner, c.inChannels, 1)));
}

torch::Tensor Transformer2DModelImpl::forward(const torch::Tensor& x, const torch::Tensor& context) {
    const auto b = x.size(0), h = x.size(2), w = x.size(3);
    const int64_t inner = config.heads * config.headDim;
    auto t = norm(x);
    if (proj_in_conv)
        t = proj_in_conv(t).permute({0, 2, 3, 1}).reshape({b, h * w, inner});
    else
        t = proj_in_linear(t.permute({0, 2, 3, 1}).reshape({b, h * w, t.size(1)}));
    for (const auto& block : *transformer_blocks) t = block->as<BasicTransformerBlock>()->forward(t, context);
    if (proj_out_conv)
        t = proj_out_conv(t.reshape({b, h, w, inner}).permute({0, 3, 1, 2}).contiguous());
    else
        t = proj_out_linear(t).reshape({b, h, w, x.size(1)}).permute({0, 3, 1, 2}).contiguous();
    return t.add_(x);  // t is this block's own output
}

} // namespace dd::nn
