#!/usr/bin/env python3
"""UNet and VAE parity fixtures from diffusers itself.

Usage: fixtures_unet.py <outdir>   (needs <outdir>/models from fixtures_models.py)
  → <outdir>/unet/{sd1,sd2,sdxl}.safetensors: seeded inputs and the tiny UNets' fp32 outputs
    (scalar timestep, a [2] timestep with a fractional value, an odd latent size that needs upsample_size)
  → <outdir>/vae/{sd1,sd2,sdxl}.safetensors: encode (mean, logvar, sample with a seeded CPU generator),
    decode, and for sd1 tiled encode/decode (its 32-pixel tiles make tiling cheap to exercise)
  → with DD_SLOW_FIXTURES=1 also <outdir>/unet/sd15-full.safetensors: a full-size SD 1.5 UNet with random
    weights (torch.manual_seed(0), stored in fp16; the forward runs in fp32 on the fp16-rounded weights),
    its config.json next to it, and one forward at [1, 4, 32, 32].
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from diffusers import AutoencoderKL, UNet2DConditionModel  # noqa: E402
from diffusers.models.embeddings import get_timestep_embedding  # noqa: E402

FAMILIES = ("sd1", "sd2", "sdxl")


def randn(g, *shape):
    return torch.randn(*shape, generator=g)


def unet_fixture(family, models: Path, out: Path):
    unet = UNet2DConditionModel.from_pretrained(str(models / f"tiny-{family}"), subfolder="unet",
                                                local_files_only=True, torch_dtype=torch.float32).eval()
    cfg = unet.config
    g = torch.Generator().manual_seed(2024)
    t = {
        "sample": randn(g, 2, cfg.in_channels, 16, 16),
        "sample_odd": randn(g, 2, cfg.in_channels, 17, 13),
        "timesteps": torch.tensor([981.0, 333.5]),
        "encoder_hidden_states": randn(g, 2, 77, cfg.cross_attention_dim),
    }
    added = None
    if cfg.addition_embed_type == "text_time":
        pooled = cfg.projection_class_embeddings_input_dim - 6 * cfg.addition_time_embed_dim
        t["text_embeds"] = randn(g, 2, pooled)
        t["time_ids"] = torch.tensor([[32.0, 32, 0, 0, 32, 32], [24, 16, 2, 3, 32, 32]])
        added = {"text_embeds": t["text_embeds"], "time_ids": t["time_ids"]}
    with torch.no_grad():
        ehs = t["encoder_hidden_states"]
        t["out_scalar"] = unet(t["sample"], 981, ehs, added_cond_kwargs=added).sample
        t["out_vector"] = unet(t["sample"], t["timesteps"], ehs, added_cond_kwargs=added).sample
        t["out_odd"] = unet(t["sample_odd"], t["timesteps"], ehs, added_cond_kwargs=added).sample
    t["time_embedding"] = get_timestep_embedding(t["timesteps"], cfg.block_out_channels[0], cfg.flip_sin_to_cos,
                                                 cfg.freq_shift)
    save_file({k: v.contiguous() for k, v in t.items()}, out / f"{family}.safetensors")
    print(f"  unet {family}: |out| max {t['out_vector'].abs().max():.3f}")


def vae_fixture(family, models: Path, out: Path):
    vae = AutoencoderKL.from_pretrained(str(models / f"tiny-{family}"), subfolder="vae", local_files_only=True,
                                        torch_dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(77)
    t = {"image": torch.rand(2, 3, 32, 32, generator=g) * 2 - 1}
    levels = len(vae.config.block_out_channels)
    t["latents"] = randn(g, 2, vae.config.latent_channels, 32 >> (levels - 1), 32 >> (levels - 1))
    with torch.no_grad():
        dist = vae.encode(t["image"]).latent_dist
        t["mean"], t["logvar"] = dist.mean, dist.logvar
        t["sample_seed42"] = dist.sample(torch.Generator().manual_seed(42))
        t["decoded"] = vae.decode(t["latents"]).sample
        if family == "sd1":  # sample_size 32: 32-pixel / 16-latent tiles
            t["tile_image"] = torch.rand(1, 3, 48, 48, generator=g) * 2 - 1
            t["tile_latents"] = randn(g, 1, vae.config.latent_channels, 24, 24)
            vae.enable_tiling()
            t["tiled_mean"] = vae.encode(t["tile_image"]).latent_dist.mean
            t["tiled_decoded"] = vae.decode(t["tile_latents"]).sample
    save_file({k: v.contiguous() for k, v in t.items()}, out / f"{family}.safetensors")
    print(f"  vae {family}: |decoded| max {t['decoded'].abs().max():.3f}")


SD15 = dict(  # sd_reference.md §2.2, SD 1.5 column
    sample_size=64, in_channels=4, out_channels=4, layers_per_block=2, block_out_channels=(320, 640, 1280, 1280),
    down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
    up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
    attention_head_dim=8, cross_attention_dim=768, norm_num_groups=32, norm_eps=1e-5,
)


def full_sd15_fixture(out: Path):
    start = time.time()
    torch.manual_seed(0)
    unet = UNet2DConditionModel(**SD15).eval()
    with torch.no_grad():
        for p in unet.parameters():
            p.copy_(p.half().float())
    sd = {k: v.half().contiguous() for k, v in unet.state_dict().items()}
    g = torch.Generator().manual_seed(5)
    t = {"sample": randn(g, 1, 4, 32, 32), "timesteps": torch.tensor([981.0]), "encoder_hidden_states": randn(g, 1, 77, 768)}
    with torch.no_grad():
        t["out"] = unet(t["sample"], t["timesteps"], t["encoder_hidden_states"]).sample
    save_file(sd, out / "sd15-full-weights.safetensors")
    (out / "sd15-full-config.json").write_text(json.dumps(dict(unet.config), default=list, indent=1))
    save_file({k: v.contiguous() for k, v in t.items()}, out / "sd15-full.safetensors")
    print(f"  unet sd15-full: |out| max {t['out'].abs().max():.3f}, {time.time() - start:.0f} s")


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: fixtures_unet.py <outdir>")
    root = Path(sys.argv[1])
    models = root / "models"
    if not models.is_dir():
        raise SystemExit(f"{models} is missing: run fixtures_models.py {root} first")
    torch.set_num_threads(min(2, torch.get_num_threads()))
    (root / "unet").mkdir(parents=True, exist_ok=True)
    (root / "vae").mkdir(parents=True, exist_ok=True)
    for family in FAMILIES:
        unet_fixture(family, models, root / "unet")
        vae_fixture(family, models, root / "vae")
    if os.environ.get("DD_SLOW_FIXTURES") == "1":
        full_sd15_fixture(root / "unet")
    print(f"unet/vae fixtures written to {root}")


if __name__ == "__main__":
    main()
