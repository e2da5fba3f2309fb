// Ref: diffusers models/resnet.py ResnetBlock2D, models/downsampling.py Downsample2D,
// models/upsampling.py Upsample2D, models/embeddings.py get_timestep_embedding / TimestepEmbedding.
#include "core/nn/blocks.h"

#include <torch/torch.h>

#include <cmath>

namespace dd::nn {
namespace F = torch::nn::functional;

torch::Tensor timestepEmbedding(const torch::Tensor& timesteps, int64_t dim, bool flipSinToCos, double freqShift,
                                double maxPeriod) {
    TORCH_CHECK(timesteps.dim() == 1, "timestepEmbedding: timesteps must be 1-D, got ", timesteps.sizes());
    const int64_t half = dim / 2;
    // Same operation order as diffusers (fp32 arange, scaled, divided, exp) so the rounding matches.
    auto exponent = torch::arange(half, torch::dtype(torch::kFloat32).device(timesteps.device())) * -std::log(maxPeriod);
    exponent = exponent / (static_cast<double>(half) - freqShift);
    auto args = timesteps.unsqueeze(1).to(torch::kFloat32) * torch::exp(exponent).unsqueeze(0);
    auto emb = flipSinToCos ? torch::cat({torch::cos(args), torch::sin(args)}, -1)
                            : torch::cat({torch::sin(args), torch::cos(args)}, -1);
    if (dim % 2 == 1) emb = F::pad(emb, F::PadFuncOptions({0, 1, 0, 0}));
    return emb;
}

TimestepEmbeddingImpl::TimestepEmbeddingImpl(int64_t inChannels, int64_t timeEmbedDim, int64_t condProjDim) {
    linear_1 = register_module("linear_1", LoraLinear(inChannels, timeEmbedDim));
    if (condProjDim > 0)
        cond_proj = register_module("cond_proj",
                                    LoraLinear(torch::nn::LinearOptions(condProjDim, inChannels).bias(false)));
    linear_2 = register_module("linear_2", LoraLinear(timeEmbedDim, timeEmbedDim));
}

torch::Tensor TimestepEmbeddingImpl::forward(torch::Tensor sample, const torch::Tensor& condition) {
    if (condition.defined() && cond_proj) sample = sample + cond_proj(condition);
    return linear_2(torch::silu(linear_1(sample)));
}

namespace {
LoraConv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t padding = 0) {
    return LoraConv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding));
}
GroupNorm groupNorm(int64_t groups, int64_t channels, double eps) {
    return GroupNorm(torch::nn::GroupNormOptions(groups, channels).eps(eps));
}
} // namespace

ResnetBlock2DImpl::ResnetBlock2DImpl(int64_t inChannels, int64_t outChannels, int64_t tembChannels, int64_t groups,
                                     double eps, double outputScaleFactor)
    : outputScaleFactor(outputScaleFactor) {
    norm1 = register_module("norm1", groupNorm(groups, inChannels, eps));
    conv1 = register_module("conv1", conv(inChannels, outChannels, 3, 1, 1));
    if (tembChannels > 0) time_emb_proj = register_module("time_emb_proj", LoraLinear(tembChannels, outChannels));
    norm2 = register_module("norm2", groupNorm(groups, outChannels, eps));
    conv2 = register_module("conv2", conv(outChannels, outChannels, 3, 1, 1));
    if (inChannels != outChannels) conv_shortcut = register_module("conv_shortcut", conv(inChannels, outChannels, 1));
}

// In place wherever the tensor written is one this block just made: the same arithmetic as diffusers' out-of-place
// ops (a + b == b + a bit for bit), without a fresh full-size buffer per op. At the VAE decoder's 512² levels
// each is 128 MB of new zero-filled pages.
torch::Tensor ResnetBlock2DImpl::forward(const torch::Tensor& x, const torch::Tensor& temb) {
    auto h = norm1(x);
    h = conv1(torch::silu_(h));
    if (time_emb_proj && temb.defined()) h.add_(time_emb_proj(torch::silu(temb)).unsqueeze(-1).unsqueeze(-1));
    h = norm2(h);
    h = conv2(torch::silu_(h));
    h.add_(conv_shortcut ? conv_shortcut(x) : x);
    return outputScaleFactor == 1.0 ? h : h.div_(outputScaleFactor);
}

Downsample2DImpl::Downsample2DImpl(int64_t channels, int64_t padding) : padding(padding) {
    conv = register_module("conv", dd::nn::conv(channels, channels, 3, 2, padding));
}

torch::Tensor Downsample2DImpl::forward(const torch::Tensor& x) {
    if (padding == 0) return conv(F::pad(x, F::PadFuncOptions({0, 1, 0, 1})));
    return conv(x);
}

Upsample2DImpl::Upsample2DImpl(int64_t channels) {
    conv = register_module("conv", dd::nn::conv(channels, channels, 3, 1, 1));
}

torch::Tensor Upsample2DImpl::forward(const torch::Tensor& x, std::optional<std::vector<int64_t>> outputSize) {
    auto opts = F::InterpolateFuncOptions().mode(torch::kNearest);
    if (outputSize)
        opts.size(*outputSize);
    else
        opts.scale_factor(std::vector<double>{2.0, 2.0});
    return conv(F::interpolate(x, opts));
}

} // namespace dd::nn
