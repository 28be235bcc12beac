#pragma once
// Internals shared by src/runtimes/mlx/*.cpp: which mlx-lm cache class each layer cache becomes, its bytes at a
// context, and the prefill transient. Public rules live in include/kvfit/mlx.h.
#include "kvfit/mlx.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit::detail {

/// What the planner needs to know about the run, resolved once from the model and the settings.
struct mlx_run {
    const model_desc * m = nullptr;
    const mlx_settings * s = nullptr;
    uint32_t act_bytes = 2;      ///< activation / KV element bytes (mlx_activation_bytes_per_element)
    bool default_caches = false; ///< no make_cache: one full or latent cache on every layer (make_prompt_cache)
    uint32_t n_seq = 1;          ///< sequences with a cache at once
    uint32_t prefill_batch = 1;  ///< sequences prefilled together (server: min(n_seq, --prompt-concurrency))
};

/// One cache of one layer at a context, as mlx-lm holds it.
struct mlx_layer_cache {
    uint32_t il = 0;
    std::string name;            ///< KVCache, QuantizedKVCache, RotatingKVCache, ChunkedKVCache, ArraysCache
    cache_kind kind = cache_kind::full;
    uint64_t cells = 0;          ///< 0 for states
    uint64_t k_bytes_per_cell = 0, v_bytes_per_cell = 0; ///< states: k = bytes per sequence
    bool grows = false;          ///< KVCache-like: the cells follow the context without a cap
    bool quantizable = false;    ///< a bare KVCache (the layer's only cache): maybe_quantize_kv_cache converts it
    uint64_t bytes(uint32_t n_seq) const;
};

/// Every cache of every layer at `tokens` tokens per sequence. `quantized`: bare KVCache layers are
/// QuantizedKVCache (settings.kv_bits / kv_group_size). Indexer caches of ratio > 1 and compressed caches are
/// skipped (plan_mlx refuses them).
std::vector<mlx_layer_cache> mlx_layer_caches(const mlx_run & r, uint64_t tokens, bool quantized);

/// The prefill transient (estimate): the largest layer's working arrays for one chunk of
/// min(prefill_step_size, tokens) tokens x prefill_batch sequences against `tokens` cached cells. docs/rules/mlx.md §6.
uint64_t mlx_activation_bytes(const mlx_run & r, uint64_t tokens);

/// The head width (dk) of the first attention layer whose prefill takes MLX's unfused attention (no fused kernel for
/// its head widths, e.g. 256 or dk != dv: one score matrix per chunk, docs/rules/mlx.md §6); 0 when every layer is
/// fused or latent.
uint32_t mlx_unfused_head_dim(const model_desc & m);

/// What --model names: the settings' id, else the Hub id or directory the description came from (never a
/// config.json path), else the model's name.
std::string mlx_model_id(const model_desc & m, const mlx_settings & s);

/// argparse's line for flags the entry point does not have ("mlx_lm.server: error: unrecognized arguments: --kv-bits
/// 4"); "" when every flag is known.
std::string mlx_unrecognized_flags(const mlx_settings & s);

/// Refusals that do not depend on the context: a GGUF (mlx-lm loads safetensors), unknown flags, several
/// sequences under mlx_lm.generate, compressed or strided indexer caches (no mlx-lm rule in kvfit).
std::vector<std::string> mlx_fixed_refusals(const model_desc & m, const mlx_settings & s,
                                            const std::string & unknown_flags);

/// What --kv-bits runs into when the caches convert at `at` tokens: RotatingKVCache's NotImplementedError, mx.quantize's
/// group-size error, or the MLA attention's AttributeError. Empty when the conversion and the attention work.
std::vector<std::string> mlx_quantization_refusals(const mlx_run & r, uint64_t at);

/// Group equal caches for reports.
std::vector<mlx_cache_group> mlx_group_caches(const std::vector<mlx_layer_cache> & caches, uint32_t n_seq);

} // namespace kvfit::detail
