// Ref: AUTOMATIC1111 modules/sd_hijack_clip.py (forward, process_tokens), modules/sd_emphasis.py,
// modules/sd_samplers_cfg_denoiser.py (pad_cond_uncond, pad_cond); diffusers encode_prompt (reference syntax).
#include "core/text/prompt_encoder.h"

#include "core/api/generation_settings.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace dd::text {
namespace {

// diffusers' path, kept exactly as the engine had it (tests/core/pipeline/test_pipeline.cpp compares it bit for bit).
CfgConditioning encodeReference(const TextModel& m, std::string_view prompt, const std::optional<std::string>& negative,
                                int clipSkip) {
    const std::string p(prompt);
    CfgConditioning c;
    if (!m.isXl()) {
        const auto ids = tokenIds(*m.tokenizer1, {p});
        if (negative) return encodeSdCfg(m.encoder1, ids, tokenIds(*m.tokenizer1, {*negative}), clipSkip);
        c.positive = encodeSd(m.encoder1, ids, clipSkip);
        return c;
    }
    const ClipTokenizer& tok1 = m.tokenizer1 ? *m.tokenizer1 : *m.tokenizer2;
    const auto ids1 = tokenIds(tok1, {p}), ids2 = tokenIds(*m.tokenizer2, {p});
    if (negative) {
        const bool zero = negative->empty() && m.forceZerosForEmptyPrompt;
        const auto n1 = tokenIds(tok1, {*negative}), n2 = tokenIds(*m.tokenizer2, {*negative});
        return encodeSdxlCfg(m.encoder1, m.encoder2, ids1, ids2, n1, n2, zero, clipSkip);
    }
    c.positive = encodeSdxl(m.encoder1, m.encoder2, ids1, ids2, clipSkip);
    return c;
}

// One encoder's tokenizer as A1111 uses it. OpenCLIP: open_clip's tokenizer ("!" is text), pad 0 after EOS.
class ChunkTokenizer {
public:
    // `embeddings` with the widths of the model's encoders (width2 = 0 without a second one).
    ChunkTokenizer(const ClipTokenizer& tok, const PromptEncodeOptions& o, const EmbeddingLibrary* embeddings,
                   int64_t width1, int64_t width2)
        : m_tok(&tok) {
        m_options.emphasis = o.parseEmphasis;
        m_options.commaBacktrack = o.commaBacktrack;
        if (tok.padId() != tok.eosId()) {
            m_openClip = tok.withPad(ClipPad::EndOfText);
            m_tok = &*m_openClip;
            m_options.padId = tok.padId();
        }
        if (embeddings && !embeddings->files.empty()) {
            m_vocabulary.emplace(*m_tok, *embeddings, width1, width2);
            m_options.embeddings = &*m_vocabulary;
        }
    }
    ChunkTokenizer(const ChunkTokenizer&) = delete;
    ChunkTokenizer& operator=(const ChunkTokenizer&) = delete;

    TokenizedPrompt tokenize(std::string_view text) const { return tokenizePrompt(*m_tok, text, m_options); }

private:
    std::optional<ClipTokenizer> m_openClip;
    const ClipTokenizer* m_tok;
    std::optional<EmbeddingVocabulary> m_vocabulary;
    PromptOptions m_options;
};

void addNames(std::vector<std::string>& to, const std::vector<std::string>& names) {
    for (const auto& n : names)
        if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
}

torch::Tensor chunkIds(const PromptChunk& chunk, torch::Device device) {
    return torch::tensor(std::vector<int64_t>(chunk.ids.begin(), chunk.ids.end()), torch::kLong).unsqueeze(0).to(device);
}

class A1111Encoder {
public:
    A1111Encoder(const TextModel& m, const PromptEncodeOptions& o) : m_model(m), m_options(o) {
        const EmbeddingLibrary* lib = m.embeddings ? &m.embeddings->library() : nullptr;
        const int64_t w1 = m.encoder1 ? m.encoder1->config().hiddenSize : 0, w2 = m.encoder2 ? m.encoder2->config().hiddenSize : 0;
        if (m.encoder1) m_tok1.emplace(m.tokenizer1 ? *m.tokenizer1 : *m.tokenizer2, o, lib, w1, w2);
        if (m.encoder2) m_tok2.emplace(*m.tokenizer2, o, lib, w1, w2);
    }

    // [1, 77·k, C]; SDXL pooled [1, P] from the first chunk.
    TextConditioning encode(std::string_view text) {
        const auto t1 = m_tok1 ? m_tok1->tokenize(text) : TokenizedPrompt{};
        const auto t2 = m_tok2 ? m_tok2->tokenize(text) : TokenizedPrompt{};
        const auto& c1 = t1.chunks;
        const auto& c2 = t2.chunks;
        for (const auto* t : {&t1, &t2}) {
            addNames(m_used, t->embeddingsUsed);
            addNames(m_unfit, t->embeddingsUnfit);
        }
        if (m_tok1 && m_tok2 && c1.size() != c2.size())
            throw std::runtime_error("the two SDXL tokenizers split the prompt into " + std::to_string(c1.size()) + " and " +
                                     std::to_string(c2.size()) + " chunks; they must share one vocabulary");
        std::vector<torch::Tensor> zs;
        torch::Tensor pooled;
        for (size_t i = 0; i < std::max(c1.size(), c2.size()); ++i) {
            auto z = encodeChunk(m_tok1 ? &c1[i] : nullptr, m_tok2 ? &c2[i] : nullptr);
            if (i == 0) pooled = z.pooled;
            zs.push_back(z.embeds);
        }
        return {torch::cat(zs, 1), pooled};
    }

