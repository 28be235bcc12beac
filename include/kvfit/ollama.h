#pragma once
/// @file ollama.h
/// The Ollama runtime (src/runtimes/ollama/): llama-server underneath (RULES §6 of ../shared/reference/vllm/RULES.md),
/// with Ollama's own choices of context, slots and cache type, planned with the llama.cpp rules (llamacpp.h).

#include "kvfit/llamacpp.h"
#include "kvfit/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit {


/// Ollama's knobs: Modelfile parameters and server environment variables.
struct ollama_settings {
    uint64_t num_ctx = 0;              ///< PARAMETER num_ctx; 0 = OLLAMA_CONTEXT_LENGTH or the VRAM tier
    uint64_t context_length_env = 0;   ///< OLLAMA_CONTEXT_LENGTH; 0 = unset
    uint32_t num_parallel = 0;         ///< OLLAMA_NUM_PARALLEL; 0 = unset (1)
    std::string kv_cache_type;         ///< OLLAMA_KV_CACHE_TYPE: "", f16, q8_0, q4_0
    std::string flash_attention;       ///< OLLAMA_FLASH_ATTENTION: "" (auto), "1"/"true", "0"/"false"
    uint64_t gpu_overhead_bytes = 0;   ///< OLLAMA_GPU_OVERHEAD
    uint64_t mmproj_bytes = 0;         ///< projector file size (vision models); 0 = none
    uint64_t fit_target_bytes = 0;     ///< LLAMA_ARG_FIT_TARGET set in extraEnvs; 0 = llama-server's 1024 MiB
    bool embedding = false;            ///< an embedding model (numParallel forced to 1)
    /// --iogpu-wired-limit-mb N (`sudo sysctl iogpu.wired_limit_mb=N` on a Mac): the Metal working set, MiB; 0 =
    /// macOS's default. On an Apple GPU Ollama's VRAM is the working set (metal.h).
    uint64_t iogpu_wired_limit_mb = 0;
};

/// The Ollama plan: the llama-server launch Ollama makes, and kvfit's llama.cpp plan of it.
struct ollama_plan {
    ollama_settings settings;
    uint64_t num_ctx = 0;              ///< per slot, after the default tier and the clamp to n_ctx_train
    std::string num_ctx_from;          ///< "num_ctx", "OLLAMA_CONTEXT_LENGTH", "VRAM tier >= 47 GiB", ...
    uint32_t num_parallel = 1;         ///< after the family rule
    bool parallel_forced = false;      ///< true when Ollama forced 1 for this family
    ggml_type cache_type = ggml_type::f16;
    flash_attn_mode flash_attn = flash_attn_mode::automatic;
    uint64_t fit_target_bytes = 0;     ///< per device, what llama-server's --fit keeps free
    bool mmproj_offload = true;        ///< false: --no-mmproj-offload
    llamacpp_settings llama;           ///< -c num_ctx x num_parallel, -np, cache types, -fa
    llamacpp_plan plan;                ///< kvfit's llama.cpp plan of that launch (after --fit lowers -ngl)
    bool all_on_gpu = false;           ///< every layer and the output on the GPUs (no CPU spill)
    bool cpu_only = false;             ///< no GPU given: Ollama runs every layer on the CPU, in host RAM
    std::vector<std::string> notes, warnings;
    /// With GPUs: every layer on them; without: the CPU plan (host RAM is not bounded here, its size is reported).
    bool fits() const { return plan.fits() && (all_on_gpu || cpu_only); }
};

/// Ollama's families whose parallel slots are forced to 1 (server/sched.go), keyed on the GGUF
/// general.architecture: mllama, qwen3vl, qwen3vlmoe, qwen35, qwen35moe, qwen3next, lfm2, lfm2moe, nemotron_h,
/// nemotron_h_moe, nemotron_h_omni. Ollama's data, carried as Ollama has it.
const std::vector<std::string> & ollama_single_slot_architectures();

/// Plan Ollama on `gpus`. Throws kvfit::error for an OLLAMA_KV_CACHE_TYPE other than f16, q8_0, q4_0.
ollama_plan plan_ollama(const model_desc & m, const ollama_settings & s, const std::vector<device_spec> & gpus);

/// The Ollama flags, by JSON name (Modelfile parameters and server environment variables). Throws kvfit::error.
ollama_settings parse_ollama_flags(const flag_values & f);

/// The Ollama flags: --num-ctx, --num-parallel, --ollama-kv-cache-type, --ollama-flash-attention,
/// --ollama-context-length, --ollama-gpu-overhead, --mmproj-size, --fit-target, --embedding.
const std::vector<flag_spec> & ollama_flags();

/// The registry entry.
runtime_info ollama_runtime();

} // namespace kvfit
