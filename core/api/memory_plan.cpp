#include "core/api/memory_plan.h"

#include "core/api/json_optional.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace dd::api {
namespace {

template <typename E, size_t N>
E parseEnum(const nlohmann::json& j, const char* key, const std::pair<E, const char*> (&names)[N]) {
    const auto s = j.get<std::string>();
    for (const auto& [value, name] : names)
        if (s == name) return value;
    std::string choices;
    for (const auto& [value, name] : names) choices += std::string(choices.empty() ? "" : ", ") + name;
    throw std::invalid_argument(std::string("memory plan: ") + key + " '" + s + "' is unknown (use " + choices + ")");
}

constexpr std::pair<Precision, const char*> kPrecisions[] = {
    {Precision::FP32, "fp32"}, {Precision::FP16, "fp16"}, {Precision::BF16, "bf16"}};
constexpr std::pair<Attention, const char*> kAttentions[] = {
    {Attention::Sdpa, "sdpa"}, {Attention::SdpaMath, "sdpa-math"}, {Attention::Sliced, "sliced"}, {Attention::Chunked, "chunked"}};
constexpr std::pair<Offload, const char*> kOffloads[] = {
    {Offload::None, "none"}, {Offload::Model, "model"}, {Offload::Sequential, "sequential"}, {Offload::Group, "group"}};

template <typename E, size_t N>
const char* nameOf(E e, const std::pair<E, const char*> (&names)[N]) {
    for (const auto& [value, name] : names)
        if (value == e) return name;
    return "?";
}

} // namespace

const char* precisionName(Precision p) { return nameOf(p, kPrecisions); }
const char* attentionName(Attention a) { return nameOf(a, kAttentions); }
const char* offloadName(Offload o) { return nameOf(o, kOffloads); }

void to_json(nlohmann::json& j, const MemoryPlan& p) {
    j = {{"device", p.device},
         {"precision", {{"unet", precisionName(p.unet)}, {"text_encoder", precisionName(p.textEncoder)}, {"vae", precisionName(p.vae)}}},
         {"vae_upcast", p.vaeUpcast}, {"attention", attentionName(p.attention)},
         {"attention_slice_size", p.attentionSliceSize}, {"query_chunk_size", p.queryChunkSize},
         {"vae_slicing", p.vaeSlicing}, {"vae_tiling", p.vaeTiling}, {"vae_tile_size", p.vaeTileSize}, {"channels_last", p.channelsLast},
         {"winograd_conv", p.winogradConv},
         {"offload", offloadName(p.offload)}, {"group_blocks", p.groupBlocks},
         {"offload_to_disk", p.offloadToDisk}, {"fp8_storage", p.fp8Storage},
         {"threads", p.threads}, {"swap_models", p.swapModels}};
    if (!p.maxMemory.empty()) j["max_memory"] = p.maxMemory;
}

void from_json(const nlohmann::json& j, MemoryPlan& p) {
    auto get = [&](const char* key, auto& field) { readIfPresent(j, key, field); };
    get("device", p.device);
    if (const auto it = j.find("precision"); it != j.end()) {
        // One string sets all three components; an object sets them one by one.
        if (it->is_string()) {
            p.unet = p.textEncoder = p.vae = parseEnum(*it, "precision", kPrecisions);
        } else {
            if (it->contains("unet")) p.unet = parseEnum(it->at("unet"), "precision.unet", kPrecisions);
            if (it->contains("text_encoder")) p.textEncoder = parseEnum(it->at("text_encoder"), "precision.text_encoder", kPrecisions);
            if (it->contains("vae")) p.vae = parseEnum(it->at("vae"), "precision.vae", kPrecisions);
        }
    }
    get("vae_upcast", p.vaeUpcast);
    if (j.contains("attention")) p.attention = parseEnum(j.at("attention"), "attention", kAttentions);
    get("attention_slice_size", p.attentionSliceSize);
    get("query_chunk_size", p.queryChunkSize);
    get("vae_slicing", p.vaeSlicing);
    get("vae_tiling", p.vaeTiling);
    get("vae_tile_size", p.vaeTileSize);
    get("channels_last", p.channelsLast);
    get("winograd_conv", p.winogradConv);
    if (j.contains("offload")) p.offload = parseEnum(j.at("offload"), "offload", kOffloads);
    get("group_blocks", p.groupBlocks);
    get("offload_to_disk", p.offloadToDisk);
    get("fp8_storage", p.fp8Storage);
    get("threads", p.threads);
    get("swap_models", p.swapModels);
    if (const auto it = j.find("max_memory"); it != j.end()) {
        // Each cap read as a checked whole number (jsonAs), the key in any message.
        std::map<std::string, int64_t> caps;
        if (!it->is_object())
            throw nlohmann::json::type_error::create(302, std::string("max_memory: type must be object, but is ") + it->type_name(), nullptr);
        for (const auto& [device, bytes] : it->items()) {
            int64_t cap = 0;
            readIfPresent(*it, device.c_str(), cap);
            caps[device] = cap;
        }
        p.maxMemory = std::move(caps);
    }
}

void validate(const MemoryPlan& p) {
    auto fail = [](const std::string& m) { throw std::invalid_argument("memory plan: " + m); };
    if (p.device != "auto" && p.device != "cpu" && p.device != "balanced" && p.device.rfind("cuda", 0) != 0)
        fail("device '" + p.device + "' is unknown (use auto, cpu, cuda, cuda:N or balanced)");
    if (p.device == "balanced" && p.offload != Offload::None)
        fail("balanced placement keeps each network on one device: it cannot be combined with offload (choose one)");
    for (const auto& [device, bytes] : p.maxMemory) {
        const bool cudaIndex = device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
                               device.find_first_not_of("0123456789", 5) == std::string::npos;
        if (!cudaIndex) fail("max_memory names device '" + device + "': use cuda:N");
        if (bytes <= 0) fail("max_memory for " + device + " must be positive");
    }
    if (p.attentionSliceSize < 0) fail("attention slice size must be 0 (auto) or positive");
    if (p.queryChunkSize < 1) fail("query chunk size must be positive");
    if (p.groupBlocks < 0) fail("group offload needs 0 (leaf level) or more blocks per group");
    if (p.offloadToDisk && p.offload != Offload::Group) fail("offload to disk works with group offload only");
    if (p.vaeTileSize < 0 || p.vaeTileSize % 8) fail("VAE tile size must be 0 (the VAE's own) or a multiple of 8 pixels");
    if (!p.fp8Storage.empty() && p.fp8Storage != "e4m3fn" && p.fp8Storage != "e5m2")
        fail("fp8 storage '" + p.fp8Storage + "' is unknown (use e4m3fn or e5m2, or leave it empty)");
    if (p.threads < 0) fail("threads must be 0 (default) or positive");
}

} // namespace dd::api
