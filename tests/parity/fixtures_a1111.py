#!/usr/bin/env python3
"""Reference texts for the A1111 "parameters" writer and parser (tests/core/test_a1111_parity.cpp).

Re-states, from reading AUTOMATIC1111/stable-diffusion-webui, the rules DiffusionDesk must match:
  - modules/processing.py create_infotext: the order of the generation_params dict, None values left out,
    "k: quote(v)" joined by ", ", f"{prompt}\\nNegative prompt: {neg}\\n{params}".strip();
  - modules/infotext_utils.py quote (JSON when the text has ',', ':' or a newline; ensure_ascii=False) and
    parse_generation_parameters (re_param over the last line, at least 3 matches, "Negative prompt:" lines,
    unquote with json.loads, "WxH" split into k-1 / k-2, an empty value dropped).
Writes <outdir>/a1111/cases.json. Standard library only; deterministic (fixed random seed).
"""
import json
import pathlib
import random
import re
import sys

# The pattern documented in infotext_utils.py (also quoted in shared/reference/anchors.md).
PARAM = re.compile(r'\s*(\w[\w \-/]+):\s*("(?:\\.|[^\\"])+"|[^,]*)(?:,|$)')
SIZE = re.compile(r"^(\d+)x(\d+)$")

# create_infotext's key order for the keys DiffusionDesk writes; extras go where p.extra_generation_params does.
ORDER = ["Steps", "Sampler", "Schedule type", "CFG scale", "Seed", "Size", "Model hash", "Model",
         "Variation seed", "Variation seed strength", "Seed resize from", "Denoising strength", "Clip skip", "RNG", "<extra>", "Version"]


def a1111_quote(value):
    text = str(value)
    if "," in text or "\n" in text or ":" in text:
        return json.dumps(text, ensure_ascii=False)
    return text


def a1111_text(prompt, negative, params, extra):
    fields = []
    for key in ORDER:
        if key == "<extra>":
            fields.extend(extra)
        elif params.get(key) is not None:
            fields.append((key, params[key]))
    line = ", ".join(f"{k}: {a1111_quote(v)}" for k, v in fields)
    neg = f"\nNegative prompt: {negative}" if negative else ""
    return f"{prompt}{neg}\n{line}".strip()


def a1111_parse(text):
    *lines, last = text.strip().split("\n")
    if len(PARAM.findall(last)) < 3:
        lines.append(last)
        last = ""
    prompt, negative, in_negative = "", "", False
    for line in lines:
        line = line.strip()
        if line.startswith("Negative prompt:"):
            in_negative = True
            line = line[16:].strip()
        if in_negative:
            negative += ("" if negative == "" else "\n") + line
        else:
            prompt += ("" if prompt == "" else "\n") + line
    res = {}
    for key, value in PARAM.findall(last):
        if not value:
            continue  # A1111 indexes value[0] inside a try and drops the key
        if value[0] == '"' and value[-1] == '"':
            try:
                value = json.loads(value)
            except Exception:
                pass
        m = SIZE.match(value)
        if m:
            res[f"{key}-1"], res[f"{key}-2"] = m.group(1), m.group(2)
        else:
            res[key] = value
    return {"prompt": prompt, "negative": negative, "params": [[k, v] for k, v in res.items()]}


