"""Hires fix reference, a loop written with diffusers' components (diffusers has no hires-fix pipeline): the
txt2img pipeline's latents with CPU generators (seed + i); torch's interpolate in the A1111 latent upscaler's mode;
then the img2img pipeline given those latents as its image (it takes a 4-channel image as latents) at the hires
denoising strength over the hires steps, with fresh generators seeded seed + i again. Saves the final latents
and the uint8 images.

With an upscaler network (A1111's pixel path), the first pass is decoded to 8-bit images instead; spandrel's network
runs on them (again while they are smaller than the hires size, at most three times, as A1111's Upscaler.upscale
does), Pillow's LANCZOS brings them to the hires size, and the img2img pipeline starts from those
images (it encodes each with its own generator before drawing the noise). The network is a tiny compact SRVGGNet with
random weights, saved as hires/<upscaler>.safetensors. A1111's resizers (None, Lanczos, Nearest) take the network's
place in three cases (a1111_images.py).

Reads the tiny models fixtures_pipeline.py writes. Writes <outdir>/hires/cases.json + case_<n>.safetensors.
"""
import json
import pathlib
import sys

import numpy as np
import torch
from diffusers import (StableDiffusionImg2ImgPipeline, StableDiffusionPipeline, StableDiffusionXLImg2ImgPipeline,
                       StableDiffusionXLPipeline)
from PIL import Image
from safetensors.torch import save_file
from spandrel import ModelLoader
from spandrel.architectures.Compact import Compact

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "hires"
PIPELINES = OUT / "pipeline"

from a1111_images import a1111_resize  # noqa: E402
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


def make_network_upscaler(path):
    """A compact 2x net whose random weights stay small: the picture stays the nearest-upscaled image plus detail."""
    torch.manual_seed(5)
    net = Compact(num_in_ch=3, num_out_ch=3, num_feat=8, num_conv=2, upscale=2).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(0.5)
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(path))
    return ModelLoader().load_from_file(str(path)).model.eval()


def to_8bit(x):
    return (x.clamp(0, 1) * 255).round() / 255


def upscale_in_pixels(first, latents, size, network):
    """The first pass's latents → 8-bit images → the network while too small → the hires size → PIL images."""
    w, h = size
    with torch.no_grad():
        rgb = first.vae.decode(latents / first.vae.config.scaling_factor).sample
        x = to_8bit(rgb / 2 + 0.5)
        for _ in range(3):
            if x.shape[-1] >= w and x.shape[-2] >= h:
                break
            x = to_8bit(network(x))
    pixels = (x * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    return [Image.fromarray(p).resize((w, h), resample=Image.Resampling.LANCZOS) for p in pixels]  # a copy at size


def resize_in_pixels(first, latents, size, upscaler):
    """The first pass's latents → 8-bit images → one of A1111's resizers (a1111_images.py)."""
    with torch.no_grad():
        rgb = first.vae.decode(latents / first.vae.config.scaling_factor).sample
    pixels = (to_8bit(rgb / 2 + 0.5) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    return [a1111_resize(Image.fromarray(p), upscaler, *size) for p in pixels]


def run(first, second, case, base_config, networks):
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
    if case["upscaler"] in UPSCALERS:
        upscaled = torch.nn.functional.interpolate(latents, size=(h // vsf, w // vsf), **UPSCALERS[case["upscaler"]])
    elif case["upscaler"] in ("None", "Lanczos", "Nearest"):
        upscaled = resize_in_pixels(first, latents, (w, h), case["upscaler"])
    else:
        upscaled = upscale_in_pixels(first, latents, (w, h), networks[case["upscaler"]])
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
        # An upscaler network: exactly its scale; then 1.5x (its 2x output resized down); a batch of two images.
        dict(base, model="tiny-sd1-e2e", sampler="Euler", upscaler="tiny-compact-2x"),
        dict(base, model="tiny-sd1-e2e", sampler="DPM++ 2M", scale=1.5, denoising=0.5, upscaler="tiny-compact-2x"),
        dict(base, model="tiny-sd1-e2e", sampler="Euler", batch=2, resize=[128, 96], upscaler="tiny-compact-2x"),
        # A1111's resizers: no network.
        dict(base, model="tiny-sd1-e2e", sampler="Euler", scale=1.5, upscaler="Lanczos"),
        dict(base, model="tiny-sd1-e2e", sampler="DDIM", resize=[128, 96], upscaler="Nearest"),
        dict(base, model="tiny-sd1-e2e", sampler="Euler", upscaler="None"),
    ]
    networks = {"tiny-compact-2x": make_network_upscaler(DIR / "tiny-compact-2x.safetensors")}
    for n, case in enumerate(cases):
        first, second, config = pipes[case["model"]]
        latents, images = run(first, second, case, config, networks)
        save_file({"latents": latents.contiguous(), "images": images.contiguous()}, DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
