#pragma once
// The UNet's down, mid and up blocks. A block with cross attention (CrossAttnDownBlock2D, CrossAttnUpBlock2D)
// is the plain one (DownBlock2D, UpBlock2D) plus an `attentions` list, so one class serves both.
// Ref: diffusers models/unets/unet_2d_blocks.py — CrossAttnDownBlock2D, DownBlock2D,
// UNetMidBlock2DCrossAttn, CrossAttnUpBlock2D, UpBlock2D.
#include "core/nn/blocks.h"
#include "core/nn/transformer_2d.h"

#include <optional>
#include <vector>

namespace dd::nn {

struct UNetBlockConfig {
    int64_t inChannels = 0;          // down: block input; up: skip channels of the last resnet
    int64_t outChannels = 0;
    int64_t prevOutputChannels = 0;  // up blocks only
    int64_t tembChannels = 0;
    int64_t layers = 2;              // resnets (up blocks: layers_per_block + 1)
    bool crossAttention = false;
    bool addSampler = false;         // downsamplers.0 / upsamplers.0
    int64_t groups = 32;
    double eps = 1e-5;
    double outputScaleFactor = 1.0;
    int64_t downsamplePadding = 1;
    Transformer2DConfig attention;   // inChannels/headDim are filled in per block
};

// A block's settings from a UNet-shaped config: UNetConfig and ControlNetConfig share these fields, and a
// ControlNet is a copy of its UNet's encoder, so both build their down and mid blocks from here.
template <typename Config>
UNetBlockConfig blockConfigFor(const Config& c, size_t level, int64_t layers, int64_t tembChannels) {
    UNetBlockConfig b;
    b.tembChannels = tembChannels;
    b.layers = layers;
    b.groups = c.normGroups;
    b.eps = c.normEps;
    b.downsamplePadding = c.downsamplePadding;
    b.attention.heads = c.heads[level];
    b.attention.crossAttentionDim = c.crossAttentionDim[level];
    b.attention.useLinearProjection = c.useLinearProjection;
    b.attention.upcastAttention = c.upcastAttention;
    b.attention.layers = c.transformerLayers[level];
    return b;
}

template <typename Config>
UNetBlockConfig downBlockConfigFor(const Config& c, size_t i, int64_t tembChannels) {
    const auto& ch = c.blockOutChannels;
    UNetBlockConfig b = blockConfigFor(c, i, c.layersPerBlock[i], tembChannels);
    b.inChannels = i == 0 ? ch[0] : ch[i - 1];
    b.outChannels = ch[i];
    b.crossAttention = c.downBlockTypes[i] == "CrossAttnDownBlock2D";
    b.addSampler = i + 1 < ch.size();
    return b;
}

template <typename Config>
UNetBlockConfig midBlockConfigFor(const Config& c, int64_t tembChannels) {
    const size_t last = c.blockOutChannels.size() - 1;
    UNetBlockConfig b = blockConfigFor(c, last, 1, tembChannels);
    b.inChannels = b.outChannels = c.blockOutChannels[last];
    b.outputScaleFactor = c.midBlockScaleFactor;
    return b;
}

struct UNetDownBlockImpl : torch::nn::Module {
    explicit UNetDownBlockImpl(const UNetBlockConfig& config);
    // Appends every resnet(/attention) output and the downsampler output to `skips`.
    torch::Tensor forward(torch::Tensor x, const torch::Tensor& temb, const torch::Tensor& context,
                          std::vector<torch::Tensor>& skips);

    torch::nn::ModuleList resnets{nullptr}, attentions{nullptr}, downsamplers{nullptr};
};
TORCH_MODULE(UNetDownBlock);

// UNetMidBlock2DCrossAttn: resnets.0 → attentions.0 → resnets.1.
struct UNetMidBlockImpl : torch::nn::Module {
    explicit UNetMidBlockImpl(const UNetBlockConfig& config);
    torch::Tensor forward(torch::Tensor x, const torch::Tensor& temb, const torch::Tensor& context);

    torch::nn::ModuleList resnets{nullptr}, attentions{nullptr};
};
TORCH_MODULE(UNetMidBlock);

struct UNetUpBlockImpl : torch::nn::Module {
    explicit UNetUpBlockImpl(const UNetBlockConfig& config);
    // Consumes resnets.size() tensors from the back of `skips` (last in, first out).
    torch::Tensor forward(torch::Tensor x, const torch::Tensor& temb, const torch::Tensor& context,
                          std::vector<torch::Tensor>& skips, std::optional<std::vector<int64_t>> upsampleSize);

    torch::nn::ModuleList resnets{nullptr}, attentions{nullptr}, upsamplers{nullptr};
};
TORCH_MODULE(UNetUpBlock);

} // namespace dd::nn
