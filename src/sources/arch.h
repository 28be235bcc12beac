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

/// Optional tensors and key quirks of a family (parameter counts and a few config.json rules).
/// Set by the row, then overridden by keys where a key exists (attention_bias, mlp_bias, use_conv_bias, ...).
struct param_flags {
    bool qkv_bias = false;      ///< q/k/v projections have biases (Qwen2; attention_bias sets it)
    bool o_bias = false;        ///< o_proj has a bias (attention_bias)
    bool qk_norm = false;       ///< per-head RMSNorm on q and k (Qwen3, Gemma, Step); use_qk_norm sets it
    bool attn_gate = false;     ///< q_proj also emits an output gate: q_proj doubled (Qwen3-Next, Qwen3.5)
    bool head_gate = false;     ///< one output-gate logit per head, n_embd x n_head (Step-3.5/3.7 g_proj)
    bool sinks = false;         ///< one learned sink logit per head (gpt-oss)
    bool ffn_gated = true;      ///< gate/up/down (SwiGLU); false: up/down only (Nemotron-H relu2)
    bool mlp_bias = false;      ///< FFN projections have biases
    bool router_bias = false;   ///< MoE router has a bias (gpt-oss)
    bool expert_bias = false;   ///< routed experts have biases (gpt-oss)
    bool shexp_gate = false;    ///< sigmoid gate on the shared expert, n_embd -> 1 (Qwen2-MoE family)
    bool score_bias = false;    ///< e_score_correction_bias of n_expert values (DeepSeek-V3 noaux_tc)
    bool mrope = false;         ///< llama.cpp ropes it as M-RoPE/IMROPE: 4 positions per token in the graph
    bool conv_bias = false;     ///< Mamba2 conv1d has a bias (use_conv_bias)
    bool ssm_proj_bias = false; ///< Mamba2 in_proj/out_proj have biases (use_bias)
    bool gemma_norms = false;   ///< four norms per block (pre/post attention, pre/post FFN), Gemma 2/3/4
    // llama.cpp loader facts (load_arch_tensors) that change the model buffer
    bool tied_output_first = false; ///< a tied output is created (TENSOR_DUPLICATED token_embd) BEFORE token_embd:
                                    ///< llama_model_loader::create_tensor finds no token_embd in the context yet and
                                    ///< makes a second tensor, counted twice without mmap / in no_alloc mode
                                    ///< (models/gemma4.cpp, gemma3n.cpp; both releases)
    bool h_nextn_rows = false;      ///< the graph keeps every ubatch row through the last layer and exposes it as
                                    ///< h_nextn, selecting the output rows after it (get_rows on the last layer only
                                    ///< with embeddings_nextn_masked, off by default: models/gemma4.cpp, step35.cpp);
                                    ///< the output stage holds h_nextn [n_embd, T] besides result_norm
    bool rope_freqs_full = false;   ///< rope_freqs.weight is created by the full-attention blocks only, the first of
                                    ///< them holding it and the others a duplicate (models/gemma4.cpp:92-97
                                    ///< `if (!hparams.is_swa(i))`, both releases): rope_freqs_blocks
    bool mtp_trunk_tensors = false; ///< NextN blocks: with load_mtp off only the tensors created with mtp_flags
                                    ///< (TENSOR_SKIP) are skipped; the block's other tensors load (models/step35.cpp)
    // config.json quirks of `sliding_window` / `attention_chunk_size` when no per-layer list says more
    bool swa_all = false;       ///< Mistral/Mixtral: a non-null sliding_window slides every layer
    bool swa_if_used = false;   ///< Qwen2/Qwen3: only with use_sliding_window, on layers il >= max_window_layers
    /// llama.cpp's architecture uses no sliding window (its models/<arch>.cpp loads no LLM_KV_ATTENTION_SLIDING_WINDOW and
    /// its converter writes none: llama, qwen2, qwen2moe, qwen3, qwen3moe, mistral3; phi3 reads it and turns it off,
    /// "Phi SWA is currently disabled"; both releases), so a window a config.json states is full attention under
    /// llama.cpp (llamacpp_adapt_model); vLLM and SGLang use it
    bool no_window = false;
    bool chunk_nope = false;    ///< Llama 4: chunked attention on RoPE layers, NoPE every no_rope_layer_interval
    bool chunk_alias = false;   ///< attention_chunk_size repeats the sliding window (MiMo-V2): no chunked layer
    // caches no key announces
    bool index_sparse = false;  ///< the indexer sits on the sparse-attention layers only, after the leading dense blocks
                                ///< (MiniMax-M3's MSA: llama-model.cpp create_memory filter_idx il >= n_layer_dense_lead)
    // tensors of skipped blocks the loader still loads
    bool mtp_probs_b = false;   ///< each NextN/MTP block's ffn_exp_probs_b.bias is created without the MTP flags
                                ///< (TENSOR_NOT_REQUIRED only, never TENSOR_SKIP), so it is loaded while the block
                                ///< is not: deepseek32.cpp:121, glm-dsa.cpp:155 (both releases; measured +1024 B)
    // what llama.cpp's converter writes (convert_hf_to_gguf.py, conversion/*.py)
    bool nextn_folded = false;  ///< by default (no --no-mtp) the converter appends the checkpoint's NextN/MTP blocks to
                                ///< block_count and writes nextn_predict_layers, so a config.json plans them as a
                                ///< GGUF's (n_layer_mtp: counted by -ngl and split by -ts, loaded as unused):
                                ///< glm.py Glm4MoeModel/GlmMoeDsaModel/Glm4MoeLiteModel, deepseek.py DeepseekV32Model,
                                ///< mimo.py, step3.py, nemotron.py (MoE only), qwen.py _QwenMtpMixin (Qwen3-Next, 3.5);
                                ///< the same in v0.5.0 and 5b4ebc5. Not DeepSeek-V3/V4 (skip_mtp; --mtp only)
    // context facts (speculative decoding, docs/rules/llamacpp-spec.md)
    bool rs_rollback = false;   ///< the recurrent state keeps n_rs_seq extra snapshots per sequence for draft rollback:
                                ///< llm_arch_supports_rs_rollback (llama-arch.cpp:1112-1127, both releases: qwen35,
                                ///< qwen35moe, qwen4exp, deepseek4, nemotron_h(_moe), lfm2(moe), kimi-k3, bailingmoe3)
};

