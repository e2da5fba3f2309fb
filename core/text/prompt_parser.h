#pragma once
// Prompt text → weighted CLIP token chunks, as AUTOMATIC1111's webui does it, or plain truncation
// at 77 tokens as diffusers does. Pure functions, thread-safe.
//
//   auto parts = dd::text::parsePromptAttention("a (red:1.3) [car]");
//   auto prompt = dd::text::tokenizePrompt(tokenizer, text);
//
// A1111 tokenizes OpenCLIP prompts (SD2, SDXL-G) with open_clip's tokenizer, where "!" is plain text,
// and pads with 0 only after the first EOS: for that, pass a ClipPad::EndOfText tokenizer and
// padId 0. Reference mode uses the tokenizer's own padding, as diffusers does.
//   for (const auto& c : prompt.chunks) show(c.contentTokens, "/75");
#include "core/text/clip_tokenizer.h"
#include "core/text/embedding_library.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dd::text {

// A prompt the A1111 grammar rejects, e.g. "(cat:1.2.3)" (A1111 fails there too).
class PromptError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct WeightedText {
    std::string text;
    double weight = 1.0;  // double: A1111 merges runs by exact float equality
    bool operator==(const WeightedText&) const = default;
};

// Ref: A1111 modules/prompt_parser.py::parse_prompt_attention. (x) ×1.1, [x] ÷1.1, (x:w) ×w, nesting
// multiplies, unclosed brackets run to the end, \( \) \[ \] \\ are literals, a lone "\" vanishes,
// "BREAK" becomes {"BREAK", -1}, equal-weight neighbours merge.
std::vector<WeightedText> parsePromptAttention(std::string_view prompt);

enum class PromptMode {
    A1111,      // emphasis syntax, chunks of 75 tokens, BREAK, comma back-tracking
    Reference,  // diffusers: raw text, BOS + ≤75 + EOS + padding, the rest cut
};

struct PromptOptions {
    PromptMode mode = PromptMode::A1111;
    bool emphasis = true;    // false = A1111 emphasis "None": brackets and BREAK are plain text
    int commaBacktrack = 20; // A1111 comma_padding_backtrack; 0 disables
    std::optional<int> padId;  // A1111 mode; default: the tokenizer's padId()
    // A1111 mode: embeddings named in the prompt take their vectors' positions (id 0 there; the encoder puts the
    // vectors in). One that does not fit in what is left of a chunk starts the next one.
    const EmbeddingVocabulary* embeddings = nullptr;
};

struct PromptChunk {
    static constexpr int kContentLength = 75;
    std::vector<int> ids;        // 77: BOS, content, EOS-filled, EOS; after the first EOS padId
    std::vector<float> weights;  // 77: 1 on BOS/EOS/padding
    int contentTokens = 0;       // prompt tokens in this chunk (the GUI's "n/75"), an embedding's vectors included
    std::vector<EmbeddingSpan> embeddings;  // where textual-inversion vectors replace the token embeddings
};

struct TokenizedPrompt {
    std::vector<PromptChunk> chunks;  // at least one
    int tokenCount = 0;     // A1111's count: 75 per chunk closed early + the last chunk's tokens; Reference: all tokens
    int droppedTokens = 0;  // Reference mode: tokens past 75 that diffusers cuts
    std::vector<std::string> embeddingsUsed;   // names, in order of first use
    std::vector<std::string> embeddingsUnfit;  // names of embeddings for another model, read as words
};

TokenizedPrompt tokenizePrompt(const ClipTokenizer& tokenizer, std::string_view prompt, const PromptOptions& options = {});

// A1111 extra networks: "<lora:name:0.8>" (text encoder and UNet 0.8), "<lora:name:0.5:1>" (te 0.5, unet 1),
// "<lora:name:te=0.5:unet=1>"; "<lyco:…>" is the same as "<lora:…>". Every "<word:…>" tag is cut out of the text
// (what is left is encoded as it stands, as A1111 does); other kinds (hypernet…) are listed in `ignored`.
// Ref: A1111 modules/extra_networks.py (re_extra_net, parse_prompt), extensions-builtin/Lora/extra_networks_lora.py.
struct LoraTag {
    std::string name;
    double textEncoderWeight = 1.0;
    double unetWeight = 1.0;
    bool operator==(const LoraTag&) const = default;
};
struct ExtraNetworks {
    std::string prompt;                 // without the tags
    std::vector<LoraTag> loras;         // in prompt order
    std::vector<std::string> ignored;   // tags of other kinds, as written
};
// Throws PromptError for a weight that is not a number ("<lora:x:abc>"; A1111 fails there too).
ExtraNetworks extractExtraNetworks(std::string_view prompt);

// A1111's counter denominator: ceil(max(count, 1) / 75) · 75.
int targetTokenCount(int tokenCount);

} // namespace dd::text
