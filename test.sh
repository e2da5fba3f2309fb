#!/usr/bin/env bash
# Sets up what is missing, builds, makes the reference fixtures and runs every test through ctest.
# Exits non-zero on any failure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$root"
jobs="$(nproc)"

./scripts/setup.sh

echo "== build"
cmake -S . -B build -G Ninja -DDD_BUILD_GUI=ON >/dev/null
cmake --build build -j"$jobs"

echo "== reference fixtures"
# DD_SLOW_FIXTURES=1: also the full-size SD 1.5 UNet reference (about 50 s, 1.7 GB) for the "slow" test.
DD_SLOW_FIXTURES=1 .venv/bin/python tests/parity/make_fixtures.py build/fixtures

echo "== tests"
# ctest runs tests side by side: libgomp's default spin-waiting makes two 2-thread tests on 2 cores up to 30×
# slower (measured: 3 demo steps 19 s spinning, 0.7 s passive).
export OMP_WAIT_POLICY=PASSIVE
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 1500

echo "== fuzz (${DD_FUZZ_SECONDS:-60} s per target)"
[ -f build-fuzz/build.ninja ] || cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DDD_BUILD_GUI=OFF -DDD_BUILD_FUZZ=ON
cmake -S . -B build-fuzz -DDD_FUZZ_SECONDS="${DD_FUZZ_SECONDS:-60}" >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_safetensors_header fuzz_shard_index fuzz_a1111_parameters fuzz_generation_info fuzz_prompt_parser fuzz_image_metadata fuzz_comfyui_prompt fuzz_invokeai_metadata fuzz_fooocus_metadata fuzz_job_journal fuzz_file_name_template \
  fuzz_model_config fuzz_sidecar fuzz_preset fuzz_tokenizer_files
ctest --test-dir build-fuzz -L fuzz --output-on-failure -j"$jobs"
