#!/usr/bin/env bash
# The conformance suite: kvfit's predictions against the real llama.cpp of each release in releases.mjs, as
# bundled in node-llama-cpp (CPU build): 5b4ebc5 (node-llama-cpp 3.21.1) and v0.5.0 (node-llama-cpp 3.22.1).
# Installs each release's node-llama-cpp from its committed lockfile (releases/<release>/) when missing, builds
# kvfit and kvfit-gguf-write when missing, writes the models, runs the matrix once per release (one node process
# each) and writes docs/accuracy-<release>.md per release and docs/accuracy.md as the index.
# Exit status: 0 all cases pass (or the npm registry is unreachable: loud banner, the report says SKIPPED),
# 1 a case failed, 2 setup failed.
#
# Environment: KVFIT_BUILD_DIR (default <repo>/build), CONFORMANCE_MODELS (default <build>/conformance/models; one
# folder per release under it), CONFORMANCE_JOBS (releases run at once, default 2 on two or more cores),
# CONFORMANCE_RELEASES (default "5b4ebc5 v0.5.0"), CONFORMANCE_ARGS (extra arguments for conformance.mjs, e.g.
# model ids or --no-alloc-only), KVFIT_PASS_RULES=0 (kvfit is not given --llamacpp-version <release>).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${KVFIT_BUILD_DIR:-$root/build}
models=${CONFORMANCE_MODELS:-$build/conformance/models}
releases=${CONFORMANCE_RELEASES:-"5b4ebc5 v0.5.0"}
start=$(date +%s)

banner() {
  cat >&2 <<EOF

##########################################################################
##  CONFORMANCE SUITE SKIPPED: npm registry unreachable
##  $1
##  kvfit was NOT checked against llama.cpp $2; docs/accuracy-$2.md says so.
##########################################################################

EOF
}

write_skipped() { # release reason
  mkdir -p "$root/docs"
  node --input-type=module -e "
    import { renderSkipped } from '$here/report.mjs';
    import fs from 'node:fs';
    fs.writeFileSync('$root/docs/accuracy-$1.md', renderSkipped(process.argv[1], new Date().toISOString().slice(0, 10), '$1'));
  " "$2"
}

write_index() {
  mkdir -p "$root/docs"
  node --input-type=module -e "
    import { writeIndex } from '$here/report.mjs';
    await writeIndex('$root/docs', { seconds: Number(process.argv[1]) });
  " "$(( $(date +%s) - start ))"
}

command -v node >/dev/null || { echo "conformance: node (>= 20) is required" >&2; exit 2; }
command -v npm >/dev/null || { echo "conformance: npm is required" >&2; exit 2; }
for r in $releases; do
  [[ -f "$here/releases/$r/package-lock.json" ]] || { echo "conformance: unknown release '$r' (no releases/$r/package-lock.json)" >&2; exit 2; }
done

# 1. node-llama-cpp of each release + @node-llama-cpp/linux-x64 (CPU build only: --omit=optional keeps out ~1 GB
#    of CUDA/Vulkan builds; --ignore-scripts: the prebuilt binary is used as is, nothing is compiled)
ready=()
for r in $releases; do
  dir=$here/releases/$r
  if [[ ! -f "$dir/node_modules/node-llama-cpp/package.json" || ! -d "$dir/node_modules/@node-llama-cpp/linux-x64" ]]; then
    echo "== conformance: npm ci in releases/$r ($(node -p "require('$dir/package.json').dependencies['node-llama-cpp']" 2>/dev/null), CPU build)"
    log=$(mktemp)
    if ! (cd "$dir" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund) >"$log" 2>&1; then
      cat "$log" >&2
      if grep -Eqi 'ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENETUNREACH|EHOSTUNREACH|network|socket hang up|request to .* failed' "$log"; then
        rm -f "$log"
        banner "npm ci (releases/$r) could not reach the registry" "$r"
        write_skipped "$r" "npm ci (releases/$r) could not reach the registry"
        continue
      fi
      rm -f "$log"
      echo "conformance: npm ci in releases/$r failed (not a network error)" >&2
      exit 2
    fi
    rm -f "$log"
  fi
  ready+=("$r")
done
if [[ ${#ready[@]} -eq 0 ]]; then
  write_index
  exit 0
fi

# 2. kvfit and kvfit-gguf-write
if [[ ! -x "$build/kvfit" || ! -x "$build/tools/kvfit-gguf-write" ]]; then
  echo "== conformance: building kvfit and kvfit-gguf-write in $build"
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVFIT_BUILD_TESTS=ON >/dev/null
  fi
  ninja -C "$build" -j "$(nproc)" kvfit kvfit-gguf-write >/dev/null
fi

# 3. models, matrix, report: one node process per release (two llama.cpp builds cannot share one process), run side
#    by side ($CONFORMANCE_JOBS at once, default 2 on two or more cores and 16 GiB of RAM: each process is mostly single-threaded),
#    each with its own models folder (a model one process is writing must not be read by the other) and its own log,
#    printed when it ends.
mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
max_jobs=${CONFORMANCE_JOBS:-$(( $(nproc) >= 2 && mem_kib >= 16 * 1024 * 1024 ? 2 : 1 ))}
mkdir -p "$build/conformance"
run_release() { # release -> exit status of conformance.mjs in $build/conformance/rc-<release>
  local r=$1 t
  t=$(date +%s)
  rm -f "$root/docs/accuracy-$r.md"   # a crashed run leaves no stale report behind (the index says "not run")
  set +e
  # shellcheck disable=SC2086
  node "$here/conformance.mjs" --release "$r" --kvfit "$build/kvfit" --gguf-write "$build/tools/kvfit-gguf-write" \
    --models "$models/$r" --out "$root/docs/accuracy-$r.md" --results "$build/conformance/results-$r.json" ${CONFORMANCE_ARGS:-} \
    >"$build/conformance/log-$r.txt" 2>&1
  echo $? >"$build/conformance/rc-$r"
  echo "$(( $(date +%s) - t ))" >"$build/conformance/seconds-$r"
  set -e
}
for r in "${ready[@]}"; do
  while (( $(jobs -rp | wc -l) >= max_jobs )); do wait -n || true; done
  echo "== conformance: llama.cpp $r started (models in $models/$r, log $build/conformance/log-$r.txt)"
  rm -f "$build/conformance/rc-$r"
  run_release "$r" &
done
wait
rc=0
for r in "${ready[@]}"; do
  echo "== conformance: llama.cpp $r"
  cat "$build/conformance/log-$r.txt"
  one=$(cat "$build/conformance/rc-$r" 2>/dev/null || echo 2)
  if [[ $one -eq 1 ]]; then
    if [[ $rc -eq 0 ]]; then rc=1; fi
  elif [[ $one -ne 0 ]]; then
    echo "conformance: conformance.mjs --release $r exited with status $one (setup error)" >&2
    rc=2
  fi
  if [[ -f "$root/docs/accuracy-$r.md" ]]; then
    echo "== conformance: $r: $(tail -n 1 "$root/docs/accuracy-$r.md") ($(cat "$build/conformance/seconds-$r") s); report docs/accuracy-$r.md"
  fi
done
write_index
echo "== conformance: all releases in $(( $(date +%s) - start )) s; index docs/accuracy.md"
exit $rc
