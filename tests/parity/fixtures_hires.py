"""Hires fix reference, a loop written with diffusers' components (diffusers has no hires-fix pipeline): the
txt2img pipeline's latents with CPU generators (seed + i); torch's interpolate in the A1111 latent upscaler's mode;
then the img2img pipeline given those latents as its image (it takes a 4-channel image as latents) at the hires
denoising strength over the hires steps, with fresh generators seeded seed + i again. Saves the final latents
and the uint8 images.

Reads the tiny models fixtures_pipeline.py writes. Writes <outdir>/hires/cases.json + case_<n>.safetensors.
"""
import json
import pathlib
import sys

import numpy as np
import torch
from diffusers import (StableDiffusionImg2ImgPipeline, StableDiffusionPipeline, StableDiffusionXLImg2ImgPipeline,
                       StableDiffusionXLPipeline)
from safetensors.torch import save_file

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "hires"
PIPELINES = OUT / "pipeline"

from fixtures_schedulers import NAMES as SCHEDULERS  # noqa: E402

# A1111's latent upscalers (modules/shared_items / images: latent_upscale_modes), as torch interpolate options.
UPSCALERS = {
    "Latent": dict(mode="bilinear", antialias=False),
    "Latent (antialiased)": dict(mode="bilinear", antialias=True),
    "Latent (bicubic)": dict(mode="bicubic", antialias=False),
    "Latent (bicubic antialiased)": dict(mode="bicubic", antialias=True),
    "Latent (nearest)": dict(mode="nearest"),
    "Latent (nearest-exact)": dict(mode="nearest-exact"),
}


def hires_size(case):
    if case.get("resize"):
        w, h = case["resize"]
    else:
        w, h = int(case["width"] * case["scale"]), int(case["height"] * case["scale"])
    return w // 8 * 8, h // 8 * 8


def run(first, second, case, base_config):
    cls, opts = SCHEDULERS[case["sampler"]]
    first.scheduler = cls.from_config(base_config, **opts)
    second.scheduler = cls.from_config(base_config, **opts)
    gens = lambda: [torch.Generator().manual_seed(case["seed"] + i) for i in range(case["batch"])]  # noqa: E731
    prompt = dict(prompt=case["prompt"], negative_prompt=case["negative"] or None, guidance_scale=case["cfg"],
                  num_images_per_prompt=case["batch"])
    latents = first(**prompt, height=case["height"], width=case["width"], num_inference_steps=case["steps"],
                    generator=gens(), output_type="latent").images
    w, h = hires_size(case)
    vsf = first.vae_scale_factor
    opts = UPSCALERS[case["upscaler"]]
    upscaled = torch.nn.functional.interpolate(latents, size=(h // vsf, w // vsf), **opts)
    kw = dict(prompt, image=upscaled, strength=case["denoising"], num_inference_steps=case["hires_steps"] or case["steps"])
    final = second(**kw, generator=gens(), output_type="latent").images
    images = second(**kw, generator=gens(), output_type="np").images
    return final, torch.from_numpy((images * 255).round().astype(np.uint8))


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    pipes = {}
    for name, txt2img, img2img in (("tiny-sd1-e2e", StableDiffusionPipeline, StableDiffusionImg2ImgPipeline),
                                   ("tiny-sdxl-e2e", StableDiffusionXLPipeline, StableDiffusionXLImg2ImgPipeline)):
        first = txt2img.from_pretrained(PIPELINES / name)
        second = img2img(**first.components)
        for p in (first, second):
            p.set_progress_bar_config(disable=True)
        pipes[name] = (first, second, first.scheduler.config)
    base = dict(prompt="a castle on a hill at dusk", negative="", seed=11, steps=5, cfg=7.0, width=64, height=64,
                batch=1, scale=2.0, hires_steps=4, denoising=0.6, upscaler="Latent")
    cases = [
        dict(base, model="tiny-sd1-e2e", sampler="Euler"),
        dict(base, model="tiny-sd1-e2e", sampler="Euler a", scale=1.5, hires_steps=0, denoising=0.5,
             upscaler="Latent (bicubic antialiased)"),
        dict(base, model="tiny-sd1-e2e", sampler="DPM++ 2M", resize=[128, 96], denoising=0.7, upscaler="Latent (nearest)"),
        dict(base, model="tiny-sd1-e2e", sampler="DDIM", batch=2, upscaler="Latent (bicubic)", negative="blurry"),
        dict(base, model="tiny-sdxl-e2e", sampler="Euler", cfg=5.0, denoising=0.55, upscaler="Latent (antialiased)"),
    ]
    for n, case in enumerate(cases):
        first, second, config = pipes[case["model"]]
        latents, images = run(first, second, case, config)
        save_file({"latents": latents.contiguous(), "images": images.contiguous()}, DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
