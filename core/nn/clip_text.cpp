#include "core/nn/clip_text.h"

#include "core/io/model_error.h"
#include "core/nn/load_weights.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <atomic>

#include <stdexcept>

namespace dd::nn {
namespace {

LoraLinear linear(int64_t in, int64_t out, bool bias = true) {
    return LoraLinear(torch::nn::LinearOptions(in, out).bias(bias));
}

} // namespace

const torch::Tensor& ClipTextOutput::hiddenState(int k) const {
    if (k < 1 || k > static_cast<int>(hiddenStates.size()))
        throw std::out_of_range("hidden_states[-" + std::to_string(k) + "]: the encoder has " +
                                std::to_string(hiddenStates.size()) + " hidden states");
    return hiddenStates[hiddenStates.size() - static_cast<size_t>(k)];
}

// ---------------------------------------------------------------- CLIPAttention
ClipAttentionImpl::ClipAttentionImpl(int64_t width, int64_t heads) : numHeads(heads) {
    // Registration order follows transformers (k, v, q, out) so named_parameters() lists alike.
    k_proj = register_module("k_proj", linear(width, width));
    v_proj = register_module("v_proj", linear(width, width));
    q_proj = register_module("q_proj", linear(width, width));
    out_proj = register_module("out_proj", linear(width, width));
}

torch::Tensor ClipAttentionImpl::forward(const torch::Tensor& x) {
    const int64_t b = x.size(0), t = x.size(1), w = x.size(2);
    auto heads = [&](const torch::Tensor& y) { return y.view({b, t, numHeads, w / numHeads}).transpose(1, 2); };
    // transformers' default "sdpa" interface with is_causal (create_causal_mask returns None for SDPA);
    // default scale = head_dim^-0.5 = CLIPAttention.scale.
    auto o = at::scaled_dot_product_attention(heads(q_proj(x)), heads(k_proj(x)), heads(v_proj(x)),
                                              /*attn_mask=*/std::nullopt, /*dropout_p=*/0.0, /*is_causal=*/true);
    return out_proj(o.transpose(1, 2).reshape({b, t, w}));
}

// ---------------------------------------------------------------- CLIPMLP
ClipMlpImpl::ClipMlpImpl(int64_t width, int64_t intermediate, ClipActivation act) : activation(act) {
    fc1 = register_module("fc1", linear(width, intermediate));
    fc2 = register_module("fc2", linear(intermediate, width));
}

torch::Tensor ClipMlpImpl::forward(const torch::Tensor& x) {
    auto h = fc1(x);
    switch (activation) {
    case ClipActivation::QuickGelu: h = h * torch::sigmoid(1.702 * h); break;
    case ClipActivation::Gelu: h = torch::gelu(h); break;
    case ClipActivation::GeluTanh: h = torch::gelu(h, "tanh"); break;
    }
    return fc2(h);
}

// ---------------------------------------------------------------- CLIPEncoderLayer
ClipEncoderLayerImpl::ClipEncoderLayerImpl(const ClipTextConfig& c) {
    auto ln = [&] { return LayerNorm(torch::nn::LayerNormOptions({c.hiddenSize}).eps(c.layerNormEps)); };
    self_attn = register_module("self_attn", ClipAttention(c.hiddenSize, c.numAttentionHeads));
    layer_norm1 = register_module("layer_norm1", ln());
    mlp = register_module("mlp", ClipMlp(c.hiddenSize, c.intermediateSize, c.hiddenAct));
    layer_norm2 = register_module("layer_norm2", ln());
}

torch::Tensor ClipEncoderLayerImpl::forward(const torch::Tensor& x) {
    auto h = x + self_attn(layer_norm1(x));
    return h + mlp(layer_norm2(h));
}

// ---------------------------------------------------------------- CLIPTextEmbeddings / encoder / body
ClipTextEmbeddingsImpl::ClipTextEmbeddingsImpl(const ClipTextConfig& c) {
    token_embedding = register_module("token_embedding", Embedding(c.vocabSize, c.hiddenSize));
    position_embedding = register_module("position_embedding", Embedding(c.maxPositionEmbeddings, c.hiddenSize));
}

torch::Tensor ClipTextEmbeddingsImpl::forward(const torch::Tensor& ids, const InjectedVectors& inject) {
    const int64_t t = ids.size(-1), maxT = position_embedding->weight.size(0);
    if (t > maxT)
        throw std::invalid_argument("CLIP text encoder: " + std::to_string(t) + " tokens, at most " + std::to_string(maxT));
    // Through the layer's forward (not its weight), so an offloaded or fp8-stored table is materialised.
    const auto positions = torch::arange(t, ids.options().dtype(torch::kLong)).unsqueeze(0);
    auto tokens = token_embedding(ids);
    for (const auto& v : inject) {
        const int64_t n = v.rows.size(0);
        if (v.position < 0 || v.position + n > t || v.rows.size(-1) != tokens.size(-1))
            throw std::invalid_argument("CLIP text encoder: " + std::to_string(n) + " embedding vectors of width " +
                                        std::to_string(v.rows.size(-1)) + " do not fit at token " + std::to_string(v.position));
        tokens.narrow(1, v.position, n).copy_(v.rows.to(tokens.options()).unsqueeze(0).expand({tokens.size(0), n, tokens.size(-1)}));
    }
    return tokens + position_embedding(positions);
}

ClipEncoderImpl::ClipEncoderImpl(const ClipTextConfig& c) {
    layers = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.numHiddenLayers; ++i) layers->push_back(ClipEncoderLayer(c));
}

