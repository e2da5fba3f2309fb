#pragma once
// How a generation uses memory: precision per component, attention backend, VAE slicing/tiling,
// channels_last, offload. Part of GenerationSettings (JSON round-trip); a preset (core/memory/preset.h) is a named
// plan with a budget.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dd::api {

enum class Precision { FP32, FP16, BF16 };
// Sdpa: torch picks the kernel. SdpaMath: SDPA forced to the math kernel (deterministic everywhere).
// Sliced: diffusers' attention slicing (slice over batch·heads). Chunked: query-chunked memory-efficient
// attention for CPUs (bounded [chunk, keys] score matrix).
enum class Attention { Sdpa, SdpaMath, Sliced, Chunked };
// Model: a whole component moves to the compute device when used. Sequential: per leaf module.
// Group: N blocks per group (groupBlocks; 0 = leaf level), next group prefetched.
enum class Offload { None, Model, Sequential, Group };

struct MemoryPlan {
    std::string device = "auto";           // "auto" (CUDA when present), "cpu", "cuda", "cuda:1", "balanced"
    // device "balanced": the networks spread over the CUDA devices, largest first, each device holding at most
    // its cap in weights (diffusers' device_map="balanced" with max_memory). Caps by device ("cuda:0"); a device
    // not named here: its total memory.
    std::map<std::string, int64_t> maxMemory;
    Precision unet = Precision::FP32;
    Precision textEncoder = Precision::FP32;
    Precision vae = Precision::FP32;
    bool vaeUpcast = true;                 // honour the VAE config's force_upcast (SDXL VAE in fp32)
    Attention attention = Attention::Sdpa;
    int attentionSliceSize = 0;            // Sliced: 0 = "auto" (heads / 2, diffusers), else heads per slice
    int queryChunkSize = 1024;             // Chunked: queries per chunk
    bool vaeSlicing = false;               // decode a batch one image at a time (exact)
    bool vaeTiling = false;                // overlapping tiles, diffusers' blending and thresholds
    int vaeTileSize = 0;                   // tile side in pixels (multiple of 8); 0 = the VAE's sample_size
    bool channelsLast = false;
    bool winogradConv = true;              // CPU fp32: large 3×3 convolutions by Winograd, small images by im2col +
                                           // matmul (core/nn/cpu_kernels.h); off: torch's, diffusers' arithmetic
    Offload offload = Offload::None;
    int groupBlocks = 1;                   // Group offload: blocks per group; 0 = leaf level (each layer a group)
    // Group offload: the stored copies live in a memory-mapped file (in $DD_OFFLOAD_DIR, else the temp folder)
    // instead of RAM, for machines whose RAM cannot hold the model either (diffusers' offload_to_disk_path).
    bool offloadToDisk = false;
    std::string fp8Storage;                // "", "e4m3fn", "e5m2": UNet weights stored in fp8, upcast per layer to unet precision
    int threads = 0;                       // CPU threads for torch (0: the cores other programs leave free)
    // A second model in the run (the SDXL refiner): false keeps both on the device (the 24 GB row); true
    // moves the base off the device before the refiner's stage and back at the next run (lower rows).
    bool swapModels = false;

    bool operator==(const MemoryPlan&) const = default;
};

const char* precisionName(Precision p);   // "fp32", "fp16", "bf16"
const char* attentionName(Attention a);   // "sdpa", "sdpa-math", "sliced", "chunked"
const char* offloadName(Offload o);       // "none", "model", "sequential", "group"

void to_json(nlohmann::json& j, const MemoryPlan& p);
// Missing keys keep defaults; unknown enum names throw std::invalid_argument naming the key and the choices.
void from_json(const nlohmann::json& j, MemoryPlan& p);
void validate(const MemoryPlan& p);  // std::invalid_argument with a message a person can act on

} // namespace dd::api
