#!/usr/bin/env python3
"""Writes a full-size Stable Diffusion 1.5-architecture diffusers folder with seeded random weights.

Timings do not depend on weight values, so benchmarks can run the real architecture without downloading
anything. Configs are SD 1.5's (runwayml/stable-diffusion-v1-5 model_index, ../shared/reference/sd_reference.md);
the tokenizer is built from the bundled CLIP vocabulary.
    make_sd15_random.py OUTDIR
"""
import sys
from pathlib import Path

import torch
from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionPipeline, UNet2DConditionModel
from transformers import CLIPTextConfig, CLIPTextModel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "parity"))
from fixtures_models import tokenizer, write_bpe_files  # noqa: E402


def main():
    out = Path(sys.argv[1])
    if (out / "model_index.json").exists():
        print(f"{out}: exists")
        return
    torch.manual_seed(0)
    unet = UNet2DConditionModel(sample_size=64, cross_attention_dim=768, attention_head_dim=8)
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, sample_size=512, layers_per_block=2,
                        block_out_channels=(128, 256, 512, 512),
                        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4)
    te = CLIPTextModel(CLIPTextConfig(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                      num_attention_heads=12, max_position_embeddings=77, hidden_act="quick_gelu",
                                      projection_dim=768))
    # Random init gives huge activations in a 12-layer transformer and a VAE; scale weights down so the
    # numbers stay finite in fp16/bf16 runs too (timing is unaffected).
    with torch.no_grad():
        for m in (unet, vae, te):
            for p in m.parameters():
                if p.dim() > 1:
                    p.mul_(0.5)
    sched = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                   steps_offset=1, num_train_timesteps=1000)
    bpe = out.parent / "_bpe"
    write_bpe_files(bpe)
    pipe = StableDiffusionPipeline(unet=unet, vae=vae, text_encoder=te, tokenizer=tokenizer(bpe, "<|endoftext|>"),
                                   scheduler=sched, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    pipe.save_pretrained(out, safe_serialization=True)
    print(f"{out}: written")


if __name__ == "__main__":
    main()
