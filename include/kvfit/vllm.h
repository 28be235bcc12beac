#pragma once
/// @file vllm.h
/// The vLLM runtime (src/runtimes/vllm/): its engine arguments, the rules of its KV-cache pool, and its registry
/// entry. The rules, with worked examples recomputed from public logs, are ../shared/reference/vllm/RULES.md
/// (cited below as "RULES §n"). A rule reads only model_desc and the settings, never an architecture name.
///
/// Units: bytes (uint64_t) unless a name says otherwise; tokens for lengths; GiB = 2^30 B in messages.

#include "kvfit/model.h"
#include "kvfit/runtime.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvfit {


/// Which vLLM release's rules are reproduced (docs/rules/vllm-overhead.md §1 lists what differs, with the source of each).
/// - v2025 ("0.19"; v0.1x up to v0.20): gpu_memory_utilization 0.9; no CUDA-graph term in the budget (graphs came out of
///   the 1 - utilization slack); "GPU KV cache size" = (num_blocks // groups) x min block size; hybrid alignment grain
///   fixed at 16.
/// - v0_21 ("0.21"; v0.21 to v0.23): as v2025, but VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults on ("CUDA graph
///   memory profiling is enabled (default since v0.21.0)", gpu_worker.py): the CUDA-graph estimate leaves the budget.
/// - v2026 ("0.24"; v0.24 and later, as read in 2026): gpu_memory_utilization 0.92, the graph estimate subtracted,
///   "GPU KV cache size" = int(max_concurrency x max_model_len), hybrid alignment grain max(16, --block-size).
enum class vllm_rules : uint8_t { v2025, v0_21, v2026 };

/// "vLLM 2026 rules (v0.24+)", "vLLM 0.21 rules (v0.21-v0.23)" or "vLLM 2025 rules (<= v0.20)".
const char * vllm_rules_name(vllm_rules r);
/// The short name --vllm-rules and detail.settings.vllm_rules use: "2026", "0.21", "2025".
const char * vllm_rules_key(vllm_rules r);
/// --vllm-rules: 2025, 0.1x, 0.19, 0.20 -> v2025; 0.21, 0.22, 0.23 -> v0_21; 2026, 0.24 and later -> v2026.
/// Throws kvfit::error "--vllm-rules 'x': expected 2025, 0.21 or 2026 (or a release such as 0.19, 0.22, 0.26)".
vllm_rules parse_vllm_rules(const std::string & text);
/// The release has the CUDA-graph estimate in its budget (v0.21 and later).
bool vllm_graph_estimate(vllm_rules r);

/// --mamba-cache-mode. automatic: "none", or "align" when prefix caching is on for a hybrid (RULES §4).
enum class mamba_cache_mode : uint8_t { automatic, none, align, all };

/// "auto", "none", "align", "all".
const char * mamba_cache_mode_name(mamba_cache_mode m);

/// --speculative-config, as vLLM resolves it (vllm/config/speculative.py SpeculativeConfig @f19b16d9, __post_init__ and
/// _verify_args). What it costs in memory: docs/rules/vllm-speculative.md.
struct vllm_speculative {
    /// After vLLM's normalisation: "mtp" (the MTP model types deepseek_mtp, qwen3_5_mtp, ... are deprecated names of
    /// it), "eagle", "eagle3", "draft_model", "ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator", or a method
    /// kvfit does not know (kept as written, warned); "" = no speculative decoding.
    std::string method;
    std::string model;                        ///< "model": the draft checkpoint (EAGLE head, draft model); "" otherwise
    uint32_t num_speculative_tokens = 0;      ///< after vLLM's defaults (suffix: 24; a draft config's n_predict)
    uint32_t draft_tensor_parallel_size = 0;  ///< "draft_tensor_parallel_size": 1 or the target's TP; 0 = the target's
    std::string json;                         ///< the value as given, for the launch command
    std::vector<std::string> warnings;        ///< keys and methods kvfit does not model, named (parse_speculative_config)
    /// The draft checkpoint's description (eagle, eagle3, draft_model): its layers' KV specs join the pool and its
    /// weights the model's. Loaded by the runtime entry (plan.cpp) through load_model; null for mtp / ngram / suffix.
    std::shared_ptr<const model_desc> draft;
    /// An EAGLE3 head's "draft_vocab_size" (its own LM head's rows) when its config.json is read locally; 0 = the draft's
    /// vocab_size.
    uint32_t draft_vocab_size = 0;
};

