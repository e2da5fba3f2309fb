// Ref: diffusers models/autoencoders/autoencoder_kl.py AutoencoderKL (encode/_encode, decode/_decode,
// slicing), models/autoencoders/vae.py Encoder / Decoder / DiagonalGaussianDistribution,
// models/unets/unet_2d_blocks.py DownEncoderBlock2D / UpDecoderBlock2D / UNetMidBlock2D.
#include "core/nn/config_value.h"
#include "core/nn/vae.h"

#include "core/io/model_error.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

namespace dd::nn {
namespace {

constexpr double kEps = 1e-6;  // every VAE GroupNorm

Conv2d vaeConv(int64_t in, int64_t out, int64_t kernel) {
    return Conv2d(torch::nn::Conv2dOptions(in, out, kernel).padding(kernel / 2));
}

GroupNorm vaeGroupNorm(int64_t groups, int64_t channels) {
    return GroupNorm(torch::nn::GroupNormOptions(groups, channels).eps(kEps));
}

// DownEncoderBlock2D / UpDecoderBlock2D: resnets without time embedding, then the optional resampler.
struct VaeBlockImpl : torch::nn::Module {
    VaeBlockImpl(int64_t in, int64_t out, int64_t layers, int64_t groups, bool down, bool addSampler) {
        resnets = register_module("resnets", torch::nn::ModuleList());
        for (int64_t i = 0; i < layers; ++i) resnets->push_back(ResnetBlock2D(i == 0 ? in : out, out, 0, groups, kEps));
        if (!addSampler) return;
        if (down) {
            downsamplers = register_module("downsamplers", torch::nn::ModuleList());
            downsamplers->push_back(Downsample2D(out, 0));
        } else {
            upsamplers = register_module("upsamplers", torch::nn::ModuleList());
            upsamplers->push_back(Upsample2D(out));
        }
    }
    torch::Tensor forward(torch::Tensor x) {
        for (const auto& r : *resnets) x = r->as<ResnetBlock2D>()->forward(x);
        if (downsamplers) x = downsamplers[0]->as<Downsample2D>()->forward(x);
        if (upsamplers) x = upsamplers[0]->as<Upsample2D>()->forward(x);
        return x;
    }
    torch::nn::ModuleList resnets{nullptr}, downsamplers{nullptr}, upsamplers{nullptr};
};
TORCH_MODULE(VaeBlock);

} // namespace

VaeMidBlockImpl::VaeMidBlockImpl(int64_t channels, int64_t groups, bool addAttention) {
    resnets = register_module("resnets", torch::nn::ModuleList());
    resnets->push_back(ResnetBlock2D(channels, channels, 0, groups, kEps));
    if (addAttention) {
        AttentionConfig a;
        a.queryDim = channels;
        a.heads = 1;
        a.headDim = channels;
        a.bias = true;
        a.upcastSoftmax = true;
        a.groupNormGroups = groups;
        a.groupNormEps = kEps;
        a.residualConnection = true;
        attentions = register_module("attentions", torch::nn::ModuleList());
        attentions->push_back(Attention(a));
    }
    resnets->push_back(ResnetBlock2D(channels, channels, 0, groups, kEps));
}

torch::Tensor VaeMidBlockImpl::forward(torch::Tensor x) {
    x = resnets[0]->as<ResnetBlock2D>()->forward(x);
    if (attentions) x = attentions[0]->as<Attention>()->forward(x);
    return resnets[1]->as<ResnetBlock2D>()->forward(x);
}

VaeEncoderImpl::VaeEncoderImpl(const VaeConfig& c) {
    const auto& ch = c.blockOutChannels;
    conv_in = register_module("conv_in", vaeConv(c.inChannels, ch[0], 3));
    down_blocks = register_module("down_blocks", torch::nn::ModuleList());
    for (size_t i = 0; i < ch.size(); ++i)
        down_blocks->push_back(
            VaeBlock(i == 0 ? ch[0] : ch[i - 1], ch[i], c.layersPerBlock, c.normGroups, true, i + 1 < ch.size()));
    mid_block = register_module("mid_block", VaeMidBlock(ch.back(), c.normGroups, c.midBlockAddAttention));
    conv_norm_out = register_module("conv_norm_out", vaeGroupNorm(c.normGroups, ch.back()));
    conv_out = register_module("conv_out", vaeConv(ch.back(), 2 * c.latentChannels, 3));
}

torch::Tensor VaeEncoderImpl::forward(torch::Tensor x) {
    x = conv_in(x);
    for (const auto& b : *down_blocks) x = b->as<VaeBlock>()->forward(x);
    x = mid_block(x);
    return conv_out(torch::silu(conv_norm_out(x)));
}

VaeDecoderImpl::VaeDecoderImpl(const VaeConfig& c) {
    const auto& ch = c.blockOutChannels;
    const size_t n = ch.size();
    conv_in = register_module("conv_in", vaeConv(c.latentChannels, ch.back(), 3));
    mid_block = register_module("mid_block", VaeMidBlock(ch.back(), c.normGroups, c.midBlockAddAttention));
    up_blocks = register_module("up_blocks", torch::nn::ModuleList());
    for (size_t i = 0; i < n; ++i) {
        const int64_t prev = i == 0 ? ch[n - 1] : ch[n - i];
        up_blocks->push_back(VaeBlock(prev, ch[n - 1 - i], c.layersPerBlock + 1, c.normGroups, false, i + 1 < n));
    }
    conv_norm_out = register_module("conv_norm_out", vaeGroupNorm(c.normGroups, ch[0]));
    conv_out = register_module("conv_out", vaeConv(ch[0], c.outChannels, 3));
}

torch::Tensor VaeDecoderImpl::forward(torch::Tensor z) {
    z = mid_block(conv_in(z));
    for (const auto& b : *up_blocks) z = b->as<VaeBlock>()->forward(z);
    return conv_out(torch::silu(conv_norm_out(z)));
}

torch::Tensor LatentDist::std() const { return torch::exp(0.5 * logvar); }

torch::Tensor LatentDist::sample(std::optional<at::Generator> generator) const {
    auto noise = torch::randn(mean.sizes(), generator, mean.options());
    return mean + std() * noise;
}

AutoencoderKLImpl::AutoencoderKLImpl(const VaeConfig& c, AttentionOptions attention) : m_config(c) {
    encoder = register_module("encoder", VaeEncoder(c));
    decoder = register_module("decoder", VaeDecoder(c));
    if (c.useQuantConv) quant_conv = register_module("quant_conv", vaeConv(2 * c.latentChannels, 2 * c.latentChannels, 1));
    if (c.usePostQuantConv) post_quant_conv = register_module("post_quant_conv", vaeConv(c.latentChannels, c.latentChannels, 1));
    setAttention(attention);
}

torch::Tensor AutoencoderKLImpl::encodeOne(const torch::Tensor& x, const VaeRunOptions& run) {
    const int64_t tile = run.tileSize > 0 ? run.tileSize : m_config.sampleSize;
    if (run.tiled && (x.size(2) > tile || x.size(3) > tile)) return tiledEncode(x, tile);
    auto h = encoder(x);
    return quant_conv ? quant_conv(h) : h;
}

torch::Tensor AutoencoderKLImpl::decodeOne(const torch::Tensor& z, const VaeRunOptions& run) {
    const int64_t sampleTile = run.tileSize > 0 ? run.tileSize : m_config.sampleSize;
    const int64_t tile = sampleTile / m_config.scaleFactor();
    if (run.tiled && (z.size(2) > tile || z.size(3) > tile)) return tiledDecode(z, sampleTile);
    return decoder(post_quant_conv ? post_quant_conv(z) : z);
}

LatentDist AutoencoderKLImpl::encode(const torch::Tensor& image, VaeRunOptions run) {
    torch::Tensor moments;
    if (run.sliced && image.size(0) > 1) {
        std::vector<torch::Tensor> parts;
        for (const auto& one : image.split(1)) parts.push_back(encodeOne(one, run));
        moments = torch::cat(parts);
    } else {
        moments = encodeOne(image, run);
    }
    auto halves = moments.chunk(2, 1);
    return LatentDist{halves[0], torch::clamp(halves[1], -30.0, 20.0)};
}

torch::Tensor AutoencoderKLImpl::decode(const torch::Tensor& z, VaeRunOptions run) {
    if (!(run.sliced && z.size(0) > 1)) return decodeOne(z, run);
    std::vector<torch::Tensor> parts;
    for (const auto& one : z.split(1)) parts.push_back(decodeOne(one, run));
    return torch::cat(parts);
}

torch::Tensor AutoencoderKLImpl::decodeLatents(const torch::Tensor& latents, VaeRunOptions run) {
    return (decode(latents / m_config.scalingFactor, run) / 2 + 0.5).clamp(0, 1);
}

} // namespace dd::nn
