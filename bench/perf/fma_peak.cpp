// The machine's fp32 FMA peak, measured: every core runs independent chains of 512-bit (or 256-bit)
// fused multiply-adds from registers, so nothing but the FMA units limits it. The UNet's achieved GFLOP/s is
// reported as a fraction of this figure.
//   fma_peak [THREADS]   → one JSON line {"threads": N, "gflops": X, "vector_bits": B}
#include <immintrin.h>

#include <chrono>
#include <cstring>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 12;  // ≥ latency × pipes (4 cycles × 2 FMA pipes on Zen 4 / Ice Lake), so the pipes stay full
constexpr long kIters = 40'000'000;

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec splat(float x) { return _mm512_set1_ps(x); }
#else
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec splat(float x) { return _mm256_set1_ps(x); }
#endif

inline float sum(Vec v) {
    alignas(64) float f[kLanes];
    std::memcpy(f, &v, sizeof v);
    float s = 0;
    for (float x : f) s += x;
    return s;
}

float chains(long iters) {
    Vec acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = splat(float(c));
    const Vec a = splat(0.999999f), b = splat(1e-7f);
    // Fully unrolled, so the accumulators live in registers: at -O2 without it GCC kept them in memory, and each
    // FMA waited on a store and a load (45 GFLOP/s per core here against 117 from registers).
    for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 16
        for (int c = 0; c < kChains; ++c) acc[c] = fma(acc[c], a, b);
    }
    float s = 0;
    for (int c = 0; c < kChains; ++c) s += sum(acc[c]);
    return s;  // returned so the loop is not optimised away
}

} // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::stoi(argv[1]) : int(std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    std::vector<float> sink(static_cast<size_t>(threads));
    chains(kIters / 20);  // warm up clocks
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sink[size_t(t)] = chains(kIters); });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double flops = 2.0 * kLanes * kChains * double(kIters) * threads;
    std::printf("{\"threads\": %d, \"gflops\": %.1f, \"vector_bits\": %d, \"checksum\": %g}\n", threads, flops / s / 1e9,
                kLanes * 32, double(sink[0]));
}
