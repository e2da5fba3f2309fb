#!/usr/bin/env bash
# The GPU checks rehearsed on a machine without a GPU, in an environment as bare as an accelerator machine's: a
# fresh Python venv holding torch and what torch imports and nothing else (linked from PYTHON_FROM's
# site-packages, no download), CMake barred from Qt, OpenCV, Exiv2 and SQLite, and nlohmann_json, OpenSSL and
# zlib taken from a carried folder (tests/gpu/gather_deps.sh) as there. run_gpu_checks.sh must build, write the
# SD 1.5 model, run determinism mode on the CPU and report every CUDA check as "skipped: no CUDA".
#   tests/gpu/rehearse.sh [WORK_DIR]       (PYTHON_FROM: default .venv/bin/python; BUDGET_S: default 900)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="${1:-$(mktemp -d)}"
PYTHON_FROM="${PYTHON_FROM:-$ROOT/.venv/bin/python}"
mkdir -p "$WORK"
# The models (1.7 GB), the build and the venv go at the end; the report and the logs (WORK/out) stay.
trap 'rm -rf "$WORK/models" "$WORK/build" "$WORK/venv" "$WORK/deps"' EXIT

# A venv with torch's dependency closure only: each distribution's top-level files linked into its site-packages.
base="$("$PYTHON_FROM" -c 'import sys; print(sys.base_prefix)')/bin/python3"
rm -rf "$WORK/venv"
"$base" -m venv --without-pip "$WORK/venv"
site="$("$WORK/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$PYTHON_FROM" - "$site" <<'PY'
import importlib.metadata as md, os, re, sys
site = sys.argv[1]
want, seen = ["torch"], set()
while want:
    name = want.pop()
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        continue
    seen.add(key)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue  # an optional extra's dependency that is not installed
    for req in dist.requires or []:
        if "extra ==" in req:
            continue
        want.append(re.split(r"[ ;<>=!~\[(]", req, maxsplit=1)[0])
    tops = {str(f).split("/")[0] for f in dist.files or [] if not str(f).startswith("..")}
    for top in tops:
        src = os.path.join(str(dist.locate_file("")), top)
        dst = os.path.join(site, top)
        if os.path.exists(src) and not os.path.lexists(dst) and not top.endswith(".pth") and top != "__pycache__":
            os.symlink(src, dst)
print(f"rehearsal venv: {len(seen)} distributions linked (torch and its dependencies)", file=sys.stderr)
PY
"$WORK/venv/bin/python" -c 'import torch; print("rehearsal venv: torch", torch.__version__)' >&2
if "$WORK/venv/bin/python" -c 'import diffusers' 2>/dev/null; then echo "rehearsal venv is not bare: diffusers importable" >&2; exit 1; fi

bash "$ROOT/tests/gpu/gather_deps.sh" "$WORK/deps" >/dev/null
barred="-DCMAKE_DISABLE_FIND_PACKAGE_Qt6=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenCV=ON -DCMAKE_DISABLE_FIND_PACKAGE_exiv2=ON"
barred+=" -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON"
status=0
env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin TMPDIR="${TMPDIR:-/tmp}" ${CCACHE_DISABLE:+CCACHE_DISABLE=1} \
    PYTHON="$WORK/venv/bin/python" BUILD_DIR="$WORK/build" MODEL_DIR="$WORK/models" OUT="$WORK/out" \
    DEPS_DIR="$WORK/deps" FORCE_DEPS=1 CMAKE_EXTRA="$barred" MODELS_TO_RUN=sd15 BUDGET_S="${BUDGET_S:-900}" \
    OMP_WAIT_POLICY=PASSIVE bash "$ROOT/tests/gpu/run_gpu_checks.sh" || status=$?
report="$WORK/out/gpu-checks.md"
cat "$report"
[[ $status == 0 ]] || { echo "rehearsal: run_gpu_checks.sh exited $status" >&2; exit 1; }

# What a run without CUDA must have said.
expect() { grep -qF -- "$1" "$report" || { echo "rehearsal: the report lacks: $1" >&2; exit 1; }; }
grep -q '^| cpu | sd15 | 256x256 | identical |' "$report" || { echo "rehearsal: no identical determinism row" >&2; exit 1; }
for check in presets fp16 offload oom diffusers; do expect "- skipped $check: no CUDA"; done
expect "build: "
grep -q '"check":"determinism"' "$WORK/out/gpu-checks.jsonl" || { echo "rehearsal: no determinism record in the JSON" >&2; exit 1; }
"$WORK/venv/bin/python" -c 'import json, sys; [json.loads(line) for line in open(sys.argv[1])]' "$WORK/out/gpu-checks.jsonl" ||
    { echo "rehearsal: gpu-checks.jsonl has a line that is not JSON" >&2; exit 1; }
! grep -q "error" "$report" || { echo "rehearsal: the report has an error" >&2; exit 1; }
if ldd "$WORK/build/bin/dd_gpu_check" | grep -Ei "qt6|opencv|exiv2|sqlite"; then
    echo "rehearsal: dd_gpu_check links a library an accelerator machine lacks" >&2
    exit 1
fi
echo "rehearsal passed: built without Qt / OpenCV / Exiv2 / SQLite, determinism identical on the CPU, CUDA checks skipped"
