// LDM AutoencoderKL (first_stage_model.* or vae.*) → diffusers AutoencoderKL names and config.
// Ref: diffusers loaders/single_file_utils.py (convert_ldm_vae_checkpoint, update_vae_attentions_ldm_to_diffusers,
// conv_attn_to_linear, create_vae_diffusers_config_from_ldm, LDM_VAE_DEFAULT_SCALING_FACTOR); sd_reference.md
// §2.3, §4.3. The decoder's levels are stored in reverse order in LDM files (up.0 is the last to run).
#include "core/io/model_error.h"
#include "core/io/single_file_parts.h"

namespace dd::io::sf {
namespace {

const std::vector<std::pair<std::string_view, std::string_view>> kVaeResnet = {
    {"norm1", "norm1"}, {"conv1", "conv1"}, {"norm2", "norm2"}, {"conv2", "conv2"}, {"nin_shortcut", "conv_shortcut"}};

// LDM's own q/k/v/proj_out and the names of diffusers' legacy VAE attention.
const std::vector<std::pair<std::string_view, std::string_view>> kAttention = {
    {"norm", "group_norm"}, {"q", "to_q"},         {"k", "to_k"},         {"v", "to_v"},
    {"proj_out", "to_out.0"}, {"query", "to_q"}, {"key", "to_k"}, {"value", "to_v"}, {"proj_attn", "to_out.0"}};

std::optional<std::string> vaeResnet(const std::string& target, std::string_view rest) {
    auto renamed = renameHead(rest, kVaeResnet);
    return renamed ? std::optional(target + *renamed) : std::nullopt;
}

std::optional<std::string> mapMid(const std::string& side, const std::vector<std::string_view>& p) {
    const std::string rest = joinDots(p, 3);
    if (p[2] == "block_1" || p[2] == "block_2")
        return vaeResnet(side + ".mid_block.resnets." + std::string(p[2] == "block_1" ? "0." : "1."), rest);
    if (p[2] != "attn_1") return std::nullopt;
    auto renamed = renameHead(rest, kAttention);
    return renamed ? std::optional(side + ".mid_block.attentions.0." + *renamed) : std::nullopt;
}

std::optional<std::string> mapLevel(const std::string& side, const std::vector<std::string_view>& p, int levels) {
    const auto i = parseIndex(p[2]);
    if (!i || *i >= levels || p.size() < 5) return std::nullopt;
    const bool encoder = side == "encoder";
    const std::string target =
        side + (encoder ? ".down_blocks." : ".up_blocks.") + std::to_string(encoder ? *i : levels - 1 - *i) + ".";
    if (p[3] == "block") {
        const auto j = parseIndex(p[4]);
        return j ? vaeResnet(target + "resnets." + std::string(p[4]) + ".", joinDots(p, 5)) : std::nullopt;
    }
    if (p[3] == (encoder ? "downsample" : "upsample") && p[4] == "conv")
        return target + (encoder ? "downsamplers.0." : "upsamplers.0.") + joinDots(p, 4);
    return std::nullopt;
}

std::optional<std::string> mapVaeKey(std::string_view key, int levels) {
    const auto p = splitDots(key);
    if (p.size() == 2 && (p[0] == "quant_conv" || p[0] == "post_quant_conv")) return std::string(key);
    if (p.size() < 3 || (p[0] != "encoder" && p[0] != "decoder")) return std::nullopt;
    const std::string side(p[0]);
    if (p.size() == 3 && (p[1] == "conv_in" || p[1] == "conv_out")) return std::string(key);
    if (p.size() == 3 && p[1] == "norm_out") return side + ".conv_norm_out." + std::string(p[2]);
    if (p[1] == "mid" && p.size() >= 4) return mapMid(side, p);
    if ((p[1] == "down" && side == "encoder") || (p[1] == "up" && side == "decoder")) return mapLevel(side, p, levels);
    return std::nullopt;
}

std::string findPrefix(const KeyView& keys) {
    for (const char* prefix : {"first_stage_model.", "vae."})
        if (keys.has(std::string(prefix) + "decoder.conv_in.weight")) return prefix;
    return {};
}

nlohmann::json deriveVaeConfig(const KeyView& keys, const std::string& v, ModelFamily family,
                            std::vector<std::string>& notes) {
    const int levels = keys.countIndexed(v + "encoder.down.");
    if (levels == 0 || keys.countIndexed(v + "decoder.up.") != levels)
        fail(keys, "VAE encoder and decoder have different numbers of levels");
    std::vector<int64_t> channels;
    for (int i = 0; i < levels; ++i)
        channels.push_back(keys.dim(v + "encoder.down." + std::to_string(i) + ".block.0.conv2.weight", 0));
    const bool xl = family == ModelFamily::SDXL || family == ModelFamily::SDXLRefiner;
    const int sample = family == ModelFamily::SD1 ? 512 : family == ModelFamily::SD2 ? 768 : 1024;
    const double scaling = xl ? 0.13025 : 0.18215;
    notes.push_back("scaling_factor " + std::string(xl ? "0.13025" : "0.18215") + " and sample_size " +
                    std::to_string(sample) + " are the " + std::string(familyName(family)) + " defaults");
    return {{"_class_name", "AutoencoderKL"},
            {"in_channels", keys.dim(v + "encoder.conv_in.weight", 1)},
            {"out_channels", keys.dim(v + "decoder.conv_out.weight", 0)},
            {"down_block_types", std::vector<std::string>(size_t(levels), "DownEncoderBlock2D")},
            {"up_block_types", std::vector<std::string>(size_t(levels), "UpDecoderBlock2D")},
            {"block_out_channels", channels},
            {"layers_per_block", keys.countIndexed(v + "encoder.down.0.block.")},
            {"latent_channels", keys.dim(v + "decoder.conv_in.weight", 1)},
            {"norm_num_groups", 32},
            {"act_fn", "silu"},
            {"sample_size", sample},
            {"scaling_factor", scaling},
            {"force_upcast", true},
            {"use_quant_conv", keys.has(v + "quant_conv.weight")},
            {"use_post_quant_conv", keys.has(v + "post_quant_conv.weight")},
            {"mid_block_add_attention", keys.hasPrefix(v + "decoder.mid.attn_1.")}};
}

} // namespace

std::optional<Component> convertVae(const KeyView& keys, ModelFamily family) {
    const std::string prefix = findPrefix(keys);
    if (prefix.empty()) return std::nullopt;
    Component c;
    c.config = deriveVaeConfig(keys, prefix, family, c.notes);
    const int levels = c.config["block_out_channels"].size();
    for (const auto& name : keys.withPrefix(prefix)) {
        const auto mapped = mapVaeKey(std::string_view(name).substr(prefix.size()), levels);
        if (!mapped) {
            c.unmapped.push_back(name);
            continue;
        }
        torch::Tensor t = keys.file().tensor(name);
        // LDM's mid-block attention uses 1×1 convolutions, diffusers Linear layers: same numbers.
        if (mapped->find(".attentions.0.to_") != std::string::npos && t.dim() > 2) t = t.flatten(1);
        if (!c.tensors.emplace(*mapped, t).second) fail(keys, "two VAE tensors map to the same name '" + *mapped + "'");
    }
    return c;
}

} // namespace dd::io::sf
