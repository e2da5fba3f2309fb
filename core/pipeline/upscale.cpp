#include "core/pipeline/upscale.h"

#include "core/api/errors.h"
#include "core/api/generation_settings.h"
#include "core/memory/memory_probe.h"
#include "core/pipeline/pil_resample.h"
#include "core/pipeline/preview.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace dd::pipeline {
namespace {

// fp32 values alive at once per input pixel: the widest layer's input and output at the input size, and the
// layers after the upscale at s² times that.
int64_t floatsPerInputPixel(const nn::UpscalerConfig& c) {
    const int64_t s2 = int64_t(c.scale) * c.scale;
    switch (c.arch) {
    case nn::UpscalerArch::Esrgan: return 2 * (c.features + 4 * c.growth) + c.features + 3 * c.features * s2;
    case nn::UpscalerArch::Compact: return 3 * c.features + 2 * c.outChannels * s2;
    case nn::UpscalerArch::SwinIR: {
        int heads = 1;
        for (int h : c.heads) heads = std::max(heads, h);
        // tokens: the residual, q/k/v, the MLP's hidden layer; attention: heads × window² per token
        return 6 * c.features + c.hiddenFeatures + 2 * heads * c.window * c.window + 3 * c.upsampleFeatures * s2;
    }
    }
    return 0;
}

} // namespace

int64_t upscaleTileBytes(const nn::UpscalerConfig& config, int64_t tile, int64_t overlap) {
    const int64_t side = tile + 2 * overlap;
    return side * side * floatsPerInputPixel(config) * 4;
}

int64_t upscaleBudgetBytes(const torch::Device& device) {
    if (device.is_cuda()) return memory::sampleMemory(device.index()).deviceFree / 2;
    return std::min<int64_t>(memory::physicalMemoryBytes() / 4, int64_t(4) << 30);
}

int64_t upscaleTileFor(const nn::UpscalerConfig& config, int64_t budgetBytes) {
    const double pixels = double(budgetBytes) / (4.0 * double(floatsPerInputPixel(config)));
    const int64_t side = int64_t(std::sqrt(std::max(pixels, 0.0))) - 2 * 32;
    return std::max<int64_t>(32, side / 8 * 8);
}

torch::Tensor upscaleTiled(nn::UpscalerImpl& net, const torch::Tensor& rgb, const UpscaleTiling& tiling,
                           const api::CancelToken* cancel, const TileProgress& progress) {
    const int64_t h = rgb.size(2), w = rgb.size(3), s = net.config.scale;
    const int64_t tile = tiling.tile > 0 ? tiling.tile : std::max(h, w), pad = std::max<int64_t>(0, tiling.overlap);
    const int64_t rows = (h + tile - 1) / tile, cols = (w + tile - 1) / tile;
    auto out = torch::empty({rgb.size(0), net.config.outChannels, h * s, w * s}, rgb.options());
    int done = 0;
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            if (cancel && cancel->cancelled()) throw api::Cancelled();
            // The tile's own part [y0, y1) × [x0, x1), and the input around it [iy0, iy1) × [ix0, ix1).
            const int64_t y0 = r * tile, y1 = std::min(h, y0 + tile), x0 = c * tile, x1 = std::min(w, x0 + tile);
            const int64_t iy0 = std::max<int64_t>(0, y0 - pad), iy1 = std::min(h, y1 + pad);
            const int64_t ix0 = std::max<int64_t>(0, x0 - pad), ix1 = std::min(w, x1 + pad);
            const auto in = rgb.slice(2, iy0, iy1).slice(3, ix0, ix1);
            const auto up = net.upscale(in.contiguous());
            out.slice(2, y0 * s, y1 * s).slice(3, x0 * s, x1 * s)
                .copy_(up.slice(2, (y0 - iy0) * s, (y1 - iy0) * s).slice(3, (x0 - ix0) * s, (x1 - ix0) * s));
            if (progress) progress(++done, int(rows * cols));
        }
    }
    return out.clamp_(0, 1);
}

api::Image upscaleImage(nn::UpscalerImpl& net, const api::Image& image, const UpscaleTiling& tiling,
                        const api::CancelToken* cancel, const TileProgress& progress) {
    const c10::InferenceMode inference;
    const auto device = net.parameters().front().device();
    auto t = torch::from_blob(const_cast<uint8_t*>(image.rgb.data()), {1, image.height, image.width, 3}, torch::kUInt8);
    const auto rgb = (t.permute({0, 3, 1, 2}).to(torch::kFloat32) / 255.0).to(device).contiguous();
    if (net.config.inChannels != 3)
        throw std::invalid_argument("this upscaler takes " + std::to_string(net.config.inChannels) + "-channel images, not RGB");
    auto up = upscaleTiled(net, rgb, tiling, cancel, progress);
    if (up.size(1) != 3) throw std::invalid_argument("this upscaler makes " + std::to_string(up.size(1)) + "-channel images, not RGB");
    return toImages(up.cpu()).front();
}

api::Image upscaleToSize(nn::UpscalerImpl& net, const api::Image& image, int width, int height, const UpscaleTiling& tiling,
                         const api::CancelToken* cancel) {
    api::Image out = image;
    for (int pass = 0; pass < 3 && (out.width < width || out.height < height); ++pass) out = upscaleImage(net, out, tiling, cancel);
    return out.width == width && out.height == height ? out : pilResize(out, width, height, PilFilter::Lanczos);
}

api::Image resizeUpscale(const api::Image& image, const std::string& upscaler, int width, int height) {
    if (!api::isResizeUpscaler(upscaler)) throw std::invalid_argument("'" + upscaler + "' is not one of A1111's resizers");
    if (upscaler == "None") return pilResize(image, width, height, PilFilter::Lanczos);
    api::Image out = image;
    const double scale = std::max(double(width) / image.width, double(height) / image.height);
    if (scale > 1.0) {
        const auto filter = upscaler == "Lanczos" ? PilFilter::Lanczos : PilFilter::Nearest;
        const int destW = int(std::floor(image.width * scale / 8) * 8), destH = int(std::floor(image.height * scale / 8) * 8);
        for (int pass = 0; pass < 3; ++pass) {
            if (out.width >= destW && out.height >= destH) break;
            const int w0 = out.width, h0 = out.height;
            out = pilResize(out, int(out.width * scale), int(out.height * scale), filter);
            if (out.width == w0 && out.height == h0) break;
        }
        if (out.width != destW || out.height != destH) out = pilResize(out, destW, destH, PilFilter::Lanczos);
    }
    return out.width == width && out.height == height ? out : pilResize(out, width, height, PilFilter::Lanczos);
}

} // namespace dd::pipeline
