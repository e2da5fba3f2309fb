// Compiled with -mavx2 -mfma (core/CMakeLists.txt); no torch header here, so no inline function from torch is
// compiled with instructions the rest of the program must not assume.
#include "core/nn/flash_attention_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace dd::nn::avx2 {
namespace {

constexpr int64_t kPanel = 16;     // keys per packed panel: two registers of scores per query row
constexpr int64_t kTileRows = 6;   // query rows per score tile: 12 accumulators + 2 key registers + 1 broadcast
constexpr int64_t kKeyBlock = 256; // keys per online-softmax step: a tile's scores (6 KB) stay in L1
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// 2^x, |relative error| ≲ 2e-7: x = n + f with |f| ≤ ½, 2^f by its degree-6 Taylor polynomial, 2^n in the exponent
// bits. x ≤ -127 gives 0 (how the masked key columns, at -inf, drop out).
inline __m256 exp2(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(-127.f));
    const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(x, n);
    __m256 p = _mm256_set1_ps(1.5403530e-4f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558e-3f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291e-3f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504109e-2f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022651e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

inline float horizontalMax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

inline float horizontalSum(__m256 v) {
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
}

// Keeps a loaded value in a register: GCC otherwise folds the load into each of its FMAs, which doubles the loads
// of the value kernel and makes it load-bound (15 → 28 FLOP a cycle on Zen 3).
inline __m256 inRegister(__m256 x) {
    asm("" : "+x"(x));
    return x;
}

// s[6][0..keys) = q-tile · packed keys, and each row's maximum. Key columns from `keys` on (the zero padding of the
// last panel) score -inf. Named accumulators throughout: GCC keeps an array of __m256 in memory.
void scoreTile(const float* q, const float* packedKeys, int64_t keys, int64_t headDim, float* s, int64_t sStride,
               float* rowMax) {
    const __m256 negInf = _mm256_set1_ps(kNegInf);
    __m256 m0 = negInf, m1 = negInf, m2 = negInf, m3 = negInf, m4 = negInf, m5 = negInf;
    const int64_t panels = (keys + kPanel - 1) / kPanel;
    for (int64_t p = 0; p < panels; ++p) {
        const float* kp = packedKeys + p * headDim * kPanel;
        __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
               a31 = a00, a40 = a00, a41 = a00, a50 = a00, a51 = a00;
        for (int64_t i = 0; i < headDim; ++i) {
            const __m256 k0 = _mm256_loadu_ps(kp + i * kPanel), k1 = _mm256_loadu_ps(kp + i * kPanel + 8);
            __m256 x = _mm256_broadcast_ss(q + i);
            a00 = _mm256_fmadd_ps(x, k0, a00), a01 = _mm256_fmadd_ps(x, k1, a01);
            x = _mm256_broadcast_ss(q + headDim + i);
            a10 = _mm256_fmadd_ps(x, k0, a10), a11 = _mm256_fmadd_ps(x, k1, a11);
            x = _mm256_broadcast_ss(q + 2 * headDim + i);
            a20 = _mm256_fmadd_ps(x, k0, a20), a21 = _mm256_fmadd_ps(x, k1, a21);
            x = _mm256_broadcast_ss(q + 3 * headDim + i);
            a30 = _mm256_fmadd_ps(x, k0, a30), a31 = _mm256_fmadd_ps(x, k1, a31);
            x = _mm256_broadcast_ss(q + 4 * headDim + i);
            a40 = _mm256_fmadd_ps(x, k0, a40), a41 = _mm256_fmadd_ps(x, k1, a41);
            x = _mm256_broadcast_ss(q + 5 * headDim + i);
            a50 = _mm256_fmadd_ps(x, k0, a50), a51 = _mm256_fmadd_ps(x, k1, a51);
        }
        if (p == panels - 1 && keys % kPanel != 0) {
            const int tail = int(keys % kPanel);
            const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            const __m256 lo = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(tail), lane));
            const __m256 hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(tail - 8), lane));
            a00 = _mm256_blendv_ps(negInf, a00, lo), a01 = _mm256_blendv_ps(negInf, a01, hi);
            a10 = _mm256_blendv_ps(negInf, a10, lo), a11 = _mm256_blendv_ps(negInf, a11, hi);
            a20 = _mm256_blendv_ps(negInf, a20, lo), a21 = _mm256_blendv_ps(negInf, a21, hi);
            a30 = _mm256_blendv_ps(negInf, a30, lo), a31 = _mm256_blendv_ps(negInf, a31, hi);
            a40 = _mm256_blendv_ps(negInf, a40, lo), a41 = _mm256_blendv_ps(negInf, a41, hi);
            a50 = _mm256_blendv_ps(negInf, a50, lo), a51 = _mm256_blendv_ps(negInf, a51, hi);
        }
        float* o = s + p * kPanel;
        _mm256_storeu_ps(o, a00), _mm256_storeu_ps(o + 8, a01), o += sStride;
        _mm256_storeu_ps(o, a10), _mm256_storeu_ps(o + 8, a11), o += sStride;
        _mm256_storeu_ps(o, a20), _mm256_storeu_ps(o + 8, a21), o += sStride;
        _mm256_storeu_ps(o, a30), _mm256_storeu_ps(o + 8, a31), o += sStride;
        _mm256_storeu_ps(o, a40), _mm256_storeu_ps(o + 8, a41), o += sStride;
        _mm256_storeu_ps(o, a50), _mm256_storeu_ps(o + 8, a51);
        m0 = _mm256_max_ps(m0, _mm256_max_ps(a00, a01)), m1 = _mm256_max_ps(m1, _mm256_max_ps(a10, a11));
        m2 = _mm256_max_ps(m2, _mm256_max_ps(a20, a21)), m3 = _mm256_max_ps(m3, _mm256_max_ps(a30, a31));
        m4 = _mm256_max_ps(m4, _mm256_max_ps(a40, a41)), m5 = _mm256_max_ps(m5, _mm256_max_ps(a50, a51));
    }
    rowMax[0] = horizontalMax(m0), rowMax[1] = horizontalMax(m1), rowMax[2] = horizontalMax(m2);
    rowMax[3] = horizontalMax(m3), rowMax[4] = horizontalMax(m4), rowMax[5] = horizontalMax(m5);
}

