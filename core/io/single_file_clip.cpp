// Text encoders of single-file checkpoints → transformers CLIPTextModel / CLIPTextModelWithProjection names.
// Ref: diffusers loaders/single_file_utils.py (convert_ldm_clip_checkpoint, convert_open_clip_checkpoint,
// SD_2_TEXT_ENCODER_KEYS_TO_IGNORE, DIFFUSERS_TO_LDM_MAPPING["openclip"]); sd_reference.md §2.4, §4.4.
// Output names always carry the "text_model." level as in the Hub's model.safetensors files (transformers
// >= 5.6 saves CLIPTextModel without it; the folder loader is expected to normalise to this form too).
#include "core/io/model_error.h"
#include "core/io/single_file_parts.h"

namespace dd::io::sf {
namespace {

bool ignoredAlways(std::string_view name) {
    return name.ends_with("position_ids") || name.ends_with("logit_scale") || name.ends_with("attn_mask");
}

// Head count is not stored; all CLIP text towers SD uses have 64-wide heads (sd_reference.md §2.4).
int64_t heads(int64_t hidden, std::vector<std::string>& notes) {
    if (hidden % 64 == 0) {
        notes.push_back("num_attention_heads derived from head size 64 (not stored in the weights)");
        return hidden / 64;
    }
    notes.push_back("num_attention_heads unknown: hidden size " + std::to_string(hidden) +
                    " is not a multiple of 64; wrote 1, pass configOverrides to set it");
    return 1;
}

nlohmann::json clipConfig(const char* architecture, int64_t vocab, int64_t hidden, int64_t positions, int layers,
                          int64_t intermediate, const char* act, std::vector<std::string>& notes) {
    return {{"architectures", {architecture}},
            {"model_type", "clip_text_model"},
            {"vocab_size", vocab},
            {"hidden_size", hidden},
            {"max_position_embeddings", positions},
            {"num_hidden_layers", layers},
            {"intermediate_size", intermediate},
            {"num_attention_heads", heads(hidden, notes)},
            {"hidden_act", act},
            {"layer_norm_eps", 1e-5},
            {"attention_dropout", 0.0},
            // Legacy ids as in the Hub configs; pooling must look for 49407 instead (sd_reference.md §2.4).
            {"bos_token_id", 0},
            {"eos_token_id", 2},
            {"pad_token_id", 1}};
}

const std::vector<std::pair<std::string_view, std::string_view>> kOpenClipLayer = {
    {"ln_1", "layer_norm1"}, {"ln_2", "layer_norm2"}, {"mlp.c_fc", "mlp.fc1"}, {"mlp.c_proj", "mlp.fc2"},
    {"attn.out_proj", "self_attn.out_proj"}};

// attn.in_proj_{weight,bias} stacks q, k, v along the first dimension.
void splitInProj(const KeyView& keys, const std::string& name, const std::string& layer, Component& c) {
    const torch::Tensor t = keys.file().tensor(name);
    if (t.size(0) % 3 != 0) fail(keys, "'" + name + "' has " + std::to_string(t.size(0)) + " rows, not 3 × width");
    const int64_t w = t.size(0) / 3;
    const std::string kind = name.ends_with("weight") ? "weight" : "bias";
    const char* proj[] = {"q_proj.", "k_proj.", "v_proj."};
    for (int i = 0; i < 3; ++i) c.tensors[layer + "self_attn." + proj[i] + kind] = t.narrow(0, i * w, w);
}

void mapOpenClipBlock(const KeyView& keys, const std::string& name, std::string_view rest, int keptLayers,
                      Component& c) {
    const auto p = splitDots(rest);
    const auto n = p.size() > 3 ? parseIndex(p[2]) : std::nullopt;
    if (!n) return c.unmapped.push_back(name);
    if (*n >= keptLayers) return;  // SD 2.x: the last block is never run
    const std::string layer = "text_model.encoder.layers." + std::string(p[2]) + ".";
    const std::string tail = joinDots(p, 3);
    if (tail == "attn.in_proj_weight" || tail == "attn.in_proj_bias") return splitInProj(keys, name, layer, c);
    if (auto renamed = renameHead(tail, kOpenClipLayer))
        c.tensors[layer + *renamed] = keys.file().tensor(name);
    else
        c.unmapped.push_back(name);
}

} // namespace

Component convertHfClip(const KeyView& keys, const std::string& prefix) {
    Component c;
    // Some very old SD 1.x files lack the "text_model." level.
    const bool nested = keys.hasPrefix(prefix + "text_model.");
    const std::string src = prefix + (nested ? "text_model." : "");
    const auto& tok = keys.shape(src + "embeddings.token_embedding.weight");
    if (tok.size() != 2) fail(keys, "'" + src + "embeddings.token_embedding.weight' is not a matrix");
    c.config = clipConfig("CLIPTextModel", tok[0], tok[1], keys.dim(src + "embeddings.position_embedding.weight", 0),
                          keys.countIndexed(src + "encoder.layers."),
                          keys.dim(src + "encoder.layers.0.mlp.fc1.weight", 0), "quick_gelu", c.notes);
    c.notes.push_back("hidden_act assumed quick_gelu (OpenAI CLIP ViT-L); the weights do not store it");
    for (const auto& name : keys.withPrefix(prefix)) {
        if (ignoredAlways(name)) continue;
        const std::string rest = name.substr(src.size());
        c.tensors["text_model." + rest] = keys.file().tensor(name);
    }
    return c;
}

Component convertOpenClip(const KeyView& keys, const std::string& prefix, bool sd2) {
    Component c;
    const auto& tok = keys.shape(prefix + "token_embedding.weight");
    if (tok.size() != 2) fail(keys, "'" + prefix + "token_embedding.weight' is not a matrix");
    const int blocks = keys.countIndexed(prefix + "transformer.resblocks.");
    const int kept = sd2 ? blocks - 1 : blocks;
    const std::string projection = prefix + "text_projection";
    c.config = clipConfig(sd2 ? "CLIPTextModel" : "CLIPTextModelWithProjection", tok[0], tok[1],
                          keys.dim(prefix + "positional_embedding", 0), kept,
                          keys.dim(prefix + "transformer.resblocks.0.mlp.c_fc.weight", 0), "gelu", c.notes);
    if (sd2)
        c.notes.push_back("dropped OpenCLIP block " + std::to_string(blocks - 1) +
                          " and text_projection: SD 2.x uses the penultimate layer");
    else
        c.config["projection_dim"] = keys.dim(projection, 1);
    for (const auto& name : keys.withPrefix(prefix)) {
        const std::string_view rest = std::string_view(name).substr(prefix.size());
        if (ignoredAlways(name)) continue;
        if (rest == "token_embedding.weight")
            c.tensors["text_model.embeddings.token_embedding.weight"] = keys.file().tensor(name);
        else if (rest == "positional_embedding")
            c.tensors["text_model.embeddings.position_embedding.weight"] = keys.file().tensor(name);
        else if (rest == "ln_final.weight" || rest == "ln_final.bias")
            c.tensors["text_model.final_layer_norm." + std::string(rest.substr(9))] = keys.file().tensor(name);
        else if (rest == "text_projection" && !sd2)
            c.tensors["text_projection.weight"] = keys.file().tensor(name).t().contiguous();  // x @ P → Linear
        else if (rest.starts_with("transformer.resblocks."))
            mapOpenClipBlock(keys, name, rest, kept, c);
        else if (rest != "text_projection")
            c.unmapped.push_back(name);
    }
    return c;
}

} // namespace dd::io::sf
