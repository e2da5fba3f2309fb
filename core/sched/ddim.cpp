// Ref: diffusers schedulers/scheduling_ddim.py, DDIMScheduler: __init__ defaults (clip_sample and
// set_alpha_to_one default to true — SD configs set both false), set_timesteps, step with the pipeline
// default eta = 0 (deterministic, so no noise is drawn), add_noise.
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace dd::sched {
namespace {

class DDIM final : public Scheduler {
public:
    explicit DDIM(const nlohmann::json& config)
        : m_cfg(config),
          m_train(readTrainSchedule(m_cfg, 0.0001, 0.02, "linear")),
          m_spacing(readSpacing(m_cfg, "leading")),
          m_stepsOffset(m_cfg.integer("steps_offset", 0)),
          m_prediction(readPrediction(m_cfg)),
          m_clipSample(m_cfg.flag("clip_sample", true)),
          m_clipRange(m_cfg.number("clip_sample_range", 1.0)),
          m_finalAlphaCumprod(m_cfg.flag("set_alpha_to_one", true) ? 1.0f : m_train.alphaCumprod(0)) {
        if (m_cfg.flag("thresholding", false))
            throw std::invalid_argument("DDIMScheduler: thresholding is not supported");
    }

    std::string className() const override { return "DDIMScheduler"; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        if (numSteps > m_train.numTrainTimesteps)
            throw std::invalid_argument("DDIM: at most " + std::to_string(m_train.numTrainTimesteps) + " steps");
        assignTimesteps(
            toLongTensor(roundedTimesteps(m_spacing, numSteps, m_train.numTrainTimesteps, m_stepsOffset)), device);
        m_numInferenceSteps = numSteps;
    }

    at::Tensor scaleModelInput(const at::Tensor& sample, int64_t) override { return sample; }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample, NoiseSource&) override {
        const int64_t t = timestepAt(i);
        const int64_t prevT = t - m_train.numTrainTimesteps / m_numInferenceSteps;
        const float aT = m_train.alphaCumprod(t);
        const float aPrev = prevT >= 0 ? m_train.alphaCumprod(prevT) : m_finalAlphaCumprod;
        const float bT = 1.0f - aT;

        at::Tensor x0, eps;
        switch (m_prediction) {
        case Prediction::Epsilon:
            x0 = (sample - std::sqrt(bT) * modelOutput) / std::sqrt(aT);
            eps = modelOutput;
            break;
        case Prediction::VPrediction:
            x0 = std::sqrt(aT) * sample - std::sqrt(bT) * modelOutput;
            eps = std::sqrt(aT) * modelOutput + std::sqrt(bT) * sample;
            break;
        case Prediction::Sample:
            x0 = modelOutput;
            eps = (sample - std::sqrt(aT) * x0) / std::sqrt(bT);
            break;
        }
        if (m_clipSample) x0 = x0.clamp(-m_clipRange, m_clipRange);

        // eta = 0: σ_t = 0, the direction term keeps all of √(1 − ᾱ_prev).
        const at::Tensor direction = std::sqrt(1.0f - aPrev) * eps;
        return std::sqrt(aPrev) * x0 + direction;
    }

    at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t i) const override {
        return addNoiseVP(m_train, original, noise, timestepAt(i));
    }

private:
    ConfigReader m_cfg;
    TrainSchedule m_train;
    Spacing m_spacing;
    int64_t m_stepsOffset;
    Prediction m_prediction;
    bool m_clipSample;
    double m_clipRange;
    float m_finalAlphaCumprod;
};

} // namespace

std::unique_ptr<Scheduler> makeDDIM(const nlohmann::json& config) { return std::make_unique<DDIM>(config); }

} // namespace dd::sched
