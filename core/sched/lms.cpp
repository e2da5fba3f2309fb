// Ref: diffusers schedulers/scheduling_lms_discrete.py, LMSDiscreteScheduler: set_timesteps (incl.
// use_karras_sigmas), get_lms_coefficient and step (linear multistep of order up to 4 over the stored
// derivatives). diffusers integrates the Lagrange basis polynomial with scipy.integrate.quad; the integrand
// is a polynomial of degree ≤ 3, which 3-point Gauss–Legendre quadrature integrates exactly.
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <stdexcept>

namespace dd::sched {

double lmsCoefficient(const std::vector<float>& sigmas, int order, int64_t t, int currentOrder) {
    auto basis = [&](double tau) {
        double prod = 1.0;
        for (int k = 0; k < order; ++k) {
            if (k == currentOrder) continue;
            prod *= (tau - double(sigmas[t - k])) / (double(sigmas[t - currentOrder]) - double(sigmas[t - k]));
        }
        return prod;
    };
    // Gauss–Legendre nodes ±√(3/5), 0 with weights 5/9, 8/9, 5/9 on [−1, 1]: exact up to degree 5.
    const double a = sigmas[t], b = sigmas[t + 1];
    const double mid = (a + b) / 2, half = (b - a) / 2, node = std::sqrt(0.6);
    const std::array<std::pair<double, double>, 3> rule{{{-node, 5.0 / 9}, {0.0, 8.0 / 9}, {node, 5.0 / 9}}};
    double sum = 0;
    for (const auto& [x, w] : rule) sum += w * basis(mid + half * x);
    return sum * half;
}

namespace {

constexpr int kMaxOrder = 4;  // diffusers' default `order` argument of step()

class LMSDiscrete final : public SigmaScheduler {
public:
    explicit LMSDiscrete(const nlohmann::json& config)
        : SigmaScheduler(config, 0.0001, 0.02, "linear", "linspace"), m_karras(m_cfg.flag("use_karras_sigmas", false)) {
        if (m_cfg.flag("use_exponential_sigmas", false) || m_cfg.flag("use_beta_sigmas", false))
            throw std::invalid_argument("LMSDiscreteScheduler: exponential/beta sigmas are not supported");
    }

    std::string className() const override { return "LMSDiscreteScheduler"; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        auto [timesteps, sigmas] =
            sigmasFor(sigmaTimesteps(m_spacing, numSteps, m_train.numTrainTimesteps, m_stepsOffset), m_karras);
        sigmas.push_back(0.0);
        m_sigmas = toFloatTensor(sigmas);
        m_sigmaValues.assign(m_sigmas.data_ptr<float>(), m_sigmas.data_ptr<float>() + m_sigmas.numel());
        assignTimesteps(toFloatTensor(timesteps), device);
        m_numInferenceSteps = numSteps;
        m_derivatives.clear();
    }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample, NoiseSource&) override {
        const float sigma = sigmaAt(i);
        const at::Tensor x0 = predictOriginal(modelOutput, sample, sigma);
        m_derivatives.push_back((sample - x0) / sigma);
        if (m_derivatives.size() > kMaxOrder) m_derivatives.pop_front();

        // Like diffusers, the order follows the step index (not the number of stored derivatives), and
        // zip() pairs the coefficients with the newest derivatives first.
        const int order = static_cast<int>(std::min<int64_t>(i + 1, kMaxOrder));
        const size_t terms = std::min<size_t>(order, m_derivatives.size());
        at::Tensor sum;
        for (size_t k = 0; k < terms; ++k) {
            const double c = lmsCoefficient(m_sigmaValues, order, i, static_cast<int>(k));
            const at::Tensor term = c * m_derivatives[m_derivatives.size() - 1 - k];
            sum = k == 0 ? term : sum + term;
        }
        return sample + sum;
    }

private:
    bool m_karras;
    std::vector<float> m_sigmaValues;
    std::deque<at::Tensor> m_derivatives;
};

} // namespace

std::unique_ptr<Scheduler> makeLMSDiscrete(const nlohmann::json& config) {
    return std::make_unique<LMSDiscrete>(config);
}

} // namespace dd::sched
