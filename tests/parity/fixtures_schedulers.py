#!/usr/bin/env python3
"""Scheduler parity fixtures: the pinned diffusers schedulers run on a fake denoiser.

Usage: fixtures_schedulers.py <outdir>   (writes <outdir>/schedulers/<case>.safetensors + <case>.json,
                                          <outdir>/schedulers/cases.json and reference.json)

Each case builds a scheduler the way diffusers users swap samplers,
XScheduler.from_config(pipe.scheduler.config, **options), from an SD1-style scheduler config (plus variants),
then runs the pipeline loop on a [2, 4, 8, 8] latent drawn from a seeded CPU generator, with the deterministic
fake denoiser eps = input * (0.1 * cos(t / 100)) + 0.05 * sin(t / 50). The same generator feeds the per-step
noise of the ancestral/SDE/LCM samplers, exactly as the pipelines pass it. img2img: get_timesteps at
strength 0.6, add_noise at the first kept timestep, then the loop from the begin index.
"""
import inspect
import json
import math
import os
import sys

import importlib.util

import torch
from diffusers import (DDIMScheduler, DPMSolverMultistepScheduler, EulerAncestralDiscreteScheduler,
                       EulerDiscreteScheduler, HeunDiscreteScheduler, LCMScheduler, LMSDiscreteScheduler,
                       PNDMScheduler, UniPCMultistepScheduler)
from diffusers.utils.torch_utils import randn_tensor
from safetensors.torch import save_file

SHAPE = (2, 4, 8, 8)
SEED = 1234
STEPS = 8
STRENGTH = 0.6

# scheduler_config.json of SD 1.x (runwayml/stable-diffusion-v1-5), with the spacing and prediction type
# written out.
SD1 = {
    "_class_name": "PNDMScheduler", "beta_start": 0.00085, "beta_end": 0.012, "beta_schedule": "scaled_linear",
    "num_train_timesteps": 1000, "steps_offset": 1, "set_alpha_to_one": False, "skip_prk_steps": True,
    "clip_sample": False, "trained_betas": None, "timestep_spacing": "leading", "prediction_type": "epsilon",
}
# The same file as it really is on the Hub: no timestep_spacing, so each class keeps its own default.
SD1_RAW = {k: v for k, v in SD1.items() if k not in ("timestep_spacing", "prediction_type")}

# A1111 name -> (class, from_config options); core/sched/factory.cpp has the same table.
NAMES = {
    "Euler": (EulerDiscreteScheduler, {}),
    "Euler a": (EulerAncestralDiscreteScheduler, {}),
    "DDIM": (DDIMScheduler, {}),
    "PLMS": (PNDMScheduler, {"skip_prk_steps": True}),
    "DPM++ 2M": (DPMSolverMultistepScheduler, {"algorithm_type": "dpmsolver++", "use_karras_sigmas": False}),
    "DPM++ 2M Karras": (DPMSolverMultistepScheduler, {"algorithm_type": "dpmsolver++", "use_karras_sigmas": True}),
    "DPM++ 2M SDE": (DPMSolverMultistepScheduler, {"algorithm_type": "sde-dpmsolver++", "use_karras_sigmas": False}),
    "Heun": (HeunDiscreteScheduler, {}),
    "LMS": (LMSDiscreteScheduler, {}),
    "UniPC": (UniPCMultistepScheduler, {}),
    "LCM": (LCMScheduler, {}),
}

V_TRAILING = {"prediction_type": "v_prediction", "timestep_spacing": "trailing"}
LINSPACE = {"timestep_spacing": "linspace"}


# diffusers' LMSDiscreteScheduler integrates with scipy, which requirements.txt does not pin: without it the LMS
# cases are left out (and tests/core/test_schedulers.cpp skips them).
HAVE_SCIPY = importlib.util.find_spec("scipy") is not None


def cases():
    c = [(name.lower().replace("+", "p").replace(" ", "_"), name, dict(SD1), STEPS) for name in NAMES]
    for case, name, extra in [
        ("euler_v_trailing", "Euler", V_TRAILING), ("euler_linspace", "Euler", LINSPACE),
        ("euler_karras", "Euler", {"use_karras_sigmas": True}), ("euler_a_v_trailing", "Euler a", V_TRAILING),
        ("euler_a_linspace", "Euler a", LINSPACE), ("ddim_v_trailing", "DDIM", V_TRAILING),
        ("ddim_linspace", "DDIM", LINSPACE), ("plms_v_trailing", "PLMS", V_TRAILING), ("plms_linspace", "PLMS", LINSPACE),
        ("dpmpp_2m_v_trailing", "DPM++ 2M", V_TRAILING), ("dpmpp_2m_linspace", "DPM++ 2M", LINSPACE),
        ("dpmpp_2m_karras_v", "DPM++ 2M Karras", {"prediction_type": "v_prediction"}),
        ("dpmpp_2m_sde_v_linspace", "DPM++ 2M SDE", {"prediction_type": "v_prediction", **LINSPACE}),
        ("heun_v_trailing", "Heun", V_TRAILING), ("heun_karras", "Heun", {"use_karras_sigmas": True}),
        ("lms_v_trailing", "LMS", V_TRAILING), ("lms_karras", "LMS", {"use_karras_sigmas": True}),
        ("unipc_v_trailing", "UniPC", V_TRAILING), ("unipc_karras", "UniPC", {"use_karras_sigmas": True}),
        ("lcm_v", "LCM", {"prediction_type": "v_prediction"}),
    ]:
        c.append((case, name, {**SD1, **extra}, STEPS))
    c.append(("euler_sd1_raw", "Euler", dict(SD1_RAW), STEPS))  # class default spacing: linspace
    c.append(("dpmpp_2m_20", "DPM++ 2M", dict(SD1), 20))        # second order up to the (first-order) last step
    c.append(("unipc_20", "UniPC", dict(SD1), 20))
    if not HAVE_SCIPY:
        print("schedulers: scipy is not installed, LMS cases skipped", file=sys.stderr)
        c = [x for x in c if x[1] != "LMS"]
    return c


