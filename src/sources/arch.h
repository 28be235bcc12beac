#pragma once
// The architecture table (src/sources/arch_table.cpp): one row per llama.cpp architecture, read by both sources.
// A GGUF names its row by general.architecture; a config.json by its `architectures` class names or model_type.
// A row keeps only what no key says: the GGUF layout that llama.cpp's load_arch_hparams hard-codes, the quirks
// of a few config.json keys, parameter flags without a key, and the citation. Everything else comes from keys.
#include "kvfit/model.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace kvfit::detail {

/// Optional tensors and key quirks of a family: what the sources read from a row (parameter counts, the layer
/// layout of a config.json, the tensors of skipped blocks). Set by the row, then overridden by keys where a key exists
/// (attention_bias, mlp_bias, use_conv_bias, ...). Typed: a row names its flags as designated initializers
/// (`F{.qk_norm = true, .mrope = true}`), so a misspelt flag does not compile. What a runtime reads is not here but
/// in the row's arch_facts (include/kvfit/model.h). llama.cpp files are v0.5.0's (and 5b4ebc5's where they agree).
struct param_flags {
    /// q/k/v projections have biases: bq, bk, bv (LLM_TENSOR_ATTN_Q/K/V ".bias") created by load_arch_tensors in
    /// models/qwen2.cpp, qwen2moe.cpp, glm4-moe.cpp; a config.json's attention_bias sets it
    bool qkv_bias = false;
    /// o_proj has a bias: bo (LLM_TENSOR_ATTN_OUT ".bias"), created where the converter wrote it; attention_bias
    bool o_bias = false;
    /// RMSNorm on q and k: attn_q_norm / attn_k_norm (LLM_TENSOR_ATTN_Q_NORM, _K_NORM) created by load_arch_tensors
    /// (models/qwen3.cpp, gemma3.cpp, olmo2.cpp, step35.cpp, laguna.cpp); use_qk_norm sets it
    bool qk_norm = false;
    /// one learned sink logit per head: attn_sinks [n_head] (LLM_TENSOR_ATTN_SINKS, models/openai-moe.cpp)
    bool sinks = false;
    /// gate/up/down (SwiGLU); false: up/down only, no ffn_gate (models/nemotron-h.cpp build_ffn LLM_FFN_RELU_SQR)
    bool ffn_gated = true;
    /// FFN projections have biases (ffn_up_b, ffn_down_b, ffn_gate_b); mlp_bias sets it
    bool mlp_bias = false;
    /// MoE router has a bias: ffn_gate_inp_b [n_expert] (models/openai-moe.cpp)
    bool router_bias = false;
    /// routed experts have biases: ffn_gate_exps_b, ffn_up_exps_b, ffn_down_exps_b (models/openai-moe.cpp)
    bool expert_bias = false;
    /// sigmoid gate on the shared expert, n_embd -> 1: ffn_gate_inp_shexp (models/qwen2moe.cpp, qwen3next.cpp,
    /// qwen35moe.cpp)
    bool shexp_gate = false;
    /// e_score_correction_bias of n_expert values: exp_probs_b (LLM_TENSOR_FFN_EXP_PROBS_B, models/deepseek2.cpp;
    /// DeepSeek-V3 noaux_tc); set by keys only
    bool score_bias = false;
    /// llama.cpp ropes it as M-RoPE/IMROPE (llama_model_rope_type, src/llama-model.cpp): 4 positions per token in the
    /// graph (llama_hparams::n_pos_per_embd)
    bool mrope = false;
    /// Mamba2 conv1d has a bias: ssm_conv1d_b (models/mamba2.cpp, nemotron-h.cpp); use_conv_bias sets it
    bool conv_bias = false;
    /// Mamba2 in_proj/out_proj have biases: ssm_in_b, ssm_out_b; use_bias sets it
    bool ssm_proj_bias = false;
    /// four norms per block, pre/post attention and pre/post FFN: attn_norm, attn_post_norm, ffn_norm, ffn_post_norm
    /// (models/gemma2.cpp, gemma3.cpp, gemma3n.cpp, gemma4.cpp)
    bool gemma_norms = false;
    /// NextN blocks: with load_mtp off only the tensors created with mtp_flags (TENSOR_SKIP) are skipped; the
    /// block's other tensors load (models/step35.cpp load_block_mtp)
    bool mtp_trunk_tensors = false;
    // config.json quirks of `sliding_window` / `attention_chunk_size` when no per-layer list says more
    /// Mistral/Mixtral: a non-null sliding_window slides every layer (transformers MistralConfig; llama.cpp's llama
    /// reads no window: arch_facts no_window)
    bool swa_all = false;
    /// Qwen2/Qwen3: only with use_sliding_window, on layers il >= max_window_layers (transformers Qwen2Config
    /// layer_types; llama.cpp's qwen2 reads no window)
    bool swa_if_used = false;
    /// Llama 4: chunked attention on RoPE layers, NoPE every no_rope_layer_interval (models/llama4.cpp
    /// set_swa_pattern(4): il % 4 < 3 chunked)
    bool chunk_nope = false;
    /// attention_chunk_size repeats the sliding window (MiMo-V2): no chunked layer (models/mimo2.cpp reads the
    /// sliding_window_pattern array only)
    bool chunk_alias = false;
    /// caches no key announces: the indexer sits on the sparse-attention layers only, after the leading dense blocks
    /// (MiniMax-M3's MSA: llama-model.cpp create_memory filter_idx il >= n_layer_dense_lead)
    bool index_sparse = false;
    /// each NextN/MTP block's ffn_exp_probs_b.bias is created without the MTP flags (TENSOR_NOT_REQUIRED only, never
    /// TENSOR_SKIP), so it is loaded while the block is not: deepseek32.cpp:121, glm-dsa.cpp:155 (both releases;
    /// measured +1024 B)
    bool mtp_probs_b = false;
    /// what llama.cpp's converter writes (convert_hf_to_gguf.py, conversion/*.py): by default (no --no-mtp) it appends
    /// the checkpoint's NextN/MTP blocks to block_count and writes nextn_predict_layers, so a config.json plans them as
    /// a GGUF's (n_layer_mtp: counted by -ngl and split by -ts, loaded as unused): glm.py Glm4MoeModel/GlmMoeDsaModel/
    /// Glm4MoeLiteModel, deepseek.py DeepseekV32Model, mimo.py, step3.py, nemotron.py (MoE only), qwen.py
    /// _QwenMtpMixin (Qwen3-Next, 3.5); the same in v0.5.0 and 5b4ebc5. Not DeepSeek-V3/V4 (skip_mtp; --mtp only)
    bool nextn_folded = false;
};

