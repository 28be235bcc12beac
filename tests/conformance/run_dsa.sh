#!/usr/bin/env bash
# Measures the models_dsa.mjs architectures (no_alloc) and writes tests/conformance/measured/<id>.<release>.jsonl:
# the default matrix with the 512-token vocabulary, then three cases with the real vocabulary.
#
# usage: tests/conformance/run_dsa.sh v0.5.0|5b4ebc5 [ID...]
#   v0.5.0:  node-llama-cpp 3.22.1 (tests/conformance/node_modules)
#   5b4ebc5: node-llama-cpp 3.21.1 ($NLC321, default /work/scratch/nlc321/node_modules): the scripts are copied
#            into a scratch folder beside a node_modules link, so that `node-llama-cpp` resolves to 3.21.1.
# Models go to build/dsa (sparse files, ignored by git). One context at a time, --threads 1 (measure_dsa.mjs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
release="${1:?usage: run_dsa.sh v0.5.0|5b4ebc5 [ID...]}"; shift
ids=("$@")
[ ${#ids[@]} -eq 0 ] && ids=(deepseek-v3.2 deepseek-v3.2-nomtp glm-5 glm-5-idxtypes kimi-k2.5 mistral-small-4 minimax-m3)
models="$root/build/dsa"; out="$here/measured"; mkdir -p "$models" "$out"

case "$release" in
  v0.5.0) dir="$here" ;;
  5b4ebc5)
    dir="$(mktemp -d)"; trap 'rm -rf "$dir"' EXIT
    ln -s "${NLC321:-/work/scratch/nlc321/node_modules}" "$dir/node_modules"
    cp "$here/measure.mjs" "$here/measure_dsa.mjs" "$here/models_dsa.mjs" "$dir/"
    echo '{"type":"module"}' > "$dir/package.json" ;;
  *) echo "unknown release '$release'" >&2; exit 2 ;;
esac

real='[{"id":"real_c4096_s1_f16_fa1_ub512","n_ctx":4096},
       {"id":"real_c32768_s1_f16_fa1_ub512","n_ctx":32768},
       {"id":"real_c8192_s3_f16_fa0_ub512","n_ctx":8192,"n_seq":3,"flash_attn":false}]'
for id in "${ids[@]}"; do
  f="$out/$id.$release.jsonl"
  node "$dir/measure_dsa.mjs" "$id" small "$models" default > "$f"
  node "$dir/measure_dsa.mjs" "$id" real "$models" "$real" >> "$f"
  echo "$f: $(grep -c '"kind":"context"' "$f") contexts"
done
