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

echo "== build and test (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVFIT_BUILD_TESTS=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build and test with -fsanitize=address,undefined"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKVFIT_SANITIZE=ON -DKVFIT_BUILD_TESTS=ON >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j "$jobs"

if [[ -x fuzz/run.sh ]]; then
  echo "== fuzz targets (fixed short time)"
  fuzz/run.sh
fi

if [[ -x tests/conformance/run.sh ]]; then
  echo "== conformance suite against the real llama.cpp"
  tests/conformance/run.sh
fi
echo "== browser test of kvfit serve (headless Chromium)" && tests/browser/run.sh
echo "== all tests passed"
