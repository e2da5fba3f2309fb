#include "core/pipeline/variation_noise.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

namespace dd::pipeline {
namespace {

int64_t floorHalf(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

torch::Tensor drawn(at::IntArrayRef shape, sched::ImageRng& g) { return g.randn(shape); }

// A fresh stream of `seed`, of the kind the run's images draw from.
torch::Tensor drawnFrom(at::IntArrayRef shape, int64_t seed, const sched::ImageRng& like) {
    sched::ImageRng g(like.kind(), uint64_t(seed));
    return drawn(shape, g);
}

} // namespace

torch::Tensor slerpNoise(double t, const torch::Tensor& low, const torch::Tensor& high) {
    const auto lowUnit = low / low.norm(2, {1}, true);
    const auto highUnit = high / high.norm(2, {1}, true);
    const auto cosine = (lowUnit * highUnit).sum(1);
    if (cosine.mean().item<double>() > 0.9995) return low * t + high * (1 - t);
    const auto omega = torch::acos(cosine);
    const auto sinOmega = torch::sin(omega);
    return (torch::sin((1.0 - t) * omega) / sinOmega).unsqueeze(1) * low + (torch::sin(t * omega) / sinOmega).unsqueeze(1) * high;
}

void placeNoise(torch::Tensor& into, const torch::Tensor& small) {
    const int64_t dx = floorHalf(into.size(2) - small.size(2)), dy = floorHalf(into.size(1) - small.size(1));
    const int64_t w = dx >= 0 ? small.size(2) : small.size(2) + 2 * dx;
    const int64_t h = dy >= 0 ? small.size(1) : small.size(1) + 2 * dy;
    const int64_t tx = std::max<int64_t>(dx, 0), ty = std::max<int64_t>(dy, 0);
    const int64_t sx = std::max<int64_t>(-dx, 0), sy = std::max<int64_t>(-dy, 0);
    using torch::indexing::Slice;
    into.index_put_({Slice(), Slice(ty, ty + h), Slice(tx, tx + w)}, small.index({Slice(), Slice(sy, sy + h), Slice(sx, sx + w)}));
}

torch::Tensor startingNoise(const api::GenerationSettings& s, std::vector<sched::ImageRng>& gens, sched::NoiseSource& noise,
                            at::IntArrayRef shape, int64_t scaleFactor, c10::Device device) {
    const api::VariationSetting& v = s.variation;
    if (!v.enabled()) return noise.randn(shape, torch::kFloat32, device);
    const std::vector<int64_t> full{shape[1], shape[2], shape[3]};
    const std::vector<int64_t> drawnShape =
        v.resizes() ? std::vector<int64_t>{shape[1], v.resizeFromHeight / scaleFactor, v.resizeFromWidth / scaleFactor} : full;
    std::vector<torch::Tensor> images;
    for (int64_t i = 0; i < shape[0]; ++i) {
        const api::ImageSeeds seeds = api::imageSeeds(s, i);
        sched::ImageRng& own = gens[size_t(i)];
        // Drawn at another size, the picture's noise comes from a fresh generator of the same seed, and the image's
        // own generator then draws the noise around it.
        torch::Tensor x = v.resizes() ? drawnFrom(drawnShape, seeds.seed, own) : drawn(drawnShape, own);
        if (v.blends()) x = slerpNoise(v.strength, x, drawnFrom(drawnShape, seeds.variationSeed, own));
        if (v.resizes()) {
            torch::Tensor around = drawn(full, own);
            placeNoise(around, x);
            x = around;
        }
        images.push_back(x.unsqueeze(0));
    }
    return torch::cat(images).to(device);
}

} // namespace dd::pipeline
