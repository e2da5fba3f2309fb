#pragma once
// What a run returns: the images, the settings that made them, and what it measured. Plain values that cross
// threads and layers (the window, the CLI, sidecars, A/B compare).
#include "core/api/generation_settings.h"
#include "core/api/image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dd::api {

struct StageTimings {
    double loadSeconds = 0;
    double encodeSeconds = 0;
    std::vector<double> stepSeconds;
    double decodeSeconds = 0;
};

// Peak memory per stage, bytes (MemorySample peaks over the stage's window).
struct StagePeak {
    int64_t host = 0;    // process RSS peak
    int64_t device = 0;  // CUDA allocator peak (0 on CPU)
};
struct StageMemory {
    StagePeak load, encode, denoise, decode;
};

// What produced the pixels, so two results can be told apart (determinism, A/B, sidecars).
struct Environment {
    std::string appVersion;      // DD_VERSION
    std::string torchVersion;    // libtorch
    std::string device;          // "CPU", "NVIDIA H200"
    std::string precision;       // "unet=fp16 text_encoder=fp16 vae=fp32"
    std::string attention;       // backend actually used
    std::string offload;         // offload mode actually used
    int threads = 0;             // torch intra-op threads (at the end of the run: they may follow the load)
    bool deterministic = false;
};

struct GenerationResult {
    std::vector<Image> images;
    GenerationSettings settings;
    StageTimings timings;
    std::string modelName;  // what was actually run (e.g. "tiny random-weight demo (not a real model)")
    std::string modelHash;  // A1111 short hash of the checkpoint ("" for the built-in demo)
    StageMemory memory;
    Environment environment;
    bool textEncodeCached = false;       // the conditioning came from the cache
    std::vector<std::string> warnings;   // what the engine changed to make the run work (NaN retry, OOM fallback)
};

} // namespace dd::api
