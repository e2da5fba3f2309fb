// One row of the GPU checks (tests/gpu/run_gpu_checks.sh, docs/gpu-checks.md): generates one image with a
// preset's plan on CUDA device 0, with the process's CUDA memory capped to the preset's budget, and prints
// one Markdown table row: preset, model, size, peak VRAM (caching allocator, largest stage), s/image, what
// the engine changed (out-of-memory fallbacks) or why it failed. Timing is reported, never asserted.
//   dd_gpu_preset_run --model DIR --preset 6gb [--steps 20] [--size 1024x1024] [--no-cap] [--label sdxl]
#include "core/memory/device_cap.h"
#include "core/memory/preset_settings.h"
#include "core/memory/shipped_presets.h"
#include "core/pipeline/engine.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

using namespace dd;

namespace {

std::string gb(int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB", double(bytes) / double(int64_t(1) << 30));
    return buf;
}

std::string oneLine(std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    std::replace(s.begin(), s.end(), '|', '/');
    return s;
}

} // namespace

int main(int argc, char** argv) {
    std::string model, presetName, label, size;
    int steps = 20;
    bool cap = true;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
            return argv[++i];
        };
        try {
            if (flag == "--model") model = value();
            else if (flag == "--preset") presetName = value();
            else if (flag == "--label") label = value();
            else if (flag == "--size") size = value();
            else if (flag == "--steps") steps = std::stoi(value());
            else if (flag == "--no-cap") cap = false;
            else throw std::invalid_argument("unknown option " + flag);
        } catch (const std::exception& e) {
            std::cerr << "dd_gpu_preset_run: " << e.what() << "\n";
            return 2;
        }
    }
    if (model.empty() || presetName.empty()) {
        std::cerr << "usage: dd_gpu_preset_run --model DIR --preset NAME [--steps N] [--size WxH] [--no-cap] [--label TEXT]\n";
        return 2;
    }
    if (label.empty()) label = model;
    std::string row = "| " + presetName + " | " + label + " | ";
    try {
        const auto it = &memory::shippedPreset(presetName);
        api::GenerationSettings s;
        memory::applyPreset(*it, s);
        s.model = model;
        s.width = it->width;
        s.height = it->height;
        if (!size.empty()) {
            s.width = std::stoi(size.substr(0, size.find('x')));
            s.height = std::stoi(size.substr(size.find('x') + 1));
        }
        s.steps = steps;
        s.seed = 1;
        s.sampler = "Euler";
        s.prompt = "a lighthouse on a cliff at sunset, oil painting";
        s.plan.device = "cuda:0";
        row += std::to_string(s.width) + "x" + std::to_string(s.height) + " | ";
        if (cap) memory::capDeviceMemory(0, it->budgetBytes);
        pipeline::Engine engine;
        api::CancelToken cancel;
        const auto r = engine.generate(s, cancel, nullptr);
        const auto& m = r.memory;
        const int64_t peak = std::max({m.load.device, m.encode.device, m.denoise.device, m.decode.device});
        double seconds = r.timings.encodeSeconds + r.timings.decodeSeconds;
        for (double t : r.timings.stepSeconds) seconds += t;
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.2f", seconds);
        std::string notes = r.environment.precision + ", " + r.environment.attention + ", offload " + r.environment.offload;
        for (const auto& w : r.warnings) notes += "; " + w;
        row += gb(peak) + " | " + secs + " | " + oneLine(notes) + " |";
        std::cout << row << std::endl;
        return 0;
    } catch (const std::exception& e) {
        if (std::count(row.begin(), row.end(), '|') < 4) row += "? | ";
        std::cout << row << "— | — | failed: " << oneLine(e.what()) << " |" << std::endl;
        return 1;
    }
}
