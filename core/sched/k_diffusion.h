#pragma once
// Internal to core/sched: k-diffusion's view of a model, the noise schedules A1111 offers over it, and the
// k-diffusion samplers themselves, as A1111 and ComfyUI sample with them.
//
// k-diffusion works in σ: a CompVis model (CompVisDenoiser) is called with its input scaled by 1/√(σ²+1) at the
// fractional timestep t(σ) found by interpolating log σ over the training schedule. Its samplers take several
// model evaluations per step at σ they compute from the schedule (DPM2's midpoint, DPM++ SDE's half step), so
// here every evaluation is one entry of timesteps(), and step() advances from one evaluation to the next.
#include "core/sched/schedule_math.h"
#include "core/sched/scheduler.h"

#include <memory>
#include <string>
#include <vector>

namespace dd::sched {

// k-diffusion's DiscreteSchedule of a CompVis model: σ per training timestep, from alphas_cumprod as the CompVis
// model holds it (betas and their product in float64, stored in float32), every operation in float32 torch.
// `comfy`: as ComfyUI's ModelSamplingDiscrete holds them instead (σ and log σ in float64, stored in float32).
// `Lcm`: A1111's LCMCompVisDenoiser, which sees only the 50 timesteps an LCM was distilled on (19, 39 … 999): its
// t is the nearest of them (A1111's LCM sampler runs the model there), its σ interpolated between them.
class KModelSigmas {
public:
    enum class Kind { CompVis, ComfyUI, Lcm };
    KModelSigmas(const ConfigReader& config, Kind kind);
    const at::Tensor& sigmas() const { return m_sigmas; }  // ascending, float32 [T] (Lcm: [50])
    double sigmaMin() const;
    double sigmaMax() const;
    at::Tensor sigmaToT(const at::Tensor& sigma) const;  // unquantized: interpolated in log σ (Lcm: quantized)
    at::Tensor nearestT(const at::Tensor& sigma) const;  // ComfyUI's: the training timestep nearest in log σ
    at::Tensor tToSigma(const at::Tensor& t) const;
    at::Tensor uniformSigmas(int64_t n) const;           // get_sigmas(n): t evenly from the largest to the smallest, then 0

private:
    at::Tensor indexToSigma(const at::Tensor& index) const;  // k-diffusion's t_to_sigma over this table
    at::Tensor m_sigmas, m_logSigmas;
    int64_t m_lcmSkip = 0;  // Lcm: training timesteps per table entry (20)
};

// The CompVis model's alphas_cumprod, as A1111's models hold it: betas and their product in float64.
at::Tensor ldmAlphasCumprod(const ConfigReader& cfg);

// The schedule types of A1111's sd_schedulers.py by label ("Uniform", "Karras", "Exponential", "Polyexponential",
// "SGM Uniform", "KL Optimal", "Simple", "Normal", "DDIM", "Beta"), `steps` σ and the final 0 (float32, CPU).
// `comfy`: ComfyUI's Beta (in timestep space) and KL Optimal (ending in 0), its other schedules being A1111's.
// Throws std::invalid_argument for another label.
at::Tensor scheduleSigmas(const std::string& label, int64_t steps, const KModelSigmas& model, bool comfy = false);
const std::vector<std::string>& scheduleLabels();

// The sampler A1111 calls `name` ("Euler", "DPM++ SDE"…) over the schedule `label` ("Automatic": the sampler's own
// default, api::automaticSchedule). Throws std::invalid_argument for a sampler outside the k-diffusion family.
std::unique_ptr<Scheduler> makeKDiffusion(const std::string& name, const std::string& label, const nlohmann::json& config);

// A1111's own DDIM (at its default η = 0) and PLMS: CompVis's samplers at whole timesteps over A1111's grid
// (a1111_timesteps.cpp). Throws std::invalid_argument for another name.
std::unique_ptr<Scheduler> makeA1111Timesteps(const std::string& name, const nlohmann::json& config);

} // namespace dd::sched
