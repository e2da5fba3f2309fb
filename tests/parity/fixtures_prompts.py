#!/usr/bin/env python3
"""A1111-style prompt encoding references for tests/core/test_prompt_encoder.cpp.

Usage: fixtures_prompts.py <outdir>   (after fixtures_models.py and fixtures_clip.py)

Re-creates, step by step, what AUTOMATIC1111's webui does with a prompt (modules/prompt_parser.py
parse_prompt_attention; modules/sd_hijack_clip.py tokenize_line, process_tokens, forward; modules/sd_emphasis.py;
modules/sd_samplers_cfg_denoiser.py pad_cond_uncond) with the pinned transformers CLIP encoders that
fixtures_clip.py wrote to <outdir>/clip/encode/<family>/ (tiny configs, full 49408-token vocabulary).
A1111 reads OpenCLIP prompts with open_clip's tokenizer: the same BPE as the CLIP-L tokenizer with "!" as plain
text, so the CLIP-L tokenizer (tiny-sdxl/tokenizer, pad <|endoftext|>) stands in for it, and ids after a chunk's
first EOS become 0.

Writes <outdir>/prompts/cases.json and <outdir>/prompts/<name>.safetensors with "positive", "negative"
([1, 77*k, C] after padding to the same length), for SDXL "positive_pooled" / "negative_pooled", and the chunk
ids ("positive_ids_1" ...) to help find a tokenization difference.
"""
import json
import os
import re
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer  # noqa: E402

CHUNK = 75
BACKTRACK = 20  # A1111 comma_padding_backtrack default

LONG = ("masterpiece, best quality, a (detailed:1.2) painting of a lighthouse on a rocky coast, "
        "stormy sea, dramatic sky, [muted colors], ((golden hour)), waves crashing against the rocks, "
        "seagulls flying over the water, a small boat in the distance, oil on canvas, highly detailed, "
        "by a famous painter, trending on an art site, 8k, sharp focus, soft light, a lonely keeper standing at the "
        "door with a lantern, his (dog:0.9) beside him, clouds torn by the wind")
LONGER = LONG + ", " + ("(glowing windows:1.3), foggy mountains behind, pine trees, a narrow path, "
                        "red roof, white walls, [snow], ((rain)), reflections on wet stones, ") * 3 + "the end"

CASES = [
    # name, family, prompt, negative, emphasis, A1111 clip skip
    ("sd1_long2", "sd1", LONG, "blurry, low quality", "Original", 1),
    ("sd1_long3", "sd1", LONGER, "(ugly:1.2), [deformed]", "Original", 1),
    ("sd1_weights", "sd1", "a (cat:1.3) sitting next to a ((dog)) under a [bird]", "(ugly:0.8), blurry", "Original", 1),
    ("sd1_break", "sd1", "a red cat BREAK a (blue:1.2) dog", "text, watermark", "Original", 1),
    ("sd1_nonorm", "sd1", "a (cat:1.3) and a ((dog)) and a [bird]", "(blurry:1.4)", "No norm", 1),
    ("sd1_none", "sd1", "a (cat:1.3) BREAK a dog", "", "None", 1),
    ("sd1_skip2", "sd1", "a (cat:1.3) and a [[dog]]", "ugly", "Original", 2),
    ("sd1_longneg", "sd1", "a (cat:1.1)", LONG, "Original", 1),
    ("sd2_long", "sd2", "wow!! " + LONG, "(bad:1.3) anatomy!", "Original", 1),
    ("sdxl_long", "sdxl", LONG, "ugly, (blurry:1.2)", "Original", 1),
    ("sdxl_zero", "sdxl", LONG, "", "Original", 1),
    ("sdxl_nonorm", "sdxl", "a (cat:1.3) BREAK on a ((red)) sofa!", "[bad]", "No norm", 1),
]

