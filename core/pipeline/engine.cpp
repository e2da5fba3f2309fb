// The denoising loop, written out once. Ref: diffusers pipelines/stable_diffusion/pipeline_stable_diffusion.py
// (__call__), pipeline_stable_diffusion_img2img.py (prepare_latents, get_timesteps),
// pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl.py (_get_add_time_ids, needs_upcasting);
// sd_reference.md §8, §10, §12. The memory plan (core/memory/memory_plan.h) decides device, precision per
// network, attention kernel, VAE slicing/tiling, channels_last and model offload; latents and the scheduler
// stay fp32 whatever the networks run in, so a precision change only changes what the networks compute.
#include "core/pipeline/engine.h"

#include "core/io/model_error.h"
#include "core/io/model_hash.h"
#include "core/memory/determinism.h"
#include "core/memory/memory_probe.h"
#include "core/memory/oom_retry.h"
#include "core/memory/release_memory.h"
#include "core/memory/shipped_presets.h"
#include "core/nn/clip_text.h"
#include "core/nn/load_weights.h"
#include "core/pipeline/balanced_placement.h"
#include "core/nn/cpu_kernels.h"
#include "core/pipeline/conditioning_cache.h"
#include "core/pipeline/control_stack.h"
#include "core/pipeline/lora_stack.h"
#include "core/pipeline/preview.h"
#include "core/pipeline/previewer.h"
#include "core/pipeline/refiner.h"
#include "core/pipeline/residency.h"
#include "core/pipeline/sd_model.h"
#include "core/sched/scheduler.h"
#include "core/text/prompt_encoder.h"
#include "core/text/prompt_parser.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>

