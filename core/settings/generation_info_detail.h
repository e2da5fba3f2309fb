#pragma once
// Helpers shared by the metadata readers and writers (not part of the public API).
#include "core/settings/generation_info.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
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
// the sampler's own default (Karras for DPM++ 2M). `kDiffusion`: the tool sampled with k-diffusion (A1111,
// ComfyUI and most others), so the k-diffusion sampler over that schedule is restored; false (InvokeAI 3+, which
// samples with diffusers) prefers the diffusers sampler of that name. A sampler DiffusionDesk does not have
// becomes the nearest one with a warning (a restore never fails for one field); `nearest` false keeps its name
// (an API request is refused). `a1111Timesteps`: DDIM and PLMS ran as A1111's own (its text), not as diffusers'.
void setSampler(GenerationInfo& info, std::string_view sampler, std::string_view schedule, bool explicitAutomatic,
                bool nearest = true, bool kDiffusion = true, bool a1111Timesteps = false);

// Throws MetadataError when JSON text nests deeper than maxDepth: nlohmann's dump and compare recurse per level,
// and a 1 MB "[[[[..." would overflow the stack.
void checkJsonDepth(std::string_view text, std::string_view what, int maxDepth = 64);

// JSON metadata another tool wrote: an object, checked as untrusted text first. Throws MetadataError naming `what`.
nlohmann::json parseJsonObject(std::string_view text, const char* what);

// A finite number under `key` that fits T (whole for integral T); false leaves `out` as it was.
template <typename T>
bool jsonNumber(const nlohmann::json& j, const char* key, T& out) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return false;
    const double v = it->template get<double>();
    if (!std::isfinite(v)) return false;
    if constexpr (std::is_integral_v<T>) {
        if (v != std::floor(v) || v < double(std::numeric_limits<T>::min()) || v >= double(std::numeric_limits<T>::max()))
            return false;
    }
    out = static_cast<T>(v);
    return true;
}

// The string under `key`, or "".
std::string jsonString(const nlohmann::json& j, const char* key);

// ComfyUI's sampler_name and scheduler (comfy/samplers.py) as A1111 labels; names we do not know are kept (setSampler
// finds the nearest). Also Fooocus's, which are ComfyUI's.
std::string comfySamplerLabel(std::string name);
// A ComfyUI graph in its API form ({"3": {"class_type": "KSampler", "inputs": {…}}, …}), followed as
// readComfyUiPrompt follows it; the UI's workflow (comfyui_workflow.cpp) is turned into this form first.
GenerationInfo readComfyGraph(const nlohmann::json& apiGraph);
std::string comfyScheduleLabel(const std::string& name);

// Records a field as found (for GenerationInfo::fields), once.
void found(GenerationInfo& info, const char* field);

} // namespace dd::settings::detail
