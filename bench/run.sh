#!/usr/bin/env bash
# Build bench_gguf and bench_guards (Release) in bench/build, run them, time @huggingface/gguf on the same file
# (npm, installed into bench/node/ from the committed package-lock.json when missing) and print the ratio.
# bench/run.sh --guards runs bench_guards only (explain on 32 MB, --speed and a plan against the layer count).
set -euo pipefail
cd "$(dirname "$0")/.."
file=../shared/reference/llamacpp/gguf/qwen35-9b_v248320.gguf
cmake -S . -B bench/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVFIT_BUILD_BENCH=ON -DKVFIT_BUILD_TESTS=OFF >/dev/null
ninja -j2 -C bench/build bench_gguf bench_guards kvfit
bench/build/bench/bench_guards --benchmark_min_time=0.5
[[ "${1:-}" == "--guards" ]] && exit 0
out=$(bench/build/bench/bench_gguf --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_min_time=0.5 2>/dev/null | tee /dev/stderr)
kvfit_ms=$(awk '$1 == "gguf_open_median" { print $2 }' <<<"$out")
model_ms=$(awk '$1 == "gguf_open_and_model_median" { print $2 }' <<<"$out")
if [ ! -d bench/node/node_modules/@huggingface/gguf ]; then
  (cd bench/node && npm ci --no-audit --no-fund >/dev/null) || { echo "npm ci failed: no comparison"; exit 1; }
fi
hf_ms=$(node bench/node/bench_hf_gguf.mjs "$file" 5 | awk '{ print $2 }')
echo "kvfit gguf_open:            ${kvfit_ms} ms"
echo "kvfit open + model mapping: ${model_ms} ms"
echo "@huggingface/gguf:          ${hf_ms} ms"
awk -v a="$hf_ms" -v b="$kvfit_ms" 'BEGIN { printf "ratio @huggingface/gguf / kvfit: %.0fx\n", a / b }'
# Start-up (issue 15): kvfit --version vs cat of a small file, a whole plan of the same header vs cat of it
python3 bench/startup.py bench/build/kvfit "$file"