namespace dd::pipeline {
namespace {

int64_t parameterCount(torch::nn::Module& net) {
    int64_t n = 0;
    for (const auto& p : net.parameters()) n += p.numel();
    return n;
}

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Conditioning {
    torch::Tensor embeds;  // [B or 2B, 77·k, C]: rows [negative×B; positive×B] under CFG
    std::optional<nn::AddedCond> added;
};

// Each image of the batch repeats the prompt's row (diffusers: num_images_per_prompt).
torch::Tensor repeatRows(const torch::Tensor& t, int64_t n) {
    std::vector<int64_t> reps(size_t(t.dim()), 1);
    reps[0] = n;
    return t.repeat(reps);
}

// A tokenizer can produce ids a (test-sized) text encoder has no embedding for; say so instead of crashing.
void checkVocabulary(const nn::ClipTextModel& encoder, const text::ClipTokenizer& tok, const char* name) {
    if (encoder && tok.vocabSize() > encoder->config().vocabSize)
        throw std::invalid_argument(std::string(name) + " has " + std::to_string(tok.vocabSize()) +
                                    " tokens but its text encoder only " + std::to_string(encoder->config().vocabSize) +
                                    ": this model cannot encode arbitrary prompts");
}

text::CfgConditioning encodeText(SdModel& m, const settings::GenerationSettings& s, bool cfg) {
    if (m.tokenizer) checkVocabulary(m.textEncoder ? m.textEncoder : m.textEncoder2, *m.tokenizer, "tokenizer");
    if (m.tokenizer2) checkVocabulary(m.textEncoder2, *m.tokenizer2, "tokenizer_2");
    const text::TextModel textModel{m.textEncoder, m.textEncoder2, m.tokenizer ? &*m.tokenizer : nullptr,
                                    m.tokenizer2 ? &*m.tokenizer2 : nullptr, m.forceZerosForEmptyPrompt};
    return text::encodePrompts(textModel, s, cfg);
}

// The batch's UNet conditioning in the UNet's dtype, on `device`.
Conditioning batchConditioning(const text::CfgConditioning& text, const SdModel& m, const settings::GenerationSettings& s,
                               bool cfg, int64_t batch, torch::ScalarType dtype, torch::Device device) {
    const auto& neg = text.negative;
    const auto& pos = text.positive;
    auto side = [&](const torch::Tensor& n, const torch::Tensor& p) {
        const auto t = cfg ? torch::cat({repeatRows(n, batch), repeatRows(p, batch)}) : repeatRows(p, batch);
        return t.to(device, dtype);
    };
    Conditioning c;
    c.embeds = side(neg.embeds, pos.embeds);
    if (m.isXl()) {
        // add_time_ids = original (h, w) + crop (0, 0) + target (h, w), equal for both CFG halves; the refiner
        // (requires_aesthetics_score) ends them in the aesthetic score instead, the negative half in its own.
        auto ids = [&](double aesthetic) {
            const auto last = m.requiresAestheticsScore ? std::vector<double>{aesthetic}
                                                        : std::vector<double>{double(s.height), double(s.width)};
            std::vector<double> v{double(s.height), double(s.width), 0.0, 0.0};
            v.insert(v.end(), last.begin(), last.end());
            return torch::tensor(v).unsqueeze(0);
        };
        c.added = nn::AddedCond{side(neg.pooled, pos.pooled),
                                side(ids(s.refiner.negativeAestheticScore), ids(s.refiner.aestheticScore))};
    }
    return c;
}

// diffusers rescale_noise_cfg (Lin et al. 2023, "Common Diffusion Noise Schedules and Sample Steps are Flawed").
torch::Tensor rescaleNoiseCfg(const torch::Tensor& cfg, const torch::Tensor& text, double phi) {
    std::vector<int64_t> dims;
    for (int64_t d = 1; d < cfg.dim(); ++d) dims.push_back(d);
    const auto rescaled = cfg * (text.std(dims, /*unbiased=*/true, /*keepdim=*/true) / cfg.std(dims, true, true));
    return phi * rescaled + (1 - phi) * cfg;
}

torch::Tensor imageToTensor(const Image& img, int64_t width, int64_t height, torch::Device device) {
    if (img.width != width || img.height != height)
        throw std::invalid_argument("the init image is " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                                    " but the requested size is " + std::to_string(width) + "x" + std::to_string(height) +
                                    ": resize it first");
    auto t = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {1, height, width, 3}, torch::kUInt8).clone();
    return (t.permute({0, 3, 1, 2}).to(torch::kFloat32) / 255.0 * 2 - 1).to(device);
}

// Peak memory per stage: a new peak window at the stage's start, a sample at its end (and once per step). Freed CPU
// memory the allocator still holds (tcmalloc keeps it for reuse) is given back first, so a stage's peak is its own.
class StageMeter {
public:
    StageMeter(int cudaDevice, Observer* observer) : m_device(cudaDevice), m_observer(observer) {}
    void begin() const {
        memory::releaseFreedHostMemory();
        memory::resetPeaks(m_device);
    }
    memory::MemorySample sample(const char* stage) const {
        auto s = memory::sampleMemory(m_device);
        if (m_observer) m_observer->onMemory(stage, s);
        return s;
    }
    StagePeak end(const char* stage) const {
        const auto s = sample(stage);
        return {s.hostPeak, s.devicePeak};
    }

private:
    int m_device;
    Observer* m_observer;
};

std::string torchVersion() {
    return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
           std::to_string(TORCH_VERSION_PATCH);
}

// "auto" = the first CUDA device when there is one, else the CPU. (Asking loads CUDA's backend where a driver is.)
torch::Device resolveDevice(const std::string& wanted) {
    if (wanted == "cpu") return torch::kCPU;
    const int devices = memory::cudaDeviceCount();
    if (wanted == "auto") return devices > 0 ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    const torch::Device d(wanted);  // "cuda", "cuda:1"
    if (devices == 0)
        throw std::invalid_argument("the memory plan asks for device '" + wanted + "' but no CUDA device is available (use auto or cpu)");
    if (d.has_index() && d.index() >= devices)
        throw std::invalid_argument("the memory plan asks for device '" + wanted + "' but only " +
                                    std::to_string(devices) + " CUDA device(s) exist");
    return d.has_index() ? d : torch::Device(torch::kCUDA, 0);
}

torch::ScalarType dtypeOf(memory::Precision p) {
    switch (p) {
    case memory::Precision::FP16: return torch::kHalf;
    case memory::Precision::BF16: return torch::kBFloat16;
    case memory::Precision::FP32: return torch::kFloat32;
    }
    return torch::kFloat32;
}

const char* dtypeName(torch::ScalarType t) {
    return t == torch::kHalf ? "fp16" : t == torch::kBFloat16 ? "bf16" : "fp32";
}

nn::AttentionOptions attentionOptionsFor(const memory::MemoryPlan& plan) {
    switch (plan.attention) {
    case memory::Attention::Sdpa: return {nn::AttentionBackend::Sdpa};
    case memory::Attention::SdpaMath: return {nn::AttentionBackend::SdpaMath};
    case memory::Attention::Sliced: return {nn::AttentionBackend::Sliced, plan.attentionSliceSize};
    case memory::Attention::Chunked: return {nn::AttentionBackend::Chunked, 0, plan.queryChunkSize};
    }
    return {};
}

std::string attentionLabel(const nn::AttentionOptions& a) {
    switch (a.backend) {
    case nn::AttentionBackend::Sdpa: return "sdpa";
    case nn::AttentionBackend::SdpaMath: return "sdpa-math";
    case nn::AttentionBackend::Classic: return "classic";
    case nn::AttentionBackend::Sliced: return a.sliceSize > 0 ? "sliced (" + std::to_string(a.sliceSize) + ")" : "sliced (auto)";
    case nn::AttentionBackend::Chunked: return "chunked (" + std::to_string(a.queryChunkSize) + " queries)";
    }
    return "?";
}

// A1111 hashes checkpoint files; a diffusers folder has no single file to hash.
std::string modelHashOf(const std::string& source) {
    std::error_code ec;
    return std::filesystem::is_regular_file(source, ec) ? io::hashModelFile(source).shortHash : std::string();
}

// Where a plan keeps the networks between uses. Offload keeps them at home on the CPU and moves them to the
// compute device per stage; it only means something when that device is not the CPU (tests ask for it there,
// with the compute side labelled "compute" in the ledger). A balanced placement puts each network on its own
// device and never offloads.
struct OffloadSetup {
    torch::Device device;  // where the UNet runs and the latents live
    bool offload;
    std::string computeLabel;
    torch::Device home;
    Placement placement;
    std::string key;  // Residency::key once the offloads are attached
};

OffloadSetup offloadSetupFor(const memory::MemoryPlan& plan, const std::string& model, const EngineTestHooks& hooks) {
    const Placement dtypes{.device = torch::kCPU, .unet = dtypeOf(plan.unet), .textEncoder = dtypeOf(plan.textEncoder),
                           .vae = dtypeOf(plan.vae), .vaeUpcast = plan.vaeUpcast, .channelsLast = plan.channelsLast};
    if (plan.device == "balanced") {
        const Placement p = balancedPlacement(model, plan, dtypes, hooks.balancedStandIns);
        return {p.device, false, p.labelOf("unet", p.device.str()), p.device, p,
                offloadKey(plan, false) + "/balanced " + placementSummary(p)};
    }
    const torch::Device device = resolveDevice(plan.device);
    const bool offload = (device.is_cuda() || hooks.offloadOnCpu) && plan.offload != memory::Offload::None;
    const std::string label = device.is_cpu() && hooks.offloadOnCpu ? "compute" : device.str();
    const torch::Device home = offload ? torch::Device(torch::kCPU) : device;
    Placement placement = dtypes;
    placement.device = home;
    return {device, offload, label, home, placement, offloadKey(plan, offload) + "/" + label};
}

bool allFinite(const torch::Tensor& t) { return torch::isfinite(t).all().item<bool>(); }

// The ControlNets that steer a stretch of steps and how many steps their guidance fractions count over.
struct BaseControl {
    ControlStack* stack = nullptr;
    int64_t steps = 0;
};

// The ControlNets beside the base UNet, each once (one may be named twice): they move with the base.
std::vector<torch::nn::Module*> controlNetsOf(const ControlStack& controls) {
    std::vector<torch::nn::Module*> nets;
    for (const auto& c : controls.active())
        if (std::find(nets.begin(), nets.end(), c.net.get()) == nets.end()) nets.push_back(c.net.ptr().get());
    return nets;
}

// A run restarted with a lower preset after running out of memory (the networks must be placed again).
struct RestartWith {
    settings::GenerationSettings settings;
    std::vector<std::string> warnings;
};

} // namespace

