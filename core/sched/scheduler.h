#pragma once
// Schedulers: the sampling algorithms of 🤗 diffusers, one class each, behind one small interface
// (diffusers' own: set_timesteps / scale_model_input / step), numerically equal to diffusers.
//
// Usage (txt2img; the denoising loop in core/pipeline is the real one):
//   auto s = dd::sched::makeScheduler("DPM++ 2M Karras", schedulerConfigJson);
//   s->setTimesteps(25, device);
//   NoiseSource noise(at::make_generator<at::CPUGeneratorImpl>(seed));
//   auto x = noise.randn({1, 4, 64, 64}, at::kFloat, device) * s->initNoiseSigma();
//   for (int64_t i = 0; i < s->timesteps().size(0); ++i) {
//       auto eps = unet(s->scaleModelInput(x, i), s->timesteps()[i], ...);
//       x = s->step(eps, i, x, noise);
//   }
// Steps are addressed by their index into timesteps() (diffusers' step_index), not by the timestep value;
// multistep schedulers keep history, so step() must be called for consecutive indices after setTimesteps().
// img2img: auto r = s->img2imgTimesteps(strength); x = s->addNoise(x0, noise, r.beginIndex); loop from
// r.beginIndex. Not thread-safe: one scheduler per generation, used on the engine thread.
#include <ATen/core/Generator.h>
#include "core/sched/image_rng.h"
#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace dd::sched {

// Random numbers exactly as diffusers' randn_tensor draws them: on the CPU, in the requested dtype, then moved to
// the device. One generator for the whole batch, or one stream per image (diffusers given a list of generators;
// A1111's per-image generators, CPU or NV: each image's slice is drawn from its own stream, in batch order).
class NoiseSource {
public:
    explicit NoiseSource(at::Generator generator);
    explicit NoiseSource(std::vector<ImageRng> perImage);
    at::Tensor randn(at::IntArrayRef shape, at::ScalarType dtype, c10::Device device);
    // The streams later draws come from (A1111's Eta noise seed delta restarts them after the starting noise).
    void restart(std::vector<ImageRng> perImage);
    // The images' seeds and kind of numbers as first given (the Brownian tree of the SDE samplers is keyed by them).
    const std::vector<uint64_t>& imageSeeds() const { return m_seeds; }
    ImageRng::Kind kind() const { return m_streams.front().kind(); }

private:
    std::vector<ImageRng> m_streams;
    std::vector<uint64_t> m_seeds;
};

// What an img2img run keeps of the schedule (diffusers' pipeline get_timesteps): the timesteps from
// beginIndex on, and the number of inference steps that remain.
struct Img2ImgSchedule {
    at::Tensor timesteps;
    int64_t beginIndex = 0;
    int64_t numSteps = 0;
};

class Scheduler {
public:
    virtual ~Scheduler() = default;

    // The diffusers class this reproduces, e.g. "EulerDiscreteScheduler".
    virtual std::string className() const = 0;
    // diffusers' scheduler.order: 2 for Heun, whose timesteps() lists each t twice, else 1.
    virtual int order() const { return 1; }
    // Whether model evaluation i begins a step. A k-diffusion second-order step evaluates the model twice and its
    // second evaluation needs the first's state, so a run handed over (the SDXL refiner) switches between steps.
    virtual bool beginsStep(int64_t /*i*/) const { return true; }

    virtual void setTimesteps(int64_t numSteps, c10::Device device = c10::Device(c10::kCPU)) = 0;
    // What the UNet is given: int64 (DDIM, PNDM, DPM, UniPC, LCM) or float32 (Euler, Heun, LMS) like diffusers.
    const at::Tensor& timesteps() const { return m_timesteps; }
    // σ per step (+ final), float32 on CPU, for σ-based schedulers; undefined for DDIM/PNDM/LCM.
    const at::Tensor& sigmas() const { return m_sigmas; }
    virtual double initNoiseSigma() const { return 1.0; }

    virtual at::Tensor scaleModelInput(const at::Tensor& sample, int64_t stepIndex) = 0;
    // `noise` is used only by the samplers that add noise (Euler a, DPM++ 2M SDE, LCM).
    virtual at::Tensor step(const at::Tensor& modelOutput, int64_t stepIndex, const at::Tensor& sample,
                            NoiseSource& noise) = 0;

    // Noise `original` to the level of timesteps()[stepIndex] (diffusers add_noise at that timestep).
    virtual at::Tensor addNoise(const at::Tensor& original, const at::Tensor& noise, int64_t stepIndex) const = 0;
    // Truncates the schedule for img2img; call after setTimesteps. Strength in [0, 1]. A sampler whose first step
    // is unlike the others (A1111's PLMS) lays its evaluations out again for the shorter run.
    virtual Img2ImgSchedule img2imgTimesteps(double strength);
    // img2img's starting latents: `original` noised to where the run begins. addNoise at beginIndex, but for
    // A1111's DDIM and PLMS, which noise to the timestep above their first evaluation.
    virtual at::Tensor img2imgStart(const at::Tensor& original, const at::Tensor& noise, int64_t beginIndex) const {
        return addNoise(original, noise, beginIndex);
    }

protected:
    // Stores the schedule: timesteps() on `device`, a CPU copy for reading values without a device sync.
    void assignTimesteps(const at::Tensor& cpuTimesteps, c10::Device device);
    int64_t timestepAt(int64_t i) const;  // integer schedules (DDIM, PNDM, LCM)

    int64_t m_numInferenceSteps = 0;
    at::Tensor m_timesteps;
    at::Tensor m_timestepsCpu;
    at::Tensor m_sigmas;
};

// The sampler names users know from A1111 (api::samplerNames). With a schedule type (api::scheduleTypes), or for a
// sampler only k-diffusion has, the k-diffusion sampler A1111 runs (api::runsKDiffusion).

// Builds the scheduler a diffusers user gets from XScheduler.from_config(pipe.scheduler.config, **options):
// keys of the pipeline's scheduler_config.json that the class accepts are taken, the rest keep the class
// defaults. `overrides` (the user's, e.g. {"prediction_type": "epsilon"}) are set last, over the sampler's
// own options. Throws std::invalid_argument (listing the valid names) for an unknown name, and for config
// values the scheduler does not support.
std::unique_ptr<Scheduler> makeScheduler(const std::string& userName, const nlohmann::json& pipelineSchedulerConfig,
                                         const nlohmann::json& overrides);
std::unique_ptr<Scheduler> makeScheduler(const std::string& userName, const nlohmann::json& pipelineSchedulerConfig);
std::unique_ptr<Scheduler> makeScheduler(const std::string& userName, const std::string& scheduleType,
                                         const nlohmann::json& pipelineSchedulerConfig, const nlohmann::json& overrides);

} // namespace dd::sched