/// Parses a --speculative-config value with nlohmann/json. Throws kvfit::error with one line for text that is not a
/// JSON object ("--speculative-config: not valid JSON: ..."), for a key of the wrong type, for what vLLM's
/// SpeculativeConfig rejects before loading anything (tensor_parallel_size, num_speculative_tokens <= 0, a "model"
/// without a method it detects). Keys and methods kvfit does not model are named in `warnings`.
vllm_speculative parse_speculative_config(const std::string & json_text);

/// vLLM engine arguments, spelled as `vllm serve` spells them (vllm/engine/arg_utils.py), plus the three
/// budget terms kvfit cannot derive from the model (RULES §2.1 item 4, §8.1). Zero means "vLLM's default".
struct vllm_settings {
    vllm_rules rules = vllm_rules::v2026;
    int64_t max_model_len = 0;            ///< --max-model-len, tokens; 0 = the model's n_ctx_train; -1 = auto-fit
    double gpu_memory_utilization = 0;    ///< --gpu-memory-utilization; 0 = 0.92 (v2026) or 0.9 (v2025)
    uint64_t kv_cache_memory_bytes = 0;   ///< --kv-cache-memory-bytes per GPU; replaces the budget when set
    std::string kv_cache_dtype = "auto";  ///< --kv-cache-dtype (vllm_kv_cache_dtypes())
    /// --quantization / -q: fp8, nvfp4, mxfp4, awq, gptq (and awq_marlin, gptq_marlin, modelopt, modelopt_fp4,
    /// compressed-tensors); "" = the checkpoint's quantization_config. A method other than the config's is vLLM's
    /// ValueError (ModelConfig._verify_quantization); fp8 on an unquantized checkpoint is online per-tensor fp8.
    std::string quantization;
    bool disable_hybrid_kv_cache_manager = false; ///< --disable-hybrid-kv-cache-manager: every layer at full length
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
    /// --cpu-offload-gb: GiB of weights per GPU moved to pinned host memory and read over PCIe (UVA). vLLM's
    /// create_offloader builds UVAOffloader(cpu_offload_max_bytes = int(gb x 1024^3)) (model_executor/offloader/base.py)
    /// and make_layers wraps only the decoder layers; uva.py offloads whole parameters until that many bytes are
    /// off the GPU. 0 = none.
    double cpu_offload_gb = 0;
    /// --dtype: auto, half, float16, bfloat16, float, float32 (vllm/config/model.py _STR_DTYPE_TO_TORCH_DTYPE). The
    /// weights of an unquantized checkpoint are loaded in it (and so sized), the KV cache and mamba conv state of
    /// "auto" follow it. auto = the config's dtype, float32 downcast to bfloat16 (_resolve_auto_dtype).
    std::string dtype = "auto";
    uint32_t concurrency = 1;             ///< kvfit's requirement: full-length requests served at once, all replicas
    vllm_speculative speculative;         ///< --speculative-config; method "" = none
    /// --usage-context: "api" (vllm serve, the OpenAI server: UsageContext.OPENAI_API_SERVER) or "llm" (the offline
    /// LLM class: UsageContext.LLM_CLASS), which EngineArgs.get_batch_defaults gives a larger max_num_batched_tokens
    /// (16384 / 8192 instead of 8192 / 2048).
    std::string usage_context = "api";
    bool language_model_only = false;     ///< --language-model-only: the vision tower is neither loaded nor profiled
    bool skip_mm_profiling = false;       ///< --skip-mm-profiling: the tower loads, its encoder is not profiled
    /// --limit-mm-per-prompt: images (and video) one prompt may carry; -1 = vLLM's default (999 images: profiled);
    /// 0 for every modality = text-only (no encoder profiling, MultiModalBudget.get_encoder_budget() == 0).
    int32_t limit_mm_images = -1;
    /// --mm-processor-kwargs max_pixels (or a size with longest_edge): the largest image the processor makes, pixels;
    /// 0 = the processor's default (kvfit: the config's tokens per image, else 16,777,216 pixels, named).
    uint64_t mm_max_pixels = 0;
    /// --compilation-config cudagraph_mode: "" = vLLM's default (FULL_AND_PIECEWISE), NONE, PIECEWISE, FULL,
    /// FULL_DECODE_ONLY, FULL_AND_PIECEWISE.
    std::string cudagraph_mode;
    /// --compilation-config max_cudagraph_capture_size (0 = min(max_num_seqs x (1 + k) x 2, 512, MNBT)), or the largest
    /// of cudagraph_capture_sizes when that list is given (cudagraph_sizes holds it).
    uint32_t max_cudagraph_capture_size = 0;
    std::vector<uint32_t> cudagraph_sizes; ///< --compilation-config cudagraph_capture_sizes, as given; empty = vLLM's
    /// What --compilation-config holds beyond those three keys (an -O level, other CompilationConfig keys), named:
    /// they change no memory kvfit models, and the plan's notes say so rather than drop them silently.
    std::vector<std::string> compilation_notes;
};

