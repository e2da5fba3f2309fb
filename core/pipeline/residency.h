#pragma once
// Where the engine keeps each network's weights (core/memory/offload) and what it says when memory runs out.
// Used by engine.cpp only; a file of its own so the engine's loop stays readable.
#include "core/api/generation_settings.h"
#include "core/memory/ledger.h"
#include "core/memory/offload.h"
#include "core/memory/oom_retry.h"
#include "core/pipeline/sd_model.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dd::pipeline {

// A NetworkOffload per offloaded network and the ledger for all of them. The ledger is declared first so
// it outlives the offloads that write to it.
struct Residency {
    memory::ResidencyLedger ledger;
    std::map<const torch::nn::Module*, std::unique_ptr<memory::NetworkOffload>> offloads;
    std::string key;  // the plan's offload settings these were made for

    memory::NetworkOffload* of(const torch::nn::Module* net) const {
        const auto it = offloads.find(net);
        return it == offloads.end() ? nullptr : it->second.get();
    }
    void clear() {
        offloads.clear();
        ledger = {};
        key.clear();
    }
};

// A memory plan resolved for this machine once a run (engine.cpp's offloadSetupFor): the plan, the device the
// networks compute on, whether they are offloaded to it, and the ledger's name for that device. The five values
// every placement below needs travel as this one.
struct Placing {
    api::MemoryPlan plan;       // the run's current plan: an out-of-memory fallback makes it more frugal
    torch::Device device = torch::kCPU;
    bool offload = false;       // the networks live at home on the CPU and visit `device` per stage
    std::string computeLabel;   // "cuda:0"; "compute" when tests offload on the CPU
};

// Bytes of a network's weights as they are now (what the ledger records for a network that is not offloaded).
int64_t weightBytes(const torch::nn::Module& net);

// What identifies the placement a plan asks for (offload mode, blocks per group, fp8 storage, disk).
std::string offloadKey(const api::MemoryPlan& plan, bool offload);

// Puts every network of `m` (or only `only`) under its offload, or records it as resident on the device.
void attachOffloads(Residency& r, SdModel& m, const Placing& placing, const torch::nn::Module* only = nullptr);

// Puts a network that is not part of the model (a ControlNet) under an offload like the model's networks (no
// fp8 storage), or records it as resident; nothing to do when it already has its offload.
void attachExtraNetwork(Residency& r, torch::nn::Module& net, const Placing& placing, torch::ScalarType dtype, bool channelsLast);

// Runs `edit`, which writes parameters of `m`'s UNet or text encoders (merging or unmerging a LoRA), with their
// offloads detached: the parameters hold the stored copies again (fp8 ones included) instead of placeholders.
// The offloads are attached again afterwards, even if `edit` throws, so the new stored copies carry the edit.
void editWithOffloadsDetached(Residency& r, SdModel& m, const Placing& placing, const std::function<void()>& edit);

// Changes the dtype a network computes in (the NaN retry): through its offload when it has one, else in place
// on the device it lives on.
void computeIn(const Residency& r, torch::nn::Module& net, torch::ScalarType dtype, bool channelsLast);

// The message when even the most frugal setting ran out of memory: what was tried and what the stage needs.
std::string outOfMemoryMessage(memory::Stage stage, const std::string& error, const std::vector<std::string>& tried,
                               const SdModel& m, const api::GenerationSettings& s, const Placing& placing);

} // namespace dd::pipeline
