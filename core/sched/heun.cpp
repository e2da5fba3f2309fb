// Ref: diffusers schedulers/scheduling_heun_discrete.py, HeunDiscreteScheduler: set_timesteps (every
// timestep after the first listed twice, σ likewise), step (Euler predictor, then the trapezoidal
// correction at the repeated timestep; the final step to σ = 0 stays first order), add_noise.
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <stdexcept>

namespace dd::sched {
namespace {

// [a, b, c] → [a, b, b, c, c] (diffusers: cat([x[:1], x[1:].repeat_interleave(2)])).
std::vector<double> repeatAfterFirst(const std::vector<double>& v, size_t keepLast) {
    std::vector<double> out{v.front()};
    for (size_t k = 1; k < v.size(); ++k) {
        out.push_back(v[k]);
        if (k + keepLast < v.size()) out.push_back(v[k]);
    }
    return out;
}

class HeunDiscrete final : public SigmaScheduler {
public:
    explicit HeunDiscrete(const nlohmann::json& config)
        : SigmaScheduler(config, 0.00085, 0.012, "linear", "linspace"),
          m_karras(m_cfg.flag("use_karras_sigmas", false)),
          m_clipSample(m_cfg.flag("clip_sample", false)),
          m_clipRange(m_cfg.number("clip_sample_range", 1.0)) {
        if (m_cfg.flag("use_exponential_sigmas", false) || m_cfg.flag("use_beta_sigmas", false))
            throw std::invalid_argument("HeunDiscreteScheduler: exponential/beta sigmas are not supported");
    }

    std::string className() const override { return "HeunDiscreteScheduler"; }
    int order() const override { return 2; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        auto [timesteps, sigmas] =
            sigmasFor(sigmaTimesteps(m_spacing, numSteps, m_train.numTrainTimesteps, m_stepsOffset), m_karras);
        sigmas.push_back(0.0);
        m_sigmas = toFloatTensor(repeatAfterFirst(sigmas, 1));       // s0, s1, s1, …, s_{n−1}, s_{n−1}, 0
        assignTimesteps(toFloatTensor(repeatAfterFirst(timesteps, 0)), device);  // t0, t1, t1, …, t_{n−1}, t_{n−1}
        m_numInferenceSteps = numSteps;
        m_prevDerivative = at::Tensor();
        m_sample = at::Tensor();
    }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample, NoiseSource&) override {
        const bool firstOrder = !m_sample.defined();
        const float sigma = firstOrder ? sigmaAt(i) : sigmaAt(i - 1);
        const float sigmaNext = firstOrder ? sigmaAt(i + 1) : sigmaAt(i);
        at::Tensor x0 = predictOriginal(modelOutput, sample, firstOrder ? sigma : sigmaNext);
        if (m_clipSample) x0 = x0.clamp(-m_clipRange, m_clipRange);

        if (firstOrder) {
            const at::Tensor derivative = (sample - x0) / sigma;
            m_prevDerivative = derivative;
            m_dt = sigmaNext - sigma;
            m_sample = sample;
            return sample + derivative * m_dt;
        }
        const at::Tensor derivative = (m_prevDerivative + (sample - x0) / sigmaNext) / 2;
        const at::Tensor prev = m_sample + derivative * m_dt;
        m_prevDerivative = at::Tensor();
        m_sample = at::Tensor();
        return prev;
    }

private:
    bool m_karras;
    bool m_clipSample;
    double m_clipRange;
    at::Tensor m_prevDerivative, m_sample;
    float m_dt = 0;
};

} // namespace

std::unique_ptr<Scheduler> makeHeunDiscrete(const nlohmann::json& config) {
    return std::make_unique<HeunDiscrete>(config);
}

} // namespace dd::sched
