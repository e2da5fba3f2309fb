#pragma once
// Unicode primitives for the CLIP tokenizer and the A1111 prompt parser, from generated tables
// (tools/gen_unicode_tables.py). Pure functions, thread-safe.
#include <string>
#include <string_view>

namespace dd::text::unicode {

// UTF-8 → code points; a malformed byte sequence becomes U+FFFD per maximal bad subsequence.
std::u32string decodeUtf8(std::string_view s);
void appendUtf8(std::string& out, char32_t c);
std::string encodeUtf8(std::u32string_view s);

// Classes as the tokenizers library's Oniguruma regexes see them.
bool isLetter(char32_t c);     // \p{L}
bool isNumber(char32_t c);     // \p{N}
bool isSpace(char32_t c);      // \s

// Classes as Python's `re` sees them in str patterns (the A1111 prompt parser).
bool isPySpace(char32_t c);    // \s
bool isPyWord(char32_t c);     // \w
int pyDigitValue(char32_t c);  // \d → 0..9, else -1

// tokenizers' normalizers.NFC and normalizers.Lowercase (char-wise; U+0130 → "i\u0307").
std::u32string nfc(std::u32string_view s);
void appendLower(std::u32string& out, char32_t c);

} // namespace dd::text::unicode
