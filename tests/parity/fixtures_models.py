#!/usr/bin/env python3
"""Tiny random-weight SD 1.x / SD 2.x / SDXL models as diffusers folders and as LDM single files.

Usage: fixtures_models.py <outdir>   → <outdir>/models/{tiny-sd1,tiny-sd1-deep,tiny-sd2,tiny-sdxl,tiny-sdxl-refiner}/ (diffusers folders),
<outdir>/models/tiny-*.safetensors (original LDM / A1111 layout) and <outdir>/models/tiny-sd1-sharded/.

Configs come from diffusers' own fast tests (tests/pipelines/stable_diffusion*/test_*.py,
get_dummy_components). The single files are written by our own diffusers→LDM inverse mapping and then
read back with diffusers' single-file loader; the script fails unless every tensor comes back equal.
Nothing is downloaded: the tokenizer is built from the bundled OpenAI BPE vocabulary.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import gzip  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer  # noqa: E402

import diffusers  # noqa: E402
from diffusers import (  # noqa: E402
    AutoencoderKL,
    DDIMScheduler,
    EulerDiscreteScheduler,
    PNDMScheduler,
    StableDiffusionPipeline,
    StableDiffusionXLImg2ImgPipeline,
    StableDiffusionXLPipeline,
    UNet2DConditionModel,
)
from diffusers.loaders import single_file_utils as sfu  # noqa: E402

VOCAB = Path(__file__).resolve().parents[2] / "resources/clip/bpe_simple_vocab_16e6.txt.gz"  # the shipped copy


# ---------------------------------------------------------------- tokenizer (CLIP simple_tokenizer.py rules)
from fixtures_tokenizer import bytes_to_unicode  # noqa: E402  (one copy of CLIP's byte table)


def write_bpe_files(folder: Path):
    """vocab.json + merges.txt exactly as CLIP's SimpleTokenizer builds its vocabulary from the gzip file."""
    merges = gzip.open(VOCAB).read().decode("utf-8").split("\n")[1 : 49152 - 256 - 2 + 1]
    merges = [tuple(m.split()) for m in merges]
    vocab = list(bytes_to_unicode().values())
    vocab += [v + "</w>" for v in vocab]
    vocab += ["".join(m) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}, ensure_ascii=False))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n")


def tokenizer(bpe: Path, pad_token: str):
    tok = CLIPTokenizer(str(bpe / "vocab.json"), str(bpe / "merges.txt"), pad_token=pad_token, model_max_length=77)
    assert tok("a photo of a cat").input_ids == [49406, 320, 1125, 539, 320, 2368, 49407], "tokenizer differs from CLIP"
    return tok


# ---------------------------------------------------------------- models (diffusers fast-test configs)
def perturb(*models):
    """Adds seeded noise to every parameter so that no two tensors are equal by accident (LayerNorm ones,
    zero biases): a swapped mapping then shows up as a mismatch."""
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for m in models:
            for _, p in sorted(m.named_parameters()):
                p.add_(torch.randn(p.shape, generator=g) * 0.02)


def tiny_vae(sample_size):
    torch.manual_seed(0)
    return AutoencoderKL(
        block_out_channels=[32, 64],
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
        latent_channels=4,
        sample_size=sample_size,
    )


def clip_config(**sd2):
    return CLIPTextConfig(
        bos_token_id=0, eos_token_id=2, hidden_size=32, intermediate_size=37, layer_norm_eps=1e-05,
        num_attention_heads=4, num_hidden_layers=5, pad_token_id=1, vocab_size=1000, **sd2,
    )


def build_sd1(tok):
    # tests/pipelines/stable_diffusion/test_stable_diffusion.py
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=2, sample_size=32, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
    )
    scheduler = PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True,
                              steps_offset=1, set_alpha_to_one=False)
    vae = tiny_vae(32)
    torch.manual_seed(0)
    te = CLIPTextModel(clip_config())
    perturb(unet, vae, te)
    return StableDiffusionPipeline(unet=unet, vae=vae, text_encoder=te, tokenizer=tok, scheduler=scheduler,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)


