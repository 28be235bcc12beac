#!/usr/bin/env bash
# Builds llama_probe (and, with --mtmd, mtmd_probe) for one release against that release's own headers and the
# libraries its node-llama-cpp ships (CPU build).
#   tests/conformance/probe/build_probe.sh v0.5.0|5b4ebc5 [--mtmd]
# env: LLAMA_SRC (default /work/scratch/llama050/src for v0.5.0, /work/scratch/llama5b4/src for 5b4ebc5),
#      OUT_DIR (default build/probe/<release>)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
rel="${1:?release: v0.5.0 or 5b4ebc5}"
case "$rel" in
  v0.5.0)  src="${LLAMA_SRC:-/work/scratch/llama050/src}"; tag=v0.5.0 ;;
  5b4ebc5) src="${LLAMA_SRC:-/work/scratch/llama5b4/src}"; tag=v0.4.0 ;;
  *) echo "unknown release $rel" >&2; exit 2 ;;
esac
bins="$root/tests/conformance/releases/$rel/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
[ -f "$bins/libllama.$tag.so" ] || { echo "no $bins/libllama.$tag.so: install the release (tests/conformance/README.md)" >&2; exit 2; }
out="${OUT_DIR:-$root/build/probe/$rel}"
mkdir -p "$out"
inc=(-I"$src/include" -I"$src/ggml/include" -I"$src/src")
libs=(-L"$bins" -l:"libllama.$tag.so" -l:"libggml.$tag.so" -l:libggml-base.so -Wl,-rpath,"$bins")
g++ -std=c++17 -O1 "${inc[@]}" -DPROBE_BACKEND_DIR="\"$bins\"" "$here/llama_probe.cpp" -o "$out/llama_probe" "${libs[@]}"
echo "built $out/llama_probe"
if [ "${2:-}" = "--mtmd" ]; then
  m="$src/tools/mtmd"
  objs=()
  mkdir -p "$out/mtmd"
  for f in "$m"/clip.cpp "$m"/mtmd-image.cpp "$m"/mtmd-audio.cpp "$m"/models/*.cpp; do
    [ -f "$f" ] || continue
    o="$out/mtmd/$(basename "${f%.cpp}").o"
    if [ ! -f "$o" ] || [ "$f" -nt "$o" ]; then
      g++ -std=c++17 -O1 -fPIC "${inc[@]}" -I"$m" -I"$src/vendor" -I"$src/common" -c "$f" -o "$o"
    fi
    objs+=("$o")
  done
  g++ -std=c++17 -O1 "${inc[@]}" -DPROBE_BACKEND_DIR="\"$bins\"" -I"$m" "$here/mtmd_probe.cpp" "${objs[@]}" -o "$out/mtmd_probe" "${libs[@]}" -lpthread
  echo "built $out/mtmd_probe"
fi
