#!/usr/bin/env python3
"""Writes the configs (no weights) of the full-size SD 1.5 and SDXL architectures that dd_random_model fills
with random weights: the same configs bench/perf/make_sd15_random.py and make_sdxl_random.py build with
diffusers. Run once by a developer (the outputs are committed), so the GPU checks need PyTorch only.
    write_configs.py            # rewrites bench/random-models/{sd15,sdxl}
"""
import json
from pathlib import Path

import torch
from diffusers import AutoencoderKL, EulerDiscreteScheduler, UNet2DConditionModel
from transformers import CLIPTextConfig

HERE = Path(__file__).resolve().parent


def clip_l():
    return CLIPTextConfig(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                          num_attention_heads=12, max_position_embeddings=77, hidden_act="quick_gelu", projection_dim=768)


def vae(**extra):
    return AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, layers_per_block=2,
                         block_out_channels=(128, 256, 512, 512), down_block_types=("DownEncoderBlock2D",) * 4,
                         up_block_types=("UpDecoderBlock2D",) * 4, **extra)


def write(name, unet, vae_model, encoders, pipeline, scheduler):
    out = HERE / name
    unet.save_config(out / "unet")
    vae_model.save_config(out / "vae")
    index = {"_class_name": pipeline, "unet": ["diffusers", "UNet2DConditionModel"],
             "vae": ["diffusers", "AutoencoderKL"], "scheduler": ["diffusers", "EulerDiscreteScheduler"]}
    for folder, (config, cls) in encoders.items():
        (out / folder).mkdir(parents=True, exist_ok=True)
        config.architectures = [cls]
        config.to_json_file(out / folder / "config.json")
        index[folder] = ["transformers", cls]
    scheduler.save_config(out / "scheduler")
    (out / "model_index.json").write_text(json.dumps(index, indent=2) + "\n")


def main():
    sd15_scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                            steps_offset=1, num_train_timesteps=1000)
    sdxl_scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                            steps_offset=1, num_train_timesteps=1000, timestep_spacing="leading")
    with torch.device("meta"):  # configs only: no weights are made
        write("sd15", UNet2DConditionModel(sample_size=64, cross_attention_dim=768, attention_head_dim=8),
              vae(sample_size=512), {"text_encoder": (clip_l(), "CLIPTextModel")}, "StableDiffusionPipeline",
              sd15_scheduler)
        big_g = CLIPTextConfig(vocab_size=49408, hidden_size=1280, intermediate_size=5120, num_hidden_layers=32,
                               num_attention_heads=20, max_position_embeddings=77, hidden_act="gelu", projection_dim=1280)
        write("sdxl", UNet2DConditionModel(
                  sample_size=128, in_channels=4, out_channels=4, layers_per_block=2, block_out_channels=(320, 640, 1280),
                  down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
                  up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
                  attention_head_dim=(5, 10, 20), transformer_layers_per_block=(1, 2, 10), cross_attention_dim=2048,
                  use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=256,
                  projection_class_embeddings_input_dim=2816),
              vae(sample_size=1024, scaling_factor=0.13025, force_upcast=True),
              {"text_encoder": (clip_l(), "CLIPTextModel"), "text_encoder_2": (big_g, "CLIPTextModelWithProjection")},
              "StableDiffusionXLPipeline", sdxl_scheduler)


if __name__ == "__main__":
    main()
