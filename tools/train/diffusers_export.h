#pragma once
// Writes the trained networks as a diffusers StableDiffusionPipeline folder that both loadSdModel and
// diffusers' from_pretrained read: model_index.json, <component>/config.json + safetensors, scheduler config
// and a CLIP tokenizer (vocab.json + merges.txt) built from the bundled OpenAI vocabulary.
#include "core/nn/clip_text.h"
#include "core/nn/unet.h"
#include "core/nn/vae.h"

#include <filesystem>
#include <map>
#include <string>

namespace dd::train {

struct ExportInfo {
    double scalingFactor = 1;
    std::map<std::string, std::string> metadata;  // written into every safetensors header (recipe, step, seed)
};

// Builds the folder next to `dir` and swaps it in, so `dir` is never half written.
void exportDiffusersFolder(const std::filesystem::path& dir, nn::UNet2DConditionModel& unet, nn::AutoencoderKL& vae,
                           nn::ClipTextModel& textEncoder, const ExportInfo& info,
                           const std::filesystem::path& bundledVocabGz);

} // namespace dd::train