def build_sd1_deep(tok):
    """Not a diffusers test config: SD 1.5's block order (attention first, plain last level), so the upsampler
    of an attention-less up block sits at output_blocks.N.1.conv; 3 levels, layers_per_block 1, 3-level VAE."""
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64, 64), layers_per_block=1, sample_size=32, in_channels=4, out_channels=4,
        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
    )
    scheduler = PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True,
                              steps_offset=1, set_alpha_to_one=False)
    torch.manual_seed(0)
    vae = AutoencoderKL(block_out_channels=[32, 64, 64], layers_per_block=2, latent_channels=4, sample_size=64,
                        down_block_types=["DownEncoderBlock2D"] * 3, up_block_types=["UpDecoderBlock2D"] * 3)
    torch.manual_seed(0)
    te = CLIPTextModel(clip_config())
    perturb(unet, vae, te)
    return StableDiffusionPipeline(unet=unet, vae=vae, text_encoder=te, tokenizer=tok, scheduler=scheduler,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)


def build_sd2(tok):
    # tests/pipelines/stable_diffusion_2/test_stable_diffusion_v_pred.py
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=2, sample_size=32, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, attention_head_dim=(2, 4), use_linear_projection=True,
    )
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False, steps_offset=1, prediction_type="v_prediction")
    vae = tiny_vae(128)
    torch.manual_seed(0)
    te = CLIPTextModel(clip_config(hidden_act="gelu", projection_dim=512))
    perturb(unet, vae, te)
    return StableDiffusionPipeline(unet=unet, vae=vae, text_encoder=te, tokenizer=tok, scheduler=scheduler,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)


def build_sdxl(tok, tok2):
    # tests/pipelines/stable_diffusion_xl/test_stable_diffusion_xl.py (the (32, 64) variant of the config)
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=2, sample_size=32, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4), use_linear_projection=True, addition_embed_type="text_time",
        addition_time_embed_dim=8, transformer_layers_per_block=(1, 2), projection_class_embeddings_input_dim=80,
        cross_attention_dim=64,
    )
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, steps_offset=1,
                                       beta_schedule="scaled_linear", timestep_spacing="leading")
    vae = tiny_vae(128)
    torch.manual_seed(0)
    cfg = clip_config(hidden_act="gelu", projection_dim=32)
    te = CLIPTextModel(cfg)
    te2 = CLIPTextModelWithProjection(cfg)
    perturb(unet, vae, te, te2)
    return StableDiffusionXLPipeline(unet=unet, vae=vae, text_encoder=te, text_encoder_2=te2, tokenizer=tok,
                                     tokenizer_2=tok2, scheduler=scheduler)


def build_sdxl_refiner(tok2):
    # tests/pipelines/stable_diffusion_xl/test_stable_diffusion_xl_img2img.py, skip_first_text_encoder=True
    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(32, 64), layers_per_block=2, sample_size=32, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=(2, 4), use_linear_projection=True, addition_embed_type="text_time",
        addition_time_embed_dim=8, transformer_layers_per_block=(1, 2), projection_class_embeddings_input_dim=72,
        cross_attention_dim=32,
    )
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, steps_offset=1,
                                       beta_schedule="scaled_linear", timestep_spacing="leading")
    vae = tiny_vae(128)
    torch.manual_seed(0)
    te2 = CLIPTextModelWithProjection(clip_config(hidden_act="gelu", projection_dim=32))
    perturb(unet, vae, te2)
    return StableDiffusionXLImg2ImgPipeline(unet=unet, vae=vae, text_encoder=None, text_encoder_2=te2, tokenizer=None,
                                            tokenizer_2=tok2, scheduler=scheduler, requires_aesthetics_score=True,
                                            force_zeros_for_empty_prompt=False)


# ---------------------------------------------------------------- diffusers → LDM (inverse of sd_reference.md §4)
RESNET_TO_LDM = [("norm1", "in_layers.0"), ("conv1", "in_layers.2"), ("time_emb_proj", "emb_layers.1"),
                 ("norm2", "out_layers.0"), ("conv2", "out_layers.3"), ("conv_shortcut", "skip_connection")]
UNET_FIXED = {"time_embedding.linear_1": "time_embed.0", "time_embedding.linear_2": "time_embed.2",
              "conv_in": "input_blocks.0.0", "conv_norm_out": "out.0", "conv_out": "out.2",
              "add_embedding.linear_1": "label_emb.0.0", "add_embedding.linear_2": "label_emb.0.2"}


def rename_head(rest, table):
    for new, old in table:
        if rest.startswith(new + "."):
            return old + rest[len(new):]
    return rest


