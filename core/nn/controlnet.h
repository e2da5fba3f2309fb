#pragma once
// ControlNetModel for SD 1.x / 2.x and SDXL, built from diffusers' controlnet config.json: a copy of the UNet's
// encoder (time embedding, down blocks, mid block) whose input is the latent plus an encoded control image, and
// a 1×1 conv per UNet skip connection that turns its states into residuals for the UNet (nn::ControlResiduals).
// Every weight lives in core/nn/layers.h's guarded leaves, so the offload engine places it like the UNet.
// Ref: diffusers models/controlnets/controlnet.py (ControlNetConditioningEmbedding, ControlNetModel.__init__,
// forward).
//
// Usage (engine thread, under c10::InferenceMode):
//   ControlNetModel net(ControlNetConfig::fromJson(config));
//   loadWeights(*net, weights, "controlnet");
//   auto res = net->forward(latents, t, context, added, hint /*[B, 3, 8h, 8w] in [0, 1]*/, /*scale*/ 1.0);
//   auto eps = unet->forward(latents, t, context, added, {}, &res);
#include "core/nn/attention.h"
#include "core/nn/blocks.h"
#include "core/nn/controlnet_config.h"
#include "core/nn/unet.h"
#include "core/nn/unet_blocks.h"

#include <optional>

namespace dd::nn {

// The hint encoder: conv_in → SiLU → (conv → SiLU, stride-2 conv → SiLU) per step → conv_out.
struct ControlNetConditioningEmbeddingImpl : torch::nn::Module {
    ControlNetConditioningEmbeddingImpl(int64_t inChannels, const std::vector<int64_t>& channels, int64_t outChannels);
    torch::Tensor forward(const torch::Tensor& hint);

    Conv2d conv_in{nullptr}, conv_out{nullptr};
    torch::nn::ModuleList blocks{nullptr};
};
TORCH_MODULE(ControlNetConditioningEmbedding);

struct ControlNetModelImpl : torch::nn::Module {
    explicit ControlNetModelImpl(const ControlNetConfig& config, AttentionOptions attention = {});

    // sample [B, C, h, w] (the UNet's input, already scaled by the scheduler); hint [B, 3, h·f, w·f] with
    // values in [0, 1] (f = config().hintFactor()); every residual multiplied by `scale`. `guessMode` scales the
    // residuals from 0.1 (first skip) to 1 (mid) on a log scale, as diffusers' guess_mode does.
    ControlResiduals forward(const torch::Tensor& sample, const torch::Tensor& timestep,
                             const torch::Tensor& encoderHiddenStates, const std::optional<AddedCond>& added,
                             const torch::Tensor& hint, double scale = 1.0, bool guessMode = false);

    void setAttention(const AttentionOptions& options) { setAttentionOptions(*this, options); }
    const ControlNetConfig& config() const { return m_config; }

    Conv2d conv_in{nullptr}, controlnet_mid_block{nullptr};
    TimestepEmbedding time_embedding{nullptr}, add_embedding{nullptr};
    ControlNetConditioningEmbedding controlnet_cond_embedding{nullptr};
    torch::nn::ModuleList down_blocks{nullptr}, controlnet_down_blocks{nullptr};
    UNetMidBlock mid_block{nullptr};

private:
    torch::Tensor timeEmbedding(const torch::Tensor& sample, const torch::Tensor& timestep,
                                const std::optional<AddedCond>& added);
    ControlNetConfig m_config;
};
TORCH_MODULE(ControlNetModel);

} // namespace dd::nn
