"""Single-file checkpoints end to end: diffusers' `from_single_file` on tiny models written in the original
LDM / SGM layout, then every sampler as a diffusers user switches it,
`XScheduler.from_config(pipe.scheduler.config, **options)`. The C++ engine must give the same latents and image
from the same file, with no help: the tiny models have SD's head sizes (8 heads in SD 1.x, 64-wide heads
elsewhere), so nothing needs overriding that a real file would not.

`from_single_file` takes every component's configuration from the Hub repository diffusers names for the
checkpoint's model type (single_file_utils.DIFFUSERS_DEFAULT_PIPELINE_PATHS). Nothing is downloaded here: each
pipeline's `config=` folder is the tiny model's own configuration with that repository's scheduler_config.json,
as the Hub serves it (HUB_SCHEDULERS below), in place of the tiny one.

Writes <outdir>/single_file/<family>.safetensors, <family>-config/, cases.json and case_<n>.safetensors.
"""
import json
import pathlib
import shutil
import sys

import numpy as np
import torch
import diffusers
from diffusers import (AutoencoderKL, StableDiffusionPipeline, StableDiffusionXLPipeline, UNet2DConditionModel)
from diffusers.loaders import single_file_utils as sfu
from safetensors.torch import save_file
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer

from fixtures_models import assert_same, ldm_state_dict
from fixtures_schedulers import NAMES as SAMPLERS

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "single_file"
TOKENIZERS = OUT / "models"

# scheduler/scheduler_config.json of the repositories diffusers fetches for SD 1.x, SD 2.x and SDXL single files,
# key for key as the Hub has them (the SD 1.5 and SD 2.1 files predate timestep_spacing and leave it out).
HUB_SCHEDULERS = {
    "stable-diffusion-v1-5/stable-diffusion-v1-5": {
        "_class_name": "PNDMScheduler", "_diffusers_version": "0.6.0", "beta_end": 0.012,
        "beta_schedule": "scaled_linear", "beta_start": 0.00085, "num_train_timesteps": 1000,
        "set_alpha_to_one": False, "skip_prk_steps": True, "steps_offset": 1, "trained_betas": None,
        "clip_sample": False},
    "stabilityai/stable-diffusion-2-1": {
        "_class_name": "DDIMScheduler", "_diffusers_version": "0.8.0", "beta_end": 0.012,
        "beta_schedule": "scaled_linear", "beta_start": 0.00085, "clip_sample": False, "num_train_timesteps": 1000,
        "prediction_type": "v_prediction", "set_alpha_to_one": False, "skip_prk_steps": True, "steps_offset": 1,
        "trained_betas": None},
    "stabilityai/stable-diffusion-xl-base-1.0": {
        "_class_name": "EulerDiscreteScheduler", "_diffusers_version": "0.19.0.dev0", "beta_end": 0.012,
        "beta_schedule": "scaled_linear", "beta_start": 0.00085, "clip_sample": False,
        "interpolation_type": "linear", "num_train_timesteps": 1000, "prediction_type": "epsilon",
        "sample_max_value": 1.0, "set_alpha_to_one": False, "skip_prk_steps": True, "steps_offset": 1,
        "timestep_spacing": "leading", "trained_betas": None, "use_karras_sigmas": False},
}
# The model type diffusers infers for a full-size checkpoint of each family (infer_diffusers_model_type: SD 2.x
# by its 1024-wide cross-attention, which the tiny models cannot have).
MODEL_TYPE = {"sd1": "v1", "sd2": "v2", "sdxl": "xl_base"}


def clip(hidden, act, projection=None):
    cfg = CLIPTextConfig(hidden_size=hidden, intermediate_size=37, num_attention_heads=hidden // 64,
                         num_hidden_layers=5, vocab_size=49408, eos_token_id=49407, bos_token_id=49406,
                         pad_token_id=49407, hidden_act=act, projection_dim=projection or hidden)
    return CLIPTextModelWithProjection(cfg) if projection else CLIPTextModel(cfg)


def vae(scaling_factor):
    return AutoencoderKL(block_out_channels=[32, 64], in_channels=3, out_channels=3, latent_channels=4,
                         down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
                         sample_size=64, scaling_factor=scaling_factor)


def tokenizer(model, sub="tokenizer"):
    return CLIPTokenizer.from_pretrained(TOKENIZERS / model / sub)


def sd1():
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=2, sample_size=32, attention_head_dim=8,
                                cross_attention_dim=64, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"))
    torch.manual_seed(1)
    v = vae(0.18215)
    torch.manual_seed(2)
    te = clip(64, "quick_gelu")
    return StableDiffusionPipeline(unet=unet, vae=v, text_encoder=te, tokenizer=tokenizer("tiny-sd1"),
                                   scheduler=None, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)


