// Any bytes as a prompt for A1111's prompt editing grammar: a schedule of texts whose steps rise to the last, or the
// prompt as written (never a crash, never a hang).
#include "core/text/prompt_schedule.h"

#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const int steps = 1 + data[0] % 40;  // the first byte picks the steps; alternation lists each of them
    const std::string_view prompt(reinterpret_cast<const char*>(data + 1), size - 1);
    const auto schedule = dd::text::promptSchedule(prompt, steps, data[0] & 0x80 ? steps : 0);
    if (schedule.empty() || schedule.back().lastStep != steps) std::abort();
    for (size_t i = 1; i < schedule.size(); ++i)
        if (schedule[i].lastStep <= schedule[i - 1].lastStep) std::abort();
    (void)dd::text::hasPromptEditing(prompt);
    return 0;
}
