// Ref: diffusers pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl.py (__call__: denoising_end) and
// pipeline_stable_diffusion_xl_img2img.py (get_timesteps with denoising_start); sd_reference.md §12.
#include "core/pipeline/refiner.h"

#include "core/io/model_hash.h"
#include "core/nn/config_value.h"
#include "core/sched/scheduler.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace dd::pipeline {
namespace {

// Python's round() rounds halves to even, as nearbyint does in the default rounding mode.
int64_t timestepCutoff(int64_t numTrain, double switchAt) {
    return int64_t(std::nearbyint(double(numTrain) - switchAt * double(numTrain)));
}

std::vector<double> timestepValues(const sched::Scheduler& s) {
    const auto t = s.timesteps().to(torch::kCPU, torch::kDouble).contiguous();
    return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

// Moves the networks of `m` (and `beside`) that are not under an offload (those already go home between uses)
// and records where they now are.
void moveResident(Residency& r, SdModel& m, torch::Device to, const std::string& label,
                  const std::vector<torch::nn::Module*>& beside = {}) {
    // In the dtype it computes in now: the NaN retry may have switched a UNet to fp32 for this run.
    auto move = [&](torch::nn::Module* net, bool channelsLast) {
        if (!net || r.of(net)) return;
        const auto params = net->parameters();
        if (params.empty()) return;
        placeNetwork(*net, to, params.front().scalar_type(), channelsLast);
        r.ledger.place(net, label, weightBytes(*net));
    };
    move(m.unet.get(), m.placement.channelsLast);
    move(m.vae.get(), m.placement.channelsLast);
    move(m.textEncoder ? m.textEncoder.get() : nullptr, false);
    move(m.textEncoder2 ? m.textEncoder2.get() : nullptr, false);
    for (auto* net : beside) move(net, m.placement.channelsLast);  // ControlNets are placed like the UNet
}

std::vector<const torch::nn::Module*> networksOf(const SdModel& m) {
    std::vector<const torch::nn::Module*> nets{m.unet.get(), m.vae.get()};
    if (m.textEncoder) nets.push_back(m.textEncoder.get());
    if (m.textEncoder2) nets.push_back(m.textEncoder2.get());
    return nets;
}

} // namespace

int64_t numTrainTimesteps(const nlohmann::json& schedulerConfig) {
    return schedulerConfig.is_object() ? nn::configValue<int64_t>(schedulerConfig, "num_train_timesteps", 1000) : 1000;
}

int64_t baseEndIndex(const sched::Scheduler& base, int64_t numTrain, double switchAt) {
    const double cutoff = double(timestepCutoff(numTrain, switchAt));
    int64_t n = 0;
    for (double t : timestepValues(base)) n += t >= cutoff;
    while (n < int64_t(base.timesteps().size(0)) && !base.beginsStep(n)) ++n;  // the step under way is finished
    return n;
}

int64_t refinerBeginIndex(const sched::Scheduler& refiner, int64_t numTrain, double switchAt) {
    const double cutoff = double(timestepCutoff(numTrain, switchAt));
    const auto ts = timestepValues(refiner);
    int64_t n = 0;
    for (double t : ts) n += t < cutoff;
    // diffusers' Heun: an even count would begin inside a step, so it takes one more (diffusers' rule).
    if (refiner.order() == 2 && n % 2 == 0) ++n;
    int64_t begin = std::max<int64_t>(int64_t(ts.size()) - n, 0);
    while (begin < int64_t(ts.size()) && !refiner.beginsStep(begin)) ++begin;  // where the base left off
    return begin;
}

void checkRefinerFits(const SdModel& base, const SdModel& refiner) {
    const auto& b = base.unet->config();
    const auto& r = refiner.unet->config();
    if (b.inChannels != r.inChannels || base.vaeScaleFactor() != refiner.vaeScaleFactor())
        throw std::invalid_argument("the refiner '" + refiner.displayName + "' works on other latents than the base '" +
                                    base.displayName + "' (" + std::to_string(r.inChannels) + " vs " +
                                    std::to_string(b.inChannels) + " channels): choose a refiner of the same family");
}

SdModel& RefinerSlot::load(const std::string& source, const Placement& want, Residency& r, const Placing& placing) {
    const auto& [plan, device, offload, computeLabel] = placing;
    // Swapping means something only when the networks stay on a device other than home (tests on the CPU label
    // the compute side "compute"); fp8 storage keeps the UNet under an offload at the device, so it stays together.
    // A balanced placement puts the refiner's networks on the devices of the base's (not swapped: one device each).
    const bool swap = plan.swapModels && !offload && plan.fp8Storage.empty() && want.devices.empty() &&
                      (device.is_cuda() || computeLabel == "compute");
    Placement place = want;
    if (swap) place.device = torch::kCPU;
    std::string wantKey = source + "\n" + r.key + (swap ? "\nswap" : "\ntogether") + "\n" + place.device.str() + "/" +
                          std::to_string(int(place.unet)) + std::to_string(int(place.textEncoder)) +
                          std::to_string(int(place.vae)) + std::to_string(place.vaeUpcast) + std::to_string(place.channelsLast);
    if (model && key == wantKey) return *model;
    release(r);
    model = loadSdModel(source, place);
    std::error_code ec;
    hash = std::filesystem::is_regular_file(source, ec) ? io::hashModelFile(source).shortHash : std::string();
    swapped = swap;
    refinerAway = swap;
    if (swap) moveResident(r, *model, torch::kCPU, "cpu");  // recorded at home; moved in by useRefiner
    else attachOffloads(r, *model, placing);
    key = wantKey;
    return *model;
}

void RefinerSlot::useBase(Residency& r, SdModel& base, const std::vector<torch::nn::Module*>& beside, const Placing& placing) {
    if (model && swapped && !refinerAway) {
        moveResident(r, *model, torch::kCPU, "cpu");
        refinerAway = true;
    }
    if (baseAway) {
        moveResident(r, base, placing.device, placing.computeLabel, beside);
        baseAway = false;
    }
}

void RefinerSlot::useRefiner(Residency& r, SdModel& base, const std::vector<torch::nn::Module*>& beside,
                             const Placing& placing) {
    if (!model || !swapped) return;
    if (!baseAway) {
        moveResident(r, base, torch::kCPU, "cpu", beside);
        baseAway = true;
    }
    if (refinerAway) {
        moveResident(r, *model, placing.device, placing.computeLabel);
        refinerAway = false;
    }
}

void RefinerSlot::release(Residency& r) {
    if (!model) return;
    for (const auto* net : networksOf(*model)) {
        r.offloads.erase(net);
        r.ledger.remove(net);
    }
    model.reset();
    hash.clear();
    key.clear();
    swapped = false;
    refinerAway = true;
}

} // namespace dd::pipeline
