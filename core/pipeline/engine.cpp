// The denoising loop, written out once. Ref: diffusers pipelines/stable_diffusion/pipeline_stable_diffusion.py
// (__call__), pipeline_stable_diffusion_img2img.py (prepare_latents, get_timesteps),
// pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl.py (_get_add_time_ids, needs_upcasting);
// sd_reference.md §8, §10, §12. The memory plan (core/memory/memory_plan.h) decides device, precision per
// network, attention kernel, VAE slicing/tiling, channels_last and model offload; latents and the scheduler
// stay fp32 whatever the networks run in, so a precision change only changes what the networks compute.
#include "core/pipeline/engine.h"

#include "core/io/model_hash.h"
#include "core/memory/determinism.h"
#include "core/memory/memory_probe.h"
#include "core/memory/release_memory.h"
#include "core/nn/clip_text.h"
#include "core/pipeline/conditioning_cache.h"
#include "core/pipeline/lora_stack.h"
#include "core/pipeline/preview.h"
#include "core/pipeline/sd_model.h"
#include "core/sched/scheduler.h"
#include "core/text/prompt_encoder.h"
#include "core/text/prompt_parser.h"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>

namespace dd::pipeline {
namespace {

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
        // add_time_ids = original (h, w) + crop (0, 0) + target (h, w), equal for both CFG halves.
        const auto ids = torch::tensor({double(s.height), double(s.width), 0.0, 0.0, double(s.height), double(s.width)})
                             .to(c.embeds.options())
                             .unsqueeze(0);
        c.added = nn::AddedCond{side(neg.pooled, pos.pooled), repeatRows(ids, c.embeds.size(0))};
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

// Peak memory per stage: a new peak window at the stage's start, a sample at its end (and once per step).
class StageMeter {
public:
    StageMeter(int cudaDevice, Observer* observer) : m_device(cudaDevice), m_observer(observer) {}
    void begin() const { memory::resetPeaks(m_device); }
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

// "auto" = the first CUDA device when there is one, else the CPU.
torch::Device resolveDevice(const std::string& wanted) {
    if (wanted == "auto") return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    if (wanted == "cpu") return torch::kCPU;
    const torch::Device d(wanted);  // "cuda", "cuda:1"
    if (!torch::cuda::is_available())
        throw std::invalid_argument("the memory plan asks for device '" + wanted + "' but no CUDA device is available (use auto or cpu)");
    if (d.has_index() && d.index() >= int(torch::cuda::device_count()))
        throw std::invalid_argument("the memory plan asks for device '" + wanted + "' but only " +
                                    std::to_string(torch::cuda::device_count()) + " CUDA device(s) exist");
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

bool allFinite(const torch::Tensor& t) { return torch::isfinite(t).all().item<bool>(); }

// Model offload: a network lives at home (the CPU) and visits the compute device while it is used.
class Visit {
public:
    Visit(torch::nn::Module& net, torch::Device home, torch::Device compute, torch::ScalarType dtype, bool channelsLast)
        : m_net(net), m_home(home), m_dtype(dtype), m_channelsLast(channelsLast), m_moved(home != compute) {
        if (m_moved) placeNetwork(m_net, compute, dtype, channelsLast);
    }
    ~Visit() {
        if (m_moved) placeNetwork(m_net, m_home, m_dtype, m_channelsLast);
    }
    Visit(const Visit&) = delete;
    Visit& operator=(const Visit&) = delete;

private:
    torch::nn::Module& m_net;
    torch::Device m_home;
    torch::ScalarType m_dtype;
    bool m_channelsLast, m_moved;
};

} // namespace

struct Engine::Loaded {
    std::unique_ptr<SdModel> model;
    Placement requested;     // what the plan asked for (model->placement: what was used)
    std::string hash;        // cached per loaded model: hashing a checkpoint reads the whole file
    ConditioningCache conditioning;
    LoraStack loras;         // what LoRAs the networks carry now
};

Engine::Engine(Log log) : m_loaded(std::make_unique<Loaded>()), m_log(std::move(log)) {}
Engine::~Engine() = default;

GenerationResult Engine::generate(const settings::GenerationSettings& s, const CancelToken& cancel, Observer* observer,
                                  const Image* initImage) {
    try {
        return run(s, cancel, observer, initImage);
    } catch (const c10::Error& e) {
        // torch's own message without its C++ backtrace: what a person can act on.
        throw std::runtime_error(e.what_without_backtrace());
    }
}

void Engine::releaseModel() {
    if (!m_loaded->model) return;
    m_loaded->loras.clear();  // while the networks still exist
    m_loaded->conditioning.clear();
    m_loaded->model.reset();
    m_loaded->hash.clear();
    memory::releaseFreedMemory();
}

int64_t Engine::textEncoderRuns() const { return m_textEncoderRuns; }

void Engine::setLoraFolders(std::vector<std::string> folders) { m_loraFolders = std::move(folders); }

int64_t Engine::loraBytes() const { return m_loaded->loras.extraBytes(); }

GenerationResult Engine::run(const settings::GenerationSettings& s, const CancelToken& cancel, Observer* observer,
                             const Image* initImage) {
    settings::validate(s);
    memory::validate(s.plan);
    if (!s.initImage.empty() && !initImage) throw std::invalid_argument("img2img needs the init image's pixels");
    c10::InferenceMode inference;
    const memory::MemoryPlan& plan = s.plan;
    const torch::Device device = resolveDevice(plan.device);
    const memory::DeterminismGuard determinism(s.deterministic, plan.threads);
    const StageMeter meter(device.is_cuda() ? int(device.index()) : -1, observer);
    GenerationResult result;
    result.settings = s;

    // Offload only means something when the compute device is not the CPU. Sequential and group offload
    // (issue 6) are not built yet: they fall back to model offload, which keeps the same promise.
    const bool offload = device.is_cuda() && plan.offload != memory::Offload::None;
    if (offload && plan.offload != memory::Offload::Model)
        result.warnings.push_back(std::string(memory::offloadName(plan.offload)) +
                                  " offload is not available yet: used model offload instead");
    const torch::Device home = offload ? torch::Device(torch::kCPU) : device;

    // Determinism mode takes SDPA's math kernel: the same reduction order on every run and machine.
    nn::AttentionOptions attention = attentionOptionsFor(plan);
    if (s.deterministic) attention = {nn::AttentionBackend::SdpaMath};

    meter.begin();
    auto t0 = Clock::now();
    const std::string wanted = s.model.empty() ? kDemoModel : s.model;
    const Placement want{home, dtypeOf(plan.unet), dtypeOf(plan.textEncoder), dtypeOf(plan.vae), plan.vaeUpcast, plan.channelsLast};
    if (!m_loaded->model || m_loaded->model->source != wanted || !(m_loaded->requested == want)) {
        const bool sameFile = m_loaded->model && m_loaded->model->source == wanted;
        std::string hash = sameFile ? m_loaded->hash : std::string();
        releaseModel();  // free the old model (host and device) before loading the next
        m_loaded->model = wanted == kDemoModel ? makeDemoModel(want) : loadSdModel(wanted, want);
        m_loaded->requested = want;
        m_loaded->hash = sameFile || m_loaded->model->isDemo ? hash : modelHashOf(wanted);
        // The networks' random initial weights were just replaced by the file's: give that heap back.
        memory::releaseFreedMemory();
        if (m_log) m_log("loaded " + m_loaded->model->displayName + " (" + std::string(io::familyName(m_loaded->model->family)) + ")");
    }
    SdModel& m = *m_loaded->model;
    const Placement& placed = m.placement;
    m.unet->setAttention(attention);
    m.vae->setAttention(attention);
    // LoRAs (core/pipeline/lora_stack): applied or swapped here, the model itself stays loaded.
    result.settings.loras = m_loaded->loras.apply(m, s, m_loraFolders, result.warnings);
    result.modelName = m.displayName;
    result.modelHash = m_loaded->hash;
    result.timings.loadSeconds = secondsSince(t0);
    result.memory.load = meter.end("load");

    auto& env = result.environment;
    env.appVersion = DD_VERSION;
    env.torchVersion = torchVersion();
    env.device = device.is_cuda() ? memory::sampleMemory(int(device.index())).deviceName : "CPU";
    if (env.device.empty() || env.device == "CPU") env.device = device.is_cuda() ? device.str() : "CPU";
    env.attention = attentionLabel(attention);
    env.offload = offload ? "model" : "none";
    env.threads = determinism.threads();
    env.deterministic = s.deterministic;
    auto precisionText = [&] {
        std::string vae = dtypeName(placed.vae);
        if (placed.vae != want.vae) vae += " (force_upcast)";
        return std::string("unet=") + dtypeName(placed.unet) + " text_encoder=" + dtypeName(placed.textEncoder) + " vae=" + vae;
    };

    auto scheduler = sched::makeScheduler(s.sampler, m.schedulerConfig);
    const int64_t batch = s.batchSize, f = m.vaeScaleFactor();
    if (s.width % f || s.height % f)
        throw std::invalid_argument("size must be a multiple of " + std::to_string(f) + " for this model");
    const bool cfg = s.cfgScale > 1.0;

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
        auto encodeOn = [&](torch::ScalarType dtype) {
            // Offload: the encoders visit the compute device only on a cache miss.
            std::optional<Visit> v1, v2;
            if (m.textEncoder) v1.emplace(*m.textEncoder, home, device, dtype, false);
            if (m.textEncoder2) v2.emplace(*m.textEncoder2, home, device, dtype, false);
            ++m_textEncoderRuns;
            auto c = encodeText(m, textSettings, cfg);
            for (auto* side : {&c.negative, &c.positive})
                for (auto* t : {&side->embeds, &side->pooled})
                    if (t->defined()) *t = t->to(device);
            return c;
        };
        auto c = encodeOn(placed.textEncoder);
        const auto finite = [](const text::CfgConditioning& c) {
            return allFinite(c.positive.embeds) && (!c.negative.embeds.defined() || allFinite(c.negative.embeds));
        };
        if (placed.textEncoder != torch::kFloat32 && !finite(c)) {
            result.warnings.push_back(std::string("the text encoder produced NaN/Inf in ") + dtypeName(placed.textEncoder) +
                                      ": the prompt was encoded again in fp32");
            for (auto* te : {&m.textEncoder, &m.textEncoder2})
                if (*te) placeNetwork(**te, home, torch::kFloat32, false);
            c = encodeOn(torch::kFloat32);
            for (auto* te : {&m.textEncoder, &m.textEncoder2})
                if (*te) placeNetwork(**te, home, placed.textEncoder, false);
        }
        m_loaded->conditioning.insert(key, std::move(c));
        prompts = m_loaded->conditioning.find(key);
    }
    result.timings.encodeSeconds = secondsSince(t0);
    result.memory.encode = meter.end("encode");

