// SwinIR: residual Swin-transformer groups over a convolutional stem, then one of four reconstruction heads.
// Ref: spandrel architectures/SwinIR/__arch/SwinIR.py (SwinIR, RSTB, SwinTransformerBlock, WindowAttention).
#include "core/nn/layers.h"
#include "core/nn/upscaler_nets.h"

#include <torch/torch.h>

namespace dd::nn {
namespace swinir_parts {  // named: the unity build joins this file with the other networks

Conv2d conv(int64_t in, int64_t out, int64_t k = 3) { return Conv2d(torch::nn::Conv2dOptions(in, out, k).padding(k / 2)); }
LayerNorm layerNorm(int64_t dim) { return LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5)); }

// "1conv" (one 3×3) or "3conv" (3×3 to a quarter of the width, 1×1, 3×3 back, with leaky ReLUs between).
struct ResidualConv {
    void build(torch::nn::Module& owner, const std::string& name, int64_t dim, bool three) {
        if (!three) {
            one = owner.register_module(name, conv(dim, dim));
            return;
        }
        const auto act = [] { return torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)); };
        stack = owner.register_module(name, torch::nn::Sequential(conv(dim, dim / 4), act(), conv(dim / 4, dim / 4, 1), act(),
                                                                  conv(dim / 4, dim)));
    }
    torch::Tensor operator()(const torch::Tensor& x) { return one ? one->forward(x) : stack->forward(x); }
    Conv2d one{nullptr};
    torch::nn::Sequential stack{nullptr};
};

// [B,H,W,C] → [B·windows, ws², C], windows in row-major order, and back.
torch::Tensor partition(const torch::Tensor& x, int64_t ws) {
    const int64_t b = x.size(0), h = x.size(1), w = x.size(2), c = x.size(3);
    return x.view({b, h / ws, ws, w / ws, ws, c}).permute({0, 1, 3, 2, 4, 5}).reshape({-1, ws * ws, c});
}
torch::Tensor unpartition(const torch::Tensor& windows, int64_t ws, int64_t h, int64_t w) {
    const int64_t c = windows.size(-1), b = windows.size(0) / ((h / ws) * (w / ws));
    return windows.view({b, h / ws, w / ws, ws, ws, c}).permute({0, 1, 3, 2, 4, 5}).reshape({b, h, w, c});
}

// The shifted windows' mask: pixels that the roll brought together from different regions do not attend to each other.
torch::Tensor shiftMask(int64_t h, int64_t w, int64_t ws, int64_t shift) {
    const auto region = [&](int64_t i, int64_t n) { return i < n - ws ? 0 : (i < n - shift ? 1 : 2); };
    auto ids = torch::empty({1, h, w, 1});
    auto a = ids.accessor<float, 4>();
    for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) a[0][y][x][0] = float(region(y, h) * 3 + region(x, w));
    const auto m = partition(ids, ws).squeeze(-1);  // [windows, ws²]
    const auto diff = m.unsqueeze(1) - m.unsqueeze(2);
    return torch::zeros_like(diff).masked_fill(diff != 0, -100.0);
}

struct WindowAttentionImpl : torch::nn::Module {
    WindowAttentionImpl(int64_t dim, int64_t ws, int64_t heads) : heads(heads) {
        relative_position_bias_table = register_parameter("relative_position_bias_table", torch::zeros({(2 * ws - 1) * (2 * ws - 1), heads}));
        qkv = register_module("qkv", Linear(dim, 3 * dim));
        proj = register_module("proj", Linear(dim, dim));
        // index[i][j] = (Δrow + ws − 1) · (2ws − 1) + Δcol + ws − 1 for window positions i and j.
        const auto r = torch::arange(ws).repeat_interleave(ws), c = torch::arange(ws).repeat({ws});
        index = (r.unsqueeze(1) - r.unsqueeze(0) + ws - 1) * (2 * ws - 1) + (c.unsqueeze(1) - c.unsqueeze(0) + ws - 1);
    }
    torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
        const int64_t b = x.size(0), n = x.size(1), c = x.size(2);
        const auto parts = qkv->forward(x).reshape({b, n, 3, heads, c / heads}).permute({2, 0, 3, 1, 4});
        const auto q = parts[0] * std::pow(double(c / heads), -0.5);
        auto attn = torch::matmul(q, parts[1].transpose(-2, -1));
        const auto bias = relative_position_bias_table.index_select(0, index.to(x.device()).view(-1)).view({n, n, -1}).permute({2, 0, 1});
        attn = attn + bias.unsqueeze(0);
        if (mask.defined()) {
            const int64_t windows = mask.size(0);
            attn = (attn.view({b / windows, windows, heads, n, n}) + mask.unsqueeze(1).unsqueeze(0)).view({-1, heads, n, n});
        }
        attn = torch::softmax(attn, -1);
        return proj->forward(torch::matmul(attn, parts[2]).transpose(1, 2).reshape({b, n, c}));
    }
    int64_t heads;
    torch::Tensor relative_position_bias_table, index;
    Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(WindowAttention);

