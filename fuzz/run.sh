#!/usr/bin/env bash
# Build the GGUF and safetensors fuzz targets with clang (libFuzzer + ASan + UBSan) in fuzz/build and run each for
# a fixed time (default 60 s each: fuzz/run.sh [seconds]). Seeds come from kvfit's writers. Exits non-zero on any
# finding; the crashing input is left in fuzz/build/artifacts/ — copy it to tests/data/gguf_crashes/ (or
# tests/data/safetensors_crashes/) to replay it in tests.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
build=fuzz/build
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DKVFIT_BUILD_FUZZ=ON -DKVFIT_BUILD_TESTS=OFF -DCMAKE_CXX_FLAGS="$san" >/dev/null
ninja -j2 -C "$build" fuzz_gguf fuzz_gguf_seeds fuzz_safetensors fuzz_safetensors_seeds
rm -rf "$build/corpus" "$build/artifacts" && mkdir -p "$build/corpus" "$build/artifacts"
"$build/fuzz/fuzz_gguf_seeds" "$build/corpus"
cp tests/data/gguf_crashes/*.gguf "$build/corpus/" 2>/dev/null || true
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$build/fuzz/fuzz_gguf" "$build/corpus" -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 \
  -malloc_limit_mb=512 -timeout=10 -artifact_prefix="$build/artifacts/" -print_final_stats=1
echo "fuzz_gguf: clean after ${secs} s"

rm -rf "$build/st_corpus" && mkdir -p "$build/st_corpus"
"$build/fuzz/fuzz_safetensors_seeds" "$build/st_corpus"
cp tests/data/safetensors_crashes/*.safetensors "$build/st_corpus/" 2>/dev/null || true
"$build/fuzz/fuzz_safetensors" "$build/st_corpus" -max_total_time="$secs" -max_len=8192 -rss_limit_mb=2048 \
  -malloc_limit_mb=512 -timeout=10 -artifact_prefix="$build/artifacts/" -print_final_stats=1
echo "fuzz_safetensors: clean after ${secs} s"
