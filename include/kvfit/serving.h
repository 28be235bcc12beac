#pragma once
/// @file serving.h
/// Serving runtimes: vLLM, SGLang and Ollama, each a policy over the same model_desc. A policy reads only the
/// model description and its own settings struct, never an architecture name. The rules, with worked examples
/// recomputed from public logs, are ../shared/reference/vllm/RULES.md (cited below as "RULES §n").
///
/// Units: bytes (uint64_t) unless a name says otherwise; tokens for lengths; GiB = 2^30 B in messages.

#include "kvfit/plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvfit {

// ============================================================================================================
// vLLM
// ============================================================================================================

/// Which vLLM release's rules are reproduced (RULES §2.1, §2.3, §1.3, §4).
/// - v2026 (v0.24 and later, as read in 2026): gpu_memory_utilization 0.92, CUDA-graph estimate subtracted from
///   the budget, "GPU KV cache size" = int(max_concurrency x max_model_len), hybrid alignment grain
///   max(16, --block-size).
/// - v2025 (up to v0.19/0.20): gpu_memory_utilization 0.9, no graph term, tokens = (num_blocks // groups) x
///   block_size, hybrid alignment grain fixed at 16.
enum class vllm_rules : uint8_t { v2025, v2026 };

/// "vLLM 2026 rules (v0.24+)" or "vLLM 2025 rules (<= v0.20)".
const char * vllm_rules_name(vllm_rules r);

/// --mamba-cache-mode. automatic: "none", or "align" when prefix caching is on for a hybrid (RULES §4).
enum class mamba_cache_mode : uint8_t { automatic, none, align, all };

/// "auto", "none", "align", "all".
const char * mamba_cache_mode_name(mamba_cache_mode m);

/// vLLM engine arguments, spelled as `vllm serve` spells them (vllm/engine/arg_utils.py), plus the three
/// budget terms kvfit cannot derive from the model (RULES §2.1 item 4, §8.1). Zero means "vLLM's default".
struct vllm_settings {
    vllm_rules rules = vllm_rules::v2026;
    int64_t max_model_len = 0;            ///< --max-model-len, tokens; 0 = the model's n_ctx_train; -1 = auto-fit
    double gpu_memory_utilization = 0;    ///< --gpu-memory-utilization; 0 = 0.92 (v2026) or 0.9 (v2025)
    uint64_t kv_cache_memory_bytes = 0;   ///< --kv-cache-memory-bytes per GPU; replaces the budget when set
    std::string kv_cache_dtype = "auto";  ///< --kv-cache-dtype (vllm_kv_cache_dtypes())
    uint32_t block_size = 0;              ///< --block-size, tokens; 0 = 16 (hybrids are re-aligned, RULES §1.3)
    uint32_t max_num_seqs = 0;            ///< --max-num-seqs; 0 = get_batch_defaults (256 or 1024)
    uint32_t max_num_batched_tokens = 0;  ///< --max-num-batched-tokens; 0 = get_batch_defaults (2048 or 8192)
    bool enable_prefix_caching = false;   ///< --enable-prefix-caching (decides the hybrid mamba mode)
    mamba_cache_mode mamba_mode = mamba_cache_mode::automatic; ///< --mamba-cache-mode
    std::string mamba_cache_dtype = "auto";     ///< --mamba-cache-dtype: conv state; auto = model dtype
    std::string mamba_ssm_cache_dtype = "auto"; ///< --mamba-ssm-cache-dtype; auto = config mamba_ssm_dtype, else conv
    uint32_t mamba_block_size = 0;        ///< --mamba-block-size (mode all); 0 = model chunk size, else 64
    bool enforce_eager = false;           ///< --enforce-eager: no CUDA graphs, no graph estimate
    uint32_t tp = 1;                      ///< -tp/--tensor-parallel-size
    uint32_t pp = 1;                      ///< -pp/--pipeline-parallel-size
    uint32_t dp = 1;                      ///< -dp/--data-parallel-size
    uint32_t dcp = 1;                     ///< -dcp/--decode-context-parallel-size
    /// Budget inputs (per GPU). Unset: the defaults of vllm_default_* below, reported as such.
    std::optional<uint64_t> activation_bytes; ///< torch peak increase of profile_run, weights excluded
    std::optional<uint64_t> non_torch_bytes;  ///< NCCL, cuBLAS workspaces, CUDA context growth
    std::optional<uint64_t> cudagraph_bytes;  ///< profile_cudagraph_memory(); v2026 with graphs only
    uint32_t concurrency = 1;             ///< kvfit's requirement: full-length requests served at once, all replicas
};

