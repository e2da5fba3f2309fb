#pragma once
// "Only masked" inpainting (A1111's Inpaint area, diffusers' padding_mask_crop; docs/inpainting.md): the run works
// at its full width × height on the mask's bounding box, padded and widened to the run's aspect ratio, and the
// result is scaled back into that box of the untouched picture through the mask. Both tools share this
// arithmetic; it is diffusers' VaeImageProcessor here, resampled with Pillow's own filters (pil_resample.h).
#include "core/api/image.h"
#include "core/api/run_images.h"

#include <vector>

namespace dd::pipeline {

// A region of an image; x1 and y1 are one past its last column and row.
struct CropBox {
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    int width() const { return x1 - x0; }
    int height() const { return y1 - y0; }
    bool operator==(const CropBox&) const = default;
};

// The box around every pixel of `mask` (channel 0) that is not 0, grown by `padding` on each side and then
// to width : height, inside the image (diffusers' get_crop_region). Throws when the mask is all 0.
CropBox maskedCropRegion(const api::Image& mask, int width, int height, int padding);

api::Image cropImage(const api::Image& image, const CropBox& box);
// Scaled (Lanczos) to fit inside width × height, centred, the bars filled by stretching its edges (bicubic):
// diffusers' resize_mode "fill".
api::Image resizeAndFill(const api::Image& image, int width, int height);
// Scaled (Lanczos) to cover width × height, centred, the overhang cut: diffusers' resize_mode "crop".
api::Image resizeAndCrop(const api::Image& image, int width, int height);

// The init image and mask of `full` cut to `box` and filled to width × height: what the run works on.
api::RunImages croppedToBox(const api::RunImages& full, const CropBox& box, int width, int height);
// `generated` (width × height) scaled back into `box` of the init image of `full` and laid over it through its
// mask, as diffusers' apply_overlay with crop_coords: the picture keeps the init image's size.
api::Image pastedBack(const api::Image& generated, const api::RunImages& full, const CropBox& box);

} // namespace dd::pipeline
