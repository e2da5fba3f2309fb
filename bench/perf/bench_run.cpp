// One timed generation in a fresh process, for bench/perf/vs_diffusers.py. Prints one JSON line with the same
// measures reference_run.py reports for diffusers: load → first step done, seconds per UNet step (median),
// VAE decode, end to end, peak RSS. Optionally writes the image's raw RGB (parity between precisions).
//   dd_bench_run --model DIR [--steps N] [--size PX] [--cfg X] [--sampler NAME] [--threads N]
//                [--plan JSON] [--raw FILE] [--mode txt2img|inpaint|hires]
// inpaint: benchInitImage repainted inside benchMask at strength 0.75; hires: made at half the size, then the
// hires fix to the size (Latent, denoising 0.6, as many steps). reference_run.py draws the same pictures.
#include "core/memory/memory_probe.h"
#include "core/pipeline/engine.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace {

using Clock = std::chrono::steady_clock;

struct FirstStep : dd::api::Observer {
    Clock::time_point start;
    double firstStepDone = 0;
    double firstStepUnix = 0;  // wall clock, so the harness can measure from process launch (dynamic loading too)
    bool wantsPreview(int, int) override { return false; }  // diffusers computes no preview either
    void onStep(int step, int, const dd::api::Image&) override {
        if (step != 1) return;
        firstStepDone = std::chrono::duration<double>(Clock::now() - start).count();
        firstStepUnix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    }
};

// The inpainting's picture and mask, pixel for pixel what reference_run.py makes with numpy.
dd::api::Image benchInitImage(int size) {
    dd::api::Image img{size, size, std::vector<uint8_t>(size_t(size) * size * 3)};
    for (int y = 0; y < size; ++y)
        for (int x = 0; x < size; ++x) {
            uint8_t* p = &img.rgb[3 * (size_t(y) * size + x)];
            p[0] = uint8_t(x * 255 / (size - 1));
            p[1] = uint8_t(y * 255 / (size - 1));
            p[2] = uint8_t((x + y) * 127 / (size - 1));
        }
    return img;
}

dd::api::Image benchMask(int size) {  // white over the middle half
    dd::api::Image img{size, size, std::vector<uint8_t>(size_t(size) * size * 3, 0)};
    for (int y = size / 4; y < 3 * size / 4; ++y)
        std::fill_n(img.rgb.begin() + 3 * (size_t(y) * size + size / 4), 3 * (size / 2), uint8_t(255));
    return img;
}

} // namespace

int main(int argc, char** argv) {
    const auto start = Clock::now();
    dd::api::GenerationSettings s;
    s.prompt = "a lighthouse on a cliff at sunset, oil painting";
    s.negativePrompt = "";
    s.sampler = "Euler";
    s.cfgScale = 7.5;
    s.promptSyntax = "reference";  // diffusers' own prompt handling: same work on both sides
    std::string raw, mode = "txt2img";
    int threads = 0;
    const char* usage = "usage: dd_bench_run --model DIR [--steps N] [--size PX] [--cfg X] [--sampler NAME] "
                        "[--threads N] [--plan JSON] [--raw FILE]\n";
    if (argc % 2 == 0) {  // options come in pairs: a lone --help would otherwise start a 20-step render
        std::cerr << usage;
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--model") s.model = v;
        else if (k == "--steps") s.steps = std::stoi(v);
        else if (k == "--size") s.width = s.height = std::stoi(v);
        else if (k == "--cfg") s.cfgScale = std::stod(v);
        else if (k == "--sampler") s.sampler = v;
        else if (k == "--threads") threads = std::stoi(v);
        else if (k == "--plan") s.plan = nlohmann::json::parse(v).get<dd::api::MemoryPlan>();
        else if (k == "--raw") raw = v;
        else if (k == "--mode") mode = v;
        else {
            std::cerr << "unknown option " << k << "\n";
            return 2;
        }
    }
    if (s.model.empty()) {
        std::cerr << usage;
        return 2;
    }
    if (threads > 0) at::set_num_threads(threads);
    dd::api::RunImages images;
    if (mode == "inpaint") {
        s.initImage = "bench-init", s.inpaint.mask = "bench-mask", s.inpaint.maskBlur = 0, s.strength = 0.75;
        images.init = benchInitImage(s.width);
        images.mask = benchMask(s.width);
    } else if (mode == "hires") {
        s.hires.enabled = true, s.hires.denoising = 0.6;
        s.width = s.height = s.width / 2;
    } else if (mode != "txt2img") {
        std::cerr << "unknown mode " << mode << " (txt2img, inpaint, hires)\n";
        return 2;
    }
    dd::pipeline::Engine engine;
    dd::api::CancelToken cancel;
    FirstStep observer;
    observer.start = start;
    const auto result = engine.generate(s, cancel, &observer, images);
    const double e2e = std::chrono::duration<double>(Clock::now() - start).count();
    auto steps = result.timings.stepSeconds;
    std::sort(steps.begin(), steps.end());
    // The engine restarts the kernel's peak (VmHWM) at every stage, so the run's peak is the largest stage peak;
    // the peak read now covers only the decode (and what came after it).
    const auto& m = result.memory;
    const int64_t peak = std::max({m.load.host, m.encode.host, m.denoise.host, m.decode.host,
                                   dd::memory::sampleMemory().hostPeak});
    if (!raw.empty()) {
        std::ofstream out(raw, std::ios::binary);
        const auto& px = result.images.at(0).rgb;
        out.write(reinterpret_cast<const char*>(px.data()), std::streamsize(px.size()));
    }
    nlohmann::json j = {{"impl", "diffusiondesk"},
                        {"load_to_first_step_s", observer.firstStepDone},
                        {"first_step_unix", observer.firstStepUnix},
                        {"load_s", result.timings.loadSeconds},
                        {"encode_s", result.timings.encodeSeconds},
                        {"step_s", steps.empty() ? 0.0 : steps[steps.size() / 2]},
                        {"decode_s", result.timings.decodeSeconds},
                        {"e2e_s", e2e},
                        {"peak_rss_bytes", peak},
                        {"threads", at::get_num_threads()}};
    std::cout << j.dump() << std::endl;
}