# prompt_parser.re_attention in words: escapes, brackets, ":number)" closing a round bracket, plain text runs.
ATTENTION = re.compile(r"\\[()\[\]\\]|\\|\(|\[|:\s*([+-]?[.\d]+)\s*\)|\)|\]|[^\\()\[\]:]+|:")
BREAK = re.compile(r"\s*\bBREAK\b\s*", re.S)


def parse_attention(text):
    """(text, weight) runs; BREAK as ("BREAK", -1); neighbours with equal weight merged."""
    runs, round_open, square_open = [], [], []

    def scale(start, factor):
        for r in runs[start:]:
            r[1] *= factor

    for m in ATTENTION.finditer(text):
        tok, weight = m.group(0), m.group(1)
        if tok.startswith("\\") and len(tok) == 2:
            runs.append([tok[1], 1.0])
        elif tok == "\\":
            runs.append(["", 1.0])
        elif tok == "(":
            round_open.append(len(runs))
        elif tok == "[":
            square_open.append(len(runs))
        elif weight is not None and round_open:
            scale(round_open.pop(), float(weight))
        elif tok == ")" and round_open:
            scale(round_open.pop(), 1.1)
        elif tok == "]" and square_open:
            scale(square_open.pop(), 1 / 1.1)
        else:
            for i, part in enumerate(BREAK.split(tok)):
                if i:
                    runs.append(["BREAK", -1])
                runs.append([part, 1.0])
    for start in round_open:
        scale(start, 1.1)
    for start in square_open:
        scale(start, 1 / 1.1)
    if not runs:
        runs = [["", 1.0]]
    merged = []
    for r in runs:
        if merged and merged[-1][1] == r[1]:
            merged[-1][0] += r[0]
        else:
            merged.append(r)
    return merged


class Embedder:
    """One hijacked text encoder (FrozenCLIPEmbedderWithCustomWordsBase and its subclasses)."""

    def __init__(self, tokenizer, encode, pad_id, emphasis):
        self.tok, self.encode_ids, self.emphasis = tokenizer, encode, emphasis
        self.bos, self.eos, self.pad = tokenizer.bos_token_id, tokenizer.eos_token_id, pad_id
        self.comma = tokenizer.get_vocab()[",</w>"]

    def chunks(self, line):
        parsed = parse_attention(line) if self.emphasis != "None" else [[line, 1.0]]
        tokenized = self.tok([t for t, _ in parsed], truncation=False, add_special_tokens=False)["input_ids"]
        out, ids, mults, last_comma = [], [], [], -1

        def close():
            nonlocal ids, mults, last_comma
            fill = CHUNK - len(ids)
            out.append(([self.bos] + ids + [self.eos] * fill + [self.eos], [1.0] + mults + [1.0] * fill + [1.0]))
            ids, mults, last_comma = [], [], -1

        for tokens, (text, weight) in zip(tokenized, parsed):
            if text == "BREAK" and weight == -1:
                close()
                continue
            for token in tokens:
                if token == self.comma:
                    last_comma = len(ids)
                elif len(ids) == CHUNK and last_comma != -1 and len(ids) - last_comma <= BACKTRACK:
                    cut = last_comma + 1
                    moved = (ids[cut:], mults[cut:])
                    ids, mults = ids[:cut], mults[:cut]
                    close()
                    ids, mults = moved
                if len(ids) == CHUNK:
                    close()
                ids.append(token)
                mults.append(weight)
        if ids or not out:
            close()
        return out

    def chunk_z(self, ids, mults):
        t = torch.tensor([ids])
        if self.eos != self.pad:
            t[0, ids.index(self.eos) + 1:] = self.pad
        z, pooled = self.encode_ids(t)
        w = torch.asarray([mults]).reshape(1, -1, 1)
        if self.emphasis in ("Original", "No norm"):
            mean = z.mean()
            z = z * w.expand(z.shape)
            if self.emphasis == "Original":
                z = z * (mean / z.mean())
        return z, pooled, t[0]

    def __call__(self, line):
        zs, pooled, ids = [], None, []
        for i, (chunk_ids, mults) in enumerate(self.chunks(line)):
            z, p, t = self.chunk_z(chunk_ids, mults)
            zs.append(z)
            ids.append(t)
            if i == 0:
                pooled = p
        return torch.hstack(zs), pooled, torch.stack(ids)


