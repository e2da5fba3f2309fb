// Ref: k-diffusion 0.1.1 sampling.py (sample_euler, _euler_ancestral, _heun, _dpm_2, _dpm_2_ancestral,
// _dpmpp_2s_ancestral, _dpmpp_sde, _dpmpp_2m, _dpmpp_2m_sde, _dpmpp_3m_sde, _lms; get_ancestral_step) and ComfyUI's
// sample_lcm, which k-diffusion lacks, with A1111's to_d (x − denoised)/σ and its sampler table
// (modules/sd_samplers_kdiffusion.py: discard_next_to_last_sigma, Brownian noise seeded with the images' seeds,
// sample_img2img's schedule); external.py CompVisDenoiser and CompVisVDenoiser (c_in, c_out, c_skip). The σ
// arithmetic is done on 0-dim float32 tensors, as k-diffusion does, so that the σ at which the Brownian tree is
// asked (rounded to 1e-6) come out the same.
#include "core/api/generation_settings.h"
#include "core/sched/brownian_tree.h"
#include "core/sched/k_diffusion.h"
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

namespace dd::sched {
namespace {

using T = at::Tensor;

enum class Algo { Euler, EulerA, Heun, Dpm2, Dpm2A, Dpmpp2sA, Dpmpp2m, DpmppSde, Dpmpp2mSde, Dpmpp2mSdeHeun, Dpmpp3mSde, Lms, Lcm };

const std::vector<std::pair<std::string, Algo>>& algorithms() {
    static const std::vector<std::pair<std::string, Algo>> table{
        {"Euler", Algo::Euler},         {"Euler a", Algo::EulerA},        {"Heun", Algo::Heun},
        {"DPM2", Algo::Dpm2},           {"DPM2 a", Algo::Dpm2A},          {"DPM++ 2S a", Algo::Dpmpp2sA},
        {"DPM++ 2M", Algo::Dpmpp2m},    {"DPM++ SDE", Algo::DpmppSde},    {"DPM++ 2M SDE", Algo::Dpmpp2mSde},
        {"DPM++ 2M SDE Heun", Algo::Dpmpp2mSdeHeun}, {"DPM++ 3M SDE", Algo::Dpmpp3mSde}, {"LMS", Algo::Lms},
        {"LCM", Algo::Lcm}};
    return table;
}

T tFn(const T& sigma) { return sigma.log().neg(); }
T sigmaFn(const T& t) { return t.neg().exp(); }
bool isZero(const T& v) { return v.item<float>() == 0.0f; }

// get_ancestral_step with η = 1: the σ to step down to and the noise to add.
std::pair<T, T> ancestralStep(const T& from, const T& to) {
    T up = (to.pow(2) * (from.pow(2) - to.pow(2)) / from.pow(2)).pow(0.5);
    if (!(up.item<float>() < to.item<float>())) up = to;  // Python's min(to, up)
    return {(to.pow(2) - up.pow(2)).pow(0.5), up};
}

class KDiffusionSampler final : public Scheduler {
public:
    KDiffusionSampler(Algo algo, std::string name, std::string label, const nlohmann::json& config)
        : m_algo(algo), m_name(std::move(name)), m_label(std::move(label)), m_cfg(config),
          m_comfy(m_cfg.choice("sample_as", "A1111", {"A1111", "ComfyUI"}) == "ComfyUI"), m_lcm(algo == Algo::Lcm && !m_comfy),
          m_model(m_cfg, m_comfy ? KModelSigmas::Kind::ComfyUI : m_lcm ? KModelSigmas::Kind::Lcm : KModelSigmas::Kind::CompVis),
          m_prediction(readPrediction(m_cfg)) {
        if (m_prediction == Prediction::Sample)
            throw std::invalid_argument("the k-diffusion samplers need an epsilon or v-prediction model");
    }

    std::string className() const override {
        if (m_lcm) return "k-diffusion LCM (" + m_label + ", A1111's LCM denoiser)";
        return "k-diffusion " + m_name + " (" + m_label + (m_comfy ? ", as ComfyUI" : "") + ")";
    }
    // Not diffusers' order 2 (each t listed twice): a step's evaluations are at different σ, and steps say where
    // they begin.
    bool beginsStep(int64_t i) const override { return i >= int64_t(m_evals.size()) || m_evals[size_t(i)].stage == 0; }

