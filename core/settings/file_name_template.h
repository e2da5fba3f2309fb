#pragma once
// Output file names from a template, as A1111's "Images filename pattern" does:
//
//   FileNameFields f{.date = "2025-01-31", .counter = 7, .seed = 42, .prompt = "a red car, at night"};
//   expandFileName("{date}-{counter:05}-{seed}-{prompt:3}", f)  ->  "2025-01-31-00007-42-a_red_car"
//
// Tokens: {date} (YYYY-MM-DD), {time} (HHMMSS), {counter[:WIDTH]} (zero-padded), {seed}, {prompt[:WORDS]}
// (first WORDS words, punctuation dropped), {model}, {width}, {height}, {steps}, {sampler}, {index} (image in
// the batch, 1-based). The result is one safe file name without extension: no '/', '\\', control characters or
// characters Windows refuses, no leading '.', not a reserved device name, at most 150 bytes, never empty.
// Pure function: the caller supplies the date and the counter (names stay reproducible in tests and batches).
#include <cstdint>
#include <string>
#include <string_view>

namespace dd::settings {

inline constexpr const char* kDefaultFileNameTemplate = "{date}-{counter:05}-{seed}-{prompt:6}";

struct FileNameFields {
    std::string date;   // "2025-01-31"
    std::string time;   // "120000"
    int64_t counter = 1;
    int64_t seed = 0;
    std::string prompt;
    std::string model;
    int width = 0, height = 0, steps = 0;
    std::string sampler;
    int index = 1;
};

// Throws std::invalid_argument naming an unknown token, an unclosed '{' or a bad width ("{counter:x}").
std::string expandFileName(std::string_view pattern, const FileNameFields& fields);

// Makes any text a safe single file name component (what expandFileName applies to the whole result).
std::string sanitizeFileName(std::string_view name);

// True when the template contains {counter}: only then can a name clash be resolved by counting up.
bool hasCounter(std::string_view pattern);

} // namespace dd::settings