    // --- denoise ---
    meter.begin();
    const auto latentShape = std::vector<int64_t>{batch, m.unet->config().inChannels, s.height / f, s.width / f};
    auto toNet = [&](const torch::Tensor& t, torch::ScalarType dtype) {
        auto x = t.to(device, dtype);
        return placed.channelsLast ? x.contiguous(at::MemoryFormat::ChannelsLast) : x;
    };
    // From the seed to the last step's latents; a retry in fp32 starts again from fresh generators, so it
    // gives exactly what an fp32 run gives.
    auto denoise = [&](torch::ScalarType unetDtype) {
        const Conditioning cond = batchConditioning(*prompts, m, s, cfg, batch, unetDtype, device);
        // Image i draws from its own CPU generator seeded seed + i, so any image of a batch can be remade alone.
        std::vector<at::Generator> gens;
        for (int64_t i = 0; i < batch; ++i) gens.push_back(at::make_generator<at::CPUGeneratorImpl>(uint64_t(s.seed + i)));
        sched::NoiseSource noise(gens);
        scheduler = sched::makeScheduler(s.sampler, m.schedulerConfig);
        scheduler->setTimesteps(s.steps, device);
        int64_t begin = 0;
        torch::Tensor latents;
        if (initImage) {
            const Visit onDevice(*m.vae, home, device, placed.vae, placed.channelsLast);
            const auto x = toNet(imageToTensor(*initImage, s.width, s.height, device), placed.vae);
            const auto dist = m.vae->encode(x, {plan.vaeSlicing, plan.vaeTiling});
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
        const Visit onDevice(*m.unet, home, device, unetDtype, placed.channelsLast);
        result.timings.stepSeconds.clear();
        const auto& timesteps = scheduler->timesteps();
        const int64_t total = timesteps.size(0);
        for (int64_t i = begin; i < total; ++i) {
            if (cancel.cancelled()) throw Cancelled();
            const auto tStep = Clock::now();
            const auto input = scheduler->scaleModelInput(cfg ? torch::cat({latents, latents}) : latents, i);
            auto pred = m.unet->forward(toNet(input, unetDtype), timesteps[i], cond.embeds, cond.added)
                            .to(torch::kFloat32)
                            .contiguous();
            if (cfg) {
                const auto halves = pred.chunk(2);
                const auto text = halves[1];
                pred = halves[0] + s.cfgScale * (text - halves[0]);
                if (s.guidanceRescale > 0) pred = rescaleNoiseCfg(pred, text, s.guidanceRescale);
            }
            latents = scheduler->step(pred, i, latents, noise);
            result.timings.stepSeconds.push_back(secondsSince(tStep));
            meter.sample("denoise");
            if (observer) {
                observer->onLatents(int(i - begin + 1), latents);
                observer->onStep(int(i - begin + 1), int(total - begin), latentPreview(latents[0], m.family));
            }
        }
        return latents;
    };
    auto latents = denoise(placed.unet);
    if (placed.unet != torch::kFloat32 && !allFinite(latents)) {
        result.warnings.push_back(std::string("the UNet produced NaN/Inf in ") + dtypeName(placed.unet) +
                                  ": the denoising was run again in fp32");
        placeNetwork(*m.unet, home, torch::kFloat32, placed.channelsLast);
        latents = denoise(torch::kFloat32);
        placeNetwork(*m.unet, home, placed.unet, placed.channelsLast);
    }
    result.memory.denoise = meter.end("denoise");

    // --- decode ---
    meter.begin();
    t0 = Clock::now();
    auto decode = [&](torch::ScalarType dtype) {
        const Visit onDevice(*m.vae, home, device, dtype, placed.channelsLast);
        // Determinism mode decodes one image at a time whatever the plan says: CPU convolution kernels are
        // chosen per batch size, so a batched decode can differ from a sliced one in the last bit.
        return m.vae->decodeLatents(toNet(latents, dtype), {plan.vaeSlicing || s.deterministic, plan.vaeTiling});
    };
    auto rgb = decode(placed.vae);
    if (placed.vae != torch::kFloat32 && !allFinite(rgb)) {
        result.warnings.push_back(std::string("the VAE produced NaN/Inf in ") + dtypeName(placed.vae) +
                                  ": the image was decoded again in fp32 (an fp16-safe VAE or vae precision fp32 avoids this)");
        placeNetwork(*m.vae, home, torch::kFloat32, placed.channelsLast);
        rgb = decode(torch::kFloat32);
        placeNetwork(*m.vae, home, placed.vae, placed.channelsLast);
    }
    result.images = toImages(rgb);
    result.timings.decodeSeconds = secondsSince(t0);
    result.memory.decode = meter.end("decode");
    env.precision = precisionText();
    return result;
}

} // namespace dd::pipeline
