#!/usr/bin/env python3
"""Builds every reference fixture with the pinned reference packages (diffusers, transformers, safetensors).

Runs each tests/parity/fixtures_*.py <outdir>. Skips the work when <outdir>/.stamp already records the same
package versions and the same fixture scripts, so ./test.sh is fast after the first run. Never downloads:
the hub is switched off and every model is a tiny random-weight one built here.
"""
import concurrent.futures
import hashlib
import importlib.metadata as md
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
PACKAGES = ["torch", "diffusers", "transformers", "safetensors", "numpy", "peft", "spandrel", "lark"]


def stamp(scripts):
    h = hashlib.sha256()
    for p in PACKAGES:
        h.update(f"{p}=={md.version(p)}\n".encode())
    h.update(f"slow={os.environ.get('DD_SLOW_FIXTURES', '')}\n".encode())
    for s in scripts:
        h.update(s.name.encode() + s.read_bytes())
    # The embedded model is an input too (fixtures_embedded.py): retraining it must rebuild its references.
    for f in sorted((HERE.parents[1] / "resources/models/shapes").rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(HERE.parents[1])).encode() + hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def run_script(script, out, env):
    """One fixture script in its own process; its output is returned, printed whole when it ends."""
    r = subprocess.run([sys.executable, str(script), str(out)], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return script, r.returncode, r.stdout


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_fixtures.py OUTDIR")
    out = pathlib.Path(sys.argv[1]).resolve()
    scripts = sorted(HERE.glob("fixtures_*.py"))
    want = stamp(sorted(HERE.glob("*.py")))  # the fixture scripts and what they import from each other
    stamp_file = out / ".stamp"
    if stamp_file.exists() and stamp_file.read_text() == want:
        print(f"fixtures: up to date in {out}")
        return
    out.mkdir(parents=True, exist_ok=True)
    stamp_file.unlink(missing_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               DIFFUSERS_VERBOSITY="error", TRANSFORMERS_VERBOSITY="error", PYTHONHASHSEED="0")
    # fixtures_models.py and fixtures_pipeline.py first, one after the other: the others read the tiny models and
    # pipelines they write. The rest are independent and run side by side, one per core: each process spends
    # seconds importing torch and diffusers on one core (18 scripts one by one took about 4 min on 2 cores).
    first = [HERE / "fixtures_models.py", HERE / "fixtures_pipeline.py"]
    rest = [s for s in scripts if s not in first]
    failed = []
    def report(script, code, output):
        print(f"fixtures: {script.name}" + (f" FAILED (exit {code})" if code else ""), flush=True)
        if output.strip():
            print(output.rstrip(), flush=True)
        if code:
            failed.append(script.name)
    for s in first:
        report(*run_script(s, out, env))
        if failed:
            sys.exit(f"fixtures: {failed[0]} failed")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        for result in pool.map(lambda s: run_script(s, out, env), rest):
            report(*result)
    if failed:
        sys.exit("fixtures: failed: " + ", ".join(failed))
    stamp_file.write_text(want)


if __name__ == "__main__":
    main()
