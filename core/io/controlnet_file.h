#pragma once
// Where a ControlNet's config and weights are: a diffusers folder (config.json + diffusion_pytorch_model
// [.fp16].safetensors, or a sharded index), one of those .safetensors files with its config.json beside it, or an
// original (LDM) single file as sd-webui-controlnet loads it (control_model.* / input_hint_block / zero_convs keys),
// converted to diffusers names with a config derived from the shapes (controlnet_ldm.cpp).
#include "core/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace dd::io {

struct ControlNetFile {
    std::string path;          // as given
    std::string weightsPath;   // the (first) weights file: what the A1111 hash is taken of
    nlohmann::json config;
    TensorMap weights;         // memory-mapped views, diffusers names
    // The config was derived from an original file's shapes: attention heads and SDXL's addition_time_embed_dim
    // are the family's rule, to be replaced by the UNet's own values (the engine does).
    bool derivedConfig = false;
};

// Throws ModelFileError naming the path.
ControlNetFile openControlNet(const std::string& path);

// An original (LDM) ControlNet file, converted; nullopt when `path` is not one. Throws ModelFileError.
std::optional<ControlNetFile> convertLdmControlNet(const std::string& path);

// sd-webui-controlnet's "[hash]": the first 8 hex digits of the weights file's SHA-256.
std::string controlNetHash(const std::string& weightsPath);

} // namespace dd::io
