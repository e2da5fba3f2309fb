#include "core/settings/styles.h"

#include "core/io/app_data.h"
#include "core/io/atomic_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dd::settings {
namespace {

std::string_view trimmed(std::string_view s) {
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

// RFC 4180 rows, as Python's csv module reads them: quoted fields may hold commas, "" and line breaks.
std::vector<std::vector<std::string>> csvRows(std::string_view text) {
    std::vector<std::vector<std::string>> rows(1);
    std::string field;
    bool quoted = false, fieldStarted = false;
    int line = 1, quoteLine = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
            else if (c == '"') quoted = false;
            else field += c, line += c == '\n';
            continue;
        }
        if (c == '"' && !fieldStarted) {
            quoted = fieldStarted = true, quoteLine = line;
        } else if (c == ',') {
            rows.back().push_back(std::move(field)), field.clear(), fieldStarted = false;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
            rows.back().push_back(std::move(field)), field.clear(), fieldStarted = false;
            rows.emplace_back();
            ++line;
        } else {
            field += c, fieldStarted = true;
        }
    }
    if (quoted) throw std::invalid_argument("styles.csv line " + std::to_string(quoteLine) + ": a quote is never closed");
    if (fieldStarted || !rows.back().empty()) rows.back().push_back(std::move(field));
    if (rows.back().empty()) rows.pop_back();
    return rows;
}

std::string csvField(const std::string& v) {
    if (v.find_first_of(",\"\r\n") == std::string::npos && trimmed(v) == v) return v;
    std::string out = "\"";
    for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

} // namespace

std::vector<PromptStyle> readStylesCsv(std::string_view text) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a byte-order mark from a spreadsheet
    const auto rows = csvRows(text);
    if (rows.empty()) return {};
    int name = -1, prompt = -1, negative = -1;
    for (size_t c = 0; c < rows[0].size(); ++c) {
        const std::string_view h = trimmed(rows[0][c]);
        if (h == "name") name = int(c);
        else if (h == "prompt" || h == "text") prompt = int(c);  // A1111's first versions called it "text"
        else if (h == "negative_prompt") negative = int(c);
    }
    if (name < 0) throw std::invalid_argument("styles.csv line 1: no \"name\" column (the header must name name, prompt, negative_prompt)");
    std::vector<PromptStyle> styles;
    for (size_t r = 1; r < rows.size(); ++r) {
        const auto cell = [&](int c) { return c >= 0 && size_t(c) < rows[r].size() ? rows[r][size_t(c)] : std::string(); };
        PromptStyle s{std::string(trimmed(cell(name))), cell(prompt), cell(negative)};
        if (!s.name.empty()) styles.push_back(std::move(s));
    }
    return styles;
}

std::string defaultStylesPath() { return (io::appDataDir() / "styles.csv").string(); }

std::vector<PromptStyle> readStylesFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (!std::filesystem::exists(path)) return {};
        throw std::invalid_argument(path + ": cannot be read");
    }
    std::stringstream text;
    text << in.rdbuf();
    try {
        return readStylesCsv(text.str());
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(path + ": " + e.what());
    }
}

void writeStylesFile(const std::string& path, const std::vector<PromptStyle>& styles) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    const std::string text = writeStylesCsv(styles);
    io::writeFileAtomically(path, [&](std::ostream& out) { out << text; });
}

std::string writeStylesCsv(const std::vector<PromptStyle>& styles) {
    std::string out = "name,prompt,negative_prompt\r\n";
    for (const auto& s : styles) out += csvField(s.name) + "," + csvField(s.prompt) + "," + csvField(s.negativePrompt) + "\r\n";
    return out;
}

std::vector<PromptStyle> mergeStyles(std::vector<PromptStyle> styles, const std::vector<PromptStyle>& incoming) {
    for (const auto& in : incoming) {
        auto same = std::find_if(styles.begin(), styles.end(), [&](const PromptStyle& s) { return s.name == in.name; });
        if (same != styles.end()) *same = in;
        else styles.push_back(in);
    }
    return styles;
}

std::string applyStyleText(std::string_view styleText, std::string_view prompt) {
    const size_t at = styleText.find("{prompt}");
    if (at != std::string_view::npos) {
        std::string out(styleText);
        for (size_t p = out.find("{prompt}"); p != std::string::npos; p = out.find("{prompt}", p + prompt.size()))
            out.replace(p, 8, prompt);
        return out;
    }
    const std::string_view a = trimmed(prompt), b = trimmed(styleText);
    if (a.empty() || b.empty()) return std::string(a.empty() ? b : a);
    return std::string(a) + ", " + std::string(b);
}

std::optional<std::string> removeStyleText(std::string_view styleText, std::string_view prompt) {
    const std::string_view p = trimmed(prompt), style = trimmed(styleText);
    if (style.empty()) return std::nullopt;
    const size_t at = style.find("{prompt}");
    if (at != std::string_view::npos) {
        const std::string_view left = style.substr(0, at), right = style.substr(at + 8);
        if (p.size() < left.size() + right.size() || p.substr(0, left.size()) != left || p.substr(p.size() - right.size()) != right)
            return std::nullopt;
        return std::string(p.substr(left.size(), p.size() - left.size() - right.size()));
    }
    if (p.size() < style.size() || p.substr(p.size() - style.size()) != style) return std::nullopt;
    std::string rest(p.substr(0, p.size() - style.size()));
    if (rest.size() >= 2 && rest.compare(rest.size() - 2, 2, ", ") == 0) rest.resize(rest.size() - 2);
    return rest;
}

} // namespace dd::settings
