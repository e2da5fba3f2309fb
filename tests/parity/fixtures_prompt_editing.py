"""Prompt editing as A1111 documents it ("Prompt editing" and "Alternating words" in its wiki), on lark, the parser
A1111 uses, at A1111's pinned version:

- `[from:to:when]` uses `from` until step `when`, then `to`; `[to:when]` adds `to` at `when`; `[from::when]` removes
  `from` at `when`. A `when` with a decimal point is a fraction of the steps, one without a step number; the switch
  step is int() of that, at most the steps, and a switch before step 1 has already happened.
- `[a|b|c]` alternates one option per step.
- Round and square brackets that are none of these are emphasis and stay text; a prompt the grammar rejects is used
  as written.
- The schedule is the text at each step where something switches and at the last step; model call k (0-based) uses
  the first entry whose step is at least k.
- In a hires fix's second pass, step numbers count on from the first pass's steps and fractions from 1.

Composable diffusion ("AND", A1111's wiki): the prompt is split at the word AND; a part ending in ":w" has weight w
(1 without); each part is scheduled on its own, and the guidance is negative + sum of cfg * w * (part - negative).

Writes <outdir>/prompt_editing/schedules.json, splits.json (prompts x steps -> schedules, for the C++ parser) and, for whole runs,
cases.json + case_<n>.safetensors: diffusers' components in a small loop (the tiny SD 1.x model's CLIP encoding each
distinct text, its UNet and Euler), the conditioning switched per step as the schedule says.
"""
import json
import pathlib
import re
import sys

import lark
import torch
from diffusers import StableDiffusionPipeline
from safetensors.torch import save_file

OUT = pathlib.Path(sys.argv[1])
DIR = OUT / "prompt_editing"
PIPELINES = OUT / "pipeline"

GRAMMAR = r"""
!start: (prompt | /[][():]/+)*
prompt: (emphasized | scheduled | alternate | plain | WHITESPACE)*
!emphasized: "(" prompt ")"
        | "(" prompt ":" prompt ")"
        | "[" prompt "]"
scheduled: "[" [prompt ":"] prompt ":" [WHITESPACE] NUMBER [WHITESPACE] "]"
alternate: "[" prompt ("|" [prompt])+ "]"
WHITESPACE: /\s+/
plain: /([^\\\[\]():|]|\\.)+/
%import common.SIGNED_NUMBER -> NUMBER
"""
PARSER = lark.Lark(GRAMMAR)
AND = re.compile(r"\bAND\b")
WEIGHT = re.compile(r"^((?:\s|.)*?)(?:\s*:\s*([-+]?(?:\d+\.?|\d*\.\d+)))?\s*$")


def split_and(prompt):
    parts = []
    for part in AND.split(prompt):
        text, weight = WEIGHT.search(part).groups()
        parts.append((text, float(weight) if weight is not None else 1.0))
    return parts


def schedule(prompt, steps, first_pass_steps=0):
    try:
        tree = PARSER.parse(prompt)
    except lark.exceptions.LarkError:
        return [[steps, prompt]]
    int_offset, flt_offset = (first_pass_steps, 1.0) if first_pass_steps else (0, 0.0)
    switches = {steps}

    class Collect(lark.Visitor):
        def scheduled(self, tree):
            text = tree.children[-2]
            v = float(text)
            v = (v - flt_offset) * steps if "." in text else v - int_offset
            tree.children[-2] = min(steps, int(v))
            if tree.children[-2] >= 1:
                switches.add(tree.children[-2])

        def alternate(self, tree):
            switches.update(range(1, steps + 1))

    Collect().visit(tree)

    def text_at(step, node):
        if isinstance(node, lark.Token):
            return str(node)
        if node is None:
            return ""
        if node.data == "scheduled":
            before, after, _, when, _ = node.children
            return text_at(step, before) if step <= when else text_at(step, after)
        if node.data == "alternate":
            options = node.children
            return text_at(step, options[(step - 1) % len(options)])
        return "".join(text_at(step, child) for child in node.children)

    return [[t, text_at(t, tree)] for t in sorted(switches)]


SCHEDULE_PROMPTS = [
    "a plain prompt", "a [red:blue:0.5] house", "a [red:blue:3] house", "[tree:4]", "[tree::0.25] on a hill",
    "[:tree:2]", "fantasy landscape with a [mountain:lake:0.25] and [an oak:a christmas tree:0.75][ in foreground::0.6]"
    "[ in background:0.25] [shoddy:masterful:0.5]", "a [cat|dog|bird] in the snow", "[a|]b", "(a [red:blue:0.5] car:1.2)",
    "[a (red:1.3) car:a [blue|green] bike:0.4]", "a [word] and (another)", "a [red:blue] car", "a [red:blue:x] car",
    "a | b", "[a:b:c:0.5]", "[a:b:-1]", "[a:b:1.0]", "[a:b:0]", "[a:b: 0.5 ]", "[a:b:1e1]", "unclosed [a:b:0.5",
    "(unclosed [a:b:0.5]", "escaped \\[a:b:0.5\\]", "[[a:b:2]:c:4]", "[a:[b:c:0.75]:0.25]", "tail\\",
    "a: b: c", "[a|b:0.5]", "[ [x|y] :z:5]",
]
SCHEDULE_STEPS = [1, 6, 10, 20, 11]