/// The --kv-cache-dtype choices: auto, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla, fp8_per_token_head,
/// int8_per_token_head, nvfp4 (get_kv_quant_mode, RULES §1.1).
const std::vector<std::string> & vllm_kv_cache_dtypes();

/// Default activation peak per GPU: max_num_batched_tokens x 8 x f / tp bytes, f the widest FFN of the stage
/// (n_ff, or n_expert_used x n_ff_exp + n_ff_shexp for MoE; at least 4 n_embd): four bf16 FFN activations per
/// token. A kvfit estimate, not a vLLM rule: 5% above vllm #10517's Llama-3.1-8B peaks (2.10 GiB at 20k tokens).
uint64_t vllm_default_activation_bytes(const model_desc & m, uint32_t max_num_batched_tokens, uint32_t tp,
                                       uint32_t first_layer, uint32_t n_layer);
/// Default non-torch memory per GPU: 0.35 GiB alone (vllm #10517 logs 0.35), 0.5 GiB with tp x pp > 1 (NCCL).
uint64_t vllm_default_non_torch_bytes(uint32_t world);
/// Default CUDA-graph estimate: 0 under v2025 or --enforce-eager; else 1 GiB for hybrids (FULL_AND_PIECEWISE
/// captures both kinds) and 0.5 GiB otherwise. A guess; vllm #46462 logs 6.24 GiB with a speculative drafter.
uint64_t vllm_default_cudagraph_bytes(const model_desc & m, const vllm_settings & s);

/// One KV-cache group (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size): `n_layer` layers of one
/// spec, padded to group_size with `n_padding` empty slots.
struct vllm_group {
    std::string kind;              ///< "full_attention", "mla", "sliding_window", "chunked", "mamba"
    uint32_t n_layer = 0;          ///< real layers
    uint32_t n_padding = 0;        ///< padding layers (group_size - n_layer on the short last group)
    uint32_t block_size = 0;       ///< tokens per block of this spec (page unification may enlarge it)
    uint64_t per_request_blocks = 0; ///< cdiv(max_memory_usage_bytes, page) at max_model_len
};

/// One worker (a PP stage; its TP ranks are identical, DP replicas too).
struct vllm_rank {
    uint32_t pp_rank = 0;
    uint32_t first_layer = 0, n_layer = 0; ///< layers of this stage (get_pp_indices)
    uint64_t total_bytes = 0;       ///< device total memory
    uint64_t requested_bytes = 0;   ///< ceil(total x gpu_memory_utilization)
    uint64_t weights_bytes = 0;     ///< weights on one GPU of this stage ("Model loading took")
    uint64_t activation_bytes = 0;  ///< input or default
    uint64_t non_torch_bytes = 0;   ///< input or default
    uint64_t cudagraph_bytes = 0;   ///< input or default
    int64_t available_kv_bytes = 0; ///< "Available KV cache memory"; negative when nothing is left
    uint32_t n_tensors = 0;         ///< KV tensors on this worker (group_size projected onto the stage)
    uint64_t num_blocks = 0;        ///< blocks this worker could hold
};

