#pragma once
// Where a ControlNet's config and weights are: a diffusers folder (config.json + diffusion_pytorch_model
// [.fp16].safetensors, or a sharded index), or one of those .safetensors files with its config.json beside it.
// The original (LDM) single files that sd-webui-controlnet loads (control_model.* / input_hint_block keys) are
// refused with the reason: their conversion is not implemented (docs/controlnet.md).
#include "core/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <string>

namespace dd::io {

struct ControlNetFile {
    std::string path;          // as given
    std::string weightsPath;   // the (first) weights file: what the A1111 hash is taken of
    nlohmann::json config;
    TensorMap weights;         // memory-mapped views, diffusers names
};

// Throws ModelFileError naming the path.
ControlNetFile openControlNet(const std::string& path);

// sd-webui-controlnet's "[hash]": the first 8 hex digits of the weights file's SHA-256.
std::string controlNetHash(const std::string& weightsPath);

} // namespace dd::io
