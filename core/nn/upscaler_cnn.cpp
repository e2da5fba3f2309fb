// ESRGAN (RRDBNet) and Real-ESRGAN's compact SRVGGNet. Ref: spandrel architectures/ESRGAN/__arch/RRDB.py and
// __arch_helpers/block.py (RRDB, ResidualDenseBlock_5C), Compact/__arch/SRVGG.py.
#include "core/nn/layers.h"
#include "core/nn/upscaler_nets.h"

#include <torch/torch.h>

namespace dd::nn {
namespace cnn_upscalers {  // named: the unity build joins this file with the other networks

Conv2d conv3(int64_t in, int64_t out) { return Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1)); }

torch::Tensor lrelu(const torch::Tensor& x, double slope = 0.2) { return torch::leaky_relu(x, slope); }

// ResidualDenseBlock_5C: five convolutions, each seeing the block's input and every earlier output.
struct DenseBlockImpl : torch::nn::Module {
    DenseBlockImpl(int64_t nf, int64_t gc, bool plus) {
        for (int k = 0; k < 5; ++k)
            convs.push_back(register_module("conv" + std::to_string(k + 1), conv3(nf + k * gc, k == 4 ? nf : gc)));
        if (plus) conv1x1 = register_module("conv1x1", Conv2d(torch::nn::Conv2dOptions(nf, gc, 1).bias(false)));
    }
    torch::Tensor forward(const torch::Tensor& x) {
        std::vector<torch::Tensor> seen{x};
        for (size_t k = 0; k < 4; ++k) {
            auto y = lrelu(convs[k]->forward(torch::cat(seen, 1)));
            if (conv1x1 && k == 1) y = y + conv1x1->forward(x);  // ESRGAN+'s extra residual paths
            if (conv1x1 && k == 3) y = y + seen[2];
            seen.push_back(y);
        }
        return convs[4]->forward(torch::cat(seen, 1)) * 0.2 + x;
    }
    std::vector<Conv2d> convs;
    Conv2d conv1x1{nullptr};
};
TORCH_MODULE(DenseBlock);

struct RrdbImpl : torch::nn::Module {
    RrdbImpl(int64_t nf, int64_t gc, bool plus) {
        for (int j = 0; j < 3; ++j) rdbs.push_back(register_module("rdb" + std::to_string(j + 1), DenseBlock(nf, gc, plus)));
    }
    torch::Tensor forward(const torch::Tensor& x) {
        auto y = x;
        for (auto& r : rdbs) y = r->forward(y);
        return y * 0.2 + x;
    }
    std::vector<DenseBlock> rdbs;
};
TORCH_MODULE(Rrdb);

struct EsrganImpl : UpscalerImpl {
    explicit EsrganImpl(const UpscalerConfig& c) : UpscalerImpl(c) {
        const int64_t nf = c.features, u2 = int64_t(c.unshuffle) * c.unshuffle;
        conv_first = register_module("conv_first", conv3(c.inChannels * u2, nf));
        body = register_module("body", torch::nn::ModuleList());
        for (int i = 0; i < c.blocks; ++i) body->push_back(Rrdb(nf, c.growth, c.plus));
        conv_body = register_module("conv_body", conv3(nf, nf));
        for (int u = 1; u <= c.upsampleSteps; ++u) ups.push_back(register_module("conv_up" + std::to_string(u), conv3(nf, nf)));
        conv_hr = register_module("conv_hr", conv3(nf, nf));
        conv_last = register_module("conv_last", conv3(nf, c.outChannels));
    }
    torch::Tensor upscale(const torch::Tensor& rgb) override {
        const int64_t h = rgb.size(2), w = rgb.size(3);
        auto x = rgb;
        if (config.unshuffle > 1) x = torch::pixel_unshuffle(padToMultiple(x, config.unshuffle), config.unshuffle);
        auto feat = conv_first->forward(x);
        auto trunk = feat;
        for (auto& block : *body) trunk = block->as<RrdbImpl>()->forward(trunk);
        feat = feat + conv_body->forward(trunk);
        for (auto& up : ups)
            feat = lrelu(up->forward(torch::upsample_nearest2d(feat, std::vector<int64_t>{feat.size(2) * 2, feat.size(3) * 2})));
        auto out = conv_last->forward(lrelu(conv_hr->forward(feat)));
        if (config.unshuffle > 1) out = out.narrow(2, 0, h * config.scale).narrow(3, 0, w * config.scale);
        return out;
    }
    // Each convolution sees one pixel further: 15 per RRDB, the trunk's two, and the upsampled layers' few.
    int64_t receptiveRadius() const override { return 15 * int64_t(config.blocks) + 2 + config.upsampleSteps + 2 + config.unshuffle; }

    Conv2d conv_first{nullptr}, conv_body{nullptr}, conv_hr{nullptr}, conv_last{nullptr};
    torch::nn::ModuleList body{nullptr};
    std::vector<Conv2d> ups;
};

// SRVGGNetCompact: convolutions with PReLU at the input size, a pixel shuffle, plus the nearest-upscaled input.
struct CompactImpl : UpscalerImpl {
    explicit CompactImpl(const UpscalerConfig& c) : UpscalerImpl(c) {
        body = register_module("body", torch::nn::ModuleList());
        const int64_t nf = c.features;
        body->push_back(conv3(c.inChannels, nf));
        body->push_back(torch::nn::PReLU(torch::nn::PReLUOptions().num_parameters(nf)));
        for (int i = 0; i < c.blocks; ++i) {
            body->push_back(conv3(nf, nf));
            body->push_back(torch::nn::PReLU(torch::nn::PReLUOptions().num_parameters(nf)));
        }
        body->push_back(conv3(nf, int64_t(c.outChannels) * c.scale * c.scale));
    }
    torch::Tensor upscale(const torch::Tensor& rgb) override {
        auto out = rgb;
        for (auto& layer : *body) {
            if (auto* conv = layer->as<Conv2dImpl>()) out = conv->forward(out);
            else out = layer->as<torch::nn::PReLUImpl>()->forward(out);
        }
        out = torch::pixel_shuffle(out, config.scale);
        const int64_t s = config.scale;
        return out + torch::upsample_nearest2d(rgb, std::vector<int64_t>{rgb.size(2) * s, rgb.size(3) * s});
    }
    int64_t receptiveRadius() const override { return config.blocks + 2; }

    torch::nn::ModuleList body{nullptr};
};

} // namespace cnn_upscalers


torch::Tensor padToMultiple(const torch::Tensor& x, int64_t m) {
    const int64_t ph = (m - x.size(2) % m) % m, pw = (m - x.size(3) % m) % m;
    if (!ph && !pw) return x;
    namespace F = torch::nn::functional;
    return F::pad(x, F::PadFuncOptions({0, pw, 0, ph}).mode(torch::kReflect));
}

std::shared_ptr<UpscalerImpl> makeEsrgan(const UpscalerConfig& c) { return std::make_shared<cnn_upscalers::EsrganImpl>(c); }
std::shared_ptr<UpscalerImpl> makeCompact(const UpscalerConfig& c) { return std::make_shared<cnn_upscalers::CompactImpl>(c); }

} // namespace dd::nn
