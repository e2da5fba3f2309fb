#!/usr/bin/env python3
"""The GPU checks' diffusers row (tests/gpu/run_gpu_checks.sh): one image of a random-weight model folder
(dd_random_model's, which has no tokenizer: the bundled CLIP vocabulary is used, as the engine does) through
diffusers and through dd_gpu_check with the same settings (fp16, Euler, CFG 7, nothing offloaded), and the ratio
of their times (text encode + steps + decode) and CUDA peaks. Prints one Markdown row; --json appends the record.
    gpu_vs_diffusers.py --model DIR --check BUILD/bin/dd_gpu_check [--label L] [--steps 20] [--device cuda:0]
                        [--dtype fp16|fp32] [--json FILE]
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from diffusers import EulerDiscreteScheduler, StableDiffusionPipeline, StableDiffusionXLPipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "parity"))
from fixtures_models import tokenizer, write_bpe_files  # noqa: E402


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def diffusers_run(a, size):
    device = torch.device(a.device)
    dtype = {"fp16": torch.float16, "fp32": torch.float32}[a.dtype]
    xl = (Path(a.model) / "text_encoder_2").is_dir()
    with tempfile.TemporaryDirectory() as bpe:
        write_bpe_files(Path(bpe))
        toks = {"tokenizer": tokenizer(Path(bpe), "<|endoftext|>")}
        if xl:
            toks["tokenizer_2"] = tokenizer(Path(bpe), "!")
        cls = StableDiffusionXLPipeline if xl else StableDiffusionPipeline
        extra = {} if xl else {"safety_checker": None, "requires_safety_checker": False}
        pipe = cls.from_pretrained(a.model, torch_dtype=dtype, **toks, **extra).to(device)
    pipe.scheduler = EulerDiscreteScheduler.from_config(pipe.scheduler.config)
    pipe.set_progress_bar_config(disable=True)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    g = torch.Generator("cpu").manual_seed(1)
    sync(device)
    t = time.perf_counter()
    with torch.inference_mode():
        pipe(prompt="a lighthouse on a cliff at sunset, oil painting", num_inference_steps=a.steps, guidance_scale=7.0,
             height=size, width=size, generator=g, output_type="np")
    sync(device)
    seconds = time.perf_counter() - t
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    return seconds, peak


def ours(a):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        cmd = [a.check, "offload", "--mode", "none", "--model", a.model, "--steps", str(a.steps), "--device", a.device,
               "--json", f.name]
        if a.dtype == "fp32":
            cmd.append("--fp32")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.loads(Path(f.name).read_text().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--check", required=True)
    ap.add_argument("--label", default="")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    ap.add_argument("--json")
    a = ap.parse_args()
    mine = ours(a)
    size = int(mine["size"].split("x")[0])
    theirs_s, theirs_peak = diffusers_run(a, size)
    time_ratio = mine["seconds"] / theirs_s
    mem_ratio = mine["peak_bytes"] / theirs_peak if theirs_peak else None  # no CUDA peak on a CPU
    gb = 2 ** 30
    print(f"| {a.label or a.model} | {mine['size']} | {mine['seconds']:.2f} s, {mine['peak_bytes'] / gb:.2f} GB | "
          f"{theirs_s:.2f} s, {theirs_peak / gb:.2f} GB | {time_ratio:.2f} | "
          f"{'—' if mem_ratio is None else f'{mem_ratio:.2f}'} |")
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps({"check": "diffusers", "model": a.label or a.model, "size": mine["size"],
                                "seconds": mine["seconds"], "peak_bytes": mine["peak_bytes"],
                                "diffusers_seconds": theirs_s, "diffusers_peak_bytes": theirs_peak,
                                "time_ratio": time_ratio, "memory_ratio": mem_ratio}) + "\n")


if __name__ == "__main__":
    main()
