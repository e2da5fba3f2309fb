// Compiled with -fopenmp (core/CMakeLists.txt): at::parallel_for is a header template that runs serially unless
// the including file is built with OpenMP, and this is the one file of ours that calls it.
#include "core/nn/flash_attention.h"

#include "core/nn/cpu_kernels.h"

#if DD_FLASH_ATTENTION_KERNEL
#include "core/nn/flash_attention_avx2.h"
#endif

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <cmath>

namespace dd::nn {
#if DD_FLASH_ATTENTION_KERNEL
namespace {

// Query rows per task: 8 score tiles. 48 measured ~5 % faster than 96 or 192 at 4096 queries.
constexpr int64_t kRowsPerTask = 48;

bool cpuHasKernel() {
    static const bool has = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return has;
}

bool turnedOff() {
    static const bool off = fastPathTurnedOff("DD_FLASH_ATTENTION");
    return off;
}

bool usable(const at::Tensor& t, const at::Tensor& q, int64_t inner) {
    return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat && t.dim() == 3 &&
           t.size(0) == q.size(0) && t.size(2) == inner && t.stride(2) == 1 && !t.requires_grad();
}

// What the kernel can run at all (flashAttention checks it); flashAttentionApplies adds where it is the faster one.
bool kernelRuns(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads) {
    if (!cpuHasKernel() || !q.defined() || q.dim() != 3 || heads <= 0 || q.size(2) % heads != 0) return false;
    const int64_t inner = q.size(2);
    if (!usable(q, q, inner) || !usable(k, q, inner) || !usable(v, q, inner) || k.size(1) != v.size(1)) return false;
    return q.size(1) > 0 && k.size(1) > 0 && avx2::attentionHeadDimSupported(inner / heads);
}

} // namespace

bool flashAttentionApplies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads) {
    return !turnedOff() && kernelRuns(q, k, v, heads) && (q.size(2) / heads <= 48 || k.size(1) <= 128);
}

at::Tensor flashAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t heads) {
    TORCH_CHECK(kernelRuns(q, k, v, heads), "flashAttention: needs an AVX2 + FMA CPU and [B, L, heads·d] fp32 CPU "
                "operands with d a multiple of 8, unit stride in the last dimension and no autograd; got q ", q.sizes(),
                ", k ", k.sizes(), ", v ", v.sizes(), ", ", heads, " heads");
    const int64_t batch = q.size(0), queries = q.size(1), keys = k.size(1), inner = q.size(2);
    const int64_t headDim = inner / heads, batchHeads = batch * heads;
    const float scale = 1.f / std::sqrt(static_cast<float>(headDim));
    auto out = at::empty({batch, queries, inner}, q.options());
    // Every head's keys and values packed once (a copy the size of k and v), then shared by its query blocks.
    const auto keyFloats = static_cast<int64_t>(avx2::packedKeysFloats(keys, headDim));
    const auto perHead = keyFloats + static_cast<int64_t>(avx2::packedValuesFloats(keys, headDim));
    auto packed = at::empty({batchHeads * perHead}, q.options());
    const float *qd = q.const_data_ptr<float>(), *kd = k.const_data_ptr<float>(), *vd = v.const_data_ptr<float>();
    float *pd = packed.data_ptr<float>(), *od = out.data_ptr<float>();
    at::parallel_for(0, batchHeads, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int64_t b = i / heads, h = i % heads;
            avx2::packKeysValues(kd + b * k.stride(0) + h * headDim, k.stride(1), vd + b * v.stride(0) + h * headDim,
                                 v.stride(1), keys, headDim, pd + i * perHead, pd + i * perHead + keyFloats);
        }
    });
    const int64_t blocks = (queries + kRowsPerTask - 1) / kRowsPerTask;
    at::parallel_for(0, batchHeads * blocks, 1, [&](int64_t begin, int64_t end) {
        auto scratch = at::empty({static_cast<int64_t>(avx2::attentionScratchFloats(kRowsPerTask, headDim))},
                                 q.options());
        for (int64_t i = begin; i < end; ++i) {
            const int64_t head = i / blocks, b = head / heads, h = head % heads;
            const int64_t first = (i % blocks) * kRowsPerTask, rows = std::min(kRowsPerTask, queries - first);
            avx2::attendRows(qd + b * q.stride(0) + first * q.stride(1) + h * headDim, q.stride(1), rows,
                             pd + head * perHead, pd + head * perHead + keyFloats, keys, headDim, scale,
                             od + (b * queries + first) * inner + h * headDim, inner, scratch.data_ptr<float>());
        }
    });
    return out;
}
#else
bool flashAttentionApplies(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t) { return false; }
at::Tensor flashAttention(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t) {
    TORCH_CHECK(false, "flashAttention: this build has no AVX2 attention kernel");
    return {};
}
#endif

} // namespace dd::nn
