// Original ControlNet files as sd-webui-controlnet loads them (lllyasviel's control_v11*.safetensors, SDXL ones in
// the same layout): an LDM UNet encoder under "control_model." (or no prefix) plus input_hint_block, zero_convs and
// middle_block_out. Names go through the single-file loader's LDM → diffusers table; the config is derived from
// tensor shapes. Heads and the SDXL time-id width are not stored in the weights: the family's rule is written here
// and the engine replaces them by the UNet's own values (a ControlNet is a copy of its UNet's encoder).
// Ref: diffusers loaders/single_file_utils.py (convert_controlnet_checkpoint, create_controlnet_diffusers_config).
#include "core/io/controlnet_file.h"
#include "core/io/model_error.h"
#include "core/io/single_file_parts.h"

#include <algorithm>

namespace dd::io {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
    throw ModelFileError(path, "original ControlNet file: " + why);
}

} // namespace

std::optional<ControlNetFile> convertLdmControlNet(const std::string& path) {
    const auto file = SafetensorsFile::open(path);
    const sf::KeyView keys(*file);
    const std::string p = keys.hasPrefix("control_model.") ? "control_model." : "";
    if (!keys.hasPrefix(p + "input_hint_block.") || !keys.hasPrefix(p + "zero_convs.")) return std::nullopt;

    // Levels and layers per block, as the single-file UNet reader finds them.
    const auto in = [&](int i) { return p + "input_blocks." + std::to_string(i) + "."; };
    const int inputs = keys.countIndexed(p + "input_blocks.");
    int levels = 1;
    for (int i = 1; i < inputs; ++i) levels += keys.has(in(i) + "0.op.weight") ? 1 : 0;
    if (inputs < 2 || inputs % levels != 0) fail(path, "its input blocks are not an SD UNet encoder");
    const int L = inputs / levels - 1;
    std::vector<int64_t> channels;
    std::vector<std::string> types;
    std::vector<int> depth;
    std::string attn;  // one attention block, for the cross-attention width and the projection kind
    for (int b = 0; b < levels; ++b) {
        const std::string first = in(1 + b * (L + 1));
        channels.push_back(keys.dim(first + "0.out_layers.3.weight", 0));
        const bool hasAttn = keys.has(first + "1.proj_in.weight");
        types.push_back(hasAttn ? "CrossAttnDownBlock2D" : "DownBlock2D");
        depth.push_back(hasAttn ? keys.countIndexed(first + "1.transformer_blocks.") : 1);
        if (hasAttn && attn.empty()) attn = first + "1.";
    }
    const std::string mid = p + "middle_block.1.";
    if (!keys.has(mid + "proj_in.weight")) fail(path, "its middle block has no attention");
    if (attn.empty()) attn = mid;
    const int64_t cross = keys.dim(attn + "transformer_blocks.0.attn2.to_k.weight", 1);
    const bool xl = keys.has(p + "label_emb.0.0.weight");
    std::vector<int64_t> heads;
    for (const auto c : channels) heads.push_back(xl || cross == 1024 ? std::max<int64_t>(1, c / 64) : 8);

    // The hint encoder: convs at even indices (SiLU between them): conv_in, pairs (same width, stride 2), conv_out.
    std::vector<int> hint;
    for (int i = 0; i < 64; i += 2)
        if (keys.has(p + "input_hint_block." + std::to_string(i) + ".weight")) hint.push_back(i);
    if (hint.size() < 2 || hint.size() % 2 != 0) fail(path, "its input_hint_block is not conv, pairs of convs, conv");
    const auto hintName = [&](size_t k) { return p + "input_hint_block." + std::to_string(hint[k]) + "."; };
    std::vector<int64_t> embedding{keys.dim(hintName(0) + "weight", 0)};
    for (size_t k = 2; k + 1 < hint.size(); k += 2) embedding.push_back(keys.dim(hintName(k) + "weight", 0));

    ControlNetFile cn;
    cn.path = path;
    cn.weightsPath = path;
    cn.derivedConfig = true;
    cn.config = {{"_class_name", "ControlNetModel"},
                 {"in_channels", keys.dim(in(0) + "0.weight", 1)},
                 {"conditioning_channels", keys.dim(hintName(0) + "weight", 1)},
                 {"block_out_channels", channels},
                 {"down_block_types", types},
                 {"layers_per_block", L},
                 {"cross_attention_dim", cross},
                 {"transformer_layers_per_block", depth},
                 {"attention_head_dim", heads},
                 {"use_linear_projection", keys.shape(mid + "proj_in.weight").size() == 2},
                 {"conditioning_embedding_out_channels", embedding}};
    if (xl) {
        cn.config["addition_embed_type"] = "text_time";
        cn.config["addition_time_embed_dim"] = 256;
        cn.config["projection_class_embeddings_input_dim"] = keys.dim(p + "label_emb.0.0.weight", 1);
    }
    for (const auto& name : keys.withPrefix(p)) {
        const std::string_view key = std::string_view(name).substr(p.size());
        std::optional<std::string> mapped;
        const auto parts = sf::splitDots(key);
        if (parts.size() >= 3 && parts[0] == "input_hint_block") {
            const auto idx = sf::parseIndex(parts[1]);
            const auto k = idx ? std::find(hint.begin(), hint.end(), *idx) - hint.begin() : -1;
            if (k >= 0 && size_t(k) < hint.size()) {
                const std::string target = k == 0 ? "conv_in" : size_t(k) + 1 == hint.size()
                                                                    ? "conv_out"
                                                                    : "blocks." + std::to_string(k - 1);
                mapped = "controlnet_cond_embedding." + target + "." + sf::joinDots(parts, 2);
            }
        } else if (parts.size() >= 4 && parts[0] == "zero_convs" && parts[2] == "0") {
            mapped = "controlnet_down_blocks." + std::string(parts[1]) + "." + sf::joinDots(parts, 3);
        } else if (parts.size() >= 3 && parts[0] == "middle_block_out" && parts[1] == "0") {
            mapped = "controlnet_mid_block." + sf::joinDots(parts, 2);
        } else {
            mapped = sf::ldmUnetKeyToDiffusers(key, L);
        }
        if (!mapped) fail(path, "tensor '" + name + "' has no place in a ControlNetModel");
        if (!cn.weights.emplace(*mapped, file->tensor(name)).second)
            fail(path, "two tensors map to the same name '" + *mapped + "'");
    }
    return cn;
}

} // namespace dd::io
