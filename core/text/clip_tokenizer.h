#pragma once
// CLIP byte-level BPE tokenizer, id-for-id identical to transformers' CLIPTokenizer (5.x, backed by
// the tokenizers library) with the SD tokenizer files.
//
//   auto tok = dd::text::ClipTokenizer::fromFolder(modelDir / "tokenizer_2");
//   std::vector<int> ids = tok.encodePadded("a photo of a cat").ids;  // 77 ids, padded with tok.padId()
//
// A loaded tokenizer is immutable: encode* may be called from any number of threads.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dd::text {

// The pad token is part of the tokenizer, not only of padding: transformers registers a "!" pad
// token as a special token, so every "!" in a prompt becomes id 0 ("!!" → 0, 0 instead of 748).
enum class ClipPad {
    EndOfText,    // "<|endoftext|>" = 49407: SD1.x `tokenizer`, SDXL `tokenizer`
    Exclamation,  // "!" = 0: SD2.x `tokenizer`, SDXL `tokenizer_2`
};

class ClipTokenizer {
public:
    static constexpr int kMaxLength = 77;            // BOS + 75 content tokens + EOS
    static constexpr int kPadWithEos = 49407;        // SD1.x `tokenizer`, SDXL `tokenizer`
    static constexpr int kPadWithZero = 0;           // SD2.x `tokenizer`, SDXL `tokenizer_2` ("!")

    // A diffusers tokenizer folder: vocab.json + merges.txt, pad_token from tokenizer_config.json or
    // special_tokens_map.json (default "<|endoftext|>"). Throws dd::io::ModelFileError.
    static ClipTokenizer fromFolder(const std::filesystem::path& dir);
    // OpenAI's bpe_simple_vocab_16e6.txt.gz (resources/clip/). Throws dd::io::ModelFileError.
    static ClipTokenizer fromBundledVocab(const std::filesystem::path& gzFile, ClipPad pad = ClipPad::EndOfText);

    // Content ids without BOS/EOS, no length limit. A literal "<|startoftext|>" / "<|endoftext|>"
    // (and "!" with ClipPad::Exclamation) in the text becomes that special id, as in transformers.
    std::vector<int> encode(std::string_view text) const;

    struct Padded {
        std::vector<int> ids;   // exactly maxLength ids: BOS, content, EOS, padding
        int contentTokens = 0;  // content ids kept
        int droppedTokens = 0;  // content ids cut by truncation (diffusers only logs them)
    };
    // transformers' tokenizer(text, padding="max_length", max_length, truncation=True).
    Padded encodePadded(std::string_view text, int maxLength = kMaxLength) const;

    // The same vocabulary with another pad token. A1111 reads OpenCLIP prompts (SD2, SDXL-G) with open_clip's
    // tokenizer, where "!" is plain text: withPad(ClipPad::EndOfText) tokenizes like it.
    ClipTokenizer withPad(ClipPad pad) const;

    int bosId() const { return m_bos; }
    int padId() const { return m_pad; }
    int eosId() const { return m_eos; }
    int vocabSize() const;
    std::optional<int> tokenId(std::string_view token) const;  // e.g. ",</w>"
    const std::string& token(int id) const;                     // "" for an unknown id

private:
    // The parsed files, shared by every copy and withPad() of one tokenizer: copying a tokenizer (a model's,
    // a prompt encoder's) costs a pointer, not 49 408 tokens and 48 894 merges.
    struct Vocabulary;

    ClipTokenizer() = default;
    void build(std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges,
               ClipPad pad, const std::string& source);
    void encodeSegment(std::u32string_view raw, std::vector<int>& out) const;
    void bpe(const std::string& word, std::vector<int>& out) const;

    std::shared_ptr<const Vocabulary> m_vocab;
    int m_bos = -1;
    int m_eos = -1;
    int m_pad = -1;
    bool m_padIsSpecial = false;  // "!" split out of the text
};

} // namespace dd::text
