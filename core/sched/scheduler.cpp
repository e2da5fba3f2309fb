// Ref: diffusers utils/torch_utils.py randn_tensor (noise), pipelines/stable_diffusion/
// pipeline_stable_diffusion_img2img.py get_timesteps (img2img truncation); the σ-scheduler pieces shared by
// scheduling_euler_discrete.py, scheduling_euler_ancestral_discrete.py, scheduling_heun_discrete.py and
// scheduling_lms_discrete.py (init_noise_sigma, scale_model_input, add_noise, x0 per prediction_type);
// add_noise of scheduling_ddim.py / scheduling_pndm.py / scheduling_lcm.py.
#include "core/sched/schedulers.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dd::sched {

// ---- noise ---------------------------------------------------------------------------------------------

NoiseSource::NoiseSource(at::Generator generator) : m_streams{ImageRng(std::move(generator))}, m_seeds{m_streams[0].seed()} {}

NoiseSource::NoiseSource(std::vector<ImageRng> perImage) : m_streams(std::move(perImage)) {
    if (m_streams.empty()) throw std::invalid_argument("NoiseSource: no generators");
    for (const auto& s : m_streams) m_seeds.push_back(s.seed());
}

void NoiseSource::restart(std::vector<ImageRng> perImage) {
    if (perImage.size() != m_streams.size()) throw std::invalid_argument("NoiseSource: restarted with another batch size");
    m_streams = std::move(perImage);
}

at::Tensor NoiseSource::randn(at::IntArrayRef shape, at::ScalarType dtype, c10::Device device) {
    if (m_streams.size() == 1) return m_streams[0].randn(shape, dtype).to(device);
    if (shape.empty() || shape[0] != static_cast<int64_t>(m_streams.size()))
        throw std::invalid_argument("NoiseSource: " + std::to_string(m_streams.size()) +
                                    " generators for a batch of " + (shape.empty() ? "0" : std::to_string(shape[0])));
    std::vector<int64_t> one(shape.begin(), shape.end());
    one[0] = 1;
    std::vector<at::Tensor> parts;
    for (auto& g : m_streams) parts.push_back(g.randn(one, dtype));
    return torch::cat(parts, 0).to(device);
}

void Scheduler::assignTimesteps(const at::Tensor& cpuTimesteps, c10::Device device) {
    m_timestepsCpu = cpuTimesteps.contiguous();
    m_timesteps = m_timestepsCpu.to(device);
}

int64_t Scheduler::timestepAt(int64_t i) const { return m_timestepsCpu.data_ptr<int64_t>()[i]; }

// ---- img2img -------------------------------------------------------------------------------------------

Img2ImgSchedule Scheduler::img2imgTimesteps(double strength) {
    if (!m_timesteps.defined()) throw std::logic_error("img2imgTimesteps called before setTimesteps");
    if (!(strength >= 0.0 && strength <= 1.0))
        throw std::invalid_argument("img2img strength must be between 0 and 1, got " + std::to_string(strength));
    const int64_t n = m_numInferenceSteps;
    const int64_t init = std::min(static_cast<int64_t>(double(n) * strength), n);
    const int64_t tStart = std::max<int64_t>(n - init, 0);
    Img2ImgSchedule r;
    r.beginIndex = std::min<int64_t>(tStart * order(), m_timesteps.size(0));
    r.timesteps = m_timesteps.slice(0, r.beginIndex);  // on the device, like diffusers
    r.numSteps = n - tStart;
    return r;
}

// ---- shared helpers ------------------------------------------------------------------------------------

Prediction readPrediction(const ConfigReader& cfg) {
    const std::string p = cfg.choice("prediction_type", "epsilon", {"epsilon", "v_prediction", "sample"});
    return p == "epsilon" ? Prediction::Epsilon : p == "v_prediction" ? Prediction::VPrediction : Prediction::Sample;
}

at::Tensor addNoiseVP(const TrainSchedule& train, const at::Tensor& original, const at::Tensor& noise, int64_t t) {
    const float a = train.alphaCumprod(t);
    return original * std::sqrt(a) + noise * std::sqrt(1.0f - a);
}

// ---- SigmaScheduler ------------------------------------------------------------------------------------

SigmaScheduler::SigmaScheduler(const nlohmann::json& config, double betaStart, double betaEnd,
                               const std::string& schedule, const std::string& spacing)
    : m_cfg(config),
      m_train(readTrainSchedule(m_cfg, betaStart, betaEnd, schedule)),
      m_spacing(readSpacing(m_cfg, spacing)),
      m_stepsOffset(m_cfg.integer("steps_offset", 0)),
      m_prediction(readPrediction(m_cfg)) {}

double SigmaScheduler::initNoiseSigma() const {
    const float maxSigma = m_sigmas.max().item<float>();
    if (m_spacing != Spacing::Leading) return maxSigma;
    return std::sqrt(maxSigma * maxSigma + 1.0f);
}

at::Tensor SigmaScheduler::scaleModelInput(const at::Tensor& sample, int64_t stepIndex) {
    const float sigma = sigmaAt(stepIndex);
    return sample / std::sqrt(sigma * sigma + 1.0f);
}

at::Tensor SigmaScheduler::addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t stepIndex) const {
    return original + noise * sigmaAt(stepIndex);
}

at::Tensor SigmaScheduler::predictOriginal(const at::Tensor& modelOutput, const at::Tensor& sample,
                                           float sigma) const {
    switch (m_prediction) {
    case Prediction::Epsilon: return sample - sigma * modelOutput;
    case Prediction::VPrediction:
        return modelOutput * (-sigma / std::sqrt(sigma * sigma + 1.0f)) + sample / (sigma * sigma + 1.0f);
    case Prediction::Sample: break;
    }
    return modelOutput;
}

std::pair<std::vector<double>, std::vector<double>> SigmaScheduler::sigmasFor(std::vector<double> timesteps,
                                                                               bool karras,
                                                                               bool configLimits) const {
    std::vector<double> sigmas;
    for (double t : timesteps) sigmas.push_back(interpSigma(m_train.sigmaTable, t));
    if (!karras) return {timesteps, sigmas};
    const double sMin = configLimits ? m_cfg.number("sigma_min", sigmas.back()) : sigmas.back();
    const double sMax = configLimits ? m_cfg.number("sigma_max", sigmas.front()) : sigmas.front();
    sigmas = karrasSigmas(sMin, sMax, static_cast<int64_t>(sigmas.size()));
    timesteps.clear();
    for (double s : sigmas) timesteps.push_back(sigmaToT(s, m_train.logSigmas));
    return {timesteps, sigmas};
}

} // namespace dd::sched