def run(pipe, case):
    steps, cfg = case["steps"], case["cfg"]
    scheduler = pipe.scheduler
    scheduler.set_timesteps(steps)
    calls = len(scheduler.timesteps)
    parts = [(schedule(text, calls), weight) for text, weight in split_and(case["prompt"])]
    negative = schedule(case["negative"], calls)
    cache = {}

    def encoded(pos, neg):
        if (pos, neg) not in cache:
            cache[(pos, neg)] = pipe.encode_prompt(pos, "cpu", 1, True, negative_prompt=neg)
        return cache[(pos, neg)]

    def at(sched, k):
        return next((text for last, text in sched if k <= last), sched[-1][1])

    shape = (1, pipe.unet.config.in_channels, case["height"] // pipe.vae_scale_factor, case["width"] // pipe.vae_scale_factor)
    latents = torch.randn(shape, generator=torch.Generator().manual_seed(case["seed"])) * scheduler.init_noise_sigma
    with torch.no_grad():
        for k, t in enumerate(scheduler.timesteps):
            sides = [encoded(at(part, k), at(negative, k)) for part, _ in parts]
            x = scheduler.scale_model_input(torch.cat([latents] * (len(parts) + 1)), t)
            embeds = torch.cat([sides[0][1]] + [positive for positive, _ in sides])
            pred = pipe.unet(x, t, encoder_hidden_states=embeds).sample.chunk(len(parts) + 1)
            if len(parts) == 1 and parts[0][1] == 1.0:
                guided = pred[0] + cfg * (pred[1] - pred[0])
            else:
                guided = pred[0].clone()
                for (_, weight), part in zip(parts, pred[1:]):
                    guided = guided + (part - pred[0]) * (weight * cfg)
            latents = scheduler.step(guided, t, latents).prev_sample
    return latents, len(cache)


def main():
    DIR.mkdir(parents=True, exist_ok=True)
    schedules = [{"prompt": p, "steps": s, "schedule": schedule(p, s)} for p in SCHEDULE_PROMPTS for s in SCHEDULE_STEPS]
    schedules += [{"prompt": p, "steps": 8, "first_pass_steps": 10, "schedule": schedule(p, 8, 10)}
                  for p in ["a [red:blue:0.5] house", "a [red:blue:1.5] house", "a [red:blue:13] house", "[a|b] c"]]
    (DIR / "schedules.json").write_text(json.dumps(schedules, indent=1))
    splits = ["a cat", "a cat AND a dog", "a red lighthouse AND a stormy sky:0.6", "ANDROID and AND", "score:9 ",
              "x AND y: -0.5 AND z:.25", "a (b:1.2) AND c:1.", "AND", "a AND AND b", "cat:1.2.3", "ünï AND ANDé AND x_AND"]
    (DIR / "splits.json").write_text(json.dumps([{"prompt": p, "parts": split_and(p)} for p in splits], indent=1))

    pipe = StableDiffusionPipeline.from_pretrained(PIPELINES / "tiny-sd1-e2e")
    pipe.set_progress_bar_config(disable=True)
    from fixtures_schedulers import NAMES as SCHEDULERS
    cls, opts = SCHEDULERS["Euler"]
    pipe.scheduler = cls.from_config(pipe.scheduler.config, **opts)
    base = dict(model="tiny-sd1-e2e", negative="", seed=33, steps=6, cfg=7.0, width=64, height=64, batch=1,
                sampler="Euler")
    cases = [
        dict(base, prompt="a [red:blue:0.5] lighthouse on a cliff"),
        dict(base, prompt="a [cat|dog] in the snow at night"),
        dict(base, prompt="[a small:a huge:2] castle[ in fog::0.6]", negative="[blurry::3] low quality"),
        dict(base, prompt="a red lighthouse AND a stormy sky:0.6", negative="blurry"),
        dict(base, prompt="[a cat|a dog] in the snow AND northern lights: 0.5 AND night:-0.3"),
    ]
    for n, case in enumerate(cases):
        latents, segments = run(pipe, case)
        case["segments"] = segments
        save_file({"latents": latents.contiguous()}, DIR / f"case_{n}.safetensors")
    (DIR / "cases.json").write_text(json.dumps(cases, indent=1))


if __name__ == "__main__":
    main()
