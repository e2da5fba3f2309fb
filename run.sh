#!/usr/bin/env bash
# Sets up what is missing, builds, and opens DiffusionDesk.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$root"
./scripts/setup.sh
cmake -S . -B build -G Ninja -DDD_BUILD_GUI=ON >/dev/null
cmake --build build -j"$(nproc)" --target diffusiondesk diffusiondesk-cli
exec build/bin/diffusiondesk "$@"