def writer_cases():
    """Settings as DiffusionDesk stores them (k-diffusion runs: what A1111 itself samples), and the values A1111's UI
    would hand create_infotext."""
    cases = []

    def add(settings, a1111_params, extra=(), options=None):
        s = {"prompt": "", "negative_prompt": "", "seed": 0, "steps": 20, "cfg_scale": 7.0, "guidance_rescale": 0.0,
             "sampler": "Euler a", "schedule_type": "Automatic", "pad_conds": False, "width": 512, "height": 512, "batch_size": 1, "clip_skip": 1,
             "init_image": "", "strength": 0.75, "preset": "", "model": ""}
        s.update(settings)
        cfg = s["cfg_scale"]
        params = {"Steps": s["steps"], "CFG scale": int(cfg) if cfg == int(cfg) else cfg, "Seed": s["seed"],
                  "Size": f"{s['width']}x{s['height']}", "RNG": "CPU",
                  "Clip skip": None if s["clip_skip"] <= 1 else s["clip_skip"],
                  "Denoising strength": s["strength"] if s["init_image"] else None}
        params.update(a1111_params)
        opts = options or {}
        params.setdefault("Model hash", opts.get("model_hash") or None)
        params.setdefault("Model", opts.get("model_name") or None)
        params.setdefault("Version", opts.get("version") or None)
        cases.append({"settings": s, "options": {**opts, "extra": [list(e) for e in extra]},
                      "text": a1111_text(s["prompt"], s["negative_prompt"], params, list(extra))})

    add({"prompt": "a cat", "negative_prompt": "blurry", "seed": 42}, {"Sampler": "Euler a", "Schedule type": "Automatic"},
        options={"model_name": "v1-5-pruned-emaonly", "model_hash": "6ce0161689", "version": "DiffusionDesk 0.1.0"})
    add({"prompt": "x, y: z\nline two", "sampler": "DPM++ 2M", "schedule_type": "Karras", "cfg_scale": 7.5, "clip_skip": 2,
         "init_image": "in.png", "strength": 0.55, "width": 768, "seed": 4294967295},
        {"Sampler": "DPM++ 2M", "Schedule type": "Karras"}, extra=[("Hires upscale", "2"), ("Lora hashes", "a: 1, b: 2")],
        options={"model_name": "Juggernaut, XL"})
    add({"sampler": "Euler", "schedule_type": "Exponential", "negative_prompt": "ünïcode ✓, \"quoted\""},
        {"Sampler": "Euler", "Schedule type": "Exponential"}, extra=[("Note", "multi\nline")])
    # A1111's DDIM is its own timestep sampler (the schedule type Automatic here).
    add({"sampler": "DDIM", "schedule_type": "Automatic", "cfg_scale": 12.0, "steps": 50}, {"Sampler": "DDIM", "Schedule type": "Automatic"})
    # Variation seeds: create_infotext writes the image's subseed and the strength only with a strength, and
    # "Seed resize from: WxH" only when both sides are set.
    add({"seed": 7, "variation": {"seed": 3000000000, "strength": 0.25, "resize_from_width": 640, "resize_from_height": 448}},
        {"Sampler": "Euler a", "Schedule type": "Automatic", "Variation seed": 3000000000, "Variation seed strength": 0.25,
         "Seed resize from": "640x448"})
    add({"seed": 7, "variation": {"seed": 9, "strength": 0.0, "resize_from_width": 512, "resize_from_height": 768}},
        {"Sampler": "Euler a", "Schedule type": "Automatic", "Seed resize from": "512x768"})
    # Textual inversion: sd_hijack.py puts "TI hashes" among the extra parameters, names with ':' and ',' taken out.
    add({"prompt": "a cat, easynegative", "embeddings": [{"name": "easy:neg,x", "hash": "c74b4e810b03"},
                                                         {"name": "bad_hands", "hash": "0123456789ab"}]},
        {"Sampler": "Euler a", "Schedule type": "Automatic"},
        extra=[("TI hashes", "easynegx: c74b4e810b03, bad_hands: 0123456789ab")], options={"extra_is_ours": True})
    return cases


def parser_cases():
    texts = [
        "girl with an artist's beret, determined, blue eyes, desert scene, ((eyeshadow)), (coquettish)\n"
        "Negative prompt: ugly, fat, obese, chubby, (((deformed))), [blurry], bad anatomy\n"
        "Steps: 20, Sampler: Euler a, CFG scale: 7, Seed: 965400086, Size: 512x512, Model hash: 45dee52b",
        "masterpiece\nNegative prompt: lowres\nSteps: 30, Sampler: DPM++ 2M, Schedule type: Karras, CFG scale: 5.5, "
        "Seed: 1234567890, Size: 832x1216, Model hash: 6ce0161689, Model: v1-5, Clip skip: 2, ADetailer model: "
        "face_yolov8n.pt, Hires resize: 1024x1024, Lora hashes: \"add_detail: 7c6bad76eb54\", Version: v1.10.1",
        "a cat: cute, Steps: 20",
        "p\nSteps: 20, Sampler: , Seed: 1, Seed: 2, Note: \"a \\\"b\\\", c\", Bad: \"unterminated, Size: 64x64",
        "  \n\nfirst\n  second  \n\nNegative prompt: n1\n\nn2\nSteps: 1, Seed: 2, Size: 8x8x8",
        "a fox\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: 5, Size: 512x512, Variation seed: 77, "
        "Variation seed strength: 0.3, Seed resize from: 640x448, Version: v1.10.1",
        "a cat, easynegative\nNegative prompt: negativeXL_D\nSteps: 20, Sampler: Euler a, CFG scale: 7, Seed: 5, Size: 512x512, "
        "TI hashes: \"easynegative: c74b4e810b03, negativeXL_D: fff5d51ab655\", Version: v1.7.0",
    ]
    rng = random.Random(1234)
    keys = ["Steps", "Seed", "Size", "Model", "Hires upscale", "ADetailer model", "Lora hashes", "x", "A-b/c d", "ü key"]
    values = ["20", "7.5", "512x768", "\"a, b\"", "\"esc \\\" q\"", "", "a:b", " spaced ", "\"\"", "\"bad \\", "ünï", "x" * 5]
    for _ in range(60):
        pairs = [f"{rng.choice(keys)}:{rng.choice(['', ' ', '  '])}{rng.choice(values)}" for _ in range(rng.randint(1, 6))]
        line = rng.choice([", ", ","]).join(pairs)
        prompt = rng.choice(["", "p", "a (b:1.2), c", "l1\nl2", "x\nNegative prompt: y"])
        texts.append(f"{prompt}\n{line}" if prompt else line)
    return [{"text": t, **a1111_parse(t)} for t in texts]


def main():
    out = pathlib.Path(sys.argv[1]) / "a1111"
    out.mkdir(parents=True, exist_ok=True)
    data = {"writer": writer_cases(), "parser": parser_cases()}
    (out / "cases.json").write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