struct Engine::Loaded {
    std::unique_ptr<SdModel> model;
    // The SDXL refiner of the last run that had one. Its networks' offloads live in `residency`, declared after it
    // so they are destroyed first (an offload gives its network the stored weights back).
    RefinerSlot refiner;
    Placement requested;     // what the plan asked for (model->placement: what was used)
    std::string hash;        // cached per loaded model: hashing a checkpoint reads the whole file
    ConditioningCache conditioning;
    LoraStack loras;         // what LoRAs the networks carry now
    ControlStack controls;   // the ControlNets of the last run, kept for the next
    Residency residency;
};

Engine::Engine(Log log) : m_loaded(std::make_unique<Loaded>()), m_previewer(std::make_unique<Previewer>()), m_log(std::move(log)) {}
Engine::~Engine() = default;

GenerationResult Engine::generate(const settings::GenerationSettings& s, const CancelToken& cancel, Observer* observer,
                                  const Image* initImage, const std::vector<Image>& controlImages) {
    m_stageAttempts.clear();
    m_recoveries.clear();
    settings::GenerationSettings current = s;
    std::vector<std::string> carried;  // warnings of runs restarted with a lower preset
    for (;;) {
        try {
            auto r = run(current, cancel, observer, initImage, controlImages);
            r.warnings.insert(r.warnings.begin(), carried.begin(), carried.end());
            return r;
        } catch (RestartWith& restart) {
            current = std::move(restart.settings);
            carried.insert(carried.end(), restart.warnings.begin(), restart.warnings.end());
        } catch (const c10::Error& e) {
            // torch's own message without its C++ backtrace: what a person can act on.
            throw std::runtime_error(e.what_without_backtrace());
        }
    }
}

const memory::ResidencyLedger& Engine::ledger() const { return m_loaded->residency.ledger; }

void Engine::releaseModel() {
    if (!m_loaded->model) return;
    m_loaded->refiner.release(m_loaded->residency);
    m_loaded->refiner.baseAway = false;
    m_loaded->residency.clear();  // the offloads first: they hold the networks' weights
    m_loaded->loras.clear();      // then the LoRAs' originals back, while the networks still exist
    m_loaded->controls.clear();
    m_loaded->conditioning.clear();
    m_loaded->model.reset();
    m_loaded->hash.clear();
    memory::releaseFreedMemory();
}

int64_t Engine::textEncoderRuns() const { return m_textEncoderRuns; }

void Engine::setLoraFolders(std::vector<std::string> folders) { m_loraFolders = std::move(folders); }

int64_t Engine::loraBytes() const { return m_loaded->loras.extraBytes(); }

int64_t Engine::controlNetParameters() const { return m_loaded->controls.parameterCount(); }

