#pragma once
// Choosing a preset fills the settings' memory plan and remembers the preset's name (sidecars, the UI).
// The preset's resolution is the recipe row's, not the user's: it stays a suggestion, the size is kept.
#include "core/api/generation_settings.h"
#include "core/memory/preset.h"

namespace dd::memory {

void applyPreset(const Preset& preset, api::GenerationSettings& s);

} // namespace dd::memory
