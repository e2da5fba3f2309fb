#!/usr/bin/env bash
# Package test: builds the .deb with cpack, installs it on this machine with apt, runs the installed
# diffusiondesk-cli (--version, a tiny generation on the demo model and one on the built-in shapes model) from a
# clean environment,
# then purges the package and checks that none of its files remain while a user's images and settings do;
# last, the relocatable tarball (.tar.zst) unpacked elsewhere runs through its launcher.
#
#   scripts/test_package.sh [BUILD_DIR]      default: build (must be configured already)
#
# A build configured with -DDD_TORCH_CUDA=OFF gives diffusiondesk-cpu (~110 MB .deb, minutes);
# the default CUDA build gives diffusiondesk (GBs: see docs/install.md for the times). Needs Debian/Ubuntu
# and root or sudo. It is not part of test.sh: it changes the machine's installed packages.
# Set DD_PACKAGE_KEEP=1 to leave the package installed for inspection.
# shellcheck disable=SC2015  # ok() never fails, so "A && ok || fail" is an if-else
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="$(cd "${1:-build}" && pwd)"
sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

[ -f "$build/CPackConfig.cmake" ] || { echo "configure $build first (cmake -S . -B $build -G Ninja ...)" >&2; exit 2; }
cfg() { sed -n "s/^set($1 \"\\(.*\\)\")$/\\1/p" "$build/CPackConfig.cmake"; }
pkg="$(cfg CPACK_DEBIAN_PACKAGE_NAME)"
version="$(cfg CPACK_PACKAGE_VERSION)"
other="$(cfg CPACK_DEBIAN_PACKAGE_CONFLICTS)"
for p in "$pkg" "$other"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    echo "$p is already installed on this machine; remove it first (this test installs and purges it)" >&2
    exit 2
  fi
done

echo "== build ($build)"
cmake --build "$build" -j"$(nproc)" --target diffusiondesk diffusiondesk-cli

echo "== cpack -G DEB ($pkg $version)"
rm -f "$build/${pkg}_"*.deb
t=$(now)
(cd "$build" && nice -n 15 cpack -G DEB >cpack-deb.log 2>&1) || { tail -30 "$build/cpack-deb.log"; exit 1; }
deb="$(ls "$build/${pkg}_${version}_"*.deb)"
echo "cpack: $(elapsed "$t"), $(du -h "$deb" | cut -f1) .deb, installed size $(dpkg-deb -f "$deb" Installed-Size) KiB"
echo "Depends: $(dpkg-deb -f "$deb" Depends)"

files="$(mktemp)"
home="$(mktemp -d)"
cleanup() {
  if [ "${DD_PACKAGE_KEEP:-0}" != 1 ] && dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q installed; then
    $sudo_cmd apt-get purge -y -qq "$pkg" >/dev/null 2>&1 || true
  fi
  rm -rf "$home" "$files"
}
trap cleanup EXIT
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' > "$files"
grep -qx /usr/bin/diffusiondesk-cli "$files" && grep -qx /usr/lib/diffusiondesk/libc10.so "$files" \
  && grep -qx /usr/share/diffusiondesk/clip/bpe_simple_vocab_16e6.txt.gz "$files" \
  && grep -qx /usr/share/diffusiondesk/models/shapes/unet/diffusion_pytorch_model.safetensors "$files" \
  && grep -qx /usr/share/bash-completion/completions/diffusiondesk-cli "$files" \
  && ok "package holds the CLI, its bash completion, the private libtorch and the resources (with the built-in model)" \
  || fail "package contents"
if grep -E '^/usr/lib/[^/]+\.so|^/usr/lib/x86_64-linux-gnu/|^/etc/ld\.so\.conf' "$files"; then
  fail "libraries on the system library path"
else
  ok "no library on the system library path"
fi

echo "== install"
t=$(now)
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
echo "install: $(elapsed "$t")"

# A user who already has images and settings.
mkdir -p "$home/.config/DiffusionDesk" "$home/Pictures/DiffusionDesk"
echo '{"theme": "dark"}' > "$home/.config/DiffusionDesk/settings.json"
printf 'earlier image' > "$home/Pictures/DiffusionDesk/earlier.png"
# Clean environment, cwd away from the source tree: the installed programs may rely on nothing here.
run() { (cd / && env -i HOME="$home" PATH=/usr/bin:/bin LANG=C.UTF-8 "$@"); }

echo "== installed programs"
if v="$(run diffusiondesk-cli --version 2>&1)" && [[ "$v" == *"$version"* ]]; then
  ok "diffusiondesk-cli --version: $v"
else
  fail "diffusiondesk-cli --version printed: $v"
fi
for exe in /usr/bin/diffusiondesk-cli /usr/bin/diffusiondesk; do
  [ -x "$exe" ] || { fail "$exe missing"; continue; }
  deps="$(ldd "$exe")"
  if grep -q "not found" <<<"$deps"; then fail "$exe: $(grep 'not found' <<<"$deps" | tr '\n' ' ')"; fi
  if grep -E "^[[:space:]]*lib(torch|c10)" <<<"$deps" | grep -v "=> /usr/bin/../lib/diffusiondesk/" ; then
    fail "$exe loads libtorch from outside /usr/lib/diffusiondesk"
  else
    ok "$exe: libtorch from /usr/lib/diffusiondesk, every library found"
  fi
