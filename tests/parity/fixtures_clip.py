#!/usr/bin/env python3
"""CLIP text-encoder and encode_prompt references for tests/core/test_clip_text.cpp.

Usage: fixtures_clip.py <outdir>   (after fixtures_models.py wrote <outdir>/models/tiny-*)

Writes under <outdir>/clip/:
  tiny-sd1.safetensors, tiny-sd2.safetensors, tiny-sdxl-1.safetensors, tiny-sdxl-2.safetensors
      outputs of the tiny text encoders in models/tiny-*/text_encoder{,_2}: ids, last_hidden_state,
      hidden_states.<i> (every entry), pooler_output, text_embeds (projection model only)
  clip-l/{config.json,model.safetensors} + clip-l.safetensors
      a full-size random-weight OpenAI CLIP ViT-L/14 text tower (with projection) and its outputs
  encode/<family>/text_encoder{,_2}/ + encode-<family>.safetensors
      the pipelines' encode_prompt outputs (sd1, sd2, sdxl). The tiny fixture encoders have a 1000-token
      vocabulary, too small for the real tokenizer, so these use encoders of the same tiny configs with the
      full 49408-token vocabulary, swapped into the tiny pipelines.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import sys  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection  # noqa: E402

from diffusers import StableDiffusionPipeline, StableDiffusionXLPipeline  # noqa: E402

PROMPTS = ["a photo of an astronaut riding a horse on mars", "hello,world!!", "",
           "masterpiece, best quality, " * 12 + "a very long prompt that is cut at seventy five tokens"]
NEGATIVES = ["blurry, low quality", "", "ugly", "bad anatomy"]


def perturb(model, seed):
    """Seeded noise on every parameter, so LayerNorm ones and zero biases differ from their defaults."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.add_(torch.randn(p.shape, generator=g) * 0.02)


def tiny_ids():
    """Ids < 1000 for the tiny encoders (legacy eos_token_id 2 → pooled at argmax). 999 stands in for EOS,
    998 for BOS; rows cover both pad styles (pad = EOS, pad = 0), an empty prompt, a full row, and an EOS
    followed by more text (argmax must take the first occurrence)."""
    g = torch.Generator().manual_seed(5)
    rows = []
    for length, pad in [(6, 999), (0, 0), (75, 0), (20, 0), (12, 999), (3, 0)]:
        content = torch.randint(1, 998, (length,), generator=g).tolist()
        row = [998] + content + [999]
        rows.append(row + [pad] * (77 - len(row)))
    rows[5][30] = 999
    rows[5][31:40] = torch.randint(1, 998, (9,), generator=g).tolist()
    return torch.tensor(rows, dtype=torch.long)


def run_encoder(model, ids):
    with torch.no_grad():
        if isinstance(model, CLIPTextModelWithProjection):
            out = model(input_ids=ids, output_hidden_states=True)
            pooled = model.text_model(input_ids=ids).pooler_output
        else:
            out = model(input_ids=ids, output_hidden_states=True)
            pooled = out.pooler_output
    t = {"ids": ids, "last_hidden_state": out.last_hidden_state, "pooler_output": pooled}
    for i, h in enumerate(out.hidden_states):
        t[f"hidden_states.{i}"] = h
    if isinstance(model, CLIPTextModelWithProjection):
        t["text_embeds"] = out.text_embeds
    return {k: v.contiguous() for k, v in t.items()}


def tiny_encoders(models: Path, out: Path):
    ids = tiny_ids()
    for name, sub, cls in [("tiny-sd1", "text_encoder", CLIPTextModel), ("tiny-sd2", "text_encoder", CLIPTextModel),
                           ("tiny-sdxl-1", "text_encoder", CLIPTextModel),
                           ("tiny-sdxl-2", "text_encoder_2", CLIPTextModelWithProjection)]:
        folder = models / name.removesuffix("-1").removesuffix("-2") / sub
        model = cls.from_pretrained(str(folder), local_files_only=True).eval()
        save_file(run_encoder(model, ids), out / f"{name}.safetensors")
        print(f"  {name}: {model.config.hidden_act}, eos_token_id {model.config.eos_token_id}")


def real_ids(models: Path):
    """Rows from the real BPE tokenizer with both pad styles (SD1/SDXL `tokenizer` pads 49407, SD2/SDXL
    `tokenizer_2` pads 0), including an empty prompt and a truncated one."""
    pipe = StableDiffusionXLPipeline.from_pretrained(str(models / "tiny-sdxl"), local_files_only=True)
    a = pipe.tokenizer(PROMPTS[:2], padding="max_length", max_length=77, truncation=True, return_tensors="pt").input_ids
    b = pipe.tokenizer_2(PROMPTS[2:], padding="max_length", max_length=77, truncation=True, return_tensors="pt").input_ids
    return torch.cat([a, b])


