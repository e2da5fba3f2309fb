#include "core/memory/preset.h"

#include "core/api/json_optional.h"
#include "core/io/atomic_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace dd::memory {

void to_json(nlohmann::json& j, const Preset& p) {
    j = {{"name", p.name}, {"budget_bytes", p.budgetBytes}, {"family", p.family}, {"width", p.width},
         {"height", p.height}, {"strategy", p.strategy}, {"expected_time", p.expectedTime}, {"plan", p.plan}};
}

void from_json(const nlohmann::json& j, Preset& p) {
    j.at("name").get_to(p.name);
    auto get = [&](const char* key, auto& field) { api::readIfPresent(j, key, field); };
    get("budget_bytes", p.budgetBytes);  // absent stays 0, refused by loadPreset as not positive
    get("family", p.family);
    get("width", p.width);
    get("height", p.height);
    get("strategy", p.strategy);
    get("expected_time", p.expectedTime);
    get("plan", p.plan);
}

Preset loadPreset(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot be opened");
    try {
        Preset p = nlohmann::json::parse(in).get<Preset>();
        validate(p.plan);
        if (p.budgetBytes <= 0) throw std::invalid_argument("budget_bytes must be positive");
        return p;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path + ": not a valid preset: " + api::jsonReason(e));
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": not a valid preset: " + e.what());
    }
}

void savePreset(const Preset& p, const std::string& path) {
    io::writeFileAtomically(path, [&](std::ostream& out) { out << nlohmann::json(p).dump(2) << "\n"; });
}

std::vector<Preset> loadPresets(const std::string& dir, std::vector<std::string>* errors) {
    std::vector<Preset> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        if (entry.path().extension() != ".json") continue;
        try {
            out.push_back(loadPreset(entry.path().string()));
        } catch (const std::exception& e) {
            if (errors) errors->push_back(e.what());
        }
    }
    std::sort(out.begin(), out.end(), [](const Preset& a, const Preset& b) {
        return a.budgetBytes != b.budgetBytes ? a.budgetBytes < b.budgetBytes : a.name < b.name;
    });
    return out;
}

const Preset* recommendPreset(const std::vector<Preset>& presets, int64_t availableBytes, bool cuda) {
    const Preset* best = nullptr;
    for (const auto& p : presets) {
        const bool cpuPreset = p.plan.device == "cpu";
        if (cpuPreset == cuda || p.budgetBytes > availableBytes) continue;
        if (!best || p.budgetBytes > best->budgetBytes) best = &p;
    }
    return best;
}

} // namespace dd::memory