def sd_encoder(model, stop_at):
    def encode(ids):
        out = model(input_ids=ids, output_hidden_states=True)
        if stop_at > 1:
            return model.final_layer_norm(out.hidden_states[-stop_at]), None
        return out.last_hidden_state, None
    return encode


def sdxl_encoder(model, projection):
    def encode(ids):
        out = model(input_ids=ids, output_hidden_states=True)
        return out.hidden_states[-2], (out.text_embeds if projection else None)
    return encode


def pad_cond_uncond(cond, uncond, empty):
    repeats = (cond.shape[1] - uncond.shape[1]) // empty.shape[1]
    if repeats < 0:
        cond = torch.cat([cond, empty.repeat((1, -repeats, 1))], 1)
    elif repeats > 0:
        uncond = torch.cat([uncond, empty.repeat((1, repeats, 1))], 1)
    return cond, uncond


def run_case(root, tok, name, family, prompt, negative, emphasis, clip_skip):
    enc = root / "clip" / "encode" / family
    if family == "sdxl":
        te1 = CLIPTextModel.from_pretrained(str(enc / "text_encoder"), local_files_only=True).eval()
        te2 = CLIPTextModelWithProjection.from_pretrained(str(enc / "text_encoder_2"), local_files_only=True).eval()
        embedders = [Embedder(tok, sdxl_encoder(te1, False), tok.eos_token_id, emphasis),
                     Embedder(tok, sdxl_encoder(te2, True), 0, emphasis)]
    else:
        te = CLIPTextModel.from_pretrained(str(enc / "text_encoder"), local_files_only=True).eval()
        pad = 0 if family == "sd2" else tok.eos_token_id
        embedders = [Embedder(tok, sd_encoder(te, clip_skip), pad, emphasis)]

    def conditioner(line, zero=False):
        outs = [e(line) for e in embedders]
        z, pooled = torch.cat([o[0] for o in outs], 2), outs[-1][1]
        if zero:  # sgm GeneralConditioner force_zero_embeddings=['txt'] for an empty SDXL negative
            z, pooled = torch.zeros_like(z), torch.zeros_like(pooled)
        return z, pooled, [o[2] for o in outs]

    t = {}
    with torch.no_grad():
        pos, pos_pooled, pos_ids = conditioner(prompt)
        neg, neg_pooled, neg_ids = conditioner(negative, zero=family == "sdxl" and negative == "")
        empty = conditioner("")[0]
        t["positive"], t["negative"] = pad_cond_uncond(pos, neg, empty)
    if family == "sdxl":
        t["positive_pooled"], t["negative_pooled"] = pos_pooled, neg_pooled
    for i, ids in enumerate(pos_ids):
        t[f"positive_ids_{i + 1}"] = ids
    for i, ids in enumerate(neg_ids):
        t[f"negative_ids_{i + 1}"] = ids
    save_file({k: v.contiguous() for k, v in t.items()}, root / "prompts" / f"{name}.safetensors")
    print(f"  {name}: {family}, {pos.shape[1] // 77} + {neg.shape[1] // 77} chunks, emphasis {emphasis}")
    return {"name": name, "family": family, "prompt": prompt, "negative": negative, "emphasis": emphasis,
            "clip_skip": clip_skip}


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: fixtures_prompts.py <outdir>")
    root = Path(sys.argv[1])
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(min(2, torch.get_num_threads()))
    tok = CLIPTokenizer.from_pretrained(str(root / "models" / "tiny-sdxl" / "tokenizer"), local_files_only=True)
    assert tok.pad_token == "<|endoftext|>"
    cases = [run_case(root, tok, *c) for c in CASES]
    (root / "prompts" / "cases.json").write_text(json.dumps(cases, indent=1))
    print(f"prompt fixtures written to {root / 'prompts'}")


if __name__ == "__main__":
    main()
