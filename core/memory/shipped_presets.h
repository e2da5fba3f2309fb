#pragma once
// The presets the app ships (resources/presets: the VRAM recipe table's rows and cpu), read once per process.
// The window adds the user's own presets on top (ui/presetstore.h).
#include "core/memory/preset.h"

#include <string>
#include <vector>

namespace dd::memory {

std::string shippedPresetDir();                 // <resource dir>/presets
const std::vector<Preset>& shippedPresets();    // throws std::runtime_error naming the file that is bad
const Preset& shippedPreset(const std::string& name);  // throws std::invalid_argument listing the names

} // namespace dd::memory
