// A1111 sampler names (api::samplerNames, the one list) → diffusers scheduler classes and options, as diffusers documents the mapping and its
// users write it: XScheduler.from_config(pipe.scheduler.config, **options); with a schedule type, A1111's own
// samplers (k-diffusion's, its DDIM and PLMS).
#include "core/sched/k_diffusion.h"
#include "core/sched/schedulers.h"

#include "core/api/generation_settings.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace dd::sched {
namespace {

struct Entry {
    const char* name;
    std::function<std::unique_ptr<Scheduler>(const nlohmann::json&)> make;
    nlohmann::json options;
};

const std::vector<Entry>& entries() {
    static const std::vector<Entry> table = {
        {"Euler", makeEulerDiscrete, nlohmann::json::object()},
        {"Euler a", makeEulerAncestralDiscrete, nlohmann::json::object()},
        {"DDIM", makeDDIM, nlohmann::json::object()},
        {"PLMS", makePNDM, {{"skip_prk_steps", true}}},
        {"DPM++ 2M", makeDPMSolverMultistep, {{"algorithm_type", "dpmsolver++"}, {"use_karras_sigmas", false}}},
        {"DPM++ 2M Karras", makeDPMSolverMultistep,
         {{"algorithm_type", "dpmsolver++"}, {"use_karras_sigmas", true}}},
        {"DPM++ 2M SDE", makeDPMSolverMultistep,
         {{"algorithm_type", "sde-dpmsolver++"}, {"use_karras_sigmas", false}}},
        {"Heun", makeHeunDiscrete, nlohmann::json::object()},
        {"LMS", makeLMSDiscrete, nlohmann::json::object()},
        {"UniPC", makeUniPCMultistep, nlohmann::json::object()},
        {"LCM", makeLCM, nlohmann::json::object()},
    };
    return table;
}

// The pipeline's scheduler config with the sampler's own options over it, then the user's.
nlohmann::json configWith(const nlohmann::json& pipelineSchedulerConfig, const nlohmann::json& options, const nlohmann::json& overrides) {
    nlohmann::json config = pipelineSchedulerConfig.is_object() ? pipelineSchedulerConfig : nlohmann::json::object();
    for (const auto* layer : {&options, &overrides})
        if (layer->is_object())
            for (const auto& [key, value] : layer->items()) config[key] = value;
    return config;
}

std::unique_ptr<Scheduler> makeDiffusers(const std::string& userName, const nlohmann::json& pipelineSchedulerConfig,
                                         const nlohmann::json& overrides) {
    for (const auto& e : entries())
        if (userName == e.name) return e.make(configWith(pipelineSchedulerConfig, e.options, overrides));
    std::string valid;
    for (const auto& n : api::samplerNames()) valid += (valid.empty() ? "\"" : ", \"") + n + "\"";
    throw std::invalid_argument("unknown sampler \"" + userName + "\"; valid names: " + valid);
}

} // namespace

std::unique_ptr<Scheduler> makeScheduler(const std::string& userName, const std::string& scheduleType,
                                         const nlohmann::json& pipelineSchedulerConfig, const nlohmann::json& overrides) {
    api::GenerationSettings s;
    s.sampler = userName, s.scheduleType = scheduleType;
    if (api::runsA1111Timesteps(s)) {
        if (scheduleType != "Automatic") throw std::invalid_argument("A1111's " + userName + " keeps its own timesteps: its schedule type is \"Automatic\"");
        return makeA1111Timesteps(userName, configWith(pipelineSchedulerConfig, nlohmann::json::object(), overrides));
    }
    if (!api::runsKDiffusion(s)) {
        const auto& known = api::samplerNames();
        if (!scheduleType.empty() && std::find(known.begin(), known.end(), userName) != known.end()) throw std::invalid_argument("the sampler \"" + userName + "\" has its own schedule: leave the schedule type empty");
        return makeDiffusers(userName, pipelineSchedulerConfig, overrides);
    }
    return makeKDiffusion(userName, scheduleType, configWith(pipelineSchedulerConfig, nlohmann::json::object(), overrides));
}

std::unique_ptr<Scheduler> makeScheduler(const std::string& userName, const nlohmann::json& pipelineSchedulerConfig,
                                         const nlohmann::json& overrides) {
    return makeScheduler(userName, "", pipelineSchedulerConfig, overrides);
}

std::unique_ptr<Scheduler> makeScheduler(const std::string& userName, const nlohmann::json& pipelineSchedulerConfig) {
    return makeScheduler(userName, "", pipelineSchedulerConfig, nlohmann::json::object());
}

} // namespace dd::sched