    void setTimesteps(int64_t numSteps, c10::Device device) override {
        // DPM2 and DPM2 a take one σ more and drop the next to last, and in A1111 DPM++ 3M SDE too (A1111's table,
        // ComfyUI's DISCARD_PENULTIMATE_SIGMA_SAMPLERS).
        const bool discard = m_algo == Algo::Dpm2 || m_algo == Algo::Dpm2A || (m_algo == Algo::Dpmpp3mSde && !m_comfy);
        m_k = scheduleSigmas(m_label, numSteps + (discard ? 1 : 0), m_model, m_comfy);
        if (discard) m_k = torch::cat({m_k.slice(0, 0, m_k.size(0) - 2), m_k.slice(0, m_k.size(0) - 1)});
        m_evals.clear();
        for (int64_t j = 0; j + 1 < m_k.size(0); ++j) {
            m_evals.push_back({j, 0, m_k[j]});
            if (T second = secondSigma(j); second.defined()) m_evals.push_back({j, 1, second});
        }
        std::vector<T> sigmas, ts;
        // ComfyUI calls the UNet at the nearest whole training timestep; k-diffusion (A1111) at the fractional one.
        for (const auto& e : m_evals) sigmas.push_back(e.sigma), ts.push_back(m_comfy ? m_model.nearestT(e.sigma) : m_model.sigmaToT(e.sigma));
        m_sigmas = torch::cat({torch::stack(sigmas), m_k.slice(0, m_k.size(0) - 1)});  // KL Optimal ends above 0
        assignTimesteps(torch::stack(ts), device);
        m_numInferenceSteps = m_k.size(0) - 1;
        m_history = History{};
    }

    // ComfyUI scales the starting noise by √(1 + σ²) where sampling starts at the model's largest σ (its max_denoise).
    double initNoiseSigma() const override {
        const T first = m_k[0];
        const double s = first.item<float>(), sMax = m_model.sigmaMax();
        const bool maxDenoise = std::fabs(sMax - s) <= 1e-5 * std::max(std::fabs(sMax), std::fabs(s)) || s > sMax;
        return m_comfy && maxDenoise ? (first.pow(2.0) + 1.0).sqrt().item<float>() : s;
    }

    at::Tensor scaleModelInput(const at::Tensor& sample, int64_t i) override {
        return sample * (m_evals[size_t(i)].sigma.pow(2) + 1).pow(0.5).reciprocal();
    }

    at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t i) const override {
        return original + noise * m_evals[size_t(i)].sigma;
    }

    // A1111's sample_img2img: of `steps`, the last int(strength·steps) + 1, from σ[steps − t_enc − 1].
    Img2ImgSchedule img2imgTimesteps(double strength) override {
        if (!(strength >= 0.0 && strength <= 1.0))
            throw std::invalid_argument("img2img strength must be between 0 and 1, got " + std::to_string(strength));
        const int64_t n = m_numInferenceSteps, tEnc = int64_t(std::min(strength, 0.999) * double(n));
        const int64_t first = n - tEnc - 1;
        Img2ImgSchedule r;
        while (r.beginIndex < int64_t(m_evals.size()) && m_evals[size_t(r.beginIndex)].step < first) ++r.beginIndex;
        r.timesteps = m_timesteps.slice(0, r.beginIndex);
        r.numSteps = tEnc + 1;
        return r;
    }

    at::Tensor step(const at::Tensor& modelOutput, int64_t i, const at::Tensor& sample, NoiseSource& noise) override {
        const Eval& e = m_evals[size_t(i)];
        if (m_history.firstStep < 0) m_history.firstStep = e.step;
        const T x = sample.to(torch::kFloat32);
        const T denoised = denoise(modelOutput.to(torch::kFloat32), x, e.sigma);
        return (e.stage == 0 ? firstEval(i, x, denoised, noise) : secondEval(x, denoised, noise)).to(modelOutput.scalar_type());
    }

private:
    struct Eval {
        int64_t step;
        int stage;  // 0: at the step's σ; 1: the second evaluation of a second-order step
        T sigma;
    };
    struct History {
        int64_t firstStep = -1;  // where sampling began (img2img starts later)
        T x, d, dt, mid, up, next, t, tNext, h, denoised;  // the step under way
        T old, older, hLast, hOlder;        // the multistep samplers' past
        std::deque<T> derivatives;          // LMS
    };

