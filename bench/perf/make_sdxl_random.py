#!/usr/bin/env python3
"""Writes a full-size SDXL-architecture diffusers folder with seeded random weights, saved in fp16.

Timings and memory do not depend on weight values, so the GPU checks (tests/gpu/run_gpu_checks.sh) run the
real architecture without downloading anything. Configs are SDXL base 1.0's (stabilityai/stable-diffusion-
xl-base-1.0: unet/vae/text_encoder/text_encoder_2 config.json; ../shared/reference/sd_reference.md §2); the
tokenizers are built from the bundled CLIP vocabulary. Weights are made on the GPU when there is one (the
2.6 B-parameter UNet initialises in seconds there, minutes on a CPU).
    make_sdxl_random.py OUTDIR
"""
import sys
from pathlib import Path

import torch
from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionXLPipeline, UNet2DConditionModel
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "parity"))
from fixtures_models import tokenizer, write_bpe_files  # noqa: E402


def main():
    out = Path(sys.argv[1])
    if (out / "model_index.json").exists():
        print(f"{out}: exists")
        return
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        unet = UNet2DConditionModel(
            sample_size=128, in_channels=4, out_channels=4, layers_per_block=2,
            block_out_channels=(320, 640, 1280),
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
            attention_head_dim=(5, 10, 20), transformer_layers_per_block=(1, 2, 10), cross_attention_dim=2048,
            use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=256,
            projection_class_embeddings_input_dim=2816)
        vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, sample_size=1024, layers_per_block=2,
                            block_out_channels=(128, 256, 512, 512), scaling_factor=0.13025, force_upcast=True,
                            down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4)
        te = CLIPTextModel(CLIPTextConfig(vocab_size=49408, hidden_size=768, intermediate_size=3072,
                                          num_hidden_layers=12, num_attention_heads=12, max_position_embeddings=77,
                                          hidden_act="quick_gelu", projection_dim=768))
        te2 = CLIPTextModelWithProjection(CLIPTextConfig(vocab_size=49408, hidden_size=1280, intermediate_size=5120,
                                                         num_hidden_layers=32, num_attention_heads=20,
                                                         max_position_embeddings=77, hidden_act="gelu",
                                                         projection_dim=1280))
    # Random init gives huge activations in deep transformers and the VAE; scale weights down so the numbers
    # stay finite in fp16 (timing and memory are unaffected).
    with torch.no_grad():
        for m in (unet, vae, te, te2):
            for p in m.parameters():
                if p.dim() > 1:
                    p.mul_(0.5)
    sched = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                   steps_offset=1, num_train_timesteps=1000, timestep_spacing="leading")
    bpe = out.parent / "_bpe"
    write_bpe_files(bpe)
    pipe = StableDiffusionXLPipeline(unet=unet, vae=vae, text_encoder=te, text_encoder_2=te2,
                                     tokenizer=tokenizer(bpe, "<|endoftext|>"), tokenizer_2=tokenizer(bpe, "!"),
                                     scheduler=sched)
    pipe.to(torch.float16)
    pipe.save_pretrained(out, safe_serialization=True)
    print(f"{out}: written")


if __name__ == "__main__":
    main()