LoadReport Engine::load(const std::string& source, const memory::MemoryPlan& plan, const CancelToken& cancel,
                        const LoadProgress& progress, const std::string& knownHash) {
    try {
        memory::validate(plan);
        c10::InferenceMode inference;
        const auto t0 = Clock::now();
        const std::string wanted = source.empty() ? kDemoModel : source;
        const OffloadSetup setup = offloadSetupFor(plan, wanted, m_hooks);
        const torch::Device device = setup.device;
        const Placement& want = setup.placement;
        auto step = [&](const std::string& part, int done, int total) {
            if (cancel.cancelled()) throw Cancelled();
            if (progress) progress(part, done, total);
        };
        LoadReport report;
        report.source = wanted;
        report.alreadyLoaded = m_loaded->model && m_loaded->model->source == wanted && m_loaded->requested == want &&
                               m_loaded->residency.key == setup.key;
        if (!report.alreadyLoaded) {
            auto model = wanted == kDemoModel ? makeDemoModel(want) : loadSdModel(wanted, want, step);
            std::string hash = knownHash;
            if (hash.empty() && std::filesystem::is_regular_file(wanted)) {  // only single files have an A1111 hash
                step("hash", 0, 0);
                hash = modelHashOf(wanted);
            }
            if (cancel.cancelled()) throw Cancelled();
            releaseModel();  // only now: a cancelled or failed load left the previous model in place
            m_loaded->model = std::move(model);
            m_loaded->requested = want;
            m_loaded->hash = hash;
            attachOffloads(m_loaded->residency, *m_loaded->model, plan, device, setup.offload, setup.computeLabel);
            m_loaded->residency.key = setup.key;
            memory::releaseFreedMemory();
            if (m_log) m_log("loaded " + m_loaded->model->displayName + " (" + std::string(io::familyName(m_loaded->model->family)) + ")");
        }
        if (progress) progress("ready", 1, 1);
        report.displayName = m_loaded->model->displayName;
        report.family = std::string(io::familyName(m_loaded->model->family));
        report.hash = m_loaded->hash;
        report.seconds = secondsSince(t0);
        return report;
    } catch (const c10::Error& e) {
        throw std::runtime_error(e.what_without_backtrace());
    }
}

std::string Engine::loadedModel() const { return m_loaded->model ? m_loaded->model->source : std::string(); }

void Engine::setPreviewDecoder(const std::string& taesdPath) {
    try {
        m_previewer->useTaesd(taesdPath, m_loaded->model ? m_loaded->model->placement.device : torch::Device(torch::kCPU));
    } catch (const c10::Error& e) {
        throw io::ModelFileError(taesdPath, e.what_without_backtrace());
    }
}

std::string Engine::previewDecoder() const { return m_previewer->taesdPath(); }
int64_t Engine::previewsBuilt() const { return m_previewer->built(); }

