// The denoising loop, written out once. Ref: diffusers pipelines/stable_diffusion/pipeline_stable_diffusion.py
// (__call__), pipeline_stable_diffusion_img2img.py (prepare_latents, get_timesteps),
// pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl.py (_get_add_time_ids); sd_reference.md §12.
#include "core/pipeline/engine.h"

#include "core/pipeline/preview.h"
#include "core/pipeline/sd_model.h"
#include "core/sched/scheduler.h"
#include "core/text/prompt_encoder.h"

#include <torch/torch.h>

#include <chrono>

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

Conditioning encode(SdModel& m, const settings::GenerationSettings& s, bool cfg, int64_t batch) {
    if (m.tokenizer) checkVocabulary(m.textEncoder ? m.textEncoder : m.textEncoder2, *m.tokenizer, "tokenizer");
    if (m.tokenizer2) checkVocabulary(m.textEncoder2, *m.tokenizer2, "tokenizer_2");
    const text::TextModel textModel{m.textEncoder, m.textEncoder2, m.tokenizer ? &*m.tokenizer : nullptr,
                                    m.tokenizer2 ? &*m.tokenizer2 : nullptr, m.forceZerosForEmptyPrompt};
    const auto [neg, pos] = text::encodePrompts(textModel, s, cfg);
    Conditioning c;
    c.embeds = cfg ? torch::cat({repeatRows(neg.embeds, batch), repeatRows(pos.embeds, batch)}) : repeatRows(pos.embeds, batch);
    if (m.isXl()) {
        // add_time_ids = original (h, w) + crop (0, 0) + target (h, w), equal for both CFG halves.
        const auto ids = torch::tensor({double(s.height), double(s.width), 0.0, 0.0, double(s.height), double(s.width)})
                             .to(c.embeds.options())
                             .unsqueeze(0);
        const auto pooled = cfg ? torch::cat({repeatRows(neg.pooled, batch), repeatRows(pos.pooled, batch)})
                                : repeatRows(pos.pooled, batch);
        c.added = nn::AddedCond{pooled, repeatRows(ids, c.embeds.size(0))};
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

} // namespace

struct Engine::Loaded {
    std::unique_ptr<SdModel> model;
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

GenerationResult Engine::run(const settings::GenerationSettings& s, const CancelToken& cancel, Observer* observer,
                             const Image* initImage) {
    settings::validate(s);
    if (!s.initImage.empty() && !initImage) throw std::invalid_argument("img2img needs the init image's pixels");
    c10::InferenceMode inference;
    const torch::Device device = torch::kCPU;
    GenerationResult result;
    result.settings = s;

    auto t0 = Clock::now();
    const std::string wanted = s.model.empty() ? kDemoModel : s.model;
    if (!m_loaded->model || m_loaded->model->source != wanted) {
        m_loaded->model.reset();  // free the old model before loading the next
        m_loaded->model = wanted == kDemoModel ? makeDemoModel(device) : loadSdModel(wanted, device);
        if (m_log) m_log("loaded " + m_loaded->model->displayName + " (" + std::string(io::familyName(m_loaded->model->family)) + ")");
    }
    SdModel& m = *m_loaded->model;
    result.modelName = m.displayName;
    result.timings.loadSeconds = secondsSince(t0);

    auto scheduler = sched::makeScheduler(s.sampler, m.schedulerConfig);
    const int64_t batch = s.batchSize, f = m.vaeScaleFactor();
    if (s.width % f || s.height % f)
        throw std::invalid_argument("size must be a multiple of " + std::to_string(f) + " for this model");
    const bool cfg = s.cfgScale > 1.0;

    t0 = Clock::now();
    const Conditioning cond = encode(m, s, cfg, batch);
    result.timings.encodeSeconds = secondsSince(t0);

    // Image i draws from its own CPU generator seeded seed + i, so any image of a batch can be remade alone.
    std::vector<at::Generator> gens;
    for (int64_t i = 0; i < batch; ++i) gens.push_back(at::make_generator<at::CPUGeneratorImpl>(uint64_t(s.seed + i)));
    sched::NoiseSource noise(gens);
    scheduler->setTimesteps(s.steps, device);
    const auto latentShape = std::vector<int64_t>{batch, m.unet->config().inChannels, s.height / f, s.width / f};
    const auto dtype = cond.embeds.scalar_type();

    int64_t begin = 0;
    torch::Tensor latents;
    if (initImage) {
        const auto x = imageToTensor(*initImage, s.width, s.height, device);
        std::vector<torch::Tensor> encoded;
        const auto dist = m.vae->encode(x);
        for (int64_t i = 0; i < batch; ++i) encoded.push_back(dist.sample(gens[size_t(i)]));
        const auto x0 = torch::cat(encoded) * m.vae->config().scalingFactor;
        const auto schedule = scheduler->img2imgTimesteps(s.strength);
        begin = schedule.beginIndex;
        if (schedule.numSteps < 1) throw std::invalid_argument("img2img strength is too low: no denoising step remains");
        latents = scheduler->addNoise(x0, noise.randn(latentShape, dtype, device), begin);
    } else {
        latents = noise.randn(latentShape, dtype, device) * scheduler->initNoiseSigma();
    }

    const auto& timesteps = scheduler->timesteps();
    const int64_t total = timesteps.size(0);
    for (int64_t i = begin; i < total; ++i) {
        if (cancel.cancelled()) throw Cancelled();
        const auto tStep = Clock::now();
        const auto input = scheduler->scaleModelInput(cfg ? torch::cat({latents, latents}) : latents, i);
        auto pred = m.unet->forward(input, timesteps[i], cond.embeds, cond.added);
        if (cfg) {
            const auto halves = pred.chunk(2);
            const auto text = halves[1];
            pred = halves[0] + s.cfgScale * (text - halves[0]);
            if (s.guidanceRescale > 0) pred = rescaleNoiseCfg(pred, text, s.guidanceRescale);
        }
        latents = scheduler->step(pred, i, latents, noise);
        result.timings.stepSeconds.push_back(secondsSince(tStep));
        if (observer) {
            observer->onLatents(int(i - begin + 1), latents);
            observer->onStep(int(i - begin + 1), int(total - begin), latentPreview(latents[0], m.family));
        }
    }

    t0 = Clock::now();
    result.images = toImages(m.vae->decodeLatents(latents));
    result.timings.decodeSeconds = secondsSince(t0);
    return result;
}

} // namespace dd::pipeline