    // The σ of step j's second model evaluation, undefined when the step has none.
    T secondSigma(int64_t j) const {
        const T s = m_k[j], next = m_k[j + 1];
        switch (m_algo) {
        case Algo::Heun: return isZero(next) ? T() : next;
        case Algo::Dpm2: return isZero(next) ? T() : s.log().lerp(next.log(), 0.5).exp();
        case Algo::Dpm2A: {
            const T down = ancestralStep(s, next).first;
            return isZero(down) ? T() : s.log().lerp(down.log(), 0.5).exp();
        }
        case Algo::Dpmpp2sA: {
            const T down = ancestralStep(s, next).first;
            if (isZero(down)) return {};
            const T t = tFn(s), h = tFn(down) - t;
            return sigmaFn(t + h * 0.5);
        }
        case Algo::DpmppSde: {
            if (isZero(next)) return {};
            const T t = tFn(s), h = tFn(next) - t;
            return sigmaFn(t + h * 0.5);
        }
        default: return {};
        }
    }

    // CompVisDenoiser: x − σ·ε; CompVisVDenoiser: v·c_out + x·c_skip. A1111's LCMCompVisDenoiser takes the model's
    // output as ε and blends the result with x by the consistency scalings of its timestep (σ_data = 0.5).
    T denoise(const T& out, const T& x, const T& sigma) const {
        if (m_lcm) {
            const T scaled = m_model.sigmaToT(sigma) * 10.0, square = scaled.pow(2) + 0.25;
            return scaled / square.pow(0.5) * (x + out * sigma.neg()) + square.reciprocal() * 0.25 * x;  // Python's 0.25 / t
        }
        if (m_prediction == Prediction::Epsilon) return x + out * sigma.neg();
        const T cSkip = (sigma.pow(2) + 1).reciprocal();
        const T cOut = sigma.neg() / (sigma.pow(2) + 1).pow(0.5);
        return out * cOut + x * cSkip;
    }

    T stepNoise(NoiseSource& noise, const T& x) { return noise.randn(x.sizes(), torch::kFloat32, x.device()); }

    T brownianNoise(NoiseSource& noise, const T& x, const T& sigma, const T& next) {
        if (!m_brownian) {
            const T positive = m_k.masked_select(m_k > 0);
            m_brownian = std::make_unique<BrownianNoise>(x.sizes().vec(), positive.min().item<float>(), m_k.max().item<float>(),
                                                         noise.imageSeeds(), noise.kind());
        }
        return (*m_brownian)(sigma.item<float>(), next.item<float>()).to(x.device());
    }

