#!/usr/bin/env bash
# The conformance suite: kvfit's predictions against the real llama.cpp bundled in node-llama-cpp 3.21.1
# (CPU build). Installs node-llama-cpp from the committed lockfile when missing, builds kvfit and
# kvfit-gguf-write when missing, writes the models, runs the matrix and writes docs/accuracy.md.
# Exit status: 0 all cases pass (or the npm registry is unreachable: loud banner, report says SKIPPED),
# 1 a case failed, 2 setup failed.
#
# Environment: KVFIT_BUILD_DIR (default <repo>/build), CONFORMANCE_MODELS (default <build>/conformance/models),
# CONFORMANCE_ARGS (extra arguments for conformance.mjs, e.g. model ids or --no-alloc-only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${KVFIT_BUILD_DIR:-$root/build}
models=${CONFORMANCE_MODELS:-$build/conformance/models}
report=$root/docs/accuracy.md
start=$(date +%s)

skip() {
  local reason=$1
  cat >&2 <<EOF

##########################################################################
##  CONFORMANCE SUITE SKIPPED: npm registry unreachable
##  $reason
##  kvfit was NOT checked against llama.cpp; docs/accuracy.md says so.
##########################################################################

EOF
  mkdir -p "$root/docs"
  node --input-type=module -e "
    import { renderSkipped } from '$here/report.mjs';
    import fs from 'node:fs';
    fs.writeFileSync('$report', renderSkipped(process.argv[1], new Date().toISOString().slice(0, 10)));
  " "$reason"
  exit 0
}

command -v node >/dev/null || { echo "conformance: node (>= 20) is required" >&2; exit 2; }
command -v npm >/dev/null || { echo "conformance: npm is required" >&2; exit 2; }

# 1. node-llama-cpp 3.21.1 + @node-llama-cpp/linux-x64 (CPU build only: --omit=optional keeps out ~1 GB of
#    CUDA/Vulkan builds; --ignore-scripts: the prebuilt binary is used as is, nothing is compiled)
if [[ ! -f "$here/node_modules/node-llama-cpp/package.json" || ! -d "$here/node_modules/@node-llama-cpp/linux-x64" ]]; then
  echo "== conformance: npm ci (node-llama-cpp 3.21.1, CPU build)"
  log=$(mktemp)
  if ! (cd "$here" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund) >"$log" 2>&1; then
    cat "$log" >&2
    if grep -Eqi 'ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENETUNREACH|EHOSTUNREACH|network|socket hang up|request to .* failed' "$log"; then
      rm -f "$log"
      skip "npm ci could not reach the registry"
    fi
    rm -f "$log"
    echo "conformance: npm ci failed (not a network error)" >&2
    exit 2
  fi
  rm -f "$log"
fi

# 2. kvfit and kvfit-gguf-write
if [[ ! -x "$build/kvfit" || ! -x "$build/tools/kvfit-gguf-write" ]]; then
  echo "== conformance: building kvfit and kvfit-gguf-write in $build"
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVFIT_BUILD_TESTS=ON >/dev/null
  fi
  ninja -C "$build" -j "$(nproc)" kvfit kvfit-gguf-write >/dev/null
fi

# 3. models, matrix, report
echo "== conformance: measuring (models in $models)"
set +e
# shellcheck disable=SC2086
node "$here/conformance.mjs" --kvfit "$build/kvfit" --gguf-write "$build/tools/kvfit-gguf-write" \
  --models "$models" --out "$report" --results "$build/conformance/results.json" ${CONFORMANCE_ARGS:-}
rc=$?
set -e
echo "== conformance: $(tail -n 1 "$report") ($(( $(date +%s) - start )) s); report docs/accuracy.md"
exit $rc
