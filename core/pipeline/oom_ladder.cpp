#include "core/pipeline/oom_ladder.h"

#include "core/api/errors.h"
#include "core/memory/release_memory.h"

#include <c10/util/Exception.h>

#include <new>

namespace dd::pipeline {

OutOfMemoryLadder::OutOfMemoryLadder(const api::GenerationSettings& s, const memory::RetryContext& context,
                                     RetryHistory& history, std::vector<std::string>& warnings, BeforeAttempt beforeAttempt)
    : m_settings(s), m_state{s.plan, s.preset, false}, m_context(context), m_history(history), m_warnings(warnings),
      m_beforeAttempt(std::move(beforeAttempt)) {}

void OutOfMemoryLadder::attempt(memory::Stage stage, const std::function<void()>& body, const std::function<void()>& applyPlan) {
    const std::string name = memory::stageName(stage);
    for (;;) {
        std::string error;
        try {
            const int attempt = m_history.attempts[name]++;
            if (m_beforeAttempt) m_beforeAttempt(name, attempt);
            body();
            return;
        } catch (const c10::OutOfMemoryError& e) {
            error = e.what_without_backtrace();
        } catch (const std::bad_alloc&) {
            error = "a host memory allocation failed";
        }
        memory::releaseFreedMemory();  // what the failed attempt held is gone with its stack
        const auto next = memory::nextFallback(stage, m_state, m_context);
        if (!next) {
            const std::string firstLine = error.substr(0, error.find('\n'));
            // Without a model (its load failed) there is nothing to say what a stage would need.
            throw api::OutOfMemory(m_exhausted ? m_exhausted(stage, error, m_history.changes)
                                               : "out of memory while loading the model and no lower preset is left to try (" + firstLine + ")");
        }
        m_history.changes.push_back(next->change);
        m_warnings.push_back("out of memory in " + name + ": retried with " + next->change);
        if (next->presetSwitch) {
            auto restarted = m_settings;
            restarted.plan = next->state.plan;
            restarted.preset = next->state.preset;
            throw Restart{restarted, m_warnings};
        }
        m_state = next->state;
        if (applyPlan) applyPlan();
    }
}

} // namespace dd::pipeline
