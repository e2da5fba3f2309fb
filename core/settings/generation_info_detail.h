#pragma once
// Helpers shared by the metadata readers and writers (not part of the public API).
#include "core/settings/generation_info.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dd::settings::detail {

// Python's repr(float) for finite values (shortest round trip, fixed for 1e-4 <= |v| < 1e16), except that
// integral values print without ".0" ("7", as A1111's UI writes CFG scale 7).
std::string formatNumber(double v);

// Python float(text) / int(float(text)) as A1111's paste code does: surrounding blanks allowed, finite only.
std::optional<double> parseNumber(std::string_view text);
std::optional<int64_t> parseInteger(std::string_view text);

std::string_view trim(std::string_view s);

// Sets settings.sampler / scheduleType from an A1111 sampler label and schedule label ("" or "Automatic" =
// default). `explicitAutomatic`: the text carried "Schedule type: Automatic", which A1111 1.9+ resolves to
// the sampler's own default (Karras for DPM++ 2M). Adds a warning for a sampler DiffusionDesk does not have.
void setSampler(GenerationInfo& info, std::string_view sampler, std::string_view schedule, bool explicitAutomatic);

// Throws MetadataError when JSON text nests deeper than maxDepth: nlohmann's dump and compare recurse per level,
// and a 1 MB "[[[[..." would overflow the stack.
void checkJsonDepth(std::string_view text, std::string_view what, int maxDepth = 64);

// Records a field as found (for GenerationInfo::fields), once.
void found(GenerationInfo& info, const char* field);

} // namespace dd::settings::detail
