#pragma once
// Internals shared by the Hugging Face config.json source: a checked key reader over nlohmann::json, the builder
// the layout, FFN and parameter steps fill, and those steps. Not part of the public API.
#include "kvfit/error.h"
#include "kvfit/sources.h"
#include "sources/arch.h"

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
    /// Required positive integer at most `limit`; throws missing_key / bad_key: "key 'x': must be positive, got 0",
    /// "key 'x': too large (at most 4096), got 9223372036854775808" (the value as written, up to 2^64 - 1; a longer
    /// one as nlohmann's float text, 1e+20), "key 'x': expected integer, got string".
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

/// The mixer of a block (what its attention-or-state part computes; decides its parameters and caches).
/// attention: GQA/MHA softmax attention; mla: multi-head latent attention; dsv4: DeepSeek-V4 sliding MQA with
/// compressors; gated_deltanet / mamba2 / kda / lightning (MiniMax linear attention): recurrent mixers; none: no
/// mixer (MLP/MoE-only block, no-op).
enum class mixer : uint8_t { attention, mla, dsv4, gated_deltanet, mamba2, kda, lightning, none };

/// A model being built: the description plus per-layer facts only the layout and the parameter counter need.
struct hf_build {
    model_desc m;
    const arch_row * row = nullptr;    ///< the architecture's row, nullptr when the names are unknown
    std::string names;                 ///< the config's architectures and model_type, for messages
    param_flags flags;
    std::vector<mixer> mix;            ///< per layer
    std::vector<cache_kind> attn;      ///< attention layers: full, window or chunked
    std::vector<uint8_t> indexer;      ///< per layer: keeps DSA / lightning-indexer keys
    std::vector<uint32_t> compress;    ///< per layer: DeepSeek-V4 compress ratio (0: none)
    std::vector<uint8_t> kv_shared;    ///< per layer: reads an earlier layer's KV, keeps no cache
    std::vector<uint8_t> sinks;        ///< per layer: attention sinks (n_head values)
    std::vector<uint8_t> no_v_proj;    ///< per layer: V is K (Gemma 4 attention_k_eq_v on full layers)
    std::vector<uint32_t> gate;        ///< per layer: attention output-gate width, n_embd x gate[il] (0: none)
    std::vector<uint8_t> n_norm;       ///< per layer: n_embd-sized norm vectors (2 for a pre-norm decoder)
    std::vector<uint8_t> attn_linear;  ///< per layer: attention replaced by one n_embd x n_embd linear (DeciLM)
    std::vector<uint8_t> ffn_linear;   ///< per layer: FFN replaced by one n_embd x n_embd linear (DeciLM)
    std::vector<uint32_t> ffn_dense;   ///< per layer: dense MLP width beside the experts (Gemma 4 enable_moe_block)
    uint32_t head_dim = 0;             ///< attention head width (head_dim / attention_head_dim / n_embd / n_head)
    std::string head_dim_missing;      ///< why head_dim is 0 (n_head does not divide n_embd): a refusal only when a
                                       ///< layer is plain attention (MLA and recurrent layers state their widths)
    uint32_t index_n_head = 0;         ///< DSA indexer heads (index_n_heads)
    uint32_t index_head_dim = 0;       ///< DSA indexer head width (index_head_dim)
    uint32_t moe_latent = 0;           ///< experts run in a latent of this width (moe_latent_size), 0: n_embd
    uint32_t hc_mult = 0;              ///< hyper-connection streams (hc_mult), 0: none
    uint32_t o_groups = 0, o_lora = 0; ///< DeepSeek-V4 grouped low-rank output projection
    uint32_t n_hash_layers = 0;        ///< DeepSeek-V4 layers routed by token-id hash (num_hash_layers)
    uint32_t n_embd_per_layer = 0;     ///< per-layer embeddings width (hidden_size_per_layer_input), 0: none
    uint32_t n_vocab_per_layer = 0;    ///< their vocabulary (vocab_size_per_layer_input)
    bool qk_norm_full = false;         ///< q/k norm over all heads (qk_norm_type per_layer), not per head
    bool mtp_own_head = false;         ///< MTP layers store their own embedding and head (num_nextn_predict_layers)
    bool attn_gate = false;            ///< q_proj doubled by an output gate: the row's arch_facts attn_gate unless
                                       ///< the config's attn_output_gate says otherwise (model_desc::parts)
};

/// Lays out the layers of `b` from the keys (src/sources/hf_layout.cpp): mix, attn, indexer, compress, kv_shared
/// and the per-layer attention shape; then build_caches() turns them into model_desc::caches.
void lay_out(const hf_keys & cfg, hf_build & b, warnings & warn);
/// Fills b.m.caches from the layout by build_layer_caches (arch.h, the builder both sources share): attention ->
/// {full|window|chunked, n_head_kv, head_dim_k/v} unless KV-shared; mla -> the latent (+ the indexer); dsv4 ->
/// add_dsv4_caches; recurrent -> add_recurrent_state; none -> nothing.
void build_caches(hf_build & b);
/// Decides which layers are MoE, the FFN widths and the experts from the keys (src/sources/arch_ffn.cpp).
void lay_out_ffn(const hf_keys & cfg, hf_build & b);
/// Warns, naming each, about keys of `cfg` that suggest memory and that kvfit neither reads nor knows to be
/// harmless (src/sources/hf_known_keys.cpp).
void warn_unknown_keys(const hf_keys & cfg, const hf_build & b, warnings & warn);
/// Keys kvfit reads or knows not to change memory (the registry warn_unknown_keys checks against).
bool known_key(std::string_view key);
/// True when one of the '_'-separated words of `key` starts with a word that suggests memory (layer, attention, kv,
/// expert, ...: k_memory_words in src/sources/hf_known_keys.cpp): "num_experts" does, "do_sample" does not.
bool suggests_memory(std::string_view key);

/// The per-layer list `key` (layer_types, block_configs, ...): an array of exactly n_layer entries, else throws
/// kvfit::error "<where>: key '<key>': expected array, got boolean" (or "has 30 entries for num_hidden_layers 32").
const nlohmann::json & per_layer_array(const hf_keys & cfg, const hf_build & b, std::string_view key);

/// Refusal for a layout kvfit cannot determine: "<where>: <names>: <what>".
kvfit::error refuse(const hf_keys & cfg, const hf_build & b, std::string_view what);

/// Parse a config.json text as model_from_hf_config does (bare Infinity/NaN read as null). Throws kvfit::error
/// "<where>: not valid JSON: ...".
nlohmann::json parse_config_json(std::string_view text, std::string_view where);

/// Whether parse_config_json keeps the member `key` of the object at `path` (the names from the config's root down):
/// the keys kvfit reads or warns about, the wrappers, quantization_config and vision_config. A request body that
/// carries a config as an object is filtered alike (src/server/api.cpp), so the server counts what the CLI counts.
bool config_member_kept(const std::vector<std::string> & path, std::string_view key);

/// weight_quant_from_config (include/kvfit/sources.h) of a config.json parse_config_json has already read.
weight_quant weight_quant_from_json(const nlohmann::json & root, std::string_view where, warnings & warn);

/// Fills b.m.weights from the shapes (params only, bytes 0). Rules in src/sources/hf_params.cpp.
void count_params(hf_build & b);

} // namespace kvfit::detail
