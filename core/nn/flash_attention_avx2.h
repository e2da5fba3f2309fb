#pragma once
// The fused attention kernel behind flash_attention.h, for one head and a block of query rows: torch-free, compiled
// with AVX2 + FMA (call it only where the CPU has both). Scores never leave the cache: for each block of keys a
// 6-row tile of queries gets its scores (6×16 register tiles over keys packed 16 to a panel), an online-softmax
// update (exp2 on log2-scaled scores), and the probability-weighted sum of the values (2 rows × ≤ 40 columns in
// registers), in the manner of FlashAttention.
#include <cstddef>
#include <cstdint>

namespace dd::nn::avx2 {

// Head sizes the kernel takes (multiples of 8 floats, one AVX register).
bool attentionHeadDimSupported(int64_t headDim);

// Floats needed to pack one head's keys and values, and a block's scratch for `rows` query rows.
size_t packedKeysFloats(int64_t keys, int64_t headDim);
size_t packedValuesFloats(int64_t keys, int64_t headDim);
size_t attentionScratchFloats(int64_t rows, int64_t headDim);

// One head's keys into 16-key panels (transposed) and values into rows, both zero-padded to whole panels. Rows of k
// and v are kStride / vStride floats apart; a row's headDim floats are contiguous.
void packKeysValues(const float* k, int64_t kStride, const float* v, int64_t vStride, int64_t keys, int64_t headDim,
                    float* packedKeys, float* packedValues);

// softmax(q·kᵀ·scale)·v for `rows` query rows of one head (row stride qStride) against the packed keys and values;
// out rows are outStride floats apart. scratch: attentionScratchFloats(rows, headDim), 32-byte aligned for speed.
void attendRows(const float* q, int64_t qStride, int64_t rows, const float* packedKeys, const float* packedValues,
                int64_t keys, int64_t headDim, float scale, float* out, int64_t outStride, float* scratch);

} // namespace dd::nn::avx2
