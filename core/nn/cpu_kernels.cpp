#include "core/nn/cpu_kernels.h"

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace dd::nn {
namespace {

// torch registers these only in builds with oneDNN (every x86 wheel); looked up once, by schema.
using PointwiseFn = at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                               std::string_view, c10::List<std::optional<at::Scalar>>,
                               std::optional<std::string_view>);
using BinaryFn = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                            const std::optional<at::Tensor>&, std::string_view);

struct OnednnLinearOps {
    std::optional<c10::TypedOperatorHandle<PointwiseFn>> pointwise;
    std::optional<c10::TypedOperatorHandle<BinaryFn>> binary;
};

const OnednnLinearOps& onednnOps() {
    static const OnednnLinearOps ops = [] {
        OnednnLinearOps o;
        if (fastPathTurnedOff("DD_ONEDNN_LINEAR") || !at::hasMKLDNN()) return o;
        auto& dispatcher = c10::Dispatcher::singleton();
        const auto pointwise = dispatcher.findSchema({"mkldnn::_linear_pointwise", ""});
        const auto binary = dispatcher.findSchema({"mkldnn::_linear_pointwise", "binary"});
        if (!pointwise || !binary) return o;
        o.pointwise = pointwise->typed<PointwiseFn>();
        o.binary = binary->typed<BinaryFn>();
        return o;
    }();
    return ops;
}

std::optional<at::Tensor> optionalBias(const at::Tensor& bias) {
    return bias.defined() ? std::optional<at::Tensor>(bias.contiguous()) : std::nullopt;
}

// The fast paths take an fp32 bias or none.
bool fp32OrNoBias(const at::Tensor& bias) { return !bias.defined() || bias.scalar_type() == at::kFloat; }

// Neither oneDNN's fused linear nor NNPACK's convolution has a derivative.
bool inferenceOnly(const at::Tensor& x, const at::Tensor& weight) {
    return !at::GradMode::is_enabled() || (!x.requires_grad() && !weight.requires_grad());
}

at::Tensor pointwise(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, std::string_view post,
                     std::optional<std::string_view> algorithm) {
    return onednnOps().pointwise->call(x, w, optionalBias(b), post, c10::List<std::optional<at::Scalar>>(), algorithm);
}

thread_local bool t_winogradAllowed = true;

// _nnpack_available() also initialises NNPACK (false where the CPU lacks AVX2); its convolutions fail before that.
bool winogradAvailable() {
    static const bool available = !fastPathTurnedOff("DD_WINOGRAD_CONV") && at::_nnpack_available();
    return available;
}

} // namespace

bool fastPathTurnedOff(const char* variable) {
    const char* value = std::getenv(variable);
    return value && std::strcmp(value, "0") == 0;
}

bool usesOnednnLinear(const at::Tensor& x, const at::Tensor& weight) {
    // fp32 only: in bf16 torch's linear already runs on oneDNN, and a fused post-op would round differently
    // from diffusers' separate ops.
    return onednnOps().pointwise && x.device().is_cpu() && weight.device().is_cpu() &&
           x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat && weight.dim() == 2 &&
           weight.is_contiguous() && x.dim() >= 2 && x.numel() > 0 && inferenceOnly(x, weight);
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    if (!usesOnednnLinear(x, weight) || !fp32OrNoBias(bias)) return torch::linear(x, weight, bias);
    return pointwise(x, weight, bias, "none", std::nullopt);
}

at::Tensor gegluOfProjection(const at::Tensor& projected) {
    const auto parts = projected.chunk(2, -1);
    return parts[0] * torch::gelu(parts[1]);
}

at::Tensor geglu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    const auto half = weight.size(0) / 2;
    if (!usesOnednnLinear(x, weight) || !fp32OrNoBias(bias)) return gegluOfProjection(torch::linear(x, weight, bias));
    // Row slices of a contiguous weight are contiguous views: no copy. gelu "none" is the erf form (diffusers').
    auto rows = [&](const at::Tensor& t, int64_t start) { return t.defined() ? t.narrow(0, start, half) : t; };
    const auto gate = pointwise(x, rows(weight, half), rows(bias, half), "gelu", "none");
    return onednnOps().binary->call(x, gate, rows(weight, 0), optionalBias(rows(bias, 0)), "mul");
}

