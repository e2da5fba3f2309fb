// Ref: tokenizers normalizers NFC/Lowercase (Rust crates unicode-normalization-alignments and
// core::char::to_lowercase) and the Oniguruma classes of tokenizers' Regex; tables are probed
// from the pinned tokenizers by tools/gen_unicode_tables.py, which also proves the NFC below.
#include "core/text/unicode.h"

#include <algorithm>
#include <iterator>

namespace dd::text::unicode {
namespace {

struct CpRange {
    char32_t first, last;
};
struct CpTriple {
    char32_t a, b;
    int c;
};

#include "core/text/unicode_tables.inc"

template <size_t N>
bool inRanges(const CpRange (&table)[N], char32_t c) {
    auto it = std::upper_bound(std::begin(table), std::end(table), c,
                               [](char32_t v, const CpRange& r) { return v < r.first; });
    return it != std::begin(table) && c <= std::prev(it)->last;
}

template <size_t N>
const CpTriple* findRun(const CpTriple (&table)[N], char32_t c) {
    auto it = std::upper_bound(std::begin(table), std::end(table), c,
                               [](char32_t v, const CpTriple& r) { return v < r.a; });
    if (it == std::begin(table) || c > std::prev(it)->b) return nullptr;
    return &*std::prev(it);
}

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

int ccc(char32_t c) {
    const CpTriple* run = findRun(kCcc, c);
    return run ? run->c : 0;
}

void appendDecomposed(std::u32string& out, char32_t c) {
    if (c >= kSBase && c < kSBase + kSCount) {
        const char32_t s = c - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount) out.push_back(kTBase + s % kTCount);
        return;
    }
    auto it = std::lower_bound(std::begin(kDecompIndex), std::end(kDecompIndex), c,
                               [](const CpTriple& r, char32_t v) { return r.a < v; });
    if (it == std::end(kDecompIndex) || it->a != c) {
        out.push_back(c);
        return;
    }
    out.append(kDecompData + it->b, static_cast<size_t>(it->c));
}

char32_t compose(char32_t a, char32_t b) {
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
        return a + (b - kTBase);
    auto it = std::lower_bound(std::begin(kCompose), std::end(kCompose), std::pair{a, b},
                               [](const CpTriple& r, std::pair<char32_t, char32_t> v) {
                                   return r.a < v.first || (r.a == v.first && r.b < v.second);
                               });
    if (it != std::end(kCompose) && it->a == a && it->b == b) return static_cast<char32_t>(it->c);
    return 0;
}

} // namespace

bool isLetter(char32_t c) { return inRanges(kLetters, c); }
bool isNumber(char32_t c) { return inRanges(kNumbers, c); }
bool isSpace(char32_t c) { return inRanges(kSpaces, c); }
bool isPySpace(char32_t c) { return inRanges(kPySpaces, c); }
bool isPyWord(char32_t c) { return inRanges(kPyWord, c); }

int pyDigitValue(char32_t c) {
    const CpTriple* run = findRun(kPyDigits, c);
    return run ? run->c + static_cast<int>(c - run->a) : -1;
}

void appendLower(std::u32string& out, char32_t c) {
    if (c == 0x130) {
        out += U"i\u0307";
        return;
    }
    auto it = std::lower_bound(std::begin(kLowerSingle), std::end(kLowerSingle), c,
                               [](const CpTriple& r, char32_t v) { return r.a < v; });
    out.push_back(it != std::end(kLowerSingle) && it->a == c ? it->b : c);
}

std::u32string nfc(std::u32string_view s) {
    std::u32string d;
    d.reserve(s.size());
    for (char32_t c : s) appendDecomposed(d, c);
    // Canonical ordering: a stable sort of each run of non-starters by combining class.
    for (size_t i = 1; i < d.size(); ++i) {
        const int cc = ccc(d[i]);
        if (cc == 0) continue;
        for (size_t j = i; j > 0 && ccc(d[j - 1]) > cc; --j) std::swap(d[j - 1], d[j]);
    }
    std::u32string out;
    out.reserve(d.size());
    size_t starter = std::u32string::npos;
    int lastCc = -1; // -1: nothing since the starter
    for (char32_t c : d) {
        const int cc = ccc(c);
        if (starter != std::u32string::npos && lastCc < cc) {
            if (char32_t composite = compose(out[starter], c)) {
                out[starter] = composite;
                continue;
            }
        }
        if (cc == 0) {
            starter = out.size();
            lastCc = -1;
        } else {
            lastCc = cc;
        }
        out.push_back(c);
    }
    return out;
}

std::u32string decodeUtf8(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const auto b0 = static_cast<unsigned char>(s[i]);
        int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
        char32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
        int got = 1;
        for (; len > 1 && got < len && i + got < s.size(); ++got) {
            const auto b = static_cast<unsigned char>(s[i + got]);
            if ((b & 0xC0) != 0x80) break;
            c = (c << 6) | (b & 0x3F);
        }
        const bool overlong = (len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000);
        if (len == 0 || got != len || overlong || c > 0x10FFFF || (c >= 0xD800 && c < 0xE000)) {
            out.push_back(0xFFFD);
            i += std::max(1, len == 0 ? 1 : got);
            continue;
        }
        out.push_back(c);
        i += static_cast<size_t>(len);
    }
    return out;
}

void appendUtf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (c >> 18)));
        out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
}

std::string encodeUtf8(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) appendUtf8(out, c);
    return out;
}

} // namespace dd::text::unicode
