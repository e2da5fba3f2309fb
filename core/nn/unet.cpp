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
namespace {

const char* kSource = "unet/config.json";

[[noreturn]] void unsupported(const std::string& what) {
    throw io::ModelFileError(kSource, what + " is not supported by this UNet implementation");
}

// An int broadcast to every block, or a list that must have one entry per block.
std::vector<int64_t> perBlock(const nlohmann::json& j, const char* key, int64_t fallback, size_t blocks) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::vector<int64_t>(blocks, fallback);
    if (it->is_number_integer()) return std::vector<int64_t>(blocks, it->get<int64_t>());
    if (!it->is_array() || it->size() != blocks || !std::all_of(it->begin(), it->end(), [](auto& v) { return v.is_number_integer(); }))
        throw io::ModelFileError(kSource, std::string("'") + key + "' must be an integer or a list of " +
                                              std::to_string(blocks) + " integers");
    return it->get<std::vector<int64_t>>();
}

void requireNull(const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    if (it != j.end() && !it->is_null() && !(it->is_boolean() && !it->get<bool>())) unsupported(std::string("'") + key + "'");
}

void requireValue(const nlohmann::json& j, const char* key, const std::string& expected) {
    const auto v = configValue<std::string>(j, key, expected);
    if (v != expected) unsupported(std::string("'") + key + "' = \"" + v + "\"");
}

} // namespace

