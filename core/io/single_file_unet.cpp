// LDM UNet (model.diffusion_model.*) → diffusers UNet2DConditionModel names and config.
// Ref: diffusers loaders/single_file_utils.py (convert_ldm_unet_checkpoint, create_unet_diffusers_config_from_ldm,
// DIFFUSERS_TO_LDM_MAPPING["unet"]); sd_reference.md §2.2, §4.2. Unlike diffusers, which reads the
// architecture from the LDM yaml, the config is derived from tensor shapes (as stable-diffusion.cpp's
// UNetConfig::detect_from_weights does); only head counts, sample size and upcasting come from family defaults.
#include "core/io/model_error.h"
#include "core/io/single_file_parts.h"

namespace dd::io::sf {
namespace {

const std::vector<std::pair<std::string_view, std::string_view>> kFixed = {
    {"time_embed.0", "time_embedding.linear_1"}, {"time_embed.2", "time_embedding.linear_2"},
    {"input_blocks.0.0", "conv_in"},             {"out.0", "conv_norm_out"},
    {"out.2", "conv_out"},                       {"label_emb.0.0", "add_embedding.linear_1"},
    {"label_emb.0.2", "add_embedding.linear_2"}};

const std::vector<std::pair<std::string_view, std::string_view>> kResnet = {
    {"in_layers.0", "norm1"}, {"in_layers.2", "conv1"},  {"emb_layers.1", "time_emb_proj"},
    {"out_layers.0", "norm2"}, {"out_layers.3", "conv2"}, {"skip_connection", "conv_shortcut"}};

std::optional<std::string> resnet(const std::string& target, std::string_view rest) {
    auto renamed = renameHead(rest, kResnet);
    return renamed ? std::optional(target + *renamed) : std::nullopt;
}

std::optional<std::string> mapInput(int i, int j, std::string_view rest, int L) {
    if (i < 1) return std::nullopt;
    const std::string b = std::to_string((i - 1) / (L + 1));
    const std::string r = std::to_string((i - 1) % (L + 1));
    if (j == 0 && rest.starts_with("op."))
        return "down_blocks." + b + ".downsamplers.0.conv." + std::string(rest.substr(3));
    if (j == 0) return resnet("down_blocks." + b + ".resnets." + r + ".", rest);
    if (j == 1) return "down_blocks." + b + ".attentions." + r + "." + std::string(rest);
    return std::nullopt;
}

std::optional<std::string> mapOutput(int i, int j, std::string_view rest, int L) {
    const std::string b = std::to_string(i / (L + 1));
    const std::string r = std::to_string(i % (L + 1));
    if (j == 0) return resnet("up_blocks." + b + ".resnets." + r + ".", rest);
    if ((j == 1 || j == 2) && rest.starts_with("conv."))
        return "up_blocks." + b + ".upsamplers.0." + std::string(rest);
    if (j == 1) return "up_blocks." + b + ".attentions." + r + "." + std::string(rest);
    return std::nullopt;
}

std::optional<std::string> mapKey(std::string_view key, int L) {
    if (auto fixed = renameHead(key, kFixed)) return fixed;
    const auto p = splitDots(key);
    if (p.size() < 4) return std::nullopt;
    const auto i = parseIndex(p[1]);
    if (!i) return std::nullopt;
    if (p[0] == "middle_block") {
        if (*i == 1) return "mid_block.attentions.0." + joinDots(p, 2);
        if (*i == 0 || *i == 2) return resnet("mid_block.resnets." + std::to_string(*i / 2) + ".", joinDots(p, 2));
        return std::nullopt;
    }
    const auto j = parseIndex(p[2]);
    if (!j) return std::nullopt;
    if (p[0] == "input_blocks") return mapInput(*i, *j, joinDots(p, 3), L);
    if (p[0] == "output_blocks") return mapOutput(*i, *j, joinDots(p, 3), L);
    return std::nullopt;
}

struct Layout {
    int levels = 0;
    int layersPerBlock = 0;
    std::vector<int64_t> channels;
    std::vector<bool> downAttn, upAttn;
    std::vector<int> depth;  // transformer blocks per down level (1 where the level has no attention)
};

std::string in(int i) { return std::string(kUnetPrefix) + "input_blocks." + std::to_string(i) + "."; }
std::string out(int i) { return std::string(kUnetPrefix) + "output_blocks." + std::to_string(i) + "."; }

Layout readLayout(const KeyView& keys) {
    Layout l;
    const int inputs = keys.countIndexed(std::string(kUnetPrefix) + "input_blocks.");
    l.levels = 1;
    for (int i = 1; i < inputs; ++i) l.levels += keys.has(in(i) + "0.op.weight") ? 1 : 0;
    if (inputs < 2 || inputs % l.levels != 0)
        fail(keys, "UNet has " + std::to_string(inputs) + " input blocks and " + std::to_string(l.levels) +
                       " resolution levels, which is not an SD UNet layout");
    l.layersPerBlock = inputs / l.levels - 1;
    const int L = l.layersPerBlock;
    for (int b = 0; b < l.levels; ++b) {
        const std::string first = in(1 + b * (L + 1));
        l.channels.push_back(keys.dim(first + "0.out_layers.3.weight", 0));
        l.downAttn.push_back(keys.has(first + "1.proj_in.weight"));
        l.upAttn.push_back(keys.has(out(b * (L + 1)) + "1.proj_in.weight"));
        l.depth.push_back(l.downAttn.back() ? keys.countIndexed(first + "1.transformer_blocks.") : 1);
    }
    return l;
}

nlohmann::json intOrList(const std::vector<int>& v) {
    for (int x : v)
        if (x != v.front()) return v;
    return v.front();
}

// Heads are not stored in the weights (q/k/v are full-width matrices): SD 1.x uses 8 heads everywhere,
// SD 2.x and SDXL a head size of 64 (sd_reference.md §2.2).
nlohmann::json headCounts(const Layout& l, ModelFamily family, std::vector<std::string>& notes) {
    if (family == ModelFamily::SD1) {
        notes.push_back("attention_head_dim assumed 8 heads (SD 1.x); the weights do not store it");
        return 8;
    }
    std::vector<int> heads;
    bool exact = true;
    for (int64_t c : l.channels) {
        exact = exact && c % 64 == 0;
        heads.push_back(int(std::max<int64_t>(1, c / 64)));
    }
    notes.push_back(exact ? "attention_head_dim derived from the family's head size 64 (not stored in the weights)"
                          : "attention_head_dim unknown: block widths are not multiples of the family's head "
                            "size 64; wrote 1 head where the width is below 64, pass configOverrides to set it");
    return heads;
}

void addEmbedding(nlohmann::json& c, const KeyView& keys, ModelFamily family, std::optional<int64_t> pooledDim,
                  std::vector<std::string>& notes) {
    const std::string w = std::string(kUnetPrefix) + "label_emb.0.0.weight";
    if (!keys.has(w)) return;
    if (family != ModelFamily::SDXL && family != ModelFamily::SDXLRefiner)
        fail(keys, "UNet has a class embedding (label_emb) but the file is " + std::string(familyName(family)) +
                       "; class-conditioned UNets (e.g. unCLIP) are not supported");
    const int64_t adm = keys.dim(w, 1);
    const int timeIds = family == ModelFamily::SDXL ? 6 : 5;  // refiner: size, crop, aesthetic score
    int64_t timeDim = 256;
    if (pooledDim && *pooledDim > 0 && (adm - *pooledDim) > 0 && (adm - *pooledDim) % timeIds == 0)
        timeDim = (adm - *pooledDim) / timeIds;
    else
        notes.push_back("addition_time_embed_dim assumed 256 (no pooled text projection to derive it from)");
    c["addition_embed_type"] = "text_time";
    c["addition_time_embed_dim"] = timeDim;
    c["projection_class_embeddings_input_dim"] = adm;
}

void familyDefaults(nlohmann::json& c, ModelFamily family, std::vector<std::string>& notes) {
    const int sample = family == ModelFamily::SD1 ? 64 : family == ModelFamily::SD2 ? 96 : 128;
    c["sample_size"] = sample;
    c["upcast_attention"] = family == ModelFamily::SD2;
    notes.push_back("sample_size " + std::to_string(sample) + " is the " + std::string(familyName(family)) +
                    " default" + (family == ModelFamily::SD2 ? "; upcast_attention true as for SD 2.1" : ""));
}

nlohmann::json deriveConfig(const KeyView& keys, const Layout& l, ModelFamily family,
                            std::optional<int64_t> pooledDim, std::vector<std::string>& notes) {
    const std::string p(kUnetPrefix);
    const std::string mid = p + "middle_block.1.";
    if (!keys.has(mid + "proj_in.weight")) fail(keys, "UNet middle block has no attention; not an SD UNet");
    std::vector<std::string> down, up;
    for (int b = 0; b < l.levels; ++b) {
        down.push_back(l.downAttn[size_t(b)] ? "CrossAttnDownBlock2D" : "DownBlock2D");
        up.push_back(l.upAttn[size_t(b)] ? "CrossAttnUpBlock2D" : "UpBlock2D");
    }
    const std::string attn = mid + "transformer_blocks.0.";
    nlohmann::json c = {{"_class_name", "UNet2DConditionModel"},
                        {"in_channels", keys.dim(p + "input_blocks.0.0.weight", 1)},
                        {"out_channels", keys.dim(p + "out.2.weight", 0)},
                        {"block_out_channels", l.channels},
                        {"layers_per_block", l.layersPerBlock},
                        {"down_block_types", down},
                        {"up_block_types", up},
                        {"mid_block_type", "UNetMidBlock2DCrossAttn"},
                        {"cross_attention_dim", keys.dim(attn + "attn2.to_k.weight", 1)},
                        {"use_linear_projection", keys.shape(mid + "proj_in.weight").size() == 2},
                        {"transformer_layers_per_block", intOrList(l.depth)},
                        {"attention_head_dim", headCounts(l, family, notes)},
                        {"addition_embed_type", nullptr},
                        {"norm_num_groups", 32},
                        {"norm_eps", 1e-5},
                        {"act_fn", "silu"},
                        {"flip_sin_to_cos", true},
                        {"freq_shift", 0}};
    if (keys.countIndexed(mid + "transformer_blocks.") != l.depth.back())
        fail(keys, "UNet middle block depth differs from the last level's; diffusers cannot express this");
    if (c["in_channels"] != 4) notes.push_back("UNet takes " + c["in_channels"].dump() + " input channels (inpainting "
                                               "or instruct-pix2pix model)");
    addEmbedding(c, keys, family, pooledDim, notes);
    familyDefaults(c, family, notes);
    return c;
}

} // namespace

std::optional<std::string> ldmUnetKeyToDiffusers(std::string_view key, int layersPerBlock) {
    return mapKey(key, layersPerBlock);
}

Component convertUnet(const KeyView& keys, ModelFamily family, std::optional<int64_t> pooledDim) {
    Component c;
    const Layout layout = readLayout(keys);
    c.config = deriveConfig(keys, layout, family, pooledDim, c.notes);
    for (const auto& name : keys.withPrefix(kUnetPrefix)) {
        const auto mapped = mapKey(std::string_view(name).substr(kUnetPrefix.size()), layout.layersPerBlock);
        if (!mapped) {
            c.unmapped.push_back(name);
            continue;
        }
        if (!c.tensors.emplace(*mapped, keys.file().tensor(name)).second)
            fail(keys, "two UNet tensors map to the same name '" + *mapped + "'");
    }
    return c;
}

} // namespace dd::io::sf
