// dd_train_embedded: trains DiffusionDesk's embedded text-to-image model from scratch on procedurally drawn
// shape scenes (shapes_scene.h) and writes it as a diffusers folder.
//
//   nice -n 10 build/bin/dd_train_embedded --work build/train-shapes --out resources/models/shapes
//
// --vae-from DIR takes the autoencoder of an exported model instead of phases 1 and 4 (no caption reaches it).
//
// Phase 1 trains the AutoencoderKL (L1 + MSE reconstruction, tiny KL), phase 2 encodes a fixed set of scenes
// to latents once, phase 3 trains the UNet and the CLIP text encoder together with the epsilon objective
// (10 % empty captions, for classifier-free guidance). Every random choice derives from --seed and the step
// number, and the state (weights, Adam moments, step) is checkpointed to --work every few minutes: rerunning
// the same command resumes where it stopped, and the diffusers folder is re-exported at each checkpoint.
#include "core/io/safetensors.h"
#include "core/nn/clip_text.h"
#include "core/nn/load_weights.h"
#include "core/nn/unet.h"
#include "core/nn/vae.h"
#include "core/text/clip_tokenizer.h"
#include "tools/train/diffusers_export.h"
#include "tools/train/embedded_configs.h"
#include "tools/train/shapes_phrasing.h"
#include "tools/train/shapes_scene.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;
using namespace dd;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    fs::path work = "build/train-shapes";
    fs::path out = "resources/models/shapes";
    fs::path vocab = "resources/clip/bpe_simple_vocab_16e6.txt.gz";
    // An exported model whose autoencoder (phases 1 and 4, which no caption touches) is taken as it is.
    fs::path vaeFrom;
    // An exported model whose UNet and text encoder phase 3 starts from (a fine-tune) instead of random weights.
    fs::path initFrom;
    bool variedPhrasing = true;  // --phrasing varied (shapes_phrasing.h) or plain (the caption grammar alone)
    uint64_t seed = 1;
    int threads = 2;
    int vaeSteps = 1500, vaeBatch = 4;
    int vaeSize = 64;  // the autoencoder trains on half-size renders (same proportions, 4× cheaper)...
    int vaeFullSizeSteps = 0;  // ...except its last steps, at full size, so that 128-pixel edges decode sharply
    int latentCount = 4096;
    int unetSteps = 3000, unetBatch = 32;
    int decoderSteps = 0;  // phase 4: the decoder alone, at full size
    double vaeLr = 1e-3, unetLr = 1e-3;
    // Why these two exist: see "Training log (session 4)" in docs/embedded-model.md. Without them the model
    // learned to read the flat background colour from the faint signal left in x_T and never needed the caption.
    double noiseOffset = 0.3;      // per-image, per-channel constant added to the training noise
    double maxLossWeight = 25;     // epsilon loss weighted by 1/ᾱ_t (v-prediction's weighting), capped...
    int detailFrom = 1 << 30;      // ...and from this UNet step the cap falls linearly to 1 (plain epsilon loss)
    int detailSteps = 2000;        // over this many steps
    // The learning rate stays flat, then from --anneal-from falls along a half cosine to 0 over --anneal-steps:
    // at a flat 1e-3 the weights keep jittering around the optimum and the samples stay soft (squares came out
    // with rounded corners); annealing settles them.
    int annealFrom = 1 << 30, annealSteps = 2000;
    double checkpointMinutes = 4;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        if (a == "--work") o.work = value();
        else if (a == "--out") o.out = value();
        else if (a == "--vocab") o.vocab = value();
        else if (a == "--vae-from") o.vaeFrom = value();
        else if (a == "--init-from") o.initFrom = value();
        else if (a == "--phrasing") {
            const std::string v = value();
            if (v != "varied" && v != "plain") throw std::invalid_argument("--phrasing is varied or plain");
            o.variedPhrasing = v == "varied";
        }
        else if (a == "--seed") o.seed = std::stoull(value());
        else if (a == "--threads") o.threads = std::stoi(value());
        else if (a == "--vae-steps") o.vaeSteps = std::stoi(value());
        else if (a == "--vae-batch") o.vaeBatch = std::stoi(value());
        else if (a == "--vae-size") o.vaeSize = std::stoi(value());
        else if (a == "--vae-full-size-steps") o.vaeFullSizeSteps = std::stoi(value());
        else if (a == "--latents") o.latentCount = std::stoi(value());
        else if (a == "--unet-steps") o.unetSteps = std::stoi(value());
        else if (a == "--unet-batch") o.unetBatch = std::stoi(value());
        else if (a == "--decoder-steps") o.decoderSteps = std::stoi(value());
        else if (a == "--noise-offset") o.noiseOffset = std::stod(value());
        else if (a == "--max-loss-weight") o.maxLossWeight = std::stod(value());
        else if (a == "--detail-from") o.detailFrom = std::stoi(value());
        else if (a == "--detail-steps") o.detailSteps = std::stoi(value());
        else if (a == "--anneal-from") o.annealFrom = std::stoi(value());
        else if (a == "--anneal-steps") o.annealSteps = std::stoi(value());
        else if (a == "--checkpoint-minutes") o.checkpointMinutes = std::stod(value());
        else throw std::invalid_argument("unknown option " + a + " (see the comment at the top of train_embedded.cpp)");
    }
    return o;
}

