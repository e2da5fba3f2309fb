#!/usr/bin/env python3
"""A1111's noise sources, written from their description (not from A1111's code), for tests/core/sched/test_image_rng.cpp.

"NV" (A1111's rng_philox, the numbers torch.randn draws on an NVIDIA card, computed on the CPU):
  - Philox4x32-10 (Salmon et al. 2011): multipliers 0xD2511F53 and 0xCD9E8D57, key increments 0x9E3779B9 and
    0xBB67AE85 between rounds; a round maps counter (c0, c1, c2, c3) with key (k0, k1) to
    (hi(c2·M1) ^ c1 ^ k0, lo(c2·M1), hi(c0·M0) ^ c3 ^ k1, lo(c0·M0)).
  - The key is the seed's low and high 32 bits. One call drawing n numbers uses counter (offset, 0, i, 0) for number
    i (row-major over the shape) and then moves the offset on by one; the offset starts at 0.
  - Box-Muller on the first two output words x, y, in double precision with float32 constants: u = x·a + a/2,
    v = y·b + b/2 with a = float32(2.3283064e-10) and b = float32(2.3283064e-10 · 6.2831855); the number is
    float32(sqrt(-2 ln u) · sin v).
"ENSD" (Eta noise seed delta): after the starting noise, image i's later noise comes from a fresh generator of
seed_i + delta. Every image has its own generator (CPU: torch's, seeded with seed + i).

Whole runs: diffusers' txt2img pipeline on the tiny SD 1.x model from the starting noise of those streams, with
Euler a's per-step noise drawn from them too (the scheduler module's randn_tensor replaced).
Writes <outdir>/rng/philox.json, cases.json and case_<n>.safetensors.
"""
import json
import pathlib
import sys

import numpy as np
import torch
from diffusers import StableDiffusionPipeline
from diffusers.schedulers import scheduling_euler_ancestral_discrete as euler_a_module
from safetensors.torch import save_file

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "rng"
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from fixtures_schedulers import NAMES as SCHEDULERS  # noqa: E402

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox_words(seed, offset, n):
    """The first two output words of Philox4x32-10 for counters (offset, 0, i, 0), i < n."""
    c0 = np.full(n, offset & MASK, dtype=np.uint64)
    c1 = np.zeros(n, dtype=np.uint64)
    c2 = np.arange(n, dtype=np.uint64) & MASK
    c3 = np.zeros(n, dtype=np.uint64)
    k0, k1 = seed & MASK, (seed >> 32) & MASK
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        p0 = c0 * np.uint64(M0)
        p1 = c2 * np.uint64(M1)
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & np.uint64(MASK), \
            (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & np.uint64(MASK)
    return c0, c1


def nv_normal(seed, offset, n):
    x, y = philox_words(seed, offset, n)
    a = float(np.float32(2.3283064e-10))
    b = float(np.float32(2.3283064e-10 * 6.2831855))
    u = x.astype(np.float64) * a + float(np.float32(a) / np.float32(2))
    v = y.astype(np.float64) * b + float(np.float32(b) / np.float32(2))
    return (np.sqrt(-2.0 * np.log(u)) * np.sin(v)).astype(np.float32)


class NvStream:
    def __init__(self, seed):
        self.seed, self.offset = seed, 0

    def randn(self, shape):
        n = int(np.prod(shape))
        out = torch.from_numpy(nv_normal(self.seed, self.offset, n).reshape(shape))
        self.offset += 1
        return out


class CpuStream:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def randn(self, shape):
        return torch.randn(shape, generator=self.g, dtype=torch.float32)


def streams(kind, seeds):
    return [(NvStream if kind == "NV" else CpuStream)(s) for s in seeds]


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    philox = []
    for seed, offset, n in [(0, 0, 12), (0, 1, 4), (42, 0, 256), (42, 3, 64), (2**32 + 5, 0, 33), (2**63 + 1, 7, 16),
                            (4294967295, 2, 100)]:
        philox.append({"seed": str(seed), "offset": offset, "values": [float(v) for v in nv_normal(seed, offset, n)]})
    (DIR / "philox.json").write_text(json.dumps(philox))

    pipe = StableDiffusionPipeline.from_pretrained(OUT / "pipeline" / "tiny-sd1-e2e")
    pipe.set_progress_bar_config(disable=True)
    base = dict(prompt="a lighthouse on a cliff", seed=21, steps=4, cfg=7.0, width=64, height=64, batch=2)
    cases = [dict(base, rng="NV", sampler="Euler", ensd=0), dict(base, rng="NV", sampler="Euler a", ensd=0),
             dict(base, rng="NV", sampler="Euler a", ensd=31337), dict(base, rng="CPU", sampler="Euler a", ensd=31337)]
    original = euler_a_module.randn_tensor
    for n, case in enumerate(cases):
        cls, opts = SCHEDULERS[case["sampler"]]
        pipe.scheduler = cls.from_config(pipe.scheduler.config, **opts)
        seeds = [case["seed"] + i for i in range(case["batch"])]
        shape = (pipe.unet.config.in_channels, case["height"] // pipe.vae_scale_factor, case["width"] // pipe.vae_scale_factor)
        own = streams(case["rng"], seeds)
        noise = torch.stack([s.randn(shape) for s in own])
        later = streams(case["rng"], [s + case["ensd"] for s in seeds]) if case["ensd"] else own

        def step_noise(size, **_):
            return torch.stack([s.randn(tuple(size[1:])) for s in later])

        euler_a_module.randn_tensor = step_noise
        try:
            run = dict(prompt=case["prompt"], guidance_scale=case["cfg"], num_inference_steps=case["steps"],
                       height=case["height"], width=case["width"], num_images_per_prompt=case["batch"])
            images = pipe(**run, latents=noise.clone(), output_type="np").images
        finally:
            euler_a_module.randn_tensor = original
        save_file({"noise": noise.contiguous(), "images": torch.from_numpy((images * 255).round().astype(np.uint8)).contiguous()},
                  DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
