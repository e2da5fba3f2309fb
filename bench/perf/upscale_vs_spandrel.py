"""`diffusiondesk-cli upscale` against spandrel on a full-size ESRGAN (RRDBNet, 64 features, 23 blocks, 4x — the
architecture of 4x-UltraSharp and RealESRGAN_x4plus) with random weights, in pairs run one after the other so that
a noisy machine's load falls on both sides alike. Each side is its own process; the wall time includes loading
the network and reading / writing the images, the peak is the process's maximum RSS.

    .venv/bin/python bench/perf/upscale_vs_spandrel.py build/bin/diffusiondesk-cli --size 192 --pairs 2 --threads 2
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

SPANDREL_SIDE = r"""
import sys, time, torch, numpy as np
from PIL import Image
from spandrel import ModelLoader
torch.set_num_threads(int(sys.argv[4]))
t0 = time.perf_counter()
net = ModelLoader().load_from_file(sys.argv[1]).model.eval()
x = torch.from_numpy(np.array(Image.open(sys.argv[2]).convert("RGB"))).permute(2, 0, 1).unsqueeze(0).float() / 255
with torch.inference_mode():
    y = net(x).clamp(0, 1)
Image.fromarray((y[0].permute(1, 2, 0) * 255).round().byte().numpy()).save(sys.argv[3])
print(time.perf_counter() - t0)
"""


def wall_seconds(cmd, env):
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0


def peak_gib(cmd, env):
    """The command's maximum RSS, measured in a fresh interpreter (ru_maxrss of children is the largest so far)."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(subprocess.run([sys.executable, "-c", probe, *cmd], env=env, check=True, capture_output=True,
                              text=True).stdout) / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--size", type=int, default=192)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    from PIL import Image
    from safetensors.torch import save_file
    from spandrel.architectures.ESRGAN import ESRGAN

    work = pathlib.Path(tempfile.mkdtemp(prefix="upscale-bench-"))
    torch.manual_seed(0)
    net = ESRGAN(in_nc=3, out_nc=3, num_filters=64, num_blocks=23, scale=4)
    model = work / "RRDB-4x-random.safetensors"
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(model))
    image = work / "in.png"
    Image.fromarray(torch.randint(0, 256, (a.size, a.size, 3), dtype=torch.uint8).numpy()).save(image)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), DD_THREADS=str(a.threads))
    ours = [a.cli, "upscale", str(image), "--model", str(model), "--tile", "0", "--out", str(work / "ours.png")]
    ref = [sys.executable, "-c", SPANDREL_SIDE, str(model), str(image), str(work / "ref.png"), str(a.threads)]
    rows = []
    for pair in range(a.pairs):
        ours_wall, ref_wall = wall_seconds(ours, env), wall_seconds(ref, env)
        rows.append({"pair": pair, "ours_s": ours_wall, "spandrel_s": ref_wall, "ratio": ours_wall / ref_wall})
        print(f"pair {pair}: ours {ours_wall:.2f} s, spandrel {ref_wall:.2f} s, ratio {ours_wall / ref_wall:.2f}", flush=True)
    peaks = {"ours": peak_gib(ours, env), "spandrel": peak_gib(ref, env)}
    import numpy as np
    diff = np.abs(np.array(Image.open(work / "ours.png")).astype(int) - np.array(Image.open(work / "ref.png")).astype(int)).max()
    print(f"peak RSS: ours {peaks['ours']:.2f} GiB, spandrel {peaks['spandrel']:.2f} GiB; pictures differ by {diff}/255")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({"size": a.size, "threads": a.threads, "pairs": rows, "peak_gib": peaks,
                                                     "max_diff_255": int(diff)}, indent=1))
    for f in work.iterdir():
        f.unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
