// Ref: transformers models/clip/tokenization_clip.py (CLIPTokenizer, tokenizers backend): added
// special tokens matched verbatim, normalizers NFC → Replace(\s+, " ") → Lowercase, Split on the
// CLIP regex, ByteLevel(add_prefix_space=False), BPE(end_of_word_suffix="</w>").
// Vocabulary layout: openai/CLIP clip/simple_tokenizer.py (SimpleTokenizer.__init__).
#include "core/text/clip_tokenizer.h"

#include "core/io/model_error.h"
#include "core/text/unicode.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace dd::text {
namespace {

using io::ModelFileError;
namespace uc = unicode;

constexpr std::u32string_view kSpecials[] = {U"<|startoftext|>", U"<|endoftext|>"};
constexpr int kClipMergeCount = 49152 - 256 - 2;

// GPT-2's byte → printable character table, in CLIP's vocabulary order.
std::vector<std::pair<int, char32_t>> byteTable() {
    std::vector<std::pair<int, char32_t>> table;
    std::vector<bool> direct(256, false);
    for (int b = 0; b < 256; ++b) {
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) {
            direct[b] = true;
            table.emplace_back(b, static_cast<char32_t>(b));
        }
    }
    char32_t next = 256;
    for (int b = 0; b < 256; ++b)
        if (!direct[b]) table.emplace_back(b, next++);
    return table;
}

std::string readText(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ModelFileError(path.string(), "cannot be opened");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string readGzip(const std::filesystem::path& path) {
    gzFile f = gzopen(path.string().c_str(), "rb");
    if (!f) throw ModelFileError(path.string(), "cannot be opened");
    std::string data;
    char buf[1 << 16];
    int n = 0;
    while ((n = gzread(f, buf, sizeof buf)) > 0) data.append(buf, static_cast<size_t>(n));
    int err = Z_OK;
    gzerror(f, &err);  // a truncated stream ends reads early with Z_BUF_ERROR
    const bool failed = n < 0 || (err != Z_OK && err != Z_STREAM_END);
    gzclose(f);
    if (failed) throw ModelFileError(path.string(), "is not a readable gzip file");
    return data;
}

std::vector<std::string> splitLines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream ss(text);
    for (std::string line; std::getline(ss, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(std::move(line));
    }
    return lines;
}

std::pair<std::string, std::string> parseMerge(const std::string& line, const std::string& path, size_t lineNo) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 >= line.size() || line.find(' ', sp + 1) != std::string::npos)
        throw ModelFileError(path, "line " + std::to_string(lineNo + 1) + " is not a merge of two symbols: '" +
                                       line.substr(0, 60) + "'");
    return {line.substr(0, sp), line.substr(sp + 1)};
}

// transformers reads pad_token from tokenizer_config.json, else special_tokens_map.json; either as a
// string or as an AddedToken object {"content": ...}.
ClipPad padFromConfig(const std::filesystem::path& dir) {
    for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
        const auto path = dir / name;
        if (!std::filesystem::exists(path)) continue;
        nlohmann::json json;
        try {
            json = nlohmann::json::parse(readText(path));
        } catch (const nlohmann::json::exception& e) {
            throw ModelFileError(path.string(), std::string("is not valid JSON (") + e.what() + ")");
        }
        if (!json.is_object() || !json.contains("pad_token") || json["pad_token"].is_null()) continue;
        const auto& pad = json["pad_token"];
        const auto text = pad.is_object() ? pad.value("content", std::string()) : pad.is_string() ? pad.get<std::string>() : "";
        if (text == "<|endoftext|>") return ClipPad::EndOfText;
        if (text == "!") return ClipPad::Exclamation;
        throw ModelFileError(path.string(), "pad_token '" + text + "' is neither \"<|endoftext|>\" nor \"!\"");
    }
    return ClipPad::EndOfText;
}

bool startsWith(std::u32string_view s, size_t at, std::u32string_view prefix) {
    return s.substr(at, prefix.size()) == prefix;
}

} // namespace

struct ClipTokenizer::Vocabulary {
    std::unordered_map<std::string, int> tokenToId;
    std::vector<std::string> idToToken;
    std::unordered_map<unsigned long long, std::pair<int, int>> merges;  // (left,right) → (rank, merged id)
    int byteId[256] = {};     // byte symbol
    int byteEndId[256] = {};  // byte symbol + "</w>"
};

ClipTokenizer ClipTokenizer::fromFolder(const std::filesystem::path& dir) {
    const auto vocabPath = dir / "vocab.json";
    const auto mergesPath = dir / "merges.txt";
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(readText(vocabPath));
    } catch (const nlohmann::json::exception& e) {
        throw ModelFileError(vocabPath.string(), std::string("is not valid JSON (") + e.what() + ")");
    }
    if (!json.is_object()) throw ModelFileError(vocabPath.string(), "must be a JSON object of token → id");
    std::vector<std::string> tokens;
    for (const auto& [token, id] : json.items()) {
        if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() > 10'000'000)
            throw ModelFileError(vocabPath.string(), "token '" + token + "' has an invalid id");
        const auto i = id.get<size_t>();
        if (tokens.size() <= i) tokens.resize(i + 1);
        if (!tokens[i].empty())
            throw ModelFileError(vocabPath.string(), "id " + std::to_string(i) + " is used twice");
        tokens[i] = token;
    }
    std::vector<std::pair<std::string, std::string>> merges;
    const auto lines = splitLines(readText(mergesPath));
    for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].empty() || (i == 0 && lines[i].rfind("#version", 0) == 0)) continue;
        merges.push_back(parseMerge(lines[i], mergesPath.string(), i));
    }
    ClipTokenizer tok;
    tok.build(std::move(tokens), merges, padFromConfig(dir), dir.string());
    return tok;
}

