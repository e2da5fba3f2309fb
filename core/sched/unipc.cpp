// Ref: diffusers schedulers/scheduling_unipc_multistep.py, UniPCMultistepScheduler with predict_x0 = true
// (the default): set_timesteps (incl. use_karras_sigmas), convert_model_output, multistep_uni_p_bh_update
// (UniP predictor), multistep_uni_c_bh_update (UniC corrector, applied to the current sample with the new
// model output — no extra UNet call), step. bh1 and bh2; disable_corrector; no solver_p.
#include "core/api/json_value.h"
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dd::sched {
namespace {

class UniPCMultistep final : public Scheduler {
public:
    explicit UniPCMultistep(const nlohmann::json& config)
        : m_cfg(config),
          m_train(readTrainSchedule(m_cfg, 0.0001, 0.02, "linear")),
          m_spacing(readSpacing(m_cfg, "linspace")),
          m_stepsOffset(m_cfg.integer("steps_offset", 0)),
          m_prediction(readPrediction(m_cfg)),
          m_order(m_cfg.integer("solver_order", 2)),
          m_lowerOrderFinal(m_cfg.flag("lower_order_final", true)),
          m_karras(m_cfg.flag("use_karras_sigmas", false)),
          m_finalZero(m_cfg.choice("final_sigmas_type", "zero", {"zero", "sigma_min"}) == "zero") {
        const std::string solver = m_cfg.text("solver_type", "bh2");
        m_bh1 = solver == "bh1";
        if (!m_bh1 && solver != "bh2" && solver != "midpoint" && solver != "heun" && solver != "logrho")
            throw std::invalid_argument("UniPCMultistepScheduler: solver_type \"" + solver + "\" is not supported");
        if (m_order < 1 || m_order > 3) throw std::invalid_argument("UniPCMultistepScheduler: solver_order 1..3");
        if (!m_cfg.flag("predict_x0", true)) throw std::invalid_argument("UniPCMultistepScheduler: predict_x0 false");
        for (const char* k : {"thresholding", "use_exponential_sigmas", "use_beta_sigmas", "use_flow_sigmas",
                              "use_dynamic_shifting"})
            if (m_cfg.flag(k, false))
                throw std::invalid_argument(std::string("UniPCMultistepScheduler: ") + k + " is not supported");
        if (m_cfg.has("disable_corrector"))
            for (const auto& v : config.at("disable_corrector")) m_disableCorrector.push_back(api::jsonAs<int64_t>(v));
    }

    std::string className() const override { return "UniPCMultistepScheduler"; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        const auto& table = m_train.sigmaTable;
        std::vector<double> timesteps =
            multistepTimesteps(m_spacing, numSteps, m_train.numTrainTimesteps, m_stepsOffset);
        std::vector<double> sigmas;
        double last = m_finalZero ? 0.0 : table.front();
        if (m_karras) {
            sigmas = karrasSigmas(m_cfg.number("sigma_min", table.front()), m_cfg.number("sigma_max", table.back()),
                                  numSteps);
            timesteps.clear();
            for (double s : sigmas) timesteps.push_back(npRound(sigmaToT(s, m_train.logSigmas)));
            if (!m_finalZero) last = sigmas.back();
        } else {
            for (double t : timesteps) sigmas.push_back(interpSigma(table, t));
        }
        sigmas.push_back(last);
        m_sigmas = toFloatTensor(sigmas);
        assignTimesteps(toLongTensor(timesteps), device);
        m_numInferenceSteps = numSteps;
        m_outputs.assign(m_order, at::Tensor());
        m_lowerOrderNums = 0;
        m_lastSample = at::Tensor();
        m_thisOrder = 0;
    }

    at::Tensor scaleModelInput(const at::Tensor& sample, int64_t) override { return sample; }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sampleIn, NoiseSource&) override {
        const bool disabled =
            std::find(m_disableCorrector.begin(), m_disableCorrector.end(), i - 1) != m_disableCorrector.end();
        const bool useCorrector = i > 0 && !disabled && m_lastSample.defined();
        const at::Tensor x0 = convertModelOutput(modelOutput, sampleIn, i);
        at::Tensor sample = useCorrector ? corrector(x0, i, m_lastSample, m_thisOrder) : sampleIn;

        for (size_t k = 0; k + 1 < m_outputs.size(); ++k) m_outputs[k] = m_outputs[k + 1];
        m_outputs.back() = x0;

        const int64_t len = m_timesteps.size(0);
        const int64_t order = m_lowerOrderFinal ? std::min(m_order, len - i) : m_order;
        m_thisOrder = std::min(order, m_lowerOrderNums + 1);  // warm-up
        m_lastSample = sample;
        at::Tensor prev = predictor(i, sample, m_thisOrder);
        if (m_lowerOrderNums < m_order) ++m_lowerOrderNums;
        return prev;
    }

    at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t i) const override {
        const AlphaSigma as = alphaSigma(m_sigmas.data_ptr<float>()[i]);
        return as.alpha * original + as.sigma * noise;
    }

private:
    AlphaSigma vp(int64_t i) const { return alphaSigma(m_sigmas.data_ptr<float>()[i]); }

    at::Tensor convertModelOutput(const at::Tensor& out, const at::Tensor& sample, int64_t i) const {
        const AlphaSigma s = vp(i);
        switch (m_prediction) {
        case Prediction::Epsilon: return (sample - s.sigma * out) / s.alpha;
        case Prediction::VPrediction: return s.alpha * sample - s.sigma * out;
        case Prediction::Sample: break;
        }
        return out;
    }

    // The B(h) system shared by predictor and corrector: R (order×order, rows r_k^(i−1)) and b.
    struct System {
        float hPhi1, bH;
        at::Tensor R, b;
    };
    System buildSystem(float h, const std::vector<float>& rks, int64_t order) const {
        const float hh = -h;  // predict_x0
        System s{std::expm1(hh), m_bh1 ? hh : std::expm1(hh), {}, {}};
        float hPhiK = s.hPhi1 / hh - 1;
        int64_t factorial = 1;
        std::vector<float> R, b;
        for (int64_t k = 1; k <= order; ++k) {
            for (float r : rks) R.push_back(k == 1 ? 1.0f : k == 2 ? r : r * r);
            b.push_back(hPhiK * float(factorial) / s.bH);
            factorial *= k + 1;
            hPhiK = hPhiK / hh - float(1.0 / double(factorial));
        }
        s.R = torch::tensor(R).reshape({order, static_cast<int64_t>(rks.size())});
        s.b = torch::tensor(b);
        return s;
    }

    // Σ_k ρ_k·D1_k (diffusers' einsum "k,bkc...->bc...").
    static at::Tensor combine(const at::Tensor& rhos, const std::vector<at::Tensor>& d1s) {
        return torch::einsum("k,bkc...->bc...", {rhos, torch::stack(d1s, 1)});
    }

    at::Tensor predictor(int64_t i, const at::Tensor& x, int64_t order) const {
        const AlphaSigma t = vp(i + 1), s0 = vp(i);
        const at::Tensor& m0 = m_outputs.back();
        const float h = t.lambda() - s0.lambda();
        std::vector<float> rks;
        std::vector<at::Tensor> d1s;
        for (int64_t k = 1; k < order; ++k) {
            const float rk = (vp(i - k).lambda() - s0.lambda()) / h;
            rks.push_back(rk);
            d1s.push_back((m_outputs[m_outputs.size() - 1 - k] - m0) / rk);
        }
        rks.push_back(1.0f);
        const System sys = buildSystem(h, rks, order);
        const at::Tensor xt = t.sigma / s0.sigma * x - t.alpha * sys.hPhi1 * m0;
        if (d1s.empty()) return xt;
        const at::Tensor rhos = order == 2 ? torch::full({1}, 0.5f)
                                           : torch::linalg_solve(sys.R.slice(0, 0, -1).slice(1, 0, -1),
                                                                 sys.b.slice(0, 0, -1));
        return (xt - t.alpha * sys.bH * combine(rhos.to(x.device(), x.scalar_type()), d1s)).to(x.scalar_type());
    }

    // x: the sample the previous step started from; corrects the current sample's step with modelT.
    at::Tensor corrector(const at::Tensor& modelT, int64_t i, const at::Tensor& x, int64_t order) const {
        const AlphaSigma t = vp(i), s0 = vp(i - 1);
        const at::Tensor& m0 = m_outputs.back();
        const float h = t.lambda() - s0.lambda();
        std::vector<float> rks;
        std::vector<at::Tensor> d1s;
        for (int64_t k = 1; k < order; ++k) {
            const float rk = (vp(i - (k + 1)).lambda() - s0.lambda()) / h;
            rks.push_back(rk);
            d1s.push_back((m_outputs[m_outputs.size() - 1 - k] - m0) / rk);
        }
        rks.push_back(1.0f);
        const System sys = buildSystem(h, rks, order);
        const at::Tensor rhos =
            (order == 1 ? torch::full({1}, 0.5f) : torch::linalg_solve(sys.R, sys.b)).to(x.device(), x.scalar_type());
        const at::Tensor xt = t.sigma / s0.sigma * x - t.alpha * sys.hPhi1 * m0;
        const at::Tensor d1t = modelT - m0;
        const at::Tensor last = rhos[-1] * d1t;
        const at::Tensor corr = d1s.empty() ? last : combine(rhos.slice(0, 0, -1), d1s) + last;
        return (xt - t.alpha * sys.bH * corr).to(x.scalar_type());
    }

    ConfigReader m_cfg;
    TrainSchedule m_train;
    Spacing m_spacing;
    int64_t m_stepsOffset;
    Prediction m_prediction;
    int64_t m_order;
    bool m_lowerOrderFinal, m_karras, m_finalZero, m_bh1 = false;
    std::vector<int64_t> m_disableCorrector;
    std::vector<at::Tensor> m_outputs;
    int64_t m_lowerOrderNums = 0;
    int64_t m_thisOrder = 0;
    at::Tensor m_lastSample;
};

} // namespace

std::unique_ptr<Scheduler> makeUniPCMultistep(const nlohmann::json& config) {
    return std::make_unique<UniPCMultistep>(config);
}

} // namespace dd::sched
