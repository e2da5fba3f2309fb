#pragma once
// Choosing a preset fills the settings' memory plan and remembers the preset's name (sidecars, the UI).
// The preset's resolution is the recipe row's, not the user's: it stays a suggestion, the size is kept.
#include "core/settings/generation_settings.h"

namespace dd::memory {

void applyPreset(const Preset& preset, settings::GenerationSettings& s);

} // namespace dd::memory
