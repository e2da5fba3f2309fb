#pragma once
// The JSON sidecar written next to every image (image.png -> image.json; its stable part also goes into the
// image: PNG iTXt "diffusiondesk", JPEG/WebP XMP): everything needed to reproduce and to audit a run. Schema: docs/sidecar.md.
//
//   Sidecar sc{.settings = result.settings, .modelName = "v1-5-pruned-emaonly.safetensors", ...};
//   write(path, writeSidecar(sc));
//   Sidecar back = readSidecar(text);   // throws SidecarError with a message a person can act on
//
// Pure functions, thread-safe, no torch, no Qt. The environment strings are filled by the caller (the engine
// knows the device and libtorch version; this code never probes anything).
#include "core/api/generation_result.h"
#include "core/api/generation_settings.h"
#include "core/settings/generation_info.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dd::settings {

inline constexpr const char* kSidecarSchema = "diffusiondesk.sidecar/2";
inline constexpr int kSidecarSchemaVersion = 2;

class SidecarError : public MetadataError {
public:
    using MetadataError::MetadataError;
};

// What a run cost: the caller's price per hour (a cloud GPU, electricity) times the run's wall time per image.
struct RunCost {
    double pricePerHour = 0;       // 0 = not given
    std::string currency = "USD";
    double secondsPerImage = 0;    // the generation's wall time / images
    double perImage() const { return pricePerHour * secondsPerImage / 3600.0; }
};

struct Sidecar {
    api::GenerationSettings settings;
    std::string modelName;       // file or folder name, never a full path (safeModelName on write and read)
    std::string modelHash;       // A1111 short hash (10 hex)
    std::string modelSha256;     // full SHA-256 when computed, else ""
    std::vector<int64_t> seeds;  // one per image of the batch (api::imageSeeds: seed + i, or the seed for all)
    int imageIndex = 0;          // which image of the batch this file is (its seeds: api::imageSeeds)
    api::StageTimings timings;
    api::StageMemory memory;           // peak host / device bytes per stage (0 = not measured)
    api::Environment environment;      // what produced the pixels (device, precision, threads...)
    std::vector<std::string> warnings;      // what the engine changed to make the run work
    RunCost cost;
    std::string appVersion;      // "0.1.0" (also environment.appVersion when the engine filled it)
    std::string createdAt;       // ISO 8601 UTC, filled by the caller ("2025-01-31T12:00:00Z")
};

// Which parts are written. Embedded: only what is the same on every rerun (no time, timings, memory peaks or
// cost), for the copy inside the image, so a deterministic rerun writes a byte-identical file.
enum class SidecarParts { Full, Embedded };

// Pretty-printed JSON (2-space indent, keys in schema order), ending in a newline.
std::string writeSidecar(const Sidecar& sidecar, SidecarParts parts = SidecarParts::Full);

// Reads schema 2 and schema 1 (its environment strings and single peak_memory_bytes are mapped: see
// docs/sidecar.md). Throws SidecarError: not JSON, not an object, no "schema" ("not a DiffusionDesk sidecar"), a
// newer schema version ("written by a newer DiffusionDesk (schema 3); this version reads schema 2"), or a field
// of the wrong type (named). Unknown fields are ignored, so later minor additions stay readable. Size and UTF-8
// are checked.
Sidecar readSidecar(std::string_view json);

// Where an image's sidecar lives: "out/cat.png" -> "out/cat.json".
std::string sidecarPathFor(const std::string& imagePath);
// Where a copy of what an image was made from lives beside it: ("out/cat.png", "mask", "in/m.webp") ->
// "out/cat.mask.webp" (roles "init" and "mask"). Such files are sources, not images of the library.
std::string sourcePathFor(const std::string& imagePath, const std::string& role, const std::string& sourcePath);
bool isSourceFile(const std::string& path);

} // namespace dd::settings