/// The vLLM plan: what the engine prints at startup, and whether it starts.
struct vllm_plan {
    vllm_settings settings;         ///< with every default resolved (utilization, block size, batch sizes, mode)
    std::string device_name;        ///< the GPU planned on
    double compute_capability = 0;  ///< of that GPU; 0 = unknown
    uint64_t max_model_len = 0;     ///< the length planned (the auto-fit result under -1)
    bool hybrid = false;            ///< attention and mamba layers together
    uint32_t n_head_kv_rank = 0;    ///< KV heads stored per rank: max(1, H_kv / tp); 1 for MLA (replicated)
    uint64_t attn_bytes_per_token = 0; ///< page of one token of one attention layer (block 1), per rank
    uint64_t mamba_state_bytes = 0; ///< unpadded mamba page per layer per rank (conv + temporal)
    uint64_t mamba_conv_bytes = 0, mamba_ssm_bytes = 0; ///< its two parts
    double mamba_padding_pct = 0;   ///< "Padding mamba page size by %.2f%%"
    uint32_t block_size = 0;        ///< attention block size after defaults and hybrid alignment
    bool block_size_raised = false; ///< "Setting attention block size to %d tokens"
    uint64_t page_bytes = 0;        ///< one block of one layer (the unified page)
    uint32_t group_size = 0;        ///< layers per group = KV tensors
    uint64_t block_bytes = 0;       ///< bytes one block costs over all tensors: group_size x page (or sum of pages)
    std::vector<vllm_group> groups; ///< every group, in kind order
    uint32_t padding_layers = 0;    ///< total padding layers
    std::vector<vllm_rank> ranks;   ///< one per PP stage
    uint64_t num_gpu_blocks = 0;    ///< min over ranks ("# GPU blocks")
    int64_t available_kv_bytes = 0; ///< min over ranks
    uint64_t per_request_blocks = 0;///< sum over groups at max_model_len
    uint64_t mamba_blocks_per_request = 0; ///< the mamba groups' share of per_request_blocks
    double max_concurrency = 0;     ///< num_gpu_blocks / per_request_blocks ("%.2fx")
    uint64_t kv_cache_tokens = 0;   ///< "GPU KV cache size", v2026: int(max_concurrency x max_model_len)
    uint64_t kv_cache_tokens_v2025 = 0; ///< the same line up to v0.20: (num_blocks // groups) x min block size
    uint64_t need_bytes = 0;        ///< KV one request of max_model_len needs per worker
    uint64_t max_model_len_fit = 0; ///< largest length whose need fits (binary search over [1, n_ctx_train])
    std::vector<std::string> errors;   ///< vLLM's startup errors, verbatim; empty = starts
    std::vector<std::string> warnings; ///< vLLM's warnings and kvfit's
    std::vector<std::string> notes;    ///< defaults taken, inputs assumed
    bool fits() const { return errors.empty(); }
};

/// Plan vLLM on `gpu` (one device; every GPU of the placement is alike). Steps: per-layer specs and pages
/// (RULES §1), block size and hybrid alignment (§1.3), groups and padding (§2.2), budget per PP stage (§2.1),
/// blocks = min over stages, per-request blocks, concurrency, both token figures (§2.3), the max_model_len
/// check and auto-fit (§2.4), max_num_seqs against mamba blocks (§2.5).
/// Throws kvfit::error for input vLLM rejects before allocating: "Total number of attention heads (24) must be
/// divisible by tensor parallel size (5).", an unknown kv-cache dtype, fp8_ds_mla without MLA, rwkv layers,
/// page sizes that do not divide (NotImplementedError), gpu_memory_utilization outside (0, 1].
vllm_plan plan_vllm(const model_desc & m, const vllm_settings & s, const device_spec & gpu,
                    double compute_capability = 0);

/// One candidate placement of a multi-GPU plan.
struct vllm_placement {
    uint32_t tp = 1, pp = 1, dp = 1;
    std::string why;          ///< "TP within each node, PP across nodes", ...
    vllm_plan plan;           ///< plan of one replica
    double total_concurrency = 0; ///< dp x max_concurrency
    bool fits = false;        ///< starts, and total_concurrency >= settings.concurrency
};