struct MlpImpl : torch::nn::Module {
    MlpImpl(int64_t dim, int64_t hidden) {
        fc1 = register_module("fc1", Linear(dim, hidden));
        fc2 = register_module("fc2", Linear(hidden, dim));
    }
    torch::Tensor forward(const torch::Tensor& x) { return fc2->forward(torch::gelu(fc1->forward(x))); }
    Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

struct SwinBlockImpl : torch::nn::Module {
    SwinBlockImpl(int64_t dim, int64_t heads, int64_t ws, int64_t shift, int64_t hidden) : ws(ws), shift(shift) {
        norm1 = register_module("norm1", layerNorm(dim));
        attn = register_module("attn", WindowAttention(dim, ws, heads));
        norm2 = register_module("norm2", layerNorm(dim));
        mlp = register_module("mlp", Mlp(dim, hidden));
    }
    torch::Tensor forward(const torch::Tensor& x, int64_t h, int64_t w, const torch::Tensor& mask) {
        const int64_t b = x.size(0), c = x.size(2);
        auto y = norm1->forward(x).view({b, h, w, c});
        if (shift) y = torch::roll(y, {-shift, -shift}, {1, 2});
        y = unpartition(attn->forward(partition(y, ws), shift ? mask : torch::Tensor()), ws, h, w);
        if (shift) y = torch::roll(y, {shift, shift}, {1, 2});
        const auto mid = x + y.reshape({b, h * w, c});
        return mid + mlp->forward(norm2->forward(mid));
    }
    int64_t ws, shift;
    LayerNorm norm1{nullptr}, norm2{nullptr};
    WindowAttention attn{nullptr};
    Mlp mlp{nullptr};
};
TORCH_MODULE(SwinBlock);

// RSTB: a group of Swin blocks, a convolution over their output as an image, and a skip around both.
struct ResidualGroupImpl : torch::nn::Module {
    ResidualGroupImpl(const UpscalerConfig& c, int64_t depth, int64_t heads) {
        auto group = register_module("residual_group", std::make_shared<torch::nn::Module>());
        blocks = group->register_module("blocks", torch::nn::ModuleList());
        // A window as large as the training patches covers them whole: nothing to shift (SwinTransformerBlock).
        const bool shifts = c.trainingSize > c.window;
        for (int64_t i = 0; i < depth; ++i)
            blocks->push_back(SwinBlock(c.features, heads, c.window, shifts && i % 2 ? c.window / 2 : 0, c.hiddenFeatures));
        conv.build(*this, "conv", c.features, c.threeConvResidual);
    }
    torch::Tensor forward(const torch::Tensor& x, int64_t h, int64_t w, const torch::Tensor& mask) {
        auto y = x;
        for (auto& block : *blocks) y = block->as<SwinBlockImpl>()->forward(y, h, w, mask);
        const int64_t b = x.size(0), c = x.size(2);
        const auto image = conv(y.transpose(1, 2).reshape({b, c, h, w}));
        return image.flatten(2).transpose(1, 2) + x;
    }
    torch::nn::ModuleList blocks{nullptr};
    ResidualConv conv;
};
TORCH_MODULE(ResidualGroup);

struct SwinIRImpl : UpscalerImpl {
    explicit SwinIRImpl(const UpscalerConfig& c) : UpscalerImpl(c) {
        const int64_t dim = c.features, nf = c.upsampleFeatures, u2 = int64_t(c.unshuffle) * c.unshuffle;
        conv_first = register_module("conv_first", conv(c.inChannels * u2, dim));
        auto embed = register_module("patch_embed", std::make_shared<torch::nn::Module>());
        patchNorm = embed->register_module("norm", layerNorm(dim));
        layers = register_module("layers", torch::nn::ModuleList());
        for (size_t i = 0; i < c.depths.size(); ++i) layers->push_back(ResidualGroup(c, c.depths[i], c.heads[i]));
        norm = register_module("norm", layerNorm(dim));
        conv_after_body.build(*this, "conv_after_body", dim, c.threeConvResidual);
        const int64_t fullScale = int64_t(c.scale) * c.unshuffle;
        if (c.upsampler == "pixelshuffle" || c.upsampler == "nearest+conv")
            conv_before_upsample = register_module(
                "conv_before_upsample", torch::nn::Sequential(conv(dim, nf), torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.01))));
        if (c.upsampler == "pixelshuffle") {
            upsample = register_module("upsample", torch::nn::Sequential());
            const bool three = fullScale == 3;
            for (int64_t s = fullScale; s > 1; s /= three ? 3 : 2) {
                upsample->push_back(conv(nf, (three ? 9 : 4) * nf));
                upsample->push_back(torch::nn::PixelShuffle(three ? 3 : 2));
            }
            conv_last = register_module("conv_last", conv(nf, c.outChannels));
        } else if (c.upsampler == "pixelshuffledirect") {
            upsample = register_module("upsample", torch::nn::Sequential(conv(dim, fullScale * fullScale * c.outChannels),
                                                                         torch::nn::PixelShuffle(fullScale)));
        } else if (c.upsampler == "nearest+conv") {
            for (int64_t s = 1, i = 1; s < fullScale; s *= 2, ++i) ups.push_back(register_module("conv_up" + std::to_string(i), conv(nf, nf)));
            conv_hr = register_module("conv_hr", conv(nf, nf));
            conv_last = register_module("conv_last", conv(nf, c.outChannels));
        } else {
            conv_last = register_module("conv_last", conv(dim, c.outChannels));
        }
    }

    torch::Tensor features(const torch::Tensor& x) {
        const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
        const bool shifts = config.trainingSize > config.window;
        const auto mask = shifts ? shiftMask(h, w, config.window, config.window / 2).to(x.device(), x.scalar_type()) : torch::Tensor();
        auto y = patchNorm->forward(x.flatten(2).transpose(1, 2));
        for (auto& layer : *layers) y = layer->as<ResidualGroupImpl>()->forward(y, h, w, mask);
        return norm->forward(y).transpose(1, 2).reshape({b, c, h, w});
    }

    torch::Tensor upscale(const torch::Tensor& rgb) override {
        const int64_t h = rgb.size(2), w = rgb.size(3);
        auto x = padToMultiple(rgb, config.window);
        const auto mean = config.inChannels == 3 ? torch::tensor({0.4488f, 0.4371f, 0.4040f}, x.options()).view({1, 3, 1, 1})
                                                 : torch::zeros({1, 1, 1, 1}, x.options());
        x = (x - mean) * config.imageRange;
        if (config.unshuffle > 1) x = torch::pixel_unshuffle(x, config.unshuffle);
        const auto first = conv_first->forward(x);
        const auto body = conv_after_body(features(first)) + first;
        torch::Tensor out;
        if (config.upsampler == "pixelshuffle") {
            out = conv_last->forward(upsample->forward(conv_before_upsample->forward(body)));
        } else if (config.upsampler == "pixelshuffledirect") {
            out = upsample->forward(body);
        } else if (config.upsampler == "nearest+conv") {
            out = conv_before_upsample->forward(body);
            for (auto& up : ups)
                out = torch::leaky_relu(up->forward(torch::upsample_nearest2d(out, std::vector<int64_t>{out.size(2) * 2, out.size(3) * 2})), 0.2);
            out = conv_last->forward(torch::leaky_relu(conv_hr->forward(out), 0.2));
        } else {
            out = x + conv_last->forward(body);  // restoration: a residual at the input's size
        }
        out = out / config.imageRange + mean;
        return out.narrow(2, 0, h * config.scale).narrow(3, 0, w * config.scale);
    }
    // Shifted windows carry information half a window further per block; unbounded in practice, so tiles are
    // cut with the caller's overlap.
    int64_t receptiveRadius() const override {
        int64_t blocks = 0;
        for (int d : config.depths) blocks += d;
        return blocks * config.window + 4 * int64_t(config.depths.size()) + 8;
    }

    Conv2d conv_first{nullptr}, conv_last{nullptr}, conv_hr{nullptr};
    LayerNorm patchNorm{nullptr}, norm{nullptr};
    torch::nn::ModuleList layers{nullptr};
    ResidualConv conv_after_body;
    torch::nn::Sequential conv_before_upsample{nullptr}, upsample{nullptr};
    std::vector<Conv2d> ups;
};

} // namespace swinir_parts


std::shared_ptr<UpscalerImpl> makeSwinIR(const UpscalerConfig& c) { return std::make_shared<swinir_parts::SwinIRImpl>(c); }

} // namespace dd::nn
