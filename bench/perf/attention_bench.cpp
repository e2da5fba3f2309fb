// The attention kernels on the shapes an SD step gives them: torch's fused CPU kernel
// (at::scaled_dot_product_attention) against ours (nn::flashAttention), fp32, best of 5 after a warm-up.
//   dd_attention_bench [THREADS]   → one line per shape, then whether attend() takes ours there
// Shapes: SD 1.5 at 512² with CFG (batch 2, 8 heads): self-attention at 64² / 32² / 16², cross-attention over 77
// tokens; SD 2 / SDXL's head size 64; the VAE's single 512-wide head at 64².
#include "core/nn/flash_attention.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

template <class F>
double bestMs(F&& f) {
    f();
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
}

} // namespace

int main(int argc, char** argv) {
    at::set_num_threads(argc > 1 ? std::atoi(argv[1]) : 2);
    c10::InferenceMode guard;
    struct Shape { const char* name; int64_t batch, queries, keys, heads, headDim; };
    const Shape shapes[] = {
        {"sd15 self 64²", 2, 4096, 4096, 8, 40}, {"sd15 cross 64²", 2, 4096, 77, 8, 40},
        {"sd15 self 32²", 2, 1024, 1024, 8, 80}, {"sd15 cross 32²", 2, 1024, 77, 8, 80},
        {"sd15 self 16²", 2, 256, 256, 8, 160},  {"sd15 cross 16²", 2, 256, 77, 8, 160},
        {"d64 self 32²", 2, 1024, 1024, 8, 64},  {"vae mid 64²", 1, 4096, 4096, 1, 512},
    };
    std::printf("threads %d\n%-16s %10s %10s %9s %9s %8s %s\n", at::get_num_threads(), "shape", "torch ms", "ours ms",
                "torch GF", "ours GF", "max|Δ|", "attend() uses ours");
    for (const auto& s : shapes) {
        const int64_t inner = s.heads * s.headDim;
        const auto q = torch::randn({s.batch, s.queries, inner}), k = torch::randn({s.batch, s.keys, inner}),
                   v = torch::randn({s.batch, s.keys, inner});
        auto split = [&](const torch::Tensor& t) { return t.view({s.batch, -1, s.heads, s.headDim}).transpose(1, 2); };
        auto torchAttention = [&] {
            return at::scaled_dot_product_attention(split(q), split(k), split(v)).transpose(1, 2).reshape(q.sizes());
        };
        const double gflop = 4.0 * s.batch * s.heads * s.queries * s.keys * s.headDim / 1e9;
        const double torchMs = bestMs(torchAttention), oursMs = bestMs([&] { return dd::nn::flashAttention(q, k, v, s.heads); });
        const double diff = (dd::nn::flashAttention(q, k, v, s.heads) - torchAttention()).abs().max().item<double>();
        std::printf("%-16s %10.2f %10.2f %9.1f %9.1f %8.1e %s\n", s.name, torchMs, oursMs, gflop / torchMs * 1e3,
                    gflop / oursMs * 1e3, diff, dd::nn::flashAttentionApplies(q, k, v, s.heads) ? "yes" : "no");
    }
}
