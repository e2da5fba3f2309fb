#include "core/settings/wildcards.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace dd::settings {
namespace {

namespace fs = std::filesystem;

struct Found {
    size_t at = std::string_view::npos, length = 0;
    std::string name;
};

bool nameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '/' || c == ' '; }

// The first "__name__" from `from`: a name of letters, digits, _ - / and spaces, not starting with a space or '/',
// ended by the first "__" after its first character (no '.': a name never leaves its folders). A scan, not a regex:
// prompts can be long.
Found nextWildcard(std::string_view text, size_t from) {
    for (size_t i = text.find("__", from); i != std::string_view::npos; i = text.find("__", i + 1)) {
        const size_t first = i + 2;
        if (first >= text.size() || !nameChar(text[first]) || text[first] == ' ' || text[first] == '/') continue;
        for (size_t j = first + 1; j < text.size(); ++j) {
            if (text[j] == '_' && j + 1 < text.size() && text[j + 1] == '_')
                return {i, j + 2 - i, std::string(text.substr(first, j - first))};
            if (!nameChar(text[j])) break;
        }
    }
    return {};
}

std::vector<std::string> readWildcard(const std::string& name, const std::vector<std::string>& folders) {
    for (const auto& folder : folders) {
        const fs::path file = fs::path(folder) / (name + ".txt");
        std::ifstream in(file, std::ios::binary);
        if (!in) continue;
        std::stringstream text;
        text << in.rdbuf();
        auto lines = wildcardLines(text.str());
        if (lines.empty()) throw std::invalid_argument("wildcard __" + name + "__: " + file.string() + " has no line to pick");
        return lines;
    }
    std::string looked;
    for (const auto& folder : folders) looked += (looked.empty() ? "" : ", ") + folder;
    throw std::invalid_argument("wildcard __" + name + "__: no " + name + ".txt in " + (looked.empty() ? "any wildcard folder (none is set)" : looked));
}

std::string resolve(std::string_view prompt, std::mt19937_64& draw, const std::vector<std::string>& folders, int depth) {
    if (depth > 16) throw std::invalid_argument("wildcards nested more than 16 deep (a file that names itself?)");
    std::string out;
    size_t at = 0;
    for (Found w = nextWildcard(prompt, 0); w.at != std::string_view::npos; w = nextWildcard(prompt, at)) {
        out.append(prompt.substr(at, w.at - at));
        const auto lines = readWildcard(w.name, folders);
        out += resolve(lines[size_t(draw() % lines.size())], draw, folders, depth + 1);
        at = w.at + w.length;
    }
    out.append(prompt.substr(at));
    return out;
}

} // namespace

bool hasWildcards(std::string_view prompt) { return nextWildcard(prompt, 0).at != std::string_view::npos; }

std::vector<std::string> wildcardLines(std::string_view fileText) {
    if (fileText.substr(0, 3) == "\xEF\xBB\xBF") fileText.remove_prefix(3);
    std::vector<std::string> lines;
    size_t start = 0;
    while (start <= fileText.size()) {
        size_t end = fileText.find('\n', start);
        if (end == std::string_view::npos) end = fileText.size();
        std::string_view line = fileText.substr(start, end - start);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
        if (!line.empty() && line.front() != '#') lines.emplace_back(line);
        start = end + 1;
    }
    return lines;
}

std::string resolveWildcards(std::string_view prompt, int64_t seed, const std::vector<std::string>& folders) {
    std::mt19937_64 draw{uint64_t(seed)};  // std::mt19937_64's sequence is fixed by the standard: same lines anywhere
    return resolve(prompt, draw, folders, 0);
}

void resolveWildcards(api::GenerationSettings& s, const std::vector<std::string>& folders) {
    if (!hasWildcards(s.prompt) && !hasWildcards(s.negativePrompt)) {
        s.promptTemplate.clear();  // a restored run's templates are not this run's
        s.negativeTemplate.clear();
        return;
    }
    std::mt19937_64 draw{uint64_t(s.seed)};
    s.promptTemplate = s.prompt;
    s.negativeTemplate = s.negativePrompt;
    s.prompt = resolve(s.prompt, draw, folders, 0);
    s.negativePrompt = resolve(s.negativePrompt, draw, folders, 0);
}

} // namespace dd::settings
