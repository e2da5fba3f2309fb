#!/usr/bin/env bash
# Renders the main window, the memory preset dialog, a model load in progress (the tiny fixture model, when
# build/fixtures has it), the queue, a finished generation, the library, a batch grid and the zoomed canvas (the built-in shapes model, or the random-weight demo
# when the build has none) into docs/screenshots/*.png
# under a virtual X server, for the README.
#   scripts/screenshots.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, docs/screenshots)
# Needs xvfb-run (scripts/setup.sh installs it) and a built diffusiondesk.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
out="${2:-$root/docs/screenshots}"
app="$build/bin/diffusiondesk"
[ -x "$app" ] || { echo "screenshots: $app not found; build the diffusiondesk target first" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "screenshots: xvfb-run not found; run scripts/setup.sh" >&2; exit 1; }
mkdir -p "$out"
load=()
[ -d "$build/fixtures/models/tiny-sd1" ] && load=(--screenshot-load "$build/fixtures/models/tiny-sd1")
model=demo:tiny-sd1
[ -f "$build/share/diffusiondesk/models/shapes/model_index.json" ] && model="$build/share/diffusiondesk/models/shapes"
# Fusion looks the same on every machine; a fixed font DPI keeps the layout stable.
QT_QPA_PLATFORM=xcb QT_STYLE_OVERRIDE=Fusion QT_FONT_DPI=96 \
  xvfb-run -a -s "-screen 0 1400x1000x24" "$app" --screenshot "$out" "${load[@]}" "$model"
ls -l "$out"/*.png
