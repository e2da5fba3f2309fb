#pragma once
// The A1111 "parameters" text, the de-facto standard for image metadata (Civitai requires it):
//
//   a (red:1.2) car
//   on two lines
//   Negative prompt: blurry
//   Steps: 20, Sampler: DPM++ 2M, Schedule type: Karras, CFG scale: 7, Seed: 42, Size: 512x768, ...
//
// Ref: AUTOMATIC1111/stable-diffusion-webui modules/processing.py::create_infotext (key order, layout),
// modules/infotext_utils.py::quote / parse_generation_parameters (quoting, re_param, "WxH" sizes),
// modules/sd_samplers.py::get_sampler_and_scheduler (old "DPM++ 2M Karras" names).
//
//   A1111WriteOptions o;
//   o.modelHash = hashes.shortHash;
//   std::string text = writeA1111Parameters(settings, o);
//   GenerationInfo info = parseA1111Parameters(text);  // never throws on content; see info.warnings
#include "core/api/generation_settings.h"
#include "core/settings/generation_info.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dd::settings {

struct A1111WriteOptions {
    std::string modelName;  // "Model:"; default: the file name of settings.model without its extension
    std::string modelHash;  // "Model hash:" (io::ModelHashes::shortHash); left out when empty
    std::string version;    // "Version:", e.g. "DiffusionDesk 0.1.0"; left out when empty
    int batchIndex = 0;     // image i of a batch is written with "Seed: seed + i", as A1111 does
    std::vector<std::pair<std::string, std::string>> extra;  // written before Version (e.g. unknown keys kept)
};

// Settings -> A1111 text, keys in create_infotext's order. Values containing ',', ':' or a newline are
// JSON-quoted (ensure_ascii=False), as are, unlike A1111, values that are empty, start with '"' or start or end
// with a blank, so that they read back unchanged. Not written: the model path,
// the init image path, the memory preset and the prompt syntax (they live in the sidecar; A1111 has no
// "reference" syntax, and text read back is always A1111 syntax). Throws std::invalid_argument for an
// extra key that A1111's parser could not read back (it must match \w[\w \-/]+).
std::string writeA1111Parameters(const api::GenerationSettings& settings, const A1111WriteOptions& options = {});
// What A1111's Extras tab records in a PNG's "extras" text chunk beside the source's "parameters":
// "Postprocess upscale by: 4, Postprocess upscaler: 4x-UltraSharp".
inline constexpr const char* kA1111ExtrasKey = "extras";
std::string writeA1111Extras(int upscaleBy, const std::string& upscaler);

// A1111 text -> settings. Mirrors parse_generation_parameters: the last line holds the parameters when at least
// three "Key: value" pairs match there, "Negative prompt:" starts the negative prompt, quoted values are JSON,
// missing keys keep defaults (Clip skip 1, Emphasis Original). Unknown keys (Hires upscale, ADetailer model, Lora hashes...) are
// returned in order in `unknown`. Throws MetadataError only for text over the size cap or invalid UTF-8.
GenerationInfo parseA1111Parameters(std::string_view text);


// Splits an A1111 sampler label into sampler and schedule the way A1111 reads old infotexts:
// "DPM++ 2M Karras" -> {"DPM++ 2M", "Karras"}; "Euler a" -> {"Euler a", ""}.
std::pair<std::string, std::string> splitSamplerSchedule(std::string_view sampler);

} // namespace dd::settings
