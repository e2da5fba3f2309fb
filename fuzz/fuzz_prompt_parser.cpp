// Any bytes as a prompt for A1111's emphasis grammar: parsed or rejected with PromptError (never a crash).
#include "core/text/prompt_parser.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto parts = dd::text::parsePromptAttention({reinterpret_cast<const char*>(data), size});
        for (const auto& p : parts)
            if (p.weight == -1 && p.text != "BREAK") __builtin_trap();
    } catch (const dd::text::PromptError&) {
    }
    return 0;
}
