// Tiled VAE encode/decode (diffusers enable_tiling).
// Ref: diffusers models/autoencoders/autoencoder_kl.py AutoencoderKL._tiled_encode / tiled_decode / blend_v /
// blend_h. Blending is in place and reads neighbours after their own blends, exactly as diffusers does.
#include "core/nn/vae.h"

#include <torch/torch.h>

namespace dd::nn {
namespace {

using Grid = std::vector<std::vector<torch::Tensor>>;

void blendV(const torch::Tensor& a, torch::Tensor& b, int64_t extent) {
    extent = std::min({a.size(2), b.size(2), extent});
    for (int64_t y = 0; y < extent; ++y) {
        const double w = static_cast<double>(y) / static_cast<double>(extent);
        b.select(2, y).copy_(a.select(2, a.size(2) - extent + y) * (1 - w) + b.select(2, y) * w);
    }
}

void blendH(const torch::Tensor& a, torch::Tensor& b, int64_t extent) {
    extent = std::min({a.size(3), b.size(3), extent});
    for (int64_t x = 0; x < extent; ++x) {
        const double w = static_cast<double>(x) / static_cast<double>(extent);
        b.select(3, x).copy_(a.select(3, a.size(3) - extent + x) * (1 - w) + b.select(3, x) * w);
    }
}

// Runs `fn` on tiles of `tileIn` (stride `stride`) and stitches the outputs with `blend`-wide overlaps.
torch::Tensor tiled(const torch::Tensor& in, int64_t tileIn, int64_t stride, int64_t blend, int64_t rowLimit,
                    const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
    Grid rows;
    for (int64_t i = 0; i < in.size(2); i += stride) {
        auto& row = rows.emplace_back();
        for (int64_t j = 0; j < in.size(3); j += stride)
            row.push_back(fn(in.slice(2, i, i + tileIn).slice(3, j, j + tileIn)));
    }
    std::vector<torch::Tensor> resultRows;
    for (size_t i = 0; i < rows.size(); ++i) {
        std::vector<torch::Tensor> resultRow;
        for (size_t j = 0; j < rows[i].size(); ++j) {
            auto& t = rows[i][j];
            if (i > 0) blendV(rows[i - 1][j], t, blend);
            if (j > 0) blendH(rows[i][j - 1], t, blend);
            resultRow.push_back(t.slice(2, 0, rowLimit).slice(3, 0, rowLimit));
        }
        resultRows.push_back(torch::cat(resultRow, 3));
    }
    return torch::cat(resultRows, 2);
}

} // namespace

torch::Tensor AutoencoderKLImpl::tiledEncode(const torch::Tensor& x, int64_t sampleTile) {
    const int64_t latentTile = sampleTile / m_config.scaleFactor();
    const int64_t blend = static_cast<int64_t>(latentTile * 0.25);
    return tiled(x, sampleTile, static_cast<int64_t>(sampleTile * 0.75), blend, latentTile - blend,
                 [&](const torch::Tensor& t) {
                     auto h = encoder(t);
                     return quant_conv ? quant_conv(h) : h;
                 });
}

torch::Tensor AutoencoderKLImpl::tiledDecode(const torch::Tensor& z, int64_t sampleTile) {
    const int64_t latentTile = sampleTile / m_config.scaleFactor();
    const int64_t blend = static_cast<int64_t>(sampleTile * 0.25);
    return tiled(z, latentTile, static_cast<int64_t>(latentTile * 0.75), blend, sampleTile - blend,
                 [&](const torch::Tensor& t) { return decoder(post_quant_conv ? post_quant_conv(t) : t); });
}

} // namespace dd::nn
