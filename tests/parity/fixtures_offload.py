#!/usr/bin/env python3
"""fp8 layerwise-storage parity fixtures from diffusers itself.

Usage: fixtures_offload.py <outdir>   (needs <outdir>/models from fixtures_models.py)
  → <outdir>/offload/{sd1,sdxl}.safetensors: seeded inputs and the tiny UNets' fp32 outputs after
    enable_layerwise_casting(storage_dtype=float8_e4m3fn / float8_e5m2, compute_dtype=float32), with diffusers'
    default skip patterns (norm layers, and UNet2DConditionModel's "norm")
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from diffusers import UNet2DConditionModel  # noqa: E402

FORMATS = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def fixture(family, models: Path, out: Path):
    g = torch.Generator().manual_seed(606)
    t = {}
    for name, dtype in FORMATS.items():
        unet = UNet2DConditionModel.from_pretrained(str(models / f"tiny-{family}"), subfolder="unet",
                                                    local_files_only=True, torch_dtype=torch.float32).eval()
        cfg = unet.config
        if not t:
            t["sample"] = torch.randn(2, cfg.in_channels, 16, 16, generator=g)
            t["encoder_hidden_states"] = torch.randn(2, 77, cfg.cross_attention_dim, generator=g)
            if cfg.addition_embed_type == "text_time":
                pooled = cfg.projection_class_embeddings_input_dim - 6 * cfg.addition_time_embed_dim
                t["text_embeds"] = torch.randn(2, pooled, generator=g)
                t["time_ids"] = torch.tensor([[32.0, 32, 0, 0, 32, 32], [24, 16, 2, 3, 32, 32]])
        added = {"text_embeds": t["text_embeds"], "time_ids": t["time_ids"]} if "time_ids" in t else None
        with torch.no_grad():
            if name == "e4m3fn":
                t["out_fp32"] = unet(t["sample"], 981, t["encoder_hidden_states"], added_cond_kwargs=added).sample
            unet.enable_layerwise_casting(storage_dtype=dtype, compute_dtype=torch.float32)
            t[f"out_{name}"] = unet(t["sample"], 981, t["encoder_hidden_states"], added_cond_kwargs=added).sample
    save_file({k: v.contiguous() for k, v in t.items()}, out / f"{family}.safetensors")
    err = ((t["out_e4m3fn"] - t["out_fp32"]).norm() / t["out_fp32"].norm()).item()
    print(f"  offload {family}: e4m3fn vs fp32 relative L2 {err:.4f}")


def main():
    root = Path(sys.argv[1])
    out = root / "offload"
    out.mkdir(parents=True, exist_ok=True)
    for family in ("sd1", "sdxl"):
        fixture(family, root / "models", out)


if __name__ == "__main__":
    main()
