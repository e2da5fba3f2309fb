// Ref: diffusers models/unets/unet_2d_blocks.py — CrossAttnDownBlock2D / DownBlock2D (forward appends each
// output state), UNetMidBlock2DCrossAttn, CrossAttnUpBlock2D / UpBlock2D (cat([h, skip]) before each resnet).
#include "core/nn/unet_blocks.h"

#include <torch/torch.h>

namespace dd::nn {
namespace {

Transformer2DModel transformer(const UNetBlockConfig& c) {
    Transformer2DConfig t = c.attention;
    t.inChannels = c.outChannels;
    t.headDim = c.outChannels / t.heads;
    t.normGroups = c.groups;
    return Transformer2DModel(t);
}

ResnetBlock2D resnet(const UNetBlockConfig& c, int64_t in) {
    return ResnetBlock2D(in, c.outChannels, c.tembChannels, c.groups, c.eps, c.outputScaleFactor);
}

} // namespace

UNetDownBlockImpl::UNetDownBlockImpl(const UNetBlockConfig& c) {
    resnets = register_module("resnets", torch::nn::ModuleList());
    if (c.crossAttention) attentions = register_module("attentions", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
        resnets->push_back(resnet(c, i == 0 ? c.inChannels : c.outChannels));
        if (attentions) attentions->push_back(transformer(c));
    }
    if (c.addSampler) {
        downsamplers = register_module("downsamplers", torch::nn::ModuleList());
        downsamplers->push_back(Downsample2D(c.outChannels, c.downsamplePadding));
    }
}

torch::Tensor UNetDownBlockImpl::forward(torch::Tensor x, const torch::Tensor& temb, const torch::Tensor& context,
                                         std::vector<torch::Tensor>& skips) {
    for (size_t i = 0; i < resnets->size(); ++i) {
        x = resnets[i]->as<ResnetBlock2D>()->forward(x, temb);
        if (attentions) x = attentions[i]->as<Transformer2DModel>()->forward(x, context);
        skips.push_back(x);
    }
    if (downsamplers) {
        x = downsamplers[0]->as<Downsample2D>()->forward(x);
        skips.push_back(x);
    }
    return x;
}

UNetMidBlockImpl::UNetMidBlockImpl(const UNetBlockConfig& c) {
    resnets = register_module("resnets", torch::nn::ModuleList());
    attentions = register_module("attentions", torch::nn::ModuleList());
    resnets->push_back(resnet(c, c.inChannels));
    attentions->push_back(transformer(c));
    resnets->push_back(resnet(c, c.outChannels));
}

torch::Tensor UNetMidBlockImpl::forward(torch::Tensor x, const torch::Tensor& temb, const torch::Tensor& context) {
    x = resnets[0]->as<ResnetBlock2D>()->forward(x, temb);
    for (size_t i = 0; i < attentions->size(); ++i) {
        x = attentions[i]->as<Transformer2DModel>()->forward(x, context);
        x = resnets[i + 1]->as<ResnetBlock2D>()->forward(x, temb);
    }
    return x;
}

UNetUpBlockImpl::UNetUpBlockImpl(const UNetBlockConfig& c) {
    resnets = register_module("resnets", torch::nn::ModuleList());
    if (c.crossAttention) attentions = register_module("attentions", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
        const int64_t skipChannels = i == c.layers - 1 ? c.inChannels : c.outChannels;
        const int64_t resnetIn = i == 0 ? c.prevOutputChannels : c.outChannels;
        resnets->push_back(resnet(c, resnetIn + skipChannels));
        if (attentions) attentions->push_back(transformer(c));
    }
    if (c.addSampler) {
        upsamplers = register_module("upsamplers", torch::nn::ModuleList());
        upsamplers->push_back(Upsample2D(c.outChannels));
    }
}

torch::Tensor UNetUpBlockImpl::forward(torch::Tensor x, const torch::Tensor& temb, const torch::Tensor& context,
                                       std::vector<torch::Tensor>& skips,
                                       std::optional<std::vector<int64_t>> upsampleSize) {
    for (size_t i = 0; i < resnets->size(); ++i) {
        TORCH_CHECK(!skips.empty(), "UNet up block: no skip connection left");
        x = torch::cat({x, skips.back()}, 1);
        skips.pop_back();
        x = resnets[i]->as<ResnetBlock2D>()->forward(x, temb);
        if (attentions) x = attentions[i]->as<Transformer2DModel>()->forward(x, context);
    }
    if (upsamplers) x = upsamplers[0]->as<Upsample2D>()->forward(x, std::move(upsampleSize));
    return x;
}

} // namespace dd::nn