def unet_key_to_ldm(key, L, up_has_attn):
    for new, old in UNET_FIXED.items():
        if key.startswith(new + "."):
            return old + key[len(new):]
    p = key.split(".")
    if p[0] == "mid_block":
        slot = {"resnets.0": 0, "attentions.0": 1, "resnets.1": 2}[f"{p[1]}.{p[2]}"]
        rest = ".".join(p[3:])
        return f"middle_block.{slot}." + (rest if slot == 1 else rename_head(rest, RESNET_TO_LDM))
    b, kind, r, rest = int(p[1]), p[2], int(p[3]), ".".join(p[4:])
    if p[0] == "down_blocks":
        if kind == "downsamplers":
            return f"input_blocks.{1 + b * (L + 1) + L}.0.op." + rest[len("conv."):]
        i = 1 + b * (L + 1) + r
        return f"input_blocks.{i}.0." + rename_head(rest, RESNET_TO_LDM) if kind == "resnets" else f"input_blocks.{i}.1.{rest}"
    if kind == "upsamplers":
        return f"output_blocks.{b * (L + 1) + L}.{2 if up_has_attn[b] else 1}.conv." + rest[len("conv."):]
    i = b * (L + 1) + r
    return f"output_blocks.{i}.0." + rename_head(rest, RESNET_TO_LDM) if kind == "resnets" else f"output_blocks.{i}.1.{rest}"


def unet_to_ldm(sd, config):
    up_has_attn = [t.startswith("CrossAttn") for t in config.up_block_types]
    return {"model.diffusion_model." + unet_key_to_ldm(k, config.layers_per_block, up_has_attn): v for k, v in sd.items()}


VAE_ATTN_TO_LDM = [("group_norm", "norm"), ("to_q", "q"), ("to_k", "k"), ("to_v", "v"), ("to_out.0", "proj_out")]


def vae_key_to_ldm(key, levels):
    side, p = key.split(".")[0], key.split(".")[1:]
    rest = ".".join(p)
    if p[0] in ("down_blocks", "up_blocks"):
        i = int(p[1]) if side == "encoder" else levels - 1 - int(p[1])
        tail = ".".join(p[4:])
        if p[2] == "resnets":
            tail = tail.replace("conv_shortcut", "nin_shortcut")
            return f"{side}.{'down' if side == 'encoder' else 'up'}.{i}.block.{p[3]}.{tail}"
        sampler = "downsample" if side == "encoder" else "upsample"
        return f"{side}.{'down' if side == 'encoder' else 'up'}.{i}.{sampler}.{tail}"
    if p[0] == "mid_block":
        tail = ".".join(p[3:])
        if p[1] == "resnets":
            return f"{side}.mid.block_{int(p[2]) + 1}.{tail.replace('conv_shortcut', 'nin_shortcut')}"
        return f"{side}.mid.attn_1." + rename_head(tail, VAE_ATTN_TO_LDM)
    return f"{side}." + rest.replace("conv_norm_out", "norm_out") if side in ("encoder", "decoder") else key


def vae_to_ldm(sd, config, prefix):
    out = {}
    for k, v in sd.items():
        name = vae_key_to_ldm(k, len(config.block_out_channels))
        if ".mid.attn_1." in name and name.endswith("weight") and v.ndim == 2:
            v = v[:, :, None, None]  # LDM's attention uses 1×1 convolutions
        out[prefix + name] = v
    return out


def clip_to_ldm(sd, prefix):
    # transformers ≥ 5.6 saves CLIPTextModel without the "text_model." level; LDM files always have it.
    return {prefix + (k if k.startswith("text_model.") else "text_model." + k): v for k, v in sd.items()}


OPEN_CLIP_LAYER = [("layer_norm1", "ln_1"), ("layer_norm2", "ln_2"), ("mlp.fc1", "mlp.c_fc"),
                   ("mlp.fc2", "mlp.c_proj"), ("self_attn.out_proj", "attn.out_proj")]
OPEN_CLIP_FIXED = {"embeddings.token_embedding.weight": "token_embedding.weight",
                   "embeddings.position_embedding.weight": "positional_embedding",
                   "final_layer_norm.weight": "ln_final.weight", "final_layer_norm.bias": "ln_final.bias"}


