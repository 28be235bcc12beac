#pragma once
/// @file sglang.h
/// The SGLang runtime (src/runtimes/sglang/): `python -m sglang.launch_server` arguments, the rules of its static
/// memory pool (../shared/reference/vllm/RULES.md §5), and its registry entry.

#include "kvfit/model.h"
#include "kvfit/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvfit {


/// `python -m sglang.launch_server` arguments (sglang/srt/server_args.py spelling).
struct sglang_settings {
    double mem_fraction_static = 0;     ///< --mem-fraction-static; 0 = SGLang's default from GPU memory, TP, DP
                                        ///< attention (server_args._handle_gpu_memory_settings, sglang_default_fraction)
    uint32_t tp = 1;                    ///< --tp
    uint32_t dp = 1;                    ///< --dp: replicas (router), or attention DP ranks with enable_dp_attention
    bool enable_dp_attention = false;   ///< --enable-dp-attention: attention at tp/dp, each rank its own KV pool
    uint64_t context_length = 0;        ///< --context-length; 0 = n_ctx_train
    uint32_t max_running_requests = 0;  ///< --max-running-requests; 0 = SGLang's default
    std::string kv_cache_dtype = "auto";///< --kv-cache-dtype: auto, bf16/bfloat16, fp8_e4m3, fp8_e5m2
    uint32_t page_size = 0;             ///< --page-size; 0 = 1, or 64 for DSA models (the NSA backends)
    double mamba_full_memory_ratio = 0.9; ///< --mamba-full-memory-ratio
    uint32_t max_mamba_cache_size = 0;  ///< --max-mamba-cache-size; 0 = from the ratio
    bool disable_radix_cache = false;   ///< --disable-radix-cache
    /// --swa-full-tokens-ratio: the sliding-window pool's tokens per full-pool token (HybridSWAPoolConfigurator);
    /// SGLang's default 0.8 (server_args.py `swa_full_tokens_ratio: float = 0.8`)
    double swa_full_tokens_ratio = 0.8;
    bool swa_full_tokens_ratio_given = false; ///< the ratio came from the flag (else SGLang's default, noted)
    /// --cuda-context-memory: memory in use before the weights load (CUDA context, NCCL); default 0.5 GiB, a kvfit
    /// constant named in the plan's assumptions
    std::optional<uint64_t> pre_load_overhead_bytes;
    /// --speculative-algorithm: EAGLE, EAGLE3, NEXTN (SGLang resolves it to EAGLE: speculative_hook.py
    /// _resolve_speculative_algorithm_alias) or STANDALONE, upper-cased as SGLang does; empty = no speculative decoding
    std::string speculative_algorithm;
    /// --speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens; 0 = SGLang's choice
    /// (_auto_choose_speculative_params: 3 / 1 / 4, 5 / 4 / 8 for LlamaForCausalLM and Grok; draft tokens = steps + 1
    /// when topk is 1). Tokens per request per verify step.
    uint32_t speculative_num_steps = 0, speculative_eagle_topk = 0, speculative_num_draft_tokens = 0;
    /// --mamba-radix-cache-strategy (earlier --mamba-scheduler-strategy): auto, no_buffer, extra_buffer,
    /// extra_buffer_lazy; the mamba slots each running request is reserved (_calculate_mamba_ratio: 3, 5, 4; 1 with
    /// --disable-radix-cache). auto: no_buffer without speculative decoding, extra_buffer with it (see plan_sglang).
    std::string mamba_radix_cache_strategy = "auto";
    /// --disable-piecewise-cuda-graph: no piecewise (prefill) CUDA graphs, so no len(piecewise_cuda_graph_tokens) x
    /// 8 MiB in the default fraction's reserve (server_args.py _handle_gpu_memory_settings)
    bool disable_piecewise_cuda_graph = false;
    /// --enforce-piecewise-cuda-graph: piecewise graphs on whatever _handle_piecewise_cuda_graph's auto-disable rules
    /// say (it returns before them; it wins over --disable-piecewise-cuda-graph)
    bool enforce_piecewise_cuda_graph = false;
    /// --piecewise-cuda-graph-max-tokens: the largest captured token count; 0 = SGLang's default, chunked_prefill_size
    /// (from the GPU's memory, 2048 to 16384) or 2048 for MLA models (server_args.py, PR #15927)
    uint32_t piecewise_cuda_graph_max_tokens = 0;
    /// The weights per rank as a log states them ("Load weight end. ... mem usage=X GB", `kvfit explain`); unset = the
    /// model's weights split over --tp (rank_weights)
    std::optional<uint64_t> weights_bytes;
};

