// Any bytes as an X/Y/Z plot axis's values, read as text, numbers and whole numbers (A1111's lists and ranges):
// values, or std::invalid_argument naming the text (never a crash, never more than 1000 values).
#include "core/compare/xyz_plot.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    for (const auto& [numeric, integer] : {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}}) {
        try {
            const auto values = dd::compare::parseAxisValues(text, numeric, integer);
            if (values.empty() || values.size() > 1000) std::abort();
        } catch (const std::invalid_argument&) {
        }
    }
    return 0;
}
