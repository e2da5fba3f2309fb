#!/usr/bin/env bash
# The GPU checks make their full-size models with dd_random_model; this proves on the CPU, on the tiny SDXL
# fixture's configs (two text encoders, the projection, the VAE upcast), that what it writes is a model the
# engine loads and runs. Usage: random_model_smoke.sh BIN_DIR FIXTURES_DIR
set -euo pipefail
bin="$1" fixtures="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src="$fixtures/models/tiny-sdxl"
for f in model_index.json scheduler/scheduler_config.json unet/config.json vae/config.json \
         text_encoder/config.json text_encoder_2/config.json; do
    mkdir -p "$work/template/$(dirname "$f")"
    cp "$src/$f" "$work/template/$f"
done
# Like the full-size templates, no tokenizer: the bundled CLIP vocabulary is used, so the text encoders get
# its 49408 tokens instead of the fixture's 1000.
sed -i -E 's/"vocab_size": *1000/"vocab_size": 49408/' "$work/template"/text_encoder*/config.json
"$bin/dd_random_model" "$work/template" "$work/model" --dtype fp16
[[ ! -e "$work/model.partial" ]] || { echo "a .partial folder was left behind"; exit 1; }
"$bin/diffusiondesk-cli" inspect "$work/model" | tee "$work/inspect.txt"
grep -q "SDXL" "$work/inspect.txt"
"$bin/diffusiondesk-cli" generate --model "$work/model" --prompt "a red cube" --steps 2 --size 64x64 \
    --out "$work/out.png" --no-sidecar
[[ -s "$work/out.png" ]]
# A second call finds the model and leaves it alone.
"$bin/dd_random_model" "$work/template" "$work/model" 2>&1 | grep -q "exists"
echo "random model: written, inspected and generated from"
