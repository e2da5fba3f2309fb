#pragma once
// Pillow's Image.resize for 8-bit RGB, bit for bit (its Resample.c): separable filters whose weights are rounded
// to 22-bit fixed point, the horizontal pass first into an 8-bit intermediate, then the vertical one. diffusers'
// image processor and A1111 resize with it ("fill" and "crop" resize modes, "only masked" inpainting), so matching
// their pictures needs its exact arithmetic, not another library's filter of the same name.
#include "core/api/image.h"

#include <cstdint>

namespace dd::pipeline {

enum class PilFilter { Nearest, Bicubic, Lanczos };

// The source region a resize reads, in source pixels (Pillow's `box`); Pillow allows an empty one (x0 == x1),
// which spreads the filter's view of one edge over the whole output.
struct PilBox {
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// `src` resized to width × height from `box` (the whole image when omitted).
api::Image pilResize(const api::Image& src, int width, int height, PilFilter filter);
api::Image pilResize(const api::Image& src, int width, int height, PilFilter filter, const PilBox& box);

// Pillow's rounding division by 255 (libImaging's DIV255), used wherever it blends 8-bit values by an alpha.
inline uint32_t pilDiv255(uint32_t x) {
    x += 128;
    return (x + (x >> 8)) >> 8;
}
// Its alpha composite's SHIFTFORDIV255: the same division without the rounding term (the caller adds it).
inline uint32_t pilShiftDiv255(uint32_t x) { return ((x >> 8) + x) >> 8; }

} // namespace dd::pipeline
