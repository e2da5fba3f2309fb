// Ref: diffusers models/unets/unet_2d_condition.py — UNet2DConditionModel.__init__ (per-block lists,
// reversed lists for the up path), get_time_embed (cast to sample dtype), get_aug_embed ("text_time"),
// forward (skip list, upsample_size for sizes not divisible by 2^num_upsamplers).
#include "core/nn/config_value.h"
#include "core/nn/unet.h"

#include "core/io/model_error.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dd::nn {

UNet2DConditionModelImpl::UNet2DConditionModelImpl(const UNetConfig& c, AttentionOptions attention) : m_config(c) {
    const auto& ch = c.blockOutChannels;
    const size_t n = ch.size();
    const int64_t timeDim = ch[0] * 4;
    conv_in = register_module("conv_in", LoraConv2d(torch::nn::Conv2dOptions(c.inChannels, ch[0], 3).padding(1)));
    time_embedding = register_module("time_embedding", TimestepEmbedding(ch[0], timeDim, c.timeCondProjDim));
    if (c.additionEmbedType == "text_time")
        add_embedding = register_module("add_embedding", TimestepEmbedding(c.projectionClassEmbeddingsInputDim, timeDim));

    down_blocks = register_module("down_blocks", torch::nn::ModuleList());
    for (size_t i = 0; i < n; ++i) down_blocks->push_back(UNetDownBlock(downBlockConfigFor(c, i, timeDim)));
    mid_block = register_module("mid_block", UNetMidBlock(midBlockConfigFor(c, timeDim)));

    up_blocks = register_module("up_blocks", torch::nn::ModuleList());
    for (size_t i = 0; i < n; ++i) {
        const size_t r = n - 1 - i;  // index into the per-down-block lists, reversed
        auto b = blockConfigFor(c, r, c.layersPerBlock[r] + 1, timeDim);
        b.prevOutputChannels = i == 0 ? ch[n - 1] : ch[r + 1];
        b.outChannels = ch[r];
        b.inChannels = ch[r == 0 ? 0 : r - 1];
        b.crossAttention = c.upBlockTypes[i] == "CrossAttnUpBlock2D";
        b.addSampler = i + 1 < n;
        b.attention.layers = c.reverseTransformerLayers[i];
        if (b.addSampler) ++m_numUpsamplers;
        up_blocks->push_back(UNetUpBlock(b));
    }

    conv_norm_out = register_module("conv_norm_out",
                                    GroupNorm(torch::nn::GroupNormOptions(c.normGroups, ch[0]).eps(c.normEps)));
    conv_out = register_module("conv_out", LoraConv2d(torch::nn::Conv2dOptions(ch[0], c.outChannels, 3).padding(1)));
    setAttention(attention);
}

torch::Tensor UNet2DConditionModelImpl::timeEmbedding(const torch::Tensor& sample, const torch::Tensor& timestep,
                                                      const std::optional<AddedCond>& added,
                                                      const torch::Tensor& timestepCond) {
    auto t = timestep.dim() == 0 ? timestep.unsqueeze(0) : timestep;
    t = t.to(sample.device()).expand({sample.size(0)});
    // Timesteps are embedded in fp32 and then rounded to the sample dtype, as diffusers does.
    auto tEmb = timestepEmbedding(t, m_config.blockOutChannels[0], m_config.flipSinToCos, m_config.freqShift)
                    .to(sample.scalar_type());
    auto emb = time_embedding(tEmb, timestepCond);
    if (!add_embedding) return emb;
    TORCH_CHECK(added && added->textEmbeds.defined() && added->timeIds.defined(),
                "UNet: addition_embed_type 'text_time' needs text_embeds and time_ids");
    const auto& textEmbeds = added->textEmbeds;
    auto timeEmbeds = timestepEmbedding(added->timeIds.flatten(), m_config.additionTimeEmbedDim, m_config.flipSinToCos,
                                        m_config.freqShift)
                          .reshape({textEmbeds.size(0), -1});
    auto addEmbeds = torch::cat({textEmbeds, timeEmbeds.to(textEmbeds.scalar_type())}, -1).to(emb.scalar_type());
    return emb + add_embedding(addEmbeds);
}

torch::Tensor UNet2DConditionModelImpl::forward(const torch::Tensor& sample, const torch::Tensor& timestep,
                                                const torch::Tensor& encoderHiddenStates,
                                                const std::optional<AddedCond>& added,
                                                const torch::Tensor& timestepCond, const ControlResiduals* control) {
    TORCH_CHECK(sample.dim() == 4 && sample.size(1) == m_config.inChannels, "UNet: sample must be [B, ",
                m_config.inChannels, ", H, W], got ", sample.sizes());
    const int64_t factor = int64_t(1) << m_numUpsamplers;
    const bool forwardUpsampleSize = sample.size(2) % factor != 0 || sample.size(3) % factor != 0;

    const auto emb = timeEmbedding(sample, timestep, added, timestepCond);
    auto h = conv_in(sample);
    std::vector<torch::Tensor> skips{h};
    for (const auto& block : *down_blocks) h = block->as<UNetDownBlock>()->forward(h, emb, encoderHiddenStates, skips);
    if (control) {
        TORCH_CHECK(control->down.size() == skips.size(), "UNet: the ControlNet gives ", control->down.size(),
                    " residuals but the UNet has ", skips.size(), " skip connections");
        for (size_t i = 0; i < skips.size(); ++i) skips[i] = skips[i] + control->down[i];
    }
    h = mid_block(h, emb, encoderHiddenStates);
    if (control) h = h + control->mid;
    for (size_t i = 0; i < up_blocks->size(); ++i) {
        auto* block = up_blocks[i]->as<UNetUpBlock>();
        std::optional<std::vector<int64_t>> upsampleSize;
        const size_t used = block->resnets->size();
        if (forwardUpsampleSize && i + 1 < up_blocks->size() && skips.size() > used) {
            const auto& next = skips[skips.size() - used - 1];
            upsampleSize = std::vector<int64_t>{next.size(2), next.size(3)};
        }
        h = block->forward(h, emb, encoderHiddenStates, skips, upsampleSize);
    }
    return conv_out(torch::silu(conv_norm_out(h)));
}

torch::Tensor UNet2DConditionModelImpl::forward(const torch::Tensor& sample, double timestep,
                                                const torch::Tensor& encoderHiddenStates,
                                                const std::optional<AddedCond>& added) {
    return forward(sample, torch::tensor({timestep}, torch::kFloat64), encoderHiddenStates, added);
}

} // namespace dd::nn
