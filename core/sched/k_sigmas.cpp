// Ref: k-diffusion external.py (DiscreteSchedule: sigma_to_t, t_to_sigma, get_sigmas; DiscreteEpsDDPMDenoiser's σ
// from alphas_cumprod) and sampling.py (get_sigmas_karras, _exponential, _polyexponential); A1111
// modules/sd_schedulers.py (uniform, sgm_uniform, kl_optimal, simple, normal, ddim, beta with its 0.6/0.6 default);
// CompVis ldm/models/diffusion/ddpm.py register_schedule and ldm/modules/diffusionmodules/util.py
// make_beta_schedule (the model's alphas_cumprod). Each step is the same torch operation in the same dtype.
#include "core/sched/k_diffusion.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace dd::sched {

at::Tensor ldmAlphasCumprod(const ConfigReader& cfg) {
    const int64_t T = cfg.integer("num_train_timesteps", 1000);
    const double b0 = cfg.number("beta_start", 0.00085), b1 = cfg.number("beta_end", 0.012);
    const std::string schedule = cfg.choice("beta_schedule", "scaled_linear", {"scaled_linear", "linear"});
    at::Tensor betas;
    if (cfg.has("trained_betas")) {
        const TrainSchedule train = readTrainSchedule(cfg, b0, b1, schedule);
        return train.alphasCumprod.to(torch::kFloat64);
    }
    if (schedule == "scaled_linear") betas = torch::linspace(std::sqrt(b0), std::sqrt(b1), T, torch::kFloat64).pow(2);
    else betas = torch::linspace(b0, b1, T, torch::kFloat64);
    if (cfg.flag("rescale_betas_zero_snr", false))
        throw std::invalid_argument("the k-diffusion samplers need a schedule without zero terminal SNR (rescale_betas_zero_snr)");
    return torch::cumprod(1 - betas, 0);
}

namespace {

at::Tensor scalar(double v) { return torch::scalar_tensor(v, torch::kFloat32); }

at::Tensor appendZero(const at::Tensor& x) { return torch::cat({x, x.new_zeros({1})}); }

// A Python list of floats made a FloatTensor, with the final 0.
at::Tensor floatsThenZero(const std::vector<double>& values) {
    std::vector<float> f(values.begin(), values.end());
    f.push_back(0.0f);
    return torch::tensor(f, torch::kFloat32);
}

// scipy.stats.beta.ppf(p, a, b) by bisection on the regularised incomplete beta function (continued fraction).
double incompleteBeta(double x, double a, double b) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    if (x > (a + 1) / (a + b + 2)) return 1 - incompleteBeta(1 - x, b, a);
    const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x)) / a;
    double f = 1, c = 1, d = 0;  // Lentz's algorithm
    for (int i = 0; i <= 400; ++i) {
        const int m = i / 2;
        double num;
        if (i == 0) num = 1;
        else if (i % 2 == 0) num = (m * (b - m) * x) / ((a + 2.0 * m - 1) * (a + 2.0 * m));
        else num = -((a + m) * (a + b + m) * x) / ((a + 2.0 * m) * (a + 2.0 * m + 1));
        d = 1 + num * d;
        d = std::fabs(d) < 1e-300 ? 1e-300 : d;
        d = 1 / d;
        c = 1 + num / c;
        c = std::fabs(c) < 1e-300 ? 1e-300 : c;
        const double cd = c * d;
        f *= cd;
        if (std::fabs(1 - cd) < 1e-16) break;
    }
    return front * (f - 1);
}

