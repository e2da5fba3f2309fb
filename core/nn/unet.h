#pragma once
// UNet2DConditionModel for SD 1.x, SD 2.x and SDXL, built from diffusers' unet/config.json.
// Ref: diffusers models/unets/unet_2d_condition.py (UNet2DConditionModel.__init__, get_time_embed,
// get_aug_embed, forward).
//
// Usage (on the engine thread, under c10::InferenceMode):
//   auto cfg = UNetConfig::fromJson(ck.configs.at("unet"));
//   UNet2DConditionModel unet(cfg);
//   loadWeights(*unet, ck.components.at("unet"), "unet");
//   auto eps = unet->forward(latents, t, context, AddedCond{pooled, timeIds});
#include "core/nn/attention.h"
#include "core/nn/blocks.h"
#include "core/nn/unet_blocks.h"

#include "core/nn/unet_config.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace dd::nn {

// SDXL micro-conditioning: pooled text embeddings [B, P] and time ids [B, 6].
struct AddedCond {
    torch::Tensor textEmbeds;
    torch::Tensor timeIds;
};

// What ControlNets add to the UNet (core/nn/controlnet.h): one tensor per skip connection, in the order the down
// path produces them, and one for the mid block's output.
struct ControlResiduals {
    std::vector<torch::Tensor> down;
    torch::Tensor mid;
};

struct UNet2DConditionModelImpl : torch::nn::Module {
    explicit UNet2DConditionModelImpl(const UNetConfig& config, AttentionOptions attention = {});

    // sample [B, C, H, W]; timestep 0-d, [1] or [B] (fractional allowed); encoderHiddenStates [B, S, cross].
    // `added` is required for addition_embed_type "text_time"; timestepCond only with time_cond_proj_dim;
    // `control` (ControlNet residuals) is added to the skips once the down path is done and to the mid output.
    torch::Tensor forward(const torch::Tensor& sample, const torch::Tensor& timestep,
                          const torch::Tensor& encoderHiddenStates, const std::optional<AddedCond>& added = std::nullopt,
                          const torch::Tensor& timestepCond = {}, const ControlResiduals* control = nullptr);
    torch::Tensor forward(const torch::Tensor& sample, double timestep, const torch::Tensor& encoderHiddenStates,
                          const std::optional<AddedCond>& added = std::nullopt);

    void setAttention(const AttentionOptions& options) { setAttentionOptions(*this, options); }
    const UNetConfig& config() const { return m_config; }
    int64_t numUpsamplers() const { return m_numUpsamplers; }

    LoraConv2d conv_in{nullptr}, conv_out{nullptr};
    TimestepEmbedding time_embedding{nullptr}, add_embedding{nullptr};
    torch::nn::ModuleList down_blocks{nullptr}, up_blocks{nullptr};
    UNetMidBlock mid_block{nullptr};
    GroupNorm conv_norm_out{nullptr};

private:
    torch::Tensor timeEmbedding(const torch::Tensor& sample, const torch::Tensor& timestep,
                                const std::optional<AddedCond>& added, const torch::Tensor& timestepCond);
    UNetConfig m_config;
    int64_t m_numUpsamplers = 0;
};
TORCH_MODULE(UNet2DConditionModel);

} // namespace dd::nn
