#pragma once
// Reading optional keys: a key that is absent keeps the field's default; a key of the wrong type throws
// nlohmann::json::exception. Settings, memory plans and presets all read their JSON this way.
#include <nlohmann/json.hpp>

namespace dd::settings {

template <typename T>
void readIfPresent(const nlohmann::json& j, const char* key, T& field) {
    if (const auto it = j.find(key); it != j.end()) it->get_to(field);
}

} // namespace dd::settings
