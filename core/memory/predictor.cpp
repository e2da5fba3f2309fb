// Peak memory per stage; the formula and where each constant comes from are in docs/memory.md.
#include "core/memory/predictor.h"


#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace dd::memory {
namespace {

// Live copies of the [rows, Lq, Lk] score matrix at the attention peak, measured with torch 2.15 on the CPU
// (docs/memory.md): classic/sliced/chunked hold the scores and their softmax (2.00); SDPA's math kernel also
// holds _safe_softmax's boolean mask (2.25), and on the CPU computes fp16/bf16 inputs in fp32.
constexpr double kClassicScoreCopies = 2.0;
constexpr double kMathScoreCopies = 2.25;
// [B', L, C]-sized tensors alive inside a transformer block: attention (input, norm, q, k, v, output) and the
// GEGLU feed-forward (8C projection, 4C gelu, 4C product, input, residual: ~18C).
constexpr double kAttentionWorkTensors = 6.0;
constexpr double kFeedForwardTensors = 18.0;
// [B', C, h, w]-sized tensors alive inside a resnet block of the UNet (input, norm, silu, conv, sum).
constexpr double kResnetTensors = 5.0;
// VAE decoder at full resolution: [B, Cin, H, W]-sized tensors alive in the last up block's first resnet
// (upsampled input, norm, silu, conv output, shortcut): about four at its peak, as measured on mid-sd1
// (test_prediction_vs_measured) once the other networks' weights were out of the decode stage.
constexpr double kVaeSpikeTensors = 4.0;
// Process RSS of the app before any model (libtorch, its thread pools, resources) and the CUDA context.
constexpr int64_t kCpuBaseline = int64_t(300) << 20;
constexpr int64_t kCudaContext = int64_t(600) << 20;

int64_t bytesOf(api::Precision p) { return p == api::Precision::FP32 ? 4 : 2; }

int64_t sum(const std::vector<TextEncoderShape>& tes, int64_t (*f)(const TextEncoderShape&)) {
    int64_t s = 0;
    for (const auto& t : tes) s += f(t);
    return s;
}

// Bytes of the score matrices alive at once for self-attention of `rows` = batch·heads rows over L tokens.
int64_t scoreBytes(const api::MemoryPlan& plan, bool cuda, int64_t batch, int64_t heads, int64_t lq, int64_t lk, int64_t dtypeBytes,
                   std::string* how) {
    const int64_t rows = batch * heads;
    switch (plan.attention) {
    case api::Attention::Sdpa:
        // Flash (CPU, CUDA fp16) and memory-efficient kernels work in blocks: no score matrix.
        *how = "sdpa";
        return 0;
    case api::Attention::SdpaMath:
        *how = "sdpa-math";
        return int64_t(kMathScoreCopies * double(rows * lq * lk * (cuda ? dtypeBytes : 4)));
    case api::Attention::Sliced: {
        const int64_t slice = std::min(rows, plan.attentionSliceSize > 0 ? int64_t(plan.attentionSliceSize)
                                                                         : std::max<int64_t>(heads / 2, 1));
        *how = "sliced (" + std::to_string(slice) + " rows)";
        return int64_t(kClassicScoreCopies * double(slice * lq * lk * dtypeBytes));
    }
    case api::Attention::Chunked: {
        const int64_t chunk = std::min<int64_t>(lq, std::max(plan.queryChunkSize, 1));
        *how = "chunked (" + std::to_string(chunk) + " queries)";
        return int64_t(kClassicScoreCopies * double(rows * chunk * lk * dtypeBytes));
    }
    }
    return 0;
}

std::string sizeLabel(int64_t w, int64_t h) { return std::to_string(w) + "x" + std::to_string(h); }

// The UNet's largest live working set during one forward.
// Skip connections kept from the down path for the up path: conv_in, every resnet/attention output, every
// downsampler output (diffusers down_block_res_samples). A ControlNet makes one residual per skip, same shapes.
int64_t skipElements(const UNetShape& u, int64_t h, int64_t w) {
    const size_t levels = u.blockOutChannels.size();
    int64_t skips = u.blockOutChannels.empty() ? 0 : u.blockOutChannels[0] * h * w;
    for (size_t l = 0; l < levels; ++l) {
        const int64_t px = (h >> l) * (w >> l);
        skips += u.layersPerBlock * u.blockOutChannels[l] * px;
        if (l + 1 < levels) skips += u.blockOutChannels[l] * ((h >> (l + 1)) * (w >> (l + 1)));
    }
    return skips;
}

StageEstimate unetActivations(const UNetShape& u, const PredictInput& in, int64_t f) {
    StageEstimate e;
    const int64_t s = bytesOf(in.plan.unet);
    const int64_t b = int64_t(in.batch) * (in.cfg ? 2 : 1);
    const int64_t h = in.height / f, w = in.width / f;
    const size_t levels = u.blockOutChannels.size();
    const int64_t skipBytes = skipElements(u, h, w) * b * s;
    for (size_t l = 0; l < levels; ++l) {
        const int64_t lh = h >> l, lw = w >> l, tokens = lh * lw, c = u.blockOutChannels[l];
        const int64_t tensor = b * tokens * c * s;
        // Up blocks see their input concatenated with a skip: up to twice the channels.
        int64_t work = int64_t(kResnetTensors * 2 * double(tensor));
        std::string at = "UNet resnet at " + sizeLabel(lw, lh);
        if (l < u.attention.size() && u.attention[l]) {
            std::string how;
            const int64_t scores = scoreBytes(in.plan, in.cuda, b, u.heads[l], tokens, tokens, s, &how);
            const int64_t attn = int64_t(kAttentionWorkTensors * double(tensor)) + scores;
            const int64_t ff = int64_t(kFeedForwardTensors * double(tensor));
            if (std::max(attn, ff) > work) {
                work = std::max(attn, ff);
                at = attn >= ff ? "attention at " + sizeLabel(lw, lh) + ", " + how : "feed-forward at " + sizeLabel(lw, lh);
            }
        }
        if (skipBytes + work > e.activations) {
            e.activations = skipBytes + work;
            e.peakAt = at;
        }
    }
    return e;
}

// The VAE decoder's largest live working set: the full-resolution conv spike or the mid-block attention.
StageEstimate vaeDecodeActivations(const VaeShape& v, const PredictInput& in, int64_t s) {
    StageEstimate e;
    const int64_t batch = in.plan.vaeSlicing ? 1 : in.batch;
    const int64_t f = v.scaleFactor();
    int64_t W = in.width, H = in.height;
    // diffusers tiles when either latent side exceeds the latent tile (sample_size / f).
    const bool tiled = in.plan.vaeTiling && (W > v.sampleSize || H > v.sampleSize);
    int64_t kept = 0;
    if (tiled) {
        // Every decoded tile is kept until the rows are stitched: about the image again in float, twice.
        kept = 2 * int64_t(in.batch) * 3 * W * H * s;
        W = std::min(W, v.sampleSize);
        H = std::min(H, v.sampleSize);
    }
    const size_t n = v.blockOutChannels.size();
    // Decoder channels run reversed; the last up block works at full resolution on the previous block's channels.
    const int64_t cin = n >= 2 ? v.blockOutChannels[1] : (n ? v.blockOutChannels[0] : 128);
    const int64_t spike = int64_t(kVaeSpikeTensors * double(batch * cin * W * H * s));
    std::string how;
    const int64_t lat = (W / f) * (H / f);
    const int64_t top = n ? v.blockOutChannels.back() : 512;
    const int64_t mid = v.midAttention ? scoreBytes(in.plan, in.cuda, batch, 1, lat, lat, s, &how) +
                                             int64_t(kAttentionWorkTensors * double(batch * lat * top * s))
                                       : 0;
    const int64_t image = int64_t(in.batch) * 3 * int64_t(in.width) * int64_t(in.height) * 4;
    e.activations = std::max(spike, mid) + kept + image;
    e.peakAt = spike >= mid ? "VAE decode at " + sizeLabel(W, H) + (tiled ? " (tile)" : "")
                            : "VAE attention at " + sizeLabel(W / f, H / f) + ", " + how;
    return e;
}

int64_t textEncoderActivations(const std::vector<TextEncoderShape>& tes, const PredictInput& in) {
    const int64_t s = bytesOf(in.plan.textEncoder);
    const int64_t rows = in.cfg ? 2 : 1;
    int64_t peak = 0;
    for (const auto& t : tes)
        peak = std::max(peak, rows * t.tokens * (6 * t.hiddenSize + 2 * t.intermediateSize) * s +
                                  2 * rows * t.heads * t.tokens * t.tokens * s);
    return peak;
}

// Weights on the compute device while a stage runs (offload moves components or blocks on CUDA only).
struct Placement {
    int64_t unet, vae, te;
};

int64_t offloadedShare(const api::MemoryPlan& plan, int64_t bytes) {
    switch (plan.offload) {
    case api::Offload::None:
    case api::Offload::Model: return bytes;
    // Sequential: one leaf module at a time, a few percent of a network. Group: the unmatched leaves plus two
    // groups of groupBlocks blocks (core/memory/offload); an SD UNet has ~11 groups, the largest ~1.5x the
    // average. Leaf level (groupBlocks 0): two leaves, as small as sequential.
    case api::Offload::Sequential: return bytes / 20;
    case api::Offload::Group: return plan.groupBlocks == 0 ? bytes / 20 : std::min(bytes, bytes * 3 * plan.groupBlocks / 11);
    }
    return bytes;
}

} // namespace

