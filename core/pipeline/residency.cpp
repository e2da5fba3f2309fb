#include "core/pipeline/residency.h"

#include "core/memory/memory_probe.h"
#include "core/memory/predictor.h"
#include "core/pipeline/memory_prediction.h"

#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>

namespace dd::pipeline {
namespace {

// Where disk offload writes its (immediately unlinked) files.
std::string offloadFolder() {
    if (const char* dir = std::getenv("DD_OFFLOAD_DIR"); dir && *dir) return dir;
    return std::filesystem::temp_directory_path().string();
}

} // namespace

int64_t weightBytes(const torch::nn::Module& net) {
    int64_t n = 0;
    for (const auto& p : net.parameters()) n += p.numel() * int64_t(p.element_size());
    return n;
}

// Offload means something only when the compute device is not the CPU (or a test asks for it there).
std::string offloadKey(const api::MemoryPlan& plan, bool offload) {
    return std::string(offload ? api::offloadName(plan.offload) : "none") + "/" + std::to_string(plan.groupBlocks) + "/" +
           plan.fp8Storage + (offload && plan.offloadToDisk ? "/disk" : "");
}

// One network under its offload per the plan, or recorded as resident on the device.
static void attachNetwork(Residency& r, torch::nn::Module* net, const api::MemoryPlan& plan, torch::Device device, bool offload,
                          const std::string& computeLabel, torch::ScalarType dtype, bool channelsLast, bool isUnet) {
    const auto fp8 = memory::fp8DtypeOf(plan.fp8Storage);
    if (!offload && !(isUnet && fp8)) {
        r.ledger.place(net, computeLabel, weightBytes(*net));
        return;
    }
    memory::OffloadConfig c;
    c.mode = offload ? plan.offload : api::Offload::None;
    c.groupBlocks = plan.groupBlocks;
    c.home = offload ? torch::Device(torch::kCPU) : device;
    c.compute = device;
    c.computeDtype = dtype;
    if (isUnet) c.fp8 = fp8;
    c.channelsLast = channelsLast;
    if (offload && plan.offloadToDisk) c.diskFolder = offloadFolder();
    c.homeLabel = !offload ? computeLabel : c.diskFolder.empty() ? "cpu" : "disk";
    c.computeLabel = computeLabel;
    r.offloads[net] = std::make_unique<memory::NetworkOffload>(*net, c, r.ledger);
}

// Puts every network of `m` under its offload (or records it as resident on the device) per the plan.
void attachOffloads(Residency& r, SdModel& m, const Placing& placing, const torch::nn::Module* only) {
    const auto& [plan, device, offload, computeLabel] = placing;
    const Placement& p = m.placement;
    // A balanced placement (never offloaded) names each part's own device and ledger label.
    auto attach = [&](const char* part, torch::nn::Module* net, torch::ScalarType dtype, bool channelsLast, bool isUnet) {
        if (!net || (only && net != only)) return;
        attachNetwork(r, net, plan, p.computeDeviceOf(part, device), offload, p.labelOf(part, computeLabel), dtype,
                      channelsLast, isUnet);
    };
    attach("unet", m.unet.get(), p.unet, p.channelsLast, true);
    attach("vae", m.vae.get(), p.vae, p.channelsLast, false);
    for (auto [part, te] : {std::pair{"text_encoder", &m.textEncoder}, std::pair{"text_encoder_2", &m.textEncoder2}}) {
        if (!*te) continue;
        attach(part, te->get(), p.textEncoder, false, false);
        if (offload) (*te)->inputDevice = device;
    }
}

void attachExtraNetwork(Residency& r, torch::nn::Module& net, const Placing& placing, torch::ScalarType dtype, bool channelsLast) {
    if (r.of(&net)) return;
    attachNetwork(r, &net, placing.plan, placing.device, placing.offload, placing.computeLabel, dtype, channelsLast, false);
}

void editWithOffloadsDetached(Residency& r, SdModel& m, const Placing& placing, const std::function<void()>& edit) {
    std::vector<const torch::nn::Module*> detached;
    for (const torch::nn::Module* net : {static_cast<const torch::nn::Module*>(m.unet.get()),
                                         m.textEncoder ? static_cast<const torch::nn::Module*>(m.textEncoder.get()) : nullptr,
                                         m.textEncoder2 ? static_cast<const torch::nn::Module*>(m.textEncoder2.get()) : nullptr})
        if (net && r.offloads.erase(net)) detached.push_back(net);  // the destructor gives the stored copies back
    const auto reattach = [&] {
        for (const auto* net : detached) attachOffloads(r, m, placing, net);
    };
    try {
        edit();
    } catch (...) {
        reattach();
        throw;
    }
    reattach();
}

// Changes the dtype a network computes in (the NaN retry): through its offload when it has one.
void computeIn(const Residency& r, torch::nn::Module& net, torch::ScalarType dtype, bool channelsLast) {
    if (auto* o = r.of(&net)) o->setComputeDtype(dtype);
    else placeNetwork(net, net.parameters().front().device(), dtype, channelsLast);  // where it lives
}

// The message when even the most frugal setting ran out of memory: what was tried and what the stage needs.
std::string outOfMemoryMessage(memory::Stage stage, const std::string& error, const std::vector<std::string>& tried,
                               const SdModel& m, const api::GenerationSettings& s, const Placing& placing) {
    std::string msg = std::string("out of memory in ") + memory::stageName(stage) + " and nothing more frugal is left to try";
    for (size_t i = 0; i < tried.size(); ++i) msg += (i ? ", " : " (tried: ") + tried[i] + (i + 1 == tried.size() ? ")" : "");
    try {
        const torch::Device device = placing.device;
        auto asTried = s;
        asTried.plan = placing.plan;
        const auto p = memory::predict(modelShapeOf(m), predictInput(asTried, {.cuda = device.is_cuda()}));
        const auto& e = stage == memory::Stage::Encode ? p.encode : stage == memory::Stage::Denoise ? p.denoise : p.decode;
        msg += ". This stage needs about " + memory::formatGb(e.total()) + " (predicted: " + memory::formatGb(e.weights) +
               " of weights, " + memory::formatGb(e.activations) + " for " + e.peakAt + ")";
        if (device.is_cuda()) {
            const auto now = memory::sampleMemory(int(device.index()));
            msg += "; the GPU has " + memory::formatGb(now.deviceFree) + " free of " + memory::formatGb(now.deviceTotal);
        }
    } catch (const std::exception&) {
        // No prediction for this model: the message still says what was tried.
    }
    return msg + ". Lower the size or the batch size, or close programs that use the memory. (" +
           error.substr(0, error.find('\n')) + ")";
}

} // namespace dd::pipeline
