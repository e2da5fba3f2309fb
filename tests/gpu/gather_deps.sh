#!/usr/bin/env bash
# Gathers the headers and libraries run_gpu_checks.sh needs into DIR (default .gpu-deps), for a GPU machine that
# has a compiler, CMake and PyTorch but not the development packages of nlohmann_json, OpenSSL and zlib. Run it
# here (Debian 12 with those packages), carry DIR there, and pass DEPS_DIR=DIR to the checks. About 5 MB.
set -euo pipefail
DIR="${1:-.gpu-deps}"
mkdir -p "$DIR/include" "$DIR/lib"
cp -r /usr/include/nlohmann "$DIR/include/"
cp -r /usr/include/openssl "$DIR/include/"
cp /usr/include/x86_64-linux-gnu/openssl/*.h "$DIR/include/openssl/"
cp /usr/include/zlib.h /usr/include/zconf.h "$DIR/include/"
cp -L /usr/lib/x86_64-linux-gnu/libcrypto.so.3 /usr/lib/x86_64-linux-gnu/libz.so.1 "$DIR/lib/"
du -sh "$DIR"
