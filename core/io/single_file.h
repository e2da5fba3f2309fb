#pragma once
// Single-file Stable Diffusion checkpoints (original LDM layout as written by A1111, ComfyUI and civitai):
// SD 1.x, SD 2.x, SDXL base and SDXL refiner in one .safetensors file. The loader detects the family,
// renames every tensor to diffusers' / transformers' names and derives each component's config.json from
// the tensor shapes, so tiny test models and full-size ones go through the same code.
// Ref: diffusers src/diffusers/loaders/single_file_utils.py; ../shared/reference/sd_reference.md §4.
//
// Not thread-safe per call result; distinct calls may run on distinct threads.
#include "core/io/checkpoint.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace dd::io {

struct SingleFileOptions {
    // Component ("unet", "vae", "text_encoder", "text_encoder_2", "scheduler") → JSON merge patch applied to
    // the derived config, for what the weights cannot tell: the number of attention heads of models that
    // do not use the family's head size, the prediction type of an SD 2.x file, the VAE scaling factor.
    // Example: {"unet", {{"attention_head_dim", {2, 4}}}}, {"scheduler", {{"prediction_type", "epsilon"}}}.
    std::map<std::string, nlohmann::json> configOverrides;
};

// Reads a single-file checkpoint. The tensors stay memory-mapped views of the file (a few are split or
// reshaped views; the transposed OpenCLIP projection is copied). Every value that had to be assumed rather
// than derived is listed in Checkpoint::notes. Throws ModelFileError when the file is not one of the
// supported families, naming what was found instead.
Checkpoint loadSingleFile(const std::string& path, const SingleFileOptions& options = {});

} // namespace dd::io
