#pragma once
// A1111's "Masked content: fill" (modules/masking.py fill): the repainted area starts from the colours around
// it. The picture, weighted by how much of each pixel is kept (255 − mask, premultiplied alpha), is blurred at
// radii 256, 64, 16, 4, 2 and 0 and each blur laid over the last (alpha_composite), so the hole fills from its
// edges inwards and the kept pixels come back on top. Pillow's GaussianBlur (three box blurs in fixed point),
// premultiplied conversions and alpha_composite are ported bit for bit, so the start matches A1111's.
#include "core/api/image.h"

namespace dd::pipeline {

// `image` with the area `mask` repaints (grey, 255 = repaint) filled from its surroundings.
api::Image fillMasked(const api::Image& image, const api::Image& mask);

} // namespace dd::pipeline
