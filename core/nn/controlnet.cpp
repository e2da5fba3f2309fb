// Ref: diffusers models/controlnets/controlnet.py — ControlNetConditioningEmbedding, ControlNetModel.__init__
// (one zero conv for conv_in's output, one per resnet, one per downsampler, one for the mid block) and forward
// (hint embedding added after conv_in; residual scaling; guess mode; global pooling).
#include "core/nn/controlnet.h"

#include <torch/torch.h>

#include <cmath>

namespace dd::nn {
namespace {

Conv2d plainConv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1) {
    return Conv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2));
}

} // namespace

ControlNetConditioningEmbeddingImpl::ControlNetConditioningEmbeddingImpl(int64_t inChannels,
                                                                         const std::vector<int64_t>& ch,
                                                                         int64_t outChannels) {
    conv_in = register_module("conv_in", plainConv(inChannels, ch[0], 3));
    blocks = register_module("blocks", torch::nn::ModuleList());
    for (size_t i = 0; i + 1 < ch.size(); ++i) {
        blocks->push_back(plainConv(ch[i], ch[i], 3));
        blocks->push_back(plainConv(ch[i], ch[i + 1], 3, 2));
    }
    conv_out = register_module("conv_out", plainConv(ch.back(), outChannels, 3));
}

torch::Tensor ControlNetConditioningEmbeddingImpl::forward(const torch::Tensor& hint) {
    auto x = torch::silu(conv_in(hint));
    for (const auto& block : *blocks) x = torch::silu(block->as<Conv2dImpl>()->forward(x));
    return conv_out(x);
}

ControlNetModelImpl::ControlNetModelImpl(const ControlNetConfig& c, AttentionOptions attention) : m_config(c) {
    const auto& ch = c.blockOutChannels;
    const size_t n = ch.size();
    const int64_t timeDim = ch[0] * 4;
    conv_in = register_module("conv_in", plainConv(c.inChannels, ch[0], 3));
    time_embedding = register_module("time_embedding", TimestepEmbedding(ch[0], timeDim));
    if (c.additionEmbedType == "text_time")
        add_embedding = register_module("add_embedding", TimestepEmbedding(c.projectionClassEmbeddingsInputDim, timeDim));
    controlnet_cond_embedding = register_module(
        "controlnet_cond_embedding", ControlNetConditioningEmbedding(c.conditioningChannels, c.embeddingChannels, ch[0]));

    down_blocks = register_module("down_blocks", torch::nn::ModuleList());
    controlnet_down_blocks = register_module("controlnet_down_blocks", torch::nn::ModuleList());
    controlnet_down_blocks->push_back(plainConv(ch[0], ch[0], 1));
    for (size_t i = 0; i < n; ++i) {
        const auto b = downBlockConfigFor(c, i, timeDim);
        down_blocks->push_back(UNetDownBlock(b));
        for (int64_t k = 0; k < c.layersPerBlock[i] + (b.addSampler ? 1 : 0); ++k)
            controlnet_down_blocks->push_back(plainConv(ch[i], ch[i], 1));
    }
    mid_block = register_module("mid_block", UNetMidBlock(midBlockConfigFor(c, timeDim)));
    controlnet_mid_block = register_module("controlnet_mid_block", plainConv(ch[n - 1], ch[n - 1], 1));
    setAttention(attention);
}

// As the UNet's: timesteps embedded in fp32, rounded to the sample dtype; SDXL adds the text_time embedding.
torch::Tensor ControlNetModelImpl::timeEmbedding(const torch::Tensor& sample, const torch::Tensor& timestep,
                                                 const std::optional<AddedCond>& added) {
    auto t = timestep.dim() == 0 ? timestep.unsqueeze(0) : timestep;
    t = t.to(sample.device()).expand({sample.size(0)});
    const auto tEmb = timestepEmbedding(t, m_config.blockOutChannels[0], m_config.flipSinToCos, m_config.freqShift)
                          .to(sample.scalar_type());
    auto emb = time_embedding(tEmb);
    if (!add_embedding) return emb;
    TORCH_CHECK(added && added->textEmbeds.defined() && added->timeIds.defined(),
                "ControlNet: addition_embed_type 'text_time' (SDXL) needs text_embeds and time_ids");
    const auto& textEmbeds = added->textEmbeds;
    const auto timeEmbeds = timestepEmbedding(added->timeIds.flatten(), m_config.additionTimeEmbedDim,
                                              m_config.flipSinToCos, m_config.freqShift)
                                .reshape({textEmbeds.size(0), -1});
    const auto addEmbeds = torch::cat({textEmbeds, timeEmbeds.to(textEmbeds.scalar_type())}, -1).to(emb.scalar_type());
    return emb + add_embedding(addEmbeds);
}

ControlResiduals ControlNetModelImpl::forward(const torch::Tensor& sample, const torch::Tensor& timestep,
                                              const torch::Tensor& encoderHiddenStates,
                                              const std::optional<AddedCond>& added, const torch::Tensor& hint,
                                              double scale, bool guessMode) {
    TORCH_CHECK(sample.dim() == 4 && sample.size(1) == m_config.inChannels, "ControlNet: sample must be [B, ",
                m_config.inChannels, ", h, w], got ", sample.sizes());
    const int64_t f = m_config.hintFactor();
    TORCH_CHECK(hint.dim() == 4 && hint.size(0) == sample.size(0) && hint.size(1) == m_config.conditioningChannels &&
                    hint.size(2) == sample.size(2) * f && hint.size(3) == sample.size(3) * f,
                "ControlNet: the control image must be [", sample.size(0), ", ", m_config.conditioningChannels, ", ",
                sample.size(2) * f, ", ", sample.size(3) * f, "], got ", hint.sizes());
    const auto emb = timeEmbedding(sample, timestep, added);
    const auto cond = m_config.bgr ? hint.flip({1}) : hint;
    auto h = conv_in(sample) + controlnet_cond_embedding(cond.to(sample.scalar_type()));
    std::vector<torch::Tensor> states{h};
    for (const auto& block : *down_blocks) h = block->as<UNetDownBlock>()->forward(h, emb, encoderHiddenStates, states);
    h = mid_block(h, emb, encoderHiddenStates);

    ControlResiduals out;
    const size_t count = states.size();
    TORCH_CHECK(count == controlnet_down_blocks->size(), "ControlNet: ", count, " skip states for ",
                controlnet_down_blocks->size(), " zero convs");
    // Guess mode: torch.logspace(-1, 0, count + 1), i.e. 10^(-1 + k / count), times the scale.
    auto factor = [&](size_t k) { return guessMode && !m_config.globalPoolConditions ? scale * std::pow(10.0, -1.0 + double(k) / double(count)) : scale; };
    for (size_t k = 0; k < count; ++k) out.down.push_back(controlnet_down_blocks[k]->as<Conv2dImpl>()->forward(states[k]) * factor(k));
    out.mid = controlnet_mid_block(h) * factor(count);
    if (m_config.globalPoolConditions) {
        for (auto& d : out.down) d = d.mean({2, 3}, true);
        out.mid = out.mid.mean({2, 3}, true);
    }
    return out;
}

} // namespace dd::nn