/// Placements for `nodes` nodes of `gpus_per_node` alike GPUs (RULES §3): within a node every TP that divides
/// the heads with DP over the rest; across nodes TP = gpus_per_node with PP = nodes, or with DP = nodes.
/// Infeasible TP sizes (heads not divisible) are skipped. The result is ordered as listed.
std::vector<vllm_placement> vllm_placements(const model_desc & m, const vllm_settings & s, const device_spec & gpu,
                                            double compute_capability, uint32_t gpus_per_node, uint32_t nodes);

// ============================================================================================================
// SGLang (RULES §5)
// ============================================================================================================

/// `python -m sglang.launch_server` arguments (sglang/srt/server_args.py spelling).
struct sglang_settings {
    double mem_fraction_static = 0;     ///< --mem-fraction-static; 0 = 0.85 (kvfit's stand-in: SGLang picks it
                                        ///< from GPU memory and TP in server_args, not read)
    uint32_t tp = 1;                    ///< --tp
    uint64_t context_length = 0;        ///< --context-length; 0 = n_ctx_train
    uint32_t max_running_requests = 0;  ///< --max-running-requests; 0 = SGLang's default
    std::string kv_cache_dtype = "auto";///< --kv-cache-dtype: auto, fp8_e4m3, fp8_e5m2
    uint32_t page_size = 1;             ///< --page-size
    double mamba_full_memory_ratio = 0.9; ///< --mamba-full-memory-ratio
    uint32_t max_mamba_cache_size = 0;  ///< --max-mamba-cache-size; 0 = from the ratio
    bool disable_radix_cache = false;   ///< --disable-radix-cache
    double swa_full_tokens_ratio = 0.8; ///< --swa-full-tokens-ratio
    std::optional<uint64_t> pre_load_overhead_bytes; ///< memory in use before weights load (default 0.5 GiB)
};

/// The SGLang plan for one rank (TP ranks are alike).
struct sglang_plan {
    sglang_settings settings;
    uint64_t weights_bytes = 0;        ///< per rank
    int64_t rest_bytes = 0;            ///< pre_free x fraction - weights: the static pool budget
    uint64_t cell_bytes = 0;           ///< KV bytes per token (cell_size) per rank
    uint64_t mamba_bytes_per_request = 0; ///< all recurrent layers, one request, per rank
    uint64_t mamba_slots = 0;          ///< max_mamba_cache_size
    uint64_t kv_pool_bytes = 0;        ///< the part of rest for KV
    uint64_t max_total_num_tokens = 0; ///< "#tokens" of "KV Cache is allocated"
    uint64_t max_running_requests = 0; ///< resolved
    uint64_t context_length = 0;
    std::vector<std::string> errors, warnings, notes;
    bool fits() const { return errors.empty(); }
};

/// Plan SGLang on `gpu`. Throws kvfit::error for a fraction outside (0, 1), tp not dividing the heads, an
/// unknown kv-cache dtype.
sglang_plan plan_sglang(const model_desc & m, const sglang_settings & s, const device_spec & gpu);

// ============================================================================================================
// Ollama (RULES §6): llama-server underneath, with Ollama's own choices of context, slots and cache type
// ============================================================================================================

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
    std::vector<std::string> notes, warnings;
    bool fits() const { return plan.fits() && all_on_gpu; }
};

/// Ollama's families whose parallel slots are forced to 1 (server/sched.go), keyed on the GGUF
/// general.architecture: mllama, qwen3vl, qwen3vlmoe, qwen35, qwen35moe, qwen3next, lfm2, lfm2moe, nemotron_h,
/// nemotron_h_moe, nemotron_h_omni. Ollama's data, carried as Ollama has it.
const std::vector<std::string> & ollama_single_slot_architectures();

/// Plan Ollama on `gpus`. Throws kvfit::error for an OLLAMA_KV_CACHE_TYPE other than f16, q8_0, q4_0.
ollama_plan plan_ollama(const model_desc & m, const ollama_settings & s, const std::vector<device_spec> & gpus);

} // namespace kvfit