double betaPpf(double p, double a, double b) {
    if (p <= 0) return 0;
    if (p >= 1) return 1;
    double lo = 0, hi = 1;
    for (int i = 0; i < 200 && hi - lo > 1e-17; ++i) {
        const double mid = 0.5 * (lo + hi);
        (incompleteBeta(mid, a, b) < p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

} // namespace

KModelSigmas::KModelSigmas(const ConfigReader& config, Kind kind) {
    const bool comfy = kind == Kind::ComfyUI;
    const at::Tensor ac = comfy ? ldmAlphasCumprod(config) : ldmAlphasCumprod(config).to(torch::kFloat32);
    const at::Tensor sigmas = ((1 - ac) / ac).pow(0.5);
    m_sigmas = sigmas.to(torch::kFloat32);
    m_logSigmas = sigmas.log().to(torch::kFloat32);
    if (kind == Kind::Lcm) {  // the same float32 arithmetic on the kept ᾱ: the same values, every 20th
        m_lcmSkip = m_sigmas.size(0) / 50;
        const at::Tensor kept = torch::arange(m_lcmSkip - 1, m_sigmas.size(0), m_lcmSkip, torch::kLong);
        m_sigmas = m_sigmas.index_select(0, kept), m_logSigmas = m_logSigmas.index_select(0, kept);
    }
}

double KModelSigmas::sigmaMin() const { return m_sigmas[0].item<float>(); }
double KModelSigmas::sigmaMax() const { return m_sigmas[-1].item<float>(); }

at::Tensor KModelSigmas::sigmaToT(const at::Tensor& sigma) const {
    if (m_lcmSkip) return nearestT(sigma) * double(m_lcmSkip) + double(m_lcmSkip - 1);
    const at::Tensor logSigma = sigma.log();
    const at::Tensor dists = logSigma - m_logSigmas.unsqueeze(1);
    const at::Tensor lowIdx = dists.ge(0).cumsum(0).argmax(0).clamp_max(m_logSigmas.size(0) - 2);
    const at::Tensor highIdx = lowIdx + 1;
    const at::Tensor low = m_logSigmas.index({lowIdx}), high = m_logSigmas.index({highIdx});
    const at::Tensor w = ((low - logSigma) / (low - high)).clamp(0, 1);
    return ((1 - w) * lowIdx + w * highIdx).view(sigma.sizes());
}

at::Tensor KModelSigmas::nearestT(const at::Tensor& sigma) const {
    const at::Tensor dists = sigma.log() - m_logSigmas.unsqueeze(1);
    return dists.abs().argmin(0).view(sigma.sizes()).to(torch::kFloat32);
}

at::Tensor KModelSigmas::tToSigma(const at::Tensor& t) const {
    if (!m_lcmSkip) return indexToSigma(t);
    return indexToSigma(((t - (m_lcmSkip - 1)) / m_lcmSkip).to(torch::kFloat32).clamp(0, m_sigmas.size(0) - 1));
}

at::Tensor KModelSigmas::indexToSigma(const at::Tensor& t) const {
    const at::Tensor tf = t.to(torch::kFloat32);
    const at::Tensor lowIdx = tf.floor().to(torch::kLong), highIdx = tf.ceil().to(torch::kLong), w = tf.frac();
    const at::Tensor logSigma = (1 - w) * m_logSigmas.index({lowIdx}) + w * m_logSigmas.index({highIdx});
    return logSigma.exp();
}

at::Tensor KModelSigmas::uniformSigmas(int64_t n) const {
    const int64_t last = m_sigmas.size(0) - 1;  // LCM's: from its timestep of the largest σ to that of the smallest
    const double tMax = double(m_lcmSkip ? last * m_lcmSkip + m_lcmSkip - 1 : last), tMin = double(m_lcmSkip ? m_lcmSkip - 1 : 0);
    return appendZero(tToSigma(torch::linspace(tMax, tMin, n, torch::kFloat32)));
}

const std::vector<std::string>& scheduleLabels() {
    static const std::vector<std::string> labels{"Uniform", "Karras", "Exponential", "Polyexponential", "SGM Uniform",
                                                 "KL Optimal", "Simple", "Normal", "DDIM", "Beta"};
    return labels;
}

namespace {

// ComfyUI's beta_scheduler: beta quantiles of 1 − i/n scaled to whole timesteps (rounded half to even), repeats
// dropped; and kl_optimal_scheduler, which spaces n points over [0, 1] and ends in 0.
at::Tensor comfySchedule(const std::string& label, int64_t n, const KModelSigmas& model) {
    const auto& table = model.sigmas();
    if (label == "Beta") {
        const double total = double(table.size(0) - 1);
        std::vector<double> sigs;
        double last = -1;
        for (int64_t i = 0; i < n; ++i) {
            const double t = npRound(betaPpf(1.0 - double(i) / double(n), 0.6, 0.6) * total);
            if (t != last) sigs.push_back(table[int64_t(t)].item<float>());
            last = t;
        }
        return floatsThenZero(sigs);
    }
    const at::Tensor idx = torch::arange(n, torch::kFloat32).div_(double(std::max<int64_t>(n - 1, 1)));
    at::Tensor sigmas = torch::zeros({n + 1}, torch::kFloat32);
    sigmas.slice(0, 0, n).copy_((idx * std::atan(model.sigmaMin()) + (1 - idx) * std::atan(model.sigmaMax())).tan_());
    return sigmas;
}

} // namespace

at::Tensor scheduleSigmas(const std::string& label, int64_t n, const KModelSigmas& model, bool comfy) {
    if (n < 1) throw std::invalid_argument("a schedule needs at least one step");
    if (comfy && (label == "Beta" || label == "KL Optimal")) return comfySchedule(label, n, model);
    const double sMin = model.sigmaMin(), sMax = model.sigmaMax();
    if (label == "Uniform") return model.uniformSigmas(n);
    if (label == "Karras") {
        const double rho = 7.0, minInv = std::pow(sMin, 1 / rho), maxInv = std::pow(sMax, 1 / rho);
        const at::Tensor ramp = torch::linspace(0, 1, n, torch::kFloat32);
        return appendZero((ramp * (minInv - maxInv) + maxInv).pow(rho));
    }
    if (label == "Exponential")
        return appendZero(torch::linspace(std::log(sMax), std::log(sMin), n, torch::kFloat32).exp());
    if (label == "Polyexponential") {
        const at::Tensor ramp = torch::linspace(1, 0, n, torch::kFloat32).pow(1.0);
        return appendZero(torch::exp(ramp * (std::log(sMax) - std::log(sMin)) + std::log(sMin)));
    }
    if (label == "SGM Uniform" || label == "Normal") {
        const double start = model.sigmaToT(scalar(sMax)).item<float>(), end = model.sigmaToT(scalar(sMin)).item<float>();
        at::Tensor t = torch::linspace(start, end, label == "Normal" ? n : n + 1, torch::kFloat32);
        if (label == "SGM Uniform") t = t.slice(0, 0, n);
        std::vector<at::Tensor> sigs;  // one at a time, as A1111's list comprehension computes them
        for (int64_t i = 0; i < t.size(0); ++i) sigs.push_back(model.tToSigma(t[i]));
        return appendZero(torch::stack(sigs));
    }
    if (label == "KL Optimal") {  // ends at σ_min, not 0, as A1111's does
        const at::Tensor aMin = torch::arctan(scalar(sMin)), aMax = torch::arctan(scalar(sMax));
        const at::Tensor idx = torch::arange(n + 1, torch::kLong);
        return torch::tan(idx / n * aMin + (1.0 - idx / n) * aMax);
    }
    const auto& table = model.sigmas();
    const int64_t T = table.size(0);
    if (label == "Simple") {
        std::vector<double> sigs;
        const double ss = double(T) / double(n);
        for (int64_t x = 0; x < n; ++x) sigs.push_back(table[T - 1 - int64_t(double(x) * ss)].item<float>());
        return floatsThenZero(sigs);
    }
    if (label == "DDIM") {
        std::vector<double> sigs;
        const int64_t ss = std::max<int64_t>(T / n, 1);
        for (int64_t x = 1; x < T; x += ss) sigs.insert(sigs.begin(), table[x].item<float>());
        return floatsThenZero(sigs);
    }
    if (label == "Beta") {
        std::vector<double> sigs;
        for (double x : npLinspace(0, 1, n)) sigs.push_back(sMin + betaPpf(1 - x, 0.6, 0.6) * (sMax - sMin));
        return floatsThenZero(sigs);
    }
    throw std::invalid_argument("schedule type '" + label + "' is unknown");
}

} // namespace dd::sched
