#!/usr/bin/env bash
# Sets up what is missing, builds, makes the reference fixtures and runs every test through ctest.
# Exits non-zero on any failure.
#   ./test.sh             plain build: the whole suite; then (build-fuzz, clang) every fuzz target for
#                         DD_FUZZ_SECONDS (default 60 s; 15 s under --ci) and the torch-free tests again under
#                         ASan + UBSan
#   ./test.sh --sanitize  the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan), then
#                         the worker / queue threading tests under ThreadSanitizer (build-tsan)
#   ./test.sh --ci        what .ci/run runs: every test once, in the least build time. The plain build compiles
#                         the two programs users run and the slow and RSS-bound tests, and runs those; every
#                         parser is fuzzed; then the plain build's objects and programs are deleted (./run.sh
#                         rebuilds them) and the rest of the suite runs under ASan + UBSan, the threading tests
#                         under TSan
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$root"
jobs="$(nproc)"
mode="${1:-plain}"
case "$mode" in
  plain | --sanitize | --ci) ;;
  *) echo "usage: ./test.sh [--sanitize | --ci]" >&2; exit 2 ;;
esac
# CI fuzzes each parser from its seed corpus as a regression check: 15 s replays the corpus and mutates it for the
# rest (fuzz_a1111_parameters: some 55 000 inputs; 23 targets: 3 min on 2 cores instead of 12); longer campaigns
# are DD_FUZZ_SECONDS=600 ./test.sh.
default_fuzz_seconds=60
[ "$mode" = --ci ] && default_fuzz_seconds=15
fuzz_seconds="${DD_FUZZ_SECONDS:-$default_fuzz_seconds}"

# Each stage's heading says when it began (minutes:seconds since the start): CI's log shows where the time goes.
stage() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

stage "setup"
./scripts/setup.sh

# ctest runs tests side by side: libgomp's default spin-waiting makes two 2-thread tests on 2 cores up to 30×
# slower (measured: 3 demo steps 19 s spinning, 0.7 s passive).
export OMP_WAIT_POLICY=PASSIVE

# Sanitizer reports fail the test. Leak checking is off: libtorch, OpenMP and Qt keep process-lifetime
# singletons that LeakSanitizer reports at exit (docs/reliability.md).
asan_options="detect_leaks=0:abort_on_error=1:strict_string_checks=1:alloc_dealloc_mismatch=0"
ubsan_options="halt_on_error=1:print_stacktrace=1"
# CI's gcc build leaves out UBSan's null and alignment checks, which double its compile time (one dd_core_pure
# unit: ASan 43 s, + UBSan 96 s, + UBSan without these two 52 s). A null dereference still faults under ASan, and
# the parsers, where a misaligned read could come from, are fuzzed under clang's full UBSan (build-fuzz).
ubsan_skip=""
[ "$mode" = --ci ] && ubsan_skip="null,alignment"

fixtures() {
  stage "reference fixtures"
  # DD_SLOW_FIXTURES=1: also the full-size SD 1.5 UNet reference (about 50 s, 1.7 GB) for the "slow" test.
  DD_SLOW_FIXTURES=1 .venv/bin/python tests/parity/make_fixtures.py build/fixtures
}

