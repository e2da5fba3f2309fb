"""ControlNet reference: tiny ControlNets made by diffusers' own ControlNetModel.from_unet from the tiny end-to-end
UNets of fixtures_pipeline.py, every weight then drawn at random (from_unet zero-initialises the output convs, so
an untrained ControlNet would add nothing and prove nothing), and what diffusers computes with them.

Files (<outdir>/controlnet/):
  cn-sd1-a, cn-sd1-b, cn-sdxl   diffusers folders (config.json + diffusion_pytorch_model.safetensors); the SD 1.x
                                ones use conditioning_embedding_out_channels (8, 16): one stride-2 conv, as the tiny
                                VAE downsamples by 2 (the real (16, 32, 96, 256) downsamples by 8).
  residuals_<name>.safetensors  ControlNetModel.forward for fixed inputs (saved alongside): down_<i> and mid, with
                                conditioning_scale 0.8.
  case_<n>.safetensors          final latents of a short run of StableDiffusion(XL)ControlNetPipeline or
                                StableDiffusionControlNetImg2ImgPipeline (CPU generator per image, seed + i), the
                                control images it got and the init image (uint8 HWC).
  cases.json                    the runs: prompt, sampler, controlnets with weight and guidance start/end.
  ldm/cn-sd1-a.safetensors,     the same ControlNets as original (LDM) single files, as sd-webui-controlnet loads
  ldm/cn-sdxl.safetensors       them: control_model.* (input_hint_block, zero_convs, middle_block_out, the UNet
                                encoder's LDM names), no config.json.
"""
import json
import pathlib
import sys

import numpy as np
import torch
from diffusers import (ControlNetModel, StableDiffusionControlNetImg2ImgPipeline, StableDiffusionControlNetPipeline,
                       StableDiffusionPipeline, StableDiffusionXLControlNetPipeline, StableDiffusionXLPipeline)
from PIL import Image
from safetensors.torch import save_file

from fixtures_models import unet_key_to_ldm
from fixtures_schedulers import NAMES as SCHEDULERS

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "controlnet"
PIPES = OUT / "pipeline"


def pipeline_dir(name):
    """The tiny end-to-end pipeline of fixtures_pipeline.py (seeded: the same weights whoever builds it first)."""
    d = PIPES / name
    if not (d / "model_index.json").exists():
        import fixtures_pipeline
        build = {"tiny-sd1-e2e": fixtures_pipeline.sd1, "tiny-sdxl-e2e": fixtures_pipeline.sdxl}[name]
        build().save_pretrained(d, safe_serialization=True)
    return d


def controlnet(unet, seed):
    cn = ControlNetModel.from_unet(unet, conditioning_embedding_out_channels=(8, 16))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(cn.named_parameters()):
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return cn


def residual_reference(cn, name, xl, seed):
    g = torch.Generator().manual_seed(seed)
    cfg = cn.config
    sample = torch.randn(2, cfg.in_channels, 8, 8, generator=g)
    context = torch.randn(2, 77, cfg.cross_attention_dim, generator=g)
    cond = torch.rand(2, 3, 16, 16, generator=g)
    added = None
    tensors = {"sample": sample, "context": context, "cond": cond}
    if xl:
        text_embeds = torch.randn(2, 32, generator=g)
        time_ids = torch.tensor([[64.0, 64, 0, 0, 64, 64]] * 2)
        added = {"text_embeds": text_embeds, "time_ids": time_ids}
        tensors.update(text_embeds=text_embeds, time_ids=time_ids)
    with torch.no_grad():
        down, mid = cn(sample, 500, encoder_hidden_states=context, controlnet_cond=cond, conditioning_scale=0.8,
                       added_cond_kwargs=added, return_dict=False)
    for i, d in enumerate(down):
        tensors[f"down_{i}"] = d
    tensors["mid"] = mid
    save_file({k: v.contiguous() for k, v in tensors.items()}, DIR / f"residuals_{name}.safetensors")


def ldm_file(cn, path):
    """diffusers names → the original layout (the inverse of what core/io/controlnet_ldm.cpp reads)."""
    hint_convs = 2 + len(cn.controlnet_cond_embedding.blocks)
    out = {}
    for k, v in cn.state_dict().items():
        p = k.split(".")
        if p[0] == "controlnet_cond_embedding":
            k2 = 0 if p[1] == "conv_in" else 2 * (hint_convs - 1) if p[1] == "conv_out" else 2 * (int(p[2]) + 1)
            rest = ".".join(p[3:] if p[1] == "blocks" else p[2:])
            name = f"input_hint_block.{k2}.{rest}"
        elif p[0] == "controlnet_down_blocks":
            name = f"zero_convs.{p[1]}.0.{'.'.join(p[2:])}"
        elif p[0] == "controlnet_mid_block":
            name = f"middle_block_out.0.{'.'.join(p[1:])}"
        else:
            name = unet_key_to_ldm(k, cn.config.layers_per_block, [])
        out["control_model." + name] = v.contiguous()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(out, path)


