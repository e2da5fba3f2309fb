#pragma once
// AutoencoderKL (SD 1.x / 2.x / SDXL VAE), built from diffusers' vae/config.json.
// Ref: diffusers models/autoencoders/autoencoder_kl.py (AutoencoderKL), models/autoencoders/vae.py (Encoder,
// Decoder, DiagonalGaussianDistribution), models/unets/unet_2d_blocks.py (DownEncoderBlock2D,
// UpDecoderBlock2D, UNetMidBlock2D).
//
// Usage (engine thread, c10::InferenceMode):
//   AutoencoderKL vae(VaeConfig::fromJson(ck.configs.at("vae")));
//   loadWeights(*vae, ck.components.at("vae"), "vae");
//   torch::Tensor rgb01 = vae->decodeLatents(latents, {.sliced = true});   // [B, 3, H, W] in [0, 1]
#include "core/nn/attention.h"
#include "core/nn/blocks.h"

#include <ATen/core/Generator.h>
#include "core/nn/vae_config.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dd::nn {

// UNetMidBlock2D as the VAE uses it: resnets.0 → attentions.0 (single head, group_norm, residual) → resnets.1.
struct VaeMidBlockImpl : torch::nn::Module {
    VaeMidBlockImpl(int64_t channels, int64_t groups, bool addAttention);
    torch::Tensor forward(torch::Tensor x);

    torch::nn::ModuleList resnets{nullptr}, attentions{nullptr};
};
TORCH_MODULE(VaeMidBlock);

struct VaeEncoderImpl : torch::nn::Module {
    explicit VaeEncoderImpl(const VaeConfig& c);
    torch::Tensor forward(torch::Tensor x);  // → [B, 2·latent, h, w] moments (before quant_conv)

    Conv2d conv_in{nullptr}, conv_out{nullptr};
    torch::nn::ModuleList down_blocks{nullptr};
    VaeMidBlock mid_block{nullptr};
    GroupNorm conv_norm_out{nullptr};
};
TORCH_MODULE(VaeEncoder);

struct VaeDecoderImpl : torch::nn::Module {
    explicit VaeDecoderImpl(const VaeConfig& c);
    torch::Tensor forward(torch::Tensor z);

    Conv2d conv_in{nullptr}, conv_out{nullptr};
    VaeMidBlock mid_block{nullptr};
    torch::nn::ModuleList up_blocks{nullptr};
    GroupNorm conv_norm_out{nullptr};
};
TORCH_MODULE(VaeDecoder);

// DiagonalGaussianDistribution: moments split into mean / logvar (clamped to [−30, 20]).
struct LatentDist {
    torch::Tensor mean, logvar;
    torch::Tensor std() const;
    torch::Tensor mode() const { return mean; }
    // mean + std · randn(mean.shape, generator) in mean's dtype: equals diffusers with the same CPU generator
    // when mean is on the CPU. An undefined generator uses the default one.
    torch::Tensor sample(std::optional<at::Generator> generator = std::nullopt) const;
};

struct VaeRunOptions {
    bool sliced = false;  // one image of the batch at a time (diffusers enable_slicing): same numbers
    bool tiled = false;   // overlapping tiles of config.sampleSize pixels when larger (diffusers enable_tiling)
    int64_t tileSize = 0; // tile side in pixels when tiled; 0 = config.sampleSize (smaller: the OOM retry)
};

struct AutoencoderKLImpl : torch::nn::Module {
    explicit AutoencoderKLImpl(const VaeConfig& config, AttentionOptions attention = {});

    LatentDist encode(const torch::Tensor& image, VaeRunOptions run = {});  // image in [−1, 1]
    torch::Tensor decode(const torch::Tensor& z, VaeRunOptions run = {});   // → ~[−1, 1]
    torch::Tensor decode(const torch::Tensor& z, bool sliced) { return decode(z, VaeRunOptions{sliced, false}); }
    // Pipeline decode: latents / scaling_factor → decode → (x / 2 + 0.5).clamp(0, 1).
    torch::Tensor decodeLatents(const torch::Tensor& latents, VaeRunOptions run = {});

    void setAttention(const AttentionOptions& options) { setAttentionOptions(*this, options); }
    const VaeConfig& config() const { return m_config; }

    VaeEncoder encoder{nullptr};
    VaeDecoder decoder{nullptr};
    Conv2d quant_conv{nullptr}, post_quant_conv{nullptr};

private:
    torch::Tensor encodeOne(const torch::Tensor& x, const VaeRunOptions& run);
    torch::Tensor decodeOne(const torch::Tensor& z, const VaeRunOptions& run);
    torch::Tensor tiledEncode(const torch::Tensor& x, int64_t sampleTile);
    torch::Tensor tiledDecode(const torch::Tensor& z, int64_t sampleTile);
    VaeConfig m_config;
};
TORCH_MODULE(AutoencoderKL);

} // namespace dd::nn
