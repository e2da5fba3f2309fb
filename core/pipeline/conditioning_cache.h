#pragma once
// Text conditioning kept between runs: artists change the seed, CFG, steps, sampler or size far
// more often than the prompt. An entry is the encoders' output for one (model, prompts, text options,
// precision); SDXL time ids are not cached, they follow the image size and cost nothing.
#include "core/text/conditioning.h"
#include "core/text/text_input.h"

#include <cstdint>
#include <list>
#include <optional>
#include <string>

namespace dd::pipeline {

using text::TextInput;

// Everything that changes what the text encoders produce.
struct ConditioningKey {
    std::string model;           // the loaded model's source and the LoRAs applied to it (LoraStack::signature)
    TextInput text;              // an input without CFG is also served by an entry that has the negative side
    int dtype = 0;               // the text encoders' c10::ScalarType
    std::string embeddings;      // the embedding files a prompt may name (EmbeddingLibrary::signature)
    bool operator==(const ConditioningKey&) const = default;
};

class ConditioningCache {
public:
    explicit ConditioningCache(size_t capacity = 8) : m_capacity(capacity) {}

    // A hit; a key without CFG is also served by an entry that has the negative side.
    const text::CfgConditioning* find(const ConditioningKey& key);
    void insert(const ConditioningKey& key, text::CfgConditioning value);
    void clear() { m_entries.clear(); }
    size_t size() const { return m_entries.size(); }

private:
    size_t m_capacity;
    std::list<std::pair<ConditioningKey, text::CfgConditioning>> m_entries;  // most recently used first
};

} // namespace dd::pipeline
