#!/usr/bin/env python3
"""k-diffusion parity fixtures: the pinned k-diffusion package sampling with the tiny SD 1.x UNet, as A1111 does.

Usage: fixtures_k_diffusion.py <outdir>   (needs <outdir>/models from fixtures_models.py)
  → <outdir>/k_diffusion/cases.json and <case>.safetensors: for each sampler and schedule type, the σ schedule,
    the starting noise and the final latents of a run; brownian.json: torchsde's Brownian tree and numpy's
    SeedSequence on their own.

The UNet is wrapped as A1111 wraps a CompVis model: an object with `alphas_cumprod` (the betas and their product in
float64, stored in float32, as ldm's register_schedule leaves them) and `apply_model(x, t, cond)`, given to
k_diffusion.external.CompVisDenoiser (or CompVisVDenoiser) and a classifier-free-guidance wrapper that combines
the denoised outputs as A1111's CFGDenoiser does. Schedules are k-diffusion's (uniform, Karras, exponential,
polyexponential) and A1111's modules/sd_schedulers.py functions, re-created here from its source over the same
wrapper; DPM2, DPM2 a and DPM++ 3M SDE drop the next-to-last σ, A1111's discard_next_to_last_sigma. Ancestral
noise comes from one seeded CPU generator per image after the starting noise (A1111's "RNG: CPU"); the SDE
samplers get k-diffusion's BrownianTreeNoiseSampler keyed by the images' seeds, as A1111's create_noise_sampler
makes it. img2img follows A1111's sample_img2img (t_enc = int(strength · steps), sigma_sched from
steps − t_enc − 1). A1111's own DDIM and PLMS (its timestep samplers) are re-created from its source over the same
model, called at whole timesteps with guidance on ε, and its LCM sampler's denoiser (LCMCompVisDenoiser).
"""
import importlib.util
import inspect
import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from scipy import stats

from diffusers import UNet2DConditionModel

# The k-diffusion package's __init__ imports its training stack (kornia, clean-fid, wandb...), which is not
# installed (requirements-nodeps.txt): its sampling and external modules are loaded without it.
_spec = importlib.util.find_spec("k_diffusion")
_pkg = types.ModuleType("k_diffusion")
_pkg.__path__ = list(_spec.submodule_search_locations)
sys.modules["k_diffusion"] = _pkg
from k_diffusion import external, sampling  # noqa: E402
import torchsde  # noqa: E402

SHAPE = (1, 4, 16, 16)
CFG = 3.0
A1111_SAMPLERS = {  # label -> (function, discard_next_to_last_sigma, Automatic schedule), A1111 1.10
    "Euler": ("sample_euler", False, "Uniform"), "Euler a": ("sample_euler_ancestral", False, "Uniform"),
    "Heun": ("sample_heun", False, "Uniform"), "DPM2": ("sample_dpm_2", True, "Karras"),
    "DPM2 a": ("sample_dpm_2_ancestral", True, "Karras"), "DPM++ 2S a": ("sample_dpmpp_2s_ancestral", False, "Karras"),
    "DPM++ 2M": ("sample_dpmpp_2m", False, "Karras"), "DPM++ SDE": ("sample_dpmpp_sde", False, "Karras"),
    "DPM++ 2M SDE": ("sample_dpmpp_2m_sde", False, "Exponential"),
    "DPM++ 2M SDE Heun": ("sample_dpmpp_2m_sde", False, "Exponential"),
    "DPM++ 3M SDE": ("sample_dpmpp_3m_sde", True, "Exponential"), "LMS": ("sample_lms", False, "Uniform"),
    "LCM": ("sample_lcm", False, "Uniform"),
}
BROWNIAN = {"DPM++ SDE", "DPM++ 2M SDE", "DPM++ 2M SDE Heun", "DPM++ 3M SDE"}


def to_d(x, sigma, denoised):  # A1111 replaces k-diffusion's to_d with this
    return (x - denoised) / sigma


sampling.to_d = to_d


