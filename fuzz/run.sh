#!/usr/bin/env bash
# Build the fuzz targets with clang (libFuzzer + ASan + UBSan) in fuzz/build and run each one:
#   fuzz/run.sh [SECONDS]              every target for a fixed time (default 60 s each; CI runs 6 s each),
#                                      $FUZZ_JOBS at once (default: the number of cores)
#   fuzz/run.sh --long [TARGET...]     each target (default: all) to 10,000,000 executions (-runs), outside CI;
#                                      docs/reliability.md records the figures
# Targets: gguf safetensors (binary headers), hf_config llamacpp_log serving_log http_request hub_listing (fuzz/fuzz_targets.h).
# Seeds come from kvfit's writers, the repository's fixtures and fuzz/seeds/. Exits non-zero on any finding; the
# input is left in fuzz/build/artifacts/ — keep it under tests/data/gguf_crashes/, tests/data/safetensors_crashes/
# or tests/data/fuzz_crashes/<target>/, where the tests replay it.
set -euo pipefail
cd "$(dirname "$0")/.."
long=0
secs=60
targets=()
for a in "$@"; do
  case "$a" in
    --long) long=1 ;;
    [0-9]*) secs="$a" ;;
    *) targets+=("$a") ;;
  esac
done
all=(gguf safetensors hf_config llamacpp_log serving_log http_request hub_listing)
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")
# $FUZZ_BUILD: an existing clang build configured with KVFIT_BUILD_FUZZ=ON and the library instrumented with
# -fsanitize=fuzzer-no-link,address,undefined (scripts/test.sh passes its sanitizer build, so CI compiles the
# library once for both); otherwise fuzz/build is configured here.
build=${FUZZ_BUILD:-fuzz/build}
if [[ -z "${FUZZ_BUILD:-}" ]]; then
  san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DKVFIT_BUILD_FUZZ=ON -DKVFIT_BUILD_TESTS=OFF -DCMAKE_CXX_FLAGS="$san" >/dev/null
fi
exes=()
for t in "${targets[@]}"; do exes+=("fuzz_$t"); done
[[ " ${targets[*]} " == *" gguf "* ]] && exes+=(fuzz_gguf_seeds)
[[ " ${targets[*]} " == *" safetensors "* ]] && exes+=(fuzz_safetensors_seeds)
ninja -j "$(nproc)" -C "$build" "${exes[@]}"
mkdir -p "$build/artifacts"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

# seeds for one target into an empty corpus directory
seed() {
  local t="$1" dir="$2"
  case "$t" in
    gguf) "$build/fuzz/fuzz_gguf_seeds" "$dir"; cp tests/data/gguf_crashes/*.gguf "$dir/" 2>/dev/null || true ;;
    safetensors) "$build/fuzz/fuzz_safetensors_seeds" "$dir"; cp tests/data/safetensors_crashes/*.safetensors "$dir/" 2>/dev/null || true ;;
    hf_config) cp data/catalog/*.json tests/data/configs/*.json "$dir/"; cp ../shared/configs/*.json "$dir/" 2>/dev/null || true ;;
    llamacpp_log) cp tests/data/logs/*.log "$dir/" ;;
    serving_log) cp tests/data/serving_logs/*.log fuzz/seeds/serving_log/* "$dir/" ;;
    http_request) cp fuzz/seeds/http_request/* "$dir/" ;;
    hub_listing) cp fuzz/seeds/hub_listing/* "$dir/" ;;
  esac
  cp tests/data/fuzz_crashes/"$t"/* "$dir/" 2>/dev/null || true
}

# one target: its corpus, then libFuzzer; the output goes to a log, printed when the target finds something
run_one() {
  local t="$1" corpus="$build/corpus_$1" log="$build/fuzz_$1.log" max_len limit
  rm -rf "$corpus" && mkdir -p "$corpus"
  seed "$t" "$corpus"
  case "$t" in
    gguf) max_len=4096 ;;
    safetensors|hub_listing) max_len=8192 ;;
    llamacpp_log) max_len=4096 ;; # lines of interest are short; 4 KiB holds dozens
    *) max_len=16384 ;;
  esac
  if [[ $long -eq 1 ]]; then limit=(-runs=10000000); else limit=(-max_total_time="$secs"); fi
  if ! "$build/fuzz/fuzz_$t" "$corpus" "${limit[@]}" -max_len="$max_len" -rss_limit_mb=2048 -malloc_limit_mb=512       -timeout=10 -artifact_prefix="$build/artifacts/${t}-" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz_$t: FINDING (input in $build/artifacts/${t}-*, log $log)"
    return 1
  fi
  grep -E '^stat::number_of_executed_units|^Done [0-9]+ runs' "$log" | tail -n 2 | sed "s/^/fuzz_$t: /"
  if [[ $long -eq 1 ]]; then echo "fuzz_$t: clean after 10,000,000 runs"; else echo "fuzz_$t: clean after ${secs} s"; fi
}

# $FUZZ_JOBS targets at once (default: one per core): each libFuzzer process is single-threaded. Each writes its
# status to fuzz_<target>.rc, read once all have ended.
max_jobs=${FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  while (( $(jobs -rp | wc -l) >= max_jobs )); do wait -n || true; done
  rm -f "$build/fuzz_$t.rc"
  ( rc=0; run_one "$t" || rc=1; echo "$rc" >"$build/fuzz_$t.rc" ) &
done
wait
failed=0
for t in "${targets[@]}"; do
  [[ "$(cat "$build/fuzz_$t.rc" 2>/dev/null)" == 0 ]] || { echo "fuzz_$t: failed"; failed=1; }
done
exit $failed
