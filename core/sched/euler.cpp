// Ref: diffusers schedulers/scheduling_euler_discrete.py, EulerDiscreteScheduler: __init__ defaults,
// set_timesteps (spacing, linear σ interpolation, use_karras_sigmas, final_sigmas_type) and step with the
// default s_churn = 0 (no churn noise). Supported: interpolation_type "linear", timestep_type "discrete".
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <stdexcept>

namespace dd::sched {
namespace {

class EulerDiscrete final : public SigmaScheduler {
public:
    explicit EulerDiscrete(const nlohmann::json& config)
        : SigmaScheduler(config, 0.0001, 0.02, "linear", "linspace"),
          m_karras(m_cfg.flag("use_karras_sigmas", false)),
          m_finalSigmaMin(m_cfg.choice("final_sigmas_type", "zero", {"zero", "sigma_min"}) == "sigma_min") {
        m_cfg.choice("interpolation_type", "linear", {"linear"});
        m_cfg.choice("timestep_type", "discrete", {"discrete"});
        if (m_cfg.flag("use_exponential_sigmas", false) || m_cfg.flag("use_beta_sigmas", false))
            throw std::invalid_argument("EulerDiscreteScheduler: exponential/beta sigmas are not supported");
    }

    std::string className() const override { return "EulerDiscreteScheduler"; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        auto [timesteps, sigmas] = sigmasFor(
            sigmaTimesteps(m_spacing, numSteps, m_train.numTrainTimesteps, m_stepsOffset), m_karras, true);
        sigmas.push_back(m_finalSigmaMin ? m_train.sigmaTable.front() : 0.0);
        m_sigmas = toFloatTensor(sigmas);
        assignTimesteps(toFloatTensor(timesteps), device);
        m_numInferenceSteps = numSteps;
    }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample, NoiseSource&) override {
        const at::Tensor x = sample.to(torch::kFloat);
        const float sigma = sigmaAt(i);
        const at::Tensor x0 = predictOriginal(modelOutput, x, sigma);
        const at::Tensor derivative = (x - x0) / sigma;
        const float dt = sigmaAt(i + 1) - sigma;
        return (x + derivative * dt).to(modelOutput.scalar_type());
    }

private:
    bool m_karras;
    bool m_finalSigmaMin;
};

} // namespace

std::unique_ptr<Scheduler> makeEulerDiscrete(const nlohmann::json& config) {
    return std::make_unique<EulerDiscrete>(config);
}

} // namespace dd::sched
