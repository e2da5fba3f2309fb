#pragma once
// What the text encoders see of a run: the encoders' input (text::encodePrompts), the conditioning cache's key
// (with the model, its LoRAs and the encoders' precision: pipeline/conditioning_cache.h), and what the window
// compares to tell that the next run will reuse the last run's embeddings. Torch-free.
#include "core/api/generation_settings.h"

#include <optional>
#include <string>
#include <vector>

namespace dd::text {

struct TextInput {
    std::string prompt;                   // A1111's <lora:…> tags cut out
    std::optional<std::string> negative;  // nullopt without CFG: no negative side is encoded
    int clipSkip = 1;                     // A1111 numbering
    std::string promptSyntax = "a1111";
    std::string emphasis = "Original";
    bool padConds = true;
    std::string sdxlClipSkip = "diffusers";  // GenerationSettings::sdxlClipSkip  // GenerationSettings::padConds (always with ControlNets: their residuals take one batch)
    bool operator==(const TextInput&) const = default;
};

// Throws PromptError for a malformed <lora:…> tag.
TextInput textInputOf(const api::GenerationSettings& s);

// The run's LoRAs as asked: the prompt's <lora:…> tags (fromPrompt), then the list's own entries (a result's list
// repeats the tags, marked fromPrompt: those are skipped). Names as written, no hashes. Throws PromptError for a
// malformed tag.
std::vector<api::LoraSetting> requestedLoras(const api::GenerationSettings& s);

// Whether two runs' text encoders get the same input with the same weights: the model, the text, the LoRAs (tags
// and list, by name and text-encoder weight) and the encoders' precision. A malformed tag counts as a change.
bool sameTextEncoding(const api::GenerationSettings& a, const api::GenerationSettings& b);

} // namespace dd::text
