#include "core/pipeline/masked_area.h"

#include "core/pipeline/inpaint.h"
#include "core/pipeline/pil_resample.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dd::pipeline {
namespace {

bool columnIsZero(const api::Image& m, int x) {
    for (int y = 0; y < m.height; ++y)
        if (m.rgb[(size_t(y) * size_t(m.width) + size_t(x)) * 3] != 0) return false;
    return true;
}

bool rowIsZero(const api::Image& m, int y) {
    for (int x = 0; x < m.width; ++x)
        if (m.rgb[(size_t(y) * size_t(m.width) + size_t(x)) * 3] != 0) return false;
    return true;
}

// Grows [lo, hi) by `diff` (half before, the rest after), shifted back inside [0, size) as diffusers does.
void widen(int& lo, int& hi, int diff, int size) {
    lo -= diff / 2;
    hi += diff - diff / 2;
    if (hi >= size) {
        lo -= hi - size;
        hi = size;
    }
    if (lo < 0) {
        hi -= lo;
        lo = 0;
    }
    hi = std::min(hi, size);
}

// Pillow's paste of `src` with its top left corner at (x, y), clipped to `dst`.
void paste(api::Image& dst, const api::Image& src, int x, int y) {
    for (int sy = std::max(0, -y); sy < src.height && sy + y < dst.height; ++sy) {
        const int sx0 = std::max(0, -x), sx1 = std::min(src.width, dst.width - x);
        if (sx1 <= sx0) continue;
        std::copy_n(src.rgb.begin() + (size_t(sy) * size_t(src.width) + size_t(sx0)) * 3, size_t(sx1 - sx0) * 3,
                    dst.rgb.begin() + (size_t(sy + y) * size_t(dst.width) + size_t(sx0 + x)) * 3);
    }
}

api::Image black(int width, int height) { return {width, height, std::vector<uint8_t>(size_t(width) * size_t(height) * 3, 0)}; }

} // namespace

CropBox maskedCropRegion(const api::Image& mask, int width, int height, int padding) {
    const int w = mask.width, h = mask.height;
    int left = 0, right = 0, top = 0, bottom = 0;
    while (left < w && columnIsZero(mask, left)) ++left;
    if (left == w) throw std::invalid_argument("the mask is empty: \"only masked\" has no area to repaint");
    while (columnIsZero(mask, w - 1 - right)) ++right;
    while (rowIsZero(mask, top)) ++top;
    while (rowIsZero(mask, h - 1 - bottom)) ++bottom;
    CropBox b{std::max(left - padding, 0), std::max(top - padding, 0), std::min(w - right + padding, w),
              std::min(h - bottom + padding, h)};
    const double cropRatio = double(b.width()) / b.height(), runRatio = double(width) / height;
    if (cropRatio > runRatio) widen(b.y0, b.y1, int(b.width() / runRatio - b.height()), h);
    else widen(b.x0, b.x1, int(b.height() * runRatio - b.width()), w);
    return b;
}

api::Image cropImage(const api::Image& image, const CropBox& box) {
    if (box.x0 < 0 || box.y0 < 0 || box.x1 > image.width || box.y1 > image.height || box.width() < 1 || box.height() < 1)
        throw std::invalid_argument("the crop box lies outside the image");
    api::Image out = black(box.width(), box.height());
    paste(out, image, -box.x0, -box.y0);
    return out;
}

api::Image resizeAndFill(const api::Image& image, int width, int height) {
    const double ratio = double(width) / height, srcRatio = double(image.width) / image.height;
    const int srcW = ratio < srcRatio ? width : image.width * height / image.height;
    const int srcH = ratio >= srcRatio ? height : image.height * width / image.width;
    const api::Image resized = pilResize(image, srcW, srcH, PilFilter::Lanczos);
    api::Image out = black(width, height);
    paste(out, resized, width / 2 - srcW / 2, height / 2 - srcH / 2);
    const double rw = resized.width, rh = resized.height;
    if (ratio < srcRatio) {
        const int fill = height / 2 - srcH / 2;
        if (fill > 0) {
            paste(out, pilResize(resized, width, fill, PilFilter::Bicubic, {0, 0, double(width), 0}), 0, 0);
            paste(out, pilResize(resized, width, fill, PilFilter::Bicubic, {0, rh, double(width), rh}), 0, fill + srcH);
        }
    } else if (ratio > srcRatio) {
        const int fill = width / 2 - srcW / 2;
        if (fill > 0) {
            paste(out, pilResize(resized, fill, height, PilFilter::Bicubic, {0, 0, 0, double(height)}), 0, 0);
            paste(out, pilResize(resized, fill, height, PilFilter::Bicubic, {rw, 0, rw, double(height)}), fill + srcW, 0);
        }
    }
    return out;
}

api::Image resizeAndCrop(const api::Image& image, int width, int height) {
    const double ratio = double(width) / height, srcRatio = double(image.width) / image.height;
    const int srcW = ratio > srcRatio ? width : image.width * height / image.height;
    const int srcH = ratio <= srcRatio ? height : image.height * width / image.width;
    api::Image out = black(width, height);
    paste(out, pilResize(image, srcW, srcH, PilFilter::Lanczos), width / 2 - srcW / 2, height / 2 - srcH / 2);
    return out;
}

api::RunImages croppedToBox(const api::RunImages& full, const CropBox& box, int width, int height) {
    if (!full.init || !full.mask) throw std::invalid_argument("\"only masked\" needs an init image and a mask");
    api::RunImages run = full;
    run.init = resizeAndFill(cropImage(*full.init, box), width, height);
    run.mask = resizeAndFill(cropImage(*full.mask, box), width, height);
    return run;
}

api::Image pastedBack(const api::Image& generated, const api::RunImages& full, const CropBox& box) {
    api::Image canvas = black(full.init->width, full.init->height);
    paste(canvas, resizeAndCrop(generated, box.width(), box.height()), box.x0, box.y0);
    return overlay(canvas, *full.init, *full.mask);
}

} // namespace dd::pipeline
