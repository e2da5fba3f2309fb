#pragma once
// A Stable Diffusion model ready to run: networks with weights, tokenizers, scheduler config. Built from any
// checkpoint layout (core/io) or, for the demo, from tiny configs with random weights.
#include "core/io/checkpoint.h"
#include "core/nn/clip_text.h"
#include "core/nn/unet.h"
#include "core/nn/vae.h"
#include "core/text/clip_tokenizer.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

namespace dd::pipeline {

struct SdModel {
    std::string source;       // what the user opened
    std::string displayName;  // shown in the UI and written to sidecars
    io::ModelFamily family = io::ModelFamily::SD1;
    nn::UNet2DConditionModel unet{nullptr};
    nn::AutoencoderKL vae{nullptr};
    nn::ClipTextModel textEncoder{nullptr};    // absent for the SDXL refiner
    nn::ClipTextModel textEncoder2{nullptr};   // SDXL only
    std::optional<text::ClipTokenizer> tokenizer, tokenizer2;
    nlohmann::json schedulerConfig;
    bool forceZerosForEmptyPrompt = false;     // SDXL pipelines: empty negative prompt → zero embeddings
    bool isDemo = false;

    bool isXl() const { return family == io::ModelFamily::SDXL || family == io::ModelFamily::SDXLRefiner; }
    int64_t vaeScaleFactor() const { return vae->config().scaleFactor(); }
};

// Loads weights into networks on `device` in fp32. Throws dd::io::ModelFileError.
std::unique_ptr<SdModel> loadSdModel(const std::string& path, torch::Device device);

// A tiny SD 1.x-shaped model with seeded random weights that the app builds itself (no file needed).
// It exercises the whole pipeline; its pictures are noise.
std::unique_ptr<SdModel> makeDemoModel(torch::Device device);

} // namespace dd::pipeline
