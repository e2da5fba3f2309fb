"""LoRA reference: tiny random LoRAs loaded by diffusers' own `load_lora_weights` (PEFT backend) into the tiny
end-to-end pipelines of fixtures_pipeline.py, and what the networks and the whole pipeline give with them.

Files (all random, rank 4):
  peft_sd1.safetensors   diffusers/PEFT format as diffusers' save_lora_weights writes it (lora_A / lora_B, the
                         adapter config with lora_alpha 8 in the safetensors metadata): UNet attention, proj,
                         feed-forward and resnet layers (linear, 1x1 and 3x3 conv), text encoder attention + MLP.
  kohya_sd1.safetensors  kohya/A1111 format (lora_down / lora_up / alpha, diffusers-layout UNet names as kohya
                         writes them for SD 1.x), different values and alpha per layer.
  kohya_sdxl.safetensors kohya SDXL format: the UNet under the LDM names (input_blocks / middle_block /
                         output_blocks), lora_te1_ / lora_te2_ for the two text encoders.
References, per LoRA file, through diffusers' set_adapters(weight) (UNet and text encoders, which is what A1111's
<lora:name:w> means):
  unet_out / te_hidden / te2_hidden  network outputs for fixed inputs (inputs saved alongside), weight 0.7,
  latents / latents_fused            final latents of a short txt2img run, weight 0.3, the LoRA unmerged (PEFT
                                     forward) and merged by diffusers' fuse_lora.
Writes <outdir>/lora/*.safetensors and <outdir>/lora/cases.json.
"""
import hashlib
import json
import pathlib
import sys

import torch
from diffusers import StableDiffusionPipeline, StableDiffusionXLPipeline
from peft import LoraConfig
from peft.utils import get_peft_model_state_dict
from safetensors.torch import save_file

from fixtures_schedulers import NAMES as SCHEDULERS

# transformers 5.24 asks for peft >= 0.22.0 in its text-encoder adapter integration, but the newest peft on PyPI
# is 0.21.2 (pinned in requirements.txt). diffusers' load_lora_weights goes through that integration for the text
# encoders; peft 0.21.2 does the work itself correctly, only the version gate refuses it.
import transformers.integrations.peft as _tf_peft  # noqa: E402

_tf_peft.check_peft_version = lambda min_version: None

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "lora"
PIPES = OUT / "pipeline"
SCALE = 0.7
RANK = 4
UNET_TARGETS = ["to_q", "to_k", "to_v", "to_out.0", "proj_in", "proj_out", "ff.net.0.proj", "ff.net.2", "conv1",
                "conv2", "conv_shortcut", "time_emb_proj"]
TE_TARGETS = ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"]


def pipeline_dir(name):
    """The tiny end-to-end pipeline of fixtures_pipeline.py (seeded: the same weights whoever builds it first;
    make_fixtures.py runs the scripts in name order, so on a clean clone this one comes first)."""
    d = PIPES / name
    if not (d / "model_index.json").exists():
        import fixtures_pipeline
        build = {"tiny-sd1-e2e": fixtures_pipeline.sd1, "tiny-sdxl-e2e": fixtures_pipeline.sdxl}[name]
        build().save_pretrained(d, safe_serialization=True)
    return d


def randomize(state, seed, scale=0.3):
    g = torch.Generator().manual_seed(seed)
    return {k: (torch.randn(v.shape, generator=g) * scale).to(v.dtype) for k, v in sorted(state.items())}


def peft_file(path):
    """A PEFT LoRA as diffusers' training scripts save it, with random A and B."""
    pipe = StableDiffusionPipeline.from_pretrained(pipeline_dir("tiny-sd1-e2e"))
    ucfg = LoraConfig(r=RANK, lora_alpha=8, target_modules=UNET_TARGETS, init_lora_weights=False)
    tcfg = LoraConfig(r=RANK, lora_alpha=2, target_modules=TE_TARGETS, init_lora_weights=False)
    pipe.unet.add_adapter(ucfg)
    pipe.text_encoder.add_adapter(tcfg)
    unet_sd = randomize(get_peft_model_state_dict(pipe.unet), 11)
    te_sd = randomize(get_peft_model_state_dict(pipe.text_encoder), 12)
    # The configs record where the model was loaded from: not part of the LoRA, and it would make the file
    # depend on the output folder.
    meta = [dict(c.to_dict(), base_model_name_or_path=None) for c in (ucfg, tcfg)]
    StableDiffusionPipeline.save_lora_weights(path.parent, unet_lora_layers=unet_sd, text_encoder_lora_layers=te_sd,
                                              weight_name=path.name, unet_lora_adapter_metadata=meta[0],
                                              text_encoder_lora_adapter_metadata=meta[1])


