#!/usr/bin/env python3
"""DiffusionDesk against diffusers on the same machine, model folder, settings and thread count.

Runs A B A B … (A = DiffusionDesk's dd_bench_run, B = diffusers' reference_run.py), each in a fresh process,
and prints medians and per-pair ratios (A / B, lower is better) for: model load → first step done (measured
from process launch, so dynamic loading and imports count on both sides), seconds per UNet step, VAE decode,
end to end (launch → exit), peak RSS. Also the achieved GFLOP/s of a UNet step against this machine's measured
fp32 FMA peak (fma_peak), and, with --precision bf16, the image difference to fp32 on each side (against
the images an earlier fp32 run of the same settings left in BUILD/vs_diffusers).

    bench/perf/vs_diffusers.py [--model DIR] [--steps 20] [--size 512] [--pairs 3] [--threads N]
                               [--precision fp32|bf16|fp16] [--mode txt2img|inpaint|hires] [--json FILE] [--smoke]
--mode inpaint / hires: the same comparison for an inpainting (4-channel, strength 0.75) or a hires fix (half the
size, then ×2 at denoising 0.6); see bench_run.cpp.
--smoke: one tiny pair on the full-vocabulary tiny fixture model (fixtures/pipeline/tiny-sd1-e2e), for CI (checks the harness runs, asserts nothing
about time).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PY = sys.executable
UNET_STEP_TFLOP_512_CFG = 1.61  # one SD 1.5 UNet step at 512² with CFG (batch 2): ../shared/reference/anchors.md
METRICS = ["load_to_first_step_s", "load_overhead_s", "step_s", "decode_s", "e2e_s", "peak_rss_bytes"]


def run(cmd, env):
    launched = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.time() - launched
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(map(str, cmd))}\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["load_to_first_step_s"] = r["first_step_unix"] - launched
    # What launching and loading cost before stepping: launch -> first step done, less one median step. Work a
    # loader defers into the first step (page faults of memory-mapped weights) stays in it.
    r["load_overhead_s"] = r["load_to_first_step_s"] - r["step_s"]
    r["e2e_s"] = wall
    return r


def fmt(metric, v):
    return f"{v / 2**30:.2f} GiB" if metric == "peak_rss_bytes" else f"{v:.3f} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT / "build/bench-models/sd15-random"))
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--mode", default="txt2img", choices=["txt2img", "inpaint", "hires"])
    ap.add_argument("--json")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--fixtures", help="the reference fixtures folder (--smoke; default BUILD/fixtures)")
    a = ap.parse_args()
    if a.smoke:
        fixtures = Path(a.fixtures) if a.fixtures else Path(a.build) / "fixtures"
        a.model, a.steps, a.size, a.pairs = str(fixtures / "pipeline/tiny-sd1-e2e"), 2, 64, 1
        # A sanitizer build keeps its fixtures elsewhere: never fall back to writing a 4 GB full-size model.
        if not (Path(a.model) / "model_index.json").exists():
            sys.exit(f"vs_diffusers --smoke: {a.model} is missing (run tests/parity/make_fixtures.py)")
    model = Path(a.model)
    if not (model / "model_index.json").exists():
        subprocess.run([PY, HERE / "make_sd15_random.py", model], check=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS=str(a.threads))
    common = ["--model", str(model), "--steps", str(a.steps), "--size", str(a.size), "--threads", str(a.threads),
              "--mode", a.mode]
    plan = json.dumps({"precision": a.precision, "attention": "sdpa"})
    ours = [str(Path(a.build) / "bin/dd_bench_run"), *common, "--plan", plan]
    theirs = [PY, str(HERE / "reference_run.py"), *common, "--dtype", a.precision]
    rows = {"diffusiondesk": [], "diffusers": []}
    # Final images, kept per model, size, steps and precision so that a later bf16 run can be compared with the
    # fp32 one (and a smoke run never overwrites a full run's).
    images = Path(a.build) / "vs_diffusers"
    images.mkdir(parents=True, exist_ok=True)

    def image(name, precision):
        return images / f"{model.name}_{a.mode}_{a.size}px_{a.steps}steps_{name}_{precision}.rgb"

    for i in range(a.pairs):
        for name, cmd in (("diffusiondesk", ours), ("diffusers", theirs)):
            rows[name].append(run(cmd + ["--raw", str(image(name, a.precision))], env))
            print(f"pair {i + 1} {name}: " + ", ".join(f"{m} {fmt(m, rows[name][-1][m])}" for m in METRICS),
                  file=sys.stderr)
    peak = json.loads(subprocess.run([str(Path(a.build) / "bin/fma_peak"), str(a.threads)], capture_output=True,
                                     text=True, check=True).stdout)

    report = {"settings": vars(a), "fma_peak_gflops": peak["gflops"], "runs": rows, "medians": {}, "ratios": {}}
    print(f"\n{a.mode}, {a.size}², {a.steps} steps, Euler, CFG 7.5, batch 1, {a.precision}, {a.threads} threads, "
          f"{a.pairs} pairs (A B A B …)\n")
    print("| measure | DiffusionDesk (median) | diffusers (median) | ratio per pair | median ratio |")
    print("| --- | --- | --- | --- | --- |")
    for m in METRICS:
        ours_v = [r[m] for r in rows["diffusiondesk"]]
        ref_v = [r[m] for r in rows["diffusers"]]
        ratios = [x / y for x, y in zip(ours_v, ref_v) if y]
        report["medians"][m] = {"diffusiondesk": statistics.median(ours_v), "diffusers": statistics.median(ref_v)}
        report["ratios"][m] = ratios
        print(f"| {m} | {fmt(m, statistics.median(ours_v))} | {fmt(m, statistics.median(ref_v))} | "
              f"{', '.join(f'{r:.2f}' for r in ratios)} | {statistics.median(ratios):.2f} |")
    flop = UNET_STEP_TFLOP_512_CFG * 1e12 * (a.size / 512) ** 2  # convolutions scale with pixels (attention faster)
    # The FLOP count is one SD 1.5 step at --size: meaningless for the tiny smoke model, and for a hires run, whose
    # median step is a first-pass step at half the size.
    for name in ([] if a.smoke or a.mode == "hires" else rows):
        step = report["medians"]["step_s"][name]
        gflops = flop / step / 1e9
        report[f"{name}_unet_gflops"] = gflops
        print(f"\n{name}: UNet step {gflops:.0f} GFLOP/s = {100 * gflops / peak['gflops']:.0f} % of the measured "
              f"fp32 FMA peak ({peak['gflops']:.0f} GFLOP/s, {peak['threads']} threads)", end="")
    print()
    # Same seed, same weights: the two implementations' images should agree (fp32: to 1/255 or so).
    def max_diff(p, q):
        x, y = p.read_bytes(), q.read_bytes()
        return max(abs(u - v) for u, v in zip(x, y)) if len(x) == len(y) else None

    diff = max_diff(image("diffusiondesk", a.precision), image("diffusers", a.precision))
    if diff is not None:
        report["max_abs_diff_vs_diffusers"] = diff
        print(f"image max |DiffusionDesk − diffusers| = {diff}/255")
    if a.precision != "fp32":  # the reduced precision's parity, against an earlier fp32 run of the same settings
        for name in rows:
            fp32 = image(name, "fp32")
            if not fp32.exists():
                print(f"{name}: no fp32 image of these settings yet (run --precision fp32 first) for the {a.precision} parity")
                continue
            d = max_diff(image(name, a.precision), fp32)
            report[f"{name}_max_abs_diff_vs_fp32"] = d
            print(f"{name}: image max |{a.precision} − fp32| = {d}/255")
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