def open_clip_to_ldm(sd, prefix):
    sd = {k.removeprefix("text_model."): v for k, v in sd.items()}
    out = {}
    for k, v in sd.items():
        if k in OPEN_CLIP_FIXED:
            out[prefix + OPEN_CLIP_FIXED[k]] = v
        elif k == "text_projection.weight":
            out[prefix + "text_projection"] = v.T  # OpenCLIP computes x @ P
        elif k.startswith("encoder.layers."):
            n, rest = k.split(".")[2], ".".join(k.split(".")[3:])
            if rest.startswith(("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")):
                continue
            out[f"{prefix}transformer.resblocks.{n}.{rename_head(rest, OPEN_CLIP_LAYER)}"] = v
        else:
            raise SystemExit(f"open_clip_to_ldm: unexpected key {k}")
    layers = {k.split(".")[2] for k in sd if k.startswith("encoder.layers.")}
    for n in layers:
        for kind in ("weight", "bias"):
            qkv = [sd[f"encoder.layers.{n}.self_attn.{x}_proj.{kind}"] for x in "qkv"]
            out[f"{prefix}transformer.resblocks.{n}.attn.in_proj_{kind}"] = torch.cat(qkv, 0)
    return out


# ---------------------------------------------------------------- single files
def extra_openclip_block(te, prefix, index):
    """SD2's OpenCLIP ViT-H has one more resblock than diffusers keeps (SD2 reads the penultimate layer)."""
    g = torch.Generator().manual_seed(99)
    w = te.config.hidden_size
    ff = te.config.intermediate_size
    shapes = {"ln_1.weight": [w], "ln_1.bias": [w], "ln_2.weight": [w], "ln_2.bias": [w],
              "attn.in_proj_weight": [3 * w, w], "attn.in_proj_bias": [3 * w],
              "attn.out_proj.weight": [w, w], "attn.out_proj.bias": [w],
              "mlp.c_fc.weight": [ff, w], "mlp.c_fc.bias": [ff], "mlp.c_proj.weight": [w, ff], "mlp.c_proj.bias": [w]}
    return {f"{prefix}transformer.resblocks.{index}.{k}": torch.randn(s, generator=g) for k, s in shapes.items()}


def ldm_state_dict(family, pipe):
    sd = unet_to_ldm(pipe.unet.state_dict(), pipe.unet.config)
    sd.update(vae_to_ldm(pipe.vae.state_dict(), pipe.vae.config, "first_stage_model."))
    # Buffers of the original LatentDiffusion object, present in real checkpoints and to be ignored.
    sd["alphas_cumprod"] = torch.linspace(0.999, 0.005, 1000)
    sd["model_ema.num_updates"] = torch.tensor(0, dtype=torch.int32)
    te = pipe.text_encoder
    if family == "sd1-deep":
        family = "sd1"
    if family == "sdxl-refiner":
        prefix = "conditioner.embedders.0.model."
        sd.update(open_clip_to_ldm(pipe.text_encoder_2.state_dict(), prefix))
        sd[prefix + "logit_scale"] = torch.tensor(4.6052)
    elif family == "sd1":
        sd.update(clip_to_ldm(te.state_dict(), "cond_stage_model.transformer."))
        sd["cond_stage_model.transformer.text_model.embeddings.position_ids"] = torch.arange(77)[None]
    elif family == "sd2":
        prefix = "cond_stage_model.model."
        sd.update(open_clip_to_ldm(te.state_dict(), prefix))
        sd.update(extra_openclip_block(te, prefix, te.config.num_hidden_layers))
        g = torch.Generator().manual_seed(7)
        sd[prefix + "text_projection"] = torch.randn(te.config.hidden_size, 24, generator=g)
        sd[prefix + "logit_scale"] = torch.tensor(4.6052)
    else:
        sd.update(clip_to_ldm(te.state_dict(), "conditioner.embedders.0.transformer."))
        prefix = "conditioner.embedders.1.model."
        sd.update(open_clip_to_ldm(pipe.text_encoder_2.state_dict(), prefix))
        sd[prefix + "logit_scale"] = torch.tensor(4.6052)
    return {k: v.contiguous() for k, v in sd.items()}


# ---------------------------------------------------------------- check with diffusers' own single-file loader
def folder_tensors(folder: Path, sub):
    name = "model.safetensors" if sub.startswith("text_encoder") else "diffusion_pytorch_model.safetensors"
    return load_file(folder / sub / name)


def assert_same(label, got, want):
    got = {k: v for k, v in got.items() if not k.endswith("position_ids")}
    if set(got) != set(want):
        raise SystemExit(f"{label}: names differ: only single file {sorted(set(got) - set(want))[:5]}, "
                         f"only folder {sorted(set(want) - set(got))[:5]}")
    bad = [k for k in want if not torch.equal(got[k].to(want[k].dtype), want[k])]
    if bad:
        raise SystemExit(f"{label}: {len(bad)} tensors differ, e.g. {bad[:5]}")
    print(f"  {label}: {len(want)} tensors equal")


