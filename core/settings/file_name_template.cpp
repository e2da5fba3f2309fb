// Ref: AUTOMATIC1111 modules/images.py (FilenameGenerator, sanitize_filename_part: invalid characters,
// reserved names, length cap) — the same ideas, our own token set.
#include "core/settings/file_name_template.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

namespace dd::settings {
namespace {

constexpr std::size_t kMaxNameBytes = 150;

bool forbidden(unsigned char c) {
    return c < 0x20 || c == 0x7F || std::string_view("/\\:*?\"<>|").find(char(c)) != std::string_view::npos;
}

// Cuts at a UTF-8 character boundary.
std::string cutUtf8(std::string s, std::size_t max) {
    if (s.size() <= max) return s;
    std::size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    s.resize(n);
    return s;
}

std::string promptWords(std::string_view prompt, int words) {
    std::string out, word;
    int taken = 0;
    auto flush = [&] {
        if (!word.empty() && taken < words) {
            if (!out.empty()) out += '_';
            out += word;
            ++taken;
        }
        word.clear();
    };
    for (const char ch : prompt) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c) || c >= 0x80 || c == '-' || c == '_') word += ch; else flush();
        if (taken >= words) break;
    }
    flush();
    return out;
}

int parseWidth(std::string_view token, std::string_view arg, int max) {
    if (arg.empty() || arg.size() > 3 || !std::all_of(arg.begin(), arg.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw std::invalid_argument("file name template: {" + std::string(token) + ":" + std::string(arg) +
                                    "} needs a number after ':'");
    return std::min(std::stoi(std::string(arg)), max);
}

} // namespace

std::string sanitizeFileName(std::string_view raw) {
    std::string s;
    for (const char ch : raw) s += forbidden(static_cast<unsigned char>(ch)) ? '_' : ch;
    // Leading dots would hide the file (and "." / ".." are not names); trailing dots and blanks break Windows.
    while (!s.empty() && (s.front() == '.' || s.front() == ' ')) s.erase(s.begin());
    std::string upper;
    for (const char c : s.substr(0, s.find('.'))) upper += char(std::toupper(static_cast<unsigned char>(c)));
    static constexpr std::array<const char*, 22> kReserved{"CON",  "PRN",  "AUX",  "NUL",  "COM1", "COM2", "COM3", "COM4",
                                                           "COM5", "COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2", "LPT3",
                                                           "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9"};
    while (!upper.empty() && (upper.back() == ' ')) upper.pop_back();
    if (std::find(kReserved.begin(), kReserved.end(), upper) != kReserved.end()) s = "_" + s;
    // The cap comes last, so the '_' of a reserved name can never push a name past it (fuzz_file_name_template).
    s = cutUtf8(s, kMaxNameBytes);
    while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
    if (s.empty()) return "image";
    return s;
}

bool hasCounter(std::string_view pattern) { return pattern.find("{counter") != std::string_view::npos; }

std::string expandFileName(std::string_view pattern, const FileNameFields& f) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size();) {
        if (pattern[i] != '{') {
            out += pattern[i++];
            continue;
        }
        const auto close = pattern.find('}', i);
        if (close == std::string_view::npos) throw std::invalid_argument("file name template: '{' without '}'");
        const std::string_view body = pattern.substr(i + 1, close - i - 1);
        const auto colon = body.find(':');
        const std::string_view token = body.substr(0, colon);
        const std::string_view arg = colon == std::string_view::npos ? std::string_view() : body.substr(colon + 1);
        if (token == "counter") {
            const std::string n = std::to_string(f.counter);
            const int width = arg.empty() ? 0 : parseWidth(token, arg, 12);
            out += std::string(std::size_t(std::max<int>(0, width - int(n.size()))), '0') + n;
        } else if (token == "prompt") {
            out += promptWords(f.prompt, arg.empty() ? 8 : parseWidth(token, arg, 64));
        } else if (!arg.empty()) {
            throw std::invalid_argument("file name template: {" + std::string(token) + "} takes no ':' argument");
        } else if (token == "date") out += f.date;
        else if (token == "time") out += f.time;
        else if (token == "seed") out += std::to_string(f.seed);
        else if (token == "model") out += f.model;
        else if (token == "width") out += std::to_string(f.width);
        else if (token == "height") out += std::to_string(f.height);
        else if (token == "steps") out += std::to_string(f.steps);
        else if (token == "sampler") out += f.sampler;
        else if (token == "index") out += std::to_string(f.index);
        else
            throw std::invalid_argument("file name template: unknown token {" + std::string(body.substr(0, 40)) +
                                        "} (known: date, time, counter, seed, prompt, model, width, height, steps, sampler, index)");
        i = close + 1;
    }
    return sanitizeFileName(out);
}

} // namespace dd::settings
