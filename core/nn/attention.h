#pragma once
// diffusers Attention (to_q / to_k / to_v / to_out.0, optional group_norm) with switchable kernels.
// Ref: diffusers models/attention_processor.py — Attention, AttnProcessor2_0 (SDPA), AttnProcessor
// (classic baddbmm + softmax, honours upcast flags), SlicedAttnProcessor (slices of the batch×heads axis).
//
// Thread-safety: options may be changed between forwards on the thread that runs the model.
#include "core/nn/lora_layers.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

namespace dd::nn {

enum class AttentionBackend {
    Sdpa,      // at::scaled_dot_product_attention (diffusers' default; ignores the upcast flags), or for fp32 on an
               // AVX2 CPU our fused kernel where it is faster (flash_attention.h)
    SdpaMath,  // SDPA's math kernel only: deterministic, same reduction order on every machine
    Classic,   // explicit scores + softmax; fp32 scores when upcast_attention / upcast_softmax ask for it
    Sliced,    // Classic, sliceSize rows of the (batch×heads) axis at a time: same numbers, less memory
    Chunked,   // Classic, queryChunkSize queries at a time: scores never exceed [B·h, chunk, keys]
};

struct AttentionOptions {
    AttentionBackend backend = AttentionBackend::Sdpa;
    // Sliced only: rows of batch×heads per chunk. 0 = diffusers' "auto" (heads / 2 per layer), 1 = "max".
    int64_t sliceSize = 0;
    // Chunked only: queries per chunk.
    int64_t queryChunkSize = 1024;
};

struct AttentionConfig {
    int64_t queryDim = 0;
    int64_t crossAttentionDim = 0;  // 0: self-attention (keys/values from the query input)
    int64_t heads = 1;
    int64_t headDim = 0;
    bool bias = false;               // to_q/to_k/to_v bias (the VAE has it, the UNet does not)
    bool upcastAttention = false;
    bool upcastSoftmax = false;
    int64_t groupNormGroups = 0;     // > 0: group_norm on the input (VAE mid block)
    double groupNormEps = 1e-5;
    bool residualConnection = false; // VAE mid block: output + input
};

struct AttentionImpl : torch::nn::Module {
    AttentionImpl(const AttentionConfig& config, AttentionOptions options = {});
    // x: [B, L, queryDim] or [B, C, H, W] (treated as H·W tokens); context: [B, S, crossAttentionDim] or undefined.
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context = {});

    void setOptions(const AttentionOptions& o) { options = o; }

    GroupNorm group_norm{nullptr};
    LoraLinear to_q{nullptr}, to_k{nullptr}, to_v{nullptr};
    torch::nn::ModuleList to_out{nullptr};  // .0 Linear (with bias); diffusers' .1 is a parameterless Dropout
    AttentionConfig config;
    AttentionOptions options;
};
TORCH_MODULE(Attention);

// The attention kernel alone: q [B, Lq, h·d], k/v [B, Lk, h·d] → [B, Lq, h·d] (in q's dtype).
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int64_t heads,
                     const AttentionOptions& options, bool upcastAttention, bool upcastSoftmax);

// Applies `options` to every Attention inside `root` (a UNet, a VAE, a block).
void setAttentionOptions(torch::nn::Module& root, const AttentionOptions& options);

} // namespace dd::nn
