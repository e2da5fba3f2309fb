"""SDXL base → refiner hand-off reference, as the diffusers docs run it: StableDiffusionXLPipeline with
denoising_end=f and output_type="latent", then StableDiffusionXLImg2ImgPipeline (the refiner) with image=those
latents and denoising_start=f. Both calls get the same per-image CPU generators (seed + i), so a sampler that
draws noise in its steps continues the base's random stream. Saves the base latents at the switch, the final
refiner latents and the uint8 images.

Reads the base model fixtures_pipeline.py writes (<outdir>/pipeline/tiny-sdxl-e2e: make_fixtures runs the scripts
in name order). Writes <outdir>/refiner/tiny-sdxl-refiner-e2e/ (a diffusers folder: only text_encoder_2 /
tokenizer_2, requires_aesthetics_score), the same weights as an A1111 single file
(tiny-sdxl-refiner-e2e.safetensors, LDM names) and <outdir>/refiner/cases.json + case_<n>.safetensors.
"""
import json
import pathlib
import sys

import numpy as np
import torch
from diffusers import (AutoencoderKL, EulerDiscreteScheduler, StableDiffusionXLImg2ImgPipeline,
                       StableDiffusionXLPipeline, UNet2DConditionModel)
from safetensors.torch import save_file
from transformers import CLIPTextConfig, CLIPTextModelWithProjection, CLIPTokenizer

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "refiner"
BASE = OUT / "pipeline" / "tiny-sdxl-e2e"

from fixtures_models import ldm_state_dict  # noqa: E402
from fixtures_schedulers import NAMES as SCHEDULERS  # noqa: E402


def refiner():
    # The refiner's UNet: 5 time ids (original size, crop, aesthetic score) × 8 + the pooled 32 = 72, and
    # cross-attention over text_encoder_2 alone (32). Its own VAE weights, so the tests see which VAE decodes.
    torch.manual_seed(10)
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=2, sample_size=32,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), attention_head_dim=(2, 4),
                                use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=8,
                                transformer_layers_per_block=(1, 2), projection_class_embeddings_input_dim=72,
                                cross_attention_dim=32)
    torch.manual_seed(11)
    vae = AutoencoderKL(block_out_channels=[32, 64], in_channels=3, out_channels=3, latent_channels=4,
                        down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
                        sample_size=64)
    torch.manual_seed(12)
    te2 = CLIPTextModelWithProjection(CLIPTextConfig(
        hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=5, vocab_size=49408,
        eos_token_id=49407, bos_token_id=49406, pad_token_id=49407, hidden_act="gelu", projection_dim=32))
    sched = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", steps_offset=1,
                                   timestep_spacing="leading")
    tok2 = CLIPTokenizer.from_pretrained(BASE / "tokenizer_2")
    # The real refiner's model_index: requires_aesthetics_score true, force_zeros_for_empty_prompt false.
    return StableDiffusionXLImg2ImgPipeline(unet=unet, vae=vae, text_encoder=None, text_encoder_2=te2, tokenizer=None,
                                            tokenizer_2=tok2, scheduler=sched, requires_aesthetics_score=True,
                                            force_zeros_for_empty_prompt=False, add_watermarker=False)


def run(base, ref, case, base_sched, ref_sched, output_type):
    cls, opts = SCHEDULERS[case["sampler"]]
    base.scheduler = cls.from_config(base_sched.config, **opts)
    ref.scheduler = cls.from_config(ref_sched.config, **opts)
    gens = [torch.Generator().manual_seed(case["seed"] + i) for i in range(case["batch"])]
    common = dict(prompt=case["prompt"], negative_prompt=case["negative"] or None, num_inference_steps=case["steps"],
                  guidance_scale=case["cfg"], generator=gens, num_images_per_prompt=case["batch"])
    switch = case["switch"]
    handoff = base(**common, height=case["height"], width=case["width"], denoising_end=switch,
                   output_type="latent").images
    out = ref(**common, image=handoff, denoising_start=switch, aesthetic_score=case["aesthetic"],
              negative_aesthetic_score=case["negative_aesthetic"], output_type=output_type).images
    return handoff, out


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    folder = DIR / "tiny-sdxl-refiner-e2e"
    built = refiner()
    built.save_pretrained(folder, safe_serialization=True)
    save_file(ldm_state_dict("sdxl-refiner", built), DIR / "tiny-sdxl-refiner-e2e.safetensors", metadata={"format": "pt"})
    # Loaded back from disk, as a user runs them (see fixtures_pipeline.py on timestep_spacing).
    base = StableDiffusionXLPipeline.from_pretrained(BASE)
    ref = StableDiffusionXLImg2ImgPipeline.from_pretrained(folder)
    for p in (base, ref):
        p.set_progress_bar_config(disable=True)
    base_sched, ref_sched = base.scheduler, ref.scheduler
    common = dict(prompt="a photo of an astronaut riding a horse on mars", negative="", seed=42, steps=10, cfg=5.0,
                  width=64, height=64, batch=1, switch=0.8, aesthetic=6.0, negative_aesthetic=2.5)
    cases = [
        dict(common, sampler="Euler"),
        dict(common, sampler="DPM++ 2M", negative="ugly", batch=2, switch=0.7, aesthetic=7.0, negative_aesthetic=2.0),
        dict(common, sampler="Euler a", seed=7, switch=0.6),
        dict(common, sampler="Heun", steps=8, switch=0.5, width=48, height=80),
        dict(common, sampler="DDIM", cfg=1.0, switch=0.75),
    ]
    for n, case in enumerate(cases):
        handoff, latents = run(base, ref, case, base_sched, ref_sched, "latent")
        _, images = run(base, ref, case, base_sched, ref_sched, "np")
        images = torch.from_numpy((images * 255).round().astype(np.uint8))
        save_file({"handoff": handoff.contiguous(), "latents": latents.contiguous(), "images": images.contiguous()},
                  DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))
    print(f"refiner fixtures written to {DIR}")


if __name__ == "__main__":
    main()
