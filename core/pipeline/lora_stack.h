#pragma once
// The LoRAs of a run, from settings to networks: the prompt's <lora:name:w> tags plus GenerationSettings::loras,
// names looked up in the LoRA folders, files read once and kept (by path, size and modification time), applied in
// the requested mode, and taken off again when the next run asks for a different set. The model is never
// reloaded for a LoRA change. One LoraStack belongs to one loaded model (reset it when the model goes).
// Not thread-safe: the engine thread only.
#include "core/api/generation_settings.h"
#include "core/io/lora_file.h"
#include "core/nn/lora.h"
#include "core/pipeline/model_search.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dd::pipeline {

struct SdModel;

// Runs `edit`, which writes the networks' parameters, so that the change sticks. Under offload
// (core/memory/offload) the parameters are placeholders between uses and each leaf's stored copy at home is
// what runs: the engine detaches the offloads (the parameters get the stored copies back, fp8 ones included),
// runs the edit and attaches them again, so the stored copies are made from the edited weights. Empty: the
// edit runs as it is (nothing offloaded).
using WeightEditor = std::function<void(const std::function<void()>& edit)>;

class LoraStack {
public:
    // The prompt's tags (fromPrompt entries of s.loras are ignored: they are the tags of an earlier run) and
    // the explicit s.loras, resolved and applied to `m`. Returns every LoRA applied, with its hash, for
    // result.settings.loras; appends unmatched / unknown keys (naming the file) to `warnings`.
    std::vector<api::LoraSetting> apply(SdModel& m, const api::GenerationSettings& s,
                                             const std::vector<std::string>& folders, std::vector<std::string>& warnings,
                                             const WeightEditor& editor = {});
    // Takes every LoRA off the networks (weights back bit for bit). Their offloads must be detached already.
    void clear() { m_applier.clear(); m_signature.clear(); }
    // Identifies what is applied: part of the conditioning cache key, so cached text embeddings never outlive
    // the text-encoder LoRAs they were made with.
    const std::string& signature() const { return m_signature; }
    int64_t extraBytes() const { return m_applier.extraBytes(); }

private:
    struct Cached {
        io::LoraFile file;
        std::string hash;
        uintmax_t size = 0;
        int64_t modified = 0;
    };
    const Cached& load(const std::string& path);
    std::map<std::string, Cached> m_files;
    nn::LoraApplier m_applier;
    std::string m_signature;
};

} // namespace dd::pipeline
