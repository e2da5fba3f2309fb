#pragma once
// Internal to core/sched (and its tests): one constructor function per diffusers scheduler class, each
// taking the class's config JSON (missing keys = that class's defaults), plus the bases they share.
#include "core/sched/schedule_math.h"
#include "core/sched/scheduler.h"

#include <memory>

namespace dd::sched {

std::unique_ptr<Scheduler> makeEulerDiscrete(const nlohmann::json& config);
std::unique_ptr<Scheduler> makeEulerAncestralDiscrete(const nlohmann::json& config);
std::unique_ptr<Scheduler> makeDDIM(const nlohmann::json& config);
std::unique_ptr<Scheduler> makePNDM(const nlohmann::json& config);
std::unique_ptr<Scheduler> makeDPMSolverMultistep(const nlohmann::json& config);
std::unique_ptr<Scheduler> makeHeunDiscrete(const nlohmann::json& config);
std::unique_ptr<Scheduler> makeLMSDiscrete(const nlohmann::json& config);
std::unique_ptr<Scheduler> makeUniPCMultistep(const nlohmann::json& config);
std::unique_ptr<Scheduler> makeLCM(const nlohmann::json& config);

// LMS integration coefficient ∫_{σ_t}^{σ_{t+1}} Π_{k≠j} (τ − σ_{t−k})/(σ_{t−j} − σ_{t−k}) dτ
// (diffusers LMSDiscreteScheduler.get_lms_coefficient, which integrates with scipy quad).
double lmsCoefficient(const std::vector<float>& sigmas, int order, int64_t t, int currentOrder);

enum class Prediction { Epsilon, VPrediction, Sample };
Prediction readPrediction(const ConfigReader& cfg);

// Base of the σ-parameterised (k-diffusion style) schedulers: Euler, Euler a, Heun, LMS. Latents live at
// scale √(σ²+1); the UNet input is divided by it.
class SigmaScheduler : public Scheduler {
public:
    double initNoiseSigma() const override;
    at::Tensor scaleModelInput(const at::Tensor& sample, int64_t stepIndex) override;
    at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t stepIndex) const override;

protected:
    SigmaScheduler(const nlohmann::json& config, double betaStart, double betaEnd, const std::string& schedule,
                   const std::string& spacing);
    float sigmaAt(int64_t i) const { return m_sigmas.data_ptr<float>()[i]; }
    // x0 from the model output at σ (epsilon / v_prediction / sample), like the diffusers step functions.
    at::Tensor predictOriginal(const at::Tensor& modelOutput, const at::Tensor& sample, float sigma) const;
    // Interpolated σ for `timesteps`, optionally replaced by Karras σ with t recomputed (Euler/Heun/LMS rule:
    // σ_min/σ_max are the ends of the interpolated list unless configLimits lets the config's sigma_min/sigma_max
    // override them, as Euler's does); returns {timesteps, sigmas} before the final σ.
    std::pair<std::vector<double>, std::vector<double>> sigmasFor(std::vector<double> timesteps, bool karras,
                                                                  bool configLimits = false) const;

    ConfigReader m_cfg;
    TrainSchedule m_train;
    Spacing m_spacing;
    int64_t m_stepsOffset;
    Prediction m_prediction;
};

// The VP add_noise of DDIM/PNDM/LCM: √ᾱ_t·x + √(1−ᾱ_t)·noise, coefficients in the sample's dtype.
at::Tensor addNoiseVP(const TrainSchedule& train, const at::Tensor& original, const at::Tensor& noise, int64_t t);

} // namespace dd::sched
