#pragma once
// The ControlNets of a run, from settings to residuals: each named ControlNet loaded once next to the model (in
// the UNet's precision, where the UNet lives, under the same offload), its control image turned into the hint
// tensor, and at every step the residuals of the ControlNets whose guidance range covers that step, summed, as
// diffusers' MultiControlNetModel does. One ControlStack belongs to one loaded model (clear it when that goes).
// Not thread-safe: the engine thread only.
#include "core/api/generation_settings.h"
#include "core/api/image.h"
#include "core/nn/controlnet.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dd::pipeline {

struct SdModel;

// diffusers' controlnet_keep: a ControlNet steers step i of n (counted from the first step actually run) unless
// i/n < start or (i+1)/n > end.
bool controlActiveAt(double start, double end, int64_t step, int64_t steps);

class ControlStack {
public:
    struct Active {
        nn::ControlNetModel net{nullptr};
        torch::Tensor hint;        // [rows, 3, H, W] in [0, 1]: batch × (2 under CFG), on the compute device
        double weight = 1.0, start = 0.0, end = 1.0;
    };

    // Loads (or keeps from the previous run) every ControlNet `s.controlnets` names, placed on `home` in `dtype`,
    // and checks it fits `m` (family, channels, hint factor = the VAE's). `images[i]` is ControlNet i's control
    // image, already preprocessed, at s.width × s.height. Networks no longer named are dropped; `release` is told
    // each one before it goes (the engine takes it out of its offload bookkeeping). Returns the settings with the
    // hashes filled in. Throws std::invalid_argument, dd::io::ModelFileError.
    std::vector<api::ControlNetSetting> prepare(const SdModel& m, const api::GenerationSettings& s,
                                                     const std::vector<api::Image>& images, torch::Device home,
                                                     torch::Device compute, torch::ScalarType dtype, bool channelsLast,
                                                     bool cfg, const std::function<void(const torch::nn::Module*)>& release);
    const std::vector<Active>& active() const { return m_active; }
    void setAttention(const nn::AttentionOptions& a);
    // The summed residuals at `step` of `steps` (none when no ControlNet is active then), in `dtype`.
    std::optional<nn::ControlResiduals> residuals(int64_t step, int64_t steps, const torch::Tensor& input,
                                                  const torch::Tensor& timestep, const torch::Tensor& embeds,
                                                  const std::optional<nn::AddedCond>& added, torch::ScalarType dtype);
    // Drops every ControlNet (their offloads must be gone already).
    void clear();
    int64_t parameterCount() const;

private:
    struct Loaded {
        std::string key;          // path + placement
        std::string hash;
        nn::ControlNetModel net{nullptr};
    };
    std::vector<Loaded> m_loaded;
    std::vector<Active> m_active;
    torch::ScalarType m_dtype = torch::kFloat32;
};

} // namespace dd::pipeline
