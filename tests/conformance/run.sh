#!/usr/bin/env bash
# The conformance suite: kvfit's predictions against the real llama.cpp of each release in releases.mjs, as
# bundled in node-llama-cpp (CPU build): 5b4ebc5 (node-llama-cpp 3.21.1) and v0.5.0 (node-llama-cpp 3.22.1).
# Installs each release's node-llama-cpp from its committed lockfile (releases/<release>/) when missing, builds
# kvfit and kvfit-gguf-write when missing, writes the models, runs the matrix once per release (one node process
# each) and writes docs/accuracy-<release>.md per release and docs/accuracy.md as the index. After each release's
# matrix, in the same job, the llama_probe rows: probe/build_probe.sh builds llama_probe against that release's own
# headers (checked out of its node-llama-cpp's llama/gitRelease.bundle), spec_conformance.mjs measures the draft-model,
# MTP, K6, LoRA and checkpoint groups live (measure_spec.mjs --profile ci, into <build>/conformance/spec/<release>, never
# into measured/), compares every figure with kvfit's command line and with the committed measured/spec-*.jsonl, and
# adds its section to the report.
# Exit status: 0 all cases pass (or the npm registry is unreachable: loud banner, the report says SKIPPED),
# 1 a case failed, 2 setup failed.
#
# Environment: KVFIT_BUILD_DIR (default <repo>/build), CONFORMANCE_MODELS (default <build>/conformance/models; one
# folder per release under it), CONFORMANCE_JOBS (releases run at once, default 2 on two or more cores),
# CONFORMANCE_RELEASES (default "5b4ebc5 v0.5.0"), CONFORMANCE_ARGS (extra arguments for conformance.mjs, e.g.
# model ids or --no-alloc-only), KVFIT_PASS_RULES=0 (kvfit is not given --llamacpp-version <release>),
# CONFORMANCE_PROBE=0 (no llama_probe rows), CONFORMANCE_PROBE_GROUPS (default "draft,mtp,k6,lora,ckpt"),
# CONFORMANCE_PROBE_PROFILE (ci, the default: the subset of measure_spec.mjs; full: every committed row, ~5 min more),
# CONFORMANCE_CUDA=0 (no simulated-CUDA rows: tools/simcuda built with nvcc, the held-out shapes of the graph templates
# measured live, the grid's committed rows compared; ~60 s per release), CONFORMANCE_CUDA_LIVE (the grid's models also
# measured live, default "llama31-8b,minimax-m3,qwen35-9b").
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
# Most of the suite's time is llama.cpp clearing the context buffers it has just allocated (a memset of every KV and
# recurrent-state byte, even in no_alloc mode): on a host whose transparent huge pages are "madvise" (this machine kind),
# the page faults of 4 KiB pages took 60 % of it. glibc's malloc.hugetlb=1 madvises its large mmap'd chunks for huge
# pages: the same context measured 2.6x faster (nemotron-h-56b, n_ctx 4,096 and 65,536), every figure identical (no
# size llama.cpp reports depends on the page size). No effect where THP is "always" or "never".
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1"
max_jobs=${CONFORMANCE_JOBS:-$(( $(nproc) >= 2 && mem_kib >= 16 * 1024 * 1024 ? 2 : 1 ))}
mkdir -p "$build/conformance"
run_release() { # release -> exit status of conformance.mjs (and the llama_probe rows) in $build/conformance/rc-<release>
  local r=$1 t rc_m rc_p=0 log="$build/conformance/log-$r.txt"
  t=$(date +%s)
  rm -f "$root/docs/accuracy-$r.md"   # a crashed run leaves no stale report behind (the index says "not run")
  rm -f "$build/conformance/results-$r.json" "$build/conformance/probe-seconds-$r"
  set +e
  # shellcheck disable=SC2086
  node "$here/conformance.mjs" --release "$r" --kvfit "$build/kvfit" --gguf-write "$build/tools/kvfit-gguf-write" \
    --models "$models/$r" --out "$root/docs/accuracy-$r.md" --results "$build/conformance/results-$r.json" ${CONFORMANCE_ARGS:-} \
    >"$log" 2>&1
  rc_m=$?
  echo "$(( $(date +%s) - t ))" >"$build/conformance/seconds-$r"
  if [[ ${CONFORMANCE_PROBE:-1} != 0 && $rc_m -le 1 ]]; then
    # the llama_probe rows: the probe against this release's headers, then the groups measured and compared; the
    # report is re-rendered with the matrix's rows (--matrix-results) and this section
    t=$(date +%s)
    echo "== llama_probe $r: build_probe.sh, spec_conformance.mjs (${CONFORMANCE_PROBE_GROUPS:-draft,mtp,k6,lora,ckpt})" >>"$log"
    if "$here/probe/build_probe.sh" "$r" >>"$log" 2>&1; then
      node "$here/spec_conformance.mjs" --release "$r" --kvfit "$build/kvfit" --gguf-write "$build/tools/kvfit-gguf-write" \
        --models "$build/conformance/spec/$r/models" --scratch "$build/conformance/spec/$r/measured" \
        --groups "${CONFORMANCE_PROBE_GROUPS:-draft,mtp,k6,lora,ckpt}" --profile "${CONFORMANCE_PROBE_PROFILE:-ci}" \
        --matrix-results "$build/conformance/results-$r.json" --results "$build/conformance/spec-results-$r.json" \
        --out "$root/docs/accuracy-$r.md" >>"$log" 2>&1
      rc_p=$?
    else
      echo "conformance: probe/build_probe.sh $r failed" >>"$log"
      rc_p=2
    fi
    echo "$(( $(date +%s) - t ))" >"$build/conformance/probe-seconds-$r"
  fi
  rc_c=0
  if [[ ${CONFORMANCE_CUDA:-1} != 0 && $rc_m -le 1 && $rc_p -le 1 && -x "$root/build/probe/$r/llama_probe" ]]; then
    # the simulated CUDA device (tools/simcuda: the release's own ggml-cuda host code, built by nvcc, under the
    # release's shipped scheduler in no_alloc mode): the held-out sibling shapes of the format-2 templates
    # (shapes.mjs 'check': never fitted on) measured live, every placement, each compared with the committed row and
    # with kvfit; then the suite's grid (measured/cuda-<release>.jsonl) compared with kvfit, and a live spot check of
    # that grid on three models. Without nvcc the committed rows are compared, and the log says so.
    t=$(date +%s)
    local sim="$build/simcuda/$r/libggml-cuda.so" shapes="$build/conformance/shapes/$r" cuda_rc
    echo "== simulated CUDA $r: tools/simcuda/build.sh, held-out shapes live, the grid's committed rows" >>"$log"
    node "$here/shapes.mjs" "$shapes" --gguf-write "$build/tools/kvfit-gguf-write" --role check >/dev/null 2>>"$log"
    if OUT_DIR="$build/simcuda/$r" "$root/tools/simcuda/build.sh" "$r" >>"$log" 2>&1; then
      node "$here/cuda_conformance.mjs" --release "$r" --shapes --kvfit "$build/kvfit" --probe "$root/build/probe/$r/llama_probe" \
        --simcuda "$sim" --models "$shapes" --results "$build/conformance/cuda-shapes-results-$r.json" >>"$log" 2>&1
      cuda_rc=$?
      node "$here/cuda_conformance.mjs" --release "$r" --kvfit "$build/kvfit" --probe "$root/build/probe/$r/llama_probe" \
        --simcuda "$sim" --models "$models/$r" --only "${CONFORMANCE_CUDA_LIVE:-llama31-8b,minimax-m3,qwen35-9b}" \
        --out "$build/conformance/cuda-live-$r.md" --results "$build/conformance/cuda-live-results-$r.json" >>"$log" 2>&1
      cuda_rc=$(( $? > cuda_rc ? $? : cuda_rc ))
    else
      echo "##  simulated CUDA $r: the device could not be built (see above); committed rows compared, none measured" >>"$log"
      node "$here/cuda_conformance.mjs" --release "$r" --shapes --kvfit "$build/kvfit" \
        --from "$here/measured/cuda-shapes-$r.jsonl" --models "$shapes" \
        --only "$(node "$here/shapes.mjs" --list | awk '$2 == "check" {print $3}' | paste -sd,)" >>"$log" 2>&1
      cuda_rc=$?
    fi
    node "$here/cuda_conformance.mjs" --release "$r" --kvfit "$build/kvfit" --models "$models/$r" \
      --from "$here/measured/cuda-$r.jsonl" --results "$build/conformance/cuda-results-$r.json" >>"$log" 2>&1
    rc_c=$(( $? > cuda_rc ? $? : cuda_rc ))
    echo "$(( $(date +%s) - t ))" >"$build/conformance/cuda-seconds-$r"
  fi
  local rc_all=$(( rc_m > rc_p ? rc_m : rc_p ))
  echo $(( rc_c > rc_all ? rc_c : rc_all )) >"$build/conformance/rc-$r"
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
    probe_s=""
    [[ -f "$build/conformance/probe-seconds-$r" ]] && probe_s=" + llama_probe $(cat "$build/conformance/probe-seconds-$r") s"
    echo "== conformance: $r: $(tail -n 1 "$root/docs/accuracy-$r.md") ($(cat "$build/conformance/seconds-$r") s$probe_s); report docs/accuracy-$r.md"
  fi
  if [[ -f "$build/conformance/cuda-seconds-$r" ]]; then
    echo "== conformance: $r simulated CUDA: held-out shapes $(tail -n 1 "$root/docs/accuracy-cuda-shapes-$r.md" 2>/dev/null), grid $(tail -n 1 "$root/docs/accuracy-cuda-$r.md" 2>/dev/null) ($(cat "$build/conformance/cuda-seconds-$r") s); reports docs/accuracy-cuda-shapes-$r.md, docs/accuracy-cuda-$r.md"
  fi
done
write_index
echo "== conformance: all releases in $(( $(date +%s) - start )) s; index docs/accuracy.md"
exit $rc