/// One term of vLLM's memory besides the weights and the KV pool, on one GPU of one stage, with where it comes from
/// (docs/rules/vllm-overhead.md). Listed in the plan (vllm_plan::terms), detail.constants and the text report.
struct vllm_term {
    std::string name;   ///< "activation: forward", "activation: sampler", "activation: encoder profiling",
                        ///< "non-torch", "CUDA graphs", "vision tower weights"
    uint64_t bytes = 0; ///< per GPU
    /// "given" (a flag the user set), "rule" (vLLM's source decides it: 0 under --enforce-eager, the budget's own
    /// figure), or "estimate" (a kvfit constant times vLLM's shapes: --strict refuses it)
    std::string basis;
    std::string source; ///< the vLLM file and function the term reproduces
    std::string how;    ///< the arithmetic, in words: "1,024 requests x 248,320 logits x 15 B"
};

/// The --kv-cache-dtype choices: auto, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla, fp8_per_token_head,
/// int8_per_token_head, nvfp4 (get_kv_quant_mode, RULES §1.1).
const std::vector<std::string> & vllm_kv_cache_dtypes();

/// vLLM's memory besides the weights and the KV pool on one GPU of the PP stage holding layers [first, first + n) (last:
/// the stage that samples; first_stage: the stage that runs the vision encoder): the profile run's activation peak
/// (the forward of max_num_batched_tokens, the sampler's logits, the multimodal encoder's profiling), the non-torch
/// growth and the CUDA-graph estimate, each a vllm_term (docs/rules/vllm-overhead.md §2-§5). Given inputs
/// (activation_bytes, non_torch_bytes, cudagraph_bytes) replace the estimates.
std::vector<vllm_term> vllm_overhead_terms(const model_desc & m, const vllm_settings & s, uint32_t first, uint32_t n,
                                           bool first_stage, bool last_stage);

/// The CUDA-graph capture sizes vLLM uses (vllm/config/vllm.py _set_cudagraph_sizes): 1, 2, 4, then every 8 up to 255,
/// then every 16, up to max_cudagraph_capture_size = min(max_num_seqs x (1 + k) x 2, 512, max_num_batched_tokens); with
/// k speculative tokens only multiples of 1 + k (adjust_cudagraph_sizes_for_spec_decode). `s` has defaults resolved.
std::vector<uint32_t> vllm_cudagraph_sizes(const vllm_settings & s);

/// Default activation peak per GPU: max_num_batched_tokens x 4 x e x f / tp bytes, f the widest FFN of the stage
/// (n_ff, or n_expert_used x n_ff_exp + n_ff_shexp for MoE; at least 4 n_embd), e the bytes of the dtype the model
/// runs in (m.dtype after --dtype: 2 for bfloat16/float16 and for auto on a float32 config, 4 under --dtype float32):
/// four FFN activations per token. A kvfit estimate, not a vLLM rule: 5% above vllm #10517's Llama-3.1-8B peaks
/// (2.10 GiB at 20k tokens, bf16).
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
    uint64_t weights_bytes = 0;     ///< weights on one GPU of this stage ("Model loading took"), offloaded ones excluded
    uint64_t cpu_offload_bytes = 0; ///< --cpu-offload-gb: this stage's decoder-layer weights per GPU in host memory
    uint64_t activation_bytes = 0;  ///< input or default
    uint64_t non_torch_bytes = 0;   ///< input or default
    uint64_t cudagraph_bytes = 0;   ///< input or default
    uint64_t vision_weights_bytes = 0; ///< the vision tower's weights on this GPU (within weights_bytes; first stage)
    std::vector<vllm_term> terms;   ///< how activation, non-torch and graphs were made (vllm_overhead_terms)
    int64_t available_kv_bytes = 0; ///< "Available KV cache memory"; negative when nothing is left
    uint32_t n_tensors = 0;         ///< KV tensors on this worker (group_size projected onto the stage)
    uint32_t n_draft_layers = 0;    ///< the drafter's KV layers this worker holds (the last stage holds the drafter)
    uint64_t draft_weights_bytes = 0; ///< the drafter's weights on one GPU of this stage (within weights_bytes)
    uint64_t num_blocks = 0;        ///< blocks this worker could hold
};