// Scenes as a [B, 3, 128, 128] batch in [−1, 1].
torch::Tensor toTensor(const std::vector<cv::Mat>& images) {
    auto t = torch::empty({int64_t(images.size()), images[0].rows, images[0].cols, 3}, torch::kUInt8);
    for (size_t i = 0; i < images.size(); ++i)
        std::memcpy(t[int64_t(i)].data_ptr(), images[i].data, images[i].total() * images[i].elemSize());
    return t.permute({0, 3, 1, 2}).to(torch::kFloat32).div(127.5).sub(1.0).contiguous();
}

struct State {
    int vaeStep = 0, unetStep = 0, decoderStep = 0;
    double scalingFactor = 0;
    nlohmann::json log = nlohmann::json::array();  // {phase, step, loss, seconds}
};

State loadState(const fs::path& p) {
    State s;
    if (!fs::exists(p)) return s;
    std::ifstream in(p);
    const auto j = nlohmann::json::parse(in);
    s.vaeStep = j.at("vae_step");
    s.unetStep = j.at("unet_step");
    s.decoderStep = j.value("decoder_step", 0);
    s.scalingFactor = j.at("scaling_factor");
    s.log = j.at("log");
    return s;
}

void saveState(const fs::path& p, const State& s) {
    const nlohmann::json j = {{"vae_step", s.vaeStep}, {"unet_step", s.unetStep}, {"decoder_step", s.decoderStep}, {"scaling_factor", s.scalingFactor}, {"log", s.log}};
    std::ofstream(p.string() + ".tmp") << j.dump(1);
    fs::rename(p.string() + ".tmp", p);
}

template <typename M>
void saveModule(M& m, const fs::path& p) {
    torch::save(m, p.string() + ".tmp");
    fs::rename(p.string() + ".tmp", p);
}
void saveOptimizer(torch::optim::Optimizer& o, const fs::path& p) {
    torch::save(o, p.string() + ".tmp");
    fs::rename(p.string() + ".tmp", p);
}

// L1 + MSE with the shape's pixels weighted 10×: shapes cover a few percent of a scene, and without the weight
// the decoder learns the flat backgrounds and smears the shape's colour. The per-image median is the background.
torch::Tensor reconstructionLoss(const torch::Tensor& y, const torch::Tensor& x) {
    const auto background = std::get<0>(x.flatten(2).median(2)).unsqueeze(-1).unsqueeze(-1);
    const auto weight = 1 + 9 * ((x - background).abs().amax(1, true) > 0.05).to(x.dtype());
    return (weight * ((y - x).abs() + (y - x).pow(2))).mean() / weight.mean();
}

// Originals above reconstructions for 8 held-out scenes at full size, and their mean absolute error.
double writeReconstruction(nn::AutoencoderKL& vae, uint64_t seed, const fs::path& png) {
    torch::NoGradGuard ng;
    std::vector<cv::Mat> imgs;
    for (int i = 0; i < 8; ++i) imgs.push_back(shapes::render(shapes::randomScene(shapes::mix(seed + 999000 + i))));
    const auto x = toTensor(imgs);
    const auto y = vae->decode(vae->encode(x).mean).clamp(-1, 1);
    const auto rows = torch::cat({x, y}, 2).add(1).mul(127.5).round().clamp(0, 255).to(torch::kUInt8);  // [8,3,256,128]
    const auto strip = rows.permute({2, 0, 3, 1}).reshape({2 * shapes::kImageSize, 8 * shapes::kImageSize, 3}).contiguous();
    cv::Mat rgb(int(strip.size(0)), int(strip.size(1)), CV_8UC3, strip.data_ptr()), bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    cv::imwrite(png.string(), bgr);
    return (y - x).abs().mean().item<double>() * 127.5;
}

