#pragma once
// LoRA .safetensors files in the two layouts in circulation, read into one normalised list of layers:
//  - kohya / A1111: "lora_unet_<module>", "lora_te_" (SD 1.x/2.x), "lora_te1_" / "lora_te2_" (SDXL), each with
//    ".lora_down.weight", ".lora_up.weight" and an optional ".alpha"; module names with "_" for "." (SD 1.x in
//    diffusers' layout, SDXL in the LDM layout: input_blocks / middle_block / output_blocks).
//  - diffusers / PEFT: "unet.<module>.lora_A.weight" / ".lora_B.weight", "text_encoder.", "text_encoder_2.";
//    lora_alpha / r from the "lora_adapter_metadata" JSON diffusers writes (alpha = rank when absent); the older
//    attention-processor spelling "<attn>.processor.to_q_lora.down.weight" and ".lora.down.weight" too.
// Which model module a layer names is decided by core/nn/lora.h (it knows the networks' own names).
// Ref: diffusers loaders/lora_conversion_utils.py (_convert_non_diffusers_lora_to_diffusers),
// loaders/lora_base.py (LORA_ADAPTER_METADATA_KEY), kohya-ss sd-scripts networks/lora.py.
#include "core/io/safetensors.h"

#include <string>
#include <vector>

namespace dd::io {

enum class LoraComponent { Unet, TextEncoder, TextEncoder2 };
const char* loraComponentName(LoraComponent c);  // "unet", "text_encoder", "text_encoder_2"

struct LoraLayer {
    LoraComponent component = LoraComponent::Unet;
    // The module as the file names it: a dotted diffusers/transformers name ("down_blocks.1.attentions.0.
    // transformer_blocks.0.attn1.to_q") or, when `kohya`, kohya's underscore name ("down_blocks_1_attentions_0_…"
    // or LDM "input_blocks_4_1_…").
    std::string module;
    bool kohya = false;
    torch::Tensor down, up;  // [r, in(, k, k)] and [out, r(, 1, 1)], as stored
    double alpha = 0;        // scale = weight · alpha / rank
    int64_t rank() const { return down.size(0); }
};

struct LoraFile {
    std::string path;
    std::vector<LoraLayer> layers;
    // Keys that are not plain LoRA (LyCORIS LoHa/LoKr, DoRA scales, CP-decomposed mids, stray tensors): skipped,
    // listed for the warning.
    std::vector<std::string> unknownKeys;
};

// Throws ModelFileError naming the file: not a safetensors file, no LoRA layer at all, a layer without its
// down or up matrix, ranks that disagree, shapes a LoRA cannot have.
LoraFile loadLoraFile(const std::string& path);

} // namespace dd::io
