#include "core/memory/shipped_presets.h"

#include "core/resources.h"

#include <stdexcept>

namespace dd::memory {

std::string shippedPresetDir() { return (resourceDir() / "presets").string(); }

const std::vector<Preset>& shippedPresets() {
    static const std::vector<Preset> presets = loadPresets(shippedPresetDir());
    return presets;
}

const Preset& shippedPreset(const std::string& name) {
    std::string known;
    for (const auto& p : shippedPresets()) {
        if (p.name == name) return p;
        known += (known.empty() ? "" : ", ") + p.name;
    }
    throw std::invalid_argument("unknown preset '" + name + "' (in " + shippedPresetDir() + ": " + known + ")");
}

} // namespace dd::memory
