#pragma once
// Reading diffusers' config.json: a missing key and an explicit null both mean "the class default".
#include "core/api/json_value.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace dd::nn {

template <typename T>
T configValue(const nlohmann::json& j, const char* key, T fallback) {
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? fallback : api::jsonAs<T>(*it);
}

// Sizes a real checkpoint could have; anything else is a damaged or hostile config.json, refused before a
// module is built from it (a zero width or a million layers would crash or exhaust memory later).
inline bool plausibleSize(int64_t v, int64_t max = 1 << 16) { return v > 0 && v <= max; }

} // namespace dd::nn
