#pragma once
// What the UNet is conditioned on: the prompts' embeddings for the batch (rows [negative×B; positive×B] under CFG)
// and SDXL's added conditioning, per stretch of steps when the prompt changes during sampling (A1111's prompt
// editing, text/prompt_schedule.h). Engine-internal (torch).
#include "core/api/generation_settings.h"
#include "core/nn/unet.h"
#include "core/text/conditioning.h"
#include "core/text/text_input.h"

#include <optional>
#include <vector>

namespace dd::pipeline {

struct SdModel;

struct Conditioning {
    torch::Tensor embeds;  // [B or 2B, 77·k, C]: rows [negative×B; positive×B] under CFG; [negative×B; part 1×B; …]
    // Instead of `embeds` when the negative and the prompt were left at different lengths (A1111 without "Pad
    // conds"): [negative×B, 77·j, C] and [positive×B, 77·k, C], each run through the UNet on its own.
    std::vector<torch::Tensor> sides;
    std::optional<nn::AddedCond> added;
    // A1111's composable diffusion ("a AND b:0.7"): one weight per positive part; empty: one part, plain CFG.
    std::vector<double> weights;
};

// The UNet's prediction for latents `x` (rows as c's: the CFG sides one after the other) at timestep t: one batch,
// or one call per side where the sides differ in length (no ControlNet residuals then: they pad).
torch::Tensor unetForward(nn::UNet2DConditionModelImpl& unet, const torch::Tensor& x, const torch::Tensor& t,
                          const Conditioning& c, const nn::ControlResiduals* residuals);

// The batch's UNet conditioning in the UNet's dtype, on `device`; SDXL's time ids follow s.width × s.height.
Conditioning batchConditioning(const text::CfgConditioning& text, const SdModel& m, const api::GenerationSettings& s,
                               bool cfg, int64_t batch, torch::ScalarType dtype, torch::Device device);
// The same for the parts of an AND prompt (CFG on): the negative once, then each part, every side padded with
// `emptyChunk` (the empty prompt's 77 tokens) to the longest, as A1111 pads conditionings of different lengths.
Conditioning batchConditioning(const std::vector<text::CfgConditioning>& parts, const std::vector<double>& weights,
                               const torch::Tensor& emptyChunk, const SdModel& m, const api::GenerationSettings& s,
                               int64_t batch, torch::ScalarType dtype, torch::Device device);

// Stretches of steps and their conditioning: conds[k] while the step (0-based, from the run's first model call) is
// at most lastStep[k]; past the last, the last.
struct StepConditioning {
    std::vector<int> lastStep;
    std::vector<Conditioning> conds;
    const Conditioning& at(int64_t step) const;
    static StepConditioning constant(Conditioning c) { return {{0}, {std::move(c)}}; }
};

// The text encoders' inputs over `calls` model calls: the prompt split at AND, each part's and the negative prompt's
// schedules merged, one input per part and stretch (the A1111 syntax only; a reference-syntax prompt is one stretch
// and part as written).
struct TextStretch {
    int lastStep = 0;
    std::vector<text::TextInput> parts;  // each with the negative prompt
    std::vector<double> weights;         // one per part
    bool plain() const { return parts.size() == 1 && weights.front() == 1.0; }  // plain CFG
};
std::vector<TextStretch> textSchedule(const text::TextInput& input, int calls, int firstPassCalls = 0);

} // namespace dd::pipeline
