#pragma once
// The Brownian-tree noise of k-diffusion's SDE samplers (DPM++ SDE, DPM++ 2M SDE, DPM++ 3M SDE), numerically
// as torchsde's BrownianTree computes it, so an image A1111 or ComfyUI sampled with one can be sampled again.
//
// A tree over [t0, t1] draws the whole increment W(t0, t1) from one seed and splits every interval at its
// midpoint (times rounded to 1e-6), each child's increment drawn from a Brownian bridge with the seed of its
// parent's split; a query W(ta, tb) sums the dyadic intervals that make it up. Every seed comes from numpy's
// SeedSequence (the image seed as entropy, (spawn key, depth) of the node, a pool of 24 words), and every draw
// is a fresh torch.randn of the image's shape from a generator seeded with it: the CPU generator, or the
// Philox stream an NVIDIA card gives (where A1111 ran its sampler).
#include "core/sched/image_rng.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace dd::sched {

// numpy.random.SeedSequence(entropy, spawn_key=spawnKey, pool_size=poolSize).generate_state(n) (uint32 words).
std::vector<uint32_t> seedSequenceState(uint64_t entropy, const std::vector<uint64_t>& spawnKey, int poolSize, int n);

// torchsde.BrownianTree(t0, w0 = zeros(shape), t1, entropy=seed, tol=1e-6, pool_size=24), queried by intervals.
class BrownianTree {
public:
    BrownianTree(double t0, double t1, std::vector<int64_t> shape, uint64_t seed, ImageRng::Kind kind);
    ~BrownianTree();
    BrownianTree(BrownianTree&&) noexcept;
    // W(tb) − W(ta), ta ≤ tb (clamped into [t0, t1]), float32 on the CPU.
    at::Tensor increment(double ta, double tb);

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

// k-diffusion's BrownianTreeNoiseSampler: noise(σ, σ_next) = W(σ_next) − W(σ) / √|σ_next − σ|, one tree per
// image keyed by its seed (A1111: batches reproduce each image) or one tree over the whole batch (ComfyUI).
class BrownianNoise {
public:
    // `shape` is the batch's [B, C, H, W]; σ range: the smallest non-zero and the largest σ of the schedule.
    BrownianNoise(std::vector<int64_t> shape, float sigmaMin, float sigmaMax, const std::vector<uint64_t>& seeds,
                  ImageRng::Kind kind);
    at::Tensor operator()(float sigma, float sigmaNext);

private:
    std::vector<BrownianTree> m_trees;
    bool m_perImage;
};

} // namespace dd::sched
