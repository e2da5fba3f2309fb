#pragma once
// AutoencoderTiny (TAESD, madebyollin/taesd, MIT): a distilled VAE with the same latent space as the model's own
// VAE, cheap enough to decode every step for live previews, or as an optional fast final decode.
// Ref: diffusers models/autoencoders/autoencoder_tiny.py (AutoencoderTiny), models/autoencoders/vae.py
// (EncoderTiny, DecoderTiny), models/unets/unet_2d_blocks.py (AutoencoderTinyBlock); TAESD taesd.py
// (Encoder, Decoder, Block) for the original single-file layout; sd_reference.md §9.2.
//
// Usage (engine thread, c10::InferenceMode):
//   AutoencoderTiny taesd = loadTaesd("…/taesd");                  // diffusers folder, or
//   AutoencoderTiny taesd = loadTaesd("…/taesd_decoder.safetensors"); // decoder only
//   torch::Tensor rgb = taesd->decode(latents);  // UNet-space latents (scaling_factor 1) → [−1, 1]
// Not thread-safe: one caller at a time, like every torch module here.
#include "core/io/safetensors.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "core/nn/taesd_config.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace dd::nn {

// AutoencoderTinyBlock / TAESD Block: conv path (conv.0, conv.2, conv.4 with ReLUs) + skip, then ReLU.
struct TaesdBlockImpl : torch::nn::Module {
    TaesdBlockImpl(int64_t in, int64_t out);
    torch::Tensor forward(torch::Tensor x);

    torch::nn::Sequential conv{nullptr};
    torch::nn::Conv2d skip{nullptr};  // 1×1 without bias when in ≠ out, else identity
};
TORCH_MODULE(TaesdBlock);

// EncoderTiny: image in [−1, 1] → latents. `layers.N` equal the original taesd_encoder indices.
struct TaesdEncoderImpl : torch::nn::Module {
    explicit TaesdEncoderImpl(const TaesdConfig& c);
    torch::Tensor forward(const torch::Tensor& image);
    torch::nn::Sequential layers{nullptr};
};
TORCH_MODULE(TaesdEncoder);

// DecoderTiny: latents → image in [−1, 1]. `layers.N` is the original taesd_decoder index N + 1 (the clamp,
// original index 0, has no weights and lives in forward).
struct TaesdDecoderImpl : torch::nn::Module {
    explicit TaesdDecoderImpl(const TaesdConfig& c);
    torch::Tensor forward(const torch::Tensor& latents);
    torch::nn::Sequential layers{nullptr};
};
TORCH_MODULE(TaesdDecoder);

struct AutoencoderTinyImpl : torch::nn::Module {
    // A single original file holds one half; the other stays null and its method throws.
    explicit AutoencoderTinyImpl(const TaesdConfig& config, bool withEncoder = true, bool withDecoder = true);

    bool hasEncoder() const { return !encoder.is_empty(); }
    bool hasDecoder() const { return !decoder.is_empty(); }
    torch::Tensor encode(const torch::Tensor& image);   // [B,3,H,W] in [−1, 1] → [B,C,H/8,W/8] UNet-space latents
    torch::Tensor decode(const torch::Tensor& latents); // → [B,3,8h,8w], ~[−1, 1]
    // Pipeline decode: latents / scaling_factor (1 for every TAESD) → decode → (x / 2 + 0.5).clamp(0, 1).
    torch::Tensor decodeLatents(const torch::Tensor& latents);
    // diffusers scale_latents / unscale_latents: raw latents ↔ [0, 1] for 8-bit storage.
    torch::Tensor scaleLatents(const torch::Tensor& x) const;
    torch::Tensor unscaleLatents(const torch::Tensor& x) const;

    const TaesdConfig& config() const { return m_config; }
    int64_t scaleFactor() const;  // pixels per latent: 8 for the real TAESD

    TaesdEncoder encoder{nullptr};
    TaesdDecoder decoder{nullptr};

private:
    TaesdConfig m_config;
};
TORCH_MODULE(AutoencoderTiny);

// The architecture of diffusers-named TAESD weights (`encoder.layers.*`, `decoder.layers.*`, either half may be
// absent), read from tensor shapes. For single files that come without a config.json; the upsampling factor has
// no weights and is taken as 2, like every published TAESD.
TaesdConfig taesdConfigFromWeights(const io::TensorMap& weights, const std::string& source);

// Loads TAESD weights in fp32 on `device`. `path` is one of
//  - a diffusers AutoencoderTiny folder: config.json + diffusion_pytorch_model.safetensors;
//  - a diffusers-named .safetensors file (config.json beside it is used when present, else shapes decide);
//  - an original madebyollin single file, taesd_decoder.safetensors or taesd_encoder.safetensors (Sequential
//    keys `1.weight`, `3.conv.0.weight`, …), which gives a decoder-only or encoder-only model.
// `otherHalf` optionally names the matching original encoder/decoder file to complete the model.
// Throws dd::io::ModelFileError naming the file and, for weight problems, the key.
AutoencoderTiny loadTaesd(const std::string& path, torch::Device device = torch::kCPU, const std::string& otherHalf = {});

} // namespace dd::nn
