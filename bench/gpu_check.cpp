// The GPU checks' measurements (tests/gpu/run_gpu_checks.sh, docs/gpu-checks.md), one per call, each in a
// process of its own (a CUDA memory cap holds for the whole process). Each prints one Markdown table row and,
// with --json FILE, appends the same result as one JSON line. Timings are reported, never asserted.
//
//   dd_gpu_check preset      --model DIR --preset 6gb [--steps 20] [--size WxH] [--no-cap]
//   dd_gpu_check fp16        --model DIR [--size WxH]            UNet, VAE and a 4-step run in fp16 against fp32
//   dd_gpu_check offload     --model DIR --mode none|model|sequential|group [--steps N] [--size WxH] [--fp32]
//   dd_gpu_check oom         --model DIR --cap-gb X [--steps N] [--size WxH]    the out-of-memory ladder
//   dd_gpu_check determinism --model DIR [--device cuda:0|cpu] [--steps N] [--size WxH]   two runs, bit for bit
// Common: --label TEXT (the model's name in the row), --json FILE, --device (default cuda:0).
#include "core/compare/pixel_diff.h"
#include "core/memory/device_cap.h"
#include "core/memory/preset_settings.h"
#include "core/memory/shipped_presets.h"
#include "core/pipeline/engine.h"
#include "core/pipeline/memory_prediction.h"
#include "core/pipeline/sd_model.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace dd;

