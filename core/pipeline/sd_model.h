#pragma once
// A Stable Diffusion model ready to run: networks with weights, tokenizers, scheduler config. Built from any
// checkpoint layout (core/io) or, for the demo, from tiny configs with random weights.
#include "core/io/checkpoint.h"
#include "core/nn/clip_text.h"
#include "core/nn/unet.h"
#include "core/nn/vae.h"
#include "core/text/clip_tokenizer.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace dd::pipeline {

// Where each network lives and in which dtype (from the MemoryPlan). The VAE entry is what the plan asks
// for; SdModel::placement records what was used (the SDXL VAE stays fp32 when its force_upcast is honoured).
struct Placement {
    torch::Device device = torch::kCPU;  // every network's, unless `devices` names another; the UNet's always
    torch::ScalarType unet = torch::kFloat32, textEncoder = torch::kFloat32, vae = torch::kFloat32;
    bool vaeUpcast = true;     // honour the VAE config's force_upcast for SDXL (diffusers' needs_upcasting)
    bool channelsLast = false; // 4-d weights (convolutions) in channels_last
    // Balanced placement (core/pipeline/balanced_placement.h): a network's own device by part ("vae",
    // "text_encoder", "text_encoder_2"; the second text encoder goes with the first unless named), and what the
    // residency ledger calls each part's device where that is not the device's own name (tests' CPU stand-ins).
    std::map<std::string, torch::Device> devices{};
    std::map<std::string, std::string> labels{};
    torch::Device deviceOf(const std::string& part) const {
        if (const auto it = devices.find(part); it != devices.end()) return it->second;
        return part == "text_encoder_2" ? deviceOf("text_encoder") : device;
    }
    // Where a part computes: its own device under a balanced placement, else the run's compute device (under
    // offload `device` is the home the weights wait in, not where they run).
    torch::Device computeDeviceOf(const std::string& part, torch::Device compute) const {
        return devices.empty() ? compute : deviceOf(part);
    }
    std::string labelOf(const std::string& part, const std::string& fallback) const {
        if (const auto it = labels.find(part); it != labels.end()) return it->second;
        return part == "text_encoder_2" && labels.count("text_encoder") ? labels.at("text_encoder") : fallback;
    }
    bool operator==(const Placement&) const = default;
};

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
    bool requiresAestheticsScore = false;      // SDXL refiner: time ids end in an aesthetic score, not the target size
    bool isDemo = false;
    Placement placement;                       // as placed (see Placement)

    bool isXl() const { return family == io::ModelFamily::SDXL || family == io::ModelFamily::SDXLRefiner; }
    int64_t vaeScaleFactor() const { return vae->config().scaleFactor(); }
};

// Told before each part of a load: "checkpoint" (0 of 0: reading the layout), then each network ("unet", "vae",
// "text_encoder", "text_encoder_2") as `done` of `total` parts. It may throw (e.g. Cancelled) to stop between parts.
using LoadStep = std::function<void(const std::string& part, int done, int total)>;

// Loads weights into networks placed as asked: each file tensor is converted once, straight from the
// memory map to the target dtype and device. Throws dd::io::ModelFileError.
std::unique_ptr<SdModel> loadSdModel(const std::string& path, const Placement& placement, const LoadStep& step = {});
inline std::unique_ptr<SdModel> loadSdModel(const std::string& path, torch::Device device) {
    return loadSdModel(path, Placement{.device = device});
}

// A tiny SD 1.x-shaped model with seeded random weights that the app builds itself (no file needed).
// It exercises the whole pipeline; its pictures are noise.
std::unique_ptr<SdModel> makeDemoModel(const Placement& placement);
inline std::unique_ptr<SdModel> makeDemoModel(torch::Device device) { return makeDemoModel(Placement{.device = device}); }

// Moves one network to a device / dtype (NaN retry in fp32, offload); keeps channels_last if it was set.
void placeNetwork(torch::nn::Module& net, torch::Device device, torch::ScalarType dtype, bool channelsLast);

} // namespace dd::pipeline