/// How a GGUF's layer kinds are laid out when its keys alone do not say (llama.cpp load_arch_hparams).
/// `period` and `window` are the row's parameters; per-layer keys (head_count_kv[il], sliding_window_pattern
/// array, full_attention_interval, attention.compress_ratios, attention.indexer.*) are read in every layout.
/// - attention:       head_count_kv[il] > 0 is attention, others none; a sliding_window_pattern array marks swa.
/// - swa_period:      set_swa_pattern(period): il % period < period - 1 is swa. period 6: il 0-4 swa, il 5 full.
/// - swa_dense_first: set_swa_pattern(period, dense_first): il % period != 0 is swa. period 4: il 0 full, il 1-3 swa.
/// - chunked_period:  as swa_period, with chunked attention of facts.n_chunk_fixed tokens (llama4: 3 chunked, 1 full).
/// - interval:        interval_attention(il, full_attention_interval), the others recurrent (n 4: il 3, 7, ...).
/// - kv_or_recurrent: head_count_kv[il] > 0 is attention, 0 is recurrent (lfm2, jamba, granitehybrid).
/// - nemotron_h:      head_count_kv[il] > 0 attention; else feed_forward_length[il] == 0 recurrent; else none.
/// - all_recurrent:   every layer recurrent (mamba2, rwkv7).
/// - all_swa:         every layer a window (deepseek4: set_swa_pattern(0)), plus its compressed caches.
/// - parallel_hybrid: attention and a recurrent mixer side by side in every layer (falcon-h1).
enum class gguf_layout : uint8_t {
    attention, swa_period, swa_dense_first, chunked_period, interval, kv_or_recurrent, nemotron_h, all_recurrent, all_swa,
    parallel_hybrid,
};

/// One architecture.
struct arch_row {
    std::string_view gguf_arch; ///< llama.cpp general.architecture (LLM_ARCH_NAMES, src/llama-arch.cpp)
    std::string_view hf_names;  ///< config.json `architectures` classes (as convert_hf_to_gguf.py registers them)
                                ///< and model_type names, space separated
    gguf_layout layout;         ///< GGUF layout (above)
    uint32_t period;            ///< swa/chunk period or default full_attention_interval; 0 when unused
    uint32_t window;            ///< default n_swa (swa_period), tokens; a fixed chunk is facts.n_chunk_fixed
    recurrent_kind rec;         ///< family of the recurrent layers
    bool mla;                   ///< GGUF: MLA layers when <arch>.attention.key_length_mla is present
    uint32_t kv_from_start;     ///< GGUF: layers il >= this reuse an earlier layer's KV; 0 = all own KV
    param_flags flags;          ///< optional tensors and key quirks (the sources read them)
    arch_facts facts;           ///< what a runtime needs beyond the keys (model_desc::arch: set_arch_facts)
    std::string_view cite;      ///< where the rules come from (llama.cpp files; transformers modeling files)
};

/// The row whose gguf_arch is `arch`; nullptr when kvfit has none.
const arch_row * find_arch_gguf(std::string_view arch);
/// The row listing one of `names` (tried in order: architectures classes, then model_types); nullptr when none.
const arch_row * find_arch_hf(const std::vector<std::string> & names);
/// All rows, in table order (docs and tests).
const std::vector<arch_row> & arch_rows();
/// Sets m.arch to the facts of the row of m.gguf_architecture (the first row naming it: rows that share a GGUF
/// architecture share its facts, tests/test_arch_rows.cpp), or to none when kvfit has no row. Both sources call it
/// once the GGUF architecture is known, so no runtime looks an architecture up by name.
void set_arch_facts(model_desc & m);