// o[2][8·NV] += p[2][0..keys) · values[0..keys)[8·NV columns]; value rows headDim floats apart.
template <int NV>
void accumulatePair(const float* p, int64_t pStride, const float* values, int64_t keys, int64_t headDim, float* o,
                    int64_t oStride) {
    static_assert(NV >= 1 && NV <= 5, "10 accumulators, the loaded value and two broadcasts fill the 16 registers");
    const __m256 z = _mm256_setzero_ps();
    __m256 a0 = _mm256_loadu_ps(o), a1 = z, a2 = z, a3 = z, a4 = z;
    __m256 b0 = _mm256_loadu_ps(o + oStride), b1 = z, b2 = z, b3 = z, b4 = z;
    if constexpr (NV > 1) a1 = _mm256_loadu_ps(o + 8), b1 = _mm256_loadu_ps(o + oStride + 8);
    if constexpr (NV > 2) a2 = _mm256_loadu_ps(o + 16), b2 = _mm256_loadu_ps(o + oStride + 16);
    if constexpr (NV > 3) a3 = _mm256_loadu_ps(o + 24), b3 = _mm256_loadu_ps(o + oStride + 24);
    if constexpr (NV > 4) a4 = _mm256_loadu_ps(o + 32), b4 = _mm256_loadu_ps(o + oStride + 32);
    for (int64_t j = 0; j < keys; ++j) {
        const float* v = values + j * headDim;
        const __m256 p0 = _mm256_broadcast_ss(p + j), p1 = _mm256_broadcast_ss(p + pStride + j);
        __m256 x = inRegister(_mm256_loadu_ps(v));
        a0 = _mm256_fmadd_ps(p0, x, a0), b0 = _mm256_fmadd_ps(p1, x, b0);
        if constexpr (NV > 1)
            x = inRegister(_mm256_loadu_ps(v + 8)), a1 = _mm256_fmadd_ps(p0, x, a1), b1 = _mm256_fmadd_ps(p1, x, b1);
        if constexpr (NV > 2)
            x = inRegister(_mm256_loadu_ps(v + 16)), a2 = _mm256_fmadd_ps(p0, x, a2), b2 = _mm256_fmadd_ps(p1, x, b2);
        if constexpr (NV > 3)
            x = inRegister(_mm256_loadu_ps(v + 24)), a3 = _mm256_fmadd_ps(p0, x, a3), b3 = _mm256_fmadd_ps(p1, x, b3);
        if constexpr (NV > 4)
            x = inRegister(_mm256_loadu_ps(v + 32)), a4 = _mm256_fmadd_ps(p0, x, a4), b4 = _mm256_fmadd_ps(p1, x, b4);
    }
    _mm256_storeu_ps(o, a0), _mm256_storeu_ps(o + oStride, b0);
    if constexpr (NV > 1) _mm256_storeu_ps(o + 8, a1), _mm256_storeu_ps(o + oStride + 8, b1);
    if constexpr (NV > 2) _mm256_storeu_ps(o + 16, a2), _mm256_storeu_ps(o + oStride + 16, b2);
    if constexpr (NV > 3) _mm256_storeu_ps(o + 24, a3), _mm256_storeu_ps(o + oStride + 24, b3);
    if constexpr (NV > 4) _mm256_storeu_ps(o + 32, a4), _mm256_storeu_ps(o + oStride + 32, b4);
}

