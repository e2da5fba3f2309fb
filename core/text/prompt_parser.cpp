// Ref: AUTOMATIC1111/stable-diffusion-webui modules/prompt_parser.py (re_attention, re_break,
// parse_prompt_attention) and modules/sd_hijack_clip.py (FrozenCLIPEmbedderWithCustomWordsBase:
// tokenize_line, process_tokens' id_pad replacement). diffusers' truncation: Reference mode.
#include "core/text/prompt_parser.h"

#include "core/text/unicode.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <charconv>
#include <optional>

namespace dd::text {
namespace {

namespace uc = unicode;
using Str = std::u32string;

constexpr double kRoundMultiplier = 1.1;
constexpr double kSquareMultiplier = 1 / 1.1;

// `[+-]?[.\d]+` converted the way Python's float() reads it; nullopt when float() would raise.
std::optional<double> pythonFloat(const Str& s) {
    std::string ascii;
    int digits = 0, dots = 0;
    for (char32_t c : s) {
        if (c == U'+' || c == U'-' || c == U'.') {
            dots += c == U'.';
            if (c != U'+') ascii.push_back(static_cast<char>(c));
        } else {
            ascii.push_back(static_cast<char>('0' + uc::pyDigitValue(c)));
            ++digits;
        }
    }
    if (digits == 0 || dots > 1) return std::nullopt;
    double v = 0;
    auto [end, ec] = std::from_chars(ascii.data(), ascii.data() + ascii.size(), v);
    if (ec != std::errc() || end != ascii.data() + ascii.size()) return std::nullopt;
    return v;
}

// re_attention alternative 9, `:\s*([+-]?[.\d]+)\s*\)`, at s[i] == ':'. Returns the match length.
size_t matchWeight(const Str& s, size_t i, Str& number) {
    size_t j = i + 1;
    while (j < s.size() && uc::isPySpace(s[j])) ++j;
    const size_t numStart = j;
    if (j < s.size() && (s[j] == U'+' || s[j] == U'-')) ++j;
    const size_t digitsStart = j;
    while (j < s.size() && (s[j] == U'.' || uc::pyDigitValue(s[j]) >= 0)) ++j;
    if (j == digitsStart) return 0;
    number = s.substr(numStart, j - numStart);
    while (j < s.size() && uc::isPySpace(s[j])) ++j;
    return j < s.size() && s[j] == U')' ? j + 1 - i : 0;
}

bool isSyntax(char32_t c) { return c == U'\\' || c == U'(' || c == U')' || c == U'[' || c == U']' || c == U':'; }

// re.split(re_break, text): `\s*\bBREAK\b\s*` with Python's Unicode \s and \b.
std::vector<Str> splitBreak(const Str& s) {
    std::vector<Str> parts;
    size_t partStart = 0, p = 0;
    while (p < s.size()) {
        size_t q = p;
        while (q < s.size() && uc::isPySpace(s[q])) ++q;
        const bool boundaryBefore = q > p || q == 0 || !uc::isPyWord(s[q - 1]);
        const bool word = s.compare(q, 5, U"BREAK") == 0;
        const bool boundaryAfter = q + 5 >= s.size() || !uc::isPyWord(s[q + 5]);
        if (!(boundaryBefore && word && boundaryAfter)) {
            ++p;
            continue;
        }
        size_t e = q + 5;
        while (e < s.size() && uc::isPySpace(s[e])) ++e;
        parts.push_back(s.substr(partStart, p - partStart));
        partStart = p = e;
    }
    parts.push_back(s.substr(partStart));
    return parts;
}

struct Run {
    Str text;
    double weight;
};

} // namespace

std::vector<WeightedText> parsePromptAttention(std::string_view prompt) {
    const Str s = uc::decodeUtf8(prompt);
    std::vector<Run> res;
    std::vector<size_t> round, square;
    auto multiplyFrom = [&](size_t start, double m) {
        for (size_t p = start; p < res.size(); ++p) res[p].weight *= m;
    };
    auto addText = [&](const Str& text) {
        const auto parts = splitBreak(text);
        for (size_t i = 0; i < parts.size(); ++i) {
            if (i > 0) res.push_back({U"BREAK", -1});
            res.push_back({parts[i], 1.0});
        }
    };
    size_t i = 0;
    while (i < s.size()) {
        const char32_t c = s[i];
        Str number;
        if (c == U'\\') {
            const bool escaped = i + 1 < s.size() && (s[i + 1] == U'(' || s[i + 1] == U')' || s[i + 1] == U'[' ||
                                                      s[i + 1] == U']' || s[i + 1] == U'\\');
            res.push_back({escaped ? Str(1, s[i + 1]) : Str(), 1.0});
            i += escaped ? 2 : 1;
        } else if (c == U'(') {
            round.push_back(res.size());
            ++i;
        } else if (c == U'[') {
            square.push_back(res.size());
            ++i;
        } else if (size_t len = c == U':' ? matchWeight(s, i, number) : 0) {
            if (round.empty()) {
                addText(s.substr(i, len));
            } else {
                const auto w = pythonFloat(number);
                if (!w)
                    throw PromptError("prompt weight '" + uc::encodeUtf8(number) + "' is not a number (in '" +
                                      uc::encodeUtf8(s.substr(i, len)) + "')");
                multiplyFrom(round.back(), *w);
                round.pop_back();
            }
            i += len;
        } else if (c == U')' && !round.empty()) {
            multiplyFrom(round.back(), kRoundMultiplier);
            round.pop_back();
            ++i;
        } else if (c == U']' && !square.empty()) {
            multiplyFrom(square.back(), kSquareMultiplier);
            square.pop_back();
            ++i;
        } else {
            size_t j = i + 1;
            if (!isSyntax(c))
                while (j < s.size() && !isSyntax(s[j])) ++j;
            addText(s.substr(i, j - i));
            i = j;
        }
    }
    for (size_t pos : round) multiplyFrom(pos, kRoundMultiplier);
    for (size_t pos : square) multiplyFrom(pos, kSquareMultiplier);
    if (res.empty()) res.push_back({Str(), 1.0});

    std::vector<WeightedText> out;
    for (auto& r : res) {
        if (!out.empty() && out.back().weight == r.weight)
            out.back().text += uc::encodeUtf8(r.text);
        else
            out.push_back({uc::encodeUtf8(r.text), r.weight});
    }
    return out;
}

int targetTokenCount(int tokenCount) {
    const int n = std::max(tokenCount, 1);
    return (n + PromptChunk::kContentLength - 1) / PromptChunk::kContentLength * PromptChunk::kContentLength;
}

namespace {

class ChunkBuilder {
public:
    ChunkBuilder(const ClipTokenizer& tok, int padId) : m_tok(tok), m_padId(padId) {}

