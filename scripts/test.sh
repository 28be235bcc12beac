#!/usr/bin/env bash
# Build kvfit and run every test: an optimised gcc build (the CMake package and Python module tests), the GoogleTest
# suite (CTest) under -fsanitize=address,undefined (clang), the fuzz targets for a fixed short time, the conformance
# suite against the real llama.cpp (tests/conformance/) and the browser test. Installs Debian build dependencies when missing.
# Exit status is non-zero when anything fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/scripts/deps.sh" --test
jobs=$(nproc)
t0=$SECONDS
phase() { echo "== [$(( SECONDS - t0 )) s] $*"; }

# The optimised gcc build holds what the conformance suite, the Python module and the CMake package test use; the
# GoogleTest suite runs in the sanitizer build below (compiling it twice took a third of CI's 30 minutes on two
# cores). KVFIT_TEST_GCC=1 also builds and runs the suite here.
gcc_tests=${KVFIT_TEST_GCC:-0}
phase "build (gcc, optimised -O2, no debug info)"
# Both builds are unity builds (CMAKE_UNITY_BUILD, batches of 16 files): every file instantiates nlohmann::json's
# parser and serializer, and compiling them once per batch instead of once per file halves the compile time.
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" "${unity[@]}" \
  -DKVFIT_BUILD_TESTS=$([[ $gcc_tests == 1 ]] && echo ON || echo OFF) -DKVFIT_BUILD_PYTHON=ON >/dev/null
cmake --build build -j "$jobs"
if [[ $gcc_tests == 1 ]]; then
  phase "ctest (gcc)"
  ctest --test-dir build --output-on-failure -j "$jobs"
else
  phase "CMake package: install, then consumers by find_package, pkg-config and add_subdirectory (tests/package)"
  tests/package/run.sh "$root" "$root/build" cmake
  phase "Python module: pip install --no-build-isolation in a venv, kvfit.plan() against the CLI (tests/python)"
  tests/python/run.sh "$root" "$root/build/kvfit" "$root/build"
fi

phase "build and test with -fsanitize=address,undefined (clang; the same build holds the fuzz targets)"
# One sanitizer build serves the tests and the libFuzzer targets: the library and tests carry libFuzzer's coverage
# instrumentation (fuzzer-no-link; the ASan runtime provides its callbacks), -O1 keeps the tests quick, line tables
# (not full debug info) give the sanitizers' stack traces their file:line at a fraction of the compile time.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-gline-tables-only" "${unity[@]}" \
  -DCMAKE_CXX_COMPILER=clang++ -DKVFIT_SANITIZE=ON -DKVFIT_BUILD_TESTS=ON -DKVFIT_BUILD_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-O1 -fsanitize=fuzzer-no-link" >/dev/null
cmake --build build-asan -j "$jobs"
phase "ctest (sanitizers)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j "$jobs"

if [[ -x fuzz/run.sh ]]; then
  phase "fuzz targets (fixed short time: ${KVFIT_FUZZ_SECONDS:-2} s each)"
  FUZZ_BUILD=build-asan fuzz/run.sh "${KVFIT_FUZZ_SECONDS:-2}"
fi

if [[ -x tests/conformance/run.sh ]]; then
  phase "conformance suite against the real llama.cpp"
  tests/conformance/run.sh
fi
phase "browser test of kvfit serve (headless Chromium)" && tests/browser/run.sh
phase "all tests passed"