int64_t Prediction::peak() const { return std::max({load.total(), encode.total(), denoise.total(), decode.total()}); }

const char* Prediction::peakStage() const {
    const int64_t p = peak();
    if (denoise.total() == p) return "denoise";
    if (decode.total() == p) return "decode";
    if (encode.total() == p) return "encode";
    return "load";
}

Prediction predict(const ModelShape& shape, const PredictInput& in) {
    Prediction p;
    p.shape = shape;
    p.input = in;
    const auto& plan = in.plan;
    const int64_t baseline = in.baselineBytes >= 0 ? in.baselineBytes : (in.cuda ? kCudaContext : kCpuBaseline);
    const bool vaeFp32 = shape.vae.forceUpcast && plan.vaeUpcast;
    const int64_t vaeDtype = vaeFp32 ? 4 : bytesOf(plan.vae);
    const auto weights = networkWeightBytes(shape, plan);
    const int64_t unetW = weights.unet, vaeW = weights.vae,
                  teW = std::accumulate(weights.textEncoders.begin(), weights.textEncoders.end(), int64_t(0));
    const int64_t all = weights.total();
    const bool offload = in.cuda && plan.offload != api::Offload::None;

    for (auto* st : {&p.load, &p.encode, &p.denoise, &p.decode}) st->baseline = baseline;

    const int64_t params = shape.unet.params + shape.vae.params +
                           sum(shape.textEncoders, [](const TextEncoderShape& t) { return t.params; });
    // fp32 safetensors on the CPU are used in place (memory-mapped): a network's weights enter RSS when its
    // stage touches them and leave when the stage is done (the engine gives the pages back to the page cache:
    // nn::releaseMappedWeights). Converted weights (another precision, fp16 files, CUDA, fp8 stored copies) are
    // resident from the load on.
    const bool inPlace = in.weightsFromFile && !in.cuda && shape.fileBytes >= params * 4 * 95 / 100;
    const bool fp8 = !plan.fp8Storage.empty();
    auto touched = [&](api::Precision p, int64_t bytes) { return inPlace && p == api::Precision::FP32 ? bytes : 0; };
    const bool unetReadInPlace = touched(plan.unet, 1) > 0;
    // The UNet's fp8 copies are made at load, so an fp8 UNet is resident from then on, read in place or not.
    const int64_t lazyTe = touched(plan.textEncoder, teW), lazyUnet = unetReadInPlace && !fp8 ? unetW : 0,
                  lazyVae = vaeFp32 || plan.vae == api::Precision::FP32 ? (inPlace ? vaeW : 0) : 0;
    const int64_t resident = all - lazyTe - lazyUnet - lazyVae;

    // Load: networks are built without initial values and each file tensor is converted straight to its
    // dtype, its file pages given back once copied (low-memory loading): the peak is what is resident plus the
    // largest converted tensor, in the file's dtype and in its new one. Weights used in place convert nothing.
    // With offload on CUDA nothing is on the device yet.
    p.load.weights = offload ? 0 : resident;
    // fp8 storage: a UNet converted at load holds its load precision until the offload stores it in fp8 (leaf by
    // leaf, each loaded weight dropped as its copy is made), so the load peaks with the UNet at that precision.
    if (fp8 && !offload && !unetReadInPlace) p.load.weights += shape.unet.params * (bytesOf(plan.unet) - 1);
    const int64_t fileElement = params > 0 ? std::clamp<int64_t>((shape.fileBytes + params / 2) / params, 1, 4) : 4;
    int64_t transient = 0;
    auto converting = [&](int64_t largestTensor, int64_t lazyBytes, int64_t targetElement) {
        if (lazyBytes == 0) transient = std::max(transient, largestTensor * (fileElement + targetElement));
    };
    converting(shape.unet.largestTensor, lazyUnet, unetW / std::max<int64_t>(1, shape.unet.params));
    converting(shape.vae.largestTensor, lazyVae, vaeDtype);
    for (const auto& t : shape.textEncoders) converting(t.largestTensor, lazyTe, bytesOf(plan.textEncoder));
    p.load.activations = offload || in.cuda ? 0 : transient;
    p.load.peakAt = transient > 0 ? "converting the largest weight" : "weights memory-mapped";

    // Used in place, a token embedding is read only at the prompt's rows: its pages stay in the file.
    const int64_t untouchedEmbedding =
        lazyTe > 0 ? sum(shape.textEncoders, [](const TextEncoderShape& t) { return t.vocabSize * t.hiddenSize; }) * 4 : 0;
    p.encode.weights = offload ? (in.textCached ? 0 : offloadedShare(plan, teW)) : resident + lazyTe - untouchedEmbedding;
    p.encode.activations = in.textCached ? 0 : textEncoderActivations(shape.textEncoders, in);
    p.encode.peakAt = in.textCached ? "text encoding cached" : "text encoder";

    const int64_t f = shape.vae.scaleFactor();
    const auto unet = unetActivations(shape.unet, in, f);
    p.denoise.weights = offload ? offloadedShare(plan, unetW) : resident + lazyUnet;
    p.denoise.activations = unet.activations;
    p.denoise.peakAt = unet.peakAt;

    const auto vae = vaeDecodeActivations(shape.vae, in, vaeDtype);
    p.decode.weights = offload ? offloadedShare(plan, vaeW) : resident + lazyVae;
    p.decode.activations = vae.activations;
    p.decode.peakAt = vae.peakAt;

    // LoRAs are applied at the end of the load and stay for the run. Merged originals are kept where the networks
    // live (the host with offload); side paths are used where the networks compute.
    const int64_t loraOnDevice = offload && !in.loraSidePath ? 0 : in.loraBytes;
    if (!offload) p.load.weights += loraOnDevice;
    for (auto* st : {&p.encode, &p.denoise, &p.decode}) st->weights += loraOnDevice;

    // ControlNets: loaded with the model and kept, placed like the UNet (with offload on the device only while
    // denoising, the same share as the UNet's). During a UNet call the summed residuals (one tensor per skip, plus
    // the one being computed) are live beside the UNet's own skips.
    if (in.controlNetParams > 0) {
        const int64_t cnW = in.controlNetParams * bytesOf(plan.unet);
        if (offload) {
            p.denoise.weights += offloadedShare(plan, cnW);
        } else {
            for (auto* st : {&p.load, &p.encode, &p.denoise, &p.decode}) st->weights += cnW;
        }
        const int64_t rows = int64_t(in.batch) * (in.cfg ? 2 : 1);
        p.denoise.activations += 2 * skipElements(shape.unet, in.height / f, in.width / f) * rows * bytesOf(plan.unet);
    }

    // The refiner: under offload it lives at home like the base (the device sees one network at a time);
    // swapped, it takes the place of the base and its ControlNets (which leave with it) on the device for its stage
    // and the decode; else it sits beside them.
    if (in.refinerBytes > 0 && !offload) {
        const bool swapped = plan.swapModels && in.cuda && plan.fp8Storage.empty();
        if (swapped)
            for (auto* st : {&p.denoise, &p.decode}) st->weights = std::max(st->weights, in.refinerBytes);
        else
            for (auto* st : {&p.load, &p.encode, &p.denoise, &p.decode}) st->weights += in.refinerBytes;
    }
    return p;
}

