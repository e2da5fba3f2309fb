#pragma once
// Small formatting helpers for messages people read.
#include <cstdint>
#include <cstdio>
#include <string>

namespace dd::io {

// 9412 → "9,412": byte offsets in error messages are easier to read with separators.
inline std::string withThousands(uint64_t v) {
    std::string digits = std::to_string(v), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// 1536 → "1.5 KiB"
inline std::string humanBytes(uint64_t bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

} // namespace dd::io
