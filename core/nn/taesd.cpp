// Ref: diffusers models/autoencoders/autoencoder_tiny.py AutoencoderTiny (encode, decode, scale_latents),
// models/autoencoders/vae.py EncoderTiny / DecoderTiny, models/unets/unet_2d_blocks.py AutoencoderTinyBlock,
// scripts/convert_tiny_autoencoder_to_diffusers.py (original → diffusers key names).
#include "core/nn/config_value.h"
#include "core/nn/taesd.h"

#include "core/io/model_error.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dd::nn {
namespace {

torch::nn::Conv2d conv3(int64_t in, int64_t out, int64_t stride = 1, bool bias = true) {
    return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1).stride(stride).bias(bias));
}

} // namespace

TaesdBlockImpl::TaesdBlockImpl(int64_t in, int64_t out) {
    conv = register_module("conv", torch::nn::Sequential(conv3(in, out), torch::nn::ReLU(), conv3(out, out),
                                                          torch::nn::ReLU(), conv3(out, out)));
    if (in != out)
        skip = register_module("skip", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).bias(false)));
}

torch::Tensor TaesdBlockImpl::forward(torch::Tensor x) {
    auto h = conv->forward(x);
    return torch::relu(h + (skip ? skip->forward(x) : x));
}

TaesdEncoderImpl::TaesdEncoderImpl(const TaesdConfig& c) {
    layers = register_module("layers", torch::nn::Sequential());
    for (size_t i = 0; i < c.numEncoderBlocks.size(); ++i) {
        const int64_t ch = c.encoderBlockOutChannels[i];
        layers->push_back(i == 0 ? conv3(c.inChannels, ch) : conv3(ch, ch, 2, false));
        for (int64_t b = 0; b < c.numEncoderBlocks[i]; ++b) layers->push_back(TaesdBlock(ch, ch));
    }
    layers->push_back(conv3(c.encoderBlockOutChannels.back(), c.latentChannels));
}

torch::Tensor TaesdEncoderImpl::forward(const torch::Tensor& image) { return layers->forward(image.add(1).div(2)); }

TaesdDecoderImpl::TaesdDecoderImpl(const TaesdConfig& c) {
    layers = register_module("layers", torch::nn::Sequential());
    layers->push_back(conv3(c.latentChannels, c.decoderBlockOutChannels[0]));
    layers->push_back(torch::nn::ReLU());
    const auto up = static_cast<double>(c.upsamplingScalingFactor);
    for (size_t i = 0; i < c.numDecoderBlocks.size(); ++i) {
        const bool last = i + 1 == c.numDecoderBlocks.size();
        const int64_t ch = c.decoderBlockOutChannels[i];
        for (int64_t b = 0; b < c.numDecoderBlocks[i]; ++b) layers->push_back(TaesdBlock(ch, ch));
        if (!last)
            layers->push_back(torch::nn::Upsample(
                torch::nn::UpsampleOptions().scale_factor(std::vector<double>{up, up}).mode(torch::kNearest)));
        layers->push_back(conv3(ch, last ? c.outChannels : ch, 1, last));
    }
}

torch::Tensor TaesdDecoderImpl::forward(const torch::Tensor& latents) {
    // The original decoder's Clamp layer: a soft limit of the latents to ±3.
    const auto x = torch::tanh(latents / 3) * 3;
    return layers->forward(x).mul(2).sub(1);
}

AutoencoderTinyImpl::AutoencoderTinyImpl(const TaesdConfig& config, bool withEncoder, bool withDecoder)
    : m_config(config) {
    if (withEncoder) encoder = register_module("encoder", TaesdEncoder(config));
    if (withDecoder) decoder = register_module("decoder", TaesdDecoder(config));
}

torch::Tensor AutoencoderTinyImpl::encode(const torch::Tensor& image) {
    if (!hasEncoder()) throw std::logic_error("this TAESD has no encoder (decoder-only weights were loaded)");
    return encoder->forward(image);
}

torch::Tensor AutoencoderTinyImpl::decode(const torch::Tensor& latents) {
    if (!hasDecoder()) throw std::logic_error("this TAESD has no decoder (encoder-only weights were loaded)");
    return decoder->forward(latents);
}

torch::Tensor AutoencoderTinyImpl::decodeLatents(const torch::Tensor& latents) {
    return (decode(latents / m_config.scalingFactor) / 2 + 0.5).clamp(0, 1);
}

torch::Tensor AutoencoderTinyImpl::scaleLatents(const torch::Tensor& x) const {
    return x.div(2 * m_config.latentMagnitude).add(m_config.latentShift).clamp(0, 1);
}

torch::Tensor AutoencoderTinyImpl::unscaleLatents(const torch::Tensor& x) const {
    return x.sub(m_config.latentShift).mul(2 * m_config.latentMagnitude);
}

int64_t AutoencoderTinyImpl::scaleFactor() const {
    int64_t f = 1;
    for (size_t i = 1; i < m_config.numDecoderBlocks.size(); ++i) f *= m_config.upsamplingScalingFactor;
    return f;
}

} // namespace dd::nn
