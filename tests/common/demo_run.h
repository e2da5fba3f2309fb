#pragma once
// What the engine tests on the built-in demo model start from: a two-step run of one prompt on the CPU, and one
// generate call nobody cancels. Each test sets what it varies (seed, sampler, size, plan) on top.
#include "core/pipeline/engine.h"

namespace dd::test {

inline api::GenerationSettings demoSettings(int size = 64) {
    api::GenerationSettings s;
    s.model = pipeline::kDemoModel;
    s.prompt = "a lighthouse at dusk";
    s.negativePrompt = "blurry";
    s.steps = 2;
    s.width = s.height = size;
    s.plan.device = "cpu";
    // A fixed count: the tests compare runs bit for bit, and a count that follows the machine's load (the
    // default) may split sums differently from one run to the next (docs/cli.md).
    s.plan.threads = 2;
    return s;
}

inline api::GenerationResult generateOnce(pipeline::Engine& e, const api::GenerationSettings& s) {
    api::CancelToken cancel;
    return e.generate(s, cancel, nullptr);
}

} // namespace dd::test
