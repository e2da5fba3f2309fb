// Ref: diffusers schedulers/scheduling_dpmsolver_multistep.py, DPMSolverMultistepScheduler with
// algorithm_type "dpmsolver++" (DPM++ 2M, optionally use_karras_sigmas) or "sde-dpmsolver++" (DPM++ 2M SDE),
// solver_order 1 or 2, solver_type midpoint or heun: set_timesteps, convert_model_output,
// dpm_solver_first_order_update, multistep_dpm_solver_second_order_update, step, add_noise.
// Scalar coefficients are float32, as diffusers computes them with 0-dim float32 tensors.
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace dd::sched {
namespace {

class DPMSolverMultistep final : public Scheduler {
public:
    explicit DPMSolverMultistep(const nlohmann::json& config)
        : m_cfg(config),
          m_train(readTrainSchedule(m_cfg, 0.0001, 0.02, "linear")),
          m_spacing(readSpacing(m_cfg, "linspace")),
          m_stepsOffset(m_cfg.integer("steps_offset", 0)),
          m_prediction(readPrediction(m_cfg)),
          m_order(m_cfg.integer("solver_order", 2)),
          m_lowerOrderFinal(m_cfg.flag("lower_order_final", true)),
          m_eulerAtFinal(m_cfg.flag("euler_at_final", false)),
          m_karras(m_cfg.flag("use_karras_sigmas", false)),
          m_finalZero(m_cfg.choice("final_sigmas_type", "zero", {"zero", "sigma_min"}) == "zero") {
        // "deis" falls back to dpmsolver++ in diffusers too.
        m_sde = m_cfg.choice("algorithm_type", "dpmsolver++", {"dpmsolver++", "sde-dpmsolver++", "deis"}) ==
                "sde-dpmsolver++";
        const std::string solver = m_cfg.text("solver_type", "midpoint");
        m_heun = solver == "heun";
        if (!m_heun && solver != "midpoint" && solver != "logrho" && solver != "bh1" && solver != "bh2")
            throw std::invalid_argument("DPMSolverMultistepScheduler: solver_type \"" + solver + "\" is not supported");
        if (m_order != 1 && m_order != 2)
            throw std::invalid_argument("DPMSolverMultistepScheduler: only solver_order 1 and 2 are supported");
        for (const char* k : {"thresholding", "use_lu_lambdas", "use_exponential_sigmas", "use_beta_sigmas",
                              "use_flow_sigmas", "use_dynamic_shifting"})
            if (m_cfg.flag(k, false))
                throw std::invalid_argument(std::string("DPMSolverMultistepScheduler: ") + k + " is not supported");
        if (m_cfg.has("variance_type") || std::isfinite(m_cfg.number("lambda_min_clipped", -INFINITY)))
            throw std::invalid_argument("DPMSolverMultistepScheduler: variance_type/lambda_min_clipped unsupported");
    }

    std::string className() const override { return "DPMSolverMultistepScheduler"; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        const auto& table = m_train.sigmaTable;
        std::vector<double> timesteps =
            multistepTimesteps(m_spacing, numSteps, m_train.numTrainTimesteps, m_stepsOffset);
        std::vector<double> sigmas;
        if (m_karras) {  // σ range = the whole training table; integer t for the UNet, exact σ for the update
            sigmas = karrasSigmas(table.front(), table.back(), numSteps);
            timesteps.clear();
            const bool round = m_cfg.text("beta_schedule", "linear") != "squaredcos_cap_v2";
            for (double s : sigmas) {
                const double t = sigmaToT(s, m_train.logSigmas);
                timesteps.push_back(round ? npRound(t) : t);
            }
        } else {
            for (double t : timesteps) sigmas.push_back(interpSigma(table, t));
        }
        sigmas.push_back(m_finalZero ? 0.0 : table.front());
        m_sigmas = toFloatTensor(sigmas);
        assignTimesteps(toLongTensor(timesteps), device);
        m_numInferenceSteps = numSteps;
        m_outputs.assign(m_order, at::Tensor());
        m_lowerOrderNums = 0;
    }

    at::Tensor scaleModelInput(const at::Tensor& sample, int64_t) override { return sample; }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample,
                    NoiseSource& noise) override {
        const int64_t len = m_timesteps.size(0);
        const bool lowerFinal =
            i == len - 1 && (m_eulerAtFinal || (m_lowerOrderFinal && len < 15) || m_finalZero);

        const at::Tensor x0 = convertModelOutput(modelOutput, sample, i);
        for (size_t k = 0; k + 1 < m_outputs.size(); ++k) m_outputs[k] = m_outputs[k + 1];
        m_outputs.back() = x0;

        const at::Tensor x = sample.to(torch::kFloat);
        at::Tensor n;
        if (m_sde) n = noise.randn(modelOutput.sizes(), torch::kFloat, modelOutput.device());

        at::Tensor prev = (m_order == 1 || m_lowerOrderNums < 1 || lowerFinal) ? firstOrder(x0, i, x, n)
                                                                               : secondOrder(i, x, n);
        if (m_lowerOrderNums < m_order) ++m_lowerOrderNums;
        return prev.to(modelOutput.scalar_type());
    }

    at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t i) const override {
        const AlphaSigma as = alphaSigma(sigmaAt(i));
        return as.alpha * original + as.sigma * noise;
    }

private:
    float sigmaAt(int64_t i) const { return m_sigmas.data_ptr<float>()[i]; }

    at::Tensor convertModelOutput(const at::Tensor& out, const at::Tensor& sample, int64_t i) const {
        const AlphaSigma s = alphaSigma(sigmaAt(i));
        switch (m_prediction) {
        case Prediction::Epsilon: return (sample - s.sigma * out) / s.alpha;
        case Prediction::VPrediction: return s.alpha * sample - s.sigma * out;
        case Prediction::Sample: break;
        }
        return out;
    }

    at::Tensor firstOrder(const at::Tensor& x0, int64_t i, const at::Tensor& x, const at::Tensor& noise) const {
        const AlphaSigma t = alphaSigma(sigmaAt(i + 1)), s = alphaSigma(sigmaAt(i));
        const float h = t.lambda() - s.lambda();
        if (!m_sde) return (t.sigma / s.sigma) * x - (t.alpha * (std::exp(-h) - 1.0f)) * x0;
        return (t.sigma / s.sigma * std::exp(-h)) * x + (t.alpha * (1 - std::exp(-2.0f * h))) * x0 +
               t.sigma * std::sqrt(1.0f - std::exp(-2 * h)) * noise;
    }

    at::Tensor secondOrder(int64_t i, const at::Tensor& x, const at::Tensor& noise) const {
        const AlphaSigma t = alphaSigma(sigmaAt(i + 1)), s0 = alphaSigma(sigmaAt(i)), s1 = alphaSigma(sigmaAt(i - 1));
        const at::Tensor& m0 = m_outputs[m_outputs.size() - 1];
        const at::Tensor& m1 = m_outputs[m_outputs.size() - 2];
        const float h = t.lambda() - s0.lambda(), h0 = s0.lambda() - s1.lambda();
        const float r0 = h0 / h;
        const at::Tensor& d0 = m0;
        const at::Tensor d1 = (1.0f / r0) * (m0 - m1);
        if (!m_sde) {
            const float c = t.alpha * (std::exp(-h) - 1.0f);
            const at::Tensor base = (t.sigma / s0.sigma) * x - c * d0;
            if (m_heun) return base + (t.alpha * ((std::exp(-h) - 1.0f) / h + 1.0f)) * d1;
            return base - 0.5f * c * d1;
        }
        const float c = t.alpha * (1 - std::exp(-2.0f * h));
        const at::Tensor base = (t.sigma / s0.sigma * std::exp(-h)) * x + c * d0;
        const at::Tensor noiseTerm = t.sigma * std::sqrt(1.0f - std::exp(-2 * h)) * noise;
        if (m_heun) return base + (t.alpha * ((1.0f - std::exp(-2.0f * h)) / (-2.0f * h) + 1.0f)) * d1 + noiseTerm;
        return base + 0.5f * c * d1 + noiseTerm;
    }

    ConfigReader m_cfg;
    TrainSchedule m_train;
    Spacing m_spacing;
    int64_t m_stepsOffset;
    Prediction m_prediction;
    int64_t m_order;
    bool m_lowerOrderFinal, m_eulerAtFinal, m_karras, m_finalZero;
    bool m_sde = false, m_heun = false;
    std::vector<at::Tensor> m_outputs;
    int64_t m_lowerOrderNums = 0;
};

} // namespace

std::unique_ptr<Scheduler> makeDPMSolverMultistep(const nlohmann::json& config) {
    return std::make_unique<DPMSolverMultistep>(config);
}

} // namespace dd::sched