ClipTextTransformerImpl::ClipTextTransformerImpl(const ClipTextConfig& c) {
    embeddings = register_module("embeddings", ClipTextEmbeddings(c));
    encoder = register_module("encoder", ClipEncoder(c));
    final_layer_norm = register_module(
        "final_layer_norm", LayerNorm(torch::nn::LayerNormOptions({c.hiddenSize}).eps(c.layerNormEps)));
}

// ---------------------------------------------------------------- CLIPTextModel(WithProjection)
ClipTextModelImpl::ClipTextModelImpl(const ClipTextConfig& c) : m_config(c) {
    text_model = register_module("text_model", ClipTextTransformer(c));
    if (c.projectionDim > 0) text_projection = register_module("text_projection", linear(c.hiddenSize, c.projectionDim, false));
}

torch::Dtype ClipTextModelImpl::dtype() const { return text_model->final_layer_norm->weight.scalar_type(); }
torch::Device ClipTextModelImpl::device() const {
    return inputDevice ? *inputDevice : text_model->final_layer_norm->weight.device();
}

// Ref: CLIPTextModel.forward, the two pooled_output branches.
torch::Tensor ClipTextModelImpl::poolingIndex(const torch::Tensor& ids) const {
    if (m_config.eosTokenId == 2) return ids.argmax(-1);
    return ids.eq(m_config.eosTokenId).to(torch::kInt).argmax(-1);
}

namespace {
std::atomic<int64_t> g_forwardCalls{0};
}

int64_t ClipTextModelImpl::forwardCalls() { return g_forwardCalls.load(); }

ClipTextOutput ClipTextModelImpl::forward(const torch::Tensor& idsIn, const InjectedVectors& inject) {
    ++g_forwardCalls;
    if (idsIn.dim() != 2) throw std::invalid_argument("CLIP text encoder expects token ids shaped [batch, tokens]");
    const torch::Tensor ids = idsIn.to(device(), torch::kLong);
    ClipTextOutput out;
    auto h = text_model->embeddings(ids, inject);
    out.hiddenStates.reserve(text_model->encoder->layers->size() + 1);
    out.hiddenStates.push_back(h);
    for (const auto& layer : *text_model->encoder->layers) {
        h = layer->as<ClipEncoderLayer>()->forward(h);
        out.hiddenStates.push_back(h);
    }
    out.lastHiddenState = text_model->final_layer_norm(h);
    const auto rows = torch::arange(ids.size(0), ids.options());
    out.pooled = out.lastHiddenState.index({rows, poolingIndex(ids)});
    if (text_projection) out.textEmbeds = text_projection(out.pooled);
    return out;
}

ClipTextModel loadClipText(const ClipTextConfig& config, const io::TensorMap& weights, const std::string& source,
                           torch::Dtype dtype, torch::Device device) {
    io::TensorMap named;
    for (const auto& [key, t] : weights) {
        if (key.ends_with("position_ids")) continue;
        if (key.starts_with("text_projection.") && config.projectionDim == 0) continue;
        const bool top = key.starts_with("text_model.") || key.starts_with("text_projection.");
        named.emplace(top ? key : "text_model." + key, t);
    }
    // Built without initialisation; each file tensor is converted once, straight to its dtype and device.
    ClipTextModel model = buildForLoading([&] { return ClipTextModel(config); });
    const auto unused = loadWeights(*model, named, source, LoadTarget{device, dtype});
    if (!unused.empty())
        throw io::ModelFileError(source, "weight '" + unused.front() + "' does not belong to a CLIP text encoder with this config (" +
                                             std::to_string(unused.size()) + " unexpected weights)");
    model->eval();
    return model;
}

} // namespace dd::nn
