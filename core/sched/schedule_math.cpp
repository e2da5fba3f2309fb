// Ref: diffusers schedulers/scheduling_euler_discrete.py (__init__, set_timesteps, _sigma_to_t,
// _convert_to_karras), scheduling_ddim.py / scheduling_dpmsolver_multistep.py (set_timesteps spacing),
// scheduling_utils.py / scheduling_ddpm.py (betas_for_alpha_bar); numpy linspace/arange/interp semantics.
#include "core/api/json_value.h"
#include "core/sched/schedule_math.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace dd::sched {

// ---- config -------------------------------------------------------------------------------------------

const nlohmann::json* ConfigReader::find(const std::string& key) const {
    if (!m_config.is_object()) return nullptr;
    auto it = m_config.find(key);
    if (it == m_config.end() || it->is_null()) return nullptr;
    return &*it;
}

bool ConfigReader::has(const std::string& key) const { return find(key) != nullptr; }

static std::invalid_argument badType(const std::string& key, const char* want, const nlohmann::json& v) {
    return std::invalid_argument("scheduler config: \"" + key + "\" should be " + want + ", got " + v.dump());
}

double ConfigReader::number(const std::string& key, double fallback) const {
    const auto* v = find(key);
    if (!v) return fallback;
    if (!v->is_number()) throw badType(key, "a number", *v);
    return v->get<double>();
}

int64_t ConfigReader::integer(const std::string& key, int64_t fallback) const {
    const auto* v = find(key);
    if (!v) return fallback;
    if (!v->is_number_integer()) throw badType(key, "an integer", *v);
    return api::jsonAs<int64_t>(*v);
}

bool ConfigReader::flag(const std::string& key, bool fallback) const {
    const auto* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) throw badType(key, "true or false", *v);
    return v->get<bool>();
}

std::string ConfigReader::text(const std::string& key, const std::string& fallback) const {
    const auto* v = find(key);
    if (!v) return fallback;
    if (!v->is_string()) throw badType(key, "a string", *v);
    return v->get<std::string>();
}

std::string ConfigReader::choice(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) const {
    std::string value = text(key, fallback);
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return value;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw std::invalid_argument("scheduler config: \"" + key + "\" is \"" + value + "\"; supported: " + list);
}

// ---- training schedule ---------------------------------------------------------------------------------

float TrainSchedule::alphaCumprod(int64_t t) const { return alphasCumprod.data_ptr<float>()[t]; }

// diffusers betas_for_alpha_bar(alpha_transform_type="cosine", max_beta=0.999), computed in float64.
static at::Tensor cosineBetas(int64_t T) {
    auto abar = [](double t) {
        double c = std::cos((t + 0.008) / 1.008 * std::numbers::pi / 2);
        return c * c;
    };
    std::vector<double> betas;
    for (int64_t i = 0; i < T; ++i)
        betas.push_back(std::min(1 - abar(double(i + 1) / T) / abar(double(i) / T), 0.999));
    return toFloatTensor(betas);
}

static at::Tensor readBetas(const ConfigReader& cfg, int64_t T, double start, double end,
                            const std::string& kind) {
    if (cfg.has("trained_betas")) throw std::invalid_argument("scheduler config: \"trained_betas\" is not supported");
    const auto opts = torch::TensorOptions().dtype(torch::kFloat);
    if (kind == "linear") return torch::linspace(start, end, T, opts);
    if (kind == "scaled_linear") return torch::linspace(std::sqrt(start), std::sqrt(end), T, opts).pow(2);
    if (kind == "squaredcos_cap_v2") return cosineBetas(T);
    throw std::invalid_argument("scheduler config: beta_schedule \"" + kind +
                                "\" is not supported (linear, scaled_linear, squaredcos_cap_v2)");
}

TrainSchedule readTrainSchedule(const ConfigReader& cfg, double betaStart, double betaEnd,
                                const std::string& betaSchedule) {
    if (cfg.flag("rescale_betas_zero_snr", false))
        throw std::invalid_argument("scheduler config: rescale_betas_zero_snr is not supported");
    TrainSchedule s;
    s.numTrainTimesteps = cfg.integer("num_train_timesteps", 1000);
    at::Tensor betas = readBetas(cfg, s.numTrainTimesteps, cfg.number("beta_start", betaStart),
                                 cfg.number("beta_end", betaEnd), cfg.text("beta_schedule", betaSchedule));
    s.alphasCumprod = torch::cumprod(1.0 - betas, 0).contiguous();
    at::Tensor sig = ((1 - s.alphasCumprod) / s.alphasCumprod).pow(0.5).contiguous();
    s.sigmaTable.assign(sig.data_ptr<float>(), sig.data_ptr<float>() + sig.numel());
    for (float x : s.sigmaTable) s.logSigmas.push_back(static_cast<float>(std::log(double(x))));
    return s;
}

Spacing readSpacing(const ConfigReader& cfg, const std::string& fallback) {
    const std::string s = cfg.choice("timestep_spacing", fallback, {"linspace", "leading", "trailing"});
    return s == "linspace" ? Spacing::Linspace : s == "leading" ? Spacing::Leading : Spacing::Trailing;
}