double lrAt(double base, int step) { return base * std::min(1.0, (step + 1) / 100.0); }  // linear warm-up, then flat

// The UNet's rate: lrAt, then the half-cosine anneal to 0 (Options::annealFrom).
double unetLrAt(const Options& o, int step) {
    const double done = std::clamp(double(step - o.annealFrom) / std::max(1, o.annealSteps), 0.0, 1.0);
    return lrAt(o.unetLr, step) * 0.5 * (1 + std::cos(M_PI * done));
}

struct Running {
    double sum = 0;
    int n = 0;
    void add(double v) { sum += v, ++n; }
    double take() { const double m = n ? sum / n : 0; sum = 0, n = 0; return m; }
};

} // namespace

int main(int argc, char** argv) try {
    const Options o = parse(argc, argv);
    torch::set_num_threads(o.threads);
    at::set_num_interop_threads(1);
    fs::create_directories(o.work);
    const fs::path statePath = o.work / "state.json";
    State st = loadState(statePath);
    const auto started = Clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };

    torch::manual_seed(o.seed);
    nn::AutoencoderKL vae(nn::VaeConfig::fromJson(train::vaeConfig(1.0)));
    torch::manual_seed(o.seed + 1);
    nn::UNet2DConditionModel unet(nn::UNetConfig::fromJson(train::unetConfig()));
    torch::manual_seed(o.seed + 2);
    nn::ClipTextModel te(nn::ClipTextConfig::fromJson(train::textEncoderConfig(), false));
    {
        // transformers' initialisation for the embeddings (N(0, 0.02)); libtorch's N(0, 1) starts the tiny
        // encoder saturated.
        torch::NoGradGuard ng;
        te->text_model->embeddings->token_embedding->weight.normal_(0, 0.02);
        te->text_model->embeddings->position_embedding->weight.normal_(0, 0.01);
    }
    auto count = [](torch::nn::Module& m) {
        int64_t n = 0;
        for (const auto& p : m.parameters()) n += p.numel();
        return n;
    };
    std::printf("parameters: vae %lld, unet %lld, text encoder %lld\n", (long long)count(*vae), (long long)count(*unet),
                (long long)count(*te));

    // ---------------------------------------------------------------- phase 1: autoencoder
    torch::optim::Adam vaeOpt(vae->parameters(), torch::optim::AdamOptions(o.vaeLr));
    if (fs::exists(o.work / "vae.pt")) {
        torch::load(vae, (o.work / "vae.pt").string());
        if (fs::exists(o.work / "vae_opt.pt")) torch::load(vaeOpt, (o.work / "vae_opt.pt").string());
    } else if (!o.vaeFrom.empty()) {
        const auto file = io::SafetensorsFile::open((o.vaeFrom / "vae/diffusion_pytorch_model.safetensors").string());
        nn::loadWeights(*vae, file->all(), "vae", nn::LoadTarget{});
        // Its own steps, so that the export's metadata says how the autoencoder was made (and none are added).
        const auto& meta = file->metadata();
        const auto recorded = [&](const char* key, int fallback) { return meta.count(key) ? std::stoi(meta.at(key)) : fallback; };
        st.vaeStep = std::max(o.vaeSteps, recorded("dd_vae_steps", 0));
        st.decoderStep = std::max(o.decoderSteps, recorded("dd_decoder_steps", 0));
        saveModule(vae, o.work / "vae.pt");
        saveState(statePath, st);
        std::printf("autoencoder taken from %s\n", o.vaeFrom.c_str());
    }
    auto lastCheckpoint = Clock::now();
    auto due = [&] { return std::chrono::duration<double>(Clock::now() - lastCheckpoint).count() > o.checkpointMinutes * 60; };
    if (st.vaeStep < o.vaeSteps) {
        // The autoencoder changes, so latents encoded by an earlier one (and their scale) are stale.
        fs::remove(o.work / "latents.pt");
        st.scalingFactor = 0;
        vae->train();
        Running loss;
        while (st.vaeStep < o.vaeSteps) {
            const int step = st.vaeStep;
            for (auto& g : vaeOpt.param_groups()) g.options().set_lr(lrAt(o.vaeLr, step));
            std::vector<cv::Mat> imgs;
            for (int i = 0; i < o.vaeBatch; ++i) {
                cv::Mat img = shapes::render(shapes::randomScene(shapes::mix(o.seed * 1000003 + uint64_t(step) * 64 + i)));
                const int size = step >= o.vaeSteps - o.vaeFullSizeSteps ? img.cols : o.vaeSize;
                if (size != img.cols) cv::resize(img, img, cv::Size(size, size), 0, 0, cv::INTER_AREA);
                imgs.push_back(img);
            }
            const auto x = toTensor(imgs);
            auto gen = at::detail::createCPUGenerator(o.seed * 7919 + uint64_t(step));
            const auto dist = vae->encode(x);
            const auto z = dist.sample(gen);
            const auto y = vae->decode(z);
            const auto kl = 0.5 * (dist.mean.pow(2) + dist.logvar.exp() - 1 - dist.logvar).mean();
            const auto l = reconstructionLoss(y, x) + 1e-4 * kl;
            vaeOpt.zero_grad();
            l.backward();
            torch::nn::utils::clip_grad_norm_(vae->parameters(), 1.0);
            vaeOpt.step();
            loss.add(l.item<double>());
            ++st.vaeStep;
            if (st.vaeStep % 25 == 0) {
                const double m = loss.take();
                st.log.push_back({{"phase", "vae"}, {"step", st.vaeStep}, {"loss", m}, {"seconds", seconds()}});
                std::printf("vae  step %5d  loss %.4f  %.0f s\n", st.vaeStep, m, seconds());
                std::fflush(stdout);
            }
            if (due() || st.vaeStep == o.vaeSteps) {
                saveModule(vae, o.work / "vae.pt");
                saveOptimizer(vaeOpt, o.work / "vae_opt.pt");
                saveState(statePath, st);
                lastCheckpoint = Clock::now();
            }
        }
    }
    vae->eval();
    for (auto& p : vae->parameters()) p.set_requires_grad(false);
    {
        const double mae = writeReconstruction(vae, o.seed, o.work / "vae_reconstruction.png");
        std::printf("vae reconstruction at %d px: mean abs error %.2f / 255\n", shapes::kImageSize, mae);
        st.log.push_back({{"phase", "vae_eval"}, {"step", st.vaeStep}, {"mae_255", mae}, {"seconds", seconds()}});
    }

    // ---------------------------------------------------------------- phase 2: latents of a fixed scene set
    const fs::path latentPath = o.work / "latents.pt";
    torch::Tensor latents;
    if (fs::exists(latentPath)) torch::load(latents, latentPath.string());
    if (!latents.defined() || latents.size(0) != o.latentCount) {
        torch::NoGradGuard ng;
        std::vector<torch::Tensor> parts;
        for (int i = 0; i < o.latentCount; i += 32) {
            std::vector<cv::Mat> imgs;
            for (int k = i; k < std::min(o.latentCount, i + 32); ++k)
                imgs.push_back(shapes::render(shapes::randomScene(shapes::sceneSeed(o.seed, k))));
            parts.push_back(vae->encode(toTensor(imgs)).mean);
        }
        latents = torch::cat(parts);
        st.scalingFactor = 0;  // measured below on the new latents
        torch::save(latents, latentPath.string());
        std::printf("encoded %d scenes to latents in %.0f s\n", o.latentCount, seconds());
    }
    if (st.scalingFactor == 0) st.scalingFactor = 1.0 / latents.std().item<double>();
    std::printf("latent std %.4f → scaling_factor %.5f\n", 1.0 / st.scalingFactor, st.scalingFactor);
    latents = latents * st.scalingFactor;

    // Captions, phrased as people write (shapes_phrasing.h), some with a stray word of CLIP's vocabulary.
    const auto tok = text::ClipTokenizer::fromBundledVocab(o.vocab);
    std::vector<std::string> vocabulary;
    for (int id = 0; id < tok.vocabSize(); ++id) vocabulary.push_back(tok.token(id));
    const auto stray = shapes::strayWords(vocabulary);
    std::printf("%zu stray words\n", stray.size());
    auto ids = [&](const std::string& text) {
        const auto v = tok.encodePadded(text).ids;
        return torch::tensor(std::vector<int64_t>(v.begin(), v.end()), torch::kInt64);
    };

    // ---------------------------------------------------------------- phase 3: UNet + text encoder
    std::vector<torch::Tensor> params = unet->parameters();
    for (const auto& p : te->parameters()) params.push_back(p);
    // What the --init-from model was trained with, kept in the export's metadata.
    const fs::path initUnetPath = o.initFrom / "unet/diffusion_pytorch_model.safetensors";
    std::string initSteps, initPhrasing;
    if (!o.initFrom.empty()) {
        const auto meta = io::SafetensorsFile::open(initUnetPath.string())->metadata();
        initSteps = meta.count("dd_unet_steps") ? meta.at("dd_unet_steps") : "unknown";
        initPhrasing = meta.count("dd_phrasing") ? meta.at("dd_phrasing") : "plain";
    }
    torch::optim::AdamW opt(params, torch::optim::AdamWOptions(o.unetLr).weight_decay(0.0));
    if (fs::exists(o.work / "unet.pt")) {
        torch::load(unet, (o.work / "unet.pt").string());
        torch::load(te, (o.work / "text_encoder.pt").string());
        if (fs::exists(o.work / "unet_opt.pt")) torch::load(opt, (o.work / "unet_opt.pt").string());
    } else if (!o.initFrom.empty()) {
        nn::loadWeights(*unet, io::SafetensorsFile::open(initUnetPath.string())->all(), "unet", nn::LoadTarget{});
        nn::loadWeights(*te, io::SafetensorsFile::open((o.initFrom / "text_encoder/model.safetensors").string())->all(),
                        "text_encoder", nn::LoadTarget{});
        std::printf("UNet and text encoder start from %s\n", o.initFrom.c_str());
    }
    // SD's scaled-linear schedule: betas = linspace(√β0, √β1, 1000)².
    const auto betas = torch::linspace(std::sqrt(0.00085), std::sqrt(0.012), 1000, torch::kFloat64).pow(2);
    const auto alphasCumprod = (1 - betas).cumprod(0).to(torch::kFloat32);
    auto exportNow = [&] {
        train::ExportInfo info;
        info.scalingFactor = st.scalingFactor;
        info.metadata = {{"dd_recipe", "tools/train/train_embedded.cpp"}, {"dd_seed", std::to_string(o.seed)},
                         {"dd_vae_steps", std::to_string(st.vaeStep)}, {"dd_unet_steps", std::to_string(st.unetStep)},
                         {"dd_decoder_steps", std::to_string(st.decoderStep)},
                         {"dd_latents", std::to_string(o.latentCount)}, {"dd_unet_batch", std::to_string(o.unetBatch)},
                         {"dd_phrasing", o.variedPhrasing ? "varied" : "plain"}};
        if (!initSteps.empty()) {
            info.metadata["dd_init_unet_steps"] = initSteps;
            info.metadata["dd_init_phrasing"] = initPhrasing;
        }
        unet->eval();
        te->eval();
        train::exportDiffusersFolder(o.out, unet, vae, te, info, o.vocab);
        unet->train();
        te->train();
        std::printf("exported %s (unet step %d)\n", o.out.c_str(), st.unetStep);
        std::fflush(stdout);
    };
    unet->train();
    te->train();
    Running loss;
    while (st.unetStep < o.unetSteps) {
        const int step = st.unetStep;
        for (auto& g : opt.param_groups()) g.options().set_lr(unetLrAt(o, step));
        std::vector<int64_t> index;
        std::vector<torch::Tensor> tokens;
        for (int i = 0; i < o.unetBatch; ++i) {
            const auto sample = shapes::trainingSample(o.seed, step, i, o.latentCount, stray, o.variedPhrasing);
            index.push_back(sample.latent);
            tokens.push_back(ids(sample.caption));
        }
        const auto x0 = latents.index_select(0, torch::tensor(index));
        auto gen = at::detail::createCPUGenerator(o.seed * 104729 + uint64_t(step));
        // Offset noise: with SD's schedule x_T still holds √ᾱ_T ≈ 0.07 of the image, and a flat background's
        // colour is readable from the noise's per-channel mean at every step, so the caption was redundant.
        const auto noise = torch::randn(x0.sizes(), gen) + o.noiseOffset * torch::randn({x0.size(0), x0.size(1), 1, 1}, gen);
        const auto t = torch::randint(0, 1000, {o.unetBatch}, gen, torch::kInt64);
        const auto ab = alphasCumprod.index_select(0, t).view({-1, 1, 1, 1});
        const auto xt = ab.sqrt() * x0 + (1 - ab).sqrt() * noise;
        const auto context = te->forward(torch::stack(tokens)).lastHiddenState;
        const auto eps = unet->forward(xt, t.to(torch::kFloat32), context);
        // In epsilon terms, not knowing the picture costs only ᾱ/(1−ᾱ) at high noise, exactly where the caption
        // decides colour and shape; weighting by 1/ᾱ (capped, normalised per batch) makes that error count.
        // Once the caption is learned, the cap falls back towards the plain loss, whose low-noise steps draw edges.
        const double fall = std::clamp(double(step - o.detailFrom) / std::max(1, o.detailSteps), 0.0, 1.0);
        const auto w = (1 / ab.view({-1})).clamp_max(o.maxLossWeight - (o.maxLossWeight - 1) * fall);
        const auto l = (w * (eps - noise).pow(2).mean({1, 2, 3})).sum() / w.sum();
        opt.zero_grad();
        l.backward();
        torch::nn::utils::clip_grad_norm_(params, 1.0);
        opt.step();
        loss.add(l.item<double>());
        ++st.unetStep;
        if (st.unetStep % 25 == 0) {
            const double m = loss.take();
            st.log.push_back({{"phase", "unet"}, {"step", st.unetStep}, {"loss", m}, {"seconds", seconds()}});
            std::printf("unet step %5d  loss %.4f  %.0f s\n", st.unetStep, m, seconds());
            std::fflush(stdout);
        }
        if (due() || st.unetStep == o.unetSteps) {
            saveModule(unet, o.work / "unet.pt");
            saveModule(te, o.work / "text_encoder.pt");
            saveOptimizer(opt, o.work / "unet_opt.pt");
            saveState(statePath, st);
            exportNow();
            lastCheckpoint = Clock::now();
        }
    }

    // ---------------------------------------------------------------- phase 4: decoder polish
    // The encoder, and so every latent the UNet learned from, stays fixed; the decoder alone trains on at full
    // size, where small shapes' colours were still off. It may run in a separate process beside phase 3.
    if (st.decoderStep < o.decoderSteps) {
        std::vector<torch::Tensor> decoderParams = vae->decoder->parameters();
        for (const auto& p : vae->post_quant_conv->parameters()) decoderParams.push_back(p);
        for (auto& p : decoderParams) p.set_requires_grad(true);
        torch::optim::Adam decOpt(decoderParams, torch::optim::AdamOptions(o.vaeLr));
        if (fs::exists(o.work / "decoder_opt.pt")) torch::load(decOpt, (o.work / "decoder_opt.pt").string());
        vae->train();
        Running decLoss;
        while (st.decoderStep < o.decoderSteps) {
            const int step = st.decoderStep;
            for (auto& g : decOpt.param_groups()) g.options().set_lr(lrAt(o.vaeLr, step));
            std::vector<cv::Mat> imgs;
            for (int i = 0; i < o.vaeBatch; ++i)
                imgs.push_back(shapes::render(shapes::randomScene(shapes::mix(o.seed * 7777777 + uint64_t(step) * 64 + i))));
            const auto x = toTensor(imgs);
            auto gen = at::detail::createCPUGenerator(o.seed * 15485863 + uint64_t(step));
            torch::Tensor z;
            {
                torch::NoGradGuard ng;
                z = vae->encode(x).sample(gen);
            }
            const auto l = reconstructionLoss(vae->decode(z), x);
            decOpt.zero_grad();
            l.backward();
            torch::nn::utils::clip_grad_norm_(decoderParams, 1.0);
            decOpt.step();
            decLoss.add(l.item<double>());
            ++st.decoderStep;
            if (st.decoderStep % 25 == 0) {
                const double m = decLoss.take();
                st.log.push_back({{"phase", "decoder"}, {"step", st.decoderStep}, {"loss", m}, {"seconds", seconds()}});
                std::printf("dec  step %5d  loss %.4f  %.0f s\n", st.decoderStep, m, seconds());
                std::fflush(stdout);
            }
            if (due() || st.decoderStep == o.decoderSteps) {
                saveModule(vae, o.work / "vae.pt");
                saveOptimizer(decOpt, o.work / "decoder_opt.pt");
                saveState(statePath, st);
                lastCheckpoint = Clock::now();
            }
        }
        vae->eval();
        for (auto& p : decoderParams) p.set_requires_grad(false);
        const double mae = writeReconstruction(vae, o.seed, o.work / "decoder_reconstruction.png");
        std::printf("decoder reconstruction at %d px: mean abs error %.2f / 255\n", shapes::kImageSize, mae);
        st.log.push_back({{"phase", "decoder_eval"}, {"step", st.decoderStep}, {"mae_255", mae}, {"seconds", seconds()}});
    }
    exportNow();
    saveState(statePath, st);
    std::printf("done in %.0f s\n", seconds());
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "dd_train_embedded: %s\n", e.what());
    return 1;
}
