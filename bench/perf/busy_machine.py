#!/usr/bin/env python3
"""How diffusiondesk-cli generate slows down when other programs want the CPU (docs/benchmarks.md, "A busy
computer"). For each load (0, 1, 2 ... busy-looping processes) every configuration runs in turn, REPS times,
so the configurations of one load share the machine's state; the table gives median wall seconds (process start
to exit) and the ratio to the same configuration on the idle machine.

  bench/perf/busy_machine.py --cli build/bin/diffusiondesk-cli --loads 0,1,2 --reps 3 \
      --config 'default=' --config 'passive=OMP_WAIT_POLICY=PASSIVE' -- --prompt "a red star" --steps 20

Each --config is NAME=ENV (space-separated VAR=VALUE pairs, may be empty) [;ARGS] (extra CLI arguments)
[;CLI] (another build of the CLI, e.g. the previous commit's, for a before/after in one run).
"""
import argparse, os, statistics, subprocess, sys, tempfile, time


def busy_loops(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def run(cli, env, args, out):
    e = dict(os.environ)
    for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS"):
        e.pop(k, None)
    e.update(env)
    t = time.monotonic()
    p = subprocess.run([cli, "generate", "--out", out, "--no-sidecar", *args], env=e, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {p.stderr.strip()}")
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--loads", default="0,1,2")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--config", action="append", required=True)
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    configs = []
    for c in a.config:
        name, _, rest = c.partition("=")
        env_text, _, rest = rest.partition(";")
        extra, _, cli = rest.partition(";")
        env = dict(kv.split("=", 1) for kv in env_text.split())
        configs.append((name, env, extra.split(), cli or a.cli))
    loads = [int(x) for x in a.loads.split(",")]
    seconds = {}
    with tempfile.TemporaryDirectory() as out:
        for load in loads:
            loops = busy_loops(load)
            time.sleep(0.5)
            try:
                for _ in range(a.reps):
                    for name, env, extra, cli in configs:
                        seconds.setdefault((name, load), []).append(run(cli, env, args + extra, out))
            finally:
                for p in loops:
                    p.kill()
            print(f"load {load} done", file=sys.stderr, flush=True)
    print("| configuration | " + " | ".join(f"{l} busy: s (× idle)" for l in loads) + " |")
    print("| --- |" + " ---: |" * len(loads))
    for name, *_ in configs:
        idle = statistics.median(seconds[(name, loads[0])])
        cells = []
        for l in loads:
            m = statistics.median(seconds[(name, l)])
            cells.append(f"{m:.2f} ({m / idle:.2f}×)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nall runs (s): " + "; ".join(f"{n}@{l}: " + ", ".join(f"{x:.2f}" for x in v) for (n, l), v in seconds.items()))


if __name__ == "__main__":
    main()
