#!/usr/bin/env python3
"""One timed diffusers generation in a fresh process: the reference side of vs_diffusers.py. Prints one JSON
line with the measures bench_run.cpp reports: load → first step done, seconds per UNet step (median), VAE
decode, end to end, peak RSS.
    reference_run.py --model DIR [--steps N] [--size PX] [--cfg X] [--threads N] [--dtype fp32|bf16|fp16] [--raw F]
"""
import argparse
import json
import resource
import time

START = time.perf_counter()

import torch  # noqa: E402  (imports count towards load time, as the C++ side's process start does)
from diffusers import EulerDiscreteScheduler, StableDiffusionPipeline  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--cfg", type=float, default=7.5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--raw")
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
    with torch.inference_mode():
        img = pipe("a lighthouse on a cliff at sunset, oil painting", num_inference_steps=a.steps, height=a.size,
                   width=a.size, guidance_scale=a.cfg, generator=g, output_type="np",
                   callback_on_step_end=on_step).images[0]
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
