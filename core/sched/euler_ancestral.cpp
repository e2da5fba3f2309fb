// Ref: diffusers schedulers/scheduling_euler_ancestral_discrete.py, EulerAncestralDiscreteScheduler:
// set_timesteps and step. Noise is drawn on every step, the last included (σ_up = 0 there), in the model
// output's dtype, so the generator advances exactly as in diffusers.
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <cmath>

namespace dd::sched {
namespace {

class EulerAncestralDiscrete final : public SigmaScheduler {
public:
    explicit EulerAncestralDiscrete(const nlohmann::json& config)
        : SigmaScheduler(config, 0.0001, 0.02, "linear", "linspace") {}

    std::string className() const override { return "EulerAncestralDiscreteScheduler"; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        auto [timesteps, sigmas] =
            sigmasFor(sigmaTimesteps(m_spacing, numSteps, m_train.numTrainTimesteps, m_stepsOffset), false);
        sigmas.push_back(0.0);
        m_sigmas = toFloatTensor(sigmas);
        assignTimesteps(toFloatTensor(timesteps), device);
        m_numInferenceSteps = numSteps;
    }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample,
                    NoiseSource& noise) override {
        const at::Tensor x = sample.to(torch::kFloat);
        const float sigmaFrom = sigmaAt(i), sigmaTo = sigmaAt(i + 1);
        const at::Tensor x0 = predictOriginal(modelOutput, x, sigmaFrom);

        const float f2 = sigmaFrom * sigmaFrom, t2 = sigmaTo * sigmaTo;
        const float sigmaUp = std::sqrt(t2 * (f2 - t2) / f2);
        const float sigmaDown = std::sqrt(t2 - sigmaUp * sigmaUp);

        const at::Tensor derivative = (x - x0) / sigmaFrom;
        at::Tensor prev = x + derivative * (sigmaDown - sigmaFrom);
        const at::Tensor n = noise.randn(modelOutput.sizes(), modelOutput.scalar_type(), modelOutput.device());
        prev = prev + n * sigmaUp;
        return prev.to(modelOutput.scalar_type());
    }
};

} // namespace

std::unique_ptr<Scheduler> makeEulerAncestralDiscrete(const nlohmann::json& config) {
    return std::make_unique<EulerAncestralDiscrete>(config);
}

} // namespace dd::sched
