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
    torch::Tensor embeds;  // [B or 2B, 77·k, C]: rows [negative×B; positive×B] under CFG
    std::optional<nn::AddedCond> added;
};

// The batch's UNet conditioning in the UNet's dtype, on `device`; SDXL's time ids follow s.width × s.height.
Conditioning batchConditioning(const text::CfgConditioning& text, const SdModel& m, const api::GenerationSettings& s,
                               bool cfg, int64_t batch, torch::ScalarType dtype, torch::Device device);

// Stretches of steps and their conditioning: conds[k] while the step (0-based, from the run's first model call) is
// at most lastStep[k]; past the last, the last.
struct StepConditioning {
    std::vector<int> lastStep;
    std::vector<Conditioning> conds;
    const Conditioning& at(int64_t step) const;
    static StepConditioning constant(Conditioning c) { return {{0}, {std::move(c)}}; }
};

// The text encoders' inputs over `calls` model calls: the prompt's and the negative prompt's schedules merged, one
// input per stretch (the A1111 syntax only; a reference-syntax prompt is one stretch as written).
struct TextStretch {
    int lastStep = 0;
    text::TextInput input;
};
std::vector<TextStretch> textSchedule(const text::TextInput& input, int calls, int firstPassCalls = 0);

} // namespace dd::pipeline
