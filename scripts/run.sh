#!/usr/bin/env bash
# Build kvfit (installing its Debian build dependencies when missing) and run it.
# With no arguments it prints the built-in default model's table (Qwen3.5-9B); arguments go to kvfit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVFIT_BUILD_TESTS=OFF >/dev/null
cmake --build "$root/build" --target kvfit >/dev/null
exec "$root/build/kvfit" "$@"