bool usesWinogradConv(const at::Tensor& x, const at::Tensor& weight, c10::IntArrayRef stride,
                      c10::IntArrayRef dilation, int64_t groups) {
    // Large images only: NNPACK transforms the kernel at every call, which costs more than Winograd saves once
    // the image is small against the channels (measured: 2.6× faster at 64²·320, 1.25× at 32²·640, 0.65× at
    // 16²·1280). Batches go image by image (NNPACK's batched path is slower than oneDNN's), and a
    // channels_last input stays with oneDNN, where the plan asked for it.
    const auto one = [](c10::IntArrayRef a) { return a.size() == 2 && a[0] == 1 && a[1] == 1; };
    return x.device().is_cpu() && weight.device().is_cpu() && x.scalar_type() == at::kFloat &&
           weight.scalar_type() == at::kFloat && x.dim() == 4 && weight.dim() == 4 && weight.size(2) == 3 &&
           weight.size(3) == 3 && weight.size(1) >= 16 && one(stride) && one(dilation) && groups == 1 &&
           x.size(2) * x.size(3) >= 32 * 32 && x.is_contiguous() && weight.is_contiguous() &&
           inferenceOnly(x, weight) && t_winogradAllowed && winogradAvailable();
}

WinogradConvScope::WinogradConvScope(bool allowed) : m_previous(t_winogradAllowed) { t_winogradAllowed = allowed; }
WinogradConvScope::~WinogradConvScope() { t_winogradAllowed = m_previous; }

namespace {

// Input rows per NNPACK call: ~16 MB of input, which bounds its kept workspace near 60 MB; a multiple of 6, the
// height of a Winograd F(6×6, 3×3) output tile.
int64_t bandRows(const at::Tensor& image) {
    constexpr int64_t kBandBytes = int64_t(16) << 20;
    const int64_t rows = kBandBytes / (image.size(1) * image.size(3) * int64_t(sizeof(float)));
    return std::max<int64_t>(6, rows / 6 * 6);
}

// One image [1, C, H, W], padding p ≤ 2 on each side. A band of output rows [r0, r1) reads input rows
// [r0 - p, r1 - p + 2); rows outside the image are the zero padding, added to the band's copy (NNPACK pads top
// and bottom alike, so bands get only the width padding from it).
at::Tensor winogradImage(const at::Tensor& image, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                         c10::IntArrayRef padding) {
    const std::array<int64_t, 2> unitStride{1, 1};  // spelled out: the C++ default is a one-element list
    const int64_t h = image.size(2), ph = padding[0], outH = h + 2 * ph - 2;
    const int64_t rows = bandRows(image);
    if (outH <= rows) return at::_nnpack_spatial_convolution(image, weight, bias, padding, unitStride);
    auto out = at::empty({1, weight.size(0), outH, image.size(3) + 2 * padding[1] - 2}, image.options());
    const std::array<int64_t, 2> widthOnly{0, padding[1]};
    for (int64_t r0 = 0; r0 < outH; r0 += rows) {
        const int64_t r1 = std::min(r0 + rows, outH);
        const int64_t in0 = r0 - ph, in1 = r1 + 2 - ph;  // input rows the band reads, padding included
        const int64_t c0 = std::max<int64_t>(in0, 0), c1 = std::min(in1, h);
        auto band = image.narrow(2, c0, c1 - c0);
        if (c0 > in0 || c1 < in1) band = at::constant_pad_nd(band, {0, 0, c0 - in0, in1 - c1});
        out.narrow(2, r0, r1 - r0).copy_(at::_nnpack_spatial_convolution(band, weight, bias, widthOnly, unitStride));
    }
    return out;
}

// A 2-d convolution's output height and width (no dilation): x [n, c, h, w], weight [out, c, kh, kw].
std::array<int64_t, 2> outputSize(const at::Tensor& x, const at::Tensor& weight, c10::IntArrayRef stride,
                                  c10::IntArrayRef padding) {
    return {(x.size(2) + 2 * padding[0] - weight.size(2)) / stride[0] + 1,
            (x.size(3) + 2 * padding[1] - weight.size(3)) / stride[1] + 1};
}

// im2col, then one oneDNN matmul with the weight as it is stored ([out, in·kh·kw] is a view of it).
at::Tensor matmulConv(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, c10::IntArrayRef stride,
                      c10::IntArrayRef padding) {
    const int64_t n = x.size(0), out = weight.size(0);
    const auto [oh, ow] = outputSize(x, weight, stride, padding);
    const std::array<int64_t, 2> kernel{weight.size(2), weight.size(3)}, unitDilation{1, 1};
    const auto columns = at::im2col(x, kernel, unitDilation, padding, stride);  // [n, in·kh·kw, oh·ow]
    const auto rows = columns.transpose(1, 2).reshape({n * oh * ow, columns.size(1)});
    const auto y = pointwise(rows, weight.view({out, -1}), bias, "none", std::nullopt);  // [n·oh·ow, out]
    return y.view({n, oh * ow, out}).permute({0, 2, 1}).contiguous().view({n, out, oh, ow});
}

} // namespace