def sample_lcm(model, x, sigmas, extra_args=None, disable=None, noise_sampler=None):
    """ComfyUI's sample_lcm (comfy/k_diffusion/sampling.py), which the k-diffusion package lacks: each step takes
    the model's clean image and noises it afresh to the next σ (its noise_scaling for an ε model: x + σ·noise)."""
    extra_args = extra_args or {}
    s_in = x.new_ones([x.shape[0]])
    for i in range(len(sigmas) - 1):
        x = model(x, sigmas[i] * s_in, **extra_args)
        if sigmas[i + 1] > 0:
            x = x + sigmas[i + 1] * noise_sampler(sigmas[i], sigmas[i + 1])
    return x


sampling.sample_lcm = sample_lcm


class CompVisModel:
    """What CompVisDenoiser needs of a CompVis LatentDiffusion: alphas_cumprod and apply_model."""

    def __init__(self, unet, config):
        self.unet = unet
        n = config["num_train_timesteps"]
        b0, b1 = config["beta_start"], config["beta_end"]
        betas = torch.linspace(b0 ** 0.5, b1 ** 0.5, n, dtype=torch.float64) ** 2
        alphas_cumprod = np.cumprod(1.0 - betas.numpy(), axis=0)
        self.alphas_cumprod = torch.tensor(alphas_cumprod, dtype=torch.float32)
        self.sqrt_alphas_cumprod = torch.tensor(np.sqrt(alphas_cumprod), dtype=torch.float32)
        self.sqrt_one_minus_alphas_cumprod = torch.tensor(np.sqrt(1.0 - alphas_cumprod), dtype=torch.float32)

    def apply_model(self, x, t, cond):
        return self.unet(x, t, encoder_hidden_states=cond).sample


class LCMCompVisDenoiser(external.DiscreteEpsDDPMDenoiser):
    """A1111's modules/sd_samplers_lcm.py, re-created from its source: the 50 timesteps an LCM was distilled on, t
    quantized to them, the output blended with the input by the consistency scalings (σ_data = 0.5)."""

    def __init__(self, model):
        timesteps, original_timesteps = 1000, 50
        self.skip_steps = timesteps // original_timesteps
        valid = torch.zeros(original_timesteps, dtype=torch.float32)
        for x in range(original_timesteps):
            valid[original_timesteps - 1 - x] = model.alphas_cumprod[timesteps - 1 - x * self.skip_steps]
        super().__init__(model, valid, quantize=None)

    def get_sigmas(self, n=None):
        start, end = self.sigma_to_t(self.sigma_max), self.sigma_to_t(self.sigma_min)
        return sampling.append_zero(self.t_to_sigma(torch.linspace(start, end, n)))

    def sigma_to_t(self, sigma, quantize=None):
        dists = sigma.log() - self.log_sigmas[:, None]
        return dists.abs().argmin(dim=0).view(sigma.shape) * self.skip_steps + (self.skip_steps - 1)

    def t_to_sigma(self, timestep):
        t = torch.clamp(((timestep - (self.skip_steps - 1)) / self.skip_steps).float(), min=0, max=(len(self.sigmas) - 1))
        return super().t_to_sigma(t)

    def get_eps(self, *args, **kwargs):
        return self.inner_model.apply_model(*args, **kwargs)

    def get_scaled_out(self, sigma, output, input):
        sigma_data = 0.5
        scaled_timestep = sampling.utils.append_dims(self.sigma_to_t(sigma), output.ndim) * 10.0
        c_skip = sigma_data ** 2 / (scaled_timestep ** 2 + sigma_data ** 2)
        c_out = scaled_timestep / (scaled_timestep ** 2 + sigma_data ** 2) ** 0.5
        return c_out * output + c_skip * input

    def forward(self, input, sigma, **kwargs):
        c_out, c_in = [sampling.utils.append_dims(x, input.ndim) for x in self.get_scalings(sigma)]
        eps = self.get_eps(input * c_in, self.sigma_to_t(sigma), **kwargs)
        return self.get_scaled_out(sigma, input + eps * c_out, input)


