// Times a whole generation per stage (load, encode, each step, decode). Never pass/fail.
//   bench_generate [MODEL] [STEPS] [SIZE] [RUNS]     MODEL defaults to the built-in demo model.
#include "core/pipeline/engine.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

int main(int argc, char** argv) {
    dd::api::GenerationSettings s;
    s.model = argc > 1 ? argv[1] : dd::pipeline::kDemoModel;
    s.steps = argc > 2 ? std::stoi(argv[2]) : 20;
    s.width = s.height = argc > 3 ? std::stoi(argv[3]) : 64;
    const int runs = argc > 4 ? std::stoi(argv[4]) : 3;
    s.prompt = "a lighthouse on a cliff at sunset, oil painting";
    s.sampler = "Euler a";
    dd::pipeline::Engine engine;
    dd::api::CancelToken cancel;
    std::printf("model %s, %d steps, %dx%d, %d runs (first includes loading)\n", s.model.c_str(), s.steps, s.width, s.height, runs);
    for (int r = 0; r < runs; ++r) {
        const auto res = engine.generate(s, cancel, nullptr);
        const auto& t = res.timings;
        const double steps = std::accumulate(t.stepSeconds.begin(), t.stepSeconds.end(), 0.0);
        std::vector<double> sorted = t.stepSeconds;
        std::sort(sorted.begin(), sorted.end());
        std::printf("run %d: load %.3f s  encode %.3f s  steps %.3f s (median %.4f s/step)  decode %.3f s\n", r, t.loadSeconds,
                    t.encodeSeconds, steps, sorted[sorted.size() / 2], t.decodeSeconds);
    }
}
