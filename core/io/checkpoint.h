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

// The image side a model was trained at, what diffusers' pipelines use when no height and width are given: the
// UNet's sample_size times the VAE's scale factor, 2^(number of VAE blocks - 1) (512 for SD 1.x, 768 for SD 2.x
// v-models, 1024 for SDXL). Configs without the fields get diffusers' defaults (64, 8).
int nativeImageSize(const nlohmann::json& unetConfig, const nlohmann::json& vaeConfig);
int nativeImageSize(const Checkpoint& checkpoint);

} // namespace dd::io
