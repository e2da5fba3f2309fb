#include "core/text/prompt_schedule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>

namespace dd::text {
namespace {

// The parse tree of A1111's schedule grammar: text, a sequence, emphasis kept as written, an edit, an alternation.
struct Node;
using Seq = std::vector<Node>;

struct Node {
    enum Kind { Text, Emphasis, Edit, Alternate } kind = Text;
    std::string text;               // Text; Emphasis: its opening and closing brackets
    std::vector<Seq> parts;         // Emphasis: the parts between ':'; Edit: {before, after}; Alternate: the options
    bool hasBefore = false;         // Edit: "[from:to:when]" rather than "[to:when]"
    std::string when;               // Edit: the number as written
    int whenStep = 0;               // Edit: `when` resolved against the steps
};

bool isNumber(std::string_view s) {  // lark's SIGNED_NUMBER: [+-] (INT | DECIMAL) [e[+-]INT]
    size_t i = 0;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t digits = 0, fraction = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
    if (i < s.size() && s[i] == '.') {
        ++i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++fraction;
    }
    if (digits + fraction == 0) return false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        size_t exponent = 0;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exponent;
        if (exponent == 0) return false;
    }
    return i == s.size();
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// A sequence that is text alone (no brackets inside): its text, else nothing.
std::optional<std::string> plainText(const Seq& seq) {
    std::string out;
    for (const Node& n : seq) {
        if (n.kind != Node::Text) return std::nullopt;
        out += n.text;
    }
    return out;
}

struct Failed {};  // the grammar rejects the prompt

// Recursive descent over A1111's grammar. Inside brackets a ':' ']' ')' or '|' ends a part; at the top level the
// brackets and ':' that form nothing are text (its `start` rule), and a '|' rejects the prompt.
class Parser {
public:
    explicit Parser(std::string_view s) : m_s(s) {}

    Seq parseTop() {
        Seq out;
        while (m_at < m_s.size()) {
            const char c = m_s[m_at];
            if (c == '|') throw Failed{};
            if (c == '(' || c == '[') {
                const size_t start = m_at;
                try {
                    out.push_back(c == '(' ? parseParen() : parseBracket());
                    continue;
                } catch (const Failed&) {
                    m_at = start;  // not a construct: the bracket is text
                }
            }
            if (c == '(' || c == '[' || c == ')' || c == ']' || c == ':') {
                appendText(out, std::string(1, c));
                ++m_at;
                continue;
            }
            appendText(out, takePlain());
        }
        return out;
    }

private:
    static void appendText(Seq& seq, const std::string& text) {
        if (!seq.empty() && seq.back().kind == Node::Text) seq.back().text += text;
        else seq.push_back(Node{Node::Text, text, {}, false, {}, 0});
    }

    // plain: anything but \ [ ] ( ) : |, where "\x" is the two characters; WHITESPACE is text too.
    std::string takePlain() {
        std::string out;
        while (m_at < m_s.size()) {
            const char c = m_s[m_at];
            if (c == '[' || c == ']' || c == '(' || c == ')' || c == ':' || c == '|') break;
            if (c == '\\') {
                if (m_at + 1 >= m_s.size()) throw Failed{};  // a lone backslash at the end matches nothing
                out += m_s.substr(m_at, 2);
                m_at += 2;
                continue;
            }
            out += c;
            ++m_at;
        }
        return out;
    }

    // A part inside brackets: text and nested constructs up to a ':' ']' ')' or '|'.
    Seq parseInner() {
        Seq out;
        while (m_at < m_s.size()) {
            const char c = m_s[m_at];
            if (c == ':' || c == ']' || c == ')' || c == '|') break;
            if (c == '(') out.push_back(parseParen());
            else if (c == '[') out.push_back(parseBracket());
            else appendText(out, takePlain());
        }
        return out;
    }

    char peek() const { return m_at < m_s.size() ? m_s[m_at] : '\0'; }

    // "(" prompt ")" | "(" prompt ":" prompt ")": emphasis, kept as written.
    Node parseParen() {
        ++m_at;
        Node n{Node::Emphasis, "()", {parseInner()}, false, {}, 0};
        if (peek() == ':') {
            ++m_at;
            n.parts.push_back(parseInner());
        }
        if (peek() != ')') throw Failed{};
        ++m_at;
        return n;
    }

    // "[" prompt "]" (emphasis) | an edit | an alternation.
    Node parseBracket() {
        ++m_at;
        std::vector<Seq> parts{parseInner()};
        char separator = '\0';
        while (peek() == ':' || peek() == '|') {
            if (separator && peek() != separator) throw Failed{};
            separator = peek();
            ++m_at;
            parts.push_back(parseInner());
        }
        if (peek() != ']') throw Failed{};
        ++m_at;
        if (!separator) return Node{Node::Emphasis, "[]", std::move(parts), false, {}, 0};
        if (separator == '|') return Node{Node::Alternate, {}, std::move(parts), false, {}, 0};
        if (parts.size() > 3) throw Failed{};
        const auto when = plainText(parts.back());
        if (!when || !isNumber(trimmed(*when))) throw Failed{};
        Node n{Node::Edit, {}, {}, parts.size() == 3, std::string(trimmed(*when)), 0};
        if (n.hasBefore) n.parts = {std::move(parts[0]), std::move(parts[1])};
        else n.parts = {Seq{}, std::move(parts[0])};
        return n;
    }

