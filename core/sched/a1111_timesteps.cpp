// Ref: A1111 modules/sd_samplers_timesteps.py (CompVisSampler.get_timesteps, sample, sample_img2img; the
// CompVis-timesteps denoisers, v-prediction through predict_eps_from_z_and_v) and sd_samplers_timesteps_impl.py
// (ddim at A1111's default η = 0, plms).
//
// A1111's grid is range(0, T, T // steps) + 1 (20 steps: 1, 51 … 951). The model runs at every grid timestep but
// the lowest, and the last step ends at ᾱ of that lowest one: one evaluation fewer than diffusers' DDIM over the
// same grid, which ends at ᾱ_0. PLMS begins with a pseudo improved Euler step (two evaluations), then steps with
// Adams–Bashforth over up to three earlier predictions. The coefficients are the model's float32 ᾱ (CompVis's:
// computed in float64), every operation in float32 as A1111's torch code does it.
#include "core/sched/k_diffusion.h"
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <cmath>
#include <deque>
#include <stdexcept>

namespace dd::sched {
namespace {

class A1111Timesteps final : public Scheduler {
public:
    A1111Timesteps(bool plms, const nlohmann::json& config) : m_plms(plms), m_cfg(config), m_prediction(readPrediction(m_cfg)) {
        if (m_prediction == Prediction::Sample)
            throw std::invalid_argument(std::string("A1111's ") + name() + " needs an epsilon or v-prediction model");
        const at::Tensor ac = ldmAlphasCumprod(m_cfg);
        m_alphas = floats(ac);
        m_sqrtAlphas = floats(ac.sqrt());  // the CompVis model's sqrt_alphas_cumprod buffers, for v-prediction
        m_sqrtOneMinusAlphas = floats((1 - ac).sqrt());
    }

    std::string className() const override { return std::string("A1111 ") + (m_plms ? "plms" : "ddim"); }
    bool beginsStep(int64_t i) const override { return !m_evals[size_t(i)].second; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        const int64_t T = int64_t(m_alphas.size());
        if (numSteps < 2 || numSteps > T / 2)
            throw std::invalid_argument(std::string("A1111's ") + name() + " takes 2 to " + std::to_string(T / 2) +
                                        " steps (its grid runs the model at all but the lowest of them)");
        m_grid.clear();
        for (int64_t t = 0; t < T; t += T / numSteps) m_grid.push_back(std::min(t + 1, T - 1));
        m_numInferenceSteps = numSteps;
        m_device = device;
        layOut(int64_t(m_grid.size()) - 1);
    }

    // A1111's sample_img2img: t_enc = int(min(strength, 0.999) · steps); the image noised to grid[t_enc], the model
    // run from grid[t_enc − 1] down.
    Img2ImgSchedule img2imgTimesteps(double strength) override {
        if (!(strength >= 0.0 && strength <= 1.0))
            throw std::invalid_argument("img2img strength must be between 0 and 1, got " + std::to_string(strength));
        const int64_t tEnc = int64_t(std::min(strength, 0.999) * double(m_numInferenceSteps));
        Img2ImgSchedule r;
        if (tEnc < 2) {  // no evaluation left: the caller says the strength is too low
            r.beginIndex = m_timesteps.size(0);
            r.timesteps = m_timesteps.slice(0, r.beginIndex);
            return r;
        }
        layOut(tEnc - 1);
        r.timesteps = m_timesteps;
        r.numSteps = tEnc - 1;
        return r;
    }

    at::Tensor scaleModelInput(const at::Tensor& sample, int64_t) override { return sample; }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample, NoiseSource&) override {
        const Eval& e = m_evals[size_t(i)];
        const at::Tensor eps = epsilon(modelOutput, sample, timestepAt(i));
        if (!m_plms) return previous(sample, eps, e.index);
        if (e.second) {  // the first step's second half: the mean of both predictions, from the step's own start
            const at::Tensor x = previous(m_start, (m_firstEps + eps) / 2, e.index);
            remember(m_firstEps);
            return x;
        }
        if (size_t(i) + 1 < m_evals.size() && m_evals[size_t(i) + 1].second) {
            // The first step's first half: an Euler step, at whose end the model runs again.
            m_start = sample, m_firstEps = eps;
            return previous(sample, eps, e.index);
        }
        // A run that enters the list later (the SDXL refiner's) has no first step: its history starts here.
        const auto& o = m_oldEps;
        const size_t n = o.size();
        at::Tensor mixed = eps;
        if (n == 1) mixed = (3 * eps - o[n - 1]) / 2;
        else if (n == 2) mixed = (23 * eps - 16 * o[n - 1] + 5 * o[n - 2]) / 12;
        else if (n == 3) mixed = (55 * eps - 59 * o[n - 1] + 37 * o[n - 2] - 9 * o[n - 3]) / 24;
        const at::Tensor x = previous(sample, mixed, e.index);
        remember(eps);
        return x;
    }

