#pragma once
// Prompt and negative prompt → what the UNet is conditioned on, in either prompt syntax. Needs torch (dd_core).
//
//   text::TextModel tm{m.textEncoder, m.textEncoder2, tokenizer1, tokenizer2, m.forceZerosForEmptyPrompt};
//   text::CfgConditioning c = text::encodePrompts(tm, settings, /*cfg=*/true);  // each side [1, 77·k, C]
//
// Reference syntax: diffusers' encode_prompt through conditioning.h, unchanged (prompts cut at 75 tokens).
//
// A1111 syntax. Ref: AUTOMATIC1111 modules/sd_hijack_clip.py (FrozenCLIPEmbedderWithCustomWordsBase.forward,
// process_tokens), modules/sd_emphasis.py, modules/sd_samplers_cfg_denoiser.py (pad_cond_uncond).
//  * Each side is parsed and cut into 77-token chunks (prompt_parser.h); every chunk is encoded alone, its
//    weights applied by applyEmphasis ("Original" restores the chunk's own mean), and the chunks are joined on
//    the token axis.
//  * SDXL: both encoders see the same chunks; emphasis is applied to each encoder's output before the channel
//    concatenation (A1111 wraps each embedder separately); pooled = text_embeds of the FIRST chunk.
//  * OpenCLIP tokenizers (pad "!" = 0: SD2, SDXL text_encoder_2) tokenize like open_clip's: "!" is plain
//    text, and every id after a chunk's first EOS becomes 0.
//  * Under CFG, a side with fewer chunks is padded at the end with encodings of the empty prompt (A1111's
//    "Pad prompt/negative prompt" option, pad_cond_uncond). A1111's default instead runs the UNet once per
//    side when the lengths differ; the two are close but not equal.
//  * Clip skip applies to both sides (A1111 has one global setting); the reference syntax keeps diffusers'
//    positive-only quirk. A1111 ignores clip skip for SD2 and SDXL; here it is applied as conditioning.h says.
//  * SDXL empty negative with forceZerosForEmptyPrompt: zeros (one chunk's worth), then padded as above.
//  * Textual inversion (embedding_library.h): a name in the prompt takes its vectors' positions in the chunk;
//    their token embeddings are replaced by the vectors (SDXL: clip_l's in CLIP-L, clip_g's in bigG), and the
//    emphasis weights them like words. The reference syntax (diffusers' encode_prompt) has none.
//
// Runs under torch::NoGradGuard on the encoders' device; call from the engine thread.
#include "core/text/conditioning.h"
#include "core/text/embedding_vectors.h"
#include "core/text/emphasis.h"
#include "core/text/prompt_parser.h"
#include "core/text/text_input.h"

#include <optional>
#include <string>
#include <string_view>

namespace dd::text {

struct TextModel {
    nn::ClipTextModel encoder1{nullptr};        // SD 1.x / 2.x text encoder; SDXL CLIP-L (absent on the refiner)
    nn::ClipTextModel encoder2{nullptr};        // SDXL only: OpenCLIP bigG with projection
    const ClipTokenizer* tokenizer1 = nullptr;  // for encoder1
    const ClipTokenizer* tokenizer2 = nullptr;  // for encoder2
    bool forceZerosForEmptyPrompt = false;      // SDXL model_index.json
    EmbeddingVectors* embeddings = nullptr;     // textual inversions a prompt may name (A1111 syntax)

    bool isXl() const { return static_cast<bool>(encoder2); }
};

struct PromptEncodeOptions {
    PromptMode mode = PromptMode::A1111;
    EmphasisMode emphasis = EmphasisMode::Original;
    bool parseEmphasis = true;  // false: A1111 emphasis "None", brackets and BREAK are plain text
    int clipSkip = 0;           // diffusers numbering (conditioning.h)
    int commaBacktrack = 20;    // A1111 comma_padding_backtrack
    bool padToSameLength = true;  // A1111 pad_cond_uncond: the shorter side gets empty-prompt chunks
    int sdxlLayerFromEnd = 0;     // SDXL's encoders give hidden_states[-this]; 0: clipSkip + 2 (diffusers)
};

// The input's promptSyntax, emphasis and clipSkip (A1111 numbering). Throws std::invalid_argument for an unknown
// syntax or emphasis name.
PromptEncodeOptions promptEncodeOptions(const TextInput& input);

// negative: nullopt without CFG (the result's negative is then left empty). An empty string is an empty
// negative prompt (SDXL: zeros when forceZerosForEmptyPrompt).
CfgConditioning encodePrompts(const TextModel& model, std::string_view prompt, const std::optional<std::string>& negative,
                              const PromptEncodeOptions& options);

// The engine's entry point: the input's prompt and negative with promptEncodeOptions(input).
CfgConditioning encodePrompts(const TextModel& model, const TextInput& input);

} // namespace dd::text
