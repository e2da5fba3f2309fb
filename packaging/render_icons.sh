#!/usr/bin/env bash
# Renders the PNG icon sizes from icons/diffusiondesk.svg (the PNGs are committed; rerun after editing the SVG).
# Needs rsvg-convert (Debian: librsvg2-bin).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/icons"
for s in 16 22 24 32 48 64 128 256 512; do
  rsvg-convert -w "$s" -h "$s" diffusiondesk.svg -o "diffusiondesk-$s.png"
done
