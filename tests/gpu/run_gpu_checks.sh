#!/usr/bin/env bash
# GPU checks (docs/gpu-checks.md): one script for a bare accelerator machine — this repository, a compiler,
# CMake and a Python with PyTorch, nothing else, no network. It builds the engine against that torch
# (-DDD_CORE_ONLY: no Qt, OpenCV, Exiv2 or SQLite), writes full-size random-weight SD 1.5 and SDXL models (no
# downloads), then measures, each in a process of its own (bench/gpu_check.cpp):
#   presets      each preset at its resolution under a CUDA memory cap equal to its budget: peak against the
#                budget and the prediction, s/image, what the engine changed to fit
#   fp16         UNet, VAE and a 4-step run in fp16 against fp32 on the same device
#   offload      model, sequential and group offload (prefetch streams): peak and time
#   oom          a plan that cannot fit under a too-small cap: the out-of-memory ladder's outcome
#   determinism  determinism mode twice: the same bytes (also on the CPU)
#   diffusers    the same settings through diffusers, where $PYTHON has it: time and memory ratio
# It keeps to BUDGET_S seconds of wall time, build included (a step that cannot finish in what is left is
# skipped), writes results as they come (OUT/gpu-checks.md, OUT/gpu-checks.jsonl) and says what it skipped and
# why. Without CUDA it builds, writes the models and runs what the CPU can (tests/gpu/rehearse.sh).
#
# Environment: PYTHON (default .venv/bin/python, else python3), BUILD_DIR (build-gpu), MODEL_DIR
# ($BUILD_DIR/models), OUT ($BUILD_DIR/out), BUDGET_S (480), PRESETS ("4gb 6gb 8gb 12gb 24gb"), MODELS_TO_RUN
# ("sd15 sdxl"), STEPS (20), ROW_TIMEOUT (seconds per row, 150), DEPS_DIR (include/ and lib/ with nlohmann_json,
# OpenSSL's and zlib's headers and libcrypto.so.3 / libz.so.1 for a machine without their development packages;
# tests/gpu/gather_deps.sh makes it), FORCE_DEPS=1 (take them from DEPS_DIR even where the machine has them),
# CMAKE_EXTRA (more configure arguments).
set -uo pipefail

START=$SECONDS
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON="$(command -v python3)"; fi
fi
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
MODEL_DIR="${MODEL_DIR:-$BUILD_DIR/models}"
OUT="${OUT:-$BUILD_DIR/out}"
BUDGET_S="${BUDGET_S:-480}"
PRESETS="${PRESETS:-4gb 6gb 8gb 12gb 24gb}"
MODELS_TO_RUN="${MODELS_TO_RUN:-sd15 sdxl}"
STEPS="${STEPS:-20}"
ROW_TIMEOUT="${ROW_TIMEOUT:-150}"
JOBS="$(nproc)"
TABLE="$OUT/gpu-checks.md"
JSON="$OUT/gpu-checks.jsonl"
mkdir -p "$OUT" "$(dirname "$BUILD_DIR")"
: >"$TABLE"
: >"$JSON"

say() { printf '[gpu-checks %3ds] %s\n' $((SECONDS - START)) "$*" >&2; }
left() { echo $((BUDGET_S - (SECONDS - START))); }
md() { printf '%s\n' "$*" >>"$TABLE"; }
# skip STEP REASON: said, and kept in both files.
skip() {
    say "skipped $1: $2"
    md "- skipped $1: $2"
    printf '{"check":"%s","skipped":"%s"}\n' "$1" "${2//\"/\'}" >>"$JSON"
}
fail() { say "error: $*"; md "- error: $*"; exit 1; }
section() {
    md ""
    md "### $1"
    md ""
    [[ -n "${2:-}" ]] && { md "$2"; md "$(sed -E 's/[^|]+/ --- /g' <<<"$2")"; }
    return 0
}

# 1. What is here. A missing build tool stops it; a missing GPU only narrows it.
command -v cmake >/dev/null || fail "cmake is not installed"
command -v c++ >/dev/null || fail "no C++ compiler (c++) on PATH"
torch_line="$("$PYTHON" -c 'import torch; print(torch.__version__, torch.cuda.is_available(), torch.cuda.device_count())' 2>"$OUT/python.log")" ||
    fail "$PYTHON cannot import torch: $(tail -3 "$OUT/python.log")"