NetworkWeightBytes networkWeightBytes(const ModelShape& shape, const api::MemoryPlan& plan) {
    NetworkWeightBytes w;
    w.unet = shape.unet.params * (plan.fp8Storage.empty() ? bytesOf(plan.unet) : 1);
    w.vae = shape.vae.params * (shape.vae.forceUpcast && plan.vaeUpcast ? 4 : bytesOf(plan.vae));
    for (const auto& t : shape.textEncoders) w.textEncoders.push_back(t.params * bytesOf(plan.textEncoder));
    return w;
}

int64_t NetworkWeightBytes::total() const {
    int64_t n = unet + vae;
    for (const int64_t t : textEncoders) n += t;
    return n;
}

int64_t modelWeightBytes(const ModelShape& shape, const api::MemoryPlan& plan) { return networkWeightBytes(shape, plan).total(); }

std::string formatGb(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", double(bytes) / double(int64_t(1) << 30));
    std::string s = buf;
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);  // "6 GB", not "6.0 GB"
    return s + " GB";
}

Fit fits(const Prediction& prediction, int64_t budgetBytes, const std::vector<Preset>* presets) {
    Fit fit;
    fit.needBytes = prediction.peak();
    fit.budgetBytes = budgetBytes;
    fit.fits = fit.needBytes <= budgetBytes;
    if (fit.fits) return fit;

    // Single toggles, each tried on its own; those that make it fit win, else those that help most.
    struct Option {
        const char* words;
        api::MemoryPlan plan;
    };
    std::vector<Option> options;
    const auto& base = prediction.input.plan;
    auto with = [&](const char* words, auto change) {
        api::MemoryPlan p = base;
        change(p);
        if (!(p == base)) options.push_back({words, p});
    };
    with("enable VAE tiling", [](api::MemoryPlan& p) { p.vaeTiling = true; });
    if (prediction.input.batch > 1) with("enable VAE slicing", [](api::MemoryPlan& p) { p.vaeSlicing = true; });
    if (base.attention != api::Attention::Sliced && base.attention != api::Attention::Sdpa)
        with("use sliced attention", [](api::MemoryPlan& p) { p.attention = api::Attention::Sliced; });
    if (prediction.input.cuda) {
        with("use fp16", [](api::MemoryPlan& p) { p.unet = p.textEncoder = p.vae = api::Precision::FP16; });
        with("enable model offload", [](api::MemoryPlan& p) { if (p.offload == api::Offload::None) p.offload = api::Offload::Model; });
    }
    std::vector<std::pair<int64_t, std::string>> helping;
    for (const auto& o : options) {
        PredictInput in = prediction.input;
        in.plan = o.plan;
        const int64_t need = predict(prediction.shape, in).peak();
        if (need < fit.needBytes) helping.emplace_back(need, o.words);
    }
    std::sort(helping.begin(), helping.end());
    for (const auto& [need, words] : helping)
        if (need <= budgetBytes || fit.suggestions.empty()) fit.suggestions.push_back(words);

    if (presets) {
        const Preset* best = nullptr;
        for (const auto& p : *presets)
            if (p.budgetBytes <= budgetBytes && (!best || p.budgetBytes > best->budgetBytes)) best = &p;
        if (best && !(best->plan == base)) {
            PredictInput in = prediction.input;
            in.plan = best->plan;
            if (predict(prediction.shape, in).peak() <= budgetBytes) fit.suggestions.push_back("switch to " + best->name);
        }
    }
    fit.message = "needs " + formatGb(fit.needBytes) + ", preset budget " + formatGb(budgetBytes);
    for (size_t i = 0; i < fit.suggestions.size(); ++i)
        fit.message += (i == 0 ? ": " : " or ") + fit.suggestions[i];
    return fit;
}

