// Ref: diffusers models/attention_processor.py — Attention.__init__, AttnProcessor2_0, AttnProcessor,
// SlicedAttnProcessor, Attention.get_attention_scores.
#include "core/nn/attention.h"

#include "core/nn/flash_attention.h"

#include <torch/torch.h>

#include <cmath>

namespace dd::nn {
namespace {

// [B, L, h·d] → [B·h, L, d] (diffusers head_to_batch_dim).
torch::Tensor headsToBatch(const torch::Tensor& t, int64_t heads) {
    const auto b = t.size(0), l = t.size(1), d = t.size(2) / heads;
    return t.reshape({b, l, heads, d}).permute({0, 2, 1, 3}).reshape({b * heads, l, d});
}

torch::Tensor batchToHeads(const torch::Tensor& t, int64_t heads) {
    const auto bh = t.size(0), l = t.size(1), d = t.size(2);
    return t.reshape({bh / heads, heads, l, d}).permute({0, 2, 1, 3}).reshape({bh / heads, l, heads * d});
}

// Attention.get_attention_scores followed by bmm with v, on [N, L, d] tensors.
torch::Tensor classic(torch::Tensor q, torch::Tensor k, const torch::Tensor& v, double scale, bool upcastAttention,
                      bool upcastSoftmax) {
    const auto dtype = q.scalar_type();
    if (upcastAttention) {
        q = q.to(torch::kFloat32);
        k = k.to(torch::kFloat32);
    }
    // beta 0 ignores the input, so a 0-d one broadcasts instead of allocating diffusers' scores-sized buffer.
    auto scores = torch::baddbmm(torch::empty({}, q.options()), q, k.transpose(-1, -2), /*beta=*/0, /*alpha=*/scale);
    if (upcastSoftmax) scores = scores.to(torch::kFloat32);
    auto probs = scores.softmax(-1).to(dtype);
    return torch::bmm(probs, v);
}

} // namespace

torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int64_t heads,
                     const AttentionOptions& options, bool upcastAttention, bool upcastSoftmax) {
    const auto b = q.size(0), lq = q.size(1), inner = q.size(2), headDim = inner / heads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(headDim));
    // Our fused kernel where it beats torch's (fp32 on an AVX2 CPU; flash_attention.h has the measurements).
    if (options.backend == AttentionBackend::Sdpa && flashAttentionApplies(q, k, v, heads))
        return flashAttention(q, k, v, heads);
    if (options.backend == AttentionBackend::Sdpa || options.backend == AttentionBackend::SdpaMath) {
        auto split = [&](const torch::Tensor& t) { return t.view({b, -1, heads, headDim}).transpose(1, 2); };
        auto out = options.backend == AttentionBackend::Sdpa
                       ? at::scaled_dot_product_attention(split(q), split(k), split(v))
                       : std::get<0>(at::_scaled_dot_product_attention_math(split(q), split(k), split(v)));
        return out.transpose(1, 2).reshape({b, lq, inner}).to(q.scalar_type());
    }
    auto qb = headsToBatch(q, heads), kb = headsToBatch(k, heads), vb = headsToBatch(v, heads);
    if (options.backend == AttentionBackend::Classic)
        return batchToHeads(classic(qb, kb, vb, scale, upcastAttention, upcastSoftmax), heads);
    if (options.backend == AttentionBackend::Chunked) {
        // Each query row's softmax only needs its own scores, so query chunks are independent and exact.
        const int64_t chunk = std::max<int64_t>(options.queryChunkSize, 1);
        if (lq <= chunk) return batchToHeads(classic(qb, kb, vb, scale, upcastAttention, upcastSoftmax), heads);
        auto out = torch::empty({qb.size(0), lq, headDim}, q.options());
        for (int64_t start = 0; start < lq; start += chunk) {
            const auto end = std::min(start + chunk, lq);
            out.slice(1, start, end).copy_(classic(qb.slice(1, start, end), kb, vb, scale, upcastAttention, upcastSoftmax));
        }
        return batchToHeads(out, heads);
    }

    const int64_t slice = options.sliceSize > 0 ? options.sliceSize : std::max<int64_t>(heads / 2, 1);
    const auto rows = qb.size(0);
    auto out = torch::empty({rows, lq, headDim}, q.options());
    for (int64_t start = 0; start < rows; start += slice) {
        const auto end = std::min(start + slice, rows);
        out.slice(0, start, end)
            .copy_(classic(qb.slice(0, start, end), kb.slice(0, start, end), vb.slice(0, start, end), scale,
                           upcastAttention, upcastSoftmax));
    }
    return batchToHeads(out, heads);
}

AttentionImpl::AttentionImpl(const AttentionConfig& c, AttentionOptions o) : config(c), options(o) {
    const int64_t inner = c.heads * c.headDim;
    const int64_t kvDim = c.crossAttentionDim > 0 ? c.crossAttentionDim : c.queryDim;
    if (c.groupNormGroups > 0)
        group_norm = register_module(
            "group_norm", GroupNorm(torch::nn::GroupNormOptions(c.groupNormGroups, c.queryDim).eps(c.groupNormEps)));
    to_q = register_module("to_q", LoraLinear(torch::nn::LinearOptions(c.queryDim, inner).bias(c.bias)));
    to_k = register_module("to_k", LoraLinear(torch::nn::LinearOptions(kvDim, inner).bias(c.bias)));
    to_v = register_module("to_v", LoraLinear(torch::nn::LinearOptions(kvDim, inner).bias(c.bias)));
    to_out = register_module("to_out", torch::nn::ModuleList());
    to_out->push_back(LoraLinear(inner, c.queryDim));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& input, const torch::Tensor& context) {
    auto x = input;
    const bool spatial = input.dim() == 4;
    int64_t b = 0, ch = 0, h = 0, w = 0;
    if (spatial) {
        b = input.size(0), ch = input.size(1), h = input.size(2), w = input.size(3);
        x = input.reshape({b, ch, h * w}).transpose(1, 2);
    }
    if (group_norm) x = group_norm(x.transpose(1, 2)).transpose(1, 2);
    const auto& kv = context.defined() ? context : x;
    auto out = attend(to_q(x), to_k(kv), to_v(kv), config.heads, options, config.upcastAttention, config.upcastSoftmax);
    out = to_out[0]->as<LoraLinear>()->forward(out);
    if (spatial) out = out.transpose(-1, -2).reshape({b, ch, h, w});
    if (config.residualConnection) out.add_(input);  // out is this layer's own output
    return out;
}

void setAttentionOptions(torch::nn::Module& root, const AttentionOptions& options) {
    // include_self=false: the root may still be under construction (not yet owned by a shared_ptr).
    if (auto* a = dynamic_cast<AttentionImpl*>(&root)) a->setOptions(options);
    for (const auto& m : root.modules(/*include_self=*/false))
        if (auto* a = dynamic_cast<AttentionImpl*>(m.get())) a->setOptions(options);
}

} // namespace dd::nn
