#include "core/pipeline/masked_fill.h"

#include "core/pipeline/pil_resample.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace dd::pipeline {
namespace {

// 4 bytes a pixel (R, G, B, A), Pillow's layout for RGBA and RGBa.
struct Rgba {
    int width = 0, height = 0;
    std::vector<uint8_t> px;
    uint8_t* row(int y) { return px.data() + size_t(y) * size_t(width) * 4; }
};

// Pillow's _gaussian_blur_radius: the box radius whose three passes approximate the Gaussian (in float).
float boxRadius(float radius) {
    const float sigma2 = radius * radius / 3;
    const float length = float(std::sqrt(12.0 * sigma2 + 1.0));
    const float l = float(std::floor((length - 1.0) / 2.0));
    float a = (2 * l + 1) * (l * (l + 1) - 3 * sigma2);
    a /= 6 * (sigma2 - (l + 1) * (l + 1));
    return l + a;
}

// Pillow's ImagingLineBoxBlur32 over one line of `n` pixels `stride` bytes apart: a box of 2·radius + 1 pixels with
// fractional ends, the edges repeated, in 24-bit fixed point.
void blurLine(uint8_t* line, int n, size_t stride, float floatRadius, std::vector<uint8_t>& in) {
    const int radius = int(floatRadius);
    const uint32_t ww = uint32_t(float(1 << 24) / (floatRadius * 2 + 1));
    const uint32_t fw = ((1u << 24) - uint32_t(radius * 2 + 1) * ww) / 2;
    const int lastx = n - 1, edgeA = std::min(radius + 1, n), edgeB = std::max(n - radius - 1, 0);
    in.resize(size_t(n) * 4);
    for (int x = 0; x < n; ++x) std::copy_n(line + size_t(x) * stride, 4, in.begin() + size_t(x) * 4);
    const auto at = [&](int x, int c) { return uint32_t(in[size_t(x) * 4 + size_t(c)]); };
    for (int c = 0; c < 4; ++c) {
        uint32_t acc = at(0, c) * uint32_t(radius + 1);
        for (int x = 0; x < edgeA - 1; ++x) acc += at(x, c);
        acc += at(lastx, c) * uint32_t(radius - edgeA + 1);
        const auto step = [&](int x, int sub, int add, int left, int right) {
            acc += at(add, c) - at(sub, c);
            const uint32_t bulk = acc * ww + (at(left, c) + at(right, c)) * fw;
            line[size_t(x) * stride + size_t(c)] = uint8_t((bulk + (1u << 23)) >> 24);
        };
        if (edgeA <= edgeB) {
            for (int x = 0; x < edgeA; ++x) step(x, 0, x + radius, 0, x + radius + 1);
            for (int x = edgeA; x < edgeB; ++x) step(x, x - radius - 1, x + radius, x - radius - 1, x + radius + 1);
            for (int x = edgeB; x <= lastx; ++x) step(x, x - radius - 1, lastx, x - radius - 1, lastx);
        } else {
            for (int x = 0; x < edgeB; ++x) step(x, 0, x + radius, 0, x + radius + 1);
            for (int x = edgeB; x < edgeA; ++x) step(x, 0, lastx, 0, lastx);
            for (int x = edgeA; x <= lastx; ++x) step(x, x - radius - 1, lastx, x - radius - 1, lastx);
        }
    }
}

// Pillow's GaussianBlur(radius) on all four bands: three box blurs along x, then three along y.
Rgba gaussianBlur(Rgba img, float radius) {
    if (radius == 0) return img;
    const float r = boxRadius(radius);
    std::vector<uint8_t> scratch;
    if (r == 0) return img;
    for (int pass = 0; pass < 3; ++pass)
        for (int y = 0; y < img.height; ++y) blurLine(img.row(y), img.width, 4, r, scratch);
    for (int pass = 0; pass < 3; ++pass)
        for (int x = 0; x < img.width; ++x) blurLine(img.px.data() + size_t(x) * 4, img.height, size_t(img.width) * 4, r, scratch);
    return img;
}

// Pillow's RGBa → RGBA: colours divided by alpha, except at 0 and 255.
void unpremultiply(Rgba& img) {
    for (size_t i = 0; i < img.px.size(); i += 4) {
        const uint32_t a = img.px[i + 3];
        if (a == 0 || a == 255) continue;
        for (size_t c = 0; c < 3; ++c) img.px[i + c] = uint8_t(std::min(255u, 255u * img.px[i + c] / a));
    }
}

// Pillow's Image.alpha_composite(dst, src) in place: src over dst, 7 extra bits of precision.
void alphaComposite(Rgba& dst, const Rgba& src) {
    constexpr uint32_t kBits = 7;
    for (size_t i = 0; i < dst.px.size(); i += 4) {
        const uint32_t sa = src.px[i + 3];
        if (sa == 0) continue;
        const uint32_t blend = dst.px[i + 3] * (255 - sa);
        const uint32_t outa255 = sa * 255 + blend;
        const uint32_t coef1 = sa * 255 * 255 * (1u << kBits) / outa255;
        const uint32_t coef2 = 255 * (1u << kBits) - coef1;
        for (size_t c = 0; c < 3; ++c) {
            const uint32_t mixed = src.px[i + c] * coef1 + dst.px[i + c] * coef2;
            dst.px[i + c] = uint8_t(pilShiftDiv255(mixed + (0x80u << kBits)) >> kBits);
        }
        dst.px[i + 3] = uint8_t(pilShiftDiv255(outa255 + 0x80));
    }
}

} // namespace

api::Image fillMasked(const api::Image& image, const api::Image& mask) {
    if (mask.width != image.width || mask.height != image.height)
        throw std::invalid_argument("the fill needs an image and a mask of one size");
    const size_t n = size_t(image.width) * size_t(image.height);
    // The picture premultiplied by how much of it is kept: Pillow's paste into RGBa through the inverted mask.
    Rgba kept{image.width, image.height, std::vector<uint8_t>(n * 4)};
    for (size_t p = 0; p < n; ++p) {
        const uint32_t alpha = 255u - mask.rgb[3 * p];
        for (size_t c = 0; c < 3; ++c) kept.px[4 * p + c] = uint8_t(pilDiv255(image.rgb[3 * p + c] * alpha));
        kept.px[4 * p + 3] = uint8_t(pilDiv255(255u * alpha));
    }
    Rgba filled{image.width, image.height, std::vector<uint8_t>(n * 4, 0)};
    for (const auto [radius, repeats] : {std::pair{256, 1}, {64, 1}, {16, 2}, {4, 4}, {2, 2}, {0, 1}}) {
        Rgba blurred = gaussianBlur(kept, float(radius));
        unpremultiply(blurred);
        for (int r = 0; r < repeats; ++r) alphaComposite(filled, blurred);
    }
    api::Image out{image.width, image.height, std::vector<uint8_t>(n * 3)};
    for (size_t p = 0; p < n; ++p) std::copy_n(filled.px.begin() + 4 * p, 3, out.rgb.begin() + 3 * p);
    return out;
}

} // namespace dd::pipeline
