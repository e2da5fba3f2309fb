#pragma once
// Out-of-memory recovery for one generate call. A stage that runs out of memory (c10::OutOfMemoryError or
// std::bad_alloc) is retried with the next more frugal setting (core/memory/oom_retry), each change recorded as a
// warning; a change of preset restarts the run, since the networks must be placed again; when nothing more frugal
// is left, api::OutOfMemory says what was tried. Torch-free header.
#include "core/api/generation_settings.h"
#include "core/memory/oom_retry.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dd::pipeline {

// What the retries of one generate call remember across the restarts of its run.
struct RetryHistory {
    std::map<std::string, int> attempts;  // per stage name, counted from 0 (the test hook's numbering)
    std::vector<std::string> changes;     // the fallbacks taken, in order ("VAE tiling on", "preset 6gb")
};

class OutOfMemoryLadder {
public:
    // Thrown by attempt() when the next setting is another preset: run again with these settings.
    struct Restart {
        api::GenerationSettings settings;
        std::vector<std::string> warnings;  // the run's warnings so far, carried into the restarted run
    };
    // Called before every attempt; it may throw as a real allocation would (tests).
    using BeforeAttempt = std::function<void(const std::string& stage, int attempt)>;
    // The message when nothing is left, given the stage, the allocator's words and the changes tried (set once
    // a model is loaded; before, the message says the load failed).
    using Exhausted = std::function<std::string(memory::Stage, const std::string& error, const std::vector<std::string>& tried)>;

    OutOfMemoryLadder(const api::GenerationSettings& s, const memory::RetryContext& context, RetryHistory& history,
                      std::vector<std::string>& warnings, BeforeAttempt beforeAttempt = {});

    // Runs `body` until it does not run out of memory; after each failure the plan steps down and `applyPlan`
    // makes the stage use it (nothing to do for most stages).
    void attempt(memory::Stage stage, const std::function<void()>& body, const std::function<void()>& applyPlan = {});

    const api::MemoryPlan& plan() const { return m_state.plan; }
    bool vaeOnCpu() const { return m_state.vaeOnCpu; }
    // What the model adds to the context once it is loaded (tile sizes, attention heads).
    memory::RetryContext& context() { return m_context; }
    void onExhausted(Exhausted message) { m_exhausted = std::move(message); }

private:
    const api::GenerationSettings& m_settings;
    memory::FrugalState m_state;
    memory::RetryContext m_context;
    RetryHistory& m_history;
    std::vector<std::string>& m_warnings;
    BeforeAttempt m_beforeAttempt;
    Exhausted m_exhausted;
};

} // namespace dd::pipeline