def sd2():
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(64, 128), layers_per_block=2, sample_size=32,
                                attention_head_dim=(1, 2), use_linear_projection=True, cross_attention_dim=64,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"))
    torch.manual_seed(1)
    v = vae(0.18215)
    torch.manual_seed(2)
    te = clip(64, "gelu")
    return StableDiffusionPipeline(unet=unet, vae=v, text_encoder=te, tokenizer=tokenizer("tiny-sd2"),
                                   scheduler=None, safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)


def sdxl():
    # The two text encoders differ in width: diffusers tells CLIP-L from OpenCLIP bigG in a single file by width.
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(64, 128), layers_per_block=2, sample_size=32,
                                attention_head_dim=(1, 2), use_linear_projection=True, addition_embed_type="text_time",
                                addition_time_embed_dim=8, transformer_layers_per_block=(1, 2),
                                projection_class_embeddings_input_dim=6 * 8 + 64, cross_attention_dim=64 + 128,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"))
    torch.manual_seed(1)
    v = vae(0.13025)
    torch.manual_seed(2)
    te = clip(64, "quick_gelu")
    torch.manual_seed(3)
    te2 = clip(128, "gelu", projection=64)
    return StableDiffusionXLPipeline(unet=unet, vae=v, text_encoder=te, text_encoder_2=te2,
                                     tokenizer=tokenizer("tiny-sdxl"), tokenizer_2=tokenizer("tiny-sdxl", "tokenizer_2"),
                                     scheduler=None)


def write_family(family, pipe):
    """The single file, and the configuration folder from_single_file reads in place of the Hub repository."""
    repo = sfu.DIFFUSERS_DEFAULT_PIPELINE_PATHS[MODEL_TYPE[family]]["pretrained_model_name_or_path"]
    hub = HUB_SCHEDULERS[repo]
    single = DIR / f"{family}.safetensors"
    save_file(ldm_state_dict(family, pipe), single, metadata={"format": "pt"})
    config = DIR / f"{family}-config"
    if config.exists():
        shutil.rmtree(config)
    pipe.register_modules(scheduler=getattr(diffusers, hub["_class_name"]).from_config(hub))
    pipe.save_pretrained(config, safe_serialization=True)
    (config / "scheduler" / "scheduler_config.json").write_text(json.dumps(hub, indent=2))
    loaded = type(pipe).from_single_file(str(single), config=str(config), local_files_only=True)
    loaded.set_progress_bar_config(disable=True)
    assert loaded.scheduler.config["_class_name"] == hub["_class_name"], loaded.scheduler.config
    for name in ("unet", "vae", "text_encoder", "text_encoder_2"):  # diffusers read back what was written
        if getattr(pipe, name, None) is not None:
            assert_same(f"{family} {name}", getattr(loaded, name).state_dict(), getattr(pipe, name).state_dict())
    return loaded


def run(pipe, case):
    cls, opts = SAMPLERS[case["sampler"]]
    pipe.scheduler = cls.from_config(pipe.base_scheduler.config, **opts, **case.get("scheduler_options", {}))
    kw = dict(prompt=case["prompt"], negative_prompt=case["negative"] or None, num_inference_steps=case["steps"],
              guidance_scale=case["cfg"], height=case["height"], width=case["width"])
    latents = pipe(**kw, generator=torch.Generator().manual_seed(case["seed"]), output_type="latent").images
    images = pipe(**kw, generator=torch.Generator().manual_seed(case["seed"]), output_type="np").images
    return latents, torch.from_numpy((images * 255).round().astype(np.uint8))


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    pipes = {}
    for family, build in (("sd1", sd1), ("sd2", sd2), ("sdxl", sdxl)):
        pipes[family] = write_family(family, build())
        pipes[family].base_scheduler = pipes[family].scheduler
    base = dict(prompt="a photo of an astronaut riding a horse on mars", negative="", seed=42, steps=5, cfg=7.5,
                width=64, height=64)
    cases = [dict(base, model=f"{family}.safetensors", sampler=name) for family in pipes for name in SAMPLERS]
    # SD 2.x base models predict ε; the weights cannot say so, the user does (as from_config(..., prediction_type=)).
    cases += [dict(base, model="sd2.safetensors", sampler=name, scheduler_options={"prediction_type": "epsilon"})
              for name in ("Euler", "DPM++ 2M Karras", "DDIM")]
    cases += [dict(base, model="sd1.safetensors", sampler="Euler a", scheduler_options={"timestep_spacing": "leading"})]
    for n, case in enumerate(cases):
        latents, images = run(pipes[case["model"].removesuffix(".safetensors")], case)
        save_file({"latents": latents.contiguous(), "images": images.contiguous()}, DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))
    print(f"  {len(cases)} single-file cases")


if __name__ == "__main__":
    main()
