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
    std::vector<std::string> errors, warnings, notes;
    std::vector<std::string> assumptions; ///< kvfit constants the verdict rests on (runtime_plan::assumptions)
    bool fits() const { return errors.empty(); }
};

/// SGLang's default --mem-fraction-static for a GPU of `gpu_bytes` (server_args._handle_gpu_memory_settings; see
/// docs/rules/sglang-frontier.md §2): round((mem - reserved) / mem, 3), reserved in MiB = 512 + 1.5 x
/// max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + tp/8 x 1024 (+ DP attention terms), at least 10240 above
/// 60 GiB. H100 80 GB (81,559 MiB) TP 1: 0.835; H200 TP 8: 0.897; B200 TP 8 DP 8 with DP attention: 0.751.
/// With speculative decoding the reserve grows by 6144 MiB for STANDALONE and 2048 MiB for the other algorithms, after
/// the 10240 floor (`spec_algorithm` as resolved, "" = none).
double sglang_default_fraction(uint64_t gpu_bytes, uint32_t tp, uint32_t dp, bool dp_attention,
                               const std::string & spec_algorithm = "");

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
/// (--speculative-algorithm, --speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens) and
/// --mamba-radix-cache-strategy.
const std::vector<flag_spec> & sglang_flags();

/// The registry entry: plans one TP rank on the smallest GPU of the machine.
runtime_info sglang_runtime();

} // namespace kvfit
