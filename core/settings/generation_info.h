#pragma once
// Generation settings read back from an image's metadata, whichever tool wrote it: the A1111 "parameters"
// text (also written by Forge, SD.Next, sd.cpp and DiffusionDesk), a DiffusionDesk sidecar, ComfyUI's "prompt"
// graph and InvokeAI's "invokeai_metadata". Pure functions, thread-safe, no Qt, no torch.
//
//   const auto text = dd::imaging::readPngText(path);
//   if (auto info = dd::settings::readGenerationInfo(text)) {
//       apply(info->settings, info->fields);   // only the fields the metadata carried
//       for (const auto& w : info->warnings) log(w);
//   }
//
// Metadata is untrusted input: every text is capped at kMaxMetadataText bytes and must be valid UTF-8, and a
// model is only ever returned as a bare file name (never a path with '/', '\\' or "..").
#include "core/api/generation_settings.h"

#include <cstddef>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dd::settings {

// Metadata that cannot be read at all (too large, not UTF-8, not JSON, wrong schema). Partly readable
// metadata is not an error: what could not be used ends up in GenerationInfo::warnings.
class MetadataError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Pillow's cap on one text chunk (PIL.PngImagePlugin.MAX_TEXT_CHUNK).
inline constexpr std::size_t kMaxMetadataText = 1u << 20;

struct GenerationInfo {
    std::string format;  // "a1111", "diffusiondesk", "comfyui", "invokeai", "fooocus", "sdcpp", "novelai", "swarmui",
                         // "easydiffusion", "drawthings"
    api::GenerationSettings settings;      // settings.model stays empty: resolve modelName / modelHash locally
    std::vector<std::string> fields;  // JSON names (GenerationSettings::to_json) of the fields the metadata set
    std::string modelName;            // bare file name or A1111 model name, never a path
    std::string modelHash;            // A1111 "Model hash" (10 hex, or the legacy 8) when known
    std::string version;              // the writer's "Version" / app_version, as written
    std::vector<std::pair<std::string, std::string>> unknown;  // keys kept as written: Hires, ADetailer, Lora hashes...
    std::vector<std::string> warnings;                         // things a person should know (unsupported sampler...)

    bool has(std::string_view field) const;
};

// Throws MetadataError ("PNG text 'parameters': ...") for text over kMaxMetadataText or invalid UTF-8.
void checkUntrustedText(std::string_view name, std::string_view text);
bool isValidUtf8(std::string_view text, std::size_t* firstBad = nullptr);

// The file name part of a model reference from metadata ("SDXL/juggernaut.safetensors" -> "juggernaut.safetensors",
// "C:\\models\\a.ckpt" -> "a.ckpt"). Returns "" for anything still unsafe ("..", control characters, "C:x").
std::string safeModelName(std::string_view raw);

// ComfyUI API-format graph (PNG text "prompt"), followed from the image's save node back to the sampler that made
// it (comfyui_prompt.cpp): seed, steps, CFG, sampler and scheduler (KSampler, KSamplerAdvanced, SamplerCustom and
// its parts), denoise, the prompts, the size, the checkpoint and LoRAs on the model chain, clip skip, and a second
// pass after an upscale as the hires fix. Throws MetadataError when the text is not a JSON object.
GenerationInfo readComfyUiPrompt(std::string_view json);
// ComfyUI's UI "workflow" (nodes with widget values, and links), for images that carry no API "prompt": each node's
// widgets named as the node type declares them, then read as readComfyUiPrompt reads. Throws MetadataError when the
// text is not a workflow.
GenerationInfo readComfyUiWorkflow(std::string_view json);

// InvokeAI 3.x-5.x "invokeai_metadata" JSON. Throws MetadataError when the text is not a JSON object.
GenerationInfo readInvokeAiMetadata(std::string_view json);

// Fooocus' "fooocus" metadata scheme: JSON in PNG text "parameters" (lower_case keys since 2.2, "Title Case"
// keys before). Its A1111 scheme goes through parseA1111Parameters. Throws MetadataError when not a JSON object.
GenerationInfo readFooocusMetadata(std::string_view json);

// Other tools' formats (other_tools.cpp). Each throws MetadataError when its text is not what the format holds.
GenerationInfo readInvokeAiDream(std::string_view text);       // InvokeAI 1.x-2.x PNG text "Dream": "prompt [neg]" -s -S -W…
GenerationInfo readInvokeAiSdMetadata(std::string_view json);  // InvokeAI 2.x "sd-metadata"
// NovelAI: "Comment" JSON, with "Description" (the prompt) and "Source" (its model).
GenerationInfo readNovelAiMetadata(std::string_view comment, std::string_view description, std::string_view source);
GenerationInfo readSwarmUiParameters(std::string_view json);   // SwarmUI: {"sui_image_params": …} in "parameters"
GenerationInfo readEasyDiffusion(const std::map<std::string, std::string>& pngText);  // one PNG text chunk per field
GenerationInfo readDrawThings(std::string_view xmp);           // Draw Things: XMP with exif:UserComment JSON

struct Sidecar;
// A DiffusionDesk sidecar as GenerationInfo: every field, the seeds this file's image had (api::fromImage).
GenerationInfo sidecarToInfo(const Sidecar& sidecar);

// Picks the reader from the PNG text chunks (keyword -> text): "diffusiondesk" sidecar JSON first (exact), then
// "parameters" (A1111 text, SwarmUI or Fooocus JSON), "invokeai_metadata", "sd-metadata", "Dream", NovelAI's
// "Comment", Easy Diffusion's fields, "prompt" (ComfyUI), Draw Things' XMP. nullopt when none is present. When the
// best chunk is unreadable the next is tried and the failure becomes a warning; throws MetadataError only when
// every candidate fails.
std::optional<GenerationInfo> readGenerationInfo(const std::map<std::string, std::string>& pngText);

// The PNG keyword under which DiffusionDesk stores its sidecar JSON next to "parameters".
inline constexpr const char* kSidecarPngKey = "diffusiondesk";

} // namespace dd::settings