    std::string_view m_s;
    size_t m_at = 0;
};

struct Resolve {
    int steps, firstPassSteps;
    std::set<int> boundaries;

    void seq(Seq& s) {
        for (Node& n : s) node(n);
    }
    void node(Node& n) {
        for (Seq& part : n.parts) seq(part);
        if (n.kind == Node::Alternate)
            for (int t = 1; t <= steps; ++t) boundaries.insert(t);
        if (n.kind != Node::Edit) return;
        const double v = std::strtod(n.when.c_str(), nullptr);  // "1e999": infinity, as Python's float()
        const bool fraction = n.when.find('.') != std::string::npos;
        const double at = std::trunc(fraction ? (v - (firstPassSteps > 0 ? 1.0 : 0.0)) * steps : v - firstPassSteps);
        // min(steps, int(at)), int() towards zero as Python's; every value below 1 acts as -1 (already switched).
        n.whenStep = at >= steps ? steps : at <= -1 ? -1 : int(at);
        if (n.whenStep >= 1) boundaries.insert(n.whenStep);
    }
};

std::string textAt(int step, const Seq& s);

std::string textAt(int step, const Node& n) {
    switch (n.kind) {
    case Node::Text: return n.text;
    case Node::Emphasis: {
        std::string out(1, n.text[0]);
        for (size_t i = 0; i < n.parts.size(); ++i) out += (i ? ":" : "") + textAt(step, n.parts[i]);
        return out + n.text[1];
    }
    case Node::Edit: return textAt(step, n.parts[step <= n.whenStep ? 0 : 1]);
    case Node::Alternate: return textAt(step, n.parts[size_t(step - 1) % n.parts.size()]);
    }
    return {};
}

std::string textAt(int step, const Seq& s) {
    std::string out;
    for (const Node& n : s) out += textAt(step, n);
    return out;
}

std::optional<Seq> parse(std::string_view prompt) {
    try {
        return Parser(prompt).parseTop();
    } catch (const Failed&) {
        return std::nullopt;
    }
}

bool edits(const Seq& s) {
    return std::any_of(s.begin(), s.end(), [](const Node& n) {
        return n.kind == Node::Edit || n.kind == Node::Alternate ||
               std::any_of(n.parts.begin(), n.parts.end(), [](const Seq& p) { return edits(p); });
    });
}

} // namespace

std::vector<ScheduledText> promptSchedule(std::string_view prompt, int steps, int firstPassSteps) {
    auto tree = parse(prompt);
    if (!tree) return {{steps, std::string(prompt)}};
    Resolve resolve{steps, firstPassSteps, {steps}};
    resolve.seq(*tree);
    std::vector<ScheduledText> out;
    for (int t : resolve.boundaries) out.push_back({t, textAt(t, *tree)});
    return out;
}

namespace {

bool wordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80; }

// A part's ":w" at its end (A1111's re_weight: [-+]? then digits with an optional point, or a point and digits).
PromptPart weighed(std::string_view part) {
    std::string_view rest = part;
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
    const size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos) {
        const std::string_view number = trimmed(rest.substr(colon + 1));
        size_t i = number.empty() || (number[0] != '+' && number[0] != '-') ? 0 : 1;
        size_t digits = 0, point = 0;
        for (; i < number.size(); ++i) {
            if (std::isdigit(static_cast<unsigned char>(number[i]))) ++digits;
            else if (number[i] == '.' && !point) ++point;
            else break;
        }
        if (i == number.size() && digits > 0) {
            std::string_view text = rest.substr(0, colon);
            while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
            return {std::string(text), std::strtod(std::string(number).c_str(), nullptr)};
        }
    }
    return {std::string(rest), 1.0};
}

} // namespace

std::vector<PromptPart> splitAnd(std::string_view prompt) {
    std::vector<PromptPart> parts;
    size_t start = 0;
    for (size_t at = prompt.find("AND"); at != std::string_view::npos; at = prompt.find("AND", at + 1)) {
        const bool before = at == 0 || !wordChar(prompt[at - 1]);
        const bool after = at + 3 >= prompt.size() || !wordChar(prompt[at + 3]);
        if (!before || !after) continue;
        parts.push_back(weighed(prompt.substr(start, at - start)));
        start = at + 3;
    }
    parts.push_back(weighed(prompt.substr(start)));
    return parts;
}

bool hasPromptEditing(std::string_view prompt) {
    const auto tree = parse(prompt);
    return tree && edits(*tree);
}

} // namespace dd::text
