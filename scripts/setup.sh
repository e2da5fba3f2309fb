#!/usr/bin/env bash
# Installs what is missing for building and testing DiffusionDesk on Debian 12.
# Idempotent and quick when everything is already there (stamp files record what was done).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

APT_PACKAGES=(cmake ninja-build ccache g++ clang libclang-rt-14-dev pkg-config
  qt6-base-dev qt6-base-dev-tools libgl-dev libopencv-dev nlohmann-json3-dev libssl-dev libexiv2-dev libsqlite3-dev libcpp-httplib-dev
  slurm-wlm munge
  xvfb xauth python3-venv libtcmalloc-minimal4)

need_apt=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$p")
done
if ((${#need_apt[@]})); then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# Project-local virtual environment carrying the pinned torch wheel (libtorch) and the reference packages.
venv="$root/.venv"
stamp="$venv/.requirements.sha256"
want="$(cat requirements.txt requirements-nodeps.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  py="$(command -v python3)"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  # The CUDA-enabled torch wheel and its nvidia-* dependencies unpack to ~6 GB; pip's wheel cache
  # would double that, so it is off (CI once ran out of disk here).
  free_kb="$(df -Pk "$root" | awk 'NR==2 {print $4}')"
  if [ "${free_kb:-0}" -lt $((8 * 1024 * 1024)) ]; then
    echo "setup: warning: only $((free_kb / 1024)) MiB free on $(df -P "$root" | awk 'NR==2 {print $6}');" \
         "the Python packages need about 6 GiB and the build about 4 GiB" >&2
  fi
  echo "setup: installing pinned Python packages into .venv (first time: several minutes)"
  "$venv/bin/python" -m pip install -q --no-cache-dir --upgrade pip
  "$venv/bin/python" -m pip install -q --no-cache-dir -r requirements.txt
  "$venv/bin/python" -m pip install -q --no-cache-dir --no-deps -r requirements-nodeps.txt
  echo "$want" > "$stamp"
fi