    // The first evaluation of a step, evaluation i; a second one (if the step has it) is evaluation i + 1.
    T firstEval(int64_t i, const T& x, const T& den, NoiseSource& noise) {
        History& h = m_history;
        const int64_t j = m_evals[size_t(i)].step;
        const T s = m_k[j], next = m_k[j + 1];
        switch (m_algo) {
        case Algo::Euler: return x + (x - den) / s * (next - s);
        case Algo::EulerA: {
            const auto [down, up] = ancestralStep(s, next);
            const T out = x + (x - den) / s * (down - s);
            return next.item<float>() > 0 ? out + stepNoise(noise, x) * up : out;
        }
        case Algo::Heun:
        case Algo::Dpm2: {
            const T d = (x - den) / s;
            if (isZero(next)) return x + d * (next - s);
            h.x = x, h.d = d, h.dt = next - s, h.mid = m_evals[size_t(i) + 1].sigma;
            return x + d * (m_algo == Algo::Heun ? h.dt : h.mid - s);
        }
        case Algo::Dpm2A: {
            const auto [down, up] = ancestralStep(s, next);
            const T d = (x - den) / s;
            if (isZero(down)) return x + d * (down - s);
            h.x = x, h.dt = down - s, h.up = up, h.mid = m_evals[size_t(i) + 1].sigma;
            return x + d * (h.mid - s);
        }
        case Algo::Dpmpp2sA: {
            const auto [down, up] = ancestralStep(s, next);
            if (isZero(down)) return x + (x - den) / s * (down - s);
            h.t = tFn(s), h.tNext = tFn(down), h.h = h.tNext - h.t, h.x = x, h.up = up, h.next = next;
            return sigmaFn(h.t + h.h * 0.5) / sigmaFn(h.t) * x - (h.h.neg() * 0.5).expm1() * den;
        }
        case Algo::DpmppSde: {
            if (isZero(next)) return x + (x - den) / s * (next - s);
            h.t = tFn(s), h.tNext = tFn(next), h.h = h.tNext - h.t, h.x = x, h.denoised = den;
            const T mid = h.t + h.h * 0.5;
            const auto [down, up] = ancestralStep(sigmaFn(h.t), sigmaFn(mid));
            const T sDown = tFn(down);
            const T x2 = sigmaFn(sDown) / sigmaFn(h.t) * x - (h.t - sDown).expm1() * den;
            return x2 + brownianNoise(noise, x, sigmaFn(h.t), sigmaFn(mid)) * up;
        }
        case Algo::Dpmpp2m: {
            const T t = tFn(s), tNext = tFn(next), step = tNext - t;
            T target = den;
            if (h.old.defined() && !isZero(next)) {
                const T r = (t - tFn(m_k[j - 1])) / step;
                target = (1 + (2 * r).reciprocal()) * den - (2 * r).reciprocal() * h.old;
            }
            h.old = den;
            return sigmaFn(tNext) / sigmaFn(t) * x - step.neg().expm1() * target;
        }
        case Algo::Dpmpp2mSde:
        case Algo::Dpmpp2mSdeHeun: return twoMSde(s, next, x, den, noise);
        case Algo::Dpmpp3mSde: return threeMSde(s, next, x, den, noise);
        case Algo::Lms: return lms(j, x, den);
        // ComfyUI's sample_lcm: the model's clean image, noised afresh down to the next σ.
        case Algo::Lcm: return next.item<float>() > 0 ? den + stepNoise(noise, x) * next : den;
        }
        return x;
    }

    // The second evaluation of step j at x2 (Heun: at σ_{j+1}; DPM2: the midpoint; DPM++: the half step).
    T secondEval(const T& x2, const T& den2, NoiseSource& noise) {
        History& h = m_history;
        switch (m_algo) {
        case Algo::Heun: {
            const T d2 = (x2 - den2) / h.mid;
            return h.x + (h.d + d2) / 2 * h.dt;
        }
        case Algo::Dpm2: return h.x + (x2 - den2) / h.mid * h.dt;
        case Algo::Dpm2A: return h.x + (x2 - den2) / h.mid * h.dt + stepNoise(noise, x2) * h.up;
        case Algo::Dpmpp2sA: {
            const T out = sigmaFn(h.tNext) / sigmaFn(h.t) * h.x - h.h.neg().expm1() * den2;
            return h.next.item<float>() > 0 ? out + stepNoise(noise, x2) * h.up : out;
        }
        case Algo::DpmppSde: {
            const auto [down, up] = ancestralStep(sigmaFn(h.t), sigmaFn(h.tNext));
            const T tNextDown = tFn(down);
            const T target = (1 - 1.0) * h.denoised + 1.0 * den2;  // (1 − fac)·denoised + fac·denoised_2, fac = 1
            const T out = sigmaFn(tNextDown) / sigmaFn(h.t) * h.x - (h.t - tNextDown).expm1() * target;
            return out + brownianNoise(noise, x2, sigmaFn(h.t), sigmaFn(h.tNext)) * up;
        }
        default: throw std::logic_error("a first-order sampler has no second evaluation");
        }
    }

    T twoMSde(const T& s, const T& next, const T& x, const T& den, NoiseSource& noise) {
        History& h = m_history;
        if (isZero(next)) {
            h.old = den;
            return den;
        }
        const T t = s.log().neg(), sn = next.log().neg(), step = sn - t, etaH = step;  // η = 1
        T out = next / s * etaH.neg().exp() * x + (step.neg() - etaH).expm1().neg() * den;
        if (h.old.defined()) {
            const T r = h.hLast / step;
            const T phi = (step.neg() - etaH).expm1().neg();
            if (m_algo == Algo::Dpmpp2mSdeHeun) out = out + (phi / (step.neg() - etaH) + 1) * r.reciprocal() * (den - h.old);
            else out = out + 0.5 * phi * r.reciprocal() * (den - h.old);
        }
        out = out + brownianNoise(noise, x, s, next) * next * (etaH * -2).expm1().neg().sqrt();
        h.old = den, h.hLast = step;
        return out;
    }