UNetConfig UNetConfig::fromJson(const nlohmann::json& j) {
    try {
        UNetConfig c;
        c.inChannels = configValue<int64_t>(j, "in_channels", 4);
        c.outChannels = configValue<int64_t>(j, "out_channels", 4);
        c.blockOutChannels = configValue(j, "block_out_channels", c.blockOutChannels);
        c.downBlockTypes = configValue(j, "down_block_types", std::vector<std::string>{"CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                                                                   "CrossAttnDownBlock2D", "DownBlock2D"});
        c.upBlockTypes = configValue(j, "up_block_types", std::vector<std::string>{"UpBlock2D", "CrossAttnUpBlock2D",
                                                                               "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"});
        const size_t n = c.blockOutChannels.size();
        if (c.downBlockTypes.size() != n || c.upBlockTypes.size() != n)
            throw io::ModelFileError(kSource, "down_block_types, up_block_types and block_out_channels differ in length");
        for (const auto& t : c.downBlockTypes)
            if (t != "CrossAttnDownBlock2D" && t != "DownBlock2D") unsupported("down block type '" + t + "'");
        for (const auto& t : c.upBlockTypes)
            if (t != "CrossAttnUpBlock2D" && t != "UpBlock2D") unsupported("up block type '" + t + "'");
        if (j.contains("num_attention_heads") && !j["num_attention_heads"].is_null())
            unsupported("'num_attention_heads' (diffusers refuses it too; heads come from 'attention_head_dim')");
        c.layersPerBlock = perBlock(j, "layers_per_block", 2, n);
        c.heads = perBlock(j, "attention_head_dim", 8, n);
        c.crossAttentionDim = perBlock(j, "cross_attention_dim", 1280, n);
        c.transformerLayers = perBlock(j, "transformer_layers_per_block", 1, n);
        c.reverseTransformerLayers = perBlock(j, "reverse_transformer_layers_per_block", 0, n);
        if (j.value("reverse_transformer_layers_per_block", nlohmann::json()).is_null())
            c.reverseTransformerLayers.assign(c.transformerLayers.rbegin(), c.transformerLayers.rend());
        for (size_t i = 0; i < n; ++i)
            if (c.heads[i] <= 0 || c.blockOutChannels[i] % c.heads[i] != 0)
                throw io::ModelFileError(kSource, "block_out_channels[" + std::to_string(i) + "] = " +
                                                      std::to_string(c.blockOutChannels[i]) + " is not divisible by " +
                                                      std::to_string(c.heads[i]) + " attention heads");
        c.useLinearProjection = configValue(j, "use_linear_projection", false);
        c.upcastAttention = configValue(j, "upcast_attention", false);
        c.flipSinToCos = configValue(j, "flip_sin_to_cos", true);
        c.freqShift = configValue<double>(j, "freq_shift", 0);
        c.normGroups = configValue<int64_t>(j, "norm_num_groups", 32);
        c.normEps = configValue(j, "norm_eps", 1e-5);
        c.downsamplePadding = configValue<int64_t>(j, "downsample_padding", 1);
        c.midBlockScaleFactor = configValue<double>(j, "mid_block_scale_factor", 1);
        c.timeCondProjDim = configValue<int64_t>(j, "time_cond_proj_dim", 0);
        c.additionEmbedType = configValue<std::string>(j, "addition_embed_type", "");
        if (!c.additionEmbedType.empty() && c.additionEmbedType != "text_time")
            unsupported("addition_embed_type \"" + c.additionEmbedType + "\"");
        c.additionTimeEmbedDim = configValue<int64_t>(j, "addition_time_embed_dim", 0);
        c.projectionClassEmbeddingsInputDim = configValue<int64_t>(j, "projection_class_embeddings_input_dim", 0);
        c.sampleSize = configValue<int64_t>(j, "sample_size", 64);
        requireValue(j, "mid_block_type", "UNetMidBlock2DCrossAttn");
        requireValue(j, "act_fn", "silu");
        requireValue(j, "time_embedding_type", "positional");
        requireValue(j, "resnet_time_scale_shift", "default");
        requireValue(j, "attention_type", "default");
        for (const char* key : {"class_embed_type", "encoder_hid_dim_type", "time_embedding_act_fn", "timestep_post_act",
                                "cross_attention_norm", "only_cross_attention", "dual_cross_attention",
                                "resnet_skip_time_act", "center_input_sample", "time_embedding_dim", "class_embeddings_concat"})
            requireNull(j, key);
        if (configValue<double>(j, "resnet_out_scale_factor", 1.0) != 1.0) unsupported("'resnet_out_scale_factor' other than 1");
        if (configValue<int64_t>(j, "conv_in_kernel", 3) != 3 || configValue<int64_t>(j, "conv_out_kernel", 3) != 3)
            unsupported("conv_in_kernel / conv_out_kernel other than 3");
        return c;
    } catch (const nlohmann::json::exception& e) {
        throw io::ModelFileError(kSource, std::string("malformed: ") + e.what());
    }
}

UNet2DConditionModelImpl::UNet2DConditionModelImpl(const UNetConfig& c, AttentionOptions attention) : m_config(c) {
    const auto& ch = c.blockOutChannels;
    const size_t n = ch.size();
    const int64_t timeDim = ch[0] * 4;
    conv_in = register_module("conv_in", LoraConv2d(torch::nn::Conv2dOptions(c.inChannels, ch[0], 3).padding(1)));
    time_embedding = register_module("time_embedding", TimestepEmbedding(ch[0], timeDim, c.timeCondProjDim));
    if (c.additionEmbedType == "text_time")
        add_embedding = register_module("add_embedding", TimestepEmbedding(c.projectionClassEmbeddingsInputDim, timeDim));

    auto blockConfig = [&](size_t i, int64_t layers) {
        UNetBlockConfig b;
        b.tembChannels = timeDim;
        b.layers = layers;
        b.groups = c.normGroups;
        b.eps = c.normEps;
        b.downsamplePadding = c.downsamplePadding;
        b.attention.heads = c.heads[i];
        b.attention.crossAttentionDim = c.crossAttentionDim[i];
        b.attention.useLinearProjection = c.useLinearProjection;
        b.attention.upcastAttention = c.upcastAttention;
        return b;
    };

    down_blocks = register_module("down_blocks", torch::nn::ModuleList());
    for (size_t i = 0; i < n; ++i) {
        auto b = blockConfig(i, c.layersPerBlock[i]);
        b.inChannels = i == 0 ? ch[0] : ch[i - 1];
        b.outChannels = ch[i];
        b.crossAttention = c.downBlockTypes[i] == "CrossAttnDownBlock2D";
        b.addSampler = i + 1 < n;
        b.attention.layers = c.transformerLayers[i];
        down_blocks->push_back(UNetDownBlock(b));
    }

    auto mid = blockConfig(n - 1, 1);
    mid.inChannels = mid.outChannels = ch[n - 1];
    mid.outputScaleFactor = c.midBlockScaleFactor;
    mid.attention.layers = c.transformerLayers[n - 1];
    mid_block = register_module("mid_block", UNetMidBlock(mid));

    up_blocks = register_module("up_blocks", torch::nn::ModuleList());
    for (size_t i = 0; i < n; ++i) {
        const size_t r = n - 1 - i;  // index into the per-down-block lists, reversed
        auto b = blockConfig(r, c.layersPerBlock[r] + 1);
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
                                    torch::nn::GroupNorm(torch::nn::GroupNormOptions(c.normGroups, ch[0]).eps(c.normEps)));
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
                                                const torch::Tensor& timestepCond) {
    TORCH_CHECK(sample.dim() == 4 && sample.size(1) == m_config.inChannels, "UNet: sample must be [B, ",
                m_config.inChannels, ", H, W], got ", sample.sizes());
    const int64_t factor = int64_t(1) << m_numUpsamplers;
    const bool forwardUpsampleSize = sample.size(2) % factor != 0 || sample.size(3) % factor != 0;

    const auto emb = timeEmbedding(sample, timestep, added, timestepCond);
    auto h = conv_in(sample);
    std::vector<torch::Tensor> skips{h};
    for (const auto& block : *down_blocks) h = block->as<UNetDownBlock>()->forward(h, emb, encoderHiddenStates, skips);
    h = mid_block(h, emb, encoderHiddenStates);
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
