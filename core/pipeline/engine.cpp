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
#include "core/nn/cpu_kernels.h"
#include "core/nn/load_weights.h"
#include "core/pipeline/balanced_placement.h"
#include "core/pipeline/conditioning_cache.h"
#include "core/pipeline/control_stack.h"
#include "core/pipeline/device.h"
#include "core/pipeline/engine_test_hooks.h"
#include "core/pipeline/hires.h"
#include "core/pipeline/inpaint.h"
#include "core/pipeline/lora_stack.h"
#include "core/pipeline/masked_area.h"
#include "core/pipeline/masked_fill.h"
#include "core/pipeline/memory_prediction.h"
#include "core/pipeline/model_search.h"
#include "core/pipeline/oom_ladder.h"
#include "core/pipeline/preview.h"
#include "core/pipeline/previewer.h"
#include "core/pipeline/refiner.h"
#include "core/pipeline/residency.h"
#include "core/pipeline/sd_model.h"
#include "core/pipeline/unet_conditioning.h"
#include "core/pipeline/upscale.h"
#include "core/pipeline/variation_noise.h"
#include "core/sched/scheduler.h"
#include "core/text/embedding_vectors.h"
#include "core/text/prompt_encoder.h"
#include "core/text/prompt_parser.h"
#include "core/text/text_input.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>

