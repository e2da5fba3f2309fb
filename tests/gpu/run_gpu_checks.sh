#!/usr/bin/env bash
# GPU checks (docs/gpu-checks.md). On a machine with an NVIDIA GPU, this repository and a Python
# with the pinned torch (CUDA build) and nothing else (no diffusers, no transformers): builds the core and the
# CLI against that torch, writes full-size random-weight SD 1.5 and SDXL models with dd_random_model from the
# configs in bench/random-models (no downloads), then for each preset caps this
# process's CUDA memory to the preset's budget (CUDACachingAllocator::setMemoryFraction, what
# torch.cuda.set_per_process_memory_fraction does) and generates one image at the preset's resolution,
# printing one table: preset, model, size, peak VRAM, s/image and what the engine changed to fit.
# Sized for an H200: under 8 minutes including the build (16 cores) and the model writing.
#
#   tests/gpu/run_gpu_checks.sh                  # everything
#   PRESETS="6gb 8gb" MODELS_TO_RUN=sdxl STEPS=10 tests/gpu/run_gpu_checks.sh
# Environment: PYTHON (default .venv/bin/python, else python3), BUILD_DIR (build-gpu), MODEL_DIR
# ($BUILD_DIR/models), PRESETS ("4gb 6gb 8gb 12gb 24gb"), MODELS_TO_RUN ("sd15 sdxl"), STEPS (20),
# ROW_TIMEOUT (seconds per row, 150), TABLE (where the table is also written, $BUILD_DIR/gpu-checks.md),
# DEPS_DIR (a folder with include/ and lib/ holding nlohmann_json, OpenSSL's and zlib's headers and libcrypto.so.3 /
# libz.so.1, for a machine that lacks their development packages; tests/gpu/gather_deps.sh makes it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON="$(command -v python3)"; fi
fi
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
MODEL_DIR="${MODEL_DIR:-$BUILD_DIR/models}"
PRESETS="${PRESETS:-4gb 6gb 8gb 12gb 24gb}"
MODELS_TO_RUN="${MODELS_TO_RUN:-sd15 sdxl}"
STEPS="${STEPS:-20}"
ROW_TIMEOUT="${ROW_TIMEOUT:-150}"
TABLE="${TABLE:-$BUILD_DIR/gpu-checks.md}"
JOBS="$(nproc)"

say() { printf '[gpu-checks %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# 1. What this needs, with a clear message for what is missing.
command -v nvidia-smi >/dev/null || die "no nvidia-smi: this script needs an NVIDIA GPU and its driver"
command -v cmake >/dev/null || die "cmake is not installed"
"$PYTHON" - <<'PY' || die "$PYTHON needs torch with CUDA (pip install torch==<the pinned version in requirements.txt>)"
import torch
assert torch.cuda.is_available(), "torch cannot see a CUDA device"
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
PY
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2

# 2. Build the core, the CLI and the row runner (no Qt needed).
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
deps=()
if [[ -n "${DEPS_DIR:-}" ]]; then
    [[ -f /usr/include/nlohmann/json.hpp ]] || deps+=(-DDD_EXTRA_INCLUDE="$DEPS_DIR/include")
    if [[ ! -f /usr/include/openssl/sha.h ]]; then
        crypto="$(ls /usr/lib/x86_64-linux-gnu/libcrypto.so.3 2>/dev/null || echo "$DEPS_DIR/lib/libcrypto.so.3")"
        deps+=(-DOPENSSL_INCLUDE_DIR="$DEPS_DIR/include" -DOPENSSL_CRYPTO_LIBRARY="$crypto")
    fi
    if [[ ! -f /usr/include/zlib.h ]]; then
        zlib="$(ls /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null || echo "$DEPS_DIR/lib/libz.so.1")"
        deps+=(-DZLIB_INCLUDE_DIR="$DEPS_DIR/include" -DZLIB_LIBRARY="$zlib")
    fi
    say "development packages taken from $DEPS_DIR: ${deps[*]:-none needed}"
fi
say "configuring $BUILD_DIR"
mkdir -p "$(dirname "$BUILD_DIR")"
cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" -DDD_CORE_ONLY=ON -DDD_BUILD_GUI=OFF -DCMAKE_BUILD_TYPE=Release \
    -DDD_PYTHON="$PYTHON" "${deps[@]}" >"$BUILD_DIR.configure.log" 2>&1 || { tail -30 "$BUILD_DIR.configure.log"; die "cmake configure failed"; }
say "building with $JOBS jobs"
cmake --build "$BUILD_DIR" -j "$JOBS" --target dd_gpu_preset_run dd_random_model >"$BUILD_DIR.build.log" 2>&1 ||
    { tail -40 "$BUILD_DIR.build.log"; die "build failed (log: $BUILD_DIR.build.log)"; }
RUNNER="$BUILD_DIR/bin/dd_gpu_preset_run"
[[ -x "$RUNNER" ]] || die "the build did not produce $RUNNER"

# 3. Full-size random-weight models (seeded; written once, reused on the next run).
mkdir -p "$MODEL_DIR"
for m in $MODELS_TO_RUN; do
    [[ -f "$ROOT/bench/random-models/$m/model_index.json" ]] || die "unknown model '$m' in MODELS_TO_RUN (sd15, sdxl)"
    say "model $m"
    "$BUILD_DIR/bin/dd_random_model" "$ROOT/bench/random-models/$m" "$MODEL_DIR/$m-random" --dtype fp16 >&2 ||
        die "could not write the $m model"
done

# 4. One process per row: each starts from an empty allocator, and its cap applies to it alone.
{
    echo "GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); $STEPS steps, Euler, CFG 7, one image"
    echo
    echo "| preset | model | size | peak VRAM | s/image | notes |"
    echo "| --- | --- | --- | ---: | ---: | --- |"
} | tee "$TABLE"
for preset in $PRESETS; do
    for m in $MODELS_TO_RUN; do
        row="$(timeout "$ROW_TIMEOUT" "$RUNNER" --model "$MODEL_DIR/$m-random" --preset "$preset" --steps "$STEPS" \
                   --label "$m" 2>>"$BUILD_DIR/gpu-checks.stderr.log")" || true
        [[ -n "$row" ]] || row="| $preset | $m | | — | — | no result (crashed or over ${ROW_TIMEOUT} s; see $BUILD_DIR/gpu-checks.stderr.log) |"
        echo "$row" | tee -a "$TABLE"
    done
done
say "table written to $TABLE (paste it into docs/benchmarks.md)"