bool usesMatmulConv(const at::Tensor& x, const at::Tensor& weight, c10::IntArrayRef stride,
                    c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups) {
    // Up to 128 output pixels an image, a kernel larger than 1×1 (a 1×1 convolution is a matmul already; measured
    // equal). Measured on a 2-core Zen 3, 3×3 convolutions, batch 2: 1280→1280 at 8² 79.7 → 39.4 ms, 2560→1280
    // at 8² 152.7 → 74.5, at 12×8 90.9 → 56.1, the 16² → 8² stride-2 downsampler 86.7 → 41.9; no gain at 16×12
    // (130.9 / 134.5) nor at 16² (167 / 178). The matmul sums each output in one dot product: 3.5e-6 from an fp64
    // reference where the direct convolution gives 4.4e-5.
    static const bool turnedOn = !fastPathTurnedOff("DD_MATMUL_CONV");
    if (!turnedOn || x.dim() != 4 || weight.dim() != 4 || stride.size() != 2 || padding.size() != 2 ||
        dilation.size() != 2)
        return false;
    const auto [oh, ow] = outputSize(x, weight, stride, padding);
    return x.device().is_cpu() && weight.device().is_cpu() && x.scalar_type() == at::kFloat &&
           weight.scalar_type() == at::kFloat && weight.size(2) * weight.size(3) > 1 && oh > 0 && ow > 0 &&
           oh * ow <= 128 && groups == 1 && dilation[0] == 1 && dilation[1] == 1 && x.is_contiguous() &&
           weight.is_contiguous() &&
           x.size(1) == weight.size(1) && inferenceOnly(x, weight) && t_winogradAllowed && onednnOps().pointwise;
}

at::Tensor conv2d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, c10::IntArrayRef stride,
                  c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups) {
    if (fp32OrNoBias(bias) && usesMatmulConv(x, weight, stride, padding, dilation, groups))
        return matmulConv(x, weight, bias, stride, padding);
    if (!usesWinogradConv(x, weight, stride, dilation, groups) || padding.size() != 2 || padding[0] > 2 || padding[1] > 2 ||
        !fp32OrNoBias(bias))
        return at::conv2d(x, weight, bias, stride, padding, dilation, groups);
    const auto b = optionalBias(bias);
    if (x.size(0) == 1) return winogradImage(x, weight, b, padding);
    std::vector<at::Tensor> images;
    images.reserve(x.size(0));
    for (int64_t i = 0; i < x.size(0); ++i) images.push_back(winogradImage(x.narrow(0, i, 1), weight, b, padding));
    return at::cat(images);
}

} // namespace dd::nn
