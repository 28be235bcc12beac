#!/usr/bin/env bash
# Build kvfit (installing its Debian build dependencies when missing) and run it.
# With no arguments it prints the built-in default model's table (Qwen3.5-9B); arguments go to kvfit.
# The build's progress goes to stderr (stdout is kvfit's alone: ./scripts/run.sh MODEL --json > plan.json works).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
if [[ ! -x "$root/build/kvfit" ]]; then
  echo "kvfit: first build: about 8 minutes on 2 cores ($(nproc) here; 13 with the apt packages on a fresh machine), seconds after that; progress below" >&2
fi
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVFIT_BUILD_TESTS=OFF >/dev/null
cmake --build "$root/build" --target kvfit >&2
exec "$root/build/kvfit" "$@"