// ---- numpy ---------------------------------------------------------------------------------------------

std::vector<double> npLinspace(double start, double stop, int64_t num) {
    std::vector<double> y(std::max<int64_t>(num, 0));
    const double step = (stop - start) / double(num - 1);
    for (int64_t i = 0; i < num; ++i) y[i] = double(i) * step + start;
    if (num > 1) y.back() = stop;
    return y;
}

std::vector<double> npArange(double start, double stop, double step) {
    const auto n = static_cast<int64_t>(std::ceil((stop - start) / step));
    std::vector<double> y;
    for (int64_t i = 0; i < n; ++i) y.push_back(start + double(i) * step);
    return y;
}

static std::vector<double> leading(int64_t points, int64_t ratio, int64_t offset) {
    std::vector<double> t;
    for (int64_t i = points - 1; i >= 0; --i) t.push_back(double(i * ratio + offset));
    return t;
}

static std::vector<double> trailing(double last, int64_t T, int64_t n) {
    std::vector<double> t = npArange(last, 0, -double(T) / double(n));
    for (auto& x : t) x = npRound(x) - 1;
    return t;
}

std::vector<double> sigmaTimesteps(Spacing s, int64_t n, int64_t T, int64_t stepsOffset) {
    if (s == Spacing::Leading) return leading(n, T / n, stepsOffset);
    if (s == Spacing::Trailing) return trailing(double(T), T, n);
    std::vector<double> t = npLinspace(0, double(T - 1), n);  // dtype=float32
    std::reverse(t.begin(), t.end());
    for (auto& x : t) x = static_cast<float>(x);
    return t;
}

std::vector<double> roundedTimesteps(Spacing s, int64_t n, int64_t T, int64_t stepsOffset) {
    if (s != Spacing::Linspace) return sigmaTimesteps(s, n, T, stepsOffset);
    std::vector<double> t = npLinspace(0, double(T - 1), n);
    std::reverse(t.begin(), t.end());
    for (auto& x : t) x = npRound(x);
    return t;
}

std::vector<double> multistepTimesteps(Spacing s, int64_t n, int64_t T, int64_t stepsOffset) {
    if (s == Spacing::Trailing) return trailing(double(T), T, n);
    std::vector<double> t;
    if (s == Spacing::Leading) {
        t = leading(n + 1, T / (n + 1), stepsOffset);
    } else {
        t = npLinspace(0, double(T - 1), n + 1);
        std::reverse(t.begin(), t.end());
        for (auto& x : t) x = npRound(x);
    }
    t.pop_back();
    return t;
}

// ---- σ ------------------------------------------------------------------------------------------------

double interpSigma(const std::vector<float>& table, double t) {
    const auto last = static_cast<int64_t>(table.size()) - 1;
    if (t <= 0) return table.front();
    if (t >= double(last)) return table.back();
    const auto j = static_cast<int64_t>(std::floor(t));
    if (double(j) == t) return table[j];
    const double slope = (double(table[j + 1]) - double(table[j])) / 1.0;
    return slope * (t - double(j)) + double(table[j]);
}

double sigmaToT(double sigma, const std::vector<float>& logSigmas) {
    const double logSigma = std::log(std::max(sigma, 1e-10));
    const auto n = static_cast<int64_t>(logSigmas.size());
    int64_t low = 0;  // last index whose log σ is ≤ logSigma (0 if none), at most n − 2
    for (int64_t i = 0; i < n; ++i)
        if (logSigma - double(logSigmas[i]) >= 0) low = i;
    low = std::min(low, n - 2);
    const double lo = logSigmas[low], hi = logSigmas[low + 1];
    const double w = std::clamp((lo - logSigma) / (lo - hi), 0.0, 1.0);
    return (1 - w) * double(low) + w * double(low + 1);
}

std::vector<double> karrasSigmas(double sigmaMin, double sigmaMax, int64_t n) {
    const double rho = 7.0;
    const double minInv = std::pow(sigmaMin, 1 / rho), maxInv = std::pow(sigmaMax, 1 / rho);
    std::vector<double> out;
    for (double r : npLinspace(0, 1, n)) out.push_back(std::pow(maxInv + r * (minInv - maxInv), rho));
    return out;
}

at::Tensor toFloatTensor(const std::vector<double>& v) {
    return torch::tensor(at::ArrayRef<double>(v), torch::dtype(torch::kDouble)).to(torch::kFloat);
}

at::Tensor toLongTensor(const std::vector<double>& v) {
    return torch::tensor(at::ArrayRef<double>(v), torch::dtype(torch::kDouble)).to(torch::kLong);
}

float AlphaSigma::lambda() const { return std::log(alpha) - std::log(sigma); }

AlphaSigma alphaSigma(float sigma) {
    const float alpha = 1.0f / std::sqrt(sigma * sigma + 1.0f);
    return {alpha, sigma * alpha};
}

} // namespace dd::sched
