#!/usr/bin/env bash
# Builds a simulated CUDA backend for one llama.cpp release: the release's own ggml-cuda host code (the files that
# decide placement and sizes, compiled by nvcc from the release's source), linked against sim_cudart.cpp (a CUDA
# runtime that answers for simulated GPUs) instead of NVIDIA's runtime. ggml loads it as it loads libggml-cuda.so
# (GGML_BACKEND_DL); llama.cpp's scheduler, in the release's shipped libggml-base, then sizes every buffer of a
# CUDA run in no_alloc mode on a machine without a GPU.
#   tools/simcuda/build.sh v0.5.0|5b4ebc5
# Output: build/simcuda/<release>/libggml-cuda.so (load it with GGML_BACKEND_PATH, or tests/conformance/probe's
# simcuda=PATH). Reuses build/probe/<release>/src (tests/conformance/probe/build_probe.sh checks it out of the
# release's git bundle). env: NVCC (default /usr/local/cuda/bin/nvcc, else nvcc on PATH), SIMCUDA_ARCH (the one
# real architecture compiled for device code: default 89; the host code's kernel choice follows the simulated
# device's compute capability, see README.md), LLAMA_SRC (a source tree of the release).
# Exit 2 with one line when nvcc or the release is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rel="${1:?release: v0.5.0 or 5b4ebc5}"
case "$rel" in
  v0.5.0)  tag=v0.5.0 ;;
  5b4ebc5) tag=v0.4.0 ;;
  *) echo "simcuda: unknown release '$rel' (v0.5.0 or 5b4ebc5)" >&2; exit 2 ;;