namespace {

struct Args {
    std::string check, model, preset, label, size, mode, device = "cuda:0", json;
    int steps = 20;
    double capGb = 0;
    bool cap = true;
    bool fp32 = false;  // offload: fp32 instead of fp16 (a CPU has no fast fp16)
};

std::string gb(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB", double(bytes) / double(int64_t(1) << 30));
    return buf;
}

std::string fixed(double v, const char* format = "%.2f") {
    char buf[32];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string oneLine(std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    std::replace(s.begin(), s.end(), '|', '/');
    return s;
}

// A table row of `cells` on stdout, and `record` (with the check's name) as one line of the JSON file.
void report(const Args& a, const std::vector<std::string>& cells, nlohmann::json record) {
    std::string row = "|";
    for (const auto& c : cells) row += " " + oneLine(c) + " |";
    std::cout << row << std::endl;
    if (a.json.empty()) return;
    record["check"] = a.check;
    record["model"] = a.label;
    std::ofstream(a.json, std::ios::app) << record.dump() << "\n";
}

api::GenerationSettings baseSettings(const Args& a) {
    api::GenerationSettings s;
    s.model = a.model;
    s.steps = a.steps;
    s.seed = 1;
    s.sampler = "Euler";
    s.prompt = "a lighthouse on a cliff at sunset, oil painting";
    s.width = s.height = pipeline::nativeImageSize(a.model);
    if (!a.size.empty()) {
        s.width = std::stoi(a.size.substr(0, a.size.find('x')));
        s.height = std::stoi(a.size.substr(a.size.find('x') + 1));
    }
    s.plan.device = a.device;
    return s;
}

std::string sizeOf(const api::GenerationSettings& s) { return std::to_string(s.width) + "x" + std::to_string(s.height); }

int64_t devicePeak(const api::GenerationResult& r) {
    const auto& m = r.memory;
    return std::max({m.load.device, m.encode.device, m.denoise.device, m.decode.device});
}

double imageSeconds(const api::GenerationResult& r) {
    double seconds = r.timings.encodeSeconds + r.timings.decodeSeconds;
    for (double t : r.timings.stepSeconds) seconds += t;
    return seconds;
}

std::string notesOf(const api::GenerationResult& r) {
    std::string notes = r.environment.precision + ", " + r.environment.attention + ", offload " + r.environment.offload;
    for (const auto& w : r.warnings) notes += "; " + w;
    return notes;
}

api::GenerationResult generate(const api::GenerationSettings& s) {
    pipeline::Engine engine;
    api::CancelToken cancel;
    return engine.generate(s, cancel, nullptr);
}

// compare::pixelDifference of two pictures that must have one size.
compare::PixelDifference differenceOf(const api::Image& a, const api::Image& b) {
    auto d = compare::pixelDifference(a, b);
    if (!d.sameSize) throw std::runtime_error("the two pictures differ in size");
    return d;
}

void usePrecision(api::MemoryPlan& plan, api::Precision p) { plan.unet = plan.textEncoder = plan.vae = p; }

// A preset's plan at its resolution inside its budget: peak against the budget and the prediction.
void presetCheck(const Args& a) {
    const auto& preset = memory::shippedPreset(a.preset);
    api::GenerationSettings s = baseSettings(a);
    memory::applyPreset(preset, s);
    s.plan.device = a.device;
    if (a.size.empty()) s.width = preset.width, s.height = preset.height;
    std::string predicted = "—";
    int64_t predictedBytes = 0;
    try {
        predictedBytes = pipeline::predictRun(s).peak();
        predicted = gb(predictedBytes);
    } catch (const std::exception&) {
    }
    if (a.cap) memory::capDeviceMemory(0, preset.budgetBytes);
    const auto r = generate(s);
    report(a, {a.preset, a.label, sizeOf(s), gb(devicePeak(r)), gb(preset.budgetBytes), predicted, fixed(imageSeconds(r)), notesOf(r)},
           {{"preset", a.preset}, {"size", sizeOf(s)}, {"peak_bytes", devicePeak(r)}, {"budget_bytes", preset.budgetBytes},
            {"predicted_bytes", predictedBytes}, {"seconds", imageSeconds(r)}, {"notes", notesOf(r)}});
}

// The UNet once and the VAE decode once on the same random inputs, then a 4-step run, each in fp16 and fp32.
void fp16Check(const Args& a) {
    torch::NoGradGuard noGrad;
    const torch::Device device(a.device);
    const api::GenerationSettings s = baseSettings(a);
    auto full = pipeline::loadSdModel(a.model, pipeline::Placement{.device = device});
    auto half = pipeline::loadSdModel(a.model, pipeline::Placement{.device = device, .unet = torch::kHalf,
                                                                   .textEncoder = torch::kHalf, .vae = torch::kHalf});
    const auto& cfg = full->unet->config();
    torch::manual_seed(0);
    const auto opts = torch::TensorOptions().device(device);
    const auto latents = torch::randn({1, cfg.inChannels, s.height / 8, s.width / 8}, opts);
    const auto context = torch::randn({1, 77, cfg.crossAttentionDim.front()}, opts);
    std::optional<nn::AddedCond> added;
    if (cfg.additionEmbedType == "text_time") {
        const int64_t pooled = cfg.projectionClassEmbeddingsInputDim - 6 * cfg.additionTimeEmbedDim;
        const double h = s.height, w = s.width;
        added = nn::AddedCond{torch::randn({1, pooled}, opts), torch::tensor({h, w, 0.0, 0.0, h, w}, opts).unsqueeze(0)};
    }
    auto addedHalf = added;
    if (addedHalf) addedHalf = nn::AddedCond{added->textEmbeds.to(torch::kHalf), added->timeIds.to(torch::kHalf)};
    const auto eps = full->unet->forward(latents, 500.0, context, added);
    const auto epsHalf = half->unet->forward(latents.to(torch::kHalf), 500.0, context.to(torch::kHalf), addedHalf).to(torch::kFloat);
    const double unetDiff = (eps - epsHalf).abs().max().item().toDouble();
    const double unetRel = unetDiff / std::max(1e-12, eps.abs().max().item().toDouble());
    const auto levels = [](const torch::Tensor& x) { return ((x.to(torch::kFloat).clamp(-1, 1) + 1) * 127.5).round(); };
    const auto image = levels(full->vae->decode(latents));
    const auto imageHalf = levels(half->vae->decode(latents.to(torch::kHalf)));
    const double vaeLevels = (image - imageHalf).abs().max().item().toDouble();
    const std::string vaeNote = half->placement.vae == torch::kHalf ? "" : " (VAE kept fp32: force_upcast)";
    full.reset();
    half.reset();
    api::GenerationSettings run = s;
    run.steps = 4;
    usePrecision(run.plan, api::Precision::FP32);
    const auto r32 = generate(run);
    usePrecision(run.plan, api::Precision::FP16);
    const auto r16 = generate(run);
    const auto diff = differenceOf(r32.images.at(0), r16.images.at(0));
    report(a, {"fp16 vs fp32", a.label, sizeOf(s), fixed(unetDiff, "%.3g") + " (" + fixed(100 * unetRel, "%.2f") + " %)",
               fixed(vaeLevels, "%.0f") + vaeNote, std::to_string(diff.maxAbs) + " (mean " + fixed(diff.meanAbs, "%.2f") + ")",
               fixed(imageSeconds(r32)) + " / " + fixed(imageSeconds(r16))},
           {{"size", sizeOf(s)}, {"unet_max_abs", unetDiff}, {"unet_relative", unetRel}, {"vae_max_levels", vaeLevels},
            {"image_max_levels", diff.maxAbs}, {"image_mean_levels", diff.meanAbs}, {"seconds_fp32", imageSeconds(r32)},
            {"seconds_fp16", imageSeconds(r16)}});
}

// One offload mode ("none": everything on the device) in fp16 without a cap: what it keeps on the device, and what it costs in time.
void offloadCheck(const Args& a) {
    api::GenerationSettings s = baseSettings(a);
    usePrecision(s.plan, a.fp32 ? api::Precision::FP32 : api::Precision::FP16);
    s.plan.offload = a.mode == "none" ? api::Offload::None : a.mode == "model" ? api::Offload::Model : a.mode == "sequential" ? api::Offload::Sequential
                   : a.mode == "group" ? api::Offload::Group
                   : throw std::invalid_argument("unknown offload mode '" + a.mode + "' (none, model, sequential, group)");
    s.plan.groupBlocks = 1;
    const auto r = generate(s);
    report(a, {a.mode, a.label, sizeOf(s), gb(devicePeak(r)), fixed(imageSeconds(r)), notesOf(r)},
           {{"mode", a.mode}, {"size", sizeOf(s)}, {"peak_bytes", devicePeak(r)}, {"seconds", imageSeconds(r)}, {"notes", notesOf(r)}});
}

// A plan that does not fit (fp16, nothing sliced, tiled or offloaded) under a cap: what the ladder did.
void oomCheck(const Args& a) {
    api::GenerationSettings s = baseSettings(a);
    usePrecision(s.plan, api::Precision::FP16);
    const int64_t cap = int64_t(a.capGb * double(int64_t(1) << 30));
    memory::capDeviceMemory(0, cap);
    std::string outcome = "fitted", notes;
    int64_t peak = 0;
    double seconds = 0;
    try {
        const auto r = generate(s);
        peak = devicePeak(r);
        seconds = imageSeconds(r);
        notes = notesOf(r);
        if (!r.warnings.empty()) outcome = "fitted after fallbacks";
    } catch (const std::exception& e) {
        outcome = "failed";
        notes = e.what();
    }
    report(a, {gb(cap), a.label, sizeOf(s), outcome, peak ? gb(peak) : "—", seconds ? fixed(seconds) : "—", notes},
           {{"cap_bytes", cap}, {"size", sizeOf(s)}, {"outcome", outcome}, {"peak_bytes", peak}, {"seconds", seconds}, {"notes", notes}});
}

// Determinism mode twice, each in a fresh engine: the pictures must be the same bytes.
void determinismCheck(const Args& a) {
    api::GenerationSettings s = baseSettings(a);
    s.deterministic = true;
    const auto first = generate(s);
    const auto second = generate(s);
    const auto diff = differenceOf(first.images.at(0), second.images.at(0));
    const bool identical = first.images.at(0).rgb == second.images.at(0).rgb;
    report(a, {a.device, a.label, sizeOf(s), identical ? "identical" : "DIFFERENT", std::to_string(diff.maxAbs),
               fixed(imageSeconds(first)) + " / " + fixed(imageSeconds(second))},
           {{"device", a.device}, {"size", sizeOf(s)}, {"identical", identical}, {"max_levels", diff.maxAbs},
            {"mean_levels", diff.meanAbs}, {"seconds", {imageSeconds(first), imageSeconds(second)}}});
}

Args parse(int argc, char** argv) {
    if (argc < 2) throw std::invalid_argument("name a check: preset, fp16, offload, oom or determinism");
    Args a;
    a.check = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string flag = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
            return argv[++i];
        };
        if (flag == "--model") a.model = value();
        else if (flag == "--preset") a.preset = value();
        else if (flag == "--label") a.label = value();
        else if (flag == "--size") a.size = value();
        else if (flag == "--mode") a.mode = value();
        else if (flag == "--device") a.device = value();
        else if (flag == "--json") a.json = value();
        else if (flag == "--steps") a.steps = std::stoi(value());
        else if (flag == "--cap-gb") a.capGb = std::stod(value());
        else if (flag == "--no-cap") a.cap = false;
        else if (flag == "--fp32") a.fp32 = true;
        else throw std::invalid_argument("unknown option " + flag);
    }
    if (a.model.empty()) throw std::invalid_argument("--model DIR is required");
    if (a.check == "preset" && a.preset.empty()) throw std::invalid_argument("preset needs --preset NAME");
    if (a.check == "offload" && a.mode.empty()) throw std::invalid_argument("offload needs --mode none|model|sequential|group");
    if (a.check == "oom" && a.capGb <= 0) throw std::invalid_argument("oom needs --cap-gb X");
    if (a.label.empty()) a.label = a.model;
    return a;
}

} // namespace

int main(int argc, char** argv) {
    Args a;
    try {
        a = parse(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "dd_gpu_check: " << e.what() << "\n"
                  << "usage: dd_gpu_check preset|fp16|offload|oom|determinism --model DIR [options] (see bench/gpu_check.cpp)\n";
        return 2;
    }
    try {
        if (a.check == "preset") presetCheck(a);
        else if (a.check == "fp16") fp16Check(a);
        else if (a.check == "offload") offloadCheck(a);
        else if (a.check == "oom") oomCheck(a);
        else if (a.check == "determinism") determinismCheck(a);
        else throw std::invalid_argument("unknown check '" + a.check + "' (preset, fp16, offload, oom, determinism)");
        return 0;
    } catch (const std::exception& e) {
        report(a, {a.check, a.label, "failed: " + std::string(e.what())}, {{"failed", e.what()}});
        return 1;
    }
}
