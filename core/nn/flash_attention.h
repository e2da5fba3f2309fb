#pragma once
// Fused attention for fp32 on x86 CPUs with AVX2 + FMA (flash_attention_avx2.h): softmax(q·kᵀ/√d)·v without
// writing the scores out, on diffusers' [B, L, heads·d] layout directly (no head transposes in or out).
// Measured against torch's own fused CPU kernel (at::scaled_dot_product_attention, torch 2.15, 2 threads, Zen 3):
// 4096 queries × 4096 keys at d = 40 (SD 1.5's 64² self-attention) ~100 GFLOP/s against ~80; 4096 × 77 keys
// (cross-attention) 1.5-2×; at d = 64-160 over 1024 keys a tie or a loss, at d = 512 (the VAE) 0.6×. So
// `flashAttentionApplies` takes it where it wins: d ≤ 48, or at most 128 keys. Each output row is computed by one
// thread in one order, so results do not depend on the thread count. Agrees with torch's fp64 math to ~1e-6.
// DD_FLASH_ATTENTION=0 turns it off (A/B runs).
#include <ATen/core/Tensor.h>

namespace dd::nn {

// Whether flashAttention() runs for these operands: [B, L, heads·d] fp32 CPU tensors with unit stride in the last
// dimension, no autograd, a CPU with AVX2 + FMA, and a shape where it beats torch's kernel (above).
bool flashAttentionApplies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads);

// q [B, Lq, heads·d], k / v [B, Lk, heads·d] → [B, Lq, heads·d] contiguous. Only where flashAttentionApplies().
at::Tensor flashAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads);

} // namespace dd::nn
