#pragma once
// The JSON sidecar written next to every image (image.png -> image.json, and into the PNG as text
// "diffusiondesk"): everything needed to reproduce and to audit a run. Schema: docs/sidecar.md.
//
//   Sidecar sc{.settings = result.settings, .modelName = "v1-5-pruned-emaonly.safetensors", ...};
//   write(path, writeSidecar(sc));
//   Sidecar back = readSidecar(text);   // throws SidecarError with a message a person can act on
//
// Pure functions, thread-safe, no torch, no Qt. The environment strings are filled by the caller (the engine
// knows the device and libtorch version; this code never probes anything).
#include "core/pipeline/generation.h"
#include "core/settings/generation_info.h"
#include "core/settings/generation_settings.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dd::settings {

inline constexpr const char* kSidecarSchema = "diffusiondesk.sidecar/1";
inline constexpr int kSidecarSchemaVersion = 1;

class SidecarError : public MetadataError {
public:
    using MetadataError::MetadataError;
};

// What can change the pixels for the same settings and seed (see ARCHITECTURE.md, Determinism).
struct EnvironmentFingerprint {
    std::string torchVersion;      // "2.5.1"
    std::string device;            // "cuda:0 NVIDIA GeForce RTX 3060 (12 GB)", "cpu"
    std::string dtype;             // "float16"
    std::string attentionBackend;  // "sdpa-flash", "math", "sliced:4"
    std::string offloadMode;       // "none", "model", "sequential"
    std::string threads;           // CPU threads, as text ("8")
    std::string deterministic;     // "on" / "off"
    std::string os;                // "Debian GNU/Linux 12"

    bool operator==(const EnvironmentFingerprint&) const = default;
};

struct Sidecar {
    GenerationSettings settings;
    std::string modelName;       // file or folder name, never a full path (safeModelName on write and read)
    std::string modelHash;       // A1111 short hash (10 hex)
    std::string modelSha256;     // full SHA-256 when computed, else ""
    std::vector<int64_t> seeds;  // one per image of the batch (settings.seed + i)
    pipeline::StageTimings timings;
    double peakMemoryBytes = 0;  // 0 = not measured
    EnvironmentFingerprint environment;
    std::string appVersion;      // "0.1.0"
    std::string createdAt;       // ISO 8601 UTC, filled by the caller ("2025-01-31T12:00:00Z")
};

// Pretty-printed JSON (2-space indent, keys in schema order), ending in a newline.
std::string writeSidecar(const Sidecar& sidecar);

// Throws SidecarError: not JSON, not an object, no "schema" ("not a DiffusionDesk sidecar"), a newer schema
// version ("written by a newer DiffusionDesk (schema 2); this version reads schema 1"), or a field of the wrong
// type (named). Unknown fields are ignored, so later minor additions stay readable. Size and UTF-8 are checked.
Sidecar readSidecar(std::string_view json);

} // namespace dd::settings
