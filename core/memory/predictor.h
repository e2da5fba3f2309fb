#pragma once
// Peak memory per stage (load, encode, denoise, decode) estimated before a run, from the model's shape, the
// size, the batch and the MemoryPlan. The formula is in docs/memory.md. Torch-free: the GUI and the CLI show
// predictions and warn before a run that would not fit.
//
// Usage:
//   auto shape = pipeline::modelShapeOf(settings.model);          // reads configs + tensor headers, no weights
//   auto p = memory::predict(shape, {settings.width, settings.height, settings.batchSize, settings.plan,
//                                    cfgScale > 1});
//   auto fit = memory::fits(p, preset.budgetBytes, &presets);
//   if (!fit.fits) warn(fit.message);   // "needs 7.8 GB, preset budget 6 GB: enable VAE tiling or switch to 6gb"
#include "core/memory/preset.h"
#include "core/nn/clip_text_config.h"
#include "core/nn/unet_config.h"
#include "core/nn/vae_config.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::memory {

// What the predictor needs of each network: parameter counts (exact, from the weights) and the few config
// values that set activation sizes (diffusers config.json names in comments).
struct UNetShape {
    int64_t params = 0;
    int64_t largestTensor = 0;                    // elements of the largest weight (read from files; else 0)
    int64_t inChannels = 4;                       // in_channels
    std::vector<int64_t> blockOutChannels;        // block_out_channels, one per resolution level
    std::vector<bool> attention;                  // level has transformer blocks (CrossAttn*Block2D)
    std::vector<int64_t> heads;                   // attention heads per level
    std::vector<int64_t> transformerLayers;       // transformer_layers_per_block per level
    int64_t layersPerBlock = 2;                   // layers_per_block (down; up has one more)
    int64_t crossAttentionDim = 768;
};
struct VaeShape {
    int64_t params = 0;
    int64_t largestTensor = 0;                    // elements of the largest weight (read from files; else 0)
    std::vector<int64_t> blockOutChannels{128, 256, 512, 512};
    int64_t latentChannels = 4;
    int64_t sampleSize = 512;                     // tile size in pixels when tiling
    bool forceUpcast = false;                     // decode in fp32 whatever the plan says (SDXL VAE), if vaeUpcast
    bool midAttention = true;
    int64_t scaleFactor() const { return int64_t(1) << (blockOutChannels.empty() ? 0 : blockOutChannels.size() - 1); }
};
struct TextEncoderShape {
    int64_t params = 0;
    int64_t largestTensor = 0;                    // elements of the largest weight (read from files; else 0)
    int64_t hiddenSize = 768;
    int64_t intermediateSize = 3072;
    int64_t heads = 12;
    int64_t tokens = 77;
    int64_t vocabSize = 49408;                    // vocab_size: rows of the token embedding
};
struct ModelShape {
    std::string name;                             // for messages
    UNetShape unet;
    VaeShape vae;
    std::vector<TextEncoderShape> textEncoders;   // one (SD 1.x/2.x) or two (SDXL)
    int64_t fileBytes = 0;                        // bytes of weight files read at load (0: built in memory)
};

// From the networks' own config readers (core/nn, torch-free), the one reading of config.json; parameter counts
// are not in configs (pipeline::modelShapeOf counts them from the weight files' headers).
UNetShape shapeOf(const nn::UNetConfig& config, int64_t params);
VaeShape shapeOf(const nn::VaeConfig& config, int64_t params);
TextEncoderShape shapeOf(const nn::ClipTextConfig& config, int64_t params);

struct PredictInput {
    int width = 512, height = 512, batch = 1;
    api::MemoryPlan plan;
    bool cfg = true;              // classifier-free guidance doubles the UNet batch
    bool cuda = false;            // where the networks run (plan.device "auto" is resolved by the caller)
    int64_t baselineBytes = -1;   // process (CPU) or CUDA context (GPU) memory before loading; < 0: typical value
    bool weightsFromFile = true;  // load reads weight files (their pages are resident while copied)
    // The engine's conditioning cache already holds this run's text embeddings (same model, prompts and text
    // options as an earlier run): the text encoders do not run, and with offload they never reach the device.
    bool textCached = false;
    // What the run's LoRAs hold beside the model from the end of the load on (loraExtraBytes): a side path its
    // down/up matrices, a merge the kept original of every touched weight. Host memory when offloading.
    int64_t loraBytes = 0;
    bool loraSidePath = false;    // side-path bytes go to the compute device with the networks (offload too)
    // The SDXL refiner's weights in the plan's precisions (modelWeightBytes of its shape); 0 = no refiner. Kept
    // beside the base for the whole run, or, when plan.swapModels applies (CUDA, no offload, no fp8), in the
    // base's place for its stage and the decode (docs/refiner.md).
    int64_t refinerBytes = 0;
    // Parameters of the run's ControlNets (controlNetParameters): weights in the UNet's precision, placed like the
    // UNet; their residuals (one tensor per UNet skip) live through every UNet call.
    int64_t controlNetParams = 0;
};

// Bytes on the device that runs the networks (process RSS on CPU; allocator + context on CUDA).
struct StageEstimate {
    int64_t baseline = 0;     // process / context before any model
    int64_t weights = 0;      // weights resident during the stage
    int64_t activations = 0;  // the stage's largest live working set
    std::string peakAt;       // what sets `activations` ("attention at 64x64, sdpa-math", "VAE decode at 512x512")
    int64_t total() const { return baseline + weights + activations; }
};
struct Prediction {
    StageEstimate load, encode, denoise, decode;
    ModelShape shape;         // what it was made from, so fits() can try other plans
    PredictInput input;
    int64_t peak() const;     // the largest stage total
    const char* peakStage() const;  // "load", "encode", "denoise", "decode"
};

Prediction predict(const ModelShape& shape, const PredictInput& input);

// Bytes of each network's weights placed as `plan` says (fp8 UNet storage and the SDXL VAE's fp32 upcast
// included): what the predictor counts, and what a balanced placement sizes the networks by.
struct NetworkWeightBytes {
    int64_t unet = 0, vae = 0;
    std::vector<int64_t> textEncoders;  // in ModelShape::textEncoders' order
    int64_t total() const;
};
NetworkWeightBytes networkWeightBytes(const ModelShape& shape, const api::MemoryPlan& plan);
// Their sum.
int64_t modelWeightBytes(const ModelShape& shape, const api::MemoryPlan& plan);


// Verdict against a budget. `message` is empty when it fits, else e.g. "needs 7.8 GB, preset budget 6 GB:
// enable VAE tiling or switch to 6gb": the single toggles that make it fit (or, when none does alone, that help
// most), and the preset whose budget is the largest one ≤ the budget when its plan fits and differs.
struct Fit {
    bool fits = true;
    int64_t needBytes = 0, budgetBytes = 0;
    std::vector<std::string> suggestions;  // "enable VAE tiling", "use sliced attention", "switch to 6gb"
    std::string message;
};
Fit fits(const Prediction& prediction, int64_t budgetBytes, const std::vector<Preset>* presets = nullptr);

std::string formatGb(int64_t bytes);  // "7.8 GB", "6 GB" (2^30 bytes: what a "6 GB" card reports)

void to_json(nlohmann::json& j, const StageEstimate& e);
void to_json(nlohmann::json& j, const Prediction& p);  // per-stage totals and parts, bytes

} // namespace dd::memory
