"""Inpainting reference: diffusers' StableDiffusionInpaintPipeline and StableDiffusionXLInpaintPipeline on tiny
random-weight models, with CPU generators (seed + i), followed by diffusers' own VaeImageProcessor.apply_overlay
(the step its docs add so that the kept pixels stay the init image's). Saves the final latents and the uint8
images after the overlay. Models: the 4-channel tiny-sd1-e2e and tiny-sdxl-e2e that fixtures_pipeline.py writes,
and a 9-channel inpainting UNet (diffusers' own inpainting test config) with tiny-sd1-e2e's VAE and text encoder.

Also byte vectors for the pixel steps the engine reproduces: apply_overlay on random images and a soft mask, and
A1111's mask blur (two separable Gaussian passes, kernel 2·int(2.5σ+0.5)+1) re-derived in numpy, since
opencv-python is not pinned.

Writes <outdir>/inpaint/tiny-sd1-inpaint-e2e/ (diffusers folder), cases.json + case_<n>.safetensors,
images.safetensors (init, mask), overlay.safetensors, blur.safetensors, resample.json + resample.safetensors (Pillow's
resize, diffusers' crop region and resize modes) and only_masked.json + only_masked_<n>.safetensors (padding_mask_crop).
"""
import json
import pathlib
import sys

import numpy as np
import torch
from diffusers import (StableDiffusionInpaintPipeline, StableDiffusionPipeline, StableDiffusionXLInpaintPipeline,
                       StableDiffusionXLPipeline, UNet2DConditionModel)
from diffusers.image_processor import VaeImageProcessor
from PIL import Image
from safetensors.torch import save_file

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "inpaint"
PIPELINES = OUT / "pipeline"

from a1111_images import a1111_fill, a1111_resize  # noqa: E402
from fixtures_schedulers import NAMES as SCHEDULERS  # noqa: E402


def inpainting_sd1():
    base = StableDiffusionPipeline.from_pretrained(PIPELINES / "tiny-sd1-e2e")
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=2, sample_size=32, in_channels=9,
                                out_channels=4, cross_attention_dim=32,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"))
    pipe = StableDiffusionInpaintPipeline(unet=unet, vae=base.vae, text_encoder=base.text_encoder,
                                          tokenizer=base.tokenizer, scheduler=base.scheduler, safety_checker=None,
                                          feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(DIR / "tiny-sd1-inpaint-e2e", safe_serialization=True)
    return StableDiffusionInpaintPipeline.from_pretrained(DIR / "tiny-sd1-inpaint-e2e")


def images(width, height):
    rng = np.random.default_rng(11)
    init = rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    # A soft-edged, off-centre rectangle: values on both sides of the 128 threshold, so the binarization and the
    # overlay's blend both show.
    y, x = np.mgrid[0:height, 0:width]
    inside = np.minimum.reduce([x - 10, 44 - x, y - 18, 52 - y]).astype(np.float32)
    mask = np.clip(128 + inside * 24, 0, 255).astype(np.uint8)
    return init, mask


def run(pipe, case, init, mask):
    cls, opts = SCHEDULERS[case["sampler"]]
    pipe.scheduler = cls.from_config(pipe.scheduler.config, **opts)
    kw = dict(prompt=case["prompt"], negative_prompt=case["negative"] or None, image=Image.fromarray(init),
              mask_image=Image.fromarray(mask), height=case["height"], width=case["width"],
              num_inference_steps=case["steps"], guidance_scale=case["cfg"], strength=case["strength"])
    gens = lambda: [torch.Generator().manual_seed(case["seed"] + i) for i in range(case["batch"])]  # noqa: E731
    latents = pipe(**kw, generator=gens(), output_type="latent").images
    out = pipe(**kw, generator=gens(), output_type="pil").images
    processor = VaeImageProcessor()
    pasted = [np.array(processor.apply_overlay(Image.fromarray(mask), Image.fromarray(init), o)) for o in out]
    return latents, torch.from_numpy(np.stack(pasted))


def overlay_vectors():
    rng = np.random.default_rng(3)
    init, gen = (rng.integers(0, 256, size=(24, 40, 3), dtype=np.uint8) for _ in range(2))
    mask = rng.integers(0, 256, size=(24, 40), dtype=np.uint8)
    mask[:, :4], mask[:, -4:] = 0, 255  # the two ends exactly
    out = VaeImageProcessor().apply_overlay(Image.fromarray(mask), Image.fromarray(init), Image.fromarray(gen))
    save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in
               dict(init=init, generated=gen, mask=mask, out=np.array(out)).items()}, DIR / "overlay.safetensors")


def gaussian_pass(img, sigma, axis):
    k = 2 * int(2.5 * sigma + 0.5) + 1
    x = np.arange(k) - k // 2
    w = np.exp(-(x ** 2) / (2 * sigma ** 2))
    w /= w.sum()
    r = k // 2
    pad = [(0, 0), (0, 0)]
    pad[axis] = (r, r)
    padded = np.pad(img.astype(np.float64), pad, mode="reflect")  # numpy's reflect is OpenCV's BORDER_REFLECT_101
    out = sum(w[i] * np.take(padded, np.arange(i, i + img.shape[axis]), axis=axis) for i in range(k))
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


