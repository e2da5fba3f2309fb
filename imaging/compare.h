#pragma once
// Image comparison for the A/B view and the verify report: max abs difference, PSNR (core/compare), SSIM and a
// difference heatmap (OpenCV). OpenCV stays out of this header, so the UI can include it.
//
// SSIM is Wang, Bovik, Sheikh & Simoncelli (2004) with their constants: an 11×11 Gaussian window (σ = 1.5),
// K1 = 0.01, K2 = 0.03, L = 255, computed on each RGB channel (not on luma) over the valid region (the window
// wholly inside the image: 5 pixels cropped on each side), averaged over the region, then over R, G and B.
// tests/parity/fixtures_compare.py computes the same with numpy/scipy.
#include "core/api/image.h"
#include "core/compare/pixel_diff.h"

namespace dd::imaging {

// NaN when the images differ in size or are smaller than the 11×11 window.
double ssim(const api::Image& a, const api::Image& b);

struct ImageMetrics {
    compare::PixelDifference pixels;  // max abs, mean abs, PSNR, differing pixels
    double ssim = 0;                  // 1 = identical; NaN when not computable (see ssim())
};
ImageMetrics compareImages(const api::Image& a, const api::Image& b);

// Per pixel the largest channel difference, coloured (inferno: black = equal, yellow = largest).
// Normalized: the largest difference in the pair maps to the top of the scale, so even ±1 differences show.
// Absolute: |Δ| × gain (gain 1: 255 levels apart is the top). Pixels that are equal are pure black in both.
// Throws std::invalid_argument when the sizes differ.
enum class HeatmapScale { Normalized, Absolute };
api::Image differenceHeatmap(const api::Image& a, const api::Image& b,
                                  HeatmapScale scale = HeatmapScale::Normalized, double gain = 1.0);

} // namespace dd::imaging
