#pragma once
// Pixel statistics of two 8-bit RGB images: what "identical" means and how far apart two results are.
// Pure (no torch, no OpenCV): the CLI's verify, the engine-side tests and imaging/compare (which adds SSIM and
// the heatmap on top) share these numbers.
#include "core/api/image.h"

#include <cstdint>
#include <string>

namespace dd::compare {

struct PixelDifference {
    bool sameSize = false;        // false: the numbers below are not computed
    int maxAbs = 0;               // largest |a - b| over all pixels and channels (0..255)
    double meanAbs = 0;           // mean |a - b| over all pixels and channels
    double mse = 0;               // mean squared difference
    double psnr = 0;              // 10 log10(255² / mse), dB; +infinity when identical
    int64_t differingPixels = 0;  // pixels with at least one channel different
    int64_t totalPixels = 0;
};

PixelDifference pixelDifference(const api::Image& a, const api::Image& b);

// "identical", or "max |Δ| 12, mean |Δ| 0.31, PSNR 41.2 dB, 1 532 of 4 096 pixels differ", or the two sizes.
std::string describe(const PixelDifference& d);

} // namespace dd::compare
