#include "core/memory/preset_settings.h"

namespace dd::memory {

void applyPreset(const Preset& preset, api::GenerationSettings& s) {
    s.plan = preset.plan;
    s.preset = preset.name;
}

} // namespace dd::memory
