#!/usr/bin/env python3
"""diffusiondesk-cli serve driven by the real A1111 client, the `webuiapi` package (pinned in requirements.txt).

Each check starts from what a script written for A1111 does: txt2img, img2img, png-info, switching the model,
interrupting a run, authentication. Images are compared pixel for pixel with what `diffusiondesk-cli generate`
makes from the same settings. Then a bounded load test: 50 requests at once, malformed and oversized bodies among
them; every valid one answered, each job made exactly once, the server's memory bounded, a clean stop.

usage: test_serve.py --cli build/bin/diffusiondesk-cli
"""
import argparse
import base64
import concurrent.futures
import io
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import requests
import webuiapi
from PIL import Image

FAILURES = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        FAILURES.append(what)


EMBEDDINGS = ""  # fixtures_textual_inversion.py's folder (main sets it)


class Server:
    """A `serve` process on a free port; its first stdout line names the port."""

    def __init__(self, cli, out, *extra):
        self.proc = subprocess.Popen([cli, "serve", "--port", "0", "--out", str(out), "--no-library", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not match:
            self.proc.kill()
            sys.exit(f"serve did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(match.group(1))
        self.url = f"http://127.0.0.1:{self.port}/sdapi/v1"

    def rss_mb(self):
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def cli_image(cli, out, *args):
    path = pathlib.Path(out) / f"cli-{len(list(pathlib.Path(out).glob('cli-*')))}.png"
    subprocess.run([cli, "generate", "--no-library", "--no-sidecar", "--threads", "2", "--out", str(path), *args], check=True,
                   capture_output=True)
    return Image.open(path).convert("RGB")


def same_pixels(a, b):
    return a.size == b.size and a.convert("RGB").tobytes() == b.convert("RGB").tobytes()


def pngs(folder):
    return sorted(p.name for p in pathlib.Path(folder).glob("*.png"))


def run_client_checks(cli, tmp):
    out = tmp / "out"
    # A fixed thread count on both sides: the count that follows the load (ctest runs tests side by side) changes
    # the order of float sums, and so the last bits of the pixels.
    server = Server(cli, out, "--model", "demo:tiny-sd1", "--threads", "2", "--embeddings-dir", EMBEDDINGS)
    api = webuiapi.WebUIApi(host="127.0.0.1", port=server.port, sampler="Euler a", steps=4)
    prompt = "a red fox in the snow"
    common = ["--prompt", prompt, "--seed", "7", "--steps", "4", "--size", "64x64", "--sampler", "Euler a", "--schedule-type", "Automatic", "--cfg", "7"]

    models = api.util_get_model_names()
    check("demo:tiny-sd1" in models and "shapes (built-in)" in models, f"sd-models lists the start and built-in models {models}")
    check({s["name"] for s in api.get_samplers()} >= {"Euler a", "DPM++ 2M Karras"}, "samplers are A1111's names")
    embeddings = api.get_embeddings()
    check(embeddings["loaded"].get("tinyneg", {}).get("vectors") == 3 and "oldstyle" in embeddings["skipped"],
          f"embeddings lists the folder's files, the pickle skipped {embeddings}")

    r = api.txt2img(prompt=prompt, seed=7, steps=4, width=64, height=64, cfg_scale=7)
    check(len(r.images) == 1 and r.image.size == (64, 64), "txt2img answers one 64x64 image")
    check(r.info["seed"] == 7 and r.info["all_seeds"] == [7] and "Seed: 7" in r.info["infotexts"][0],
          "txt2img info carries the seed and the infotext")
    check(r.info["warnings"] == [], f"webuiapi's default fields raise no warning {r.info['warnings']}")
    check(same_pixels(r.image, cli_image(cli, tmp, "--model", "demo:tiny-sd1", *common)),
          "txt2img image equals diffusiondesk-cli generate's pixel for pixel")
    check(r.image.info.get("parameters", "").startswith(prompt), "the API's PNG carries the A1111 parameters")

    info = api.png_info(r.image)
    check(info.info.startswith(prompt) and "Steps: 4" in info.info, "png-info reads the A1111 text back")
    check(info.parameters.get("Seed") == "7" and info.parameters.get("Size-1") == "64", "png-info parameters dict")

    init = tmp / "init.png"
    r.image.save(init)
    i2i = api.img2img(images=[r.image], prompt=prompt, seed=11, steps=4, width=64, height=64, cfg_scale=7,
                      denoising_strength=0.5)
    cli_i2i = cli_image(cli, tmp, "--model", "demo:tiny-sd1", "--prompt", prompt, "--seed", "11", "--steps", "4",
                        "--size", "64x64", "--sampler", "Euler a", "--schedule-type", "Automatic", "--cfg", "7", "--init", str(init), "--strength", "0.5")
    check(same_pixels(i2i.image, cli_i2i), "img2img image equals the CLI's --init --strength 0.5")

    mask = Image.new("L", (64, 64), 0)
    mask.paste(255, (16, 16, 48, 48))
    mask_file = tmp / "mask.png"
    mask.save(mask_file)
    # webuiapi asks for "only masked" with 0 px of padding by default, as A1111's API does.
    inpainted = api.img2img(images=[r.image], mask_image=mask, prompt=prompt, seed=3, steps=4, width=64, height=64)
    cli_inpainted = cli_image(cli, tmp, "--model", "demo:tiny-sd1", "--prompt", prompt, "--seed", "3", "--steps", "4",
                              "--size", "64x64", "--sampler", "Euler a", "--schedule-type", "Automatic", "--cfg", "7", "--init", str(init),
                              "--strength", "0.75", "--mask", str(mask_file), "--only-masked", "--masked-padding", "0",
                              "--masked-content", "fill")
    check(not inpainted.info["warnings"] and same_pixels(inpainted.image, cli_inpainted),
          "img2img with a mask inpaints only the masked area from A1111's fill, as the CLI's --only-masked "
          "--masked-padding 0 --masked-content fill")
    wide, wide_mask = Image.new("RGB", (96, 80), (40, 90, 160)), Image.new("L", (96, 80), 0)
    wide_mask.paste(255, (60, 20, 80, 50))
    kept = api.img2img(images=[wide], mask_image=wide_mask, prompt=prompt, seed=3, steps=2, width=64, height=64)
    check(kept.image.size == (96, 80), f"only masked answers at the init image's size, as A1111 does ({kept.image.size})")

    api.util_set_model("shapes")
    check(api.get_options()["sd_model_checkpoint"] == "shapes (built-in)", "options switch the model (util_set_model)")
    shapes = api.txt2img(prompt="a large red circle in the center on a white background", seed=5, steps=8,
                         width=128, height=128, cfg_scale=3)
    builtin = str(pathlib.Path(cli).resolve().parent.parent / "share/diffusiondesk/models/shapes")
    check(same_pixels(shapes.image, cli_image(cli, tmp, "--model", builtin, "--prompt",
                                              "a large red circle in the center on a white background", "--seed", "5",
                                              "--steps", "8", "--size", "128x128", "--sampler", "Euler a", "--schedule-type", "Automatic", "--cfg", "3")),
          "after the switch txt2img runs the built-in model, equal to the CLI's")
    api.util_set_model("demo:tiny-sd1")

    bad = requests.post(server.url + "/txt2img", json={"prompt": "x", "sampler_name": "Nope"})
    check(bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "sampler_name"],
          "an unknown sampler is 422 naming sampler_name")
    bad = requests.post(server.url + "/txt2img", json={"prompt": "x", "enable_hr": True, "hr_upscaler": "R-ESRGAN 4x+"})
    check(bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "hr_upscaler"],
          "a hires upscaler the server does not have is 422 naming hr_upscaler, before it is queued")
    bad = requests.post(server.url + "/options", json={"sd_model_checkpoint": "/etc/passwd"})
    check(bad.status_code == 422, "options accept only the server's models, never a path")
    odd = requests.post(server.url + "/txt2img", json={"prompt": "x", "steps": 2, "width": 64, "height": 64,
                                                       "tiling": True, "my_field": 1})
    warnings = json.loads(odd.json()["info"])["warnings"]
    check(odd.status_code == 200 and any("tiling" in w for w in warnings) and any("my_field" in w for w in warnings),
          f"unsupported fields are ignored with a warning in info {warnings}")

    # Interrupt mid-run: the request comes back at once, marked interrupted.
    done = {}
    runner = threading.Thread(target=lambda: done.update(r=api.txt2img(prompt=prompt, steps=400, width=64, height=64)))
    runner.start()
    progress = {}
    for _ in range(600):
        progress = api.get_progress()
        if progress["state"]["sampling_step"] >= 2:
            break
        time.sleep(0.05)
    check(progress["state"]["sampling_steps"] == 400 and 0 < progress["progress"] < 1, f"progress while running {progress['progress']:.3f}")
    asked = time.monotonic()
    api.interrupt()
    runner.join(timeout=60)
    check(not runner.is_alive() and done["r"].info["interrupted"] and done["r"].images == [],
          f"interrupt stops the run ({time.monotonic() - asked:.2f} s after asking)")
    check(api.get_progress()["progress"] == 0, "progress is idle again")

    # A client that goes away: the job still finishes and is saved once; asking again with its task id answers it.
    before = pngs(out)
    body = {"prompt": "gone", "seed": 99, "steps": 60, "width": 64, "height": 64, "force_task_id": "task-gone"}
    try:
        requests.post(server.url + "/txt2img", json=body, timeout=0.3)
    except requests.exceptions.Timeout:
        pass
    for _ in range(600):
        if api.get_progress()["state"]["job"] == "" and len(pngs(out)) > len(before):
            break
        time.sleep(0.05)
    made = [p for p in pngs(out) if p not in before]
    again = requests.post(server.url + "/txt2img", json=body).json()
    check(len(made) == 1 and len(pngs(out)) == len(before) + 1 and json.loads(again["info"])["all_seeds"] == [99],
          "a disconnected client's job is saved once; its task id answers it again without a rerun")
    check(server.stop() == 0, "SIGTERM stops the server cleanly")


def run_auth_check(cli, tmp):
    server = Server(cli, tmp / "auth", "--model", "demo:tiny-sd1", "--api-auth", "artist:secret")
    check(requests.get(server.url + "/sd-models").status_code == 401, "--api-auth: no credentials, 401")
    check(requests.get(server.url + "/sd-models", auth=("artist", "wrong")).status_code == 401, "--api-auth: wrong password, 401")
    api = webuiapi.WebUIApi(host="127.0.0.1", port=server.port, username="artist", password="secret")
    check("demo:tiny-sd1" in api.util_get_model_names(), "--api-auth: webuiapi with the credentials is answered")
    server.stop()


def run_load_test(cli, tmp):
    out = tmp / "load"
    server = Server(cli, out, "--model", "demo:tiny-sd1", "--max-body", "1")
    requests.post(server.url + "/txt2img", json={"prompt": "warm", "steps": 1, "width": 64, "height": 64}).raise_for_status()
    rss_before = server.rss_mb()
    warm = len(pngs(out))

    def send(k):
        if k % 10 == 3:
            return "bad", requests.post(server.url + "/txt2img", data=b'{"prompt": "x", "steps": ', timeout=300)
        if k % 10 == 7:
            return "big", requests.post(server.url + "/txt2img", json={"prompt": "x" * (2 << 20)}, timeout=300)
        body = {"prompt": f"load {k}", "seed": 1000 + k, "steps": 2, "width": 64, "height": 64}
        return "ok", requests.post(server.url + "/txt2img", json=body, timeout=300)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(send, range(50)))
    seconds = time.monotonic() - started
    valid = [r for kind, r in answers if kind == "ok"]
    check(all(r.status_code == 200 and len(r.json()["images"]) == 1 for r in valid), f"all {len(valid)} valid requests answered")
    check(all(r.status_code == 422 for kind, r in answers if kind == "bad"), "malformed bodies: 422")
    check(all(r.status_code == 413 for kind, r in answers if kind == "big"), "bodies over --max-body: 413")
    seeds = sorted(json.loads(r.json()["info"])["seed"] for r in valid)
    check(seeds == sorted(1000 + k for k in range(50) if k % 10 not in (3, 7)), "each valid request got its own seed's image")
    check(len(pngs(out)) - warm == len(valid), f"every job made exactly once ({len(pngs(out)) - warm} images for {len(valid)} requests)")
    journal = [json.loads(l) for l in (out / ".diffusiondesk-api-queue.jsonl").read_text().splitlines() if l.strip()]
    done = [e["id"] for e in journal if e.get("event") == "done"]
    check(len(done) == len(set(done)) == len(valid) + 1, "the queue's journal records each job done once")
    rss_after = server.rss_mb()
    check(rss_after < rss_before + 400, f"server RSS bounded: {rss_before:.0f} MB before, {rss_after:.0f} MB after")
    print(f"load: 50 requests in {seconds:.1f} s, RSS {rss_before:.0f} -> {rss_after:.0f} MB", flush=True)
    check(server.stop() == 0, "the server stops cleanly after the load")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--fixtures", required=True)
    args = parser.parse_args()
    global EMBEDDINGS
    EMBEDDINGS = str(pathlib.Path(args.fixtures) / "textual_inversion" / "embeddings")
    with tempfile.TemporaryDirectory(prefix="dd-serve-") as t:
        tmp = pathlib.Path(t)
        run_client_checks(args.cli, tmp)
        run_auth_check(args.cli, tmp)
        run_load_test(args.cli, tmp)
    if FAILURES:
        sys.exit(f"{len(FAILURES)} checks failed: " + "; ".join(FAILURES))
    print("all checks passed")


if __name__ == "__main__":
    main()
