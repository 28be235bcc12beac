#pragma once
/// @file llamacpp_cpu.h
/// llama.cpp's host-dependent extra weight buffers on the CPU backend: AMX and CPU_REPACK. Which libggml-cpu variant
/// ggml loads, which CPU-resident weights then move into an extra buffer, how large it is, and what the model
/// memory breakdown counts with and without mmap. Rules and measurements: docs/rules/llamacpp-cpu-repack.md
/// (identical in llama.cpp 5b4ebc5 and v0.5.0 for x86-64).

#include "kvfit/ggml_type.h"
#include "kvfit/model.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// The x86 features the loaded CPU backend variant is compiled with, as they decide the extra buffer types
/// (ggml/src/ggml-cpu/arch/x86/cpu-feats.cpp ggml_backend_cpu_x86_score; ggml/src/CMakeLists.txt:494-517 variants).
struct cpu_features {
    bool avx2 = true;     ///< AVX2 (haswell and up): CPU_REPACK takes Q4_0, Q4_K, IQ4_NL and MXFP4 matrices
    bool avx512 = false;  ///< AVX512 F/CD/VL/DQ/BW (skylakex and up): CPU_REPACK also takes Q2_K
    bool amx = false;     ///< AMX_INT8 in CPUID and the tile state granted by the kernel (sapphirerapids): the AMX type
    std::string variant = "haswell"; ///< the libggml-cpu-<variant>.so ggml loads: haswell, zen4, sapphirerapids, ...
    std::string source = "assumed";  ///< "this machine (/proc/cpuinfo)", "--cpu-features", "assumed"
    bool operator==(const cpu_features &) const = default;
};

/// The features of a CPU from the flags line of /proc/cpuinfo ("fma f16c avx2 avx512f ... amx_int8"), as ggml scores
/// its variants: the loaded variant is the highest-scoring one whose features are all present (zen4 for AVX-512 with
/// VBMI, VNNI and BF16; sapphirerapids with amx_int8 too). `amx_granted`: the kernel grants the tile state
/// (arch_prctl ARCH_REQ_XCOMP_PERM XFEATURE_XTILEDATA); without it AMX is not registered ("AMX is not ready").
cpu_features cpu_features_from_flags(std::string_view flags, bool amx_granted);

/// The features of this machine's CPU: the flags line of /proc/cpuinfo, and on x86-64 Linux whether the kernel grants
/// the AMX tile state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), as ggml-cpu/amx/amx.cpp does). Elsewhere,
/// or when /proc/cpuinfo cannot be read: the default (AVX2, haswell) with source "assumed (…)". Never throws.
/// Source of `variant`: the scoring of ggml_backend_load_best (see cpu_features_from_flags).
cpu_features detect_host_cpu();

/// `--cpu-features` value (source "--cpu-features"):
/// - "auto": this machine (detect_host_cpu);
/// - "none" (the x64 variant: no AVX2, nothing repacked), "avx2" (haswell), "avx512" (zen4), "amx"
///   (sapphirerapids with the tile state granted): each implies the ones before;
/// - a libggml-cpu variant name: "haswell", "skylakex", "icelake", "zen4", "sapphirerapids", ...;
/// - /proc/cpuinfo flags, separated by commas or spaces ("fma,f16c,sse4_2,bmi2,avx,avx2"), scored as
///   cpu_features_from_flags does (amx_int8 in the list: the tile state is taken as granted).
/// Throws kvfit::error "--cpu-features 'x': expected auto, none, avx2, avx512, amx, a libggml-cpu variant (haswell,
/// zen4, sapphirerapids, ...) or /proc/cpuinfo flags (fma,f16c,avx2,...)" for a single unknown word.
cpu_features parse_cpu_features(std::string_view text);

/// The extra buffer types of `cpu` in llama.cpp's order (ggml-cpu.cpp ggml_backend_cpu_get_extra_buffer_types):
/// {"AMX", "CPU_REPACK"} with AMX, {"CPU_REPACK"} otherwise (every x86 variant registers it; without AVX2 it
/// takes no x86 weight).
std::vector<std::string> llamacpp_cpu_extra_buffer_types(const cpu_features & cpu);

