"""Variation seeds, written from A1111's description of them (its wiki's "Variations" and "Seed resize" features and
the infotext keys they write), not from its code:

- With a variation strength, every image of a batch keeps the seed and image i uses variation seed + i; without
  one, image i uses seed + i. Each image draws from its own CPU generator seeded with its seed.
- Image i's noise is drawn at the latent size of the picture; with "Seed resize from" W x H, at W/f x H/f instead
  (f the VAE's scale factor, 8 for every real model) from a fresh generator of the seed.
- The variation's noise is drawn at that same size from a generator of the variation seed, and the two are blended
  by spherical interpolation: `strength` of the way from the seed's noise to the variation's. The angle is measured
  per channel and per column of the [C, H, W] noise (A1111 normalises along dim 1); when the two are nearly alike
  (mean cosine above 0.9995) A1111 mixes them linearly, strength of the seed's and 1 - strength of the other's.
- Noise drawn at another size is placed in the middle of noise drawn at the picture's size by the image's own
  generator (offsets by floor division, cut where it is larger).

Then diffusers' txt2img pipeline runs the tiny SD 1.x model from those latents with Euler (which draws no more noise).
Writes <outdir>/variation/cases.json + case_<n>.safetensors (noise, latents, images).
"""
import json
import pathlib
import sys

import numpy as np
import torch
from diffusers import StableDiffusionPipeline
from safetensors.torch import save_file

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "variation"
PIPELINES = OUT / "pipeline"

from fixtures_schedulers import NAMES as SCHEDULERS  # noqa: E402


def draw(shape, generator):
    return torch.randn(shape, generator=generator, dtype=torch.float32)


def fresh(seed):
    return torch.Generator().manual_seed(seed)


def spherical(t, a, b):
    """t of the way from a to b along the great circle, per channel and column; linear when nearly parallel."""
    a_unit = a / torch.linalg.vector_norm(a, dim=1, keepdim=True)
    b_unit = b / torch.linalg.vector_norm(b, dim=1, keepdim=True)
    cosine = (a_unit * b_unit).sum(dim=1)
    if cosine.mean() > 0.9995:
        return t * a + (1 - t) * b
    angle = torch.acos(cosine)
    weight_a = (torch.sin((1 - t) * angle) / torch.sin(angle))[:, None, :]
    weight_b = (torch.sin(t * angle) / torch.sin(angle))[:, None, :]
    return weight_a * a + weight_b * b


def centred(big, small):
    """`small` in the middle of `big` (a copy), by floor-division offsets, cut where it does not fit."""
    out = big.clone()
    _, H, W = big.shape
    _, h, w = small.shape
    oy, ox = (H - h) // 2, (W - w) // 2
    rows = range(max(0, oy), min(H, oy + h))
    cols = range(max(0, ox), min(W, ox + w))
    for y in rows:
        for x in cols:
            out[:, y, x] = small[:, y - oy, x - ox]
    return out


def starting_noise(case, channels, factor):
    full = (channels, case["height"] // factor, case["width"] // factor)
    resize = case.get("resize_from")
    shape = (channels, resize[1] // factor, resize[0] // factor) if resize else full
    strength = case.get("strength", 0.0)
    out = []
    for i in range(case["batch"]):
        seed = case["seed"] if strength > 0 else case["seed"] + i
        own = fresh(seed)
        x = draw(shape, fresh(seed)) if resize else draw(shape, own)
        if strength > 0:
            x = spherical(strength, x, draw(shape, fresh(case["variation_seed"] + i)))
        if resize:
            x = centred(draw(full, own), x)
        out.append(x)
    return torch.stack(out)


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    pipe = StableDiffusionPipeline.from_pretrained(PIPELINES / "tiny-sd1-e2e")
    pipe.set_progress_bar_config(disable=True)
    cls, opts = SCHEDULERS["Euler"]
    pipe.scheduler = cls.from_config(pipe.scheduler.config, **opts)
    base = dict(model="tiny-sd1-e2e", prompt="a lighthouse on a cliff", negative="", seed=21, steps=4, cfg=7.0,
                width=64, height=64, batch=1, sampler="Euler", variation_seed=1234)
    cases = [
        dict(base, strength=0.3),
        dict(base, strength=1.0),
        dict(base, strength=0.5, batch=2),
        dict(base, strength=0.2, variation_seed=21),   # the seed's own noise: A1111's linear mix
        dict(base, resize_from=[96, 80]),              # drawn larger: the middle is kept
        dict(base, resize_from=[40, 48], batch=2),     # drawn smaller: placed in the middle
        dict(base, strength=0.4, resize_from=[48, 72], width=72, height=56),
    ]
    for n, case in enumerate(cases):
        noise = starting_noise(case, pipe.unet.config.in_channels, pipe.vae_scale_factor)
        run = dict(prompt=case["prompt"], negative_prompt=case["negative"] or None, guidance_scale=case["cfg"],
                   num_inference_steps=case["steps"], height=case["height"], width=case["width"],
                   num_images_per_prompt=case["batch"])
        latents = pipe(**run, latents=noise.clone(), output_type="latent").images
        images = pipe(**run, latents=noise.clone(), output_type="np").images
        save_file({"noise": noise.contiguous(), "latents": latents.contiguous(),
                   "images": torch.from_numpy((images * 255).round().astype(np.uint8)).contiguous()},
                  DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