class CFGDenoiser:
    """A1111's CFGDenoiser: one batch when the sides are as long, else (pad_cond_uncond off, its default) the prompt
    and then the negative each through the model at its own length."""

    def __init__(self, denoiser, cond, uncond):
        self.inner, self.cond, self.uncond = denoiser, cond, uncond

    def __call__(self, x, sigma):
        b = x.shape[0]
        if callable(self.inner) and not isinstance(self.inner, torch.nn.Module):  # ComfyUI's: cond then uncond batched
            out = self.inner(torch.cat([x, x]), torch.cat([sigma, sigma]), torch.cat([self.cond.expand(b, -1, -1),
                                                                                    self.uncond.expand(b, -1, -1)]))
            return out[b:] + (out[:b] - out[b:]) * CFG
        cond, uncond = self.cond.expand(b, -1, -1), self.uncond.expand(b, -1, -1)
        if cond.shape[1] == uncond.shape[1]:
            out = self.inner(torch.cat([x, x]), torch.cat([sigma, sigma]), cond=torch.cat([cond, uncond]))
        else:
            out = torch.cat([self.inner(x, sigma, cond=cond), self.inner(x, sigma, cond=uncond)])
        c, u = out[:b], out[b:]
        return u + (c - u) * CFG


# A1111 modules/sd_schedulers.py, over the same wrapper (sigma_min/max: the model's, .item()).
def schedule(label, n, m):
    smin, smax = m.sigmas[0].item(), m.sigmas[-1].item()
    if label == "Uniform":
        return m.get_sigmas(n)
    if label == "Karras":
        return sampling.get_sigmas_karras(n, smin, smax)
    if label == "Exponential":
        return sampling.get_sigmas_exponential(n, smin, smax)
    if label == "Polyexponential":
        return sampling.get_sigmas_polyexponential(n, smin, smax)
    if label in ("SGM Uniform", "Normal"):
        start, end = m.sigma_to_t(torch.tensor(smax)), m.sigma_to_t(torch.tensor(smin))
        ts = torch.linspace(start, end, n + 1)[:-1] if label == "SGM Uniform" else torch.linspace(start, end, n)
        return torch.FloatTensor([m.t_to_sigma(t) for t in ts] + [0.0])
    if label == "KL Optimal":
        amin, amax = torch.arctan(torch.tensor(smin)), torch.arctan(torch.tensor(smax))
        idx = torch.arange(n + 1)
        return torch.tan(idx / n * amin + (1.0 - idx / n) * amax)
    if label == "Simple":
        ss = len(m.sigmas) / n
        return torch.FloatTensor([float(m.sigmas[-(1 + int(x * ss))]) for x in range(n)] + [0.0])
    if label == "DDIM":
        ss, x, sigs = max(len(m.sigmas) // n, 1), 1, []
        while x < len(m.sigmas):
            sigs.append(float(m.sigmas[x]))
            x += ss
        return torch.FloatTensor(sigs[::-1] + [0.0])
    if label == "Beta":
        ts = [stats.beta.ppf(x, 0.6, 0.6) for x in 1 - np.linspace(0, 1, n)]
        return torch.FloatTensor([smin + x * (smax - smin) for x in ts] + [0.0])
    raise ValueError(label)


class ComfyDenoiser:
    """ComfyUI's ModelSamplingDiscrete (EPS) and BaseModel.apply_model over the same UNet, from ComfyUI's source
    (comfy/model_sampling.py, comfy/model_base.py): σ and log σ computed in float64 and kept in float32, the input
    divided by √(σ² + 1), the UNet called at the training timestep nearest in log σ, denoised = x − ε·σ."""

    def __init__(self, unet, config):
        n = config["num_train_timesteps"]
        b0, b1 = config["beta_start"], config["beta_end"]
        betas = torch.linspace(b0 ** 0.5, b1 ** 0.5, n, dtype=torch.float64) ** 2
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        sigmas = ((1 - alphas_cumprod) / alphas_cumprod) ** 0.5
        self.sigmas, self.log_sigmas, self.unet = sigmas.float(), sigmas.log().float(), unet

    def timestep(self, sigma):
        dists = sigma.log() - self.log_sigmas[:, None]
        return dists.abs().argmin(dim=0).view(sigma.shape)

    def sigma(self, timestep):
        t = torch.clamp(timestep.float(), min=0, max=(len(self.sigmas) - 1))
        low, high, w = t.floor().long(), t.ceil().long(), t.frac()
        return ((1 - w) * self.log_sigmas[low] + w * self.log_sigmas[high]).exp()

    def __call__(self, x, sigma, cond):
        s = sigma.view(sigma.shape[:1] + (1,) * (x.ndim - 1))
        eps = self.unet(x / (s ** 2 + 1.0) ** 0.5, self.timestep(sigma).float(), encoder_hidden_states=cond).sample
        return x - eps * s


def comfy_sigmas(scheduler, steps, ms, sampler):
    """comfy/samplers.py calculate_sigmas and its schedulers, with KSampler's DISCARD_PENULTIMATE_SIGMA_SAMPLERS."""
    discard = sampler in ("DPM2", "DPM2 a")
    n = steps + (1 if discard else 0)
    smin, smax = float(ms.sigmas[0]), float(ms.sigmas[-1])
    if scheduler == "normal":
        start, end = ms.timestep(ms.sigmas[-1]), ms.timestep(ms.sigmas[0])
        sig = torch.FloatTensor([float(ms.sigma(t)) for t in torch.linspace(start, end, n)] + [0.0])
    elif scheduler == "sgm_uniform":
        start, end = ms.timestep(ms.sigmas[-1]), ms.timestep(ms.sigmas[0])
        sig = torch.FloatTensor([float(ms.sigma(t)) for t in torch.linspace(start, end, n + 1)[:-1]] + [0.0])
    elif scheduler == "karras":
        sig = sampling.get_sigmas_karras(n=n, sigma_min=smin, sigma_max=smax)
    elif scheduler == "beta":
        total = len(ms.sigmas) - 1
        ts = np.rint(stats.beta.ppf(1 - np.linspace(0, 1, n, endpoint=False), 0.6, 0.6) * total)
        sigs, last = [], -1
        for t in ts:
            if t != last:
                sigs.append(float(ms.sigmas[int(t)]))
            last = t
        sig = torch.FloatTensor(sigs + [0.0])
    elif scheduler == "kl_optimal":
        adj = torch.arange(n, dtype=torch.float).div_(n - 1)
        sig = adj.new_zeros(n + 1)
        sig[:-1] = (adj * math.atan(smin) + (1 - adj) * math.atan(smax)).tan_()
    else:
        raise ValueError(scheduler)
    return torch.cat([sig[:-2], sig[-1:]]) if discard else sig


def run_comfy(case, unet, config, cond, uncond, out):
    """comfy/sample.py prepare_noise (one generator of the seed over the batch), KSAMPLER.sample's noise_scaling
    (√(1 + σ²) at full denoise), default_noise_sampler (a CPU generator of seed + 1) and BrownianTreeNoiseSampler
    (one tree of the seed over the batch, on the CPU)."""
    ms = ComfyDenoiser(unet, config)
    model = CFGDenoiser(lambda x, s, cond: ms(x, s, cond), cond, uncond)
    seed, batch = case["seed"], case.get("batch", 1)
    sigmas = comfy_sigmas(case["comfy_scheduler"], case["steps"], ms, case["sampler"])
    noise = torch.randn((batch,) + SHAPE[1:], generator=torch.Generator().manual_seed(seed))
    max_sigma, first = float(ms.sigmas[-1]), float(sigmas[0])
    max_denoise = math.isclose(max_sigma, first, rel_tol=1e-05) or first > max_sigma
    x = noise * torch.sqrt(1.0 + sigmas[0] ** 2.0) if max_denoise else noise * sigmas[0]
    name = A1111_SAMPLERS[case["sampler"]][0]
    kwargs = {}
    if case["sampler"] in BROWNIAN:
        kwargs["noise_sampler"] = sampling.BrownianTreeNoiseSampler(x, sigmas[sigmas > 0].min(), sigmas.max(), seed=seed)
    elif "noise_sampler" in inspect.signature(getattr(sampling, name)).parameters:
        g = torch.Generator().manual_seed(seed + 1)
        kwargs["noise_sampler"] = lambda s, sn: torch.randn(x.size(), generator=g)
    with torch.no_grad():
        latents = getattr(sampling, name)(model, x, sigmas, disable=True, **kwargs)
    save_file({"sigmas": sigmas, "noise": noise, "latents": latents.contiguous()}, out / f"{case['name']}.safetensors")


def sampler_sigmas(sampler, label, steps, m):
    _, discard, automatic = A1111_SAMPLERS[sampler]
    label = automatic if label == "Automatic" else label
    sigmas = schedule(label, steps + (1 if discard else 0), m)
    return torch.cat([sigmas[:-2], sigmas[-1:]]) if discard else sigmas


def run(case, unet, config, cond, uncond, out):
    if case.get("long_prompt"):  # a prompt two chunks long beside a one-chunk negative
        cond = torch.cat([cond, torch.flip(cond, [1])], 1)
    v = case.get("prediction") == "v_prediction"
    wrapper = CompVisModel(unet, config)
    denoiser = (external.CompVisVDenoiser if v else external.CompVisDenoiser)(wrapper)
    if case["sampler"] == "LCM":  # A1111's LCM sampler has a denoiser of its own
        denoiser = LCMCompVisDenoiser(wrapper)
    model = CFGDenoiser(denoiser, cond, uncond)
    seeds = [case["seed"] + i for i in range(case.get("batch", 1))]
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    shape = (1,) + SHAPE[1:]
    steps = case["steps"]
    sigmas = sampler_sigmas(case["sampler"], case["schedule"], steps, denoiser)
    noise = torch.cat([torch.randn(shape, generator=g) for g in gens])
    tensors = {"sigmas": sigmas, "noise": noise}
    if "strength" in case:  # A1111's sample_img2img
        init = torch.randn((len(seeds),) + SHAPE[1:], generator=torch.Generator().manual_seed(99))
        t_enc = int(min(case["strength"], 0.999) * steps)
        sched = sigmas[steps - t_enc - 1:]
        x, run_sigmas, tensors["init"] = init + noise * sched[0], sched, init
    else:
        x, run_sigmas = noise * sigmas[0], sigmas
    kwargs = {}
    name, _, _ = A1111_SAMPLERS[case["sampler"]]
    if case["sampler"] in BROWNIAN:
        kwargs["noise_sampler"] = sampling.BrownianTreeNoiseSampler(x, sigmas[sigmas > 0].min(), sigmas.max(), seed=seeds)
    elif "noise_sampler" in inspect.signature(getattr(sampling, name)).parameters:
        kwargs["noise_sampler"] = lambda s, sn: torch.cat([torch.randn(shape, generator=g) for g in gens])
    if case["sampler"] == "DPM++ 2M SDE Heun":
        kwargs["solver_type"] = "heun"
    with torch.no_grad():
        tensors["latents"] = getattr(sampling, name)(model, x, run_sigmas, disable=True, **kwargs)
    save_file({k: t.contiguous() for k, t in tensors.items()}, out / f"{case['name']}.safetensors")


# A1111's timestep samplers (modules/sd_samplers_timesteps.py and _impl.py), re-created from its source: the
# CompVis model called at whole timesteps, guidance on its ε, DDIM at η = 0 and PLMS over A1111's grid.
class TimestepsDenoiser(torch.nn.Module):  # CompVisTimestepsDenoiser / CompVisTimestepsVDenoiser
    def __init__(self, model, v):
        super().__init__()
        self.model, self.v = model, v

    def forward(self, x, t, cond):
        out = self.model.apply_model(x, t, cond)
        if not self.v:
            return out
        ti = t.to(torch.int)
        return (self.model.sqrt_alphas_cumprod[ti, None, None, None] * out
                + self.model.sqrt_one_minus_alphas_cumprod[ti, None, None, None] * x)


def a1111_grid(steps):
    return torch.clip(torch.asarray(list(range(0, 1000, 1000 // steps))) + 1, 0, 999)


def a1111_ddim(model, x, timesteps, alphas_cumprod):
    alphas = alphas_cumprod[timesteps]
    alphas_prev = alphas_cumprod[torch.nn.functional.pad(timesteps[:-1], pad=(1, 0))].to(torch.float64)
    sqrt_one_minus_alphas = torch.sqrt(1 - alphas)
    s_in, s_x = x.new_ones([x.shape[0]]), x.new_ones((x.shape[0], 1, 1, 1))
    for i in range(len(timesteps) - 1):
        index = len(timesteps) - 1 - i
        e_t = model(x, timesteps[index].item() * s_in)
        a_t, a_prev = alphas[index].item() * s_x, alphas_prev[index].item() * s_x
        sqrt_one_minus_at = sqrt_one_minus_alphas[index].item() * s_x
        pred_x0 = (x - sqrt_one_minus_at * e_t) / a_t.sqrt()
        x = a_prev.sqrt() * pred_x0 + (1. - a_prev).sqrt() * e_t  # η = 0: no σ_t, no noise
    return x


def a1111_plms(model, x, timesteps, alphas_cumprod):
    alphas = alphas_cumprod[timesteps]
    alphas_prev = alphas_cumprod[torch.nn.functional.pad(timesteps[:-1], pad=(1, 0))].to(torch.float64)
    sqrt_one_minus_alphas = torch.sqrt(1 - alphas)
    s_in, s_x = x.new_ones([x.shape[0]]), x.new_ones((x.shape[0], 1, 1, 1))
    old_eps = []

    def x_prev_of(e_t, index):
        a_t, a_prev = alphas[index].item() * s_x, alphas_prev[index].item() * s_x
        sqrt_one_minus_at = sqrt_one_minus_alphas[index].item() * s_x
        pred_x0 = (x - sqrt_one_minus_at * e_t) / a_t.sqrt()
        return a_prev.sqrt() * pred_x0 + (1. - a_prev).sqrt() * e_t

    for i in range(len(timesteps) - 1):
        index = len(timesteps) - 1 - i
        ts, t_next = timesteps[index].item() * s_in, timesteps[max(index - 1, 0)].item() * s_in
        e_t = model(x, ts)
        if len(old_eps) == 0:
            e_t_prime = (e_t + model(x_prev_of(e_t, index), t_next)) / 2
        elif len(old_eps) == 1:
            e_t_prime = (3 * e_t - old_eps[-1]) / 2
        elif len(old_eps) == 2:
            e_t_prime = (23 * e_t - 16 * old_eps[-1] + 5 * old_eps[-2]) / 12
        else:
            e_t_prime = (55 * e_t - 59 * old_eps[-1] + 37 * old_eps[-2] - 9 * old_eps[-3]) / 24
        x_new = x_prev_of(e_t_prime, index)
        old_eps.append(e_t)
        if len(old_eps) >= 4:
            old_eps.pop(0)
        x = x_new
    return x


def run_timesteps(case, unet, config, cond, uncond, out):
    wrapper = CompVisModel(unet, config)
    model = CFGDenoiser(TimestepsDenoiser(wrapper, case.get("prediction") == "v_prediction"), cond, uncond)
    seeds = [case["seed"] + i for i in range(case.get("batch", 1))]
    noise = torch.cat([torch.randn((1,) + SHAPE[1:], generator=torch.Generator().manual_seed(s)) for s in seeds])
    steps = case["steps"]
    timesteps = a1111_grid(steps)
    tensors = {"timesteps": timesteps, "noise": noise}
    x = noise
    if "strength" in case:  # CompVisSampler.sample_img2img
        init = torch.randn((len(seeds),) + SHAPE[1:], generator=torch.Generator().manual_seed(99))
        t_enc = int(min(case["strength"], 0.999) * steps)
        ac = wrapper.alphas_cumprod[timesteps[t_enc]]
        x = init * torch.sqrt(ac) + noise * torch.sqrt(1 - ac)
        timesteps, tensors["init"] = timesteps[:t_enc], init
    sampler = a1111_ddim if case["sampler"] == "DDIM" else a1111_plms
    with torch.no_grad():
        tensors["latents"] = sampler(model, x, timesteps, wrapper.alphas_cumprod)
    save_file({k: t.contiguous() for k, t in tensors.items()}, out / f"{case['name']}.safetensors")


def cases():
    c = [{"sampler": s, "schedule": "Automatic", "steps": 6, "seed": 1000 + i} for i, s in enumerate(A1111_SAMPLERS)]
    labels = ["Uniform", "Karras", "Exponential", "Polyexponential", "SGM Uniform", "KL Optimal", "Simple", "Normal",
              "DDIM", "Beta"]
    c += [{"sampler": "Euler", "schedule": label, "steps": 5, "seed": 7} for label in labels]
    c += [{"sampler": "DPM++ SDE", "schedule": "Normal", "steps": 5, "seed": 11},
          {"sampler": "DPM++ 2M SDE", "schedule": "Karras", "steps": 7, "seed": 12, "batch": 2},
          {"sampler": "DPM2 a", "schedule": "Exponential", "steps": 5, "seed": 13, "batch": 2},
          {"sampler": "DPM++ 2M", "schedule": "Automatic", "steps": 6, "seed": 14, "prediction": "v_prediction"},
          {"sampler": "DPM++ 2M", "schedule": "Karras", "steps": 10, "seed": 15, "strength": 0.6},
          {"sampler": "DPM++ SDE", "schedule": "Karras", "steps": 8, "seed": 16, "strength": 0.5},
          {"sampler": "LMS", "schedule": "Karras", "steps": 8, "seed": 17, "strength": 0.75},
          {"sampler": "Euler", "schedule": "DDIM", "steps": 30, "seed": 18},
          {"sampler": "DPM++ 2M", "schedule": "Karras", "steps": 6, "seed": 19, "long_prompt": True},
          {"sampler": "LCM", "schedule": "Karras", "steps": 4, "seed": 20, "batch": 2},
          {"sampler": "LCM", "schedule": "SGM Uniform", "steps": 5, "seed": 35},
          {"sampler": "LCM", "schedule": "Simple", "steps": 4, "seed": 36}]
    # A1111's own DDIM and PLMS (timesteps), over grids that divide 1000 and one that does not.
    for sampler in ("DDIM", "PLMS"):
        c += [{"sampler": sampler, "schedule": "Automatic", "steps": 20, "seed": 31, "timesteps": True},
              {"sampler": sampler, "schedule": "Automatic", "steps": 7, "seed": 32, "timesteps": True, "batch": 2},
              {"sampler": sampler, "schedule": "Automatic", "steps": 8, "seed": 33, "timesteps": True,
               "prediction": "v_prediction"},
              {"sampler": sampler, "schedule": "Automatic", "steps": 12, "seed": 34, "timesteps": True, "strength": 0.6}]
    # As ComfyUI samples (its schedule names beside ours).
    for sampler, sched, label, steps, seed, batch in [
            ("Euler a", "normal", "Normal", 6, 21, 2), ("DPM++ 2M SDE", "karras", "Karras", 6, 22, 2),
            ("DPM++ SDE", "normal", "Normal", 5, 23, 1), ("Euler", "beta", "Beta", 8, 24, 1),
            ("Euler", "kl_optimal", "KL Optimal", 5, 25, 1), ("DPM2 a", "karras", "Karras", 5, 26, 1),
            ("DPM++ 3M SDE", "normal", "Normal", 6, 27, 1), ("LCM", "sgm_uniform", "SGM Uniform", 4, 28, 2)]:
        c.append({"sampler": sampler, "schedule": label, "comfy_scheduler": sched, "steps": steps, "seed": seed,
                  "batch": batch, "sample_as": "ComfyUI"})
    for case in c:
        extra = "".join(f"_{k}{case[k]}" for k in ("batch", "prediction", "strength") if k in case)
        extra += "_long_prompt" if case.get("long_prompt") else ""
        extra += "_comfyui" if case.get("sample_as") == "ComfyUI" else ""
        extra += "_timesteps" if case.get("timesteps") else ""
        case["name"] = (f"{case['sampler']}_{case['schedule']}_{case['steps']}{extra}".lower()
                        .replace("+", "p").replace(" ", "_").replace(".", ""))
    return c


def brownian_fixture(out):
    """torchsde's BrownianTree queried as the SDE samplers query it, and numpy's SeedSequence states."""
    states = []
    for entropy, spawn in [(0, []), (42, [5, 3]), (2 ** 40 + 7, [123456789012, 30]), (4294967295, [1, 1])]:
        st = np.random.SeedSequence(entropy, spawn_key=spawn, pool_size=24).generate_state(4)
        states.append({"entropy": entropy, "spawn_key": spawn, "state": [int(x) for x in st]})
    tensors, queries = {}, []
    t0, t1 = torch.tensor(0.0291675, dtype=torch.float32), torch.tensor(14.614642, dtype=torch.float32)
    tree = torchsde.BrownianTree(t0, torch.zeros(2, 3, 3), t1, entropy=1234, tol=1e-6, pool_size=24)
    points = [(14.614642, 9.5), (9.5, 3.25), (3.25, 1.0), (1.0, 0.0291675), (0.7, 0.2), (14.614642, 0.0291675)]
    for k, (a, b) in enumerate(points):
        lo, hi = min(a, b), max(a, b)
        tensors[f"w{k}"] = tree(torch.tensor(lo, dtype=torch.float32), torch.tensor(hi, dtype=torch.float32))
        queries.append([float(torch.tensor(lo, dtype=torch.float32)), float(torch.tensor(hi, dtype=torch.float32))])
    save_file({k: t.contiguous() for k, t in tensors.items()}, out / "brownian.safetensors")
    (out / "brownian.json").write_text(json.dumps({"seed_sequence": states, "tree": {
        "t0": float(t0), "t1": float(t1), "shape": [2, 3, 3], "seed": 1234, "queries": queries}}, indent=1))


def main():
    root = Path(sys.argv[1])
    out = root / "k_diffusion"
    out.mkdir(parents=True, exist_ok=True)
    model_dir = root / "models" / "tiny-sd1"
    unet = UNet2DConditionModel.from_pretrained(str(model_dir), subfolder="unet", local_files_only=True).eval()
    config = json.loads((model_dir / "scheduler" / "scheduler_config.json").read_text())
    g = torch.Generator().manual_seed(4321)
    cond = torch.randn(1, 77, unet.config.cross_attention_dim, generator=g)
    uncond = torch.randn(1, 77, unet.config.cross_attention_dim, generator=g)
    save_file({"cond": cond, "uncond": uncond}, out / "conditioning.safetensors")
    all_cases = cases()
    for case in all_cases:
        runner = run_comfy if case.get("sample_as") == "ComfyUI" else run_timesteps if case.get("timesteps") else run
        runner(case, unet, config, cond, uncond, out)
    (out / "cases.json").write_text(json.dumps({"cfg": CFG, "shape": list(SHAPE), "cases": all_cases}, indent=1))
    brownian_fixture(out)


if __name__ == "__main__":
    main()
