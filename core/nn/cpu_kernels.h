#pragma once
// Faster arithmetic for the layers on the CPU in fp32, from kernels the torch build already carries; elsewhere
// (CUDA, bf16, fp16, autograd, a torch without them) every function here is torch's plain op.
// - Linear layers run on oneDNN's matmul (torch's mkldnn::_linear_pointwise, the kernel torch.compile emits for
//   CPU linears) instead of MKL's sgemm: 5–38 % faster on the UNet's shapes, same weights, no packed copy.
//   GEGLU's gelu and product ride along as oneDNN post-ops, so its 4·dim-wide activations are never written
//   and read back.
// - 3×3 convolutions over large images run NNPACK's Winograd F(6×6, 3×3) (at::_nnpack_spatial_convolution),
//   2–2.6× faster than oneDNN's direct convolution at 64² and up. Winograd rounds differently: ~1e-5 relative
//   per convolution instead of ~1e-7, so it is the plan's choice (winograd_conv, on by default; off gives
//   diffusers' own arithmetic). Large images go in bands of rows: NNPACK keeps a per-thread workspace of ~3.6×
//   the input it is given, for good (467 MB for one 128-channel 512² convolution, 1.8 GB at 1024²).
// - Convolutions over small images (at most 128 output pixels: the UNet's 8² level at 512²) run as im2col and one
//   oneDNN matmul, 2× faster than oneDNN's direct convolution there on a Zen 3 (47-49 GFLOP/s at 8² against
//   93 at 16²). It rounds differently from diffusers' direct convolution too (closer to fp64), so the plan's
//   winograd_conv switch covers it as well: off, every convolution is torch's.
// DD_ONEDNN_LINEAR=0, DD_WINOGRAD_CONV=0 and DD_MATMUL_CONV=0 turn them off (A/B runs; the first also turns off
// the small-image matmul, which runs on oneDNN's linear).
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

namespace dd::nn {

// The A/B switch of a CPU fast path (these, and the attention kernel's DD_FLASH_ATTENTION): true where the
// environment variable is "0".
bool fastPathTurnedOff(const char* variable);

// x·Wᵀ + b (bias may be undefined).
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// diffusers' GEGLU on one projection whose output rows are [hidden; gate]: hidden · gelu(gate).
at::Tensor geglu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);
// The same on a projection already made ([..., 2·n] → [..., n]).
at::Tensor gegluOfProjection(const at::Tensor& projected);

// torch's conv2d with explicit padding.
at::Tensor conv2d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, c10::IntArrayRef stride,
                  c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups);

// Winograd and the small-image matmul for conv2d() on this thread while the scope lives (the plan's
// winograd_conv; the engine sets it for a run). Allowed by default.
class WinogradConvScope {
public:
    explicit WinogradConvScope(bool allowed);
    ~WinogradConvScope();
    WinogradConvScope(const WinogradConvScope&) = delete;
    WinogradConvScope& operator=(const WinogradConvScope&) = delete;

private:
    bool m_previous;
};

// Whether linear()/geglu() and conv2d() would take the fast paths for these operands.
bool usesOnednnLinear(const at::Tensor& x, const at::Tensor& weight);
bool usesWinogradConv(const at::Tensor& x, const at::Tensor& weight, c10::IntArrayRef stride,
                      c10::IntArrayRef dilation, int64_t groups);
bool usesMatmulConv(const at::Tensor& x, const at::Tensor& weight, c10::IntArrayRef stride,
                    c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups);

} // namespace dd::nn
