#include "core/compare/pixel_diff.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace dd::compare {

PixelDifference pixelDifference(const api::Image& a, const api::Image& b) {
    PixelDifference d;
    d.sameSize = a.width == b.width && a.height == b.height && a.rgb.size() == b.rgb.size() &&
                 a.rgb.size() == size_t(a.width) * size_t(a.height) * 3;
    if (!d.sameSize) return d;
    d.totalPixels = int64_t(a.width) * a.height;
    uint64_t sumAbs = 0, sumSq = 0;
    for (size_t p = 0; p < a.rgb.size(); p += 3) {
        int pixelMax = 0;
        for (size_t c = 0; c < 3; ++c) {
            const int diff = std::abs(int(a.rgb[p + c]) - int(b.rgb[p + c]));
            pixelMax = std::max(pixelMax, diff);
            sumAbs += uint64_t(diff);
            sumSq += uint64_t(diff * diff);
        }
        d.maxAbs = std::max(d.maxAbs, pixelMax);
        if (pixelMax) ++d.differingPixels;
    }
    const double n = double(a.rgb.size());
    d.meanAbs = n ? double(sumAbs) / n : 0;
    d.mse = n ? double(sumSq) / n : 0;
    d.psnr = d.mse == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(255.0 * 255.0 / d.mse);
    return d;
}

std::string describe(const PixelDifference& d) {
    if (!d.sameSize) return "the images have different sizes";
    if (d.maxAbs == 0) return "identical pixels";
    char buf[160];
    std::snprintf(buf, sizeof buf, "max |diff| %d, mean |diff| %.3g, PSNR %.2f dB, %lld of %lld pixels differ", d.maxAbs,
                  d.meanAbs, d.psnr, static_cast<long long>(d.differingPixels), static_cast<long long>(d.totalPixels));
    return buf;
}

} // namespace dd::compare
