#!/usr/bin/env bash
# Build bench_sweep (Release) in bench/build and run it: the largest fitting context of 1,000 models x 50 GPU kinds
# through the planner's search (docs/list.md). Target: under one second on the project machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B bench/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVFIT_BUILD_BENCH=ON -DKVFIT_BUILD_TESTS=OFF >/dev/null
ninja -j2 -C bench/build bench_sweep
bench/build/bench/bench_sweep "$@"
