#include "core/pipeline/balanced_placement.h"

#include "core/memory/memory_probe.h"
#include "core/memory/predictor.h"
#include "core/pipeline/memory_prediction.h"

#include <torch/torch.h>

#include <stdexcept>

namespace dd::pipeline {
namespace {

std::vector<memory::DeviceCap> cudaCaps(const api::MemoryPlan& plan) {
    const int n = memory::cudaDeviceCount();
    if (n == 0)
        throw std::invalid_argument("memory plan: balanced placement spreads the networks over CUDA devices and none "
                                    "is available (use auto or cpu)");
    std::vector<memory::DeviceCap> caps;
    for (int i = 0; i < n; ++i) {
        const std::string name = "cuda:" + std::to_string(i);
        const auto cap = plan.maxMemory.find(name);
        // The total, not what is free now: the placement must not change once this model is loaded.
        caps.push_back({name, cap != plan.maxMemory.end() ? cap->second : memory::sampleMemory(i).deviceTotal});
    }
    return caps;
}

} // namespace

Placement balancedPlacement(const std::string& model, const api::MemoryPlan& plan, Placement p,
                            const std::vector<memory::DeviceCap>& standIns) {
    const auto caps = standIns.empty() ? cudaCaps(plan) : standIns;
    // Weight bytes as the networks will hold them: the plan's dtypes, fp8 storage, the SDXL VAE's upcast.
    const auto weights = memory::networkWeightBytes(modelShapeOf(model), plan);
    std::vector<memory::ComponentSize> parts{{"unet", weights.unet}, {"vae", weights.vae}};
    for (size_t i = 0; i < weights.textEncoders.size(); ++i)
        parts.push_back({i ? "text_encoder_2" : "text_encoder", weights.textEncoders[i]});

    const auto placed = memory::placeBalanced(parts, caps);
    p.devices.clear();
    p.labels.clear();
    for (const auto& [part, device] : placed.deviceOf) {
        p.devices.emplace(part, standIns.empty() && device != "cpu" ? torch::Device(device) : torch::Device(torch::kCPU));
        p.labels[part] = device;
    }
    p.device = p.deviceOf("unet");
    return p;
}

std::string placementSummary(const Placement& p) {
    std::string s;
    for (const char* part : {"unet", "text_encoder", "text_encoder_2", "vae"})
        if (p.labels.count(part)) s += (s.empty() ? "" : " ") + std::string(part) + "=" + p.labels.at(part);
    return s;
}

} // namespace dd::pipeline