ClipTokenizer ClipTokenizer::fromBundledVocab(const std::filesystem::path& gzFile, ClipPad pad) {
    const auto lines = splitLines(readGzip(gzFile));
    if (lines.size() < static_cast<size_t>(kClipMergeCount) + 1)
        throw ModelFileError(gzFile.string(), "has " + std::to_string(lines.size()) + " lines; a CLIP vocabulary has at least " +
                                                  std::to_string(kClipMergeCount + 1));
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(kClipMergeCount);
    for (size_t i = 1; i <= static_cast<size_t>(kClipMergeCount); ++i)
        merges.push_back(parseMerge(lines[i], gzFile.string(), i));

    std::vector<std::string> tokens;
    for (const auto& [byte, ch] : byteTable()) tokens.push_back(uc::encodeUtf8(std::u32string(1, ch)));
    for (size_t i = 0; i < 256; ++i) tokens.push_back(tokens[i] + "</w>");
    for (const auto& [a, b] : merges) tokens.push_back(a + b);
    tokens.push_back("<|startoftext|>");
    tokens.push_back("<|endoftext|>");
    // simple_tokenizer.py builds dict(zip(vocab, range(len(vocab)))): a repeated token keeps its last id.
    std::unordered_map<std::string, size_t> last;
    for (size_t i = 0; i < tokens.size(); ++i) last[tokens[i]] = i;
    for (size_t i = 0; i < tokens.size(); ++i)
        if (last[tokens[i]] != i) tokens[i].clear();
    ClipTokenizer tok;
    tok.build(std::move(tokens), merges, pad, gzFile.string());
    return tok;
}

void ClipTokenizer::build(std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges,
                          ClipPad pad, const std::string& source) {
    auto v = std::make_shared<Vocabulary>();
    v->idToToken = std::move(tokens);
    for (size_t i = 0; i < v->idToToken.size(); ++i)
        if (!v->idToToken[i].empty()) v->tokenToId.emplace(v->idToToken[i], static_cast<int>(i));
    auto require = [&](const std::string& t) {
        auto it = v->tokenToId.find(t);
        if (it == v->tokenToId.end())
            throw ModelFileError(source, "is not a CLIP byte-level vocabulary: token '" + t + "' is missing");
        return it->second;
    };
    for (const auto& [byte, ch] : byteTable()) {
        const std::string sym = uc::encodeUtf8(std::u32string(1, ch));
        v->byteId[byte] = require(sym);
        v->byteEndId[byte] = require(sym + "</w>");
    }
    m_bos = require("<|startoftext|>");
    m_eos = require("<|endoftext|>");
    m_padIsSpecial = pad == ClipPad::Exclamation;
    m_pad = m_padIsSpecial ? require("!") : m_eos;
    v->merges.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [a, b] = merges[rank];
        const auto key = (static_cast<unsigned long long>(require(a)) << 32) | static_cast<unsigned>(require(b));
        v->merges.insert_or_assign(key, std::pair{static_cast<int>(rank), require(a + b)});  // a repeat: last wins
    }
    m_vocab = std::move(v);
}

ClipTokenizer ClipTokenizer::withPad(ClipPad pad) const {
    ClipTokenizer t = *this;
    t.m_padIsSpecial = pad == ClipPad::Exclamation;
    t.m_pad = t.m_padIsSpecial ? m_vocab->byteId[static_cast<unsigned char>('!')] : m_eos;
    return t;
}

int ClipTokenizer::vocabSize() const { return static_cast<int>(m_vocab->idToToken.size()); }

std::optional<int> ClipTokenizer::tokenId(std::string_view token) const {
    auto it = m_vocab->tokenToId.find(std::string(token));
    return it == m_vocab->tokenToId.end() ? std::nullopt : std::optional<int>(it->second);
}

const std::string& ClipTokenizer::token(int id) const {
    static const std::string empty;
    return id >= 0 && id < vocabSize() ? m_vocab->idToToken[static_cast<size_t>(id)] : empty;
}

