#pragma once
// A1111's variation seeds on the starting noise (docs/explore.md). Image i's noise is drawn from its own generator,
// as always; with a variation strength it is blended towards the noise of its variation seed by A1111's spherical
// interpolation, and with "seed resize from" it is drawn at that size and placed in the middle of noise drawn at
// the run's size. Engine-internal (torch).
#include "core/api/generation_settings.h"
#include "core/sched/scheduler.h"

#include <torch/torch.h>

#include <vector>

namespace dd::pipeline {

// The batch's starting noise, [B, C, H, W] in fp32 on `device`, before any scaling. Without a variation it is
// exactly `noise.randn(shape)` (gens are `noise`'s generators, image i's seeded api::imageSeeds(s, i).seed).
// `scaleFactor` turns "seed resize from" pixels into latent cells.
torch::Tensor startingNoise(const api::GenerationSettings& s, std::vector<sched::ImageRng>& gens, sched::NoiseSource& noise,
                            at::IntArrayRef shape, int64_t scaleFactor, c10::Device device);

// A1111's slerp of two noises of one image ([C, H, W]): the angle is taken per channel and column (the vectors run
// down each column), and noises nearly alike (mean cosine above 0.9995) are mixed linearly, `t` of `low` and
// 1 - t of `high`, as A1111 does.
torch::Tensor slerpNoise(double t, const torch::Tensor& low, const torch::Tensor& high);

// Where noise of size `small` ([C, h, w]) goes in noise of the run's size `into` ([C, H, W]): centred, cut where it
// is larger (A1111's placement, floor division included).
void placeNoise(torch::Tensor& into, const torch::Tensor& small);

} // namespace dd::pipeline
