#pragma once
// A loaded Stable Diffusion checkpoint, whatever its layout on disk: per-component tensors under
// diffusers' parameter names plus the diffusers config.json of each component.
#include "core/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace dd::io {

enum class ModelFamily { SD1, SD2, SDXL, SDXLRefiner };
std::string_view familyName(ModelFamily f);  // "SD 1.x", "SD 2.x", "SDXL", "SDXL refiner"

enum class CheckpointFormat { DiffusersFolder, SingleFile };

struct Checkpoint {
    std::string path;
    CheckpointFormat format = CheckpointFormat::DiffusersFolder;
    ModelFamily family = ModelFamily::SD1;
    // "unet", "vae", "text_encoder", "text_encoder_2" → tensors named exactly as diffusers / transformers name them.
    std::map<std::string, TensorMap> components;
    // Same keys (+ "scheduler", "model_index" when known) → the component's config.json (derived for single files).
    std::map<std::string, nlohmann::json> configs;
    // "tokenizer", "tokenizer_2" → folder holding vocab.json + merges.txt (diffusers folders only).
    std::map<std::string, std::string> tokenizerDirs;
    // Human-readable notes about guesses made while loading (e.g. "prediction type assumed epsilon").
    std::vector<std::string> notes;
};

// Dispatches on what `path` is: a diffusers folder, a single-file .safetensors checkpoint, or a
// pickle file (.ckpt/.pt/.pth/.bin), which is refused with an explanation. Throws ModelFileError.
Checkpoint loadCheckpoint(const std::string& path, const std::string& variant = "");

} // namespace dd::io
