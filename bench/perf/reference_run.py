#!/usr/bin/env python3
"""One timed diffusers generation in a fresh process: the reference side of vs_diffusers.py. Prints one JSON
line with the measures bench_run.cpp reports: load → first step done, seconds per UNet step (median), VAE
decode, end to end, peak RSS.
    reference_run.py --model DIR [--steps N] [--size PX] [--cfg X] [--threads N] [--dtype fp32|bf16|fp16] [--raw F]
                     [--mode txt2img|inpaint|hires]
inpaint: StableDiffusionInpaintPipeline on bench_run.cpp's picture and mask at strength 0.75, then apply_overlay (what
DiffusionDesk returns); hires: txt2img at half the size, its latents enlarged (bilinear, A1111's "Latent") and the
img2img pipeline on them at strength 0.6 with a fresh generator: the loop fixtures_hires.py checks parity against.
"""
import argparse
import json
import resource
import time

START = time.perf_counter()

import torch  # noqa: E402  (imports count towards load time, as the C++ side's process start does)
import numpy as np  # noqa: E402
from diffusers import (EulerDiscreteScheduler, StableDiffusionImg2ImgPipeline, StableDiffusionInpaintPipeline,  # noqa: E402
                       StableDiffusionPipeline)
from PIL import Image  # noqa: E402


def bench_images(size):
    y, x = np.mgrid[0:size, 0:size]
    init = np.stack([x * 255 // (size - 1), y * 255 // (size - 1), (x + y) * 127 // (size - 1)], -1).astype(np.uint8)
    mask = np.zeros((size, size), np.uint8)
    mask[size // 4:3 * size // 4, size // 4:3 * size // 4] = 255
    return Image.fromarray(init), Image.fromarray(mask)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--cfg", type=float, default=7.5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--raw")
    ap.add_argument("--mode", default="txt2img", choices=["txt2img", "inpaint", "hires"])
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    t_load = time.perf_counter()
    pipe = StableDiffusionPipeline.from_pretrained(a.model, torch_dtype=dtype, safety_checker=None,
                                                   requires_safety_checker=False)
    pipe.scheduler = EulerDiscreteScheduler.from_config(pipe.scheduler.config)
    pipe.set_progress_bar_config(disable=True)
    load_s = time.perf_counter() - t_load

    marks = {"first": None, "steps": []}
    last = [None]

    def on_step(p, i, t, kw):
        now = time.perf_counter()
        if marks["first"] is None:
            marks["first"] = now - START
            marks["first_unix"] = time.time()
        if last[0] is not None:
            marks["steps"].append(now - last[0])
        last[0] = now
        return kw

    # The first step's duration is measured from the UNet's first call (pre-step hook) to its callback.
    unet_forward = pipe.unet.forward

    def timed_forward(*args, **kw):
        if last[0] is None:
            last[0] = time.perf_counter()
        return unet_forward(*args, **kw)

    pipe.unet.forward = timed_forward
    decode = {"s": 0.0}
    vae_decode = pipe.vae.decode

    def timed_decode(*args, **kw):
        t = time.perf_counter()
        out = vae_decode(*args, **kw)
        decode["s"] += time.perf_counter() - t
        return out

    pipe.vae.decode = timed_decode
    g = torch.Generator("cpu").manual_seed(0)
    prompt = dict(prompt="a lighthouse on a cliff at sunset, oil painting", num_inference_steps=a.steps,
                  guidance_scale=a.cfg, callback_on_step_end=on_step)
    with torch.inference_mode():
        if a.mode == "inpaint":
            init, mask = bench_images(a.size)
            inpaint = StableDiffusionInpaintPipeline(**pipe.components)
            out = inpaint(**prompt, image=init, mask_image=mask, height=a.size, width=a.size, strength=0.75,
                          generator=g, output_type="pil").images[0]
            img = np.asarray(inpaint.image_processor.apply_overlay(mask, init, out)).astype(np.float32) / 255
        elif a.mode == "hires":
            half = a.size // 2
            latents = pipe(**prompt, height=half, width=half, generator=g, output_type="latent").images
            f = pipe.vae_scale_factor
            upscaled = torch.nn.functional.interpolate(latents, size=(a.size // f, a.size // f), mode="bilinear")
            second = StableDiffusionImg2ImgPipeline(**pipe.components)
            img = second(**prompt, image=upscaled, strength=0.6, generator=torch.Generator("cpu").manual_seed(0),
                         output_type="np").images[0]
        else:
            img = pipe(**prompt, height=a.size, width=a.size, generator=g, output_type="np").images[0]
    e2e = time.perf_counter() - START
    if a.raw:
        (img * 255).round().clip(0, 255).astype("uint8").tofile(a.raw)
    steps = sorted(marks["steps"]) or [0.0]
    print(json.dumps({"impl": "diffusers", "load_to_first_step_s": marks["first"],
                      "first_step_unix": marks["first_unix"], "load_s": load_s,
                      "step_s": steps[len(steps) // 2], "decode_s": decode["s"], "e2e_s": e2e,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