sanitized_suites() {
  stage "AddressSanitizer + UndefinedBehaviorSanitizer: the whole suite on the tiny models"
  # The project's code is instrumented; libtorch, Qt and OpenCV are not.
  # -O0: the suite compiles 27 % faster (8:40 instead of 11:55 cold) and its tests take 30 % longer (torch's inline
  # code runs unoptimised in our files): a net gain of about 2 minutes on 2 cores (CMakeLists.txt, DD_SANITIZE_OPT).
  cmake -S . -B build-asan -G Ninja -DDD_BUILD_GUI=ON -DDD_SANITIZE=address,undefined -DDD_SANITIZE_SKIP="$ubsan_skip" \
    -DDD_SANITIZE_OPT=-O0 -DDD_SHARED_LIBS=ON -DDD_FIXTURES_DIR="$root/build/fixtures" >/dev/null
  cmake --build build-asan -j"$jobs" --target dd_test_programs
  ASAN_OPTIONS="$asan_options" UBSAN_OPTIONS="$ubsan_options" \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 1500 -LE 'slow|rss'
  stage "ThreadSanitizer: the tests that drive the engine worker and queue threads"
  # TSan stays at -O1: at -O0 the empty functor ServiceThread's destructor hands to Qt lives on the stack, and Qt's
  # own (uninstrumented) locking hides the hand-over from TSan, which then reports a race on it.
  cmake -S . -B build-tsan -G Ninja -DDD_BUILD_GUI=ON -DDD_SANITIZE=thread \
    -DDD_FIXTURES_DIR="$root/build/fixtures" >/dev/null
  cmake --build build-tsan -j"$jobs" --target dd_resources test_mainwindow test_workflows test_studio
  # One OpenMP thread: libgomp is not instrumented, so its barriers would look like races inside libtorch. The
  # programs run side by side (each keeps its own settings and queue files, as under ASan above).
  OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1:history_size=7:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp" \
    ctest --test-dir build-tsan --output-on-failure -j"$jobs" --timeout 1500 -L threads
}

if [ "$mode" = --sanitize ]; then
  fixtures
  sanitized_suites
  exit 0
fi

stage "build"
plain_labels=()
if [ "$mode" = --ci ]; then
  # CI runs every test once: the slow and RSS-bound ones here, on the build users get, all the others under
  # ASan + UBSan below (build-asan). This build compiles the app, the CLI and only those tests' programs; the
  # benchmark tools are compiled in build-asan (the tests run them), the training tools only by ./test.sh
  # (about 3 CPU-minutes CI need not spend).
  cmake -S . -B build -G Ninja -DDD_BUILD_GUI=ON -DDD_TESTS_IN_ALL=OFF >/dev/null
  cmake --build build -j"$jobs" --target diffusiondesk diffusiondesk-cli dd_resources dd_slow_and_rss_programs
  plain_labels=(-L 'slow|rss')
else
  cmake -S . -B build -G Ninja -DDD_BUILD_GUI=ON -DDD_TESTS_IN_ALL=ON >/dev/null
  cmake --build build -j"$jobs"
fi

fixtures

stage "tests"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 1500 "${plain_labels[@]}"

# build-fuzz is clang with AddressSanitizer + UndefinedBehaviorSanitizer on everything it builds: the libFuzzer
# targets and, at little extra cost (the torch-free libraries are compiled there anyway), the torch-free tests.
stage "fuzz and sanitizers: every parser fuzzed $fuzz_seconds s, the torch-free tests under ASan + UBSan"
[ -f build-fuzz/build.ninja ] || cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake -S . -B build-fuzz -DDD_BUILD_GUI=ON -DDD_BUILD_FUZZ=ON -DDD_SANITIZE=address,undefined \
  -DDD_FIXTURES_DIR="$root/build/fixtures" -DDD_FUZZ_SECONDS="$fuzz_seconds" >/dev/null
if [ "$mode" = --ci ]; then
  # The whole suite runs under ASan + UBSan below (build-asan), the torch-free tests with it.
  cmake --build build-fuzz -j"$jobs" --target dd_fuzzers
else
  cmake --build build-fuzz -j"$jobs" --target dd_fuzzers dd_pure_tests dd_resources
  ASAN_OPTIONS="$asan_options" UBSAN_OPTIONS="$ubsan_options" \
    ctest --test-dir build-fuzz --output-on-failure -j"$jobs" --timeout 1500 -L pure
fi
ctest --test-dir build-fuzz -L fuzz --output-on-failure -j"$jobs"

if [ "$mode" = --ci ]; then
  # A CI disk is small: the plain build's objects and programs (about 2 GB) make room for the sanitized builds;
  # the fixtures stay, the sanitized suites read them.
  find build \( -name '*.o' -o -name '*.a' -o -name '*.gch' \) -delete
  rm -rf build/bin
  sanitized_suites
fi
stage "done"
