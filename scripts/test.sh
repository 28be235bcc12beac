#!/usr/bin/env bash
# Build kvfit and run every test: the GoogleTest suite (CTest) in a normal build and again under
# -fsanitize=address,undefined, the fuzz targets for a fixed short time, and the conformance suite
# against the real llama.cpp (tests/conformance/). Installs Debian build dependencies when missing.
# Exit status is non-zero when anything fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/deps.sh" --test
jobs=$(nproc)
t0=$SECONDS
phase() { echo "== [$(( SECONDS - t0 )) s] $*"; }

phase "build and test (optimised, -O2, no debug info: CI time)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DKVFIT_BUILD_TESTS=ON \
  -DKVFIT_BUILD_PYTHON=ON >/dev/null
cmake --build build -j "$jobs"
phase "ctest (optimised)"
ctest --test-dir build --output-on-failure -j "$jobs"

phase "build and test with -fsanitize=address,undefined (clang; the same build holds the fuzz targets)"
# One sanitizer build serves the tests and the libFuzzer targets: the library and tests carry libFuzzer's coverage
# instrumentation (fuzzer-no-link; the ASan runtime provides its callbacks), -O1 keeps the tests quick, line tables
# (not full debug info) give the sanitizers' stack traces their file:line at a fraction of the compile time.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-gline-tables-only" \
  -DCMAKE_CXX_COMPILER=clang++ -DKVFIT_SANITIZE=ON -DKVFIT_BUILD_TESTS=ON -DKVFIT_BUILD_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-O1 -fsanitize=fuzzer-no-link" >/dev/null
cmake --build build-asan -j "$jobs"
phase "ctest (sanitizers)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j "$jobs"

if [[ -x fuzz/run.sh ]]; then
  phase "fuzz targets (fixed short time: ${KVFIT_FUZZ_SECONDS:-20} s each)"
  FUZZ_BUILD=build-asan fuzz/run.sh "${KVFIT_FUZZ_SECONDS:-20}"
fi

if [[ -x tests/conformance/run.sh ]]; then
  phase "conformance suite against the real llama.cpp"
  tests/conformance/run.sh
fi
phase "browser test of kvfit serve (headless Chromium)" && tests/browser/run.sh
phase "all tests passed"