torch_line="$(tail -1 <<<"$torch_line")"
read -r TORCH_VERSION HAVE_CUDA _ <<<"$torch_line"
GPU="none"
if [[ "$HAVE_CUDA" == "True" ]]; then
    GPU="$("$PYTHON" -c 'import torch; p = torch.cuda.get_device_properties(0); print(f"{p.name}, {p.total_memory / 2**30:.0f} GiB")')"
else
    HAVE_CUDA=""
fi
say "torch $TORCH_VERSION ($PYTHON), GPU: $GPU, $JOBS cores, budget ${BUDGET_S} s"
md "# GPU checks"
md ""
md "torch $TORCH_VERSION, GPU: $GPU, $JOBS cores, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"

# 2. The engine and the two programs, against that torch.
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
deps=()
if [[ -n "${DEPS_DIR:-}" ]]; then
    force="${FORCE_DEPS:-}"
    [[ -z "$force" && -f /usr/include/nlohmann/json.hpp ]] || deps+=(-DDD_EXTRA_INCLUDE="$DEPS_DIR/include")
    if [[ -n "$force" || ! -f /usr/include/openssl/sha.h ]]; then
        crypto="$DEPS_DIR/lib/libcrypto.so.3"
        [[ -z "$force" && -f /usr/lib/x86_64-linux-gnu/libcrypto.so.3 ]] && crypto=/usr/lib/x86_64-linux-gnu/libcrypto.so.3
        deps+=(-DOPENSSL_INCLUDE_DIR="$DEPS_DIR/include" -DOPENSSL_CRYPTO_LIBRARY="$crypto")
    fi
    if [[ -n "$force" || ! -f /usr/include/zlib.h ]]; then
        zlib="$DEPS_DIR/lib/libz.so.1"
        [[ -z "$force" && -f /usr/lib/x86_64-linux-gnu/libz.so.1 ]] && zlib=/usr/lib/x86_64-linux-gnu/libz.so.1
        deps+=(-DZLIB_INCLUDE_DIR="$DEPS_DIR/include" -DZLIB_LIBRARY="$zlib")
    fi
    say "development packages taken from $DEPS_DIR: ${deps[*]:-none needed}"
fi
# shellcheck disable=SC2206  # CMAKE_EXTRA is a list of arguments
extra=(${CMAKE_EXTRA:-})
say "configuring $BUILD_DIR"
cmake -S "$ROOT" -B "$BUILD_DIR" "${generator[@]}" -DDD_CORE_ONLY=ON -DDD_BUILD_GUI=OFF -DCMAKE_BUILD_TYPE=Release \
    -DDD_PYTHON="$PYTHON" "${deps[@]}" "${extra[@]}" >"$OUT/configure.log" 2>&1 ||
    { tail -30 "$OUT/configure.log" >&2; fail "cmake configure failed (log: $OUT/configure.log)"; }
say "building with $JOBS jobs"
timeout "$(left)" cmake --build "$BUILD_DIR" -j "$JOBS" --target dd_gpu_check dd_random_model >"$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log" >&2; fail "build failed or ran out of time (log: $OUT/build.log)"; }
CHECK="$BUILD_DIR/bin/dd_gpu_check"
[[ -x "$CHECK" ]] || fail "the build did not produce $CHECK"
md ""
md "build: $((SECONDS - START)) s"

# 3. Full-size random-weight models (seeded; written once, reused by the next run).
mkdir -p "$MODEL_DIR"
models=()
for m in $MODELS_TO_RUN; do
    [[ -f "$ROOT/bench/random-models/$m/model_index.json" ]] || fail "unknown model '$m' in MODELS_TO_RUN (sd15, sdxl)"
    if (($(left) < 60)); then skip "model $m" "out of time"; continue; fi
    say "model $m"
    if timeout "$(left)" "$BUILD_DIR/bin/dd_random_model" "$ROOT/bench/random-models/$m" "$MODEL_DIR/$m-random" --dtype fp16 >&2; then
        models+=("$m")
    else
        skip "model $m" "dd_random_model failed"
    fi
