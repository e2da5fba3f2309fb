#include "core/text/conditioning.h"

#include "core/text/clip_tokenizer.h"

#include <torch/torch.h>

#include <stdexcept>

namespace dd::text {
namespace {

void requireSkip(int clipSkip) {
    if (clipSkip < 0) throw std::invalid_argument("clip skip must be >= 0 (diffusers numbering), got " + std::to_string(clipSkip));
}

// SDXL branch of encode_prompt: hidden_states[-(k+2)], no final LN; pooled = output[0] of the encoder
// whose first output is 2-D, i.e. text_embeds of the projection model.
TextConditioning sdxlSide(nn::ClipTextModel& encoder1, nn::ClipTextModel& encoder2, const torch::Tensor& ids1,
                          const torch::Tensor& ids2, int layerFromEnd, const nn::InjectedVectors& inject1,
                          const nn::InjectedVectors& inject2) {
    auto out2 = encoder2->forward(ids2, inject2);
    if (!out2.textEmbeds.defined())
        throw std::invalid_argument("SDXL text_encoder_2 must be a CLIPTextModelWithProjection (projection_dim > 0)");
    torch::Tensor embeds = out2.hiddenState(layerFromEnd);
    if (encoder1) {
        auto out1 = encoder1->forward(ids1, inject1);
        embeds = torch::cat({out1.hiddenState(layerFromEnd).to(embeds.device(), embeds.scalar_type()), embeds}, -1);
    }
    return {embeds, out2.textEmbeds};
}

} // namespace

TextConditioning CfgConditioning::batched() const {
    TextConditioning b;
    b.embeds = torch::cat({negative.embeds, positive.embeds}, 0);
    if (positive.pooled.defined()) b.pooled = torch::cat({negative.pooled, positive.pooled}, 0);
    return b;
}

TextConditioning encodeSd(nn::ClipTextModel encoder, const torch::Tensor& ids, int clipSkip, const nn::InjectedVectors& inject) {
    requireSkip(clipSkip);
    torch::NoGradGuard noGrad;
    auto out = encoder->forward(ids, inject);
    if (clipSkip == 0) return {out.lastHiddenState, {}};
    return {encoder->finalLayerNorm(out.hiddenState(clipSkip + 1)), {}};
}

CfgConditioning encodeSdCfg(nn::ClipTextModel encoder, const torch::Tensor& positiveIds, const torch::Tensor& negativeIds,
                            int clipSkip) {
    CfgConditioning c;
    c.positive = encodeSd(encoder, positiveIds, clipSkip);
    c.negative = encodeSd(encoder, negativeIds, 0);
    return c;
}

TextConditioning encodeSdxl(nn::ClipTextModel encoder1, nn::ClipTextModel encoder2, const torch::Tensor& ids1,
                            const torch::Tensor& ids2, int clipSkip, const nn::InjectedVectors& inject1,
                            const nn::InjectedVectors& inject2) {
    requireSkip(clipSkip);
    return encodeSdxlLayer(encoder1, encoder2, ids1, ids2, clipSkip + 2, inject1, inject2);
}

TextConditioning encodeSdxlLayer(nn::ClipTextModel encoder1, nn::ClipTextModel encoder2, const torch::Tensor& ids1,
                                 const torch::Tensor& ids2, int layerFromEnd, const nn::InjectedVectors& inject1,
                                 const nn::InjectedVectors& inject2) {
    if (layerFromEnd < 1) throw std::invalid_argument("an SDXL hidden state counts from 1 at the end, got " + std::to_string(layerFromEnd));
    torch::NoGradGuard noGrad;
    return sdxlSide(encoder1, encoder2, ids1, ids2, layerFromEnd, inject1, inject2);
}

CfgConditioning encodeSdxlCfg(nn::ClipTextModel encoder1, nn::ClipTextModel encoder2, const torch::Tensor& positiveIds1,
                              const torch::Tensor& positiveIds2, const torch::Tensor& negativeIds1,
                              const torch::Tensor& negativeIds2, bool zeroNegative, int clipSkip) {
    CfgConditioning c;
    c.positive = encodeSdxl(encoder1, encoder2, positiveIds1, positiveIds2, clipSkip);
    if (zeroNegative)
        c.negative = {torch::zeros_like(c.positive.embeds), torch::zeros_like(c.positive.pooled)};
    else
        c.negative = encodeSdxl(encoder1, encoder2, negativeIds1, negativeIds2, 0);
    return c;
}

torch::Tensor tokenIds(const ClipTokenizer& tokenizer, const std::vector<std::string>& prompts) {
    auto ids = torch::empty({static_cast<int64_t>(prompts.size()), ClipTokenizer::kMaxLength}, torch::kLong);
    auto acc = ids.accessor<int64_t, 2>();
    for (size_t row = 0; row < prompts.size(); ++row) {
        const auto padded = tokenizer.encodePadded(prompts[row]);
        for (int i = 0; i < ClipTokenizer::kMaxLength; ++i) acc[static_cast<int64_t>(row)][i] = padded.ids[static_cast<size_t>(i)];
    }
    return ids;
}

} // namespace dd::text