done
# The GUI starts from the installed paths (Qt plugins, resources, demo model) and keeps running.
rc=0; run QT_QPA_PLATFORM=offscreen timeout 15 diffusiondesk >"$home/gui.log" 2>&1 || rc=$?
[ "$rc" = 124 ] && ok "diffusiondesk (GUI, offscreen) starts and runs" || fail "diffusiondesk exited with $rc: $(tail -3 "$home/gui.log")"
out="$home/Pictures/DiffusionDesk/packaged.png"
t=$(now)
if run diffusiondesk-cli generate --model demo:tiny-sd1 --prompt "a lighthouse" --steps 2 --size 64x64 --seed 1 \
     --out "$out" && [ -s "$out" ] && grep -aq parameters "$out"; then
  ok "generation from the installed paths: $out ($(elapsed "$t"))"
else
  fail "generation from the installed paths"
fi
# The built-in model from its installed folder, chosen when no --model is given.
star="$home/Pictures/DiffusionDesk/star.png"
t=$(now)
if run diffusiondesk-cli generate --prompt "a large yellow star on a blue background" --seed 7 --out "$star" \
     && grep -aq "Model: shapes" "$star"; then
  ok "the built-in model from the installed paths: $star ($(elapsed "$t"))"
else
  fail "generation on the built-in model from the installed paths"
fi
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate /usr/share/applications/diffusiondesk.desktop && ok "desktop entry valid" || fail "desktop entry"
fi
if command -v gio >/dev/null && [ -s "$out" ]; then
  type="$(gio info -a standard::content-type "$out" | sed -n 's/.*content-type: //p')"
  [ "$type" = image/x-diffusion-png ] && ok "generated PNG is $type" || fail "generated PNG is '$type'"
  plain="$home/plain.png"
  cp "$root/packaging/icons/diffusiondesk-16.png" "$plain"
  type="$(gio info -a standard::content-type "$plain" | sed -n 's/.*content-type: //p')"
  [ "$type" = image/png ] && ok "a PNG without parameters stays image/png" || fail "plain PNG is '$type'"
fi

[ "${DD_PACKAGE_KEEP:-0}" = 1 ] && { echo "DD_PACKAGE_KEEP=1: $pkg left installed"; exit "$((failures > 0))"; }
echo "== purge"
t=$(now)
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get purge -y -qq "$pkg" >/dev/null
echo "purge: $(elapsed "$t")"
left=0
while read -r f; do [ -e "$f" ] && { echo "left behind: $f" >&2; left=1; }; done < "$files"
for d in /usr/lib/diffusiondesk /usr/share/diffusiondesk; do [ -e "$d" ] && { echo "left behind: $d" >&2; left=1; }; done
dpkg-query -W "$pkg" >/dev/null 2>&1 && dpkg-query -W -f='${Status}\n' "$pkg" | grep -qv "not-installed" && left=1
[ "$left" = 0 ] && ok "nothing of $pkg remains" || fail "files remain after purge"
if [ -f "$home/.config/DiffusionDesk/settings.json" ] && [ -f "$home/Pictures/DiffusionDesk/earlier.png" ] && [ -f "$out" ] \
   && [ -f "$star" ]; then
  ok "the user's settings and images survive the purge"
else
  fail "user files were removed"
fi

echo "== relocatable tarball"
# The same staging as a .tar.zst, unpacked under a path with a space and run through its launcher.
rm -f "$build/${pkg}-${version}-linux-"*.tar.zst
t=$(now)
(cd "$build" && nice -n 15 cpack -G TZST >cpack-tzst.log 2>&1 && rm -rf _CPack_Packages) || { tail -30 "$build/cpack-tzst.log"; exit 1; }
tarball="$(ls "$build/${pkg}-${version}-linux-"*.tar.zst)"
echo "cpack: $(elapsed "$t"), $(du -h "$tarball" | cut -f1)"
unpacked="$(mktemp -d)/moved here"
mkdir -p "$unpacked" && tar --zstd -xf "$tarball" -C "$unpacked" --strip-components=1
launcher="$unpacked/diffusiondesk"
if v="$(run "$launcher" --cli --version 2>&1)" && [[ "$v" == *"$version"* ]]; then ok "tarball: --cli --version: $v"; else fail "tarball --version printed: $v"; fi
moved="$home/Pictures/DiffusionDesk/moved.png"
run "$launcher" --cli generate --prompt "a small red circle" --seed 3 --out "$moved" >/dev/null && grep -aq "Model: shapes" "$moved" \
  && ok "tarball: generation on the built-in model from $unpacked" || fail "tarball generation"
rc=0; run QT_QPA_PLATFORM=offscreen timeout 10 "$launcher" >"$home/gui-tar.log" 2>&1 || rc=$?
[ "$rc" = 124 ] && ok "tarball: the GUI starts and runs" || fail "tarball GUI exited with $rc: $(tail -3 "$home/gui-tar.log")"
rm -rf "$(dirname "$unpacked")" "$tarball"

if [ "$failures" -gt 0 ]; then echo "test_package: $failures failure(s)"; exit 1; fi
echo "test_package: all checks passed"
