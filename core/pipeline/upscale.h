#pragma once
// Running an upscaler network over an image of any size (docs/upscalers.md): in tiles whose borders overlap, each
// tile computed with `overlap` extra input pixels around its own part, of which only the part is kept. Where the
// overlap covers the network's receptive field the result equals the whole image's; beyond it the difference falls
// with the overlap (no blending, so no seam is averaged away or smeared).
#include "core/api/image.h"
#include "core/api/run_control.h"
#include "core/nn/upscaler.h"

#include <torch/types.h>

#include <functional>
#include <string>

namespace dd::pipeline {

struct UpscaleTiling {
    int64_t tile = 0;      // input pixels per side of a tile's own part; 0 = the whole image at once
    int64_t overlap = 32;  // input pixels computed around a tile's part and then dropped
};

// What a tile's activations may take on `device` when nothing else decides: half the CUDA device's free memory,
// or on the CPU a quarter of physical RAM, at most 4 GiB (beyond it bigger tiles are no faster).
int64_t upscaleBudgetBytes(const torch::Device& device);
// Input pixels per side of a tile whose activations fit `budgetBytes` (fp32), at least 32.
int64_t upscaleTileFor(const nn::UpscalerConfig& config, int64_t budgetBytes);
// The activations' peak for one tile of side `tile` (plus its overlap), bytes: what upscaleTileFor inverts.
int64_t upscaleTileBytes(const nn::UpscalerConfig& config, int64_t tile, int64_t overlap);

using TileProgress = std::function<void(int done, int total)>;

// [B,C,H,W] in [0, 1] (on the network's device) → [B,C,H·s,W·s] clamped to [0, 1]. Checks `cancel` between tiles
// (throws api::Cancelled).
torch::Tensor upscaleTiled(nn::UpscalerImpl& net, const torch::Tensor& rgb, const UpscaleTiling& tiling,
                           const api::CancelToken* cancel = nullptr, const TileProgress& progress = {});

// The same for one 8-bit image: inference mode, fp32 on the network's device.
api::Image upscaleImage(nn::UpscalerImpl& net, const api::Image& image, const UpscaleTiling& tiling,
                        const api::CancelToken* cancel = nullptr, const TileProgress& progress = {});

// A1111's way to a size (modules/upscaler.py): the network again while the image is smaller than width × height
// (at most three times), then Pillow's LANCZOS to exactly that size.
api::Image upscaleToSize(nn::UpscalerImpl& net, const api::Image& image, int width, int height, const UpscaleTiling& tiling,
                         const api::CancelToken* cancel = nullptr);
// The same with one of A1111's resizers (api::resizeUpscalers()): "None" is LANCZOS straight to the size;
// "Lanczos" and "Nearest" first enlarge by the scale with their filter, as A1111's Upscaler.upscale does, then
// LANCZOS to a multiple of 8 and to the size.
api::Image resizeUpscale(const api::Image& image, const std::string& upscaler, int width, int height);

} // namespace dd::pipeline