// o[6][headDim] += p[6][0..keys) · values, in 40-column strips (the most a row pair keeps in registers).
void accumulateTile(const float* p, int64_t pStride, const float* values, int64_t keys, int64_t headDim, float* o) {
    const int64_t vectors = headDim / 8;
    for (int64_t r = 0; r < kTileRows; r += 2) {
        const float* pr = p + r * pStride;
        float* orow = o + r * headDim;
        int64_t c = 0;
        for (; c + 5 <= vectors; c += 5) accumulatePair<5>(pr, pStride, values + 8 * c, keys, headDim, orow + 8 * c, headDim);
        switch (vectors - c) {
            case 4: accumulatePair<4>(pr, pStride, values + 8 * c, keys, headDim, orow + 8 * c, headDim); break;
            case 3: accumulatePair<3>(pr, pStride, values + 8 * c, keys, headDim, orow + 8 * c, headDim); break;
            case 2: accumulatePair<2>(pr, pStride, values + 8 * c, keys, headDim, orow + 8 * c, headDim); break;
            case 1: accumulatePair<1>(pr, pStride, values + 8 * c, keys, headDim, orow + 8 * c, headDim); break;
            default: break;
        }
    }
}

} // namespace

bool attentionHeadDimSupported(int64_t headDim) { return headDim > 0 && headDim % 8 == 0 && headDim <= 1024; }

size_t packedKeysFloats(int64_t keys, int64_t headDim) { return size_t(roundUp(keys, kPanel) * headDim); }
size_t packedValuesFloats(int64_t keys, int64_t headDim) { return size_t(roundUp(keys, kPanel) * headDim); }
size_t attentionScratchFloats(int64_t rows, int64_t headDim) {
    return size_t(kTileRows * kKeyBlock + roundUp(rows, kTileRows) * (2 * headDim + 2));
}

void packKeysValues(const float* k, int64_t kStride, const float* v, int64_t vStride, int64_t keys, int64_t headDim,
                    float* packedKeys, float* packedValues) {
    for (int64_t j = 0; j < roundUp(keys, kPanel); ++j) {
        float* column = packedKeys + (j / kPanel) * headDim * kPanel + j % kPanel;
        for (int64_t i = 0; i < headDim; ++i) column[i * kPanel] = j < keys ? k[j * kStride + i] : 0.f;
        if (j < keys)
            std::memcpy(packedValues + j * headDim, v + j * vStride, sizeof(float) * size_t(headDim));
        else
            std::fill_n(packedValues + j * headDim, headDim, 0.f);
    }
}

void attendRows(const float* q, int64_t qStride, int64_t rows, const float* packedKeys, const float* packedValues,
                int64_t keys, int64_t headDim, float scale, float* out, int64_t outStride, float* scratch) {
    const int64_t tiles = (rows + kTileRows - 1) / kTileRows, padded = tiles * kTileRows;
    float* scores = scratch;                       // one tile's scores, then probabilities, for one key block
    float* queries = scores + kTileRows * kKeyBlock;  // the rows, scaled into log2 units, zero rows to a whole tile
    float* acc = queries + padded * headDim;       // each row's unnormalised output so far
    float* runMax = acc + padded * headDim;        // each row's largest score so far
    float* runSum = runMax + padded;               // and its sum of 2^(score - runMax)
    const float qScale = scale * 1.4426950408889634f;  // log2(e): the softmax runs on exp2
    for (int64_t row = 0; row < padded; ++row)
        for (int64_t i = 0; i < headDim; ++i) queries[row * headDim + i] = row < rows ? q[row * qStride + i] * qScale : 0.f;
    std::fill_n(acc, padded * headDim, 0.f);
    std::fill_n(runMax, padded, kNegInf);
    std::fill_n(runSum, padded, 0.f);
    float blockMax[kTileRows];
    for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
        const int64_t n = std::min(kKeyBlock, keys - j0), nPadded = roundUp(n, kPanel);
        for (int64_t t = 0; t < tiles; ++t) {
            scoreTile(queries + t * kTileRows * headDim, packedKeys + j0 * headDim, n, headDim, scores, kKeyBlock,
                      blockMax);
            float* o = acc + t * kTileRows * headDim;
            for (int64_t r = 0; r < kTileRows; ++r) {
                float* s = scores + r * kKeyBlock;
                const int64_t row = t * kTileRows + r;
                const float previous = runMax[row], current = std::max(previous, blockMax[r]);
                const __m256 m = _mm256_set1_ps(current);
                __m256 sum = _mm256_setzero_ps();
                for (int64_t j = 0; j < nPadded; j += 8) {
                    const __m256 e = exp2(_mm256_sub_ps(_mm256_loadu_ps(s + j), m));
                    _mm256_storeu_ps(s + j, e);
                    sum = _mm256_add_ps(sum, e);
                }
                const float rescale = std::exp2(previous - current);  // 0 on the first block (previous = -inf)
                runSum[row] = runSum[row] * rescale + horizontalSum(sum);
                runMax[row] = current;
                if (rescale != 1.f)
                    for (int64_t i = 0; i < headDim; ++i) o[r * headDim + i] *= rescale;
            }
            accumulateTile(scores, kKeyBlock, packedValues + j0 * headDim, nPadded, headDim, o);
        }
    }
    for (int64_t row = 0; row < rows; ++row) {
        const float inverse = 1.f / runSum[row];
        for (int64_t i = 0; i < headDim; ++i) out[row * outStride + i] = acc[row * headDim + i] * inverse;
    }
}

} // namespace dd::nn::avx2
