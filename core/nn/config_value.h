#pragma once
// Reading diffusers' config.json: a missing key and an explicit null both mean "the class default".
#include <nlohmann/json.hpp>

namespace dd::nn {

template <typename T>
T configValue(const nlohmann::json& j, const char* key, T fallback) {
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? fallback : it->get<T>();
}

} // namespace dd::nn
