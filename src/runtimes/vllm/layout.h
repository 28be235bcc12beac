#pragma once
// Internals of the vLLM runtime shared by layout.cpp (specs, pages, block size, groups) and pool.cpp (budget, blocks,
// concurrency, checks). Not part of the public API.
#include "kvfit/vllm.h"
#include "runtimes/common/torch.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit::detail {

/// The KV-cache layout of a model under resolved settings, global over all layers (before PP projection).
struct vllm_layout {
    uint32_t block_size = 16;            ///< attention block size (after hybrid alignment)
    bool raised = false;                 ///< block size raised by the hybrid alignment
    uint32_t mamba_block_size = 0;       ///< tokens per mamba block (mode all) ; else = block_size
    uint32_t n_head_kv_rank = 0;         ///< heads per rank of the first attention layer
    uint64_t attn1 = 0;                  ///< page of one token of the first attention layer
    uint64_t mamba_conv = 0, mamba_ssm = 0; ///< mamba state parts per layer per rank, bytes
    double padding_pct = 0;              ///< mamba page padding
    bool uniform_type = false;           ///< one attention type, pages differ per layer
    uint64_t page = 0;                   ///< the unified page (max page when uniform_type)
    uint32_t group_size = 0;
    std::vector<vllm_group> groups;
    std::vector<std::vector<uint32_t>> group_layers; ///< layer indices of each group
    std::vector<uint64_t> layer_page;    ///< per layer page (0 without cache); used when uniform_type
    std::vector<uint32_t> group_window;  ///< window (sliding) or chunk (chunked) of each group
    std::vector<std::string> notes;
    uint64_t fixed_block_bytes = 0;      ///< DeepSeek-V4: every group's block costs this (layer tuples x full pages)
};

/// Specs, pages, block-size alignment and groups (vllm.cpp). `s` has defaults resolved.
vllm_layout vllm_kv_layout(const model_desc & m, const vllm_settings & s);

/// Blocks one request of `len` tokens holds in each group (kv_cache_interface.py max_memory_usage_bytes / page).
void vllm_fill_per_request(vllm_layout & lay, const vllm_settings & s, uint64_t len);

/// Bytes one block costs on the worker holding layers [first, first + n): tensors x page, or the sum of the
/// stage's pages when uniform_type. `n_tensors` receives the tensor count.
uint64_t vllm_stage_block_bytes(const vllm_layout & lay, uint32_t first, uint32_t n, uint32_t & n_tensors);

/// Completes --speculative-config against the target (spec.cpp): a "model" without a method becomes mtp when the draft's
/// config has MTP layers (else vLLM's NotImplementedError), MTP's n_predict default and divisibility, the draft TP
/// (1 or the target's), the draft model's vocabulary. Throws kvfit::error with vLLM's message.
void vllm_resolve_speculative(const model_desc & m, vllm_settings & s, std::vector<std::string> & notes);

/// The model as vLLM's KV-cache specs see it with the drafter (spec.cpp): the target's layers, then the drafter's
/// attention layers (MTP: n_predict copies of the target's last full / latent attention layer, states dropped; EAGLE
/// and draft models: the draft checkpoint's attention layers). Fills `sp` (method, layers, mamba terms); warns for what
/// it leaves out (compressed layouts, recurrent drafts).
model_desc vllm_with_draft_layers(const model_desc & m, const vllm_settings & s, vllm_spec_plan & sp,
                                  std::vector<std::string> & warnings);

/// vLLM's derived max_model_len (vllm/config/model.py _get_and_verify_max_len): the config's max_position_embeddings,
/// scaled by rope_scaling's factor unless rope_type is su, longrope or llama3 (factor 1.0 when absent); a yarn type
/// scales original_max_position_embeddings instead (Qwen3-8B's 40,960 with yarn factor 4 of 32,768: 131,072); a
/// model_type containing "gemma3" is not scaled (its 128K already is).
/// 0 when the model states no context. It is the default --max-model-len and the longest one vLLM accepts.
/// Throws kvfit::error where vLLM fails: a factor that is not a number, yarn without original_max_position_embeddings.
uint64_t vllm_derived_max_model_len(const model_desc & m);

/// vLLM's --max-model-len when none is given: the derived length, but a longrope model's top-level
/// original_max_position_embeddings (_get_and_verify_max_len: "if max_model_len is None", Phi-3-style configs).
uint64_t vllm_default_max_model_len(const model_desc & m);

/// The report's sections of a vLLM plan (runtime_plan::sections), from the plan of the chosen replica and the
/// placements compared to choose it (empty when -tp/-pp/-dp were given): the placement line, the placements
/// considered, the KV-cache specs per rank, the budget of each PP stage and the pool, with vLLM's own log lines
/// quoted in its words ("Available KV cache memory", "# GPU blocks", "Maximum concurrency", "GPU KV cache size") so
/// a reader can match them against a real start (sections.cpp).
std::vector<plan_section> vllm_sections(const model_desc & m, const vllm_plan & p,
                                        const std::vector<vllm_placement> & placements);

} // namespace kvfit::detail
