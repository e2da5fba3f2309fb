#include "core/nn/controlnet_config.h"

#include "core/io/model_error.h"
#include "core/nn/config_value.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dd::nn {
namespace {

struct Reader {
    const nlohmann::json& j;
    const std::string& source;

    [[noreturn]] void unsupported(const std::string& what) const {
        throw io::ModelFileError(source, what + " is not supported by this ControlNet implementation");
    }
    // An int broadcast to every block, or a list with one entry per block.
    std::vector<int64_t> perBlock(const char* key, int64_t fallback, size_t blocks) const {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return std::vector<int64_t>(blocks, fallback);
        if (it->is_number_integer()) return std::vector<int64_t>(blocks, api::jsonAs<int64_t>(*it));
        if (!it->is_array() || it->size() != blocks ||
            !std::all_of(it->begin(), it->end(), [](auto& v) { return v.is_number_integer(); }))
            throw io::ModelFileError(source, std::string("'") + key + "' must be an integer or a list of " +
                                                 std::to_string(blocks) + " integers");
        return api::jsonAs<std::vector<int64_t>>(*it);
    }
    void requireValue(const char* key, const std::string& expected) const {
        const auto v = configValue<std::string>(j, key, expected);
        if (v != expected) unsupported(std::string("'") + key + "' = \"" + v + "\"");
    }
    void requireUnset(const char* key) const {
        const auto it = j.find(key);
        if (it != j.end() && !it->is_null() && !(it->is_boolean() && !it->get<bool>())) unsupported(std::string("'") + key + "'");
    }
};

} // namespace

int64_t ControlNetConfig::downResiduals() const {
    int64_t n = 1;
    for (size_t i = 0; i < layersPerBlock.size(); ++i) n += layersPerBlock[i] + (i + 1 < layersPerBlock.size() ? 1 : 0);
    return n;
}

ControlNetConfig ControlNetConfig::fromJson(const nlohmann::json& j, const std::string& source) {
    const Reader r{j, source};
    try {
        if (!j.is_object()) throw io::ModelFileError(source, "not a JSON object");
        ControlNetConfig c;
        c.inChannels = configValue<int64_t>(j, "in_channels", 4);
        c.conditioningChannels = configValue<int64_t>(j, "conditioning_channels", 3);
        c.blockOutChannels = configValue(j, "block_out_channels", c.blockOutChannels);
        c.downBlockTypes = configValue(j, "down_block_types", std::vector<std::string>{"CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                                                                   "CrossAttnDownBlock2D", "DownBlock2D"});
        const size_t n = c.blockOutChannels.size();
        if (n == 0 || n > 8 || c.downBlockTypes.size() != n)
            throw io::ModelFileError(source, "down_block_types and block_out_channels differ in length or are not 1 to 8 blocks");
        for (const auto& t : c.downBlockTypes)
            if (t != "CrossAttnDownBlock2D" && t != "DownBlock2D") r.unsupported("down block type '" + t + "'");
        // diffusers: heads = num_attention_heads or attention_head_dim (the old misnomer).
        const bool namedHeads = j.contains("num_attention_heads") && !j["num_attention_heads"].is_null();
        c.heads = r.perBlock(namedHeads ? "num_attention_heads" : "attention_head_dim", 8, n);
        c.layersPerBlock = r.perBlock("layers_per_block", 2, n);
        c.crossAttentionDim = r.perBlock("cross_attention_dim", 1280, n);
        c.transformerLayers = r.perBlock("transformer_layers_per_block", 1, n);
        c.embeddingChannels = configValue(j, "conditioning_embedding_out_channels", c.embeddingChannels);
        c.normGroups = configValue<int64_t>(j, "norm_num_groups", 32);
        bool ok = plausibleSize(c.inChannels, 64) && plausibleSize(c.conditioningChannels, 64) && plausibleSize(c.normGroups) &&
                  !c.embeddingChannels.empty() && c.embeddingChannels.size() <= 8;
        for (const auto e : c.embeddingChannels) ok = ok && plausibleSize(e);
        for (size_t i = 0; i < n; ++i)
            ok = ok && plausibleSize(c.blockOutChannels[i]) && plausibleSize(c.layersPerBlock[i], 64) &&
                 plausibleSize(c.crossAttentionDim[i]) && plausibleSize(c.transformerLayers[i], 64) &&
                 plausibleSize(c.heads[i]) && c.blockOutChannels[i] % c.heads[i] == 0 &&
                 c.blockOutChannels[i] % c.normGroups == 0;
        if (!ok)
            throw io::ModelFileError(source, "a channel count, layer count, head count, group count or "
                                             "cross_attention_dim is out of range or does not divide the channels");
        c.useLinearProjection = configValue(j, "use_linear_projection", false);
        c.upcastAttention = configValue(j, "upcast_attention", false);
        c.flipSinToCos = configValue(j, "flip_sin_to_cos", true);
        c.freqShift = configValue<double>(j, "freq_shift", 0);
        c.normEps = configValue(j, "norm_eps", 1e-5);
        c.downsamplePadding = configValue<int64_t>(j, "downsample_padding", 1);
        c.midBlockScaleFactor = configValue<double>(j, "mid_block_scale_factor", 1);
        c.additionEmbedType = configValue<std::string>(j, "addition_embed_type", "");
        if (!c.additionEmbedType.empty() && c.additionEmbedType != "text_time")
            r.unsupported("addition_embed_type \"" + c.additionEmbedType + "\"");
        c.additionTimeEmbedDim = configValue<int64_t>(j, "addition_time_embed_dim", 0);
        c.projectionClassEmbeddingsInputDim = configValue<int64_t>(j, "projection_class_embeddings_input_dim", 0);
        if (c.additionEmbedType == "text_time" &&
            (!plausibleSize(c.additionTimeEmbedDim) || !plausibleSize(c.projectionClassEmbeddingsInputDim)))
            throw io::ModelFileError(source, "addition_embed_type \"text_time\" needs addition_time_embed_dim and "
                                             "projection_class_embeddings_input_dim");
        const auto order = configValue<std::string>(j, "controlnet_conditioning_channel_order", "rgb");
        if (order != "rgb" && order != "bgr") r.unsupported("controlnet_conditioning_channel_order \"" + order + "\"");
        c.bgr = order == "bgr";
        c.globalPoolConditions = configValue(j, "global_pool_conditions", false);
        r.requireValue("mid_block_type", "UNetMidBlock2DCrossAttn");
        r.requireValue("act_fn", "silu");
        r.requireValue("resnet_time_scale_shift", "default");
        for (const char* key : {"class_embed_type", "num_class_embeds", "encoder_hid_dim", "encoder_hid_dim_type",
                                "only_cross_attention"})
            r.requireUnset(key);
        return c;
    } catch (const nlohmann::json::exception& e) {
        throw io::ModelFileError(source, std::string("malformed: ") + e.what());
    }
}

} // namespace dd::nn