esac
nvcc="${NVCC:-}"
if [ -z "$nvcc" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then nvcc=/usr/local/cuda/bin/nvcc; else nvcc=$(command -v nvcc || true); fi
fi
[ -n "$nvcc" ] && [ -x "$nvcc" ] || { echo "simcuda: no nvcc (set NVCC or install the CUDA toolkit)" >&2; exit 2; }
cuda_inc="$(cd "$(dirname "$nvcc")/.." && pwd)/include"
bins="${BINS_DIR:-$root/tests/conformance/releases/$rel/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}"
[ -f "$bins/libggml-base.so" ] || { echo "simcuda: no $bins/libggml-base.so: install the release (tests/conformance/README.md)" >&2; exit 2; }

# the release's source: the probe's checkout (include, ggml/include, src), plus ggml/src
src="${LLAMA_SRC:-$root/build/probe/$rel/src}"
if [ ! -f "$src/ggml/src/ggml-cuda/ggml-cuda.cu" ]; then
  if [ -n "${LLAMA_SRC:-}" ]; then echo "simcuda: LLAMA_SRC=$src has no ggml/src/ggml-cuda" >&2; exit 2; fi
  "$root/tests/conformance/probe/build_probe.sh" "$rel" >/dev/null
  git -C "$src" -c advice.detachedHead=false checkout -q HEAD -- ggml/src
fi
out="${OUT_DIR:-$root/build/simcuda/$rel}"
mkdir -p "$out/obj"
arch="${SIMCUDA_ARCH:-89}"

# The files whose host code runs before any kernel: device init and buffers, supports_op / offload_op,
# get_alloc_size and graph_optimize (ggml-cuda.cu); the flash-attention kernel choice that supports_op and
# get_alloc_size ask (fattn.cu); the top-k MoE fusion test graph_optimize asks (topk-moe.cu); the lightning indexer's
# supports_op (lightning-indexer.cu, v0.5.0). Every other symbol is a stub that aborts: no kernel runs in no_alloc.
files=(ggml-cuda.cu fattn.cu topk-moe.cu)
[ -f "$src/ggml/src/ggml-cuda/lightning-indexer.cu" ] && files+=(lightning-indexer.cu)
# the compile definitions of a default CMake build (ggml/src/ggml-cuda/CMakeLists.txt: GGML_CUDA_GRAPHS on,
# flash attention on, peer copy on; GGML_BACKEND_DL as node-llama-cpp and the release builds use), without VMM
# (cuMem* needs the driver library)
defs=(-DGGML_BACKEND_DL -DGGML_BACKEND_BUILD -DGGML_BACKEND_SHARED -DGGML_SHARED -DGGML_CUDA_USE_GRAPHS
      -DGGML_CUDA_NO_VMM -DGGML_SCHED_MAX_COPIES=4 -DNDEBUG)
# The flash-attention vector kernels a default build compiles (both releases: f16-f16, q4_0-q4_0, q8_0-q8_0,
# bf16-bf16; v0.5.0 ggml/CMakeLists.txt:207 GGML_CUDA_FA_QUANTS and ggml/cmake/common.cmake:53-126, 5b4ebc5
# ggml/src/ggml-cuda/CMakeLists.txt:115-125): a K/V pair without one converts K and V to f16 (fattn.cu), which
# get_alloc_size charges. SIMCUDA_FA_QUANTS=all models a build with GGML_CUDA_FA_QUANTS=all (GGML_CUDA_FA_ALL_QUANTS).
fa_quants="${SIMCUDA_FA_QUANTS:-q4_0-q4_0,q8_0-q8_0,f16-f16,bf16-bf16}"
if grep -q 'GGML_CUDA_FA_QUANTS' "$src/ggml/CMakeLists.txt" 2>/dev/null || grep -q 'GGML_CUDA_FA_QUANTS' "$src/ggml/src/ggml-cuda/fattn.cu"; then
  defs+=(-DGGML_CUDA_FA_QUANTS="\"$fa_quants\"")
  for tv in q4_0 q4_1 q5_0 q5_1 q8_0 bf16 f16; do
    for tk in q4_0 q4_1 q5_0 q5_1 q8_0 bf16 f16; do
      c=0
      if [ "$fa_quants" = all ] || [ "$tk-$tv" = f16-f16 ] || [[ ",$fa_quants," == *",$tk-$tv,"* ]]; then c=1; fi
      defs+=("-DGGML_CUDA_FA_${tk^^}_${tv^^}=$c")
    done
  done
elif [ "$fa_quants" = all ]; then
  defs+=(-DGGML_CUDA_FA_ALL_QUANTS)
fi
objs=()
for f in "${files[@]}"; do
  o="$out/obj/${f%.cu}.o"
  if [ ! -f "$o" ] || [ "$src/ggml/src/ggml-cuda/$f" -nt "$o" ]; then
    echo "simcuda: nvcc $f (sm_$arch)"
    "$nvcc" -std=c++17 -O1 -arch="sm_$arch" -use_fast_math -extended-lambda "${defs[@]}" \
      -I"$src/ggml/include" -I"$src/ggml/src" -I"$src/ggml/src/ggml-cuda" -Xcompiler -fPIC,-Wno-pedantic \
      -c "$src/ggml/src/ggml-cuda/$f" -o "$o"
  fi
  objs+=("$o")
done
g++ -std=c++17 -O1 -fPIC -I"$cuda_inc" -c "$here/sim_cudart.cpp" -o "$out/obj/sim_cudart.o"
objs+=("$out/obj/sim_cudart.o")

# stubs for every symbol the compiled files reference and nothing provides (the kernels of the other .cu files,
# cuBLAS): each aborts with its name if it is ever called
ld -r -o "$out/obj/combined.o" "${objs[@]}"
provided() {
  for lib in "$bins/libggml-base.so" $(g++ -print-file-name=libstdc++.so.6) /lib/x86_64-linux-gnu/libc.so.6 \
             /lib/x86_64-linux-gnu/libm.so.6 /lib/x86_64-linux-gnu/libgcc_s.so.1; do
    nm -D --defined-only "$lib" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//'
  done | sort -u
}
nm -u "$out/obj/combined.o" | awk '{print $2}' | sed 's/@.*//' | sort -u > "$out/obj/undefined.txt"
provided > "$out/obj/provided.txt"
comm -23 "$out/obj/undefined.txt" "$out/obj/provided.txt" | grep -vxE "_GLOBAL_OFFSET_TABLE_|__dso_handle|atexit" > "$out/obj/stubbed.txt" || true
{
  echo '#include <cstdio>'
  echo '#include <cstdlib>'
  echo 'static void simcuda_stub(const char * name) { fprintf(stderr, "simcuda: %s was called: it needs a real GPU (the simulator only sizes buffers)\n", name); abort(); }'
  echo 'extern "C" {'
  while read -r s; do echo "void $s(void) { simcuda_stub(\"$s\"); }"; done < "$out/obj/stubbed.txt"
  echo '}'
} > "$out/obj/stubs.cpp"
g++ -std=c++17 -O0 -fPIC -w -c "$out/obj/stubs.cpp" -o "$out/obj/stubs.o"
g++ -shared -o "$out/libggml-cuda.so" "$out/obj/combined.o" "$out/obj/stubs.o" -L"$bins" -l:libggml-base.so \
  -Wl,-rpath,"$bins" -Wl,-z,defs -lpthread
echo "simcuda: built $out/libggml-cuda.so ($(wc -l < "$out/obj/stubbed.txt") stubbed symbols; llama.cpp $tag, sm_$arch)"
