"""End-to-end reference: diffusers' own txt2img / img2img pipelines on tiny random-weight models whose text
encoders have the full CLIP vocabulary (so real prompts tokenize), run with CPU generators (one per image,
seed + i), saving the final latents and the uint8 images. The C++ engine must reproduce them.

Writes <outdir>/pipeline/<model>/ (diffusers folders) and <outdir>/pipeline/cases.json + case_<n>.safetensors.
"""
import json
import pathlib
import sys

import numpy as np
import torch
from diffusers import (AutoencoderKL, EulerDiscreteScheduler, PNDMScheduler, StableDiffusionImg2ImgPipeline,
                       StableDiffusionPipeline, StableDiffusionXLPipeline, UNet2DConditionModel)
from safetensors.torch import save_file
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer

OUT = pathlib.Path(sys.argv[1])
MODELS = OUT / "models"
DIR = OUT / "pipeline"

# A1111 name -> (class, from_config options): one table, shared with the scheduler fixtures.
from fixtures_schedulers import NAMES as SCHEDULERS  # noqa: E402


def clip(projection=False, act="quick_gelu"):
    cfg = CLIPTextConfig(hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=5,
                         vocab_size=49408, eos_token_id=49407, bos_token_id=49406, pad_token_id=49407,
                         hidden_act=act, projection_dim=32)
    return CLIPTextModelWithProjection(cfg) if projection else CLIPTextModel(cfg)


def vae():
    return AutoencoderKL(block_out_channels=[32, 64], in_channels=3, out_channels=3, latent_channels=4,
                         down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
                         sample_size=64)


def sd1():
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=2, sample_size=32, cross_attention_dim=32,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"))
    torch.manual_seed(1)
    v = vae()
    torch.manual_seed(2)
    te = clip()
    sched = PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True,
                          steps_offset=1, set_alpha_to_one=False)
    tok = CLIPTokenizer.from_pretrained(MODELS / "tiny-sd1" / "tokenizer")
    return StableDiffusionPipeline(unet=unet, vae=v, text_encoder=te, tokenizer=tok, scheduler=sched,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)


def sdxl():
    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=2, sample_size=32,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), attention_head_dim=(2, 4),
                                use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=8,
                                transformer_layers_per_block=(1, 2), projection_class_embeddings_input_dim=80,
                                cross_attention_dim=64)
    torch.manual_seed(1)
    v = vae()
    torch.manual_seed(2)
    te = clip()
    torch.manual_seed(3)
    te2 = clip(projection=True, act="gelu")
    sched = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", steps_offset=1,
                                   timestep_spacing="leading")
    tok = CLIPTokenizer.from_pretrained(MODELS / "tiny-sdxl" / "tokenizer")
    tok2 = CLIPTokenizer.from_pretrained(MODELS / "tiny-sdxl" / "tokenizer_2")
    return StableDiffusionXLPipeline(unet=unet, vae=v, text_encoder=te, text_encoder_2=te2, tokenizer=tok,
                                     tokenizer_2=tok2, scheduler=sched)


def run(pipe, case, base_scheduler, init=None):
    # Always from the saved scheduler config, as a user switching samplers on a loaded model does; chaining
    # from_config calls would carry one class's defaults into the next.
    cls, opts = SCHEDULERS[case["sampler"]]
    pipe.scheduler = cls.from_config(base_scheduler.config, **opts)
    gens = [torch.Generator().manual_seed(case["seed"] + i) for i in range(case["batch"])]
    kw = dict(prompt=case["prompt"], negative_prompt=case["negative"] or None, num_inference_steps=case["steps"],
              guidance_scale=case["cfg"], generator=gens, num_images_per_prompt=case["batch"],
              guidance_rescale=case.get("rescale", 0.0))
    if init is None:
        kw.update(height=case["height"], width=case["width"])
    else:
        kw.update(image=init, strength=case["strength"])
    latents = pipe(**kw, output_type="latent").images
    gens = [torch.Generator().manual_seed(case["seed"] + i) for i in range(case["batch"])]
    kw["generator"] = gens
    images = pipe(**kw, output_type="np").images
    return latents, torch.from_numpy((images * 255).round().astype(np.uint8))


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    built = {"tiny-sd1-e2e": sd1(), "tiny-sdxl-e2e": sdxl()}
    pipes, base_schedulers = {}, {}
    for name, pipe in built.items():
        pipe.save_pretrained(DIR / name, safe_serialization=True)
        # Run what a user runs: the pipeline loaded back from disk. (A freshly built scheduler's config marks
        # timestep_spacing as a default, so from_config would give Euler "linspace" instead of the saved
        # "leading".)
        pipes[name] = type(pipe).from_pretrained(DIR / name)
        pipes[name].set_progress_bar_config(disable=True)
        base_schedulers[name] = pipes[name].scheduler
    base = dict(prompt="a photo of an astronaut riding a horse on mars", negative="", seed=42, steps=6, cfg=7.5,
                width=64, height=64, batch=1)
    cases = [
        dict(base, model="tiny-sd1-e2e", sampler="Euler"),
        dict(base, model="tiny-sd1-e2e", sampler="Euler a", batch=2, negative="blurry, low quality"),
        dict(base, model="tiny-sd1-e2e", sampler="DDIM", cfg=1.0),
        dict(base, model="tiny-sd1-e2e", sampler="PLMS", width=48, height=80),
        dict(base, model="tiny-sd1-e2e", sampler="DPM++ 2M Karras", rescale=0.7),
        dict(base, model="tiny-sd1-e2e", sampler="DPM++ 2M SDE", seed=7),
        dict(base, model="tiny-sdxl-e2e", sampler="Euler", cfg=5.0),
        dict(base, model="tiny-sdxl-e2e", sampler="DPM++ 2M", negative="ugly", batch=2),
        dict(base, model="tiny-sd1-e2e", sampler="Euler a", img2img=True, strength=0.6, steps=10),
    ]
    rng = np.random.default_rng(5)
    init = rng.integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
    save_file({"rgb": torch.from_numpy(init)}, DIR / "init.safetensors")
    for n, case in enumerate(cases):
        pipe = pipes[case["model"]]
        if case.get("img2img"):
            pipe = StableDiffusionImg2ImgPipeline(**pipe.components)
            pipe.set_progress_bar_config(disable=True)
            image = torch.from_numpy(init).permute(2, 0, 1).float().div(255).unsqueeze(0)  # [0,1], as PIL→tensor
            latents, images = run(pipe, case, base_schedulers[case["model"]], init=image)
        else:
            latents, images = run(pipe, case, base_schedulers[case["model"]])
        save_file({"latents": latents.contiguous(), "images": images.contiguous()}, DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
