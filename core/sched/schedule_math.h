#pragma once
// Shared schedule math for the scheduler implementations (internal to core/sched): config reading with
// diffusers' defaults, the training noise schedule, timestep spacing, σ interpolation, Karras σ and
// σ → t. Arithmetic follows diffusers step by step (float32 torch for the training schedule, numpy float64
// for spacing and interpolation, float32 where diffusers casts), so schedules come out identical.
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace dd::sched {

// Reads scheduler_config.json values the way ConfigMixin.from_config does: a missing or null key keeps the
// class default. Throws std::invalid_argument naming the key when a value has the wrong type.
class ConfigReader {
public:
    explicit ConfigReader(nlohmann::json config) : m_config(std::move(config)) {}
    double number(const std::string& key, double fallback) const;
    int64_t integer(const std::string& key, int64_t fallback) const;
    bool flag(const std::string& key, bool fallback) const;
    std::string text(const std::string& key, const std::string& fallback) const;
    bool has(const std::string& key) const;
    // Throws std::invalid_argument unless the value (or fallback) is one of `allowed`.
    std::string choice(const std::string& key, const std::string& fallback,
                       const std::vector<std::string>& allowed) const;

private:
    const nlohmann::json* find(const std::string& key) const;
    nlohmann::json m_config;
};

// Training schedule: betas → alphas_cumprod (float32, like diffusers' torch code).
struct TrainSchedule {
    int64_t numTrainTimesteps = 1000;
    at::Tensor alphasCumprod;       // float32 [T]
    std::vector<float> sigmaTable;  // ((1 - ᾱ)/ᾱ)^½ per training timestep, float32, ascending in t
    std::vector<float> logSigmas;   // np.log of sigmaTable (float32)
    float alphaCumprod(int64_t t) const;
};
// Reads num_train_timesteps, beta_start, beta_end, beta_schedule, trained_betas; rejects
// rescale_betas_zero_snr. The defaults are the class's own.
TrainSchedule readTrainSchedule(const ConfigReader& cfg, double betaStart, double betaEnd,
                                const std::string& betaSchedule);

enum class Spacing { Linspace, Leading, Trailing };
Spacing readSpacing(const ConfigReader& cfg, const std::string& fallback);

// numpy equivalents (float64).
std::vector<double> npLinspace(double start, double stop, int64_t num);
std::vector<double> npArange(double start, double stop, double step);
inline double npRound(double x) { return __builtin_nearbyint(x); }  // half to even, like np.round

// Descending timesteps of the Euler/Heun/LMS family (floats: linspace is not rounded, values are float32).
std::vector<double> sigmaTimesteps(Spacing s, int64_t n, int64_t T, int64_t stepsOffset);
// Descending integer timesteps of DDIM (PNDM uses the same list ascending).
std::vector<double> roundedTimesteps(Spacing s, int64_t n, int64_t T, int64_t stepsOffset);
// Descending integer timesteps of DPMSolverMultistep / UniPC (spaced over n + 1 points, last dropped).
std::vector<double> multistepTimesteps(Spacing s, int64_t n, int64_t T, int64_t stepsOffset);

// np.interp(t, arange(len(table)), table).
double interpSigma(const std::vector<float>& table, double t);
// diffusers _sigma_to_t: piecewise-linear in log σ between neighbouring training timesteps.
double sigmaToT(double sigma, const std::vector<float>& logSigmas);
// Karras et al. (2022) ρ = 7 schedule from sigmaMax down to sigmaMin, n values (diffusers _convert_to_karras).
std::vector<double> karrasSigmas(double sigmaMin, double sigmaMax, int64_t n);

// Tensors in diffusers' dtypes.
at::Tensor toFloatTensor(const std::vector<double>& v);  // float32, rounded from double
at::Tensor toLongTensor(const std::vector<double>& v);   // int64, values already integral

// VP quantities of a σ, in float32 like diffusers' 0-dim tensor arithmetic (_sigma_to_alpha_sigma_t).
struct AlphaSigma {
    float alpha;  // 1/√(σ²+1)
    float sigma;  // σ·alpha
    float lambda() const;  // log alpha − log sigma
};
AlphaSigma alphaSigma(float sigma);

} // namespace dd::sched
