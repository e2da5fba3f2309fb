#include "tools/train/shapes_phrasing.h"

#include <algorithm>
#include <cctype>

namespace dd::shapes {
namespace {

using Words = std::vector<std::string>;

// A stream of choices from one seed.
class Choices {
public:
    explicit Choices(uint64_t seed) : m_h(mix(seed)) {}
    double unit() { return shapes::unit(m_h = mix(m_h)); }
    bool chance(double p) { return unit() < p; }
    size_t index(size_t n) { return std::min(n - 1, size_t(unit() * double(n))); }
    const std::string& pick(const Words& w) { return w[index(w.size())]; }

private:
    uint64_t m_h;
};

std::string sizeWord(int size, Choices& c) {
    static const Words small{"small", "small", "little", "tiny", "mini", "smaller"};
    static const Words large{"large", "large", "big", "huge", "giant", "enormous", "bigger"};
    return c.pick(size == 0 ? small : large);
}

std::string colourWord(int colour, bool background, Choices& c) {
    const std::string name = background ? backgroundColours()[colour].name : shapeColours()[colour].name;
    if (name == "gray") return c.chance(0.5) ? "grey" : "gray";
    if (name == "purple" && c.chance(0.25)) return "violet";
    return name;
}

std::string shapeWord(int shape, bool plural, Choices& c) {
    static const Words circle{"circle", "circle", "circle", "disc", "disk", "dot", "round circle"};
    static const Words square{"square", "square", "square", "box", "square shape"};
    static const Words triangle{"triangle", "triangle", "triangle", "triangle shape"};
    static const Words star{"star", "star", "star", "five-pointed star", "star shape"};
    static const Words* all[] = {&circle, &square, &triangle, &star};
    std::string w = c.pick(*all[shape]);
    if (plural) w += w.back() == 'x' ? "es" : "s";
    return w;
}

// The corner or the centre, as a bare phrase ("upper left", "middle") for tag lists and after prepositions.
std::string placeWord(int position, Choices& c) {
    if (position == 0) {
        static const Words centre{"center", "center", "centre", "middle", "middle of the picture", "center of the image"};
        return c.pick(centre);
    }
    const bool top = position <= 2, left = position % 2 == 1;
    const std::string v = top ? (c.chance(0.7) ? "top" : "upper") : (c.chance(0.7) ? "bottom" : "lower");
    const std::string h = left ? "left" : "right";
    static const Words joins{" ", " ", "-"};
    std::string w = v + c.pick(joins) + h;
    if (c.chance(0.3)) w += " corner";
    return w;
}

std::string positionPhrase(int position, Choices& c) {
    const std::string place = placeWord(position, c);
    if (position == 0 && c.chance(0.15)) return c.chance(0.5) ? "centered" : "centred";
    static const Words preps{"in the ", "in the ", "at the ", "on the "};
    return c.pick(preps) + place;
}

std::string backgroundPhrase(int background, Choices& c) {
    const std::string colour = colourWord(background, true, c);
    static const Words nouns{"background", "background", "background", "backdrop"};
    const std::string noun = c.pick(nouns);
    switch (c.index(6)) {
    case 0: return "on " + colour;
    case 1: return "against a " + colour + " " + noun;
    case 2: return "with a " + colour + " " + noun;
    case 3: return "over a " + colour + " " + noun;
    case 4: return "on a plain " + colour + " " + noun;
    default: return "on a " + colour + " " + noun;
    }
}

std::string article(const std::string& next, Choices& c) {
    static const Words articles{"a", "a", "a", "one", "the", ""};
    std::string a = c.pick(articles);
    if (a == "a" && std::string("aeiou").find(next.front()) != std::string::npos) a = "an";
    return a.empty() ? a : a + " ";
}

std::string prefix(Choices& c) {
    static const Words fillers{"a picture of ", "an image of ", "a drawing of ", "a photo of ", "an illustration of ",
                               "please draw ", "draw ", "show me ", "make ", "paint ", "i want ", "generate ",
                               "there is ", "simple drawing: ", "render "};
    return c.chance(0.35) ? c.pick(fillers) : std::string();
}

// "red star" with its size word, and whether a plural was chosen.
std::string subject(const Scene& s, CaptionParts parts, bool plural, Choices& c) {
    std::string w;
    if (parts.size) w += sizeWord(s.size, c) + " ";
    return w + colourWord(s.colour, false, c) + " " + shapeWord(s.shape, plural, c);
}

std::string join(const Words& parts, const std::string& sep) {
    std::string out;
    for (const auto& p : parts) {
        if (p.empty()) continue;
        if (!out.empty()) out += sep;
        out += p;
    }
    return out;
}

std::string sentence(const Scene& s, CaptionParts parts, Choices& c) {
    const bool plural = c.chance(0.08);
    const std::string thing = subject(s, parts, plural, c);
    const std::string a = plural ? std::string() : article(thing, c);
    const std::string where = parts.position ? positionPhrase(s.position, c) : "";
    const std::string back = parts.background ? backgroundPhrase(s.background, c) : "";
    const std::string comma = c.chance(0.3) ? ", " : " ";
    switch (c.index(4)) {
    case 0:  // "on a white background, a red star in the top left"
        if (!back.empty()) return back + ", " + prefix(c) + join({a + thing, where}, comma);
        [[fallthrough]];
    case 1:  // "in the top left, a red star on a white background"
        if (!where.empty()) return where + ", " + prefix(c) + join({a + thing, back}, comma);
        [[fallthrough]];
    default:  // "a picture of a red star in the top left on a white background"
        return prefix(c) + join({a + thing, where, back}, comma);
    }
}

// A tag list in any order: "red star, top left, white background".
std::string tags(const Scene& s, CaptionParts parts, Choices& c) {
    Words t{subject(s, parts, c.chance(0.05), c)};
    if (parts.position) t.push_back(placeWord(s.position, c));
    if (parts.background) t.push_back(colourWord(s.background, true, c) + " background");
    for (size_t i = t.size(); i > 1; --i) std::swap(t[i - 1], t[c.index(i)]);
    return join(t, c.chance(0.8) ? ", " : " ");
}

Words splitWords(const std::string& text) {
    Words w;
    size_t i = 0;
    while (i < text.size()) {
        const size_t j = text.find(' ', i);
        w.push_back(text.substr(i, j == std::string::npos ? std::string::npos : j - i));
        if (j == std::string::npos) break;
        i = j + 1;
    }
    return w;
}

std::string withStrayWords(const std::string& text, const Words& stray, Choices& c) {
    if (stray.empty() || !c.chance(0.3)) return text;
    Words w = splitWords(text);
    const int n = c.chance(0.7) ? 1 : 2;
    for (int k = 0; k < n; ++k) w.insert(w.begin() + std::ptrdiff_t(c.index(w.size() + 1)), c.pick(stray));
    return join(w, " ");
}

std::string finish(std::string text, Choices& c) {
    if (c.chance(0.15)) text += c.chance(0.7) ? "." : "!";
    if (c.chance(0.25)) text[0] = char(std::toupper(static_cast<unsigned char>(text[0])));
    else if (c.chance(0.03)) std::transform(text.begin(), text.end(), text.begin(), [](unsigned char ch) { return char(std::toupper(ch)); });
    return text;
}

} // namespace

std::string paraphrase(const Scene& s, CaptionParts parts, uint64_t seed, const std::vector<std::string>& strayWords) {
    Choices c(seed);
    const std::string text = c.chance(0.3) ? tags(s, parts, c) : sentence(s, parts, c);
    return finish(withStrayWords(text, strayWords, c), c);
}

std::vector<std::string> strayWords(const std::vector<std::string>& vocabulary) {
    // The captions' own words, from enough phrasings to meet every choice.
    std::vector<std::string> own;
    for (uint64_t i = 0; i < 20000; ++i) {
        const Scene s = randomScene(mix(i));
        for (const auto& w : splitWords(normalisedPrompt(paraphrase(s, {}, i, {}) + " " + caption(s)))) own.push_back(w);
    }
    std::sort(own.begin(), own.end());
    std::vector<std::string> out;
    static const std::string endOfWord = "</w>";
    for (const auto& token : vocabulary) {
        if (token.size() <= endOfWord.size() || token.compare(token.size() - endOfWord.size(), endOfWord.size(), endOfWord) != 0)
            continue;
        const std::string w = token.substr(0, token.size() - endOfWord.size());
        const bool letters = std::all_of(w.begin(), w.end(), [](unsigned char ch) { return ch >= 'a' && ch <= 'z'; });
        if (letters && w.size() >= 3 && w.size() <= 12 && !std::binary_search(own.begin(), own.end(), w)) out.push_back(w);
    }
    return out;
}

uint64_t sceneSeed(uint64_t recipeSeed, int latent) { return mix(recipeSeed * 2654435761ull + uint64_t(latent)); }

TrainingSample trainingSample(uint64_t recipeSeed, int step, int i, int latentCount,
                              const std::vector<std::string>& strayWords, bool varied) {
    const uint64_t h = mix(recipeSeed * 0x51ED27ull + uint64_t(step) * 1024 + uint64_t(i));
    TrainingSample t;
    t.latent = std::min(latentCount - 1, int(unit(h) * latentCount));
    if (unit(mix(h + 1)) < 0.1) return t;  // empty caption, for classifier-free guidance
    const Scene scene = randomScene(sceneSeed(recipeSeed, t.latent));
    const CaptionParts parts = randomParts(h);
    // A third of the varied captions keep the plain grammar, which the prompt-following test and the docs use.
    const bool plain = !varied || unit(mix(h + 2)) < 1.0 / 3;
    t.caption = plain ? caption(scene, parts) : paraphrase(scene, parts, mix(h + 3), strayWords);
    return t;
}

std::string normalisedPrompt(const std::string& prompt) {
    std::string out;
    bool space = true;
    for (unsigned char ch : prompt) {
        if (std::isalnum(ch)) {
            out += char(std::tolower(ch));
            space = false;
        } else if (!std::isspace(ch)) {
            if (!space) out += ' ';
            out += char(ch);
            out += ' ';
            space = true;
        } else if (!space) {
            out += ' ';
            space = true;
        }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

} // namespace dd::shapes
