#pragma once
// The SDXL refiner beside the base model (docs/refiner.md): where the base's schedule is cut, the refiner
// model kept between runs, and which of the two is on the device when the plan swaps them.
// Used by engine.cpp only (the denoising loop there runs both stretches of the schedule).
#include "core/pipeline/residency.h"
#include "core/pipeline/sd_model.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace dd::sched {
class Scheduler;
}

namespace dd::pipeline {

// diffusers' cut of one schedule at `switchAt` (discrete_timestep_cutoff = round(T − switchAt·T)): the base
// runs indices [begin, baseEnd) (denoising_end: the timesteps ≥ cutoff), the refiner [refinerBegin, size)
// (denoising_start: the timesteps < cutoff; one more for a 2nd-order scheduler whose count is even, so the
// refiner never starts between a Heun step's two evaluations). Each side is computed from its own scheduler,
// as each pipeline does; with first-order schedulers refinerBegin == baseEnd.
int64_t baseEndIndex(const sched::Scheduler& base, int64_t numTrainTimesteps, double switchAt);
int64_t refinerBeginIndex(const sched::Scheduler& refiner, int64_t numTrainTimesteps, double switchAt);
// The scheduler config's num_train_timesteps (1000 when absent, diffusers' default).
int64_t numTrainTimesteps(const nlohmann::json& schedulerConfig);

// Throws std::invalid_argument when `refiner` cannot continue `base`'s latents (another latent space).
void checkRefinerFits(const SdModel& base, const SdModel& refiner);

// The refiner model of the last run that asked for one, its hash and where it sits. Its networks are
// attached to the base's Residency (one ledger for all weights), so it is released whenever the base is.
struct RefinerSlot {
    std::unique_ptr<SdModel> model;
    std::string hash;   // A1111 short hash ("" for folders)
    std::string key;    // what it was loaded for: source, placement, residency key, swap
    bool swapped = false;     // plan.swapModels without offload: one model on the device at a time
    bool baseAway = false;    // the base's resident networks were moved off the device for the refiner
    bool refinerAway = true;  // a swapped refiner's networks are at home on the CPU

    // Loads `source` unless it is loaded for the same placement; a swapped refiner waits at home on the CPU.
    SdModel& load(const std::string& source, const Placement& want, Residency& r, const Placing& placing);
    // Before the base runs: the base back on the device (and a swapped refiner off it). `beside` are the networks
    // that live and move with the base (its ControlNets).
    void useBase(Residency& r, SdModel& base, const std::vector<torch::nn::Module*>& beside, const Placing& placing);
    // Before the refiner runs: under swap, the base (and `beside`) off the device and the refiner on it.
    void useRefiner(Residency& r, SdModel& base, const std::vector<torch::nn::Module*>& beside, const Placing& placing);
    // Its offloads and ledger records out of `r`, then the model.
    void release(Residency& r);
};

} // namespace dd::pipeline
