#pragma once
// Building blocks shared by the UNet and the VAE, parameter names equal to diffusers' keys.
// Ref: diffusers models/resnet.py (ResnetBlock2D), models/downsampling.py (Downsample2D),
// models/upsampling.py (Upsample2D), models/embeddings.py (get_timestep_embedding, TimestepEmbedding).
#include "core/nn/lora_layers.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <optional>
#include <vector>

namespace dd::nn {

// diffusers get_timestep_embedding: [N] timesteps (any dtype, fractional allowed) → [N, dim] float32.
torch::Tensor timestepEmbedding(const torch::Tensor& timesteps, int64_t dim, bool flipSinToCos, double freqShift,
                                double maxPeriod = 10000.0);

// TimestepEmbedding: linear_1 → SiLU → linear_2, with the optional cond_proj (LCM's time_cond_proj_dim).
struct TimestepEmbeddingImpl : torch::nn::Module {
    TimestepEmbeddingImpl(int64_t inChannels, int64_t timeEmbedDim, int64_t condProjDim = 0);
    torch::Tensor forward(torch::Tensor sample, const torch::Tensor& condition = {});

    LoraLinear linear_1{nullptr}, linear_2{nullptr}, cond_proj{nullptr};
};
TORCH_MODULE(TimestepEmbedding);

// ResnetBlock2D, time_embedding_norm "default", SiLU, output_scale_factor configurable.
// tembChannels == 0 gives the VAE flavour without time_emb_proj.
struct ResnetBlock2DImpl : torch::nn::Module {
    ResnetBlock2DImpl(int64_t inChannels, int64_t outChannels, int64_t tembChannels, int64_t groups, double eps,
                      double outputScaleFactor = 1.0);
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& temb = {});

    GroupNorm norm1{nullptr}, norm2{nullptr};
    LoraConv2d conv1{nullptr}, conv2{nullptr}, conv_shortcut{nullptr};
    LoraLinear time_emb_proj{nullptr};
    double outputScaleFactor;
};
TORCH_MODULE(ResnetBlock2D);

// Conv 3×3 stride 2. padding 0 means the VAE's asymmetric (0,1,0,1) zero pad before the conv.
struct Downsample2DImpl : torch::nn::Module {
    Downsample2DImpl(int64_t channels, int64_t padding);
    torch::Tensor forward(const torch::Tensor& x);

    LoraConv2d conv{nullptr};
    int64_t padding;
};
TORCH_MODULE(Downsample2D);

// Nearest ×2 (or to an explicit size, for latents not divisible by the UNet's overall factor) + conv 3×3.
struct Upsample2DImpl : torch::nn::Module {
    explicit Upsample2DImpl(int64_t channels);
    torch::Tensor forward(const torch::Tensor& x, std::optional<std::vector<int64_t>> outputSize = std::nullopt);

    LoraConv2d conv{nullptr};
};
TORCH_MODULE(Upsample2D);

} // namespace dd::nn