/// What speculative decoding adds to the plan (docs/rules/vllm-speculative.md). Per rank, bytes.
struct vllm_spec_plan {
    std::string method;                     ///< vllm_speculative::method; "" = none
    uint32_t num_speculative_tokens = 0;
    uint32_t draft_layers = 0;              ///< decoder layers the drafter runs (MTP: n_predict; EAGLE: its layers)
    uint32_t draft_kv_layers = 0;           ///< of them, layers whose KV specs join the pool (same blocks as the model's)
    uint64_t draft_kv_bytes_per_token = 0;  ///< their page of one token per rank, summed (block 1)
    uint64_t draft_weights_bytes = 0;       ///< the drafter's weights on one GPU of the stage holding it
    bool weights_estimate = true;           ///< the weights are a kvfit estimate (no published log checks them)
    uint64_t mamba_conv_rows_added = 0;     ///< conv-state rows each mamba layer gains (num_speculative_tokens, GDN/Mamba2/KDA)
    uint64_t mamba_blocks_added = 0;        ///< num_speculative_blocks: blocks each request holds more per mamba group
    /// CUDA graphs' largest capture size, min(max_num_seqs x (1 + num_speculative_tokens) x 2, 512, MNBT)
    /// (vllm/config/vllm.py _set_cudagraph_sizes); filled with or without speculation
    uint64_t max_cudagraph_capture_size = 0;
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
    uint64_t kv_cache_tokens = 0;   ///< "GPU KV cache size" from v0.21.0 (vllm #43308): int(max_concurrency x max_model_len)
    uint64_t kv_cache_tokens_v2025 = 0; ///< the same line up to v0.20: (num_blocks // groups) x min block size
    uint64_t need_bytes = 0;        ///< KV one request of max_model_len needs per worker
    uint64_t max_model_len_fit = 0; ///< largest length whose need fits (search.h over [1, n_ctx_train], as vLLM bisects)
    vllm_spec_plan speculative;     ///< --speculative-config's part (method "" = none)
    std::vector<vllm_term> terms;   ///< the non-KV terms of the limiting stage (vllm_overhead_terms), in budget order
    std::vector<std::string> errors;   ///< vLLM's startup errors, verbatim; empty = starts
    std::vector<std::string> warnings; ///< vLLM's warnings and kvfit's
    std::vector<std::string> notes;    ///< defaults taken, inputs assumed
    std::vector<std::string> assumptions; ///< kvfit's estimates a verdict rests on (runtime_plan::assumptions)
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

/// The vLLM flags, by JSON name, parsed with vLLM's spelling ("--gpu-memory-utilization '1.5': expected a number
/// from 0 to 1", "--max-model-len 0: use -1 for auto-fit"). Throws kvfit::error.
vllm_settings parse_vllm_flags(const flag_values & f);

/// The vLLM flags: --vllm-rules, --max-model-len, --gpu-memory-utilization, --kv-cache-memory-bytes, --kv-cache-dtype,
/// --block-size, --max-num-seqs, --max-num-batched-tokens, prefix caching, the mamba cache, --enforce-eager, -tp, -pp,
/// -dp, -dcp, --nodes, the three budget inputs and --concurrency.
const std::vector<flag_spec> & vllm_flags();

/// The registry entry: plans one replica on the smallest GPU of the machine (every GPU of a placement is alike), or
/// compares the placements of vllm_placements when no -tp, -pp or -dp is given and there is more than one GPU.
runtime_info vllm_runtime();

} // namespace kvfit