// --- rules written once, used by both sources -------------------------------------------------------------

/// The interval rule of Gated DeltaNet hybrids: layer il is attention iff (il + 1) % n == 0, else recurrent.
/// llama.cpp models/qwen35.cpp and qwen3next.cpp (recurrent_layer_arr[i] = (i + 1) % full_attention_interval != 0);
/// Qwen3NextConfig layer_types. n 4: il 0, 1, 2 recurrent, il 3 attention, ... il 47 attention.
inline bool interval_attention(uint32_t il, uint32_t n) { return (il + 1) % n == 0; }

/// set_swa_pattern(period, dense_first) (llama.cpp src/llama-hparams.cpp): layer il slides (or is chunked) iff
/// period == 0 || il % period < period - 1; with dense_first (laguna) iff il % period != 0. Transformers writes the
/// same rule as (il + 1) % period != 0 (Gemma3Config sliding_window_pattern, Llama4TextConfig no_rope_layer_interval).
/// period 4: il 0, 1, 2 window, il 3 full; period 4 dense_first: il 0 full, il 1, 2, 3 window.
inline bool swa_pattern_layer(uint32_t il, uint32_t period, bool dense_first = false) {
    return period == 0 || (dense_first ? il % period != 0 : il % period < period - 1);
}

/// The last n_shared of n_layer layers read an earlier layer's KV and keep no cache of their own (Gemma 4: GGUF
/// attention.shared_kv_layers, config.json num_kv_shared_layers; models/gemma4.cpp). n_layer 30, n_shared 10: il 20-29.
inline bool kv_shared_layer(uint32_t il, uint32_t n_layer, uint32_t n_shared) {
    return n_shared > 0 && il + n_shared >= n_layer;
}

/// What one layer stores, as a reader decided it from its keys: the input of build_layer_caches, which both sources
/// call, so a layer kind becomes the same caches whichever file described it.
struct layer_store {
    /// attention: K/V of `attn`; mla: the latent (set_mla_layer); dsv4: DeepSeek-V4's window and compressed caches
    /// (add_dsv4_caches); recurrent: the states of model_desc::rec_kind (add_recurrent_state); none: nothing.
    enum class mem : uint8_t { none, attention, mla, dsv4, recurrent };
    mem what = mem::none;
    cache_kind attn = cache_kind::full; ///< attention: full, window (m.n_swa) or chunked (m.n_chunk)
    bool kv_shared = false;             ///< attention / mla: reads an earlier layer's KV (kv_shared_layer): no cache
    bool indexer = false;               ///< attention / mla: DSA, MSA or hybrid-idx indexer keys after the attention
    uint32_t compress = 0;              ///< dsv4: compress ratio 0, 4 or 128
    bool parallel_state = false;        ///< attention: a recurrent mixer beside it keeps its states too (falcon-h1:
                                        ///< both create_memory filters true on every layer)
    uint32_t ple_state = 0;             ///< recurrent: elements of a per-layer-embedding conv state (0: none)
};

/// Fills m.caches (length m.n_layer, cleared first) from one layer_store per layer, in this order per layer: the
/// attention cache (or latent, or DeepSeek-V4 window), the indexer of `index_dim` values, then states. The shape
/// fields (n_head_kv, head_dim_k/v, n_swa, n_chunk, kv_lora_rank, the recurrent dims) must be set first. Example:
/// Qwen3.5-9B il 3 {attention, full} -> {full, 4 x 256/256}; il 0 {recurrent} -> {conv_state 24576} + {ssm_state 524288}.
void build_layer_caches(model_desc & m, const std::vector<layer_store> & layers, uint32_t index_dim);

/// The MLA shape of layer il (DeepSeek-V2/V3, Kimi-K2, GLM-5): the attention reads n_head heads from one latent
/// of kv_lora_rank + n_rot_mla values per token, cached as K only (llama.cpp llama-kv-cache.cpp, MLA: V is a view
/// of K). Sets n_head_kv 1, head_dim_k 576, head_dim_v 512 for DeepSeek-V3 and appends the latent cache.
/// m.kv_lora_rank and m.n_rot_mla must be set.
void set_mla_layer(model_desc & m, uint32_t il);

/// The caches of a DeepSeek-V4 layer (llama.cpp llama-kv-cache-dsv4.cpp, models/deepseek4.cpp): a sliding-window
/// cache of one head of `head_dim` values, K only (K and V are one tensor), window n_swa; then by `ratio`:
/// 4 -> a compressed cache of head_dim values and an indexer of `index_dim` values, both one cell per 4 tokens;
/// 128 -> a compressed cache of head_dim values, one cell per 128 tokens; 0 -> nothing more.
/// DeepSeek-V4-Flash il 2: {window 1 x 512/0, 128} + {compressed 512, ratio 4} + {indexer 128, ratio 4}.
void add_dsv4_caches(model_desc & m, uint32_t il, uint32_t ratio, uint32_t head_dim, uint32_t index_dim);

} // namespace kvfit::detail
