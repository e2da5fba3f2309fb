#include "core/nn/unet_config.h"

#include "core/io/model_error.h"
#include "core/nn/config_value.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace dd::nn {
namespace {

const char* kUnetConfigFile = "unet/config.json";

[[noreturn]] void unsupported(const std::string& what) {
    throw io::ModelFileError(kUnetConfigFile, what + " is not supported by this UNet implementation");
}

// An int broadcast to every block, or a list that must have one entry per block.
std::vector<int64_t> perBlock(const nlohmann::json& j, const char* key, int64_t fallback, size_t blocks) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::vector<int64_t>(blocks, fallback);
    if (it->is_number_integer()) return std::vector<int64_t>(blocks, api::jsonAs<int64_t>(*it));
    if (!it->is_array() || it->size() != blocks || !std::all_of(it->begin(), it->end(), [](auto& v) { return v.is_number_integer(); }))
        throw io::ModelFileError(kUnetConfigFile, std::string("'") + key + "' must be an integer or a list of " +
                                              std::to_string(blocks) + " integers");
    return api::jsonAs<std::vector<int64_t>>(*it);
}

void requireNull(const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    if (it != j.end() && !it->is_null() && !(it->is_boolean() && !it->get<bool>())) unsupported(std::string("'") + key + "'");
}

void requireValue(const nlohmann::json& j, const char* key, const std::string& expected) {
    const auto v = configValue<std::string>(j, key, expected);
    if (v != expected) unsupported(std::string("'") + key + "' = \"" + v + "\"");
}

void checkSizes(const UNetConfig& c) {
    bool ok = plausibleSize(c.inChannels, 64) && plausibleSize(c.outChannels, 64);
    for (size_t i = 0; i < c.blockOutChannels.size(); ++i)
        ok = ok && plausibleSize(c.blockOutChannels[i]) && plausibleSize(c.layersPerBlock[i], 64) &&
             plausibleSize(c.crossAttentionDim[i]) && plausibleSize(c.transformerLayers[i], 64) &&
             c.reverseTransformerLayers[i] >= 0 && c.reverseTransformerLayers[i] <= 64;
    if (!ok) throw io::ModelFileError(kUnetConfigFile, "a channel count, layer count or cross_attention_dim is out of range");
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
        if (n == 0 || n > 8 || c.downBlockTypes.size() != n || c.upBlockTypes.size() != n)
            throw io::ModelFileError(kUnetConfigFile, "down_block_types, up_block_types and block_out_channels differ in length "
                                              "or are not 1 to 8 blocks");
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
                throw io::ModelFileError(kUnetConfigFile, "block_out_channels[" + std::to_string(i) + "] = " +
                                                      std::to_string(c.blockOutChannels[i]) + " is not divisible by " +
                                                      std::to_string(c.heads[i]) + " attention heads");
        checkSizes(c);
        c.useLinearProjection = configValue(j, "use_linear_projection", false);
        c.upcastAttention = configValue(j, "upcast_attention", false);
        c.flipSinToCos = configValue(j, "flip_sin_to_cos", true);
        c.freqShift = configValue<double>(j, "freq_shift", 0);
        c.normGroups = configValue<int64_t>(j, "norm_num_groups", 32);
        for (const auto ch : c.blockOutChannels)
            if (!plausibleSize(c.normGroups) || ch % c.normGroups != 0)
                throw io::ModelFileError(kUnetConfigFile, "norm_num_groups " + std::to_string(c.normGroups) +
                                                      " does not divide block_out_channels " + std::to_string(ch));
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
        throw io::ModelFileError(kUnetConfigFile, std::string("malformed: ") + e.what());
    }
}

} // namespace dd::nn
