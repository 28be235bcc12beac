#pragma once
// Internals shared by the Hugging Face config.json source: a checked key reader over nlohmann::json,
// the architecture table's row type, and the parameter counter. Not part of the public API.
#include "kvfit/error.h"
#include "kvfit/sources.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit::detail {

/// Reads keys of one JSON object with uniform error messages ("<where>: key '<prefix><key>': ...").
/// `prefix` names the nesting ("text_config.", "block_configs[3].attention.") so messages point at the key.
/// Every integer read rejects null, non-integers, values <= 0 (unless allowed) and values over `limit`.
struct hf_keys {
    const nlohmann::json & obj;
    std::string where;
    std::string prefix;

    /// True when `key` is present and not null.
    bool has(std::string_view key) const;
    /// Required positive integer; throws missing_key / bad_key.
    uint64_t uint(std::string_view key, uint64_t limit = k_limit) const;
    /// Optional positive integer: `def` when absent or null.
    uint64_t uint_or(std::string_view key, uint64_t def, uint64_t limit = k_limit) const;
    /// Optional integer that may be 0: `def` when absent or null.
    uint64_t count_or(std::string_view key, uint64_t def, uint64_t limit = k_limit) const;
    /// Optional positive number (integer or float): `def` when absent or null.
    double number_or(std::string_view key, double def) const;
    /// Optional boolean: `def` when absent or null.
    bool flag_or(std::string_view key, bool def) const;
    /// Optional string: `def` when absent or null.
    std::string text_or(std::string_view key, std::string_view def) const;
    /// The value at `key` (must be present and not null); throws missing_key.
    const nlohmann::json & at(std::string_view key) const;
    /// Readers of a nested object or array element, with the prefix extended.
    hf_keys child(std::string_view key) const;
    hf_keys element(std::string_view key, size_t i, const nlohmann::json & value) const;
    /// bad_key for `key` of this object, with the full prefixed name.
    kvfit::error bad(std::string_view key, std::string_view what) const;

    static constexpr uint64_t k_limit = 1ull << 24; ///< 16777216: above every real width, head or layer count
};

/// Parameter-count details that model_desc does not hold: which optional tensors a family has.
/// Set by the architecture row (and overridden by config keys such as attention_bias).
struct param_flags {
    bool qkv_bias = false;      ///< q/k/v projections have biases (Qwen2; attention_bias sets it)
    bool o_bias = false;        ///< o_proj has a bias (attention_bias)
    bool qk_norm = false;       ///< per-head RMSNorm on q and k with weights (Qwen3, Qwen3-Next, Qwen3.5)
    bool attn_gate = false;     ///< q_proj also emits an output gate: q_proj doubled (Qwen3-Next, Qwen3.5)
    bool sinks = false;         ///< one learned sink logit per head (gpt-oss)
    bool ffn_gated = true;      ///< gate/up/down (SwiGLU); false: up/down only (Nemotron-H relu2)
    bool mlp_bias = false;      ///< FFN projections have biases
    bool router_bias = false;   ///< MoE router has a bias (gpt-oss)
    bool expert_bias = false;   ///< routed experts have biases (gpt-oss)
    bool shexp_gate = false;    ///< sigmoid gate on the shared expert, n_embd -> 1 (Qwen2-MoE family)
    bool score_bias = false;    ///< e_score_correction_bias of n_expert values (DeepSeek-V3 noaux_tc)
    bool mrope = false;         ///< llama.cpp ropes it as M-RoPE (IMROPE for qwen35): 4 positions per token in the
                                ///< graph (model_desc::n_pos_per_embd) even when config.json omits mrope_section
    bool conv_bias = false;     ///< Mamba2 conv1d has a bias (use_conv_bias)
    bool ssm_proj_bias = false; ///< Mamba2 in_proj/out_proj have biases (use_bias)
};

/// A model being built: the description plus per-layer facts only the parameter counter needs.
struct hf_build {
    model_desc m;
    param_flags flags;
    std::vector<layer_kind> kind;      ///< per layer: the attention type the layout chose (caches_from_kinds)
    std::vector<uint8_t> n_norm;       ///< per layer: n_embd-sized norm vectors (2 for a pre-norm decoder)
    std::vector<uint8_t> attn_linear;  ///< per layer: attention replaced by one n_embd x n_embd linear (DeciLM)
    std::vector<uint8_t> ffn_linear;   ///< per layer: FFN replaced by one n_embd x n_embd linear (DeciLM)
    uint32_t head_dim = 0;             ///< attention head width of full layers
};

/// Lays out the layer kinds (and the per-layer attention shape) of `b` from the config.
using layout_fn = void (*)(const hf_keys & cfg, std::string_view param, hf_build & b, warnings & warn);
/// Decides which layers are MoE and the FFN widths.
using ffn_fn = void (*)(const hf_keys & cfg, std::string_view param, hf_build & b);

/// One row of the architecture table (src/sources/arch_table.cpp).
struct arch_row {
    std::string_view model_type;  ///< HF config.json model_type
    std::string_view gguf_arch;   ///< llama.cpp general.architecture
    layout_fn layout;             ///< layer-kind pattern
    std::string_view layout_key;  ///< its parameter (a config key)
    ffn_fn ffn;                   ///< FFN / MoE pattern
    std::string_view ffn_key;     ///< its parameter
    param_flags flags;            ///< optional tensors of the family
    std::string_view citation;    ///< where the layout rule comes from
};

/// The row for an HF model_type; nullptr when unknown.
const arch_row * find_arch(std::string_view model_type);
/// The generic row used for an unknown model_type (all layers full, or layer_types when present; dense FFN).
const arch_row & generic_arch();

// FFN / MoE patterns (src/sources/arch_ffn.cpp): is_moe[il], n_ff[il] and the expert widths.
void dense(const hf_keys & cfg, std::string_view key, hf_build & b);
void moe_all(const hf_keys & cfg, std::string_view key, hf_build & b);
void moe_sparse_step(const hf_keys & cfg, std::string_view key, hf_build & b);
void moe_first_k_dense(const hf_keys & cfg, std::string_view key, hf_build & b);
void moe_interleave(const hf_keys & cfg, std::string_view key, hf_build & b);
void hybrid_ffn(const hf_keys & cfg, std::string_view key, hf_build & b);
void block_ffn(const hf_keys & cfg, std::string_view key, hf_build & b);

/// Parse a config.json text as model_from_hf_config does (bare Infinity/NaN read as null). Throws kvfit::error
/// "<where>: not valid JSON: ...".
nlohmann::json parse_config_json(std::string_view text, std::string_view where);

/// Fills b.m.caches from b.kind and the per-layer shape: full / swa / chunked -> that attention cache with
/// n_head_kv[il] heads of head_dim_k / head_dim_v (window n_swa or n_chunk); mla -> the latent of kv_lora_rank +
/// n_rot_mla values; recurrent -> add_recurrent_state; none -> no cache.
void caches_from_kinds(hf_build & b);

/// Fills b.m.weights from the shapes (params only, bytes 0). Rules in src/sources/hf_params.cpp.
void count_params(hf_build & b);

} // namespace kvfit::detail
