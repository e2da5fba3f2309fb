// Ref: diffusers schedulers/scheduling_lcm.py, LCMScheduler: __init__ defaults, set_timesteps (the
// original_inference_steps grid k·j − 1, subsampled with floor(linspace(0, len, N, endpoint=False))),
// get_scalings_for_boundary_condition_discrete and step (fresh noise on every step but the last).
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace dd::sched {
namespace {

class LCM final : public Scheduler {
public:
    explicit LCM(const nlohmann::json& config)
        : m_cfg(config),
          m_train(readTrainSchedule(m_cfg, 0.00085, 0.012, "scaled_linear")),
          m_prediction(readPrediction(m_cfg)),
          m_originalSteps(m_cfg.integer("original_inference_steps", 50)),
          m_clipSample(m_cfg.flag("clip_sample", false)),
          m_clipRange(m_cfg.number("clip_sample_range", 1.0)),
          m_finalAlphaCumprod(m_cfg.flag("set_alpha_to_one", true) ? 1.0f : m_train.alphaCumprod(0)),
          m_timestepScaling(m_cfg.number("timestep_scaling", 10.0)) {
        if (m_cfg.flag("thresholding", false))
            throw std::invalid_argument("LCMScheduler: thresholding is not supported");
    }

    std::string className() const override { return "LCMScheduler"; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        const int64_t T = m_train.numTrainTimesteps;
        if (m_originalSteps > T || m_originalSteps < 1)
            throw std::invalid_argument("LCM: original_inference_steps must be between 1 and " + std::to_string(T));
        const int64_t k = T / m_originalSteps;
        std::vector<double> origin;  // descending k·j − 1
        for (int64_t j = m_originalSteps; j >= 1; --j) origin.push_back(double(j * k - 1));
        if (numSteps < 1 || numSteps > m_originalSteps)
            throw std::invalid_argument("LCM: the number of steps must be between 1 and original_inference_steps (" +
                                        std::to_string(m_originalSteps) + ")");
        std::vector<double> timesteps;
        const double stride = double(origin.size()) / double(numSteps);
        for (int64_t i = 0; i < numSteps; ++i)
            timesteps.push_back(origin[static_cast<size_t>(std::floor(double(i) * stride))]);
        assignTimesteps(toLongTensor(timesteps), device);
        m_numInferenceSteps = numSteps;
    }

    at::Tensor scaleModelInput(const at::Tensor& sample, int64_t) override { return sample; }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample,
                    NoiseSource& noise) override {
        const int64_t t = timestepAt(i);
        const int64_t prevT = i + 1 < m_timesteps.size(0) ? timestepAt(i + 1) : t;
        const float aT = m_train.alphaCumprod(t);
        const float aPrev = prevT >= 0 ? m_train.alphaCumprod(prevT) : m_finalAlphaCumprod;
        const float bT = 1.0f - aT, bPrev = 1.0f - aPrev;

        // Consistency-model boundary scalings, σ_data = 0.5.
        const float s = float(t) * float(m_timestepScaling);
        const float cSkip = 0.25f / (s * s + 0.25f);
        const float cOut = s / std::sqrt(s * s + 0.25f);

        at::Tensor x0;
        switch (m_prediction) {
        case Prediction::Epsilon: x0 = (sample - std::sqrt(bT) * modelOutput) / std::sqrt(aT); break;
        case Prediction::VPrediction: x0 = std::sqrt(aT) * sample - std::sqrt(bT) * modelOutput; break;
        case Prediction::Sample: x0 = modelOutput; break;
        }
        if (m_clipSample) x0 = x0.clamp(-m_clipRange, m_clipRange);

        const at::Tensor denoised = cOut * x0 + cSkip * sample;
        if (i == m_numInferenceSteps - 1) return denoised;
        const at::Tensor n = noise.randn(modelOutput.sizes(), denoised.scalar_type(), modelOutput.device());
        return std::sqrt(aPrev) * denoised + std::sqrt(bPrev) * n;
    }

    at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t i) const override {
        return addNoiseVP(m_train, original, noise, timestepAt(i));
    }

private:
    ConfigReader m_cfg;
    TrainSchedule m_train;
    Prediction m_prediction;
    int64_t m_originalSteps;
    bool m_clipSample;
    double m_clipRange;
    float m_finalAlphaCumprod;
    double m_timestepScaling;
};

} // namespace

std::unique_ptr<Scheduler> makeLCM(const nlohmann::json& config) { return std::make_unique<LCM>(config); }

} // namespace dd::sched