def control_image(seed, size=64):
    """Blocky shapes rather than pixel noise: closer to an edge map, and still exercises every weight."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, size=(size // 8, size // 8, 3), dtype=np.uint8)
    return np.kron(img, np.ones((8, 8, 1), dtype=np.uint8))


def run(pipe, case, base_scheduler, images, init=None):
    cls, opts = SCHEDULERS[case["sampler"]]
    pipe.scheduler = cls.from_config(base_scheduler.config, **opts)
    gens = [torch.Generator().manual_seed(case["seed"] + i) for i in range(case["batch"])]
    nets = case["controlnets"]
    pil = [Image.fromarray(i) for i in images]
    one = len(nets) == 1
    # img2img: the init image is `image`, the control image `control_image`.
    images_kw = dict(image=pil[0] if one else pil) if init is None else dict(
        image=Image.fromarray(init), control_image=pil[0] if one else pil, strength=case["strength"])
    return pipe(prompt=case["prompt"], negative_prompt=case["negative"] or None, num_inference_steps=case["steps"],
                guidance_scale=case["cfg"], generator=gens, num_images_per_prompt=case["batch"],
                height=case["height"], width=case["width"], **images_kw,
                controlnet_conditioning_scale=nets[0]["weight"] if one else [n["weight"] for n in nets],
                control_guidance_start=[n["start"] for n in nets], control_guidance_end=[n["end"] for n in nets],
                output_type="latent").images


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    sd1 = StableDiffusionPipeline.from_pretrained(pipeline_dir("tiny-sd1-e2e"))
    sdxl = StableDiffusionXLPipeline.from_pretrained(pipeline_dir("tiny-sdxl-e2e"))
    built = {"cn-sd1-a": (sd1, 21, False), "cn-sd1-b": (sd1, 22, False), "cn-sdxl": (sdxl, 23, True)}
    nets = {}
    for name, (pipe, seed, xl) in built.items():
        controlnet(pipe.unet, seed).save_pretrained(DIR / name, safe_serialization=True)
        nets[name] = ControlNetModel.from_pretrained(DIR / name)  # what a user loads
        residual_reference(nets[name], name, xl, seed + 100)
        if name != "cn-sd1-b":
            ldm_file(nets[name], DIR / "ldm" / f"{name}.safetensors")

    base = dict(prompt="a photo of an astronaut riding a horse on mars", negative="", seed=42, steps=6, cfg=7.5,
                width=64, height=64, batch=1)
    cases = [
        dict(base, model="tiny-sd1-e2e", sampler="Euler", controlnets=[dict(name="cn-sd1-a", weight=0.8, start=0.0, end=1.0)]),
        dict(base, model="tiny-sd1-e2e", sampler="Euler a", batch=2, negative="blurry",
             controlnets=[dict(name="cn-sd1-a", weight=0.6, start=0.0, end=0.5),
                          dict(name="cn-sd1-b", weight=1.2, start=0.2, end=1.0)]),
        dict(base, model="tiny-sd1-e2e", sampler="DPM++ 2M Karras", cfg=1.0,
             controlnets=[dict(name="cn-sd1-b", weight=1.0, start=0.0, end=1.0)]),
        dict(base, model="tiny-sdxl-e2e", sampler="Euler", cfg=5.0,
             controlnets=[dict(name="cn-sdxl", weight=0.7, start=0.0, end=0.8)]),
        dict(base, model="tiny-sd1-e2e", sampler="Euler a", steps=10, img2img=True, strength=0.6,
             controlnets=[dict(name="cn-sd1-a", weight=0.9, start=0.1, end=0.9)]),
    ]
    for n, case in enumerate(cases):
        base_pipe = sdxl if case["model"] == "tiny-sdxl-e2e" else sd1
        cls = (StableDiffusionXLControlNetPipeline if case["model"] == "tiny-sdxl-e2e" else
               StableDiffusionControlNetImg2ImgPipeline if case.get("img2img") else StableDiffusionControlNetPipeline)
        used = [nets[c["name"]] for c in case["controlnets"]]
        pipe = cls(**base_pipe.components, controlnet=used[0] if len(used) == 1 else used)
        pipe.set_progress_bar_config(disable=True)
        images = [control_image(100 + n + k, case["width"]) for k in range(len(used))]
        init = control_image(200 + n, case["width"]) if case.get("img2img") else None
        latents = run(pipe, case, base_pipe.scheduler, images, init)
        tensors = {"latents": latents.contiguous()}
        if init is not None:
            tensors["init"] = torch.from_numpy(init).contiguous()
        for k, img in enumerate(images):
            tensors[f"control_{k}"] = torch.from_numpy(img).contiguous()
        save_file(tensors, DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
