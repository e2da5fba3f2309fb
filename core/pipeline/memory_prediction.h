#pragma once
// The memory prediction (core/memory/predictor.h) of a run, from its settings and this machine: the one place the
// window, the CLI and the engine's out-of-memory message build the predictor's input. Torch-free header.
#include "core/api/generation_settings.h"
#include "core/memory/predictor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dd::pipeline {

struct SdModel;

// What the settings do not say.
struct PredictionContext {
    std::vector<std::string> loraFolders{};  // where the prompt's <lora:…> names are looked for (and DD_LORA_PATH)
    bool textCached = false;               // the engine already holds these prompts' embeddings
    std::optional<bool> cuda{};              // where the networks run; unset: where the plan's device puts them here
};

// Where plan.device puts the networks on this machine ("auto": CUDA when a device exists).
bool computesOnCuda(const api::MemoryPlan& plan);
// Model, LoRA, refiner and ControlNet sizes read from their files' headers (kept per file while it is unchanged).
memory::PredictInput predictInput(const api::GenerationSettings& s, const PredictionContext& context = {});
// predict(modelShapeOf(s.model), predictInput(s, context)). Throws dd::io::ModelFileError for an unreadable model.
memory::Prediction predictRun(const api::GenerationSettings& s, const PredictionContext& context = {});

// A hires fix decodes at the second pass's size, the most common out-of-memory cause: true when the plan has no
// VAE tiling, the predicted decode exceeds `budgetBytes` and tiling would make it smaller.
bool hiresDecodeNeedsTiling(const api::GenerationSettings& s, int64_t budgetBytes, const PredictionContext& context = {});

// Any model the engine opens (diffusers folder, single file, "demo:tiny-sd1"): configs and tensor sizes only,
// no weights read. Throws dd::io::ModelFileError like the loader.
memory::ModelShape modelShapeOf(const std::string& model);
// A loaded model (exact parameter counts).
memory::ModelShape modelShapeOf(const SdModel& model);

// PredictInput::loraBytes for LoRA files (paths) from their tensor shapes alone: side path = Σ down + up elements,
// merge = Σ out·in·k·k of each touched layer (a layer touched by several LoRAs counted once), in the networks'
// precision. Throws dd::io::ModelFileError like the loader.
int64_t loraExtraBytes(const std::vector<std::string>& loraFiles, const api::MemoryPlan& plan, bool sidePath);
// PredictInput::controlNetParams for ControlNet folders/files (tensor sizes from the headers; each distinct path
// counted once, as the engine loads it once). Throws dd::io::ModelFileError.
int64_t controlNetParameters(const std::vector<std::string>& controlNets);

} // namespace dd::pipeline