def make(name, config):
    cls, options = NAMES[name]
    return cls.from_config(config, **options)


def fake_denoiser(x, t):
    tf = float(t)
    return x * (0.1 * math.cos(tf / 100.0)) + 0.05 * math.sin(tf / 50.0)


def denoise(sched, latents, timesteps, gen):
    takes_gen = "generator" in inspect.signature(sched.step).parameters
    inputs, outs = [], []
    for t in timesteps:
        inp = sched.scale_model_input(latents, t)
        eps = fake_denoiser(inp, t)
        latents = sched.step(eps, t, latents, **({"generator": gen} if takes_gen else {})).prev_sample
        inputs.append(inp)
        outs.append(latents)
    return torch.stack(inputs), torch.stack(outs)


def txt2img(name, config, steps):
    sched = make(name, config)
    sched.set_timesteps(steps)
    gen = torch.Generator().manual_seed(SEED)
    init_sigma = sched.init_noise_sigma
    latents = randn_tensor(SHAPE, generator=gen, dtype=torch.float32) * init_sigma
    inputs, outs = denoise(sched, latents, sched.timesteps, gen)
    t = {"timesteps": sched.timesteps.clone(), "initial_latents": latents, "model_inputs": inputs, "latents": outs}
    if isinstance(getattr(sched, "sigmas", None), torch.Tensor):
        t["sigmas"] = sched.sigmas.clone().float()
    meta = {"class": type(sched).__name__, "init_noise_sigma": float(init_sigma), "order": sched.order,
            "timesteps": sched.timesteps.tolist()}
    if isinstance(sched, LMSDiscreteScheduler):
        meta["lms_coefficients"] = [[float(sched.get_lms_coefficient(min(i + 1, 4), i, k)) for k in range(min(i + 1, 4))]
                                    for i in range(len(sched.timesteps))]
    return t, meta


def img2img(name, config, steps):
    sched = make(name, config)
    sched.set_timesteps(steps)
    # StableDiffusionImg2ImgPipeline.get_timesteps
    init_timestep = min(int(steps * STRENGTH), steps)
    t_start = max(steps - init_timestep, 0)
    timesteps = sched.timesteps[t_start * sched.order:]
    if hasattr(sched, "set_begin_index"):
        sched.set_begin_index(t_start * sched.order)
    gen = torch.Generator().manual_seed(SEED + 1)
    original = randn_tensor(SHAPE, generator=gen, dtype=torch.float32)
    noise = randn_tensor(SHAPE, generator=gen, dtype=torch.float32)
    noisy = sched.add_noise(original, noise, timesteps[:1].repeat(SHAPE[0]))
    _, outs = denoise(sched, noisy, timesteps, gen)
    t = {"img2img_timesteps": timesteps.clone(), "img2img_original": original, "img2img_noise": noise,
         "img2img_noisy": noisy, "img2img_latents": outs[-1]}
    meta = {"img2img_begin_index": t_start * sched.order, "img2img_num_steps": steps - t_start,
            "img2img_timesteps": timesteps.tolist()}
    return t, meta


def reference_schedules():
    """The schedules sd_reference.md section 11 quotes, as diffusers computes them."""
    out = []
    for name, extra, steps in [
        ("DPM++ 2M Karras", {}, 25), ("DPM++ 2M", {}, 25), ("Euler", {}, 50), ("Euler", {}, 25), ("Euler", {}, 30),
        ("Euler", {"timestep_spacing": "trailing"}, 50), ("DDIM", {}, 50), ("PLMS", {}, 50), ("LCM", {}, 4),
        ("Heun", {}, 25), ("UniPC", {}, 20), ("Euler", {"use_karras_sigmas": True}, 30),
    ]:
        if name == "LMS" and not HAVE_SCIPY:
            continue
        config = {**SD1, **extra}
        sched = make(name, config)
        sched.set_timesteps(steps)
        entry = {"name": name, "config": config, "steps": steps, "timesteps": sched.timesteps.tolist(),
                 "init_noise_sigma": float(sched.init_noise_sigma)}
        if isinstance(getattr(sched, "sigmas", None), torch.Tensor):
            entry["sigmas"] = sched.sigmas.tolist()
        out.append(entry)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fixtures_schedulers.py OUTDIR")
    out = os.path.join(sys.argv[1], "schedulers")
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    index = []
    for case, name, config, steps in cases():
        tensors, meta = txt2img(name, config, steps)
        t2, m2 = img2img(name, config, steps)
        tensors.update(t2)
        meta.update(m2)
        meta.update({"case": case, "name": name, "config": config, "steps": steps, "seed": SEED,
                     "img2img_seed": SEED + 1, "strength": STRENGTH, "shape": list(SHAPE)})
        save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(out, case + ".safetensors"))
        with open(os.path.join(out, case + ".json"), "w") as f:
            json.dump(meta, f, indent=1)
        index.append(case)
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(index, f, indent=1)
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference_schedules(), f, indent=1)
    print(f"schedulers: {len(index)} cases in {out}")


if __name__ == "__main__":
    main()
