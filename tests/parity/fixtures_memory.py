#!/usr/bin/env python3
"""Random-weight models for memory prediction and benchmarks, as diffusers folders.

Usage: fixtures_memory.py <outdir>
  → <outdir>/models/mid-sd1/: an SD 1.x-shaped model big enough that weights and activations dominate the
    process baseline, cheap enough to run several sizes in seconds: the full CLIP ViT-L/14 text encoder
    (123 M parameters, 0.5 GB fp32), a 3-level UNet (64/128/256 channels, 8 heads, attention at the two
    highest resolutions) and a 4-level VAE with 256-pixel tiles (so a 512² decode tiles).
(The full-size SD 1.5 model the benchmark runs is bench/perf/make_sd15_random.py's.)
Nothing is downloaded; weights are diffusers' / transformers' default random initialisation, seeded.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import shutil  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from transformers import CLIPTextConfig, CLIPTextModel  # noqa: E402

from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionPipeline, UNet2DConditionModel  # noqa: E402
from fixtures_models import tokenizer, write_bpe_files  # noqa: E402


def clip_vit_l():
    # openai/clip-vit-large-patch14 text tower, as SD 1.x ships it (text_encoder/config.json).
    torch.manual_seed(0)
    return CLIPTextModel(CLIPTextConfig(
        vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
        max_position_embeddings=77, hidden_act="quick_gelu", layer_norm_eps=1e-5, bos_token_id=49406,
        eos_token_id=49407, pad_token_id=49407, projection_dim=768))


def scheduler():
    return PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True,
                         steps_offset=1, set_alpha_to_one=False)


def build_mid(tok):
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(64, 128, 256), layers_per_block=2, sample_size=32, in_channels=4, out_channels=4,
        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=768, attention_head_dim=8)
    torch.manual_seed(0)
    vae = AutoencoderKL(
        block_out_channels=[32, 64, 64, 64], in_channels=3, out_channels=3, layers_per_block=1,
        down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4,
        latent_channels=4, sample_size=256)
    return StableDiffusionPipeline(unet=unet, vae=vae, text_encoder=clip_vit_l(), tokenizer=tok, scheduler=scheduler(),
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)


def save(pipe, folder: Path, bpe: Path):
    if folder.exists():
        shutil.rmtree(folder)
    pipe.save_pretrained(folder, safe_serialization=True)
    for name in ("vocab.json", "merges.txt"):  # transformers 5 writes only tokenizer.json
        shutil.copy(bpe / name, folder / "tokenizer" / name)


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: fixtures_memory.py <outdir>")
    models = Path(sys.argv[1]) / "models"
    bpe = models / "_bpe_memory"
    write_bpe_files(bpe)
    tok = tokenizer(bpe, "<|endoftext|>")
    start = time.time()
    with torch.no_grad():
        save(build_mid(tok), models / "mid-sd1", bpe)
        print(f"  mid-sd1: {time.time() - start:.0f} s")
    shutil.rmtree(bpe)


if __name__ == "__main__":
    main()
