#!/usr/bin/env bash
# Builds llama_probe (and, with --mtmd, mtmd_probe) for one release against that release's own headers and the
# libraries its node-llama-cpp ships (CPU build).
#   tests/conformance/probe/build_probe.sh v0.5.0|5b4ebc5 [--mtmd]
# The headers: the release's own llama.cpp, which node-llama-cpp ships as a git bundle
# (releases/<release>/node_modules/node-llama-cpp/llama/gitRelease.bundle, ~35 MB); the paths the build needs are
# checked out of it into build/probe/<release>/src (a few seconds; reused when present).
# env: LLAMA_SRC (a llama.cpp source tree of that release: overrides the bundle), OUT_DIR (default build/probe/<release>),
#      BINS_DIR (the libraries to link and load: default the release's shipped CPU build; tools/graph_template's copy)
# Exit status 2 (one line on stderr) when the release is not installed or no source tree can be found.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
rel="${1:?release: v0.5.0 or 5b4ebc5}"
mtmd=0
[ "${2:-}" = "--mtmd" ] && mtmd=1
case "$rel" in
  v0.5.0)  tag=v0.5.0 ;;
  5b4ebc5) tag=v0.4.0 ;;
  *) echo "build_probe: unknown release '$rel' (v0.5.0 or 5b4ebc5)" >&2; exit 2 ;;
esac
nlc="$root/tests/conformance/releases/$rel/node_modules/node-llama-cpp"
bins="${BINS_DIR:-$root/tests/conformance/releases/$rel/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}"
[ -f "$bins/libllama.$tag.so" ] || { echo "build_probe: no $bins/libllama.$tag.so: install the release (tests/conformance/README.md)" >&2; exit 2; }
out="${OUT_DIR:-$root/build/probe/$rel}"
mkdir -p "$out"

# the paths of the source tree each probe compiles against
paths=(include ggml/include src)
[ $mtmd = 1 ] && paths+=(tools/mtmd vendor common)
if [ -n "${LLAMA_SRC:-}" ]; then
  src="$LLAMA_SRC"
  [ -f "$src/include/llama.h" ] || { echo "build_probe: LLAMA_SRC=$src has no include/llama.h (a llama.cpp $tag source tree)" >&2; exit 2; }
else
  src="$out/src"
  bundle="$nlc/llama/gitRelease.bundle"
  missing=()
  for p in "${paths[@]}"; do [ -e "$src/$p" ] || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    [ -f "$bundle" ] || { echo "build_probe: no llama.cpp source for $rel: LLAMA_SRC is unset and $bundle is missing (install the release: tests/conformance/README.md)" >&2; exit 2; }
    # the bundle's one commit is the release's source (llama/llama.cpp.info.json names its tag); only the paths the
    # probes compile are checked out (the whole tree is ~210 MB)
    if [ ! -d "$src/.git" ]; then
      rm -rf "$src.tmp"
      git clone -q --no-checkout "$bundle" "$src.tmp"
      mv "$src.tmp" "$src"
    fi
    git -C "$src" -c advice.detachedHead=false checkout -q HEAD -- "${missing[@]}"
    echo "build_probe: llama.cpp $(node -p "require('$nlc/llama/llama.cpp.info.json').tag" 2>/dev/null || echo "$tag") source from $bundle in $src (${missing[*]})"
  fi
fi

inc=(-I"$src/include" -I"$src/ggml/include" -I"$src/src")
libs=(-L"$bins" -l:"libllama.$tag.so" -l:"libggml.$tag.so" -l:libggml-base.so -Wl,-rpath,"$bins")
g++ -std=c++17 -O1 "${inc[@]}" -DPROBE_BACKEND_DIR="\"$bins\"" "$here/llama_probe.cpp" -o "$out/llama_probe" "${libs[@]}"
echo "built $out/llama_probe"
if [ $mtmd = 1 ]; then
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
