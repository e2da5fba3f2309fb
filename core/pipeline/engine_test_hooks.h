#pragma once
// What the tests change in an engine (Engine::setTestHooks) to prove offloading and out-of-memory recovery on a
// machine without a GPU.
#include "core/memory/balanced.h"
#include "core/memory/preset.h"

#include <functional>
#include <string>
#include <vector>

namespace dd::pipeline {

struct EngineTestHooks {
    // Offload on the CPU too, with the compute side labelled "compute" in the ledger, so residency there can
    // be told apart from the home copies (normally offload means nothing on the CPU and is skipped).
    bool offloadOnCpu = false;
    // Plan device "balanced" places on these named devices instead of the CUDA devices: all of them the CPU in
    // fact, told apart by their names in the ledger, so the placement and its caps can be checked without GPUs.
    std::vector<memory::DeviceCap> balancedStandIns{};
    // Called before every attempt of a stage ("text encode", "denoise", "VAE decode"; attempts count from 0
    // per generate call); it may throw c10::OutOfMemoryError or std::bad_alloc, as a real allocation would.
    std::function<void(const std::string& stage, int attempt)> beforeStageAttempt{};
    // The presets the out-of-memory recovery steps down through (null: the shipped ones).
    const std::vector<memory::Preset>* presets = nullptr;
};

} // namespace dd::pipeline