/// The CPU features assumed when nothing says which CPU runs the plan: AVX2 (the haswell variant; every x86-64
/// server CPU since 2013, AMD EPYC Rome/Milan included), source "assumed".
cpu_features llamacpp_cpu_assumed();

/// Where a CPU-resident weight is allocated.
enum class cpu_buffer : uint8_t { cpu, amx, repack };

/// "CPU", "AMX", "CPU_REPACK": the names llama.cpp logs ("load_tensors: AMX model buffer size = ...").
const char * cpu_buffer_name(cpu_buffer b);

/// The buffer a CPU-resident weight goes to (llama-model-loader.cpp buft_for_tensor: the first extra type whose
/// supports_op accepts the weight's op, LLM_TENSOR_INFOS in src/llama-arch.cpp):
/// - AMX (amx/amx.cpp:145-190): op MUL_MAT, ne1 % 32 == 0, and F16 with ne0 % 16 == 0, Q4_0 / Q4_1 / Q8_0 with
///   ne0 % 32 == 0, or Q4_K / Q5_K / Q6_K / IQ4_XS with ne0 % 256 == 0;
/// - CPU_REPACK (ggml-cpu/repack.cpp ggml_repack_get_optimal_repack_type, x86): a 2-D MUL_MAT or 3-D MUL_MAT_ID weight
///   with ne1 % 8 == 0 of Q4_0, Q4_K, IQ4_NL or MXFP4 (AVX2), or Q2_K (AVX512F);
/// - otherwise the plain CPU buffer. Example: Qwen3.5-9B's blk.0.ssm_beta.weight F16 [4096, 32] goes to AMX.
cpu_buffer llamacpp_cpu_buffer_of(const weight_tensor & t, const cpu_features & cpu);

/// Bytes of `t` in buffer `b`, padded to 32 (ggml-alloc.c: GGML_PAD(get_alloc_size, 32)): its bytes, except AMX for a
/// quantized type, which packs ne1 x (ne0 / block) x (block bytes + c) with c = 4 for Q8_0, Q4_K, Q5_K, 2 for IQ4_XS,
/// else 0 (amx/mmq.cpp get_row_size, ggml_backend_amx_get_alloc_size).
uint64_t llamacpp_cpu_buffer_bytes(const weight_tensor & t, cpu_buffer b);

/// The model buffers of the CPU-resident weights `tensors` (llama_model::memory_breakdown, src/llama-model.cpp):
/// - mapped: with mmap, the file range [min offset, max(offset + bytes)) of the weights left in the plain CPU buffer,
///   per file (so an extra-buffer weight lying between CPU weights is counted twice); without mmap the padded sum of
///   those weights;
/// - amx, repack: the sums of llamacpp_cpu_buffer_bytes of the weights that moved.
/// A `duplicate` (the tied output head) that stays in the plain buffer is the original tensor again and adds nothing;
/// one that an extra type takes is a tensor of its own there (llama-model-loader.cpp create_tensor, TENSOR_DUPLICATED:
/// a new tensor unless the original is in the same buffer type's context).
/// Example (measured, LFM2-1.2B with two interior Q4_0 [2048, 8192] weights on an AVX2 host): repack 18,874,368 B, and
/// the mmap total 18,874,368 B above the no-mmap one.
struct cpu_weight_buffers {
    uint64_t mapped_bytes = 0; ///< "CPU_Mapped model buffer size" (mmap) or "CPU model buffer size" (no mmap)
    uint64_t amx_bytes = 0;    ///< "AMX model buffer size"
    uint64_t repack_bytes = 0; ///< "CPU_REPACK model buffer size"
    uint32_t amx_tensors = 0;  ///< weights in the AMX buffer
    uint32_t repack_tensors = 0; ///< weights in the CPU_REPACK buffer
    uint64_t total() const { return mapped_bytes + amx_bytes + repack_bytes; }
};
cpu_weight_buffers llamacpp_cpu_weight_buffers(const std::vector<weight_tensor> & tensors, const cpu_features & cpu,
                                               bool mmap);

} // namespace kvfit