namespace dd::pipeline {

// Peak memory per stage: a new peak window at the stage's start, a sample at its end (and once per step). Freed CPU
// memory the allocator still holds (tcmalloc keeps it for reuse) is given back first, so a stage's peak is its own.
// (Outside the anonymous namespace, as OffloadSetup below: Engine::Run holds one.)
class StageMeter {
public:
    StageMeter(int cudaDevice, api::Observer* observer) : m_device(cudaDevice), m_observer(observer) {}
    void begin() const {
        memory::releaseFreedHostMemory();
        memory::resetPeaks(m_device);
    }
    api::MemorySample sample(const char* stage) const {
        auto s = memory::sampleMemory(m_device);
        if (m_observer) m_observer->onMemory(stage, s);
        return s;
    }
    api::StagePeak end(const char* stage) const {
        const auto s = sample(stage);
        return {s.hostPeak, s.devicePeak};
    }

private:
    int m_device;
    api::Observer* m_observer;
};

// Where a plan keeps the networks between uses. Offload keeps them at home on the CPU and moves them to the
// compute device per stage; it only means something when that device is not the CPU (tests ask for it there,
// with the compute side labelled "compute" in the ledger). A balanced placement puts each network on its own
// device and never offloads.
struct OffloadSetup {
    Placing placing;  // the plan, where the UNet runs and the latents live, offload, the ledger's label
    torch::Device home;
    Placement placement;
    std::string key;  // Residency::key once the offloads are attached
};

namespace {

int64_t parameterCount(torch::nn::Module& net) {
    int64_t n = 0;
    for (const auto& p : net.parameters()) n += p.numel();
    return n;
}

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A stretch of steps' text-encoder inputs (one per AND part) and their embeddings (unet_conditioning.h).
struct EncodedStretch {
    TextStretch text;
    std::vector<text::CfgConditioning> conds;
};

// A tokenizer can produce ids a (test-sized) text encoder has no embedding for; say so instead of crashing.
void checkVocabulary(const nn::ClipTextModel& encoder, const text::ClipTokenizer& tok, const char* name) {
    if (encoder && tok.vocabSize() > encoder->config().vocabSize)
        throw std::invalid_argument(std::string(name) + " has " + std::to_string(tok.vocabSize()) +
                                    " tokens but its text encoder only " + std::to_string(encoder->config().vocabSize) +
                                    ": this model cannot encode arbitrary prompts");
}

text::CfgConditioning encodeText(SdModel& m, const text::TextInput& input, text::EmbeddingVectors& embeddings) {
    if (m.tokenizer) checkVocabulary(m.textEncoder ? m.textEncoder : m.textEncoder2, *m.tokenizer, "tokenizer");
    if (m.tokenizer2) checkVocabulary(m.textEncoder2, *m.tokenizer2, "tokenizer_2");
    const text::TextModel textModel{m.textEncoder, m.textEncoder2, m.tokenizer ? &*m.tokenizer : nullptr,
                                    m.tokenizer2 ? &*m.tokenizer2 : nullptr, m.forceZerosForEmptyPrompt, &embeddings};
    return text::encodePrompts(textModel, input);
}

// diffusers rescale_noise_cfg (Lin et al. 2023, "Common Diffusion Noise Schedules and Sample Steps are Flawed").
torch::Tensor rescaleNoiseCfg(const torch::Tensor& cfg, const torch::Tensor& text, double phi) {
    std::vector<int64_t> dims;
    for (int64_t d = 1; d < cfg.dim(); ++d) dims.push_back(d);
    const auto rescaled = cfg * (text.std(dims, /*unbiased=*/true, /*keepdim=*/true) / cfg.std(dims, true, true));
    return phi * rescaled + (1 - phi) * cfg;
}

torch::Tensor imageToTensor(const api::Image& img, int64_t width, int64_t height, torch::Device device) {
    if (img.width != width || img.height != height)
        throw std::invalid_argument("the init image is " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                                    " but the requested size is " + std::to_string(width) + "x" + std::to_string(height) +
                                    ": resize it first");
    auto t = torch::from_blob(const_cast<uint8_t*>(img.rgb.data()), {1, height, width, 3}, torch::kUInt8).clone();
    return (t.permute({0, 3, 1, 2}).to(torch::kFloat32) / 255.0 * 2 - 1).to(device);
}

std::string torchVersion() {
    return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
           std::to_string(TORCH_VERSION_PATCH);
}

torch::ScalarType dtypeOf(api::Precision p) {
    switch (p) {
    case api::Precision::FP16: return torch::kHalf;
    case api::Precision::BF16: return torch::kBFloat16;
    case api::Precision::FP32: return torch::kFloat32;
    }
    return torch::kFloat32;
}

const char* dtypeName(torch::ScalarType t) {
    return t == torch::kHalf ? "fp16" : t == torch::kBFloat16 ? "bf16" : "fp32";
}

nn::AttentionOptions attentionOptionsFor(const api::MemoryPlan& plan) {
    switch (plan.attention) {
    case api::Attention::Sdpa: return {nn::AttentionBackend::Sdpa};
    case api::Attention::SdpaMath: return {nn::AttentionBackend::SdpaMath};
    case api::Attention::Sliced: return {nn::AttentionBackend::Sliced, plan.attentionSliceSize};
    case api::Attention::Chunked: return {nn::AttentionBackend::Chunked, 0, plan.queryChunkSize};
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

OffloadSetup offloadSetupFor(const api::MemoryPlan& plan, const std::string& model, const EngineTestHooks& hooks) {
    const Placement dtypes{.device = torch::kCPU, .unet = dtypeOf(plan.unet), .textEncoder = dtypeOf(plan.textEncoder),
                           .vae = dtypeOf(plan.vae), .vaeUpcast = plan.vaeUpcast, .channelsLast = plan.channelsLast};
    if (plan.device == "balanced") {
        const Placement p = balancedPlacement(model, plan, dtypes, hooks.balancedStandIns);
        return {{plan, p.device, false, p.labelOf("unet", p.device.str())}, p.device, p,
                offloadKey(plan, false) + "/balanced " + placementSummary(p)};
    }
    const torch::Device device = resolveDevice(plan.device);
    const bool offload = (device.is_cuda() || hooks.offloadOnCpu) && plan.offload != api::Offload::None;
    const std::string label = device.is_cpu() && hooks.offloadOnCpu ? "compute" : device.str();
    const torch::Device home = offload ? torch::Device(torch::kCPU) : device;
    Placement placement = dtypes;
    placement.device = home;
    return {{plan, device, offload, label}, home, placement, offloadKey(plan, offload) + "/" + label};
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

// The sampler the settings name (with their schedule type), over a model's scheduler configuration.
std::unique_ptr<sched::Scheduler> schedulerFor(const api::GenerationSettings& s, const nlohmann::json& schedulerConfig) {
    return sched::makeScheduler(s.sampler, s.scheduleType, schedulerConfig, api::schedulerOverrides(s));
}

// Image i of a batch draws from its own stream (CPU or NV: settings.rng) seeded with its seed (seed + i, or the seed
// for all while a variation blends), so any image of a batch can be remade alone. `delta`: A1111's ENSD restart.
std::vector<sched::ImageRng> imageGenerators(const api::GenerationSettings& s, int64_t delta = 0) {
    std::vector<sched::ImageRng> gens;
    for (int64_t i = 0; i < s.batchSize; ++i)
        gens.emplace_back(sched::rngKind(s.rng), uint64_t(api::imageSeeds(s, i).seed + delta));
    return gens;
}

// The sampler's noise: A1111's one stream per image (gens); ComfyUI's one CPU stream of the seed over the whole
// batch (comfy/sample.py prepare_noise), whose later draws come from a stream of seed + 1 (afterStart).
sched::NoiseSource samplerNoise(const api::GenerationSettings& s, const std::vector<sched::ImageRng>& gens) {
    if (s.sampleAs != "ComfyUI") return sched::NoiseSource(gens);
    return sched::NoiseSource(std::vector<sched::ImageRng>{sched::ImageRng(sched::ImageRng::Kind::Cpu, uint64_t(s.seed))});
}

// After the starting noise: A1111's Eta noise seed delta restarts each image's stream at seed + delta; ComfyUI's
// samplers draw from a generator of seed + 1 (k_diffusion/sampling.py default_noise_sampler on the CPU).
void afterStart(const api::GenerationSettings& s, sched::NoiseSource& noise) {
    if (s.sampleAs == "ComfyUI") noise.restart({sched::ImageRng(sched::ImageRng::Kind::Cpu, uint64_t(s.seed) + 1)});
    else if (s.ensd != 0) noise.restart(imageGenerators(s, s.ensd));
}

// A hires fix whose decode at the large size is predicted not to fit the preset's budget (without a shipped preset:
// the compute device's memory) decodes in tiles from the start, rather than after an out-of-memory error.
void tileHiresDecodeIfNeeded(api::GenerationSettings& s, const std::vector<std::string>& loraFolders, std::vector<std::string>& warnings) {
    if (!s.hires.enabled || s.plan.vaeTiling) return;
    int64_t budget = 0;
    for (const auto& p : memory::shippedPresets())
        if (p.name == s.preset) budget = p.budgetBytes;
    if (budget <= 0) {
        const bool cuda = computesOnCuda(s.plan);
        const auto m = memory::sampleMemory(cuda ? 0 : -1);
        budget = cuda ? m.deviceTotal : m.hostTotal;
    }
    try {
        if (!hiresDecodeNeedsTiling(s, budget, {loraFolders})) return;
    } catch (const std::exception&) {
        return;  // an unreadable model: the run itself says so
    }
    s.plan.vaeTiling = true;
    const api::Size to = api::hiresSize(s);
    warnings.push_back("the hires pass decodes at " + std::to_string(to.width) + "x" + std::to_string(to.height) +
                       ", predicted to need more than the " + memory::formatGb(budget) + " budget: VAE tiling was switched on");
}

} // namespace

// The upscaler network used last (a hires fix's or Engine::upscale's), kept for the next.
struct UpscalerSlot {
    std::string path, hash;
    torch::Device device = torch::kCPU;
    std::shared_ptr<nn::UpscalerImpl> net;

    // The network `name` names (a file, or a name in `folders` / DD_UPSCALER_PATH), on `on`: loaded and hashed
    // unless it already is.
    nn::UpscalerImpl& use(const std::string& name, const std::vector<std::string>& folders, torch::Device on) {
        const std::string file = findUpscalerFile(name, folders);
        if (!net || path != file || device != on) {
            *this = {};
            net = nn::loadUpscaler(file, {on}).net;
            path = file;
            device = on;
            hash = io::hashModelFile(file).shortHash;
        }
        return *net;
    }
};

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
    UpscalerSlot upscaler;
    Residency residency;

    // A model just loaded becomes the loaded one, its networks placed as `setup` says (the caller has released
    // the previous model, before the load or after it).
    void install(std::unique_ptr<SdModel> loaded, const OffloadSetup& setup, std::string modelHash, const Log& log) {
        model = std::move(loaded);
        requested = setup.placement;
        hash = std::move(modelHash);
        attachOffloads(residency, *model, setup.placing);
        residency.key = setup.key;
        // What the load and the offload setup freed (converted weights' temporaries, the originals of fp8 copies):
        // give that heap back.
        memory::releaseFreedMemory();
        if (log) log("loaded " + model->displayName + " (" + std::string(io::familyName(model->family)) + ")");
    }
    bool holds(const std::string& source, const OffloadSetup& setup) const {
        return model && model->source == source && requested == setup.placement && residency.key == setup.key;
    }
};

Engine::Engine(Log log)
    : m_loaded(std::make_unique<Loaded>()), m_previewer(std::make_unique<Previewer>()), m_log(std::move(log)),
      m_hooks(std::make_unique<EngineTestHooks>()) {}
Engine::~Engine() = default;

void Engine::setTestHooks(EngineTestHooks hooks) { *m_hooks = std::move(hooks); }

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
void Engine::setUpscalerFolders(std::vector<std::string> folders) { m_upscalerFolders = std::move(folders); }
void Engine::setEmbeddingFolders(std::vector<std::string> folders) { m_embeddingFolders = std::move(folders); }

text::EmbeddingVectors& Engine::embeddings() {
    auto library = text::EmbeddingLibrary::scan(embeddingFolders(m_embeddingFolders, m_loraFolders));
    if (!m_embeddings || m_embeddings->library().signature != library.signature)
        m_embeddings = std::make_unique<text::EmbeddingVectors>(std::move(library));
    return *m_embeddings;
}

UpscaleReport Engine::upscale(const api::Image& image, const std::string& upscaler, const UpscaleOptions& options,
                              const api::CancelToken& cancel, const TileProgress& progress) {
    if (options.tile < -1 || options.overlap < 0) throw std::invalid_argument("an upscale's tile and overlap take 0 or more pixels");
    UpscalerSlot& slot = m_loaded->upscaler;
    nn::UpscalerImpl& net = slot.use(upscaler, m_upscalerFolders, resolveDevice(options.device));
    UpscaleTiling tiling{options.tile, options.overlap};
    if (options.tile < 0) tiling.tile = upscaleTileFor(net.config, upscaleBudgetBytes(slot.device));
    UpscaleReport r;
    r.image = upscaleImage(net, image, tiling, &cancel, progress);
    r.path = slot.path;
    r.name = std::filesystem::path(slot.path).stem().string();
    r.hash = slot.hash;
    r.description = net.config.describe();
    r.scale = net.config.scale;
    r.tile = tiling.tile;
    r.overlap = tiling.overlap;
    return r;
}

int64_t Engine::loraBytes() const { return m_loaded->loras.extraBytes(); }

int64_t Engine::controlNetParameters() const { return m_loaded->controls.parameterCount(); }

LoadReport Engine::load(const std::string& source, const api::MemoryPlan& plan, const api::CancelToken& cancel,
                        const LoadProgress& progress, const std::string& knownHash) {
    try {
        api::validate(plan);
        c10::InferenceMode inference;
        const auto t0 = Clock::now();
        const std::string wanted = source.empty() ? kDemoModel : source;
        const OffloadSetup setup = offloadSetupFor(plan, wanted, *m_hooks);
        const Placement& want = setup.placement;
        auto step = [&](const std::string& part, int done, int total) {
            if (cancel.cancelled()) throw api::Cancelled();
            if (progress) progress(part, done, total);
        };
        LoadReport report;
        report.source = wanted;
        report.alreadyLoaded = m_loaded->holds(wanted, setup);
        if (!report.alreadyLoaded) {
            auto model = wanted == kDemoModel ? makeDemoModel(want) : loadSdModel(wanted, want, step);
            std::string hash = knownHash;
            if (hash.empty() && std::filesystem::is_regular_file(wanted)) {  // only single files have an A1111 hash
                step("hash", 0, 0);
                hash = modelHashOf(wanted);
            }
            if (cancel.cancelled()) throw api::Cancelled();
            releaseModel();  // only now: a cancelled or failed load left the previous model in place
            m_loaded->install(std::move(model), setup, hash, m_log);
        }
        if (progress) progress("ready", 1, 1);
        report.displayName = m_loaded->model->displayName;
        report.family = std::string(io::familyName(m_loaded->model->family));
        report.hash = m_loaded->hash;
        report.seconds = secondsSince(t0);
        return report;
    } catch (const c10::OutOfMemoryError& e) {
        throw api::OutOfMemory(std::string("out of memory while loading: ") + e.what_without_backtrace());
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

// One run of generate, in the order diffusers' __call__ reads: prepare the model, encode the prompts, denoise
// (latents from noise or the init image, then the steps), decode. What it computes lives here for the run alone;
// the engine keeps what outlives it (the model and its caches).
class Engine::Run {
public:
    Run(Engine& engine, const api::GenerationSettings& s, const api::CancelToken& cancel, api::Observer* observer,
        const api::RunImages& images, RetryHistory& history)
        : m_engine(engine), m_loaded(*engine.m_loaded), m_res(m_loaded.residency), s(s), m_cancel(cancel),
          m_observer(observer), m_images(images),
          m_wanted(s.model.empty() ? kDemoModel : s.model), m_setup(offloadSetupFor(s.plan, m_wanted, *engine.m_hooks)),
          m_determinism(s.deterministic, s.plan.threads), m_loadAwareThreads(!s.deterministic && s.plan.threads <= 0),
          m_winograd(s.plan.winogradConv), m_meter(device().is_cuda() ? int(device().index()) : -1, observer),
          m_ladder(s, retryContext(s, device(), *engine.m_hooks), history, m_result.warnings, engine.m_hooks->beforeStageAttempt),
          m_cfg(s.cfgScale > 1.0) {
        m_result.settings = s;
        if (!images.initHash.empty()) m_result.settings.initImageHash = images.initHash;
        if (!images.maskHash.empty()) m_result.settings.inpaint.maskHash = images.maskHash;
        m_result.warnings = images.notes;
        m_res.ledger.resetPeaks();
    }

    api::GenerationResult execute() {
        prepareModel();
        encodePrompts();
        denoise();
        decode();
        return finish();
    }

private:
    static memory::RetryContext retryContext(const api::GenerationSettings& s, torch::Device device, const EngineTestHooks& hooks) {
        memory::RetryContext c;  // the model's part is filled in once it is loaded
        c.computeIsCpu = device.is_cpu();
        c.batch = s.batchSize;
        c.presets = hooks.presets ? hooks.presets : &memory::shippedPresets();
        return c;
    }
    const api::MemoryPlan& plan() const { return m_ladder.plan(); }  // out-of-memory recovery may make it more frugal
    torch::Device device() const { return m_setup.placing.device; }  // where the UNet runs and the latents live
    // The plan as resolved for this machine, with the run's current plan.
    Placing placing() const {
        Placing p = m_setup.placing;
        p.plan = plan();
        return p;
    }
    SdModel& model() { return *m_loaded.model; }
    SdModel& refiner() { return *m_loaded.refiner.model; }

    // 1. The model placed as the plan says (loaded, or kept from the last run), the refiner, the LoRAs, the
    //    ControlNets, and the attention they all compute with.
    void prepareModel() {
        m_meter.begin();
        const auto t0 = Clock::now();
        if (!m_loaded.holds(m_wanted, m_setup)) loadModel();
        SdModel& m = model();
        m_ladder.onExhausted([this](memory::Stage stage, const std::string& error, const std::vector<std::string>& tried) {
            return outOfMemoryMessage(stage, error, tried, model(), s, placing());
        });
        RefinerSlot& slot = m_loaded.refiner;
        slot.useBase(m_res, m, controlNetsOf(m_loaded.controls), placing());  // the last run's ControlNets
        if (s.refiner.enabled()) {
            m_ladder.attempt(memory::Stage::Load, [&] {
                slot.load(s.refiner.model, m_setup.placement, m_res, placing());
            });
            checkRefinerFits(m, refiner());
            m_result.settings.refiner.hash = slot.hash;
        } else {
            slot.release(m_res);
        }
        applyLorasAndControlNets();
        prepareUpscaler();
        // Determinism mode takes SDPA's math kernel: the same reduction order on every run and machine.
        setAttention(s.deterministic ? nn::AttentionOptions{nn::AttentionBackend::SdpaMath} : attentionOptionsFor(plan()));
        checkSizeAndSampler();
        m_result.modelName = m.displayName;
        m_result.modelHash = m_loaded.hash;
        m_result.timings.loadSeconds = secondsSince(t0);
        m_result.memory.load = m_meter.end("load");
        describeEnvironment();
    }

    // A hires fix's upscaler network: found, loaded (or kept from the last run) and hashed before any step.
    void prepareUpscaler() {
        if (!s.hires.enabled || !api::isUpscalerNetwork(s.hires.upscaler)) return;
        UpscalerSlot& slot = m_loaded.upscaler;
        slot.use(s.hires.upscaler, m_engine.m_upscalerFolders, device());
        const std::string& recorded = s.hires.upscalerHash;  // restored settings say which file made the picture
        if (!recorded.empty() && recorded != slot.hash)
            m_result.warnings.push_back("hires upscaler " + slot.path + " has hash " + slot.hash + " but the settings recorded " +
                                        recorded + ": the picture will differ");
        m_result.settings.hires.upscalerHash = slot.hash;
    }

    void loadModel() {
        const bool sameFile = m_loaded.model && m_loaded.model->source == m_wanted;
        std::string hash = sameFile ? m_loaded.hash : std::string();
        m_engine.releaseModel();  // free the old model (host and device) before loading the next
        std::unique_ptr<SdModel> loaded;
        const Placement& want = m_setup.placement;
        m_ladder.attempt(memory::Stage::Load, [&] { loaded = m_wanted == kDemoModel ? makeDemoModel(want) : loadSdModel(m_wanted, want); });
        if (!sameFile && !loaded->isDemo) hash = modelHashOf(m_wanted);
        m_loaded.install(std::move(loaded), m_setup, hash, m_engine.m_log);
    }

    // LoRAs (core/pipeline/lora_stack): applied or swapped here, after a load (here or in Engine::load) and between
    // runs, the model itself stays loaded. Merging writes the weights, so the networks' offloads are detached around
    // it (their parameters get the stored copies back) and attached again from the edited weights: the stored
    // copies at home carry the LoRA, and unmerging restores them bit for bit. ControlNets (core/pipeline/
    // control_stack): beside the UNet, in its precision, under the same offload.
    void applyLorasAndControlNets() {
        SdModel& m = model();
        const auto withOffloadsDetached = [&](const std::function<void()>& edit) {
            editWithOffloadsDetached(m_res, m, placing(), edit);
        };
        m_result.settings.loras = m_loaded.loras.apply(m, s, m_engine.m_loraFolders, m_result.warnings, withOffloadsDetached);
        const Placement& placed = m.placement;
        auto& controls = m_loaded.controls;
        m_result.settings.controlnets = controls.prepare(m, s, m_images.controls, m_setup.home, device(), placed.unet,
                                                         placed.channelsLast, m_cfg, [&](const torch::nn::Module* net) {
                                                             m_res.offloads.erase(net);
                                                             m_res.ledger.remove(net);
                                                         });
        for (const auto& c : controls.active())
            attachExtraNetwork(m_res, *c.net.ptr(), placing(), placed.unet, placed.channelsLast);
    }

    // Every network of the run computes attention one way: set here, again when a retry changes it.
    void setAttention(const nn::AttentionOptions& attention) {
        for (SdModel* net : {&model(), s.refiner.enabled() ? &refiner() : nullptr}) {
            if (!net) continue;
            net->unet->setAttention(attention);
            net->vae->setAttention(attention);
        }
        m_loaded.controls.setAttention(attention);
        m_result.environment.attention = attentionLabel(attention);
    }

    void checkSizeAndSampler() {
        SdModel& m = model();
        schedulerFor(s, m.schedulerConfig);  // an unknown sampler stops here
        const int64_t f = m.vaeScaleFactor();
        if (s.width % f || s.height % f) throw std::invalid_argument("size must be a multiple of " + std::to_string(f) + " for this model");
        auto& c = m_ladder.context();
        c.vaeSampleSize = int(m.vae->config().sampleSize);
        c.minTileSize = int(16 * f);
        c.maxHeads = int(*std::max_element(m.unet->config().heads.begin(), m.unet->config().heads.end()));
    }

    void describeEnvironment() {
        const Placement& placed = model().placement;
        auto& env = m_result.environment;
        env.appVersion = DD_VERSION;
        env.torchVersion = torchVersion();
        env.device = device().is_cuda() ? memory::sampleMemory(int(device().index())).deviceName : "CPU";
        if (env.device.empty() || env.device == "CPU") env.device = device().is_cuda() ? device().str() : "CPU";
        if (plan().device == "balanced") env.device = "balanced: " + placementSummary(placed) + " (" + env.device + ")";
        const bool offload = m_setup.placing.offload;
        env.offload = offload ? api::offloadName(plan().offload) : "none";
        if (offload && plan().offloadToDisk) env.offload += " (stored on disk)";
        if (!plan().fp8Storage.empty()) env.offload += ", unet fp8-" + plan().fp8Storage + " storage";
        env.deterministic = s.deterministic;
    }

    // A network's weights that are zero-copy file views on the CPU go back to the page cache when its stage is done
    // (nn::releaseMappedWeights): the process holds only the running stage's weights (a no-op for others).
    static void doneWith(std::initializer_list<torch::nn::Module*> nets) {
        for (auto* net : nets)
            if (net) nn::releaseMappedWeights(*net);
    }

    // 2. The prompts' embeddings, from the cache when the text encoders' input is the one of an earlier run; one per
    //    stretch of steps when the prompt is edited during sampling (unet_conditioning.h).
    void encodePrompts() {
        m_meter.begin();
        const auto t0 = Clock::now();
        SdModel& m = model();
        m_embeddings = &m_engine.embeddings();
        m_textKey = ConditioningKey{m_wanted + "\n" + m_loaded.loras.signature(), text::textInputOf(s), int(m.placement.textEncoder),
                                    m_embeddings->library().signature};
        m_result.textEncodeCached = true;
        m_prompts = encodeStretches(textSchedule(m_textKey.text, modelCalls(m, s.steps)));
        reportEmbeddings();
        m_result.timings.encodeSeconds = secondsSince(t0);
        m_result.memory.encode = m_meter.end("encode");
    }

    // Model calls in a schedule of `steps` (Heun calls twice a step): what prompt editing counts.
    int modelCalls(const SdModel& m, int steps) const {
        auto scheduler = schedulerFor(s, m.schedulerConfig);
        scheduler->setTimesteps(steps);
        return int(scheduler->timesteps().size(0));
    }

    std::vector<EncodedStretch> encodeStretches(const std::vector<TextStretch>& stretches) {
        std::vector<EncodedStretch> out;
        for (const auto& stretch : stretches) {
            if (!stretch.plain()) checkComposable();
            EncodedStretch e{stretch, {}};
            for (const auto& part : stretch.parts) e.conds.push_back(encoded(part));
            out.push_back(std::move(e));
        }
        return out;
    }

    // The embeddings the prompts used, with A1111's hashes (the sidecar, "TI hashes"). The image's own list (a
    // restored run's) is compared: an embedding missing here, or another file by the same name, changes the picture.
    void reportEmbeddings() {
        std::vector<std::string> used, unfit;
        const auto add = [](std::vector<std::string>& to, const std::vector<std::string>& names) {
            for (const auto& n : names)
                if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
        };
        for (const auto& stretch : m_prompts)
            for (const auto& c : stretch.conds) add(used, c.embeddings), add(unfit, c.unfitEmbeddings);
        const text::EmbeddingLibrary& lib = m_embeddings->library();
        std::vector<api::EmbeddingSetting> list;
        for (const auto& name : used)
            list.push_back({name, m_embeddings->hash(size_t(lib.find(name) - lib.files.data()))});
        auto& warnings = m_result.warnings;
        for (const auto& name : unfit)
            warnings.push_back("embedding '" + name + "' is made for " + lib.find(name)->kind() + ", not this model: its name was read as words");
        std::string prompts = s.prompt + "\n" + s.negativePrompt;
        std::transform(prompts.begin(), prompts.end(), prompts.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        for (const auto& p : lib.problems) {
            std::string name = p.name;
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
            if (!name.empty() && prompts.find(name) != std::string::npos) warnings.push_back("embedding not used: " + p.message);
        }
        for (const auto& asked : s.embeddings) {
            const auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.name == asked.name; });
            if (it == list.end() && !lib.find(asked.name))
                warnings.push_back("the image was made with the embedding '" + asked.name + "'" +
                                   (asked.hash.empty() ? "" : " (" + asked.hash + ")") +
                                   ", which is not in the embeddings folders: its name was read as words");
            else if (it != list.end() && !asked.hash.empty() && asked.hash != it->hash)
                warnings.push_back("the embedding '" + asked.name + "' here (" + it->hash + ") is not the file the image was made with (" +
                                   asked.hash + ")");
        }
        m_result.settings.embeddings = std::move(list);
    }

    // A1111's AND guides with every part against the negative: it needs CFG, and the refiner and the ControlNets,
    // which take one conditioning, are not combined with it.
    void checkComposable() const {
        if (!m_cfg) throw std::invalid_argument("AND (composable prompts) needs a CFG scale above 1");
        if (s.refiner.enabled()) throw std::invalid_argument("AND (composable prompts) with the SDXL refiner is not supported");
        if (!s.controlnets.empty()) throw std::invalid_argument("AND (composable prompts) with ControlNet is not supported");
    }

    // One input through the base's text encoders, or from the cache.
    text::CfgConditioning encoded(const text::TextInput& input) {
        ConditioningKey key = m_textKey;
        key.text = input;
        if (const auto* hit = m_loaded.conditioning.find(key)) return *hit;
        m_result.textEncodeCached = false;
        SdModel& m = model();
        text::CfgConditioning c;
        m_ladder.attempt(memory::Stage::Encode, [&] { c = encodeWith(m, input); });
        const auto finite = [](const text::CfgConditioning& c) {
            return allFinite(c.positive.embeds) && (!c.negative.embeds.defined() || allFinite(c.negative.embeds));
        };
        const auto dtype = m.placement.textEncoder;
        if (dtype != torch::kFloat32 && !finite(c)) {
            m_result.warnings.push_back(std::string("the text encoder produced NaN/Inf in ") + dtypeName(dtype) +
                                        ": the prompt was encoded again in fp32");
            for (auto* te : {&m.textEncoder, &m.textEncoder2})
                if (*te) computeIn(m_res, **te, torch::kFloat32, false);
            c = encodeWith(m, input);
            for (auto* te : {&m.textEncoder, &m.textEncoder2})
                if (*te) computeIn(m_res, **te, dtype, false);
        }
        m_loaded.conditioning.insert(key, c);
        return c;
    }

    // The prompts through `net`'s text encoders (the base's, or the refiner's text_encoder_2 alone); under offload
    // the encoders visit the compute device only here, on a cache miss.
    text::CfgConditioning encodeWith(SdModel& net, const text::TextInput& input) {
        const memory::NetworkUse use1(net.textEncoder ? m_res.of(net.textEncoder.get()) : nullptr),
            use2(net.textEncoder2 ? m_res.of(net.textEncoder2.get()) : nullptr);
        ++m_engine.m_textEncoderRuns;
        auto c = encodeText(net, input, *m_embeddings);
        doneWith({net.textEncoder ? net.textEncoder.get() : nullptr, net.textEncoder2 ? net.textEncoder2.get() : nullptr});
        for (auto* side : {&c.negative, &c.positive})
            for (auto* t : {&side->embeds, &side->pooled})
                if (t->defined()) *t = t->to(device());
        return c;
    }

    // The batch's conditioning for each stretch, in the UNet's dtype (`at` sets SDXL's time ids' size).
    StepConditioning stepConditioning(const std::vector<EncodedStretch>& stretches, const SdModel& m,
                                      const api::GenerationSettings& at, torch::ScalarType unetDtype) {
        StepConditioning out;
        for (const auto& stretch : stretches) {
            out.lastStep.push_back(stretch.text.lastStep);
            if (stretch.text.plain()) {
                out.conds.push_back(batchConditioning(stretch.conds.front(), m, at, m_cfg, s.batchSize, unetDtype, device()));
                continue;
            }
            text::TextInput empty = stretch.text.parts.front();
            empty.prompt.clear(), empty.negative.reset();
            out.conds.push_back(batchConditioning(stretch.conds, stretch.text.weights, encoded(empty).positive.embeds, m, at,
                                                  s.batchSize, unetDtype, device()));
        }
        return out;
    }

    // The refiner's conditioning: the prompts as they end through its own encoder, cached like the base's.
    Conditioning refinerConditioning(torch::ScalarType unetDtype) {
        SdModel& r = refiner();
        ConditioningKey key = m_textKey;
        key.text = m_prompts.back().text.parts.front();
        key.model = r.source;
        key.dtype = int(r.placement.textEncoder);
        const text::CfgConditioning* c = m_loaded.conditioning.find(key);
        if (!c) {
            m_loaded.conditioning.insert(key, encodeWith(r, key.text));
            c = m_loaded.conditioning.find(key);
        }
        return batchConditioning(*c, r, s, m_cfg, s.batchSize, unetDtype, device());
    }

    // 3. The latents after the last step; a run that produced NaN/Inf in reduced precision runs again in fp32.
    void denoise() {
        m_meter.begin();
        SdModel& m = model();
        const bool refine = s.refiner.enabled();
        m_ladder.attempt(memory::Stage::Denoise, [&] { m_latents = denoiseIn(m.placement.unet); },
                         [&] { setAttention(attentionOptionsFor(plan())); });  // the retry reruns the refiner's steps too
        if (m.placement.unet != torch::kFloat32 && !allFinite(m_latents)) {
            m_result.warnings.push_back(std::string("the UNet produced NaN/Inf in ") + dtypeName(m.placement.unet) +
                                        ": the denoising was run again in fp32");
            // Where each UNet is now: a swapped refiner run leaves the base at home on the CPU.
            std::vector<SdModel*> denoisers{&m};
            if (refine) denoisers.push_back(&refiner());
            auto computeAll = [&](auto dtypeFor) {
                for (SdModel* d : denoisers) computeIn(m_res, *d->unet, dtypeFor(*d), d->placement.channelsLast);
            };
            computeAll([](const SdModel&) { return torch::kFloat32; });
            m_latents = denoiseIn(torch::kFloat32);
            computeAll([](const SdModel& d) { return d.placement.unet; });
        }
        doneWith({m.unet.get(), refine ? refiner().unet.get() : nullptr});
        for (auto* c : controlNetsOf(m_loaded.controls)) doneWith({c});
        m_result.memory.denoise = m_meter.end("denoise");
    }

    // From the seed to the last step's latents; a retry starts again from fresh generators, so a retry in fp32
    // gives exactly what an fp32 run gives.
    torch::Tensor denoiseIn(torch::ScalarType unetDtype) {
        SdModel& m = model();
        const bool refine = s.refiner.enabled();
        if (refine) m_loaded.refiner.useBase(m_res, m, controlNetsOf(m_loaded.controls), placing());
        const StepConditioning cond = stepConditioning(m_prompts, m, s, unetDtype);
        std::vector<sched::ImageRng> gens = imageGenerators(s);
        sched::NoiseSource noise = samplerNoise(s, gens);
        auto scheduler = schedulerFor(s, m.schedulerConfig);
        scheduler->setTimesteps(s.steps, device());
        int64_t begin = 0;
        torch::Tensor latents = initialLatents(*scheduler, gens, noise, begin);
        afterStart(s, noise);
        m_result.timings.stepSeconds.clear();
        m_loadAwareThreads.beforeSteps(double(parameterCount(*m.unet)) * double(latents.size(2) * latents.size(3)) *
                                       double(latents.size(0)) * (m_cfg ? 2.0 : 1.0));
        const int64_t total = scheduler->timesteps().size(0);
        // ControlNet guidance fractions count over the base's whole schedule even when the refiner takes over at
        // the switch (diffusers computes controlnet_keep before cutting the timesteps at denoising_end).
        const BaseControl control{&m_loaded.controls, total - begin};
        if (!refine && s.hires.enabled) return withHiresPass(m, cond, *scheduler, latents, begin, unetDtype, noise, control);
        if (!refine) return runSteps(m, cond, *scheduler, latents, begin, total, unetDtype, noise, 0, int(total - begin), control);
        // The refiner continues the same schedule from the switch, on the base's latents without new noise and
        // with the same generators (diffusers: denoising_end on the base, denoising_start on the refiner). It is
        // another UNet: the ControlNets steer the base's steps only.
        SdModel& r = refiner();
        auto refinerScheduler = schedulerFor(s, r.schedulerConfig);
        refinerScheduler->setTimesteps(s.steps, device());
        const double at = s.refiner.switchAt;
        const int64_t baseEnd = std::max(begin, baseEndIndex(*scheduler, numTrainTimesteps(m.schedulerConfig), at));
        const int64_t refinerBegin = refinerBeginIndex(*refinerScheduler, numTrainTimesteps(r.schedulerConfig), at);
        const int64_t refinerEnd = refinerScheduler->timesteps().size(0);
        const int baseSteps = int(baseEnd - begin), all = baseSteps + int(refinerEnd - refinerBegin);
        latents = runSteps(m, cond, *scheduler, latents, begin, baseEnd, unetDtype, noise, 0, all, control);
        m_loaded.refiner.useRefiner(m_res, m, controlNetsOf(m_loaded.controls), placing());
        const auto refinerDtype = unetDtype == torch::kFloat32 ? torch::kFloat32 : r.placement.unet;
        return runSteps(r, StepConditioning::constant(refinerConditioning(refinerDtype)), *refinerScheduler, latents, refinerBegin, refinerEnd, refinerDtype,
                        noise, baseSteps, all, BaseControl{});
    }

    // A1111's hires fix: the first pass as usual, its latents upscaled in latent space, then a second pass on them
    // as diffusers' img2img computes it from latents (noise from fresh generators seeded as the first pass's, the
    // schedule of `hires.steps` cut at `hires.denoising`), with the conditioning of the larger size.
    torch::Tensor withHiresPass(SdModel& m, const StepConditioning& cond, sched::Scheduler& first, const torch::Tensor& start,
                                int64_t begin, torch::ScalarType unetDtype, sched::NoiseSource& noise, const BaseControl& control) {
        const auto& h = s.hires;
        auto second = schedulerFor(s, m.schedulerConfig);
        second->setTimesteps(h.steps > 0 ? h.steps : s.steps, device());
        const auto cut = second->img2imgTimesteps(h.denoising);
        if (cut.numSteps < 1) throw std::invalid_argument("hires denoising strength is too low: no second-pass step remains");
        const int64_t firstSteps = first.timesteps().size(0) - begin, secondEnd = second->timesteps().size(0);
        const int all = int(firstSteps + secondEnd - cut.beginIndex);
        const auto base = runSteps(m, cond, first, start, begin, first.timesteps().size(0), unetDtype, noise, 0, all, control);
        const api::Size to = api::hiresSize(s);
        const int64_t f = m.vaeScaleFactor();
        std::vector<sched::ImageRng> gens = imageGenerators(s);
        const auto upscaled = api::isLatentUpscaler(h.upscaler) ? upscaleLatents(base, to.height / f, to.width / f, h.upscaler)
                                                                : upscaleInPixels(base, to, gens);
        // An inpainting UNet repaints everything again, at the second pass's size.
        if (m_inpaint) m_inpaint = repaintEverything(upscaled.sizes().vec());
        sched::NoiseSource fresh = samplerNoise(s, gens);
        const auto secondNoise = startNoise(gens, fresh, upscaled.sizes());
        afterStart(s, fresh);
        const auto x = second->img2imgStart(upscaled, secondNoise, cut.beginIndex);
        api::GenerationSettings large = s;
        large.width = to.width;
        large.height = to.height;
        // A1111 schedules the second pass's prompt edits on: its steps after the first's, its fractions from 1.
        const auto stretches = encodeStretches(
            textSchedule(m_textKey.text, int(second->timesteps().size(0)), int(first.timesteps().size(0))));
        const StepConditioning cond2 = stepConditioning(stretches, m, large, unetDtype);
        return runSteps(m, cond2, *second, x, cut.beginIndex, secondEnd, unetDtype, fresh, int(firstSteps), all, BaseControl{});
    }

    // A1111's pixel path: the first pass's images (8-bit), enlarged by the upscaler network or resizer to the
    // second pass's size, encoded again, each image sampled with its own generator (which then draws its noise, as
    // img2img).
    torch::Tensor upscaleInPixels(const torch::Tensor& base, api::Size to, std::vector<sched::ImageRng>& gens) {
        SdModel& m = model();
        m_latents = base;
        torch::Tensor rgb;
        m_ladder.attempt(memory::Stage::Decode, [&] { rgb = decodeIn(m, m.placement.vae); });
        doneWith({m.vae.get()});
        const std::string& name = s.hires.upscaler;
        const auto enlarged = [&](const api::Image& image) {
            if (api::isResizeUpscaler(name)) return resizeUpscale(image, name, to.width, to.height);
            nn::UpscalerImpl& net = *m_loaded.upscaler.net;
            const UpscaleTiling tiling{upscaleTileFor(net.config, upscaleBudgetBytes(device())), 32};
            return upscaleToSize(net, image, to.width, to.height, tiling, &m_cancel);
        };
        std::vector<torch::Tensor> pixels;
        for (const auto& image : toImages(rgb)) pixels.push_back(imageToTensor(enlarged(image), to.width, to.height, device()));
        return encodeSampled(torch::cat(pixels), gens);
    }

    // The batch's starting noise, with the settings' variation seed (pipeline/variation_noise.h).
    torch::Tensor startNoise(std::vector<sched::ImageRng>& gens, sched::NoiseSource& noise, at::IntArrayRef shape) {
        return startingNoise(s, gens, noise, shape, model().vaeScaleFactor(), device());
    }

    // Noise scaled to the first sigma (txt2img), or the init image's latents noised to the strength's first step
    // (img2img; `begin` becomes that step), or an inpainting's start (inpaintLatents).
    torch::Tensor initialLatents(sched::Scheduler& scheduler, std::vector<sched::ImageRng>& gens, sched::NoiseSource& noise,
                                 int64_t& begin) {
        SdModel& m = model();
        const int64_t f = m.vaeScaleFactor();
        const std::vector<int64_t> shape{s.batchSize, m.vae->config().latentChannels, s.height / f, s.width / f};
        torch::Tensor latents;
        if (!m_images.init) {
            latents = startNoise(gens, noise, shape) * scheduler.initNoiseSigma();
        } else {
            const auto schedule = scheduler.img2imgTimesteps(s.strength);
            begin = schedule.beginIndex;
            if (schedule.numSteps < 1) throw std::invalid_argument("img2img strength is too low: no denoising step remains");
            // "fill" starts the repainted area from its surroundings' colours; the overlay still keeps the original.
            const bool fill = m_images.mask && s.inpaint.maskedContent == "fill";
            const auto pixels = imageToTensor(fill ? fillMasked(*m_images.init, *m_images.mask) : *m_images.init, s.width, s.height, device());
            if (m_images.mask) return inpaintLatents(scheduler, pixels, gens, noise, shape, begin);
            const auto x0 = encodeSampled(pixels, gens);  // before the noise: both draw from the same generators
            latents = scheduler.img2imgStart(x0, startNoise(gens, noise, shape), begin);
        }
        if (m.unet->config().inChannels == 9) m_inpaint = repaintEverything(shape);
        return latents;
    }

    // An inpainting UNet asked for txt2img or img2img (A1111 lets it): everything is repainted, so the mask is all
    // ones and the masked image all mid-grey. Its latents are the VAE's mean, not a sample, so the run draws the
    // same noise as a 4-channel model's would.
    InpaintLatents repaintEverything(const std::vector<int64_t>& shape) {
        SdModel& m = model();
        const int64_t f = m.vaeScaleFactor();
        const auto mean = encode(torch::zeros({1, 3, shape[2] * f, shape[3] * f}, torch::kFloat32)).mean.to(device());
        InpaintLatents in;
        in.concat = true;
        in.latentMask = torch::ones({shape[0], 1, shape[2], shape[3]}, torch::TensorOptions(torch::kFloat32).device(device()));
        in.maskedLatents = (mean * m.vae->config().scalingFactor).repeat({shape[0], 1, 1, 1});
        return in;
    }

    // diffusers' inpaint prepare_latents and prepare_mask_latents, drawing from each image's generator in their
    // order: the init image's latent sample (not for a 9-channel UNet at strength 1), the noise, the masked
    // image's latent sample (drawn and dropped for a 4-channel UNet, which never sees it, as diffusers does).
    // At strength 1 the latents start from pure noise; below, from the init image noised to the first step.
    torch::Tensor inpaintLatents(sched::Scheduler& scheduler, const torch::Tensor& pixels, std::vector<sched::ImageRng>& gens,
                                 sched::NoiseSource& noise, const std::vector<int64_t>& shape, int64_t begin) {
        SdModel& m = model();
        if (s.refiner.enabled()) throw std::invalid_argument("inpainting with a refiner is not supported: turn the refiner off");
        const int64_t unetChannels = m.unet->config().inChannels;
        if (unetChannels != 4 && unetChannels != 9)
            throw std::invalid_argument("inpainting needs a UNet with 4 or 9 input channels; this one has " + std::to_string(unetChannels));
        const auto binary = binaryMask(*m_images.mask).to(device());
        if (binary.size(2) != s.height || binary.size(3) != s.width)
            throw std::invalid_argument("the mask is " + std::to_string(binary.size(3)) + "x" + std::to_string(binary.size(2)) +
                                        " but the requested size is " + std::to_string(s.width) + "x" + std::to_string(s.height));
        const bool strengthMax = s.strength == 1.0;
        InpaintLatents in;
        in.concat = unetChannels == 9;
        if (!in.concat || !strengthMax) in.imageLatents = encodeSampled(pixels, gens);
        in.noise = startNoise(gens, noise, shape);
        if (in.concat) {
            in.maskedLatents = encodeSampled(pixels * (1 - binary), gens);
        } else {
            for (auto& g : gens) g.randn({1, shape[1], shape[2], shape[3]});
        }
        in.latentMask = latentMaskOf(binary, shape[2], shape[3], s.batchSize);
        if (in.imageLatents.defined())
            in.imageLatents = withMaskedContent(in.imageLatents, in.noise, in.latentMask, s.inpaint.maskedContent);
        auto latents = strengthMax ? in.noise * scheduler.initNoiseSigma() : scheduler.img2imgStart(in.imageLatents, in.noise, begin);
        m_inpaint = std::move(in);
        return latents;
    }

    // The VAE's latent distribution of `pixels` ([B, 3, H, W] in [-1, 1]), in fp32 on the VAE's device.
    nn::LatentDist encode(const torch::Tensor& pixels) {
        SdModel& m = model();
        const Placement& placed = m.placement;
        const memory::NetworkUse onDevice(m_res.of(m.vae.get()));
        const auto x = toNet(pixels, placed.vae, placed.computeDeviceOf("vae", device()));
        const auto dist = m.vae->encode(x, {plan().vaeSlicing, plan().vaeTiling, plan().vaeTileSize});
        doneWith({m.vae.get()});
        return {dist.mean.to(torch::kFloat32), dist.logvar.to(torch::kFloat32)};
    }

    // The scaled latents of `pixels` (one image for all, or one per image of the batch) for each image of the batch,
    // each sampled with its own generator (in fp32, so the noise drawn is the same whatever the VAE's precision).
    torch::Tensor encodeSampled(const torch::Tensor& pixels, std::vector<sched::ImageRng>& gens) {
        const nn::LatentDist dist = encode(pixels);
        std::vector<torch::Tensor> encoded;
        for (int64_t i = 0; i < s.batchSize; ++i) {
            const int64_t row = dist.mean.size(0) == s.batchSize ? i : 0;  // one image per generator, or one for all
            const nn::LatentDist one{dist.mean.narrow(0, row, 1), dist.logvar.narrow(0, row, 1)};
            encoded.push_back(one.mean + one.std() * gens[size_t(i)].randn(one.mean.sizes()).to(one.mean.options()));
        }
        return torch::cat(encoded).to(device()) * model().vae->config().scalingFactor;
    }

    // Inputs go where the network is: the UNet's device, or the VAE's (`on`) under a balanced placement.
    torch::Tensor toNet(const torch::Tensor& t, torch::ScalarType dtype, std::optional<torch::Device> on = std::nullopt) {
        auto x = t.to(on.value_or(device()), dtype);
        return model().placement.channelsLast ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
    }

    // Steps [from, to) of `sch` with `net`'s UNet; the observer numbers them after `done` steps of `all`.
    // `control` steers them with its ControlNets, step i as step i - from of control.steps.
    torch::Tensor runSteps(SdModel& net, const StepConditioning& steps, sched::Scheduler& sch, torch::Tensor latents, int64_t from,
                           int64_t to, torch::ScalarType unetDtype, sched::NoiseSource& noise, int done, int all,
                           const BaseControl& control) {
        const memory::NetworkUse onDevice(m_res.of(net.unet.get()));
        std::vector<std::unique_ptr<memory::NetworkUse>> controlsOnDevice;
        if (control.stack)
            for (auto* c : controlNetsOf(*control.stack)) controlsOnDevice.push_back(std::make_unique<memory::NetworkUse>(m_res.of(c)));
        const auto& timesteps = sch.timesteps();
        for (int64_t i = from; i < to; ++i) {
            if (m_cancel.cancelled()) throw api::Cancelled();
            const auto tStep = Clock::now();
            const Conditioning& cond = steps.at(i - from);
            // One copy of the latents per side: the negative and the prompt, or each AND part.
            const int64_t copies = m_cfg ? 1 + std::max<int64_t>(1, int64_t(cond.weights.size())) : 1;
            const auto scaled = sch.scaleModelInput(copies == 2 ? torch::cat({latents, latents}) : latents.repeat({copies, 1, 1, 1}), i);
            const auto x = toNet(scaled, unetDtype);  // what the ControlNets see: the latents alone
            std::optional<nn::ControlResiduals> residuals;
            if (control.stack)
                residuals = control.stack->residuals(i - from, control.steps, x, timesteps[i], cond.embeds, cond.added, unetDtype);
            const auto unetInput = m_inpaint && m_inpaint->concat ? toNet(m_inpaint->unetInput(scaled, copies), unetDtype) : x;
            auto pred = unetForward(*net.unet, unetInput, timesteps[i], cond, residuals ? &*residuals : nullptr)
                            .to(torch::kFloat32)
                            .contiguous();
            if (m_cfg) pred = guided(pred, cond.weights, copies);
            latents = sch.step(pred, i, latents, noise);
            if (m_inpaint) latents = m_inpaint->blend(sch, latents, i, int64_t(timesteps.size(0)));
            m_result.timings.stepSeconds.push_back(secondsSince(tStep));
            m_meter.sample("denoise");
            if (m_observer) reportStep(done + int(i - from + 1), all, latents, net);
        }
        return latents;
    }

    // Classifier-free guidance: negative + cfg · (prompt − negative); with AND parts, A1111's composable sum
    // negative + Σ cfg · w · (part − negative). Guidance rescale measures against the (first) prompt.
    torch::Tensor guided(const torch::Tensor& pred, const std::vector<double>& weights, int64_t copies) const {
        const auto sides = pred.chunk(copies);
        const auto& negative = sides[0];
        const auto& text = sides[1];
        torch::Tensor out;
        if (weights.empty()) {
            out = negative + s.cfgScale * (text - negative);
        } else {
            out = negative.clone();
            for (size_t k = 0; k < weights.size(); ++k) out = out + (sides[k + 1] - negative) * (weights[k] * s.cfgScale);
        }
        return s.guidanceRescale > 0 ? rescaleNoiseCfg(out, text, s.guidanceRescale) : out;
    }

    void reportStep(int step, int all, const torch::Tensor& latents, const SdModel& net) {
        if (auto* latentObserver = dynamic_cast<LatentObserver*>(m_observer)) latentObserver->onLatents(step, latents);
        const bool preview = m_observer->wantsPreview(step, all);
        m_observer->onStep(step, all, preview ? m_engine.m_previewer->make(latents[0], net.family) : api::Image{});
    }

    // 4. The images; a VAE that produced NaN/Inf in reduced precision decodes again in fp32. The refiner's own VAE
    //    decodes a refined run, as the refiner pipeline does.
    void decode() {
        m_meter.begin();
        const auto t0 = Clock::now();
        SdModel& dm = s.refiner.enabled() ? refiner() : model();
        const memory::ReturnFreedMemoryAtOnce growingSizes;  // see release_memory.h
        torch::Tensor rgb;
        m_ladder.attempt(memory::Stage::Decode, [&] { rgb = decodeIn(dm, dm.placement.vae); });
        const bool channelsLast = model().placement.channelsLast;
        if (dm.placement.vae != torch::kFloat32 && !allFinite(rgb)) {
            m_result.warnings.push_back(std::string("the VAE produced NaN/Inf in ") + dtypeName(dm.placement.vae) +
                                        ": the image was decoded again in fp32 (an fp16-safe VAE or vae precision fp32 avoids this)");
            computeIn(m_res, *dm.vae, torch::kFloat32, channelsLast);
            rgb = decodeIn(dm, torch::kFloat32);
            computeIn(m_res, *dm.vae, dm.placement.vae, channelsLast);
        }
        doneWith({dm.vae.get()});
        m_result.images = toImages(rgb);
        // The kept pixels are the init image's, not their trip through the VAE ("only masked": Engine::generate
        // lays the picture over the whole init image instead).
        if (m_images.mask && !s.inpaint.onlyMasked)
            for (auto& image : m_result.images) image = overlay(image, *m_images.init, *m_images.mask);
        m_result.timings.decodeSeconds = secondsSince(t0);
        m_result.memory.decode = m_meter.end("decode");
    }

    torch::Tensor decodeIn(SdModel& dm, torch::ScalarType dtype) {
        // Determinism mode decodes one image at a time whatever the plan says: CPU convolution kernels are chosen
        // per batch size, so a batched decode can differ from a sliced one in the last bit.
        const nn::VaeRunOptions run{plan().vaeSlicing || s.deterministic, plan().vaeTiling, plan().vaeTileSize};
        if (!m_ladder.vaeOnCpu()) {
            const memory::NetworkUse onDevice(m_res.of(dm.vae.get()));
            return dm.vae->decodeLatents(toNet(m_latents, dtype, dm.placement.computeDeviceOf("vae", device())), run);
        }
        // The last resort: the VAE in fp32 on the CPU for this decode, then back where it lives.
        m_res.offloads.erase(dm.vae.get());  // gives the leaves their stored copies back
        m_res.ledger.remove(dm.vae.get());
        placeNetwork(*dm.vae, torch::kCPU, torch::kFloat32, false);
        auto rgb = dm.vae->decodeLatents(m_latents.to(torch::kCPU, torch::kFloat32), run);
        placeNetwork(*dm.vae, dm.placement.deviceOf("vae"), dm.placement.vae, model().placement.channelsLast);  // its home
        attachOffloads(m_res, dm, placing(), dm.vae.get());
        return rgb;
    }

    api::GenerationResult finish() {
        const Placement& placed = model().placement;
        std::string vae = dtypeName(placed.vae);
        if (placed.vae != m_setup.placement.vae) vae += " (force_upcast)";
        auto& env = m_result.environment;
        env.precision = std::string("unet=") + dtypeName(placed.unet) + " text_encoder=" + dtypeName(placed.textEncoder) + " vae=" + vae;
        env.threads = m_determinism.threads();  // after the steps, which may have followed the load
        m_result.settings.plan = plan();         // what made the images, after any out-of-memory fallback
        return std::move(m_result);
    }

    Engine& m_engine;
    Loaded& m_loaded;
    Residency& m_res;
    const api::GenerationSettings& s;
    const api::CancelToken& m_cancel;
    api::Observer* m_observer;
    const api::RunImages& m_images;
    const c10::InferenceMode m_inference;
    const std::string m_wanted;  // the model's source
    const OffloadSetup m_setup;
    const memory::DeterminismGuard m_determinism;
    memory::LoadAwareThreads m_loadAwareThreads;
    const nn::WinogradConvScope m_winograd;
    const StageMeter m_meter;
    api::GenerationResult m_result;  // before the ladder, which records its warnings
    OutOfMemoryLadder m_ladder;
    const bool m_cfg;
    ConditioningKey m_textKey;
    text::EmbeddingVectors* m_embeddings = nullptr;  // the engine's, scanned at this run's start
    std::vector<EncodedStretch> m_prompts;  // one per stretch of steps (one without prompt editing)
    torch::Tensor m_latents;
    std::optional<InpaintLatents> m_inpaint;  // an inpainting run's mask and image latents
};

api::GenerationResult Engine::generateOnlyMasked(const api::GenerationSettings& s, const api::CancelToken& cancel,
                                                 api::Observer* observer, const api::RunImages& images, RetryHistory& history) {
    const CropBox box = maskedCropRegion(*images.mask, s.width, s.height, s.inpaint.maskedPadding);
    const api::RunImages cropped = croppedToBox(images, box, s.width, s.height);
    auto r = Run(*this, s, cancel, observer, cropped, history).execute();
    for (auto& image : r.images) image = pastedBack(image, images, box);
    return r;
}

api::GenerationResult Engine::generate(const api::GenerationSettings& s, const api::CancelToken& cancel, api::Observer* observer,
                                       const api::RunImages& images) {
    RetryHistory history;
    api::GenerationSettings current = s;
    std::vector<std::string> carried;  // warnings of runs restarted with a lower preset
    tileHiresDecodeIfNeeded(current, m_loraFolders, carried);
    for (;;) {
        try {
            api::validate(current);
            api::validate(current.plan);
            if (!current.initImage.empty() && !images.init) throw std::invalid_argument("img2img needs the init image's pixels");
            if ((current.inpaint.enabled() || current.outpaint.enabled()) && !images.mask)
                throw std::invalid_argument("inpainting needs the mask's pixels");
            auto r = current.inpaint.onlyMasked ? generateOnlyMasked(current, cancel, observer, images, history)
                                                : Run(*this, current, cancel, observer, images, history).execute();
            r.warnings.insert(r.warnings.begin(), carried.begin(), carried.end());
            return r;
        } catch (OutOfMemoryLadder::Restart& restart) {
            current = std::move(restart.settings);
            carried.insert(carried.end(), restart.warnings.begin(), restart.warnings.end());
        } catch (const c10::OutOfMemoryError& e) {
            // Outside the stages' retries (moving a model, a preview): no fallback applies.
            throw api::OutOfMemory(std::string("out of memory: ") + e.what_without_backtrace());
        } catch (const c10::Error& e) {
            // torch's own message without its C++ backtrace: what a person can act on.
            throw std::runtime_error(e.what_without_backtrace());
        }
    }
}

} // namespace dd::pipeline
