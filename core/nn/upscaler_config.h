#pragma once
// Upscaler networks (docs/upscalers.md): which architecture a .safetensors file holds and its hyperparameters,
// read from tensor names and shapes alone, as spandrel (the upscaler library ComfyUI uses) detects them.
// Torch-free, so the fuzzers, the CLI's `inspect` and the window's upscaler list read files without libtorch.
#include "core/io/safetensors_header.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dd::nn {

enum class UpscalerArch {
    Esrgan,   // ESRGAN / Real-ESRGAN / BSRGAN: RRDBNet
    Compact,  // Real-ESRGAN's compact SRVGGNet
    SwinIR,   // SwinIR, a Swin-transformer restorer
};

struct UpscalerConfig {
    UpscalerArch arch = UpscalerArch::Esrgan;
    int scale = 4;              // output pixels per input pixel, per side
    int inChannels = 3, outChannels = 3;
    int features = 64;          // ESRGAN num_filters, Compact num_feat, SwinIR embed_dim
    int blocks = 23;            // ESRGAN RRDB blocks, Compact body convolutions
    int growth = 32;            // ESRGAN's dense-block growth channels
    bool plus = false;          // ESRGAN+ (extra 1×1 residual paths)
    int unshuffle = 1;          // the input is pixel-unshuffled by this first (Real-ESRGAN x2/x1, SwinIR)
    int upsampleSteps = 2;      // ESRGAN's nearest+conv doublings: the network's own scale is 2^steps
    // SwinIR
    std::vector<int> depths, heads;
    int window = 8;
    int trainingSize = 64;      // img_size: a window larger than it shrinks to it, and then nothing shifts
    int hiddenFeatures = 128;   // the MLP's width
    int upsampleFeatures = 64;  // num_feat of the convolutions after the transformer
    std::string upsampler;      // "pixelshuffle", "pixelshuffledirect", "nearest+conv", "" (restoration only)
    bool threeConvResidual = false;
    double imageRange = 1.0;    // 255 for the JPEG models (window 7)

    std::string architectureName() const;  // "ESRGAN", "RealESRGAN Compact", "SwinIR"
    std::string describe() const;          // "ESRGAN 4x, 64 features, 23 blocks"
};

struct UpscalerDetection {
    UpscalerConfig config;
    // File key → the module's parameter name (ESRGAN's three key layouts all become Real-ESRGAN's names); keys
    // the network computes itself (SwinIR's position index and masks) are absent: the loader skips them.
    std::map<std::string, std::string> keys;
};

// Throws dd::io::ModelFileError naming `path`: not an upscaler of a known architecture (naming what it might be),
// or shapes that do not fit together.
UpscalerDetection detectUpscaler(const std::vector<io::TensorInfo>& tensors, const std::string& path);

// The message for a pickle upscaler (.pth / .pt / .ckpt / .bin), with a one-line safe conversion.
std::string pickleUpscalerMessage();

} // namespace dd::nn
