// Any bytes as an A1111 styles.csv: styles that write and read back the same, or std::invalid_argument naming the
// line (never a crash).
#include "core/settings/styles.h"

#include <cstdlib>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto styles = dd::settings::readStylesCsv({reinterpret_cast<const char*>(data), size});
        // Names are read trimmed and empty ones skipped: every style read survives a write and a read.
        if (dd::settings::readStylesCsv(dd::settings::writeStylesCsv(styles)) != styles) std::abort();
        for (const auto& s : styles) (void)dd::settings::removeStyleText(s.prompt, dd::settings::applyStyleText(s.prompt, "x"));
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