def kohya_layers(module, prefix, targets, seed, conv_rank_from_kernel=True):
    """lora_down / lora_up / alpha for every target module, under kohya's underscore names."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for name, m in module.named_modules():
        if not any(name.endswith(t) for t in targets) or not isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
            continue
        key = prefix + name.replace(".", "_")
        if isinstance(m, torch.nn.Linear):
            down = torch.randn(RANK, m.in_features, generator=g) * 0.3
            up = torch.randn(m.out_features, RANK, generator=g) * 0.3
        else:
            k = m.kernel_size
            down = torch.randn(RANK, m.in_channels, *k, generator=g) * 0.3
            up = torch.randn(m.out_channels, RANK, 1, 1, generator=g) * 0.3
        sd[key + ".lora_down.weight"] = down
        sd[key + ".lora_up.weight"] = up
        # diffusers 0.42.1 drops per-module alphas of attention layers (its alpha_pattern keys keep the old
        # "processor.to_q_lora" names) and uses the most common alpha instead: attention layers share one
        # alpha (the most common), every other layer has its own, so both paths are checked.
        sd[key + ".alpha"] = torch.tensor(2.0 if "attn" in name else float(1 + len(sd) % 7))
    return sd


def ldm_name(diffusers_name, layers_per_block):
    """diffusers UNet module name -> the LDM (sgm) name kohya uses for SDXL; None for what kohya has not."""
    p = diffusers_name.split(".")
    L = layers_per_block
    resnet = {"conv1": "in_layers.2", "conv2": "out_layers.3", "time_emb_proj": "emb_layers.1",
              "conv_shortcut": "skip_connection"}
    if p[0] == "down_blocks":
        b, kind, i = int(p[1]), p[2], int(p[3])
        if kind == "resnets":
            return f"input_blocks.{1 + b * (L + 1) + i}.0." + resnet[p[4]]
        if kind == "attentions":
            return f"input_blocks.{1 + b * (L + 1) + i}.1." + ".".join(p[4:])
    if p[0] == "up_blocks":
        b, kind, i = int(p[1]), p[2], int(p[3])
        if kind == "resnets":
            return f"output_blocks.{b * (L + 1) + i}.0." + resnet[p[4]]
        if kind == "attentions":
            return f"output_blocks.{b * (L + 1) + i}.1." + ".".join(p[4:])
    if p[0] == "mid_block":
        if p[1] == "attentions":
            return "middle_block.1." + ".".join(p[3:])
        if p[1] == "resnets":
            return f"middle_block.{2 * int(p[2])}." + resnet[p[3]]
    return None


def kohya_sdxl_file(path, pipe):
    unet = kohya_layers(pipe.unet, "", UNET_TARGETS, 21)
    L = pipe.unet.config.layers_per_block
    sd = {}
    for key, v in unet.items():
        name, suffix = key.split(".", 1)
        # back from underscores to the module's dotted name, then to LDM
        dotted = next(n for n, _ in pipe.unet.named_modules() if n.replace(".", "_") == name)
        ldm = ldm_name(dotted, L)
        if ldm is None:
            continue
        sd["lora_unet_" + ldm.replace(".", "_") + "." + suffix] = v
    sd.update(kohya_layers(pipe.text_encoder, "lora_te1_", TE_TARGETS, 22))
    sd.update(kohya_layers(pipe.text_encoder_2, "lora_te2_", TE_TARGETS, 23))
    save_file({k: v.contiguous() for k, v in sd.items()}, path)


def kohya_sd1_file(path, pipe):
    sd = kohya_layers(pipe.unet, "lora_unet_", UNET_TARGETS, 31)
    sd.update(kohya_layers(pipe.text_encoder, "lora_te_", TE_TARGETS, 32))
    save_file({k: v.contiguous() for k, v in sd.items()}, path)


def references(pipe_cls, model, lora, xl):
    pipe = pipe_cls.from_pretrained(pipeline_dir(model))
    pipe.set_progress_bar_config(disable=True)
    cls, opts = SCHEDULERS[CASE["sampler"]]
    pipe.scheduler = cls.from_config(pipe.scheduler.config, **opts)
    pipe.load_lora_weights(DIR / lora, adapter_name="fixture")
    pipe.set_adapters(["fixture"], adapter_weights=[SCALE])
    g = torch.Generator().manual_seed(3)
    cfg = pipe.unet.config
    sample = torch.randn(2, cfg.in_channels, 8, 8, generator=g)
    context = torch.randn(2, 77, cfg.cross_attention_dim, generator=g)
    ids = torch.randint(0, 1000, (1, 77), generator=g)
    out = {"sample": sample, "context": context, "ids": ids}
    with torch.no_grad():
        added = None
        if xl:
            pooled = torch.randn(2, pipe.text_encoder_2.config.projection_dim, generator=g)
            time_ids = torch.tensor([[64.0, 64.0, 0.0, 0.0, 64.0, 64.0]] * 2)
            added = {"text_embeds": pooled, "time_ids": time_ids}
            out.update(pooled=pooled, time_ids=time_ids)
        out["unet_out"] = pipe.unet(sample, 500, context, added_cond_kwargs=added).sample
        out["te_hidden"] = pipe.text_encoder(ids).last_hidden_state
        if xl:
            out["te2_hidden"] = pipe.text_encoder_2(ids, output_hidden_states=True).hidden_states[-2]
        # The whole pipeline at a gentler weight: with CFG 7.5 these random LoRAs make the 4 steps chaotic enough
        # that diffusers' own fused and unfused runs differ by 2.5e-2 at 0.7 (6e-5 at 0.3).
        pipe.set_adapters(["fixture"], adapter_weights=[CASE["pipeline_scale"]])

        def run():
            return pipe(prompt=CASE["prompt_encoded"], num_inference_steps=CASE["steps"], guidance_scale=CASE["cfg"],
                        width=64, height=64, generator=[torch.Generator().manual_seed(CASE["seed"])],
                        output_type="latent").images
        out["latents"] = run()  # LoRA beside the weights (PEFT's unmerged forward): our side path
        pipe.fuse_lora()
        out["latents_fused"] = run()  # merged into the weights: our merge mode
    return out


# A1111: "<lora:name:0.7>" is cut out of the prompt; the text around it is encoded as it stands.
CASE = dict(prompt="a photo of an astronaut <lora:NAME:0.3>riding a horse", steps=4, cfg=7.5, seed=42, sampler="Euler",
            pipeline_scale=0.3,
            prompt_encoded="a photo of an astronaut riding a horse")


def addnet_hash(path):
    """A1111's "Lora hashes" value: SHA-256 of the bytes after the safetensors header, first 12 hex."""
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    return hashlib.sha256(data[8 + n:]).hexdigest()[:12]


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    peft_file(DIR / "peft_sd1.safetensors")
    sd1 = StableDiffusionPipeline.from_pretrained(pipeline_dir("tiny-sd1-e2e"))
    kohya_sd1_file(DIR / "kohya_sd1.safetensors", sd1)
    sdxl = StableDiffusionXLPipeline.from_pretrained(pipeline_dir("tiny-sdxl-e2e"))
    kohya_sdxl_file(DIR / "kohya_sdxl.safetensors", sdxl)
    cases = []
    for lora, model, cls, xl in [("peft_sd1", "tiny-sd1-e2e", StableDiffusionPipeline, False),
                                 ("kohya_sd1", "tiny-sd1-e2e", StableDiffusionPipeline, False),
                                 ("kohya_sdxl", "tiny-sdxl-e2e", StableDiffusionXLPipeline, True)]:
        ref = references(cls, model, lora + ".safetensors", xl)
        save_file({k: v.contiguous() for k, v in ref.items()}, DIR / f"ref_{lora}.safetensors")
        cases.append(dict(CASE, lora=lora, model=model, scale=SCALE, hash=addnet_hash(DIR / f"{lora}.safetensors")))
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
