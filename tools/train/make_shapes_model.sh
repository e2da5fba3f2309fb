#!/usr/bin/env bash
# The built-in model's recipe from nothing, one command (docs/embedded-model.md): build dd_train_embedded first.
#   tools/train/make_shapes_model.sh [BUILD_DIR]
# Stage 1 trains the autoencoder, the UNet and the text encoder on the caption grammar (about 1 h 50 min on one
# core here); stage 2 takes its autoencoder as it is and fine-tunes its UNet and text encoder on captions phrased
# the way people write (shapes_phrasing.h). Each stage resumes from its work folder when run again; one thread,
# because on a shared 2-core machine a second OpenMP thread stalls at every barrier whenever the other core is busy.
set -euo pipefail
build="${1:-build}"
train="$build/bin/dd_train_embedded"
[ -x "$train" ] || { echo "make_shapes_model.sh: build the dd_train_embedded target first ($train)" >&2; exit 2; }
export OMP_WAIT_POLICY=PASSIVE

"$train" --threads 1 --work "$build/train-shapes" --out "$build/shapes-plain" --phrasing plain \
  --vae-steps 11000 --vae-size 64 --vae-full-size-steps 1000 --latents 2048 \
  --unet-steps 22000 --detail-from 4000 --detail-steps 2000 --anneal-from 20000 --anneal-steps 2000 \
  --decoder-steps 1500 --checkpoint-minutes 5

"$train" --threads 1 --work "$build/train-shapes-varied" --out resources/models/shapes --phrasing varied \
  --vae-from "$build/shapes-plain" --init-from "$build/shapes-plain" --latents 2048 \
  --unet-steps 6000 --max-loss-weight 1 --anneal-from 3000 --anneal-steps 3000 --checkpoint-minutes 5