def check_with_diffusers(family, single: Path, folder: Path):
    kw = dict(config=str(folder), local_files_only=True)
    unet = UNet2DConditionModel.from_single_file(str(single), subfolder="unet", **kw)
    assert_same(f"{family} unet", unet.state_dict(), folder_tensors(folder, "unet"))
    vae = AutoencoderKL.from_single_file(str(single), subfolder="vae", **kw)
    assert_same(f"{family} vae", vae.state_dict(), folder_tensors(folder, "vae"))
    ckpt = load_file(single)
    if family == "sdxl-refiner":
        te2 = sfu.create_diffusers_clip_model_from_ldm(CLIPTextModelWithProjection, ckpt, subfolder="text_encoder_2",
                                                       **kw)
        assert_same(f"{family} text_encoder_2", te2.state_dict(), folder_tensors(folder, "text_encoder_2"))
        return
    te = sfu.create_diffusers_clip_model_from_ldm(CLIPTextModel, ckpt, subfolder="text_encoder", **kw)
    assert_same(f"{family} text_encoder", te.state_dict(), folder_tensors(folder, "text_encoder"))
    if family == "sdxl":
        # create_diffusers_clip_model_from_ldm picks the converter by key presence *and* width: it takes the
        # HF-named CLIP-L branch whenever conditioner.embedders.0's width equals the model's. In diffusers'
        # tiny SDXL both encoders are 32 wide, so for text_encoder_2 it would convert CLIP-L. We therefore call
        # the same converter diffusers uses for bigG (convert_open_clip_checkpoint) directly.
        te2 = CLIPTextModelWithProjection.from_pretrained(str(folder), subfolder="text_encoder_2",
                                                          local_files_only=True)
        sd = sfu.convert_open_clip_checkpoint(te2, ckpt, prefix="conditioner.embedders.1.model.")
        assert_same(f"{family} text_encoder_2", sd, folder_tensors(folder, "text_encoder_2"))


def make_family(family, pipe, models: Path):
    folder = models / f"tiny-{family}"
    if folder.exists():
        shutil.rmtree(folder)
    pipe.save_pretrained(folder, safe_serialization=True)
    single = models / f"tiny-{family}.safetensors"
    save_file(ldm_state_dict(family, pipe), single, metadata={"format": "pt"})
    # For SD2 diffusers drops exactly `resblocks.23` (ViT-H has 24 blocks) and silently skips keys the
    # model lacks, so the extra tiny block (index 5) is ignored too; our loader drops the last block by count.
    check_with_diffusers(family, single, folder)
    for sub in ("tokenizer", "tokenizer_2"):
        if (folder / sub).is_dir():  # transformers 5 writes only tokenizer.json; Hub folders also carry these
            for name in ("vocab.json", "merges.txt"):
                shutil.copy(models / "_bpe" / name, folder / sub / name)


def make_sharded(models: Path):
    src, dst = models / "tiny-sd1", models / "tiny-sd1-sharded"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    (dst / "unet/diffusion_pytorch_model.safetensors").unlink()
    unet = UNet2DConditionModel.from_pretrained(str(src), subfolder="unet")
    unet.save_pretrained(dst / "unet", max_shard_size="1MB", safe_serialization=True)
    index = json.loads((dst / "unet/diffusion_pytorch_model.safetensors.index.json").read_text())
    shards = set(index["weight_map"].values())
    assert len(shards) > 1, "unet did not shard"
    merged = {}
    for s in shards:
        merged.update(load_file(dst / "unet" / s))
    assert_same("sd1 sharded unet", merged, folder_tensors(src, "unet"))


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: fixtures_models.py <outdir>")
    models = Path(sys.argv[1]) / "models"
    models.mkdir(parents=True, exist_ok=True)
    print(f"diffusers {diffusers.__version__}, torch {torch.__version__}")
    write_bpe_files(models / "_bpe")
    tok = tokenizer(models / "_bpe", "<|endoftext|>")
    tok_g = tokenizer(models / "_bpe", "!")
    make_family("sd1", build_sd1(tok), models)
    make_family("sd1-deep", build_sd1_deep(tok), models)
    make_family("sd2", build_sd2(tok_g), models)
    make_family("sdxl", build_sdxl(tok, tok_g), models)
    make_family("sdxl-refiner", build_sdxl_refiner(tok_g), models)
    make_sharded(models)
    shutil.rmtree(models / "_bpe")
    print(f"fixtures written to {models}")


if __name__ == "__main__":
    main()
