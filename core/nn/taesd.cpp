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

bool allEqual(const std::vector<int64_t>& v) {
    return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

} // namespace

TaesdConfig TaesdConfig::fromJson(const nlohmann::json& j, const std::string& source) {
    try {
        TaesdConfig c;
        const auto cls = configValue<std::string>(j, "_class_name", "AutoencoderTiny");
        if (cls != "AutoencoderTiny") throw io::ModelFileError(source, "is a " + cls + " config, not AutoencoderTiny");
        c.inChannels = configValue<int64_t>(j, "in_channels", 3);
        c.outChannels = configValue<int64_t>(j, "out_channels", 3);
        c.latentChannels = configValue<int64_t>(j, "latent_channels", 4);
        c.encoderBlockOutChannels = configValue(j, "encoder_block_out_channels", c.encoderBlockOutChannels);
        c.decoderBlockOutChannels = configValue(j, "decoder_block_out_channels", c.decoderBlockOutChannels);
        c.numEncoderBlocks = configValue(j, "num_encoder_blocks", c.numEncoderBlocks);
        c.numDecoderBlocks = configValue(j, "num_decoder_blocks", c.numDecoderBlocks);
        c.upsamplingScalingFactor = configValue<int64_t>(j, "upsampling_scaling_factor", 2);
        c.latentMagnitude = configValue(j, "latent_magnitude", 3.0);
        c.latentShift = configValue(j, "latent_shift", 0.5);
        c.scalingFactor = configValue(j, "scaling_factor", 1.0);
        c.shiftFactor = configValue(j, "shift_factor", 0.0);
        c.forceUpcast = configValue(j, "force_upcast", false);
        if (c.encoderBlockOutChannels.size() != c.numEncoderBlocks.size() || c.encoderBlockOutChannels.empty())
            throw io::ModelFileError(source, "encoder_block_out_channels and num_encoder_blocks differ in length");
        if (c.decoderBlockOutChannels.size() != c.numDecoderBlocks.size() || c.decoderBlockOutChannels.empty())
            throw io::ModelFileError(source, "decoder_block_out_channels and num_decoder_blocks differ in length");
        // EncoderTiny / DecoderTiny feed each stage's output unchanged into the next stage, so diffusers can only
        // run configs whose stages share one width.
        if (!allEqual(c.encoderBlockOutChannels) || !allEqual(c.decoderBlockOutChannels))
            throw io::ModelFileError(source, "encoder/decoder block_out_channels must all be equal (AutoencoderTiny)");
        if (configValue<std::string>(j, "act_fn", "relu") != "relu")
            throw io::ModelFileError(source, "act_fn other than relu is not supported");
        if (configValue<std::string>(j, "upsample_fn", "nearest") != "nearest")
            throw io::ModelFileError(source, "upsample_fn other than nearest is not supported");
        if (c.upsamplingScalingFactor < 1 || c.scalingFactor == 0)
            throw io::ModelFileError(source, "upsampling_scaling_factor or scaling_factor out of range");
        return c;
    } catch (const nlohmann::json::exception& e) {
        throw io::ModelFileError(source, std::string("malformed: ") + e.what());
    }
}

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
