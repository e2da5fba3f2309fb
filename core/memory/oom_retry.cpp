#include "core/memory/oom_retry.h"

#include <algorithm>

namespace dd::memory {
namespace {

std::optional<Fallback> lowerPreset(const FrugalState& s, const RetryContext& ctx) {
    if (!ctx.presets) return std::nullopt;
    std::vector<const Preset*> gpu;
    for (const auto& p : *ctx.presets)
        if (p.plan.device != "cpu" && p.name != "cpu") gpu.push_back(&p);
    std::sort(gpu.begin(), gpu.end(), [](const Preset* a, const Preset* b) { return a->budgetBytes > b->budgetBytes; });
    int64_t below = INT64_MAX;
    for (const auto* p : gpu)
        if (p->name == s.preset) below = p->budgetBytes;
    for (const auto* p : gpu) {
        if (p->budgetBytes >= below || p->name == s.preset) continue;
        api::MemoryPlan plan = p->plan;
        // A balanced placement cannot offload: a preset that offloads runs on the first GPU instead.
        plan.device = s.plan.device == "balanced" && plan.offload != api::Offload::None ? "auto" : s.plan.device;
        plan.maxMemory = s.plan.maxMemory;
        plan.threads = s.plan.threads;
        if (plan == s.plan) continue;
        Fallback f{{plan, p->name, s.vaeOnCpu}, "preset " + p->name + " (" + p->strategy + ")", true};
        return f;
    }
    return std::nullopt;
}

} // namespace

const char* stageName(Stage s) {
    switch (s) {
    case Stage::Load: return "load";
    case Stage::Encode: return "text encode";
    case Stage::Denoise: return "denoise";
    case Stage::Decode: return "VAE decode";
    }
    return "?";
}

std::optional<Fallback> nextFallback(Stage stage, const FrugalState& s, const RetryContext& ctx) {
    Fallback f{s, {}, false};
    api::MemoryPlan& p = f.state.plan;
    switch (stage) {
    case Stage::Decode: {
        if (ctx.batch > 1 && !p.vaeSlicing) {
            p.vaeSlicing = true;
            f.change = "VAE slicing on";
            return f;
        }
        if (!p.vaeTiling) {
            p.vaeTiling = true;
            f.change = "VAE tiling on";
            return f;
        }
        const int tile = p.vaeTileSize > 0 ? p.vaeTileSize : ctx.vaeSampleSize;
        if (tile / 2 >= ctx.minTileSize && (tile / 2) % 8 == 0) {
            p.vaeTileSize = tile / 2;
            f.change = std::to_string(tile / 2) + "-px VAE tiles";
            return f;
        }
        if (!ctx.computeIsCpu && !s.vaeOnCpu) {
            f.state.vaeOnCpu = true;
            f.change = "VAE decode on the CPU";
            return f;
        }
        return std::nullopt;
    }
    case Stage::Denoise: {
        if (p.attention != api::Attention::Sliced) {
            p.attention = api::Attention::Sliced;
            p.attentionSliceSize = 0;
            f.change = "sliced attention (auto)";
            return f;
        }
        const int current = p.attentionSliceSize > 0 ? p.attentionSliceSize : std::max(ctx.maxHeads / 2, 1);
        if (current > 1) {
            p.attentionSliceSize = current / 2;
            f.change = "sliced attention (" + std::to_string(current / 2) + (current / 2 == 1 ? " head" : " heads") + " per slice)";
            return f;
        }
        return lowerPreset(s, ctx);
    }
    case Stage::Load:
    case Stage::Encode: return lowerPreset(s, ctx);
    }
    return std::nullopt;
}

} // namespace dd::memory
