#pragma once
// Reading optional keys: a key that is absent keeps the field's default; a key of the wrong type, or a whole
// number out of the field's range (core/api/json_value.h), throws nlohmann::json::exception. Settings, memory
// plans and presets all read their JSON this way.
#include "core/api/json_value.h"

#include <nlohmann/json.hpp>

namespace dd::api {

template <typename T>
void readIfPresent(const nlohmann::json& j, const char* key, T& field) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    // The key joins the message, so a nested field reads "memory_plan: threads: number 1e+30 is out of range".
    try {
        readJsonInto(*it, field);
    } catch (const nlohmann::json::out_of_range& e) {
        throw nlohmann::json::out_of_range::create(e.id, std::string(key) + ": " + jsonReason(e), nullptr);
    } catch (const nlohmann::json::type_error& e) {
        throw nlohmann::json::type_error::create(e.id, std::string(key) + ": " + jsonReason(e), nullptr);
    }
}

} // namespace dd::api
