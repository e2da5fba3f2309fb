#pragma once
// Restore generation settings from whatever a user drops on the window or passes to `generate --from`:
// a PNG / JPEG / WebP with metadata (A1111, DiffusionDesk, ComfyUI, InvokeAI, Fooocus, stable-diffusion.cpp),
// a DiffusionDesk sidecar (.json), a plain settings JSON, another tool's JSON, or an A1111 .txt.
//
//   const Restored r = restoreFromFile(path);            // throws MetadataError naming the file
//   panel.apply(r.settings, r.fields);                   // only the fields the file carried
//   findModelByHash(knownModels, r.modelHash, r.modelName);  (core/settings/model_lookup.h)
//   for (const auto& [key, value] : r.unknown) ...       // not fatal: keys we do not use (Hires, ADetailer...)
//
// Everything read is untrusted: 1 MiB per text, valid UTF-8 only, and no path from the metadata survives:
// r.settings.model is empty (resolve r.modelName / r.modelHash locally) and r.settings.initImage is a bare file
// name, to be looked up only inside the output folder (resolveInsideFolder). Pure: no torch, no Qt; thread-safe.
#include "core/settings/generation_info.h"
#include "core/settings/sidecar.h"

#include <optional>
#include <string>
#include <string_view>

namespace dd::settings {

struct Restored : GenerationInfo {
    // Where the settings came from: "png", "jpeg", "webp" (image metadata), "sidecar", "settings-json",
    // "comfyui-json", "invokeai-json", "fooocus-json", "a1111-text". GenerationInfo::format names the dialect.
    std::string source;
    std::optional<Sidecar> sidecar;  // the whole sidecar when the source was one
};

// Files larger than this are refused before reading (a PNG with 64 MiB of text is already absurd).
inline constexpr std::size_t kMaxRestoreFileBytes = 512u << 20;

Restored restoreFromFile(const std::string& path);

// The same from bytes already in memory; `name` labels messages (fuzzed).
Restored restoreFromBytes(std::string_view bytes, std::string_view name);

// `folder`/`name` when `name` is a bare file name (safeModelName) that exists there as a regular file and does
// not leave the folder through a symlink; nullopt otherwise. For init images named by metadata.
std::optional<std::string> resolveInsideFolder(const std::string& folder, const std::string& name);

} // namespace dd::settings
