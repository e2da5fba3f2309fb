#pragma once
// Token ids → what the UNet is conditioned on, exactly as diffusers builds it.
// Ref: diffusers 0.42 pipelines/stable_diffusion/pipeline_stable_diffusion.py (StableDiffusionPipeline.encode_prompt),
// pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl.py (StableDiffusionXLPipeline.encode_prompt);
// sd_reference.md §6.2–6.4.
//
//   auto ids = dd::text::tokenIds(tokenizer, {"a photo of a cat"});            // [1, 77] int64
//   auto neg = dd::text::tokenIds(tokenizer, {""});
//   auto cfg = dd::text::encodeSdCfg(textEncoder, ids, neg, dd::text::clipSkipFromA1111(2));
//   unet(latents2x, t, cfg.batched().embeds);                                   // rows: [negative; positive]
//
// Clip skip has two numberings (sd_reference.md §6.3). This API uses diffusers' `clip_skip` = k:
//   SD 1.x / 2.x: k = 0 → last_hidden_state; k ≥ 1 → hidden_states[-(k+1)] followed by final_layer_norm.
//   SDXL:         both encoders hidden_states[-(k+2)], never final_layer_norm (k = 0 → penultimate layer).
// A1111's "Clip skip: n" (CLIP_stop_at_last_layers, default 1) is k = n − 1, so A1111 "Clip skip: 2" is
// diffusers clip_skip = 1; convert with clipSkipFromA1111 / clipSkipToA1111.
// As in diffusers, clip skip applies to the positive prompt only; the negative prompt always uses the default
// layer (a diffusers quirk kept on purpose so images match).
//
// Runs under torch::NoGradGuard on the encoders' device and dtype; call from the engine thread.
#include "core/nn/clip_text.h"

#include <string>
#include <vector>

namespace dd::text {

class ClipTokenizer;

constexpr int clipSkipFromA1111(int stopAtLastLayers) { return stopAtLastLayers > 1 ? stopAtLastLayers - 1 : 0; }
constexpr int clipSkipToA1111(int diffusersClipSkip) { return diffusersClipSkip + 1; }

struct TextConditioning {
    torch::Tensor embeds;  // [B, 77, C] encoder_hidden_states (SD1 768, SD2 1024, SDXL 768+1280, refiner 1280)
    torch::Tensor pooled;  // SDXL only: [B, P] text_embeds of text_encoder_2; undefined for SD 1.x / 2.x
};

struct CfgConditioning {
    TextConditioning negative;
    TextConditioning positive;
    // A1111 syntax: the textual-inversion embeddings the prompts used, and the named ones made for another model
    // (read as words), by name.
    std::vector<std::string> embeddings, unfitEmbeddings;
    // Rows [negative; positive], the order diffusers feeds the UNet under classifier-free guidance.
    TextConditioning batched() const;
};

// SD 1.x / 2.x, one side (StableDiffusionPipeline.encode_prompt, the prompt branch). ids: [B, T].
// `inject`: textual-inversion vectors (nn::TokenVectors).
TextConditioning encodeSd(nn::ClipTextModel encoder, const torch::Tensor& ids, int clipSkip = 0,
                          const nn::InjectedVectors& inject = {});

// SD 1.x / 2.x with CFG: negativeIds are the tokens of the negative prompt, or of "" when there is none
// (diffusers encodes "" for SD; there is no zeroing). clipSkip is ignored for the negative side (diffusers).
CfgConditioning encodeSdCfg(nn::ClipTextModel encoder, const torch::Tensor& positiveIds, const torch::Tensor& negativeIds,
                            int clipSkip = 0);

// SDXL, one side: concat(hidden_states[-(k+2)] of encoder1, of encoder2) on channels; pooled = encoder2's
// text_embeds. encoder1 may be empty (nullptr module) for the SDXL refiner, which has only text_encoder_2;
// ids1 is then ignored. ids1 comes from `tokenizer` (pads 49407), ids2 from `tokenizer_2` (pads 0).
// The result is in encoder2's dtype and on its device.
TextConditioning encodeSdxl(nn::ClipTextModel encoder1, nn::ClipTextModel encoder2, const torch::Tensor& ids1,
                            const torch::Tensor& ids2, int clipSkip = 0, const nn::InjectedVectors& inject1 = {},
                            const nn::InjectedVectors& inject2 = {});
// The same at hidden_states[-layerFromEnd] (≥ 1): clipSkip + 2 above; other tools count otherwise
// (api::GenerationSettings::sdxlClipSkip).
TextConditioning encodeSdxlLayer(nn::ClipTextModel encoder1, nn::ClipTextModel encoder2, const torch::Tensor& ids1,
                                 const torch::Tensor& ids2, int layerFromEnd, const nn::InjectedVectors& inject1 = {},
                                 const nn::InjectedVectors& inject2 = {});

// SDXL with CFG. zeroNegative: diffusers' `negative_prompt is None and force_zeros_for_empty_prompt`
// (model_index.json, true for SDXL base): the negative embeds and pooled are all zeros and the negative ids
// may be left undefined. Otherwise the negative ids are encoded at the default layer (clipSkip ignored).
// A UI that treats an empty negative prompt as "none" (as A1111 does) passes zeroNegative = empty && force.
CfgConditioning encodeSdxlCfg(nn::ClipTextModel encoder1, nn::ClipTextModel encoder2, const torch::Tensor& positiveIds1,
                              const torch::Tensor& positiveIds2, const torch::Tensor& negativeIds1,
                              const torch::Tensor& negativeIds2, bool zeroNegative, int clipSkip = 0);

// Convenience: prompts → [B, 77] int64 ids, each padded/truncated as diffusers' tokenizer call
// (padding="max_length", max_length=77, truncation=True). Weighted prompts and >75-token chunks go through
// the prompt parser instead.
torch::Tensor tokenIds(const ClipTokenizer& tokenizer, const std::vector<std::string>& prompts);

} // namespace dd::text