// --- configs -------------------------------------------------------------------------------------------

UNetShape shapeOf(const nn::UNetConfig& c, int64_t params) {
    UNetShape u;
    u.params = params;
    u.inChannels = c.inChannels;
    u.blockOutChannels = c.blockOutChannels;
    for (const auto& t : c.downBlockTypes) u.attention.push_back(t == "CrossAttnDownBlock2D");
    u.heads = c.heads;
    u.transformerLayers = c.transformerLayers;
    u.layersPerBlock = c.layersPerBlock.empty() ? 2 : c.layersPerBlock.front();
    u.crossAttentionDim = c.crossAttentionDim.empty() ? 768 : c.crossAttentionDim.front();
    return u;
}

VaeShape shapeOf(const nn::VaeConfig& c, int64_t params) {
    VaeShape v;
    v.params = params;
    v.blockOutChannels = c.blockOutChannels;
    v.latentChannels = c.latentChannels;
    v.sampleSize = c.sampleSize;
    v.forceUpcast = c.forceUpcast;
    v.midAttention = c.midBlockAddAttention;
    return v;
}

TextEncoderShape shapeOf(const nn::ClipTextConfig& c, int64_t params) {
    TextEncoderShape t;
    t.params = params;
    t.hiddenSize = c.hiddenSize;
    t.intermediateSize = c.intermediateSize;
    t.heads = c.numAttentionHeads;
    t.tokens = c.maxPositionEmbeddings;
    t.vocabSize = c.vocabSize;
    return t;
}

void to_json(nlohmann::json& j, const StageEstimate& e) {
    j = {{"total", e.total()}, {"baseline", e.baseline}, {"weights", e.weights}, {"activations", e.activations},
         {"peak_at", e.peakAt}};
}

void to_json(nlohmann::json& j, const Prediction& p) {
    j = {{"load", p.load}, {"encode", p.encode}, {"denoise", p.denoise}, {"decode", p.decode}, {"peak", p.peak()},
         {"peak_stage", p.peakStage()}};
}

} // namespace dd::memory