    T threeMSde(const T& s, const T& next, const T& x, const T& den, NoiseSource& noise) {
        History& h = m_history;
        if (isZero(next)) return den;
        const T t = s.log().neg(), sn = next.log().neg(), step = sn - t, hEta = step * 2.0;
        T out = torch::exp(hEta.neg()) * x + hEta.neg().expm1().neg() * den;
        if (h.hOlder.defined()) {
            const T r0 = h.hLast / step, r1 = h.hOlder / step;
            const T d10 = (den - h.old) / r0, d11 = (h.old - h.older) / r1;
            const T d1 = d10 + (d10 - d11) * r0 / (r0 + r1);
            const T d2 = (d10 - d11) / (r0 + r1);
            const T phi2 = hEta.neg().expm1() / hEta + 1, phi3 = phi2 / hEta - 0.5;
            out = out + phi2 * d1 - phi3 * d2;
        } else if (h.hLast.defined()) {
            const T r = h.hLast / step;
            const T phi2 = hEta.neg().expm1() / hEta + 1;
            out = out + phi2 * ((den - h.old) / r);
        }
        out = out + brownianNoise(noise, x, s, next) * next * (step * -2).expm1().neg().sqrt();
        h.older = h.old, h.old = den, h.hOlder = h.hLast, h.hLast = step;
        return out;
    }

    T lms(int64_t j, const T& x, const T& den) {
        History& h = m_history;
        constexpr int kOrder = 4;
        h.derivatives.push_back((x - den) / m_k[j]);
        if (h.derivatives.size() > size_t(kOrder)) h.derivatives.pop_front();
        const int64_t rel = j - h.firstStep;
        const int current = int(std::min<int64_t>(rel + 1, kOrder));
        if (m_lmsSigmas.empty() || m_lmsFrom != h.firstStep) {
            const T from = m_k.slice(0, h.firstStep).contiguous();
            m_lmsSigmas.assign(from.data_ptr<float>(), from.data_ptr<float>() + from.numel());
            m_lmsFrom = h.firstStep;
        }
        T sum;
        for (int k = 0; k < current; ++k) {
            const T term = lmsCoefficient(m_lmsSigmas, current, rel, k) * h.derivatives[h.derivatives.size() - 1 - size_t(k)];
            sum = k == 0 ? term : sum + term;
        }
        return x + sum;
    }

    Algo m_algo;
    std::string m_name, m_label;
    ConfigReader m_cfg;
    bool m_comfy;  // ComfyUI's k-diffusion (api::GenerationSettings::sampleAs)
    bool m_lcm;    // A1111's LCM: its own denoiser (KModelSigmas::Kind::Lcm, consistency scalings)
    KModelSigmas m_model;
    Prediction m_prediction;
    T m_k;  // the sampler's σ schedule, ending in 0
    std::vector<Eval> m_evals;
    History m_history;
    std::unique_ptr<BrownianNoise> m_brownian;
    std::vector<float> m_lmsSigmas;
    int64_t m_lmsFrom = -1;
};

} // namespace

std::unique_ptr<Scheduler> makeKDiffusion(const std::string& name, const std::string& label, const nlohmann::json& config) {
    for (const auto& [n, algo] : algorithms()) {
        if (n != name) continue;
        const std::string schedule = label.empty() || label == "Automatic" ? api::automaticSchedule(name) : label;
        const auto& known = scheduleLabels();
        if (std::find(known.begin(), known.end(), schedule) == known.end())
            throw std::invalid_argument("schedule type '" + label + "' is unknown");
        return std::make_unique<KDiffusionSampler>(algo, name, schedule, config);
    }
    throw std::invalid_argument("'" + name + "' is not a k-diffusion sampler");
}

} // namespace dd::sched
