// Any bytes as a wildcard file and as a prompt: the file's lines, and a prompt whose wildcards (none can be found:
// no folder) are a std::invalid_argument naming them, or the prompt unchanged (never a crash).
#include "core/settings/wildcards.h"

#include <cstdlib>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (const auto& line : dd::settings::wildcardLines(text))
        if (line.empty() || line.front() == '#') std::abort();
    try {
        if (dd::settings::resolveWildcards(text, 1, {}) != text) std::abort();  // no wildcard: unchanged
        if (dd::settings::hasWildcards(text)) std::abort();
    } catch (const std::invalid_argument&) {
        if (!dd::settings::hasWildcards(text)) std::abort();
    }
    return 0;
}
