#include "core/compare/settings_diff.h"

#include <nlohmann/json.hpp>

#include <set>

namespace dd::compare {
namespace {

std::string text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    return v.dump();
}

void walk(const nlohmann::json& a, const nlohmann::json& b, const std::string& prefix, std::vector<FieldDifference>& out) {
    if (a.is_object() && b.is_object()) {
        std::set<std::string> keys;
        for (const auto& [k, _] : a.items()) keys.insert(k);
        for (const auto& [k, _] : b.items()) keys.insert(k);
        for (const auto& k : keys) {
            const std::string path = prefix.empty() ? k : prefix + "." + k;
            const bool inA = a.contains(k), inB = b.contains(k);
            if (inA && inB) walk(a[k], b[k], path, out);
            else out.push_back({path, inA ? text(a[k]) : "(absent)", inB ? text(b[k]) : "(absent)"});
        }
        return;
    }
    // 7 and 7.0 are the same setting even if one side was written as an integer.
    if (a.is_number() && b.is_number() && a.get<double>() == b.get<double>()) return;
    if (a != b) out.push_back({prefix, text(a), text(b)});
}

} // namespace

std::vector<FieldDifference> diffJson(const nlohmann::json& a, const nlohmann::json& b) {
    std::vector<FieldDifference> out;
    walk(a, b, "", out);
    return out;
}

std::vector<FieldDifference> diffSettings(const api::GenerationSettings& a, const api::GenerationSettings& b) {
    return diffJson(nlohmann::json(a), nlohmann::json(b));
}

nlohmann::json environmentJson(const api::Environment& e) {
    return {{"app_version", e.appVersion}, {"torch_version", e.torchVersion}, {"device", e.device},
            {"precision", e.precision},    {"attention", e.attention},        {"offload", e.offload},
            {"threads", e.threads},        {"deterministic", e.deterministic}};
}

std::vector<FieldDifference> diffEnvironment(const api::Environment& a, const api::Environment& b) {
    return diffJson(environmentJson(a), environmentJson(b));
}

std::string describe(const std::vector<FieldDifference>& diffs) {
    std::string s;
    for (const auto& d : diffs) s += d.field + ": " + d.a + " \u2192 " + d.b + "\n";
    return s;
}

} // namespace dd::compare
