#include "core/library/search.h"

#include <cctype>
#include <charconv>
#include <optional>

namespace dd::library {
namespace {

// Splits on spaces outside double quotes; quotes are removed ("sampler:"DPM++ 2M"" → sampler:DPM++ 2M).
std::vector<std::string> tokens(std::string_view s) {
    std::vector<std::string> out;
    std::string current;
    bool quoted = false, any = false;
    for (char c : s) {
        if (c == '"') {
            quoted = !quoted;
            any = true;
        } else if (!quoted && std::isspace(static_cast<unsigned char>(c))) {
            if (any) out.push_back(current);
            current.clear();
            any = false;
        } else {
            current += c;
            any = true;
        }
    }
    if (any) out.push_back(current);
    return out;
}

std::optional<int64_t> integer(std::string_view s) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

// "2026-12-01": four digits, two, two, with a valid month and day; the index compares dates as text.
bool isDate(std::string_view s) {
    if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
    for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    const int month = (s[5] - '0') * 10 + (s[6] - '0'), day = (s[8] - '0') * 10 + (s[9] - '0');
    return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

} // namespace

ParsedSearch parseSearch(std::string_view typed) {
    ParsedSearch out;
    Query& q = out.query;
    std::string text;
    for (const std::string& token : tokens(typed)) {
        const auto colon = token.find(':');
        const std::string key = colon == std::string::npos ? "" : lower(token.substr(0, colon));
        const std::string value = colon == std::string::npos ? "" : token.substr(colon + 1);
        auto problem = [&](const std::string& why) { out.problems.push_back(token + ": " + why); };
        if (key == "seed") {
            if (auto v = integer(value); v && *v >= 0) q.seed = *v;
            else problem("not a seed (a whole number, 0 or more)");
        } else if (key == "size") {
            const auto x = lower(value).find('x');
            const auto w = x == std::string::npos ? std::nullopt : integer(value.substr(0, x));
            const auto h = x == std::string::npos ? std::nullopt : integer(value.substr(x + 1));
            if (w && h && *w > 0 && *h > 0 && *w < 1 << 16 && *h < 1 << 16) {
                q.width = int(*w);
                q.height = int(*h);
            } else {
                problem("not a size (width x height, as 512x768)");
            }
        } else if (key == "date" || key == "after" || key == "since" || key == "before" || key == "until") {
            if (!isDate(value)) {
                problem("not a date (year-month-day, as 2026-12-01)");
                continue;
            }
            if (key != "before" && key != "until") q.from = value;
            if (key != "after" && key != "since") q.to = value;
        } else if (key == "sampler") {
            q.sampler = value;
        } else if (key == "model") {
            q.modelName = value;
        } else if (key == "rating" || key == "stars") {
            if (auto v = integer(value); v && *v >= 0 && *v <= 5) q.minRating = int(*v);
            else problem("not a rating (0 to 5)");
        } else if (key == "is") {
            const std::string v = lower(value);
            if (v == "favourite" || v == "favorite" || v == "fav") q.favouritesOnly = true;
            else problem("unknown (is:favourite)");
        } else if (key == "sort") {
            const std::string v = lower(value);
            if (v == "newest") q.sort = Sort::Newest;
            else if (v == "oldest") q.sort = Sort::Oldest;
            else if (v == "rating") q.sort = Sort::Rating;
            else problem("unknown order (newest, oldest, rating)");
        } else {
            text += (text.empty() ? "" : " ") + token;  // a word; a colon in a prompt word stays text
        }
    }
    q.text = text;
    return out;
}

std::string searchHelp() {
    return "Words of the prompt or negative prompt, and filters:\n"
           "  seed:42   size:512x768   sampler:\"DPM++ 2M\"   model:NAME\n"
           "  date:2026-12-01   after:2026-11-01   before:2026-12-31\n"
           "  rating:3 (3 stars or more)   is:favourite   sort:oldest / rating";
}

} // namespace dd::library
