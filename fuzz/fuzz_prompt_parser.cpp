// Any bytes as a prompt for A1111's emphasis grammar: parsed or rejected with PromptError (never a crash).
#include "core/text/prompt_parser.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        // Any weight is legal, -1 included: "(word:-1)" is valid A1111 syntax (the fuzzer found it).
        (void)dd::text::parsePromptAttention({reinterpret_cast<const char*>(data), size});
    } catch (const dd::text::PromptError&) {
    }
    return 0;
}
