#!/usr/bin/env bash
# Builds the allocation-tracing llama.cpp of one release for recording compute graphs (tools/graph_template):
#   tools/graph_template/build_trace.sh v0.5.0|5b4ebc5
# 1. the release's llama.cpp source from the git bundle node-llama-cpp ships (tests/conformance/releases/<release>,
#    installed by tests/conformance/run.sh), into build/graph_trace/<release>/llama.cpp;
# 2. ggml-alloc-trace.patch applied to its ggml/src/ggml-alloc.c: with $GGML_ALLOC_TRACE set, ggml_gallocr writes
#    every allocation (A), free (F), in-place reuse (I) and freed view tail (X) of the graph allocator to that file;
# 3. libggml-base built from it (CPU backend off: the shipped libggml-cpu-*.so are used), placed in a copy of the
#    release's shipped binaries (build/graph_trace/<release>/bins), and llama_probe
#    (tests/conformance/probe/llama_probe.cpp) linked against that copy: build/graph_trace/<release>/llama_probe.
# The patch changes no allocation: a traced run reports the same compute buffer as the shipped build (extract.py
# checks every traced context against the buffer llama.cpp itself reports).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rel="${1:?release: v0.5.0 or 5b4ebc5}"
nm="$root/tests/conformance/releases/$rel/node_modules"
bins="$nm/@node-llama-cpp/linux-x64/bins/linux-x64"
bundle="$nm/node-llama-cpp/llama/gitRelease.bundle"
[ -f "$bundle" ] && compgen -G "$bins/libllama.*.so" >/dev/null || {
  echo "build_trace: release $rel is not installed (run tests/conformance/run.sh, or npm ci in tests/conformance/releases/$rel)" >&2
  exit 2
}
out="$root/build/graph_trace/$rel"
src="$out/llama.cpp"
mkdir -p "$out"
if [ ! -f "$src/ggml/src/ggml-alloc.c" ]; then
  rm -rf "$src"
  git -c advice.detachedHead=false clone -q "$bundle" "$src"
fi
if ! grep -q GGML_ALLOC_TRACE "$src/ggml/src/ggml-alloc.c"; then
  (cd "$src" && patch -s -p1 < "$here/ggml-alloc-trace.patch")
fi
# the scheduler's graph dump ($GGML_SCHED_DUMP, tools/simcuda/sched_dump.inc): changes no allocation either
python3 "$root/tools/simcuda/insert_sched_dump.py" "$src/ggml/src/ggml-backend.cpp"
touch "$src/ggml/ggml.pc.in" # not shipped in the bundle's ggml/; configure_file wants it
cmake -S "$src/ggml" -B "$out/ggml-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON \
  -DGGML_CPU=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$out/ggml-build" --target ggml-base -j "$(nproc)" >/dev/null
rm -rf "$out/bins" && cp -r "$bins" "$out/bins"
cp -L "$out/ggml-build/src/libggml-base.so" "$out/bins/libggml-base.so"
ln -sf libggml-base.so "$out/bins/libggml-base.so.0" # the traced build's soname
# llama_probe against the traced copy (build_probe.sh checks the release and links it)
LLAMA_SRC="$src" OUT_DIR="$out" BINS_DIR="$out/bins" "$root/tests/conformance/probe/build_probe.sh" "$rel" >/dev/null
echo "build_trace: $out/llama_probe (llama.cpp $rel, allocation trace on \$GGML_ALLOC_TRACE)"