/// The SGLang plan for one rank (TP ranks are alike).
struct sglang_plan {
    sglang_settings settings;
    uint64_t weights_bytes = 0;        ///< per rank
    int64_t rest_bytes = 0;            ///< pre_free x fraction - weights: the static pool budget
    uint64_t cell_bytes = 0;           ///< KV bytes per token (cell_size) per rank: the budget's figure
    uint64_t alloc_bytes_per_token = 0;///< KV bytes the pool allocates per token per rank (DSA: 656 + 132 per layer
                                       ///< in fp8, above the budget's 576 + 132; else = cell_bytes)
    std::string kv_dtype;              ///< the KV dtype after SGLang's defaults ("bfloat16", "fp8_e4m3")
    uint64_t mamba_bytes_per_request = 0; ///< all recurrent layers, one request, per rank
    uint64_t mamba_slots = 0;          ///< max_mamba_cache_size
    uint64_t kv_pool_bytes = 0;        ///< the part of rest for KV
    uint64_t max_total_num_tokens = 0; ///< "#tokens" of "KV Cache is allocated" (the full pool of a hybrid SWA model)
    uint64_t swa_tokens = 0;           ///< the sliding-window pool's tokens (hybrid SWA models); 0 without one
    uint64_t full_bytes_per_token = 0, swa_bytes_per_token = 0; ///< per rank: full layers' K+V, sliding layers' K+V
    bool fraction_given = false;       ///< --mem-fraction-static was given (else SGLang's default formula)
    uint64_t max_running_requests = 0; ///< resolved
    /// --max-running-requests as the user gave it (0 when not): a plan that runs fewer at once (the mamba slots cap
    /// it) starts but does not meet the request (runtime_plan::fits false, a warning says why)
    uint64_t max_running_requests_asked = 0;
    /// Speculative decoding as resolved (all 0 / empty without it): the algorithm after SGLang's alias (NEXTN -> EAGLE)
    std::string spec_algorithm;
    uint32_t spec_num_steps = 0, spec_eagle_topk = 0, spec_num_draft_tokens = 0;
    uint32_t spec_draft_layers = 0;      ///< the drafter's attention layers in the KV pool (MTP / NextN layers)
    uint64_t spec_draft_kv_bytes = 0;    ///< the drafter's KV pool per rank: the same #tokens, its layers' K+V
    uint64_t spec_draft_weights_bytes = 0; ///< the drafter's weights per rank (an estimate: the MTP blocks / tp)
    uint64_t mamba_intermediate_bytes = 0; ///< intermediate SSM + conv states, draft tokens x mamba state x requests
    uint32_t mamba_ratio = 0;            ///< mamba slots reserved per running request (_calculate_mamba_ratio)
    std::string mamba_strategy;          ///< the mamba radix-cache strategy as resolved (hybrids with the radix cache on)
    uint64_t context_length = 0;
    /// Piecewise (prefill) CUDA graphs as SGLang decides them (sglang_piecewise_cuda_graph): on or off and why, the
    /// capture list; `piecewise_reserve_bytes` is what the default fraction's reserve holds for them (0 when they are
    /// off or --mem-fraction-static is given)
    bool piecewise_on = false;
    uint32_t piecewise_max_tokens = 0, piecewise_graphs = 0;
    uint64_t piecewise_reserve_bytes = 0;
    std::string piecewise_why;
    std::vector<std::string> errors, warnings, notes;
    std::vector<std::string> assumptions; ///< kvfit constants the verdict rests on (runtime_plan::assumptions)
    bool fits() const { return errors.empty(); }
};

/// SGLang's piecewise (prefill) CUDA graphs as server_args.py decides them before it sizes the default
/// --mem-fraction-static (__post_init__ calls _handle_piecewise_cuda_graph, then _handle_gpu_memory_settings).
struct sglang_piecewise {
    bool on = false;             ///< captured: their reserve is in the default fraction
    uint32_t max_tokens = 0;     ///< piecewise_cuda_graph_max_tokens (tokens)
    uint32_t graphs = 0;         ///< len(piecewise_cuda_graph_tokens): the capture sizes up to max_tokens (also when off)
    std::string why;             ///< the rule that decided it, with its source ("--disable-piecewise-cuda-graph",
                                 ///< "DP attention (_handle_piecewise_cuda_graph)", "on by default ...")
    std::vector<std::string> notes; ///< what kvfit could not decide, each with the fraction the other reading gives
};

/// len(piecewise_cuda_graph_tokens) for a largest size of `max_tokens` tokens: _generate_piecewise_cuda_graph_tokens
/// (server_args.py) captures 4..32 step 4, 48..256 step 16, 288..512 step 32, 576..1024 step 64, 1280..4096 step 256,
/// then 4608 step 512, each up to max_tokens. 16384: 74 sizes; 8192: 58; 2048: 42; 0 for max_tokens below 4.
uint32_t sglang_piecewise_capture_sizes(uint32_t max_tokens);