GenerationResult Engine::run(const settings::GenerationSettings& s, const CancelToken& cancel, Observer* observer,
                             const Image* initImage, const std::vector<Image>& controlImages) {
    settings::validate(s);
    memory::validate(s.plan);
    if (!s.initImage.empty() && !initImage) throw std::invalid_argument("img2img needs the init image's pixels");
    c10::InferenceMode inference;
    memory::MemoryPlan plan = s.plan;  // out-of-memory recovery may make it more frugal
    const std::string wanted = s.model.empty() ? kDemoModel : s.model;
    // Offload only means something when the compute device is not the CPU (tests ask for it there, with the
    // compute side labelled "compute" in the ledger).
    const OffloadSetup setup = offloadSetupFor(plan, wanted, m_hooks);
    const torch::Device device = setup.device;
    const memory::DeterminismGuard determinism(s.deterministic, plan.threads);
    memory::LoadAwareThreads loadAwareThreads(!s.deterministic && plan.threads <= 0);
    const nn::WinogradConvScope winograd(s.plan.winogradConv);
    const StageMeter meter(device.is_cuda() ? int(device.index()) : -1, observer);
    GenerationResult result;
    result.settings = s;

    const bool offload = setup.offload;
    const std::string& computeLabel = setup.computeLabel;
    const torch::Device home = setup.home;
    Residency& res = m_loaded->residency;
    res.ledger.resetPeaks();

    // Determinism mode takes SDPA's math kernel: the same reduction order on every run and machine.
    nn::AttentionOptions attention = attentionOptionsFor(plan);
    if (s.deterministic) attention = {nn::AttentionBackend::SdpaMath};

    // Out-of-memory recovery: a stage that runs out of memory is retried with the next more frugal setting
    // (core/memory/oom_retry); a preset switch restarts the run, since the networks must be placed again.
    memory::FrugalState frugal{plan, s.preset, false};
    memory::RetryContext retry;  // the model's part is filled in once it is loaded
    retry.computeIsCpu = device.is_cpu();
    retry.batch = s.batchSize;
    retry.presets = m_hooks.presets ? m_hooks.presets : &memory::shippedPresets();
    auto attempt = [&](memory::Stage stage, auto&& body, auto&& applyPlan) {
        const std::string name = memory::stageName(stage);
        for (;;) {
            std::string error;
            try {
                if (m_hooks.beforeStageAttempt) m_hooks.beforeStageAttempt(name, m_stageAttempts[name]++);
                return body();
            } catch (const c10::OutOfMemoryError& e) {
                error = e.what_without_backtrace();
            } catch (const std::bad_alloc&) {
                error = "a host memory allocation failed";
            }
            memory::releaseFreedMemory();  // what the failed attempt held is gone with its stack
            const auto next = memory::nextFallback(stage, frugal, retry);
            if (!next) {
                if (!m_loaded->model) throw std::runtime_error("out of memory while loading the model and no lower preset is left to try (" + error.substr(0, error.find('\n')) + ")");
                throw std::runtime_error(outOfMemoryMessage(stage, error, m_recoveries, *m_loaded->model, s, plan, device));
            }
            m_recoveries.push_back(next->change);
            result.warnings.push_back("out of memory in " + name + ": retried with " + next->change);
            if (next->presetSwitch) {
                auto restarted = s;
                restarted.plan = next->state.plan;
                restarted.preset = next->state.preset;
                throw RestartWith{restarted, result.warnings};
            }
            frugal = next->state;
            plan = frugal.plan;
            applyPlan();
        }
    };
    auto nothingToApply = [] {};

    meter.begin();
    auto t0 = Clock::now();
    const Placement& want = setup.placement;
    const std::string& placementKey = setup.key;
    if (!m_loaded->model || m_loaded->model->source != wanted || !(m_loaded->requested == want) || res.key != placementKey) {
        const bool sameFile = m_loaded->model && m_loaded->model->source == wanted;
        std::string hash = sameFile ? m_loaded->hash : std::string();
        releaseModel();  // free the old model (host and device) before loading the next
        attempt(memory::Stage::Load, [&] { m_loaded->model = wanted == kDemoModel ? makeDemoModel(want) : loadSdModel(wanted, want); },
                nothingToApply);
        m_loaded->requested = want;
        m_loaded->hash = sameFile || m_loaded->model->isDemo ? hash : modelHashOf(wanted);
        attachOffloads(res, *m_loaded->model, plan, device, offload, computeLabel);
        res.key = placementKey;
        // What the load and the offload setup freed (converted weights' temporaries, the originals of fp8 copies):
        // give that heap back.
        memory::releaseFreedMemory();
        if (m_log) m_log("loaded " + m_loaded->model->displayName + " (" + std::string(io::familyName(m_loaded->model->family)) + ")");
    }
    SdModel& m = *m_loaded->model;
    const Placement& placed = m.placement;
    // The refiner (core/pipeline/refiner): kept between runs that ask for it, released by one that does not.
    const bool refine = s.refiner.enabled();
    RefinerSlot& refinerSlot = m_loaded->refiner;
    refinerSlot.useBase(res, m, controlNetsOf(m_loaded->controls), device, computeLabel);  // the last run's ControlNets
    if (refine) {
        attempt(memory::Stage::Load, [&] { refinerSlot.load(s.refiner.model, want, res, plan, device, offload, computeLabel); },
                nothingToApply);
        checkRefinerFits(m, *refinerSlot.model);
        refinerSlot.model->unet->setAttention(attention);
        refinerSlot.model->vae->setAttention(attention);
        result.settings.refiner.hash = refinerSlot.hash;
    } else {
        refinerSlot.release(res);
    }
    m.unet->setAttention(attention);
    m.vae->setAttention(attention);
    // LoRAs (core/pipeline/lora_stack): applied or swapped here, after a load (here or in Engine::load) and
    // between runs, the model itself stays loaded. Merging writes the weights, so the networks' offloads are
    // detached around it (their parameters get the stored copies back) and attached again from the edited
    // weights: the stored copies at home carry the LoRA, and unmerging restores them bit for bit.
    const auto withOffloadsDetached = [&](const std::function<void()>& edit) {
        editWithOffloadsDetached(res, m, plan, device, offload, computeLabel, edit);
    };
    result.settings.loras = m_loaded->loras.apply(m, s, m_loraFolders, result.warnings, withOffloadsDetached);
    // ControlNets (core/pipeline/control_stack): beside the UNet, in its precision, under the same offload.
    auto& controls = m_loaded->controls;
    result.settings.controlnets = controls.prepare(m, s, controlImages, home, device, placed.unet, placed.channelsLast,
                                                   s.cfgScale > 1.0, [&](const torch::nn::Module* net) {
                                                       res.offloads.erase(net);
                                                       res.ledger.remove(net);
                                                   });
    for (const auto& c : controls.active())
        attachExtraNetwork(res, *c.net.ptr(), plan, device, offload, computeLabel, placed.unet, placed.channelsLast);
    controls.setAttention(attention);
    result.modelName = m.displayName;
    result.modelHash = m_loaded->hash;
    result.timings.loadSeconds = secondsSince(t0);
    result.memory.load = meter.end("load");

    auto& env = result.environment;
    env.appVersion = DD_VERSION;
    env.torchVersion = torchVersion();
    env.device = device.is_cuda() ? memory::sampleMemory(int(device.index())).deviceName : "CPU";
    if (env.device.empty() || env.device == "CPU") env.device = device.is_cuda() ? device.str() : "CPU";
    if (plan.device == "balanced") env.device = "balanced: " + placementSummary(placed) + " (" + env.device + ")";
    env.attention = attentionLabel(attention);
    env.offload = offload ? memory::offloadName(plan.offload) : "none";
    if (offload && plan.offloadToDisk) env.offload += " (stored on disk)";
    if (!plan.fp8Storage.empty()) env.offload += ", unet fp8-" + plan.fp8Storage + " storage";
    env.deterministic = s.deterministic;
    auto precisionText = [&] {
        std::string vae = dtypeName(placed.vae);
        if (placed.vae != want.vae) vae += " (force_upcast)";
        return std::string("unet=") + dtypeName(placed.unet) + " text_encoder=" + dtypeName(placed.textEncoder) + " vae=" + vae;
    };

    const nlohmann::json schedulerOverrides = settings::schedulerOverrides(s);
    auto scheduler = sched::makeScheduler(s.sampler, m.schedulerConfig, schedulerOverrides);
    const int64_t batch = s.batchSize, f = m.vaeScaleFactor();
    if (s.width % f || s.height % f)
        throw std::invalid_argument("size must be a multiple of " + std::to_string(f) + " for this model");
    const bool cfg = s.cfgScale > 1.0;
    retry.vaeSampleSize = int(m.vae->config().sampleSize);
    retry.minTileSize = int(16 * f);
    retry.maxHeads = int(*std::max_element(m.unet->config().heads.begin(), m.unet->config().heads.end()));


    // A network's weights that are zero-copy file views on the CPU go back to the page cache when its stage is
    // done (nn::releaseMappedWeights): the process holds only the running stage's weights (a no-op for others).
    const auto doneWith = [](std::initializer_list<torch::nn::Module*> nets) {
        for (auto* net : nets)
            if (net) nn::releaseMappedWeights(*net);
    };

    // --- text encode (or the cache) ---
    meter.begin();
    t0 = Clock::now();
    // A1111 cuts <lora:…> tags out of the text before encoding it.
    settings::GenerationSettings textSettings = s;
    textSettings.prompt = text::extractExtraNetworks(s.prompt).prompt;
    textSettings.negativePrompt = text::extractExtraNetworks(s.negativePrompt).prompt;
    ConditioningKey key{wanted + "\n" + m_loaded->loras.signature(), textSettings.prompt,
                        cfg ? std::optional<std::string>(textSettings.negativePrompt) : std::nullopt, s.clipSkip,
                        s.promptSyntax, s.emphasis, int(placed.textEncoder)};
    const text::CfgConditioning* prompts = m_loaded->conditioning.find(key);
    result.textEncodeCached = prompts != nullptr;
    if (!prompts) {
        auto encodeOn = [&] {
            // Offload: the encoders visit the compute device only on a cache miss.
            const memory::NetworkUse use1(m.textEncoder ? res.of(m.textEncoder.get()) : nullptr),
                use2(m.textEncoder2 ? res.of(m.textEncoder2.get()) : nullptr);
            ++m_textEncoderRuns;
            auto c = encodeText(m, textSettings, cfg);
            doneWith({m.textEncoder ? m.textEncoder.get() : nullptr, m.textEncoder2 ? m.textEncoder2.get() : nullptr});
            for (auto* side : {&c.negative, &c.positive})
                for (auto* t : {&side->embeds, &side->pooled})
                    if (t->defined()) *t = t->to(device);
            return c;
        };
        auto c = attempt(memory::Stage::Encode, encodeOn, nothingToApply);
        const auto finite = [](const text::CfgConditioning& c) {
            return allFinite(c.positive.embeds) && (!c.negative.embeds.defined() || allFinite(c.negative.embeds));
        };
        if (placed.textEncoder != torch::kFloat32 && !finite(c)) {
            result.warnings.push_back(std::string("the text encoder produced NaN/Inf in ") + dtypeName(placed.textEncoder) +
                                      ": the prompt was encoded again in fp32");
            for (auto* te : {&m.textEncoder, &m.textEncoder2})
                if (*te) computeIn(res, **te, torch::kFloat32, false);
            c = encodeOn();
            for (auto* te : {&m.textEncoder, &m.textEncoder2})
                if (*te) computeIn(res, **te, placed.textEncoder, false);
        }
        m_loaded->conditioning.insert(key, std::move(c));
        prompts = m_loaded->conditioning.find(key);
    }
    result.timings.encodeSeconds = secondsSince(t0);
    result.memory.encode = meter.end("encode");

    // --- denoise ---
    meter.begin();
    const auto latentShape = std::vector<int64_t>{batch, m.unet->config().inChannels, s.height / f, s.width / f};
    // Inputs go where the network is: the UNet's device, or the VAE's (`on`) under a balanced placement.
    auto toNet = [&](const torch::Tensor& t, torch::ScalarType dtype, std::optional<torch::Device> on = std::nullopt) {
        auto x = t.to(on.value_or(device), dtype);
        return placed.channelsLast ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
    };
    // Steps [from, to) of `sch` with `net`'s UNet; the observer numbers them after `done` steps of `all`.
    // `control` steers them with its ControlNets, step i as step i - from of control.steps.
    auto runSteps = [&](SdModel& net, const Conditioning& cond, sched::Scheduler& sch, torch::Tensor latents, int64_t from,
                        int64_t to, torch::ScalarType unetDtype, sched::NoiseSource& noise, int done, int all,
                        const BaseControl& control) {
        const memory::NetworkUse onDevice(res.of(net.unet.get()));
        std::vector<std::unique_ptr<memory::NetworkUse>> controlsOnDevice;
        if (control.stack)
            for (auto* c : controlNetsOf(*control.stack)) controlsOnDevice.push_back(std::make_unique<memory::NetworkUse>(res.of(c)));
        const auto& timesteps = sch.timesteps();
        for (int64_t i = from; i < to; ++i) {
            if (cancel.cancelled()) throw Cancelled();
            const auto tStep = Clock::now();
            const auto input = sch.scaleModelInput(cfg ? torch::cat({latents, latents}) : latents, i);
            const auto x = toNet(input, unetDtype);
            std::optional<nn::ControlResiduals> residuals;
            if (control.stack)
                residuals = control.stack->residuals(i - from, control.steps, x, timesteps[i], cond.embeds, cond.added, unetDtype);
            auto pred = net.unet->forward(x, timesteps[i], cond.embeds, cond.added, {}, residuals ? &*residuals : nullptr)
                            .to(torch::kFloat32)
                            .contiguous();
            if (cfg) {
                const auto halves = pred.chunk(2);
                const auto text = halves[1];
                pred = halves[0] + s.cfgScale * (text - halves[0]);
                if (s.guidanceRescale > 0) pred = rescaleNoiseCfg(pred, text, s.guidanceRescale);
            }
            latents = sch.step(pred, i, latents, noise);
            result.timings.stepSeconds.push_back(secondsSince(tStep));
            meter.sample("denoise");
            if (observer) {
                const int step = done + int(i - from + 1);
                observer->onLatents(step, latents);
                const bool preview = observer->wantsPreview(step, all);
                observer->onStep(step, all, preview ? m_previewer->make(latents[0], net.family) : Image{});
            }
        }
        return latents;
    };
    // The refiner's own text encoder (text_encoder_2 alone) encodes the same prompts, cached like the base's.
    auto refinerConditioning = [&](SdModel& r, torch::ScalarType unetDtype) {
        ConditioningKey refinerKey = key;
        refinerKey.model = r.source;
        refinerKey.dtype = int(r.placement.textEncoder);
        const text::CfgConditioning* c = m_loaded->conditioning.find(refinerKey);
        if (!c) {
            const memory::NetworkUse use(res.of(r.textEncoder2.get()));
            ++m_textEncoderRuns;
            auto encoded = encodeText(r, textSettings, cfg);
            doneWith({r.textEncoder2.get()});
            for (auto* side : {&encoded.negative, &encoded.positive})
                for (auto* t : {&side->embeds, &side->pooled})
                    if (t->defined()) *t = t->to(device);
            m_loaded->conditioning.insert(refinerKey, std::move(encoded));
            c = m_loaded->conditioning.find(refinerKey);
        }
        return batchConditioning(*c, r, s, cfg, batch, unetDtype, device);
    };
    // From the seed to the last step's latents; a retry in fp32 starts again from fresh generators, so it
    // gives exactly what an fp32 run gives.
    auto denoise = [&](torch::ScalarType unetDtype) {
        if (refine) refinerSlot.useBase(res, m, controlNetsOf(controls), device, computeLabel);
        const Conditioning cond = batchConditioning(*prompts, m, s, cfg, batch, unetDtype, device);
        // Image i draws from its own CPU generator seeded seed + i, so any image of a batch can be remade alone.
        std::vector<at::Generator> gens;
        for (int64_t i = 0; i < batch; ++i) gens.push_back(at::make_generator<at::CPUGeneratorImpl>(uint64_t(s.seed + i)));
        sched::NoiseSource noise(gens);
        scheduler = sched::makeScheduler(s.sampler, m.schedulerConfig, schedulerOverrides);
        scheduler->setTimesteps(s.steps, device);
        int64_t begin = 0;
        torch::Tensor latents;
        if (initImage) {
            const memory::NetworkUse onDevice(res.of(m.vae.get()));
            const auto x = toNet(imageToTensor(*initImage, s.width, s.height, device), placed.vae, placed.computeDeviceOf("vae", device));
            const auto dist = m.vae->encode(x, {plan.vaeSlicing, plan.vaeTiling, plan.vaeTileSize});
            doneWith({m.vae.get()});
            // Sampled in fp32 so the noise drawn is the same whatever the VAE's precision.
            const nn::LatentDist dist32{dist.mean.to(torch::kFloat32), dist.logvar.to(torch::kFloat32)};
            std::vector<torch::Tensor> encoded;
            for (int64_t i = 0; i < batch; ++i) encoded.push_back(dist32.sample(gens[size_t(i)]));
            const auto x0 = torch::cat(encoded).to(device) * m.vae->config().scalingFactor;
            const auto schedule = scheduler->img2imgTimesteps(s.strength);
            begin = schedule.beginIndex;
            if (schedule.numSteps < 1) throw std::invalid_argument("img2img strength is too low: no denoising step remains");
            latents = scheduler->addNoise(x0, noise.randn(latentShape, torch::kFloat32, device), begin);
        } else {
            latents = noise.randn(latentShape, torch::kFloat32, device) * scheduler->initNoiseSigma();
        }
        result.timings.stepSeconds.clear();
        loadAwareThreads.beforeSteps(double(parameterCount(*m.unet)) * double(latentShape[2] * latentShape[3]) *
                                     double(latentShape[0]) * (cfg ? 2.0 : 1.0));
        const int64_t total = scheduler->timesteps().size(0);
        // ControlNet guidance fractions count over the base's whole schedule even when the refiner takes over at
        // the switch (diffusers computes controlnet_keep before cutting the timesteps at denoising_end).
        const BaseControl control{&controls, total - begin};
        if (!refine)
            return runSteps(m, cond, *scheduler, latents, begin, total, unetDtype, noise, 0, int(total - begin), control);
        // The refiner continues the same schedule from the switch, on the base's latents without new noise and
        // with the same generators (diffusers: denoising_end on the base, denoising_start on the refiner). It is
        // another UNet: the ControlNets steer the base's steps only.
        SdModel& r = *refinerSlot.model;
        auto refinerScheduler = sched::makeScheduler(s.sampler, r.schedulerConfig, schedulerOverrides);
        refinerScheduler->setTimesteps(s.steps, device);
        const double at = s.refiner.switchAt;
        const int64_t baseEnd = std::max(begin, baseEndIndex(*scheduler, numTrainTimesteps(m.schedulerConfig), at));
        const int64_t refinerBegin = refinerBeginIndex(*refinerScheduler, numTrainTimesteps(r.schedulerConfig), at);
        const int64_t refinerEnd = refinerScheduler->timesteps().size(0);
        const int baseSteps = int(baseEnd - begin), all = baseSteps + int(refinerEnd - refinerBegin);
        latents = runSteps(m, cond, *scheduler, latents, begin, baseEnd, unetDtype, noise, 0, all, control);
        refinerSlot.useRefiner(res, m, controlNetsOf(controls), device, computeLabel);
        const auto refinerDtype = unetDtype == torch::kFloat32 ? torch::kFloat32 : r.placement.unet;
        return runSteps(r, refinerConditioning(r, refinerDtype), *refinerScheduler, latents, refinerBegin, refinerEnd,
                        refinerDtype, noise, baseSteps, all, BaseControl{});
    };
    auto latents = attempt(memory::Stage::Denoise, [&] { return denoise(placed.unet); }, [&] {
        attention = attentionOptionsFor(plan);
        m.unet->setAttention(attention);
        m.vae->setAttention(attention);
        controls.setAttention(attention);
        if (refine) {  // the retry reruns the refiner's steps too
            refinerSlot.model->unet->setAttention(attention);
            refinerSlot.model->vae->setAttention(attention);
        }
        env.attention = attentionLabel(attention);
    });
    if (placed.unet != torch::kFloat32 && !allFinite(latents)) {
        result.warnings.push_back(std::string("the UNet produced NaN/Inf in ") + dtypeName(placed.unet) +
                                  ": the denoising was run again in fp32");
        // Where each UNet is now: a swapped refiner run leaves the base at home on the CPU.
        std::vector<SdModel*> denoisers{&m};
        if (refine) denoisers.push_back(refinerSlot.model.get());
        auto computeAll = [&](auto dtypeFor) {
            for (SdModel* d : denoisers)
                computeIn(res, *d->unet, dtypeFor(*d), d->placement.channelsLast);
        };
        computeAll([](const SdModel&) { return torch::kFloat32; });
        latents = denoise(torch::kFloat32);
        computeAll([](const SdModel& d) { return d.placement.unet; });
    }
    doneWith({m.unet.get(), refine ? refinerSlot.model->unet.get() : nullptr});
    for (auto* c : controlNetsOf(controls)) doneWith({c});
    result.memory.denoise = meter.end("denoise");

    // --- decode ---
    meter.begin();
    t0 = Clock::now();
    // The refiner's own VAE decodes a refined run, as the refiner pipeline does.
    SdModel& dm = refine ? *refinerSlot.model : m;
    auto decode = [&](torch::ScalarType dtype) {
        // Determinism mode decodes one image at a time whatever the plan says: CPU convolution kernels are
        // chosen per batch size, so a batched decode can differ from a sliced one in the last bit.
        const nn::VaeRunOptions run{plan.vaeSlicing || s.deterministic, plan.vaeTiling, plan.vaeTileSize};
        if (!frugal.vaeOnCpu) {
            const memory::NetworkUse onDevice(res.of(dm.vae.get()));
            return dm.vae->decodeLatents(toNet(latents, dtype, dm.placement.computeDeviceOf("vae", device)), run);
        }
        // The last resort: the VAE in fp32 on the CPU for this decode, then back where it lives.
        res.offloads.erase(dm.vae.get());  // gives the leaves their stored copies back
        res.ledger.remove(dm.vae.get());
        placeNetwork(*dm.vae, torch::kCPU, torch::kFloat32, false);
        auto rgb = dm.vae->decodeLatents(latents.to(torch::kCPU, torch::kFloat32), run);
        placeNetwork(*dm.vae, dm.placement.deviceOf("vae"), dm.placement.vae, placed.channelsLast);  // its home
        attachOffloads(res, dm, plan, device, offload, computeLabel, dm.vae.get());
        return rgb;
    };
    const memory::ReturnFreedMemoryAtOnce growingSizes;  // see release_memory.h
    auto rgb = attempt(memory::Stage::Decode, [&] { return decode(dm.placement.vae); }, nothingToApply);
    if (dm.placement.vae != torch::kFloat32 && !allFinite(rgb)) {
        result.warnings.push_back(std::string("the VAE produced NaN/Inf in ") + dtypeName(dm.placement.vae) +
                                  ": the image was decoded again in fp32 (an fp16-safe VAE or vae precision fp32 avoids this)");
        computeIn(res, *dm.vae, torch::kFloat32, placed.channelsLast);
        rgb = decode(torch::kFloat32);
        computeIn(res, *dm.vae, dm.placement.vae, placed.channelsLast);
    }
    doneWith({dm.vae.get()});
    result.images = toImages(rgb);
    result.timings.decodeSeconds = secondsSince(t0);
    result.memory.decode = meter.end("decode");
    env.precision = precisionText();
    env.threads = determinism.threads();  // after the steps, which may have followed the load
    result.settings.plan = plan;  // what made the images, after any out-of-memory fallback
    return result;
}

} // namespace dd::pipeline
