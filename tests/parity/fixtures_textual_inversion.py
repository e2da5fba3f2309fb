#!/usr/bin/env python3
"""Textual-inversion references for tests/core/text/test_textual_inversion.cpp.

Usage: fixtures_textual_inversion.py <outdir>   (after fixtures_models.py)

Embeddings are saved as A1111 and diffusers save them (A1111's {"emb_params": [n, C]}, diffusers' {"<token>": [C]},
SDXL's {"clip_l", "clip_g"}) and loaded into the tiny pipelines with diffusers' own load_textual_inversion, under
the file's name as token (A1111 names an embedding after its file). encode_prompt then gives the reference. The
tiny fixture encoders have a 1000-token vocabulary, so the pipelines get encoders of the same configs with the full
49408-token vocabulary (saved here for the C++ side).

diffusers pools SDXL's text_embeds at the argmax id when the config has the legacy eos_token_id 2, which is the
added token's once an embedding is in the prompt; A1111 (open_clip) pools at the end-of-text token. The encoders
here pool at the first end-of-text token (eos_token_id 49407), the pooling both agree on without embeddings.

A weighted case ("(tinyneg:1.3)") re-creates A1111's "Original" emphasis on diffusers' hidden states: every
position of the embedding's vectors × 1.3, then the mean restored (modules/sd_emphasis.py).

Writes <outdir>/textual_inversion/: embeddings/ (the files, with a pickle that must be refused), <family>/text_encoder*,
cases.json (prompts, and the files' A1111 short hashes: sha256[:12]) and <case>.safetensors.
"""
import hashlib
import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
from diffusers import StableDiffusionPipeline, StableDiffusionXLPipeline  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import CLIPTextModel, CLIPTextModelWithProjection  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from fixtures_clip import full_vocab  # noqa: E402

EOS = 49407


def pool_at_eos(model):
    for m in model.modules():
        if hasattr(m, "eos_token_id"):
            m.eos_token_id = EOS


def sha12(path: Path):
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def embeddings(folder: Path, w_sd1, w_l, w_g):
    g = torch.Generator().manual_seed(7)
    files = {
        "tinyneg": {"emb_params": torch.randn(3, w_sd1, generator=g)},         # A1111, 3 vectors
        "starry": {"<starry>": torch.randn(w_sd1, generator=g)},                # diffusers, one vector, 1-D
        "xlneg": {"clip_l": torch.randn(2, w_l, generator=g), "clip_g": torch.randn(2, w_g, generator=g)},
    }
    for name, tensors in files.items():
        save_file(tensors, folder / f"{name}.safetensors")
    (folder / "oldstyle.pt").write_bytes(b"\x80\x02}q\x00.")  # a pickle: refused, never loaded
    return files


def load_ti(pipe, files, names, xl):
    for name in names:
        t = files[name]
        if xl:
            pipe.load_textual_inversion(t["clip_l"], token=name, text_encoder=pipe.text_encoder, tokenizer=pipe.tokenizer)
            pipe.load_textual_inversion(t["clip_g"], token=name, text_encoder=pipe.text_encoder_2, tokenizer=pipe.tokenizer_2)
        else:
            pipe.load_textual_inversion(next(iter(t.values())), token=name)