/// Decide SGLang's piecewise CUDA graphs for `m` under `s` on `gpu` (SGLang main of 2026, as its reference startup
/// log of 2026-04-27 shows them: on by default). Off with --disable-piecewise-cuda-graph; on with
/// --enforce-piecewise-cuda-graph whatever else; otherwise off, as _handle_piecewise_cuda_graph turns them off, for a
/// model class on configs/model_config.py's piecewise_cuda_graph_disabled_model_archs (Qwen3-Next, Bailing-V2.5,
/// LLaDA, DeepSeek-V4; the DSA models DeepSeek-V3.2 and GLM-5 as of April 2026), --enable-dp-attention, a non-CUDA GPU
/// (AMD, Apple), a multimodal model (multimodal_model_archs, or a vision tower) and a GGUF checkpoint. The largest
/// size is --piecewise-cuda-graph-max-tokens, else 2048 for MLA models, else chunked_prefill_size from the GPU's
/// memory. `spec_algorithm` is the resolved speculative algorithm ("" = none). What kvfit cannot decide (an unknown
/// model class or GPU vendor, a rule of another SGLang release) is in `notes`.
sglang_piecewise sglang_piecewise_cuda_graph(const model_desc & m, const sglang_settings & s, const device_spec & gpu,
                                             const std::string & spec_algorithm = "");

/// SGLang's default --mem-fraction-static for a GPU of `gpu_bytes` (server_args._handle_gpu_memory_settings; see
/// docs/rules/sglang-frontier.md §2): round((mem - reserved) / mem, 3), reserved in MiB = 512 + 1.5 x
/// max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + tp/8 x 1024 (+ DP attention terms), at least 10240 above
/// 60 GiB. H100 80 GB (81,559 MiB) TP 1: 0.835; H200 TP 8: 0.897; B200 TP 8 DP 8 with DP attention: 0.751.
/// With speculative decoding the reserve grows by 6144 MiB for STANDALONE and 2048 MiB for the other algorithms, after
/// the 10240 floor (`spec_algorithm` as resolved, "" = none). `piecewise_graphs` is len(piecewise_cuda_graph_tokens)
/// when piecewise CUDA graphs are on (sglang_piecewise_cuda_graph), 0 when off: 8 MiB each, before the floor
/// ("Only calculate the memory overhead for Non-Torch Memory use"); Qwen3-8B on a B200 (183,359 MiB), 74 graphs:
/// 0.854 where 0 gives 0.857.
double sglang_default_fraction(uint64_t gpu_bytes, uint32_t tp, uint32_t dp, bool dp_attention,
                               const std::string & spec_algorithm = "", uint32_t piecewise_graphs = 0);

/// chunked_prefill_size as server_args._handle_gpu_memory_settings sets it from the GPU's memory (`gpu_bytes`, the
/// nvidia-smi total): 2048 below 35 GiB, 4096 below 60 GiB, 8192 below 160 GiB, else 16384. Tokens.
uint32_t sglang_default_chunked_prefill_size(uint64_t gpu_bytes);

/// SGLang's context length when --context-length is not given (python/sglang/srt/utils/hf_transformers_utils.py
/// get_context_length): max_position_embeddings x rope_scaling's factor, unless rope_scaling names
/// original_max_position_embeddings or its rope_type is llama3. Qwen3-8B's 40,960 with a linear factor of 2: 81,920;
/// with Qwen's yarn (which names original_max_position_embeddings): 40,960. Tokens; 0 when the model states none.
/// Throws kvfit::error for a factor that is not a number (SGLang fails on it).
uint64_t sglang_derived_context_length(const model_desc & m);

/// Plan SGLang on `gpu`. Throws kvfit::error for a fraction outside (0, 1), tp not dividing the heads, an
/// unknown kv-cache dtype.
sglang_plan plan_sglang(const model_desc & m, const sglang_settings & s, const device_spec & gpu);

/// The SGLang flags, by JSON name, parsed with SGLang's spelling. Throws kvfit::error.
sglang_settings parse_sglang_flags(const flag_values & f);

/// The SGLang flags: --mem-fraction-static, --tp, --context-length, --max-running-requests, --kv-cache-dtype,
/// --page-size, --max-mamba-cache-size, --mamba-full-memory-ratio, --disable-radix-cache, the speculative flags
/// (--speculative-algorithm, --speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens),
/// --mamba-radix-cache-strategy and the piecewise CUDA-graph flags (--disable-piecewise-cuda-graph,
/// --enforce-piecewise-cuda-graph, --piecewise-cuda-graph-max-tokens).
const std::vector<flag_spec> & sglang_flags();

/// The registry entry: plans one TP rank on the smallest GPU of the machine.
runtime_info sglang_runtime();

} // namespace kvfit