std::vector<int> ClipTokenizer::encode(std::string_view text) const {
    const std::u32string s = uc::decodeUtf8(text);
    std::vector<int> out;
    size_t segStart = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == U'!' && m_padIsSpecial) {
            encodeSegment(std::u32string_view(s).substr(segStart, i - segStart), out);
            out.push_back(m_pad);
            segStart = i + 1;
            continue;
        }
        if (s[i] != U'<') continue;
        for (size_t k = 0; k < 2; ++k) {
            if (!startsWith(s, i, kSpecials[k])) continue;
            encodeSegment(std::u32string_view(s).substr(segStart, i - segStart), out);
            out.push_back(k == 0 ? m_bos : m_eos);
            i += kSpecials[k].size() - 1;
            segStart = i + 1;
            break;
        }
    }
    encodeSegment(std::u32string_view(s).substr(segStart), out);
    return out;
}

void ClipTokenizer::encodeSegment(std::u32string_view raw, std::vector<int>& out) const {
    if (raw.empty()) return;
    std::u32string s;
    s.reserve(raw.size());
    for (char32_t c : uc::nfc(raw)) {
        if (uc::isSpace(c)) c = U' ';  // \s+ → " " (runs only ever separate pieces)
        uc::appendLower(s, c);
    }
    auto emit = [&](size_t from, size_t to) { bpe(uc::encodeUtf8(std::u32string_view(s).substr(from, to - from)), out); };
    constexpr std::u32string_view kContractions[] = {U"'s", U"'t", U"'re", U"'ve", U"'m", U"'ll", U"'d"};
    size_t i = 0;
    while (i < s.size()) {
        const char32_t c = s[i];
        if (c == U'<' && (startsWith(s, i, kSpecials[0]) || startsWith(s, i, kSpecials[1]))) {
            // The CLIP regex keeps the special's text as one piece; ByteLevel's GPT-2 regex then
            // splits it into "<|", the word and "|>", each a word of its own.
            const size_t len = startsWith(s, i, kSpecials[0]) ? kSpecials[0].size() : kSpecials[1].size();
            emit(i, i + 2);
            emit(i + 2, i + len - 2);
            emit(i + len - 2, i + len);
            i += len;
            continue;
        }
        if (c == U'\'') {
            size_t len = 0;
            for (auto k : kContractions)
                if (startsWith(s, i, k)) {
                    len = k.size();
                    break;
                }
            if (len) {
                emit(i, i + len);
                i += len;
                continue;
            }
        }
        size_t j = i + 1;
        if (uc::isLetter(c)) {
            while (j < s.size() && uc::isLetter(s[j])) ++j;
        } else if (uc::isNumber(c)) {
            // one digit per piece
        } else if (!uc::isSpace(c)) {
            while (j < s.size() && !uc::isSpace(s[j]) && !uc::isLetter(s[j]) && !uc::isNumber(s[j])) ++j;
        } else {
            i = j;
            continue;
        }
        emit(i, j);
        i = j;
    }
}

void ClipTokenizer::bpe(const std::string& word, std::vector<int>& out) const {
    std::vector<int> sym;
    sym.reserve(word.size());
    for (size_t i = 0; i < word.size(); ++i) {
        const auto b = static_cast<unsigned char>(word[i]);
        sym.push_back(i + 1 == word.size() ? m_vocab->byteEndId[b] : m_vocab->byteId[b]);
    }
    // Greedy BPE: merge every occurrence of the lowest-ranked adjacent pair, left to right, until
    // no pair has a merge (simple_tokenizer.py::bpe; tokenizers' heap order gives the same result).
    while (sym.size() > 1) {
        int bestRank = -1, bestId = -1;
        unsigned long long bestKey = 0;
        for (size_t i = 0; i + 1 < sym.size(); ++i) {
            const auto key = (static_cast<unsigned long long>(sym[i]) << 32) | static_cast<unsigned>(sym[i + 1]);
            auto it = m_vocab->merges.find(key);
            if (it != m_vocab->merges.end() && (bestRank < 0 || it->second.first < bestRank)) {
                bestRank = it->second.first;
                bestId = it->second.second;
                bestKey = key;
            }
        }
        if (bestRank < 0) break;
        std::vector<int> next;
        next.reserve(sym.size());
        for (size_t i = 0; i < sym.size(); ++i) {
            const auto key = i + 1 < sym.size()
                                 ? (static_cast<unsigned long long>(sym[i]) << 32) | static_cast<unsigned>(sym[i + 1])
                                 : ~0ULL;
            if (key == bestKey) {
                next.push_back(bestId);
                ++i;
            } else {
                next.push_back(sym[i]);
            }
        }
        sym.swap(next);
    }
    out.insert(out.end(), sym.begin(), sym.end());
}

ClipTokenizer::Padded ClipTokenizer::encodePadded(std::string_view text, int maxLength) const {
    Padded p;
    std::vector<int> content = encode(text);
    const int room = std::max(0, maxLength - 2);
    p.contentTokens = std::min(room, static_cast<int>(content.size()));
    p.droppedTokens = static_cast<int>(content.size()) - p.contentTokens;
    p.ids.reserve(static_cast<size_t>(std::max(maxLength, 2)));
    p.ids.push_back(m_bos);
    p.ids.insert(p.ids.end(), content.begin(), content.begin() + p.contentTokens);
    p.ids.push_back(m_eos);
    p.ids.resize(static_cast<size_t>(std::max(maxLength, 2)), m_pad);
    return p;
}

} // namespace dd::text
