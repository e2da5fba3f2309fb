#include "core/pipeline/conditioning_cache.h"

#include <torch/torch.h>

namespace dd::pipeline {

const text::CfgConditioning* ConditioningCache::find(const ConditioningKey& key) {
    for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
        const auto& k = it->first;
        const bool sameSides = k.text.negative == key.text.negative || (!key.text.negative && k.text.negative);
        auto sameRest = k;
        sameRest.text.negative = key.text.negative;
        if (!sameSides || !(sameRest == key)) continue;
        m_entries.splice(m_entries.begin(), m_entries, it);
        return &m_entries.front().second;
    }
    return nullptr;
}

void ConditioningCache::insert(const ConditioningKey& key, text::CfgConditioning value) {
    m_entries.remove_if([&](const auto& e) { return e.first == key; });
    m_entries.emplace_front(key, std::move(value));
    while (m_entries.size() > m_capacity) m_entries.pop_back();
}

} // namespace dd::pipeline