    const std::vector<std::string>& embeddingsUsed() const { return m_used; }
    const std::vector<std::string>& embeddingsUnfit() const { return m_unfit; }

    // pad_cond: the shorter side gets whole empty-prompt chunks appended.
    void padToSameLength(TextConditioning& a, TextConditioning& b) {
        const int64_t diff = a.embeds.size(1) - b.embeds.size(1);
        if (diff == 0) return;
        TextConditioning& shorter = diff > 0 ? b : a;
        if (!m_empty.defined()) m_empty = encode("").embeds;
        const int64_t repeats = std::abs(diff) / m_empty.size(1);
        shorter.embeds = torch::cat({shorter.embeds, m_empty.to(shorter.embeds.options()).repeat({1, repeats, 1})}, 1);
    }

private:
    // The chunk's embedding vectors for the encoder on `side` (EmbeddingVectors::rows).
    nn::InjectedVectors injected(const PromptChunk& chunk, int side) const {
        nn::InjectedVectors out;
        for (const auto& span : chunk.embeddings) out.push_back({span.position, m_model.embeddings->rows(span.file, side)});
        return out;
    }

    TextConditioning encodeChunk(const PromptChunk* chunk1, const PromptChunk* chunk2) {
        torch::NoGradGuard noGrad;
        const int skip = m_options.clipSkip;
        if (!m_model.isXl()) {
            const auto z = encodeSd(m_model.encoder1, chunkIds(*chunk1, m_model.encoder1->device()), skip, injected(*chunk1, 0)).embeds;
            return {applyEmphasis(z, chunk1->weights, m_options.emphasis), {}};
        }
        // The SDXL layer of conditioning.h, hidden_states[-(k+2)] without the final LayerNorm, or the tool's own.
        const int layer = m_options.sdxlLayerFromEnd > 0 ? m_options.sdxlLayerFromEnd : skip + 2;
        auto side2 = encodeSdxlLayer(nn::ClipTextModel(nullptr), m_model.encoder2, {}, chunkIds(*chunk2, m_model.encoder2->device()),
                                     layer, {}, injected(*chunk2, 1));
        auto z = applyEmphasis(side2.embeds, chunk2->weights, m_options.emphasis);
        if (chunk1) {
            nn::ClipTextModel encoder1 = m_model.encoder1;
            const auto h1 = encoder1->forward(chunkIds(*chunk1, encoder1->device()), injected(*chunk1, 0)).hiddenState(layer);
            z = torch::cat({applyEmphasis(h1, chunk1->weights, m_options.emphasis).to(z.device(), z.scalar_type()), z}, -1);
        }
        return {z, side2.pooled};
    }

    const TextModel& m_model;
    PromptEncodeOptions m_options;
    std::optional<ChunkTokenizer> m_tok1, m_tok2;
    torch::Tensor m_empty;
    std::vector<std::string> m_used, m_unfit;
};

void checkModel(const TextModel& m) {
    if (m.isXl() ? !m.tokenizer2 : !(m.encoder1 && m.tokenizer1))
        throw std::invalid_argument("the model has no text encoder and tokenizer to encode prompts with");
}

} // namespace

PromptEncodeOptions promptEncodeOptions(const TextInput& s) {
    PromptEncodeOptions o;
    if (s.promptSyntax == "reference") o.mode = PromptMode::Reference;
    else if (s.promptSyntax != "a1111") throw std::invalid_argument("prompt syntax '" + s.promptSyntax + "' is unknown");
    if (s.emphasis == "No norm") o.emphasis = EmphasisMode::NoNorm;
    else if (s.emphasis == "Ignore") o.emphasis = EmphasisMode::Ignore;
    else if (s.emphasis == "None") o.parseEmphasis = false;
    else if (s.emphasis != "Original") throw std::invalid_argument("emphasis '" + s.emphasis + "' is unknown");
    o.clipSkip = clipSkipFromA1111(s.clipSkip);
    o.padToSameLength = s.padConds;
    if (s.sdxlClipSkip == "A1111") o.sdxlLayerFromEnd = 2;  // A1111 leaves SDXL at its penultimate layer
    else if (s.sdxlClipSkip == "ComfyUI") o.sdxlLayerFromEnd = std::max(1, s.clipSkip);
    else if (s.sdxlClipSkip != "diffusers") throw std::invalid_argument("SDXL clip skip '" + s.sdxlClipSkip + "' is unknown");
    return o;
}

CfgConditioning encodePrompts(const TextModel& model, std::string_view prompt, const std::optional<std::string>& negative,
                              const PromptEncodeOptions& options) {
    checkModel(model);
    if (options.mode == PromptMode::Reference) return encodeReference(model, prompt, negative, options.clipSkip);
    A1111Encoder encoder(model, options);
    CfgConditioning c;
    c.positive = encoder.encode(prompt);
    if (negative && negative->empty() && model.isXl() && model.forceZerosForEmptyPrompt) {
        const auto chunk = c.positive.embeds.slice(1, 0, ClipTokenizer::kMaxLength);
        c.negative = {torch::zeros_like(chunk), torch::zeros_like(c.positive.pooled)};
    } else if (negative) {
        c.negative = encoder.encode(*negative);
    }
    if (negative && options.padToSameLength) encoder.padToSameLength(c.positive, c.negative);
    c.embeddings = encoder.embeddingsUsed();
    c.unfitEmbeddings = encoder.embeddingsUnfit();
    return c;
}

CfgConditioning encodePrompts(const TextModel& model, const TextInput& input) {
    return encodePrompts(model, input.prompt, input.negative, promptEncodeOptions(input));
}

} // namespace dd::text