    // tokenize_line.next_chunk
    void close(bool isLast) {
        m_result.tokenCount += isLast ? static_cast<int>(m_ids.size()) : PromptChunk::kContentLength;
        PromptChunk chunk;
        chunk.contentTokens = static_cast<int>(m_ids.size());
        chunk.ids.push_back(m_tok.bosId());
        chunk.ids.insert(chunk.ids.end(), m_ids.begin(), m_ids.end());
        chunk.ids.resize(PromptChunk::kContentLength + 1, m_tok.eosId());
        chunk.ids.push_back(m_tok.eosId());
        chunk.weights.push_back(1.0f);
        for (double w : m_weights) chunk.weights.push_back(static_cast<float>(w));
        chunk.weights.resize(PromptChunk::kContentLength + 2, 1.0f);
        if (m_padId != m_tok.eosId()) {  // process_tokens: everything after the first EOS → id_pad
            size_t first = 0;
            while (chunk.ids[first] != m_tok.eosId()) ++first;
            std::fill(chunk.ids.begin() + static_cast<long>(first) + 1, chunk.ids.end(), m_padId);
        }
        for (auto span : m_spans) {
            span.position += 1;  // after BOS
            chunk.embeddings.push_back(span);
        }
        m_result.chunks.push_back(std::move(chunk));
        m_ids.clear();
        m_weights.clear();
        m_spans.clear();
        m_lastComma = -1;
    }

    // tokenize_line: the comma and full-chunk rules run before each position, an embedding's first one too.
    void add(const std::vector<int>& tokens, double weight, int commaId, int backtrack, const EmbeddingVocabulary* vocab) {
        for (size_t pos = 0; pos < tokens.size();) {
            makeRoom(tokens[pos], commaId, backtrack);
            if (const auto match = vocab ? vocab->at(tokens, pos) : std::nullopt) {
                addEmbedding(*match, vocab->library(), weight);
                pos += match->length;
                continue;
            }
            if (const auto unfit = vocab ? vocab->unfitAt(tokens, pos) : std::nullopt)
                noteName(m_result.embeddingsUnfit, vocab->library().files[unfit->file].name);
            m_ids.push_back(tokens[pos++]);
            m_weights.push_back(weight);
        }
    }

    void makeRoom(int token, int commaId, int backtrack) {
        const int size = static_cast<int>(m_ids.size());
        if (token == commaId) {
            m_lastComma = size;
        } else if (backtrack != 0 && size == PromptChunk::kContentLength && m_lastComma != -1 &&
                   size - m_lastComma <= backtrack) {
            const auto at = static_cast<long>(m_lastComma) + 1;
            std::vector<int> ids(m_ids.begin() + at, m_ids.end());
            std::vector<double> weights(m_weights.begin() + at, m_weights.end());
            m_ids.resize(static_cast<size_t>(at));
            m_weights.resize(static_cast<size_t>(at));
            std::vector<EmbeddingSpan> moved;
            std::erase_if(m_spans, [&](EmbeddingSpan sp) {
                if (sp.position < at) return false;
                sp.position -= int(at);
                moved.push_back(sp);
                return true;
            });
            close(false);
            m_ids = std::move(ids);
            m_weights = std::move(weights);
            m_spans = std::move(moved);
        }
        if (static_cast<int>(m_ids.size()) == PromptChunk::kContentLength) close(false);
    }

