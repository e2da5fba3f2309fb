#pragma once
// CLIP text encoder (transformers CLIPTextModel / CLIPTextModelWithProjection) as a libtorch module.
// Ref: transformers 5.24 models/clip/modeling_clip.py (CLIPTextEmbeddings, CLIPAttention, CLIPMLP,
// CLIPEncoderLayer, CLIPTextModel.forward, CLIPTextModelWithProjection.forward); sd_reference.md §2.4, §6.1.
//
//   auto cfg = dd::nn::ClipTextConfig::fromJson(ck.configs.at("text_encoder_2"));
//   auto te = dd::nn::loadClipText(cfg, ck.components.at("text_encoder_2"), "text_encoder_2", torch::kHalf);
//   dd::nn::ClipTextOutput out = te->forward(ids);   // ids: int64 [B, T], T <= max_position_embeddings
//   out.hiddenState(2);                               // hidden_states[-2], the SDXL penultimate layer
//
// Parameter names equal transformers' state-dict keys ("text_model.encoder.layers.0.self_attn.q_proj.weight",
// "text_projection.weight"). Computation runs in the weights' dtype; pass ids on the weights' device.
// A module is not thread-safe while it runs; keep it on the engine thread.
#include "core/io/safetensors.h"
#include "core/nn/lora_layers.h"

#include "core/nn/clip_text_config.h"

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <optional>
#include <string>
#include <vector>

namespace dd::nn {

struct ClipTextOutput {
    torch::Tensor lastHiddenState;            // [B, T, W] after final_layer_norm
    std::vector<torch::Tensor> hiddenStates;  // L+1 entries: [0] embeddings, [i] layer i output, no final LN
    torch::Tensor pooled;                     // [B, W] lastHiddenState at the pooling position
    torch::Tensor textEmbeds;                 // [B, P] pooled · text_projectionᵀ; undefined without projection

    // transformers' hidden_states[-k] (k >= 1): k = 1 is the last layer's output before the final LN,
    // k = 2 the penultimate layer. Throws std::out_of_range for k outside 1 … L+1.
    const torch::Tensor& hiddenState(int k) const;
};

// Textual inversion: rows [n, W] that replace the token embeddings at positions position … position + n − 1 of
// every batch row (A1111's EmbeddingsWithFixes; diffusers writes them into the table under new token ids: the
// same numbers). Cast to the table's dtype.
struct TokenVectors {
    int64_t position = 0;
    torch::Tensor rows;
};
using InjectedVectors = std::vector<TokenVectors>;

// text_model.encoder.layers.N.self_attn — CLIPAttention (causal, no padding mask).
struct ClipAttentionImpl : torch::nn::Module {
    ClipAttentionImpl(int64_t width, int64_t heads);
    torch::Tensor forward(const torch::Tensor& x);
    int64_t numHeads;
    LoraLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, out_proj{nullptr};
};
TORCH_MODULE(ClipAttention);

// text_model.encoder.layers.N.mlp — CLIPMLP.
struct ClipMlpImpl : torch::nn::Module {
    ClipMlpImpl(int64_t width, int64_t intermediate, ClipActivation act);
    torch::Tensor forward(const torch::Tensor& x);
    ClipActivation activation;
    LoraLinear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(ClipMlp);

// text_model.encoder.layers.N — CLIPEncoderLayer (pre-LN).
struct ClipEncoderLayerImpl : torch::nn::Module {
    explicit ClipEncoderLayerImpl(const ClipTextConfig& c);
    torch::Tensor forward(const torch::Tensor& x);
    ClipAttention self_attn{nullptr};
    LayerNorm layer_norm1{nullptr}, layer_norm2{nullptr};
    ClipMlp mlp{nullptr};
};
TORCH_MODULE(ClipEncoderLayer);

// text_model.embeddings — CLIPTextEmbeddings (position ids 0 … T−1).
struct ClipTextEmbeddingsImpl : torch::nn::Module {
    explicit ClipTextEmbeddingsImpl(const ClipTextConfig& c);
    torch::Tensor forward(const torch::Tensor& ids, const InjectedVectors& inject = {});
    Embedding token_embedding{nullptr}, position_embedding{nullptr};
};
TORCH_MODULE(ClipTextEmbeddings);

// text_model.encoder — CLIPEncoder.
struct ClipEncoderImpl : torch::nn::Module {
    explicit ClipEncoderImpl(const ClipTextConfig& c);
    torch::nn::ModuleList layers{nullptr};
};
TORCH_MODULE(ClipEncoder);

// text_model — the CLIPTextModel body.
struct ClipTextTransformerImpl : torch::nn::Module {
    explicit ClipTextTransformerImpl(const ClipTextConfig& c);
    ClipTextEmbeddings embeddings{nullptr};
    ClipEncoder encoder{nullptr};
    LayerNorm final_layer_norm{nullptr};
};
TORCH_MODULE(ClipTextTransformer);

struct ClipTextModelImpl : torch::nn::Module {
    explicit ClipTextModelImpl(const ClipTextConfig& c);
    // ids: integer [B, T] on the module's device. Runs every layer and keeps every hidden state.
    ClipTextOutput forward(const torch::Tensor& ids, const InjectedVectors& inject = {});
    // forward() calls in this process, all encoders together (the conditioning cache's tests watch it).
    static int64_t forwardCalls();
    // transformers' final_layer_norm, for clip skip on an intermediate hidden state.
    torch::Tensor finalLayerNorm(const torch::Tensor& x) { return text_model->final_layer_norm(x); }
    const ClipTextConfig& config() const { return m_config; }
    torch::Dtype dtype() const;
    torch::Device device() const;  // where inputs go: inputDevice, else where the weights are
    // Set while offloading keeps the weights elsewhere between forwards (core/memory/offload).
    std::optional<torch::Device> inputDevice;

    ClipTextTransformer text_model{nullptr};
    LoraLinear text_projection{nullptr};  // only when config.projectionDim > 0

private:
    torch::Tensor poolingIndex(const torch::Tensor& ids) const;
    ClipTextConfig m_config;
};
TORCH_MODULE(ClipTextModel);

// Builds the model and fills it from a transformers state dict. Keys may or may not carry the
// "text_model." level (transformers >= 5.6 saves CLIPTextModel without it; Hub files have it).
// Missing or wrong-shaped weights and unexpected keys throw dd::io::ModelFileError naming `source` and
// the key; "position_ids" buffers are ignored, as is a stray text_projection on a model built without one.
// The module ends up in `dtype` on `device`, in eval mode.
ClipTextModel loadClipText(const ClipTextConfig& config, const io::TensorMap& weights, const std::string& source,
                           torch::Dtype dtype = torch::kFloat32, torch::Device device = torch::kCPU);

} // namespace dd::nn
