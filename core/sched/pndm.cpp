// Ref: diffusers schedulers/scheduling_pndm.py, PNDMScheduler with skip_prk_steps = true (pure PLMS, as
// every SD config sets it): set_timesteps (plms_timesteps repeats the second timestep), step_plms (Heun-style
// start from the saved sample, then Adams–Bashforth of order 2, 3, 4 over the stored ε), _get_prev_sample.
// The Runge–Kutta warm-up (skip_prk_steps = false) is not supported.
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dd::sched {
namespace {

class PNDM final : public Scheduler {
public:
    explicit PNDM(const nlohmann::json& config)
        : m_cfg(config),
          m_train(readTrainSchedule(m_cfg, 0.0001, 0.02, "linear")),
          m_spacing(readSpacing(m_cfg, "leading")),
          m_stepsOffset(m_cfg.integer("steps_offset", 0)),
          m_finalAlphaCumprod(m_cfg.flag("set_alpha_to_one", false) ? 1.0f : m_train.alphaCumprod(0)) {
        if (!m_cfg.flag("skip_prk_steps", false))
            throw std::invalid_argument("PNDMScheduler: only skip_prk_steps = true (PLMS) is supported");
        m_vPrediction = m_cfg.choice("prediction_type", "epsilon", {"epsilon", "v_prediction"}) == "v_prediction";
    }

    std::string className() const override { return "PNDMScheduler"; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        std::vector<double> asc = roundedTimesteps(m_spacing, numSteps, m_train.numTrainTimesteps, m_stepsOffset);
        std::reverse(asc.begin(), asc.end());
        // plms_timesteps = reverse(asc[:-1] + asc[-2:-1] + asc[-1:]): the second timestep appears twice.
        std::vector<double> plms(asc.begin(), asc.end() - 1);
        if (asc.size() >= 2) plms.push_back(asc[asc.size() - 2]);
        plms.push_back(asc.back());
        std::reverse(plms.begin(), plms.end());
        assignTimesteps(toLongTensor(plms), device);
        m_numInferenceSteps = numSteps;
        m_ets.clear();
        m_counter = 0;
        m_curSample = at::Tensor();
    }

    at::Tensor scaleModelInput(const at::Tensor& sample, int64_t) override { return sample; }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sampleIn, NoiseSource&) override {
        const int64_t ratio = m_train.numTrainTimesteps / m_numInferenceSteps;
        int64_t t = timestepAt(i);
        int64_t prevT = t - ratio;
        if (m_counter != 1) {
            if (m_ets.size() > 3) m_ets.erase(m_ets.begin(), m_ets.end() - 3);
            m_ets.push_back(modelOutput);
        } else {  // the repeated timestep: redo the first step from the saved sample
            prevT = t;
            t = t + ratio;
        }

        at::Tensor sample = sampleIn, eps;
        const auto& e = m_ets;
        const size_t n = e.size();
        if (n == 1 && m_counter == 0) {
            eps = modelOutput;
            m_curSample = sample;
        } else if (n == 1 && m_counter == 1) {
            eps = (modelOutput + e[0]) / 2;
            sample = m_curSample;
            m_curSample = at::Tensor();
        } else if (n == 2) {
            eps = (3 * e[1] - e[0]) / 2;
        } else if (n == 3) {
            eps = (23 * e[2] - 16 * e[1] + 5 * e[0]) / 12;
        } else {
            eps = (1.0 / 24) * (55 * e[n - 1] - 59 * e[n - 2] + 37 * e[n - 3] - 9 * e[n - 4]);
        }
        ++m_counter;
        return prevSample(sample, t, prevT, eps);
    }

    at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t i) const override {
        return addNoiseVP(m_train, original, noise, timestepAt(i));
    }

private:
    // Formula (9) of the PNDM paper: x_{t−δ} from x_t and ε.
    at::Tensor prevSample(const at::Tensor& sample, int64_t t, int64_t prevT, at::Tensor eps) const {
        const float aT = m_train.alphaCumprod(t);
        const float aPrev = prevT >= 0 ? m_train.alphaCumprod(prevT) : m_finalAlphaCumprod;
        const float bT = 1.0f - aT, bPrev = 1.0f - aPrev;
        if (m_vPrediction) eps = std::sqrt(aT) * eps + std::sqrt(bT) * sample;
        const float sampleCoeff = std::sqrt(aPrev / aT);
        const float denom = aT * std::sqrt(bPrev) + std::sqrt(aT * bT * aPrev);
        return sampleCoeff * sample - (aPrev - aT) * eps / denom;
    }

    ConfigReader m_cfg;
    TrainSchedule m_train;
    Spacing m_spacing;
    int64_t m_stepsOffset;
    float m_finalAlphaCumprod;
    bool m_vPrediction = false;
    std::vector<at::Tensor> m_ets;
    int64_t m_counter = 0;
    at::Tensor m_curSample;
};

} // namespace

std::unique_ptr<Scheduler> makePNDM(const nlohmann::json& config) { return std::make_unique<PNDM>(config); }

} // namespace dd::sched