    // Noised to the level of evaluation i, where the samples of a run are (an inpainting keeps its area there).
    at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t i) const override {
        return noised(original, noise, timestepAt(std::min<int64_t>(i, m_timesteps.size(0) - 1)));
    }

    at::Tensor img2imgStart(const at::Tensor& original, const at::Tensor& noise, int64_t beginIndex) const override {
        const int64_t index = m_evals.empty() ? 0 : m_evals[size_t(std::min<int64_t>(beginIndex, int64_t(m_evals.size()) - 1))].index;
        return noised(original, noise, m_grid[size_t(std::min<int64_t>(index + 1, int64_t(m_grid.size()) - 1))]);
    }

private:
    struct Eval {
        int64_t index;  // into the grid: the step goes from grid[index] to grid[index − 1]
        bool second;    // PLMS's second evaluation of its first step, at grid[index − 1]
    };

    const char* name() const { return m_plms ? "PLMS" : "DDIM"; }

    static std::vector<float> floats(const at::Tensor& t) {
        const at::Tensor f = t.to(torch::kFloat32).contiguous();
        return {f.data_ptr<float>(), f.data_ptr<float>() + f.numel()};
    }

    // The run's evaluations from grid index `top` down to 1.
    void layOut(int64_t top) {
        m_evals.clear();
        std::vector<int64_t> ts;
        for (int64_t j = top; j >= 1; --j) {
            m_evals.push_back({j, false}), ts.push_back(m_grid[size_t(j)]);
            if (m_plms && j == top) m_evals.push_back({j, true}), ts.push_back(m_grid[size_t(j - 1)]);
        }
        assignTimesteps(torch::tensor(ts, torch::kInt64), m_device);
        m_oldEps.clear();
    }

    // The model's output as ε (A1111 converts a v-prediction before guidance; linear, so the same here after it).
    at::Tensor epsilon(const at::Tensor& out, const at::Tensor& x, int64_t t) const {
        if (m_prediction == Prediction::Epsilon) return out;
        return m_sqrtAlphas[size_t(t)] * out + m_sqrtOneMinusAlphas[size_t(t)] * x;
    }

    // DDIM's update (η = 0) from grid[index] to grid[index − 1], as get_x_prev_and_pred_x0 computes it.
    at::Tensor previous(const at::Tensor& x, const at::Tensor& eps, int64_t index) const {
        const float aT = m_alphas[size_t(m_grid[size_t(index)])];
        const float aPrev = m_alphas[size_t(m_grid[size_t(index - 1)])];
        const at::Tensor x0 = (x - std::sqrt(1.0f - aT) * eps) / std::sqrt(aT);
        return std::sqrt(aPrev) * x0 + std::sqrt(1.0f - aPrev) * eps;
    }

    at::Tensor noised(const at::Tensor& original, const at::Tensor& noise, int64_t t) const {
        const float a = m_alphas[size_t(t)];
        return original * std::sqrt(a) + noise * std::sqrt(1.0f - a);
    }

    void remember(const at::Tensor& eps) {
        m_oldEps.push_back(eps);
        if (m_oldEps.size() > 3) m_oldEps.pop_front();
    }

    bool m_plms;
    ConfigReader m_cfg;
    Prediction m_prediction;
    std::vector<float> m_alphas, m_sqrtAlphas, m_sqrtOneMinusAlphas;
    std::vector<int64_t> m_grid;
    std::vector<Eval> m_evals;
    c10::Device m_device = c10::Device(c10::kCPU);
    std::deque<at::Tensor> m_oldEps;  // PLMS: the last three steps' predictions, oldest first
    at::Tensor m_start, m_firstEps;   // PLMS's first step: where it began, its first prediction
};

} // namespace

std::unique_ptr<Scheduler> makeA1111Timesteps(const std::string& name, const nlohmann::json& config) {
    if (name != "DDIM" && name != "PLMS") throw std::invalid_argument("'" + name + "' is not one of A1111's timestep samplers");
    return std::make_unique<A1111Timesteps>(name == "PLMS", config);
}

} // namespace dd::sched