def blur_vectors():
    y, x = np.mgrid[0:48, 0:64]
    mask = (((x - 30) ** 2 + (y - 20) ** 2) < 180).astype(np.uint8) * 255
    tensors = {"mask": torch.from_numpy(mask)}
    for sigma in (1, 4, 11):
        tensors[f"blur_{sigma}"] = torch.from_numpy(gaussian_pass(gaussian_pass(mask, sigma, 1), sigma, 0))
    save_file(tensors, DIR / "blur.safetensors")


# Pillow's resize (the filters diffusers' image processor uses), diffusers' get_crop_region and its "fill" and "crop"
# resize modes, on small odd-sized inputs: what "only masked" inpainting is made of, byte for byte.
def resample_vectors():
    rng = np.random.default_rng(5)
    src = rng.integers(0, 256, size=(23, 37, 3), dtype=np.uint8)
    img = Image.fromarray(src)
    tensors, cases = {"src": torch.from_numpy(src)}, []
    resizes = [("lanczos", (64, 64), None), ("lanczos", (20, 50), None), ("lanczos", (5, 3), None),
               ("lanczos", (30, 17), (3.5, 2.25, 30.75, 20.0)), ("bicubic", (16, 4), (0, 0, 37, 0)),
               ("bicubic", (16, 4), (0, 23, 37, 23)), ("bicubic", (4, 16), (0, 0, 0, 23)),
               ("bicubic", (4, 16), (37, 0, 37, 23)), ("bicubic", (50, 23), None), ("nearest", (64, 64), None),
               ("nearest", (20, 50), None), ("nearest", (30, 17), (3.5, 2.25, 30.75, 20.0))]
    filters = {"lanczos": Image.Resampling.LANCZOS, "bicubic": Image.Resampling.BICUBIC,
               "nearest": Image.Resampling.NEAREST}
    for n, (name, size, box) in enumerate(resizes):
        out = img.resize(size, filters[name], box=box)
        tensors[f"resize_{n}"] = torch.from_numpy(np.array(out))
        cases.append(dict(kind="resize", filter=name, size=size, box=box, name=f"resize_{n}"))
    processor = VaeImageProcessor()
    for n, (w, h) in enumerate([(64, 64), (16, 48), (48, 16), (37, 23), (20, 21)]):
        tensors[f"fill_{n}"] = torch.from_numpy(np.array(processor._resize_and_fill(img, w, h)))
        tensors[f"crop_{n}"] = torch.from_numpy(np.array(processor._resize_and_crop(img, w, h)))
        cases.append(dict(kind="fill_crop", size=(w, h), fill=f"fill_{n}", crop=f"crop_{n}"))
    for n, (rect, w, h, pad) in enumerate([((10, 5, 20, 9), 64, 64, 4), ((0, 0, 3, 3), 32, 64, 0), ((30, 15, 37, 23), 64, 32, 8),
                                         ((12, 2, 14, 21), 64, 64, 32), ((5, 10, 30, 12), 48, 80, 2)]):
        mask = np.zeros((23, 37), dtype=np.uint8)
        mask[rect[1]:rect[3], rect[0]:rect[2]] = 200
        mask[rect[1], rect[0]] = 1  # any value but 0 counts
        tensors[f"mask_{n}"] = torch.from_numpy(mask)
        box = processor.get_crop_region(Image.fromarray(mask), w, h, pad=pad)
        cases.append(dict(kind="crop_region", mask=f"mask_{n}", size=(w, h), pad=pad, box=[int(v) for v in box]))
    for n, (name, (w, h)) in enumerate([("None", (64, 40)), ("Lanczos", (80, 48)), ("Nearest", (80, 48)),
                                         ("Lanczos", (40, 24)), ("Nearest", (120, 72))]):
        tensors[f"resizer_{n}"] = torch.from_numpy(np.array(a1111_resize(img, name, w, h)))
        cases.append(dict(kind="resizer", upscaler=name, size=(w, h), name=f"resizer_{n}"))
    for n, (w, h) in enumerate([(37, 23), (96, 80)]):
        picture = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        y, x = np.mgrid[0:h, 0:w]
        hole = np.clip(128 + (np.minimum.reduce([x - w // 4, 3 * w // 4 - x, y - h // 3, 2 * h // 3 - y]) * 50), 0, 255)
        hole = hole.astype(np.uint8)
        tensors[f"fill_src_{n}"], tensors[f"fill_mask_{n}"] = torch.from_numpy(picture), torch.from_numpy(hole)
        filled = a1111_fill(Image.fromarray(picture), Image.fromarray(hole))
        tensors[f"fill_out_{n}"] = torch.from_numpy(np.array(filled))
        cases.append(dict(kind="masked_fill", src=f"fill_src_{n}", mask=f"fill_mask_{n}", out=f"fill_out_{n}"))
    save_file(tensors, DIR / "resample.safetensors")
    (DIR / "resample.json").write_text(json.dumps(cases, indent=1))


# "Only masked" (padding_mask_crop) end to end: a 96 × 80 picture whose mask sits off-centre, worked at 64 × 64;
# diffusers returns the picture at the init image's size, the box pasted back through the mask.
def only_masked_cases(pipes, folders):
    rng = np.random.default_rng(12)
    init = rng.integers(0, 256, size=(80, 96, 3), dtype=np.uint8)
    y, x = np.mgrid[0:80, 0:96]
    inside = np.minimum.reduce([x - 52, 84 - x, y - 30, 50 - y]).astype(np.float32)
    mask = np.clip(128 + inside * 40, 0, 255).astype(np.uint8)
    save_file({"init": torch.from_numpy(init), "mask": torch.from_numpy(mask)}, DIR / "only_masked_images.safetensors")
    base = dict(prompt="a red door in a stone wall", negative="", seed=7, steps=5, cfg=7.5, width=64, height=64,
                batch=1, strength=1.0, padding=6)
    cases = [dict(base, model="tiny-sd1-e2e", sampler="DDIM", strength=0.8),
             dict(base, model="tiny-sd1-inpaint-e2e", sampler="Euler", padding=0)]
    for n, case in enumerate(cases):
        pipe = pipes[case["model"]]
        cls, opts = SCHEDULERS[case["sampler"]]
        pipe.scheduler = cls.from_config(pipe.scheduler.config, **opts)
        out = pipe(prompt=case["prompt"], image=Image.fromarray(init), mask_image=Image.fromarray(mask),
                   height=case["height"], width=case["width"], num_inference_steps=case["steps"],
                   guidance_scale=case["cfg"], strength=case["strength"], padding_mask_crop=case["padding"],
                   generator=[torch.Generator().manual_seed(case["seed"])]).images[0]
        save_file({"image": torch.from_numpy(np.array(out))}, DIR / f"only_masked_{n}.safetensors")
        case["folder"] = folders[case["model"]]
        case["box"] = [int(v) for v in VaeImageProcessor().get_crop_region(Image.fromarray(mask), 64, 64, case["padding"])]
    (DIR / "only_masked.json").write_text(json.dumps(cases, indent=1))


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    pipes = {
        "tiny-sd1-e2e": StableDiffusionInpaintPipeline(**StableDiffusionPipeline.from_pretrained(PIPELINES / "tiny-sd1-e2e").components),
        "tiny-sd1-inpaint-e2e": inpainting_sd1(),
        "tiny-sdxl-e2e": StableDiffusionXLInpaintPipeline(**StableDiffusionXLPipeline.from_pretrained(PIPELINES / "tiny-sdxl-e2e").components),
    }
    for p in pipes.values():
        p.set_progress_bar_config(disable=True)
    folders = {"tiny-sd1-e2e": "../pipeline/tiny-sd1-e2e", "tiny-sd1-inpaint-e2e": "tiny-sd1-inpaint-e2e",
               "tiny-sdxl-e2e": "../pipeline/tiny-sdxl-e2e"}
    base = dict(prompt="a red door in a stone wall", negative="", seed=42, steps=6, cfg=7.5, width=64, height=64,
                batch=1, strength=1.0)
    cases = [
        dict(base, model="tiny-sd1-e2e", sampler="Euler"),                    # 4-ch, pure noise, σ add_noise
        dict(base, model="tiny-sd1-e2e", sampler="DDIM", strength=0.75),     # 4-ch, ᾱ add_noise by timestep
        dict(base, model="tiny-sd1-e2e", sampler="Euler a", strength=0.75),  # 4-ch, steps draw from the generator
        dict(base, model="tiny-sd1-inpaint-e2e", sampler="PLMS"),            # 9-ch, no init sample at strength 1
        dict(base, model="tiny-sd1-inpaint-e2e", sampler="Euler a", strength=0.6, negative="blurry"),
        dict(base, model="tiny-sd1-inpaint-e2e", sampler="DPM++ 2M", cfg=1.0, strength=0.8),
        dict(base, model="tiny-sdxl-e2e", sampler="Euler", cfg=5.0, strength=0.8),
    ]
    init, mask = images(base["width"], base["height"])
    save_file({"init": torch.from_numpy(init), "mask": torch.from_numpy(mask)}, DIR / "images.safetensors")
    for n, case in enumerate(cases):
        latents, pasted = run(pipes[case["model"]], case, init, mask)
        save_file({"latents": latents.contiguous(), "images": pasted.contiguous()}, DIR / f"case_{n}.safetensors")
        case["folder"] = folders[case["model"]]
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))
    overlay_vectors()
    blur_vectors()
    resample_vectors()
    only_masked_cases(pipes, folders)


if __name__ == "__main__":
    main()