def clip_l(models: Path, out: Path):
    # OpenAI ViT-L/14 text tower (sd_reference.md §2.4). eos_token_id 49407 exercises transformers'
    # first-EOS pooling branch; the tiny configs (eos_token_id 2) exercise the legacy argmax branch.
    cfg = CLIPTextConfig(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                         num_attention_heads=12, max_position_embeddings=77, hidden_act="quick_gelu",
                         layer_norm_eps=1e-5, projection_dim=768, bos_token_id=49406, eos_token_id=49407, pad_token_id=1)
    torch.manual_seed(0)
    model = CLIPTextModelWithProjection(cfg).eval()
    perturb(model, 11)
    model.save_pretrained(out / "clip-l", safe_serialization=True)
    save_file(run_encoder(model, real_ids(models)), out / "clip-l.safetensors")
    print("  clip-l: 12 layers, 768 wide")


def full_vocab(folder: Path, cls, seed):
    cfg = cls.config_class.from_pretrained(str(folder), local_files_only=True)
    cfg.vocab_size = 49408
    torch.manual_seed(seed)
    model = cls(cfg).eval()
    perturb(model, seed)
    return model


def tokens(tok, texts):
    return tok(texts, padding="max_length", max_length=77, truncation=True, return_tensors="pt").input_ids


def encode_sd(family, models: Path, out: Path):
    pipe = StableDiffusionPipeline.from_pretrained(str(models / f"tiny-{family}"), local_files_only=True)
    te = full_vocab(models / f"tiny-{family}" / "text_encoder", CLIPTextModel, 21)
    te.save_pretrained(out / "encode" / family / "text_encoder", safe_serialization=True)
    # diffusers 0.42 reads self.text_encoder.text_model.final_layer_norm for clip_skip, but transformers
    # >= 5.6 CLIPTextModel has no text_model level; give it the same LayerNorm under the old path.
    object.__setattr__(te, "text_model", types.SimpleNamespace(final_layer_norm=te.final_layer_norm))
    pipe.text_encoder = te
    t = {"ids": tokens(pipe.tokenizer, PROMPTS), "negative_ids": tokens(pipe.tokenizer, NEGATIVES),
         "empty_ids": tokens(pipe.tokenizer, [""] * len(PROMPTS))}
    with torch.no_grad():
        for skip in (None, 1, 2):
            pos, neg = pipe.encode_prompt(PROMPTS, "cpu", 1, True, negative_prompt=NEGATIVES, clip_skip=skip)
            t[f"prompt_embeds.skip{skip or 0}"], t[f"negative_prompt_embeds.skip{skip or 0}"] = pos, neg
        _, t["negative_prompt_embeds.none"] = pipe.encode_prompt(PROMPTS, "cpu", 1, True)
    save_file({k: v.contiguous() for k, v in t.items()}, out / f"encode-{family}.safetensors")
    print(f"  encode-{family}: clip_skip None/1/2, negative prompts and none")


def encode_sdxl(models: Path, out: Path):
    pipe = StableDiffusionXLPipeline.from_pretrained(str(models / "tiny-sdxl"), local_files_only=True)
    assert pipe.config.force_zeros_for_empty_prompt
    pipe.text_encoder = full_vocab(models / "tiny-sdxl" / "text_encoder", CLIPTextModel, 31)
    pipe.text_encoder_2 = full_vocab(models / "tiny-sdxl" / "text_encoder_2", CLIPTextModelWithProjection, 32)
    pipe.text_encoder.save_pretrained(out / "encode" / "sdxl" / "text_encoder", safe_serialization=True)
    pipe.text_encoder_2.save_pretrained(out / "encode" / "sdxl" / "text_encoder_2", safe_serialization=True)
    t = {"ids_1": tokens(pipe.tokenizer, PROMPTS), "ids_2": tokens(pipe.tokenizer_2, PROMPTS),
         "negative_ids_1": tokens(pipe.tokenizer, NEGATIVES), "negative_ids_2": tokens(pipe.tokenizer_2, NEGATIVES)}
    names = ["prompt_embeds", "negative_prompt_embeds", "pooled_prompt_embeds", "negative_pooled_prompt_embeds"]
    with torch.no_grad():
        for skip in (None, 1):
            res = pipe.encode_prompt(PROMPTS, device="cpu", negative_prompt=NEGATIVES, clip_skip=skip)
            t.update({f"{n}.skip{skip or 0}": r for n, r in zip(names, res)})
        res = pipe.encode_prompt(PROMPTS, device="cpu")  # negative_prompt None → zeros
        t.update({f"{n}.none": r for n, r in zip(names, res)})
    save_file({k: v.contiguous() for k, v in t.items()}, out / "encode-sdxl.safetensors")
    print("  encode-sdxl: clip_skip None/1, negative prompts and none (zeros)")


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: fixtures_clip.py <outdir>")
    root = Path(sys.argv[1])
    models, out = root / "models", root / "clip"
    (out / "encode").mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    tiny_encoders(models, out)
    encode_sd("sd1", models, out)
    encode_sd("sd2", models, out)
    encode_sdxl(models, out)
    clip_l(models, out)
    print(f"clip fixtures written to {out}")


if __name__ == "__main__":
    main()