    // tokenize_line's embedding branch: no comma back-tracking; the vectors stay together in one chunk.
    void addEmbedding(const EmbeddingVocabulary::Match& match, const EmbeddingLibrary& library, double weight) {
        const auto& file = library.files[match.file];
        if (static_cast<int>(m_ids.size()) + file.vectors > PromptChunk::kContentLength) close(false);
        m_spans.push_back({static_cast<int>(m_ids.size()), match.file, file.vectors});
        m_ids.insert(m_ids.end(), size_t(file.vectors), 0);
        m_weights.insert(m_weights.end(), size_t(file.vectors), weight);
        noteName(m_result.embeddingsUsed, file.name);
    }

    static void noteName(std::vector<std::string>& names, const std::string& name) {
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }

    TokenizedPrompt finish() {
        if (!m_ids.empty() || m_result.chunks.empty()) close(true);
        return std::move(m_result);
    }

private:
    const ClipTokenizer& m_tok;
    int m_padId;
    std::vector<int> m_ids;
    std::vector<double> m_weights;
    std::vector<EmbeddingSpan> m_spans;  // positions in m_ids
    int m_lastComma = -1;
    TokenizedPrompt m_result;
};

} // namespace

TokenizedPrompt tokenizePrompt(const ClipTokenizer& tokenizer, std::string_view prompt, const PromptOptions& options) {
    if (options.mode == PromptMode::Reference) {
        auto padded = tokenizer.encodePadded(prompt);
        TokenizedPrompt result;
        PromptChunk chunk;
        chunk.ids = std::move(padded.ids);
        chunk.weights.assign(chunk.ids.size(), 1.0f);
        chunk.contentTokens = padded.contentTokens;
        result.chunks.push_back(std::move(chunk));
        result.tokenCount = padded.contentTokens + padded.droppedTokens;
        result.droppedTokens = padded.droppedTokens;
        return result;
    }
    const auto parsed = options.emphasis ? parsePromptAttention(prompt)
                                         : std::vector<WeightedText>{{std::string(prompt), 1.0}};
    const int commaId = tokenizer.tokenId(",</w>").value_or(-1);
    ChunkBuilder builder(tokenizer, options.padId.value_or(tokenizer.padId()));
    for (const auto& part : parsed) {
        if (part.text == "BREAK" && part.weight == -1) {
            builder.close(false);
            continue;
        }
        builder.add(tokenizer.encode(part.text), part.weight, commaId, options.commaBacktrack, options.embeddings);
    }
    return builder.finish();
}

namespace {

bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }

double tagNumber(const std::string& value, std::string_view tag) {
    const Str s(value.begin(), value.end());
    const auto v = pythonFloat(s);
    if (!v) throw PromptError("'" + std::string(tag) + "': '" + value + "' is not a number");
    return *v;
}

LoraTag parseLoraTag(std::string_view args, std::string_view tag) {
    std::vector<std::string> positional;
    std::map<std::string, std::string> named;
    size_t start = 0;
    while (true) {
        const size_t end = args.find(':', start);
        const std::string item(args.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
        const size_t eq = item.find('=');
        if (!positional.empty() && eq != std::string::npos) named[item.substr(0, eq)] = item.substr(eq + 1);
        else positional.push_back(item);
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    LoraTag t;
    t.name = positional.front();
    if (positional.size() > 1) t.textEncoderWeight = tagNumber(positional[1], tag);
    if (named.count("te")) t.textEncoderWeight = tagNumber(named["te"], tag);
    t.unetWeight = positional.size() > 2 ? tagNumber(positional[2], tag) : t.textEncoderWeight;
    if (named.count("unet")) t.unetWeight = tagNumber(named["unet"], tag);
    return t;
}

} // namespace

ExtraNetworks extractExtraNetworks(std::string_view prompt) {
    ExtraNetworks out;
    size_t i = 0;
    while (i < prompt.size()) {
        // re_extra_net = r"<(\w+):([^>]+)>"
        size_t j = i + 1;
        if (prompt[i] == '<') {
            while (j < prompt.size() && isWordChar(prompt[j])) ++j;
            const size_t close = prompt.find('>', j);
            if (j > i + 1 && j < prompt.size() && prompt[j] == ':' && close != std::string_view::npos && close > j + 1) {
                const std::string_view kind = prompt.substr(i + 1, j - i - 1);
                const std::string_view args = prompt.substr(j + 1, close - j - 1);
                const std::string_view tag = prompt.substr(i, close - i + 1);
                if (kind == "lora" || kind == "lyco") out.loras.push_back(parseLoraTag(args, tag));
                else out.ignored.emplace_back(tag);
                i = close + 1;
                continue;
            }
        }
        out.prompt += prompt[i];
        ++i;
    }
    return out;
}

} // namespace dd::text