/// How a GGUF's layer kinds are laid out when its keys alone do not say (llama.cpp load_arch_hparams).
/// `period` and `window` are the row's parameters; per-layer keys (head_count_kv[il], sliding_window_pattern
/// array, full_attention_interval, attention.compress_ratios, attention.indexer.*) are read in every layout.
/// - attention:       head_count_kv[il] > 0 is attention, others none; a sliding_window_pattern array marks swa.
/// - swa_period:      set_swa_pattern(period): il % period < period - 1 is swa. period 6: il 0-4 swa, il 5 full.
/// - swa_dense_first: set_swa_pattern(period, dense_first): il % period != 0 is swa. period 4: il 0 full, il 1-3 swa.
/// - chunked_period:  as swa_period, with chunked attention of `window` tokens (llama4: 3 chunked, 1 full).
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
    uint32_t window;            ///< default n_swa (swa_period) or fixed n_chunk (chunked_period), tokens
    recurrent_kind rec;         ///< family of the recurrent layers
    bool mla;                   ///< GGUF: MLA layers when <arch>.attention.key_length_mla is present
    uint32_t kv_from_start;     ///< GGUF: layers il >= this reuse an earlier layer's KV; 0 = all own KV
    param_flags flags;          ///< optional tensors and key quirks
    std::string_view cite;      ///< where the rules come from (llama.cpp files; transformers modeling files)
};

/// The row whose gguf_arch is `arch`; nullptr when kvfit has none.
const arch_row * find_arch_gguf(std::string_view arch);
/// The row listing one of `names` (tried in order: architectures classes, then model_types); nullptr when none.
const arch_row * find_arch_hf(const std::vector<std::string> & names);
/// All rows, in table order (docs and tests).
const std::vector<arch_row> & arch_rows();

// --- rules written once, used by both sources -------------------------------------------------------------

/// Per block of m (n_layer entries): 1 where llama.cpp's load_arch_tensors creates rope_freqs.weight
/// (create_tensor(LLM_TENSOR_ROPE_FREQS, "weight", i): the first such block holds the tensor, every other one a
/// TENSOR_DUPLICATED copy, one per buffer): every block (models/llama.cpp, step35.cpp, ...), or with the
/// arch's rope_freqs_full flag the full-attention blocks only (models/gemma4.cpp:92-97), a KV-shared block (no cache
/// of its own) counted by its head width, the full blocks' (global_head_dim) and not the window blocks'.
std::vector<uint8_t> rope_freqs_blocks(const model_desc & m);

/// The interval rule of Gated DeltaNet hybrids: layer il is attention iff (il + 1) % n == 0, else recurrent.
/// llama.cpp models/qwen35.cpp and qwen3next.cpp (recurrent_layer_arr[i] = (i + 1) % full_attention_interval != 0);
/// Qwen3NextConfig layer_types. n 4: il 0, 1, 2 recurrent, il 3 attention, ... il 47 attention.
inline bool interval_attention(uint32_t il, uint32_t n) { return (il + 1) % n == 0; }

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
