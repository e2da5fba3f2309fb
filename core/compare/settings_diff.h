#pragma once
// What differs between two results: settings (a diff of their JSON form, so a field added to
// GenerationSettings is compared without touching this file) and environment fingerprints.
// Pure: no torch, no Qt; the compare view, the CLI's verify and the tests use it.
#include "core/api/generation_result.h"
#include "core/api/generation_settings.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace dd::compare {

struct FieldDifference {
    std::string field;  // JSON path with dots: "seed", "memory_plan.precision.unet"; environment: "device"
    std::string a;      // the value in A as text (strings unquoted, "(absent)" when A lacks the field)
    std::string b;

    bool operator==(const FieldDifference&) const = default;
};

// Leaves of two JSON objects that differ, sorted by path. Arrays compare as whole values.
std::vector<FieldDifference> diffJson(const nlohmann::json& a, const nlohmann::json& b);

// Settings fields that differ (to_json of both). The seed is one of them for an "A/B seeds" pair.
std::vector<FieldDifference> diffSettings(const api::GenerationSettings& a, const api::GenerationSettings& b);

// Environment fields that differ, named as in docs/determinism.md: app_version, torch_version, device,
// precision, attention, offload, threads, deterministic.
std::vector<FieldDifference> diffEnvironment(const api::Environment& a, const api::Environment& b);

// The environment as JSON with the names above (the sidecar's "environment" object uses the same names).
nlohmann::json environmentJson(const api::Environment& e);

// "memory_plan.precision.unet: fp32 → fp16" lines for people.
std::string describe(const std::vector<FieldDifference>& diffs);

} // namespace dd::compare