done

# One measurement: bounded by the row timeout and the time left, its row added to the table as it comes.
row() {
    local what="$1"
    shift
    local limit=$ROW_TIMEOUT
    (($(left) < limit)) && limit=$(left)
    if ((limit < 15)); then
        skip "$what" "out of time"
        return
    fi
    local line
    line="$(timeout "$limit" "$CHECK" "$@" --json "$JSON" 2>>"$OUT/checks.stderr.log")"
    local rc=$?
    [[ -n "$line" ]] || line="| $what | no result (exit $rc$([[ $rc == 124 ]] && echo ", over $limit s"); $OUT/checks.stderr.log) |"
    md "$line"
    say "$line"
}
needs_cuda() {
    [[ -n "$HAVE_CUDA" ]] && return 0
    skip "$1" "no CUDA ($PYTHON's torch $TORCH_VERSION sees no CUDA device)"
    return 1
}

# 4. Determinism first: it is the one that also runs on the CPU.
section "Determinism mode twice" "| device | model | size | result | max level difference | s/run |"
device=cpu
[[ -n "$HAVE_CUDA" ]] && device=cuda:0
for m in "${models[@]}"; do
    size=()
    [[ -z "$HAVE_CUDA" ]] && size=(--size 256x256)  # a CPU needs minutes for 512² on full size
    row "determinism $m" determinism --model "$MODEL_DIR/$m-random" --label "$m" --device "$device" --steps 4 "${size[@]}"
done

section "Presets under their budgets ($STEPS steps, Euler, CFG 7)" \
    "| preset | model | size | peak VRAM | budget | predicted | s/image | notes |"
if needs_cuda presets; then
    for preset in $PRESETS; do
        for m in "${models[@]}"; do row "preset $preset $m" preset --model "$MODEL_DIR/$m-random" --label "$m" --preset "$preset" --steps "$STEPS"; done
    done
fi

section "fp16 against fp32 on the same device" "| check | model | size | UNet max abs (relative) | VAE max levels | 4-step image max levels | s fp32 / fp16 |"
if needs_cuda fp16; then
    for m in "${models[@]}"; do row "fp16 $m" fp16 --model "$MODEL_DIR/$m-random" --label "$m"; done
fi

section "Offload modes (fp16, no cap)" "| mode | model | size | peak VRAM | s/image | notes |"
if needs_cuda offload; then
    for mode in model sequential group; do
        for m in "${models[@]}"; do row "offload $mode $m" offload --model "$MODEL_DIR/$m-random" --label "$m" --mode "$mode" --steps 10; done
    done
fi

section "Out-of-memory ladder under a too-small cap" "| cap | model | size | outcome | peak | s/image | what the engine did |"
if needs_cuda oom; then
    for m in "${models[@]}"; do
        cap=2
        [[ "$m" == sdxl ]] && cap=4
        row "oom $m" oom --model "$MODEL_DIR/$m-random" --label "$m" --cap-gb "$cap" --steps 4
    done
fi

section "diffusers, the same settings (fp16, Euler, CFG 7, $STEPS steps, nothing offloaded)" \
    "| model | size | DiffusionDesk | diffusers | time ratio | memory ratio |"
if needs_cuda diffusers; then
    if ! "$PYTHON" -c 'import diffusers, transformers' 2>/dev/null; then
        skip diffusers "$PYTHON has no diffusers / transformers (pip install -r requirements.txt where there is a network)"
    elif (($(left) < 60)); then
        skip diffusers "out of time"
    else
        for m in "${models[@]}"; do
            line="$(timeout "$(left)" "$PYTHON" "$ROOT/bench/perf/gpu_vs_diffusers.py" --model "$MODEL_DIR/$m-random" --label "$m" \
                        --check "$CHECK" --steps "$STEPS" --json "$JSON" 2>>"$OUT/checks.stderr.log")" || line="| $m | no result; $OUT/checks.stderr.log |"
            md "$line"
            say "$line"
        done
    fi
fi

md ""
md "total: $((SECONDS - START)) s of $BUDGET_S"
say "done in $((SECONDS - START)) s: $TABLE, $JSON"
