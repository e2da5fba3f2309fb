#pragma once
// Upscaler networks (docs/upscalers.md), computed as spandrel 0.4 computes them: ESRGAN / Real-ESRGAN (RRDBNet),
// Real-ESRGAN's compact SRVGGNet and SwinIR. Parameter names are Real-ESRGAN's / SwinIR's own; the file's other
// layouts are renamed while loading (upscaler_config.h).
// Ref: spandrel architectures/ESRGAN/__arch/RRDB.py, Compact/__arch/SRVGG.py, SwinIR/__arch/SwinIR.py.
//
// Usage (engine thread, c10::InferenceMode):
//   auto net = loadUpscaler("4x-UltraSharp.safetensors");
//   torch::Tensor big = net->upscale(rgb);  // [B,C,H,W] in [0, 1] → [B,C,H·s,W·s], not clamped
// Whole images only: pipeline/upscale tiles large ones.
#include "core/nn/load_weights.h"
#include "core/nn/upscaler_config.h"

#include <torch/nn/module.h>
#include <torch/types.h>

#include <memory>
#include <string>

namespace dd::nn {

struct UpscalerImpl : torch::nn::Module {
    explicit UpscalerImpl(UpscalerConfig c) : config(std::move(c)) {}
    virtual torch::Tensor upscale(const torch::Tensor& rgb) = 0;
    // How far (input pixels) one output pixel sees: the margin a tile needs to be computed as the whole image is.
    virtual int64_t receptiveRadius() const = 0;
    UpscalerConfig config;
};

// An untrained network of `config`'s architecture (the loader fills its weights).
std::shared_ptr<UpscalerImpl> makeUpscaler(const UpscalerConfig& config);

struct LoadedUpscaler {
    std::shared_ptr<UpscalerImpl> net;
    std::string path;
};

// Reads a .safetensors upscaler, detects its architecture and loads it in fp32 on `target`'s device. Throws
// dd::io::ModelFileError naming the file: a pickle (.pth, with the conversion recipe), an unknown architecture, a
// missing or misshapen weight.
LoadedUpscaler loadUpscaler(const std::string& path, const LoadTarget& target = {});

} // namespace dd::nn