def a1111_weighted(pipe, prompt_plain, weighted_token, weight):
    """A1111 "Original" emphasis on diffusers' output: the embedding's positions × weight, the mean restored."""
    text = pipe.maybe_convert_prompt(prompt_plain, pipe.tokenizer)
    ids = pipe.tokenizer(text, padding="max_length", max_length=77, truncation=True, return_tensors="pt").input_ids
    z = pipe.text_encoder(ids)[0]
    ti_ids = {pipe.tokenizer.convert_tokens_to_ids(t) for t in pipe.tokenizer.added_tokens_encoder if t.startswith(weighted_token)}
    w = torch.tensor([weight if int(i) in ti_ids else 1.0 for i in ids[0]]).reshape(1, -1, 1)
    original = z.mean()
    z = z * w
    return z * (original / z.mean())


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: fixtures_textual_inversion.py <outdir>")
    root = Path(sys.argv[1])
    out = root / "textual_inversion"
    (out / "embeddings").mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    models = root / "models"

    def sd1():
        pipe = StableDiffusionPipeline.from_pretrained(str(models / "tiny-sd1"), local_files_only=True)
        pipe.text_encoder = full_vocab(models / "tiny-sd1" / "text_encoder", CLIPTextModel, 41)
        pipe.text_encoder.save_pretrained(out / "sd1" / "text_encoder", safe_serialization=True)
        return pipe

    def sdxl():
        pipe = StableDiffusionXLPipeline.from_pretrained(str(models / "tiny-sdxl"), local_files_only=True)
        pipe.text_encoder = full_vocab(models / "tiny-sdxl" / "text_encoder", CLIPTextModel, 42)
        pipe.text_encoder_2 = full_vocab(models / "tiny-sdxl" / "text_encoder_2", CLIPTextModelWithProjection, 43)
        pipe.text_encoder.save_pretrained(out / "sdxl" / "text_encoder", safe_serialization=True)
        pipe.text_encoder_2.save_pretrained(out / "sdxl" / "text_encoder_2", safe_serialization=True)
        pool_at_eos(pipe.text_encoder_2)
        return pipe

    probe_sd1, probe_xl = sd1(), sdxl()
    files = embeddings(out / "embeddings", probe_sd1.text_encoder.config.hidden_size,
                       probe_xl.text_encoder.config.hidden_size, probe_xl.text_encoder_2.config.hidden_size)

    cases = [
        ("sd1_negative", "sd1", "a photo of a cat on a sofa", "tinyneg, blurry", ["tinyneg"]),
        ("sd1_prompt", "sd1", "a starry night over a lake, oil painting", "ugly", ["starry"]),
        ("sd1_both", "sd1", "starry sky above tinyneg", "tinyneg", ["starry", "tinyneg"]),
        ("sdxl_negative", "sdxl", "a cat on a sofa", "xlneg, blurry", ["xlneg"]),
        ("sdxl_prompt", "sdxl", "xlneg style painting of a house", "ugly", ["xlneg"]),
    ]
    written = []
    with torch.no_grad():
        for name, family, prompt, negative, used in cases:
            pipe = sd1() if family == "sd1" else sdxl()
            load_ti(pipe, files, used, family == "sdxl")
            t = {}
            if family == "sd1":
                t["positive"], t["negative"] = pipe.encode_prompt(prompt, "cpu", 1, True, negative_prompt=negative)
            else:
                res = pipe.encode_prompt(prompt, device="cpu", negative_prompt=negative)
                t.update(zip(["positive", "negative", "positive_pooled", "negative_pooled"], res))
            save_file({k: v.contiguous() for k, v in t.items()}, out / f"{name}.safetensors")
            written.append({"name": name, "family": family, "prompt": prompt, "negative": negative, "used": used})
            print(f"  {name}: {family}, {', '.join(used)}")
        pipe = sd1()
        load_ti(pipe, files, ["tinyneg"], False)
        save_file({"positive": a1111_weighted(pipe, "a photo of tinyneg on a table", "tinyneg", 1.3).contiguous()},
                  out / "sd1_weighted.safetensors")
        written.append({"name": "sd1_weighted", "family": "sd1", "prompt": "a photo of (tinyneg:1.3) on a table",
                        "negative": None, "used": ["tinyneg"]})
        print("  sd1_weighted: A1111 Original emphasis on the embedding's vectors")

    hashes = {p.stem: sha12(p) for p in sorted((out / "embeddings").glob("*.safetensors"))}
    (out / "cases.json").write_text(json.dumps({"cases": written, "hashes": hashes}, indent=1))


if __name__ == "__main__":
    main()
