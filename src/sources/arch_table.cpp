// The architecture table: one row per Hugging Face model_type. A row names the layer-layout pattern and the
// FFN/MoE pattern (small named functions below, each with its parameter, a config key) and the optional
// tensors of the family, and cites the modeling file the rule mirrors. Adding an architecture is one row;
// a layout the rows cannot express is one new pattern function beside the others.
#include "sources/hf_detail.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>

namespace kvfit::detail {
namespace {

// --- helpers ----------------------------------------------------------------------------------------------

void set_no_attention(hf_build & b, uint32_t il, layer_kind k) {
    b.kind[il] = k;
    b.m.n_head[il] = b.m.n_head_kv[il] = b.m.head_dim_k[il] = b.m.head_dim_v[il] = 0;
}

// Gated DeltaNet (Qwen3-Next, Qwen3.5) in llama.cpp's terms: ssm.inner_size = H_v * D_v,
// ssm.group_count = H_k, ssm.state_size = D_k, ssm.time_step_rank = H_v (convert_hf_to_gguf.py Qwen3NextModel).
void read_gated_deltanet(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    const auto h_k = static_cast<uint32_t>(cfg.uint("linear_num_key_heads", 65536));
    const auto d_k = static_cast<uint32_t>(cfg.uint("linear_key_head_dim", 65536));
    const auto h_v = static_cast<uint32_t>(cfg.uint("linear_num_value_heads", 65536));
    const auto d_v = static_cast<uint32_t>(cfg.uint("linear_value_head_dim", 65536));
    m.rec_kind = recurrent_kind::gated_deltanet;
    m.ssm_d_conv = static_cast<uint32_t>(cfg.uint("linear_conv_kernel_dim", 1024));
    m.ssm_d_inner = h_v * d_v;
    m.ssm_n_group = h_k;
    m.ssm_d_state = d_k;
    m.ssm_n_head = h_v;
    m.ssm_head_dim = d_v;
}

// Mamba2 mixer (transformers models/nemotron_h/modeling_nemotron_h.py NemotronHMamba2Mixer):
// intermediate_size = mamba_num_heads * mamba_head_dim.
void read_mamba2(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    m.rec_kind = recurrent_kind::mamba2;
    m.ssm_n_head = static_cast<uint32_t>(cfg.uint("mamba_num_heads", 65536));
    m.ssm_head_dim = static_cast<uint32_t>(cfg.uint("mamba_head_dim", 65536));
    m.ssm_d_inner = m.ssm_n_head * m.ssm_head_dim;
    m.ssm_d_state = static_cast<uint32_t>(cfg.uint("ssm_state_size", 65536));
    m.ssm_n_group = static_cast<uint32_t>(cfg.uint("n_groups", 65536));
    m.ssm_d_conv = static_cast<uint32_t>(cfg.uint("conv_kernel", 1024));
}

// --- layout patterns: kind[il] and the per-layer attention shape ------------------------------------------

// Every layer full attention (the defaults read_common set).
void all_full(const hf_keys &, std::string_view, hf_build &, warnings &) {}

// One string per layer: full_attention, sliding_attention (window: sliding_window), chunked_attention
// (chunk: attention_chunk_size), linear_attention (Gated DeltaNet). gpt-oss-20b: il 0 swa, il 1 full, ...
void from_array(const hf_keys & cfg, std::string_view key, hf_build & b, warnings &) {
    const auto & arr = cfg.at(key);
    if (!arr.is_array()) throw cfg.bad(key, std::string("expected array, got ") + arr.type_name());
    if (arr.size() != b.m.n_layer) {
        throw cfg.bad(key, fmt::format("has {} entries for num_hidden_layers {}", arr.size(), b.m.n_layer));
    }
    bool any_recurrent = false;
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        const std::string t = arr[il].is_string() ? arr[il].get<std::string>() : std::string(arr[il].type_name());
        if (t == "full_attention") {
            b.kind[il] = layer_kind::full;
        } else if (t == "sliding_attention") {
            b.kind[il] = layer_kind::swa;
            b.m.n_swa = static_cast<uint32_t>(cfg.uint("sliding_window"));
        } else if (t == "chunked_attention") {
            b.kind[il] = layer_kind::chunked;
            b.m.n_chunk = static_cast<uint32_t>(cfg.uint("attention_chunk_size"));
        } else if (t == "linear_attention") {
            set_no_attention(b, il, layer_kind::recurrent);
            any_recurrent = true;
        } else {
            throw cfg.bad(key, fmt::format("entry {}: unknown layer type '{}'", il, t));
        }
    }
    if (any_recurrent) read_gated_deltanet(cfg, b);
}

// Every `n`-th layer is full attention, the others Gated DeltaNet: il full iff (il + 1) % n == 0.
// Qwen3-Next-80B (n = 4): il 0, 1, 2 recurrent, il 3 full, ... il 47 full.
void interval(const hf_keys & cfg, std::string_view key, hf_build & b, warnings &) {
    const uint64_t n = cfg.uint(key, b.m.n_layer);
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if ((il + 1) % n != 0) set_no_attention(b, il, layer_kind::recurrent);
    }
    read_gated_deltanet(cfg, b);
}

// Qwen3.5 / Qwen3-Next configs carry layer_types (newer) or only full_attention_interval (older).
void from_array_or_interval(const hf_keys & cfg, std::string_view key, hf_build & b, warnings & warn) {
    if (cfg.has("layer_types")) return from_array(cfg, "layer_types", b, warn);
    interval(cfg, key, b, warn);
}

// layer_types when present (a newer config of any family), else full attention on every layer.
void from_array_or_full(const hf_keys & cfg, std::string_view, hf_build & b, warnings & warn) {
    if (cfg.has("layer_types")) from_array(cfg, "layer_types", b, warn);
}

// Mistral/Mixtral: a non-null sliding_window slides every layer; null (current Mixtral revision) is full.
void sliding_window(const hf_keys & cfg, std::string_view key, hf_build & b, warnings & warn) {
    if (cfg.has("layer_types")) return from_array(cfg, "layer_types", b, warn);
    if (!cfg.has(key)) return;
    b.m.n_swa = static_cast<uint32_t>(cfg.uint(key));
    for (uint32_t il = 0; il < b.m.n_layer; ++il) b.kind[il] = layer_kind::swa;
}

// Qwen2/Qwen3: the window applies only when use_sliding_window is true (default false), and then only to
// layers il >= max_window_layers (Qwen2Config layer_types). Qwen2.5-7B: use_sliding_window false -> all full.
void sliding_window_if_used(const hf_keys & cfg, std::string_view key, hf_build & b, warnings & warn) {
    if (cfg.has("layer_types")) return from_array(cfg, "layer_types", b, warn);
    if (!cfg.flag_or("use_sliding_window", false) || !cfg.has(key)) return;
    b.m.n_swa = static_cast<uint32_t>(cfg.uint(key));
    const uint64_t first = cfg.count_or("max_window_layers", 0, 100000);
    for (uint32_t il = first; il < b.m.n_layer; ++il) b.kind[il] = layer_kind::swa;
}

// Llama 4: RoPE layers use chunked attention of attention_chunk_size tokens, NoPE layers are global.
// no_rope_layers[il] == 0 marks NoPE; its HF default is il global iff (il + 1) % 4 == 0
// (no_rope_layer_interval 4): il 0, 1, 2 chunked, il 3 full, ... il 47 full.
void chunked(const hf_keys & cfg, std::string_view key, hf_build & b, warnings &) {
    if (!cfg.has(key)) return;
    b.m.n_chunk = static_cast<uint32_t>(cfg.uint(key));
    const uint64_t every = cfg.uint_or("no_rope_layer_interval", 4, b.m.n_layer);
    const bool listed = cfg.has("no_rope_layers") && cfg.at("no_rope_layers").is_array() &&
                        !cfg.at("no_rope_layers").empty();
    if (listed && cfg.at("no_rope_layers").size() != b.m.n_layer) {
        throw cfg.bad("no_rope_layers", fmt::format("has {} entries for num_hidden_layers {}",
                                                    cfg.at("no_rope_layers").size(), b.m.n_layer));
    }
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        const bool rope = listed ? cfg.at("no_rope_layers")[il] != 0 : (il + 1) % every != 0;
        if (rope) b.kind[il] = layer_kind::chunked;
    }
}

// DeepSeek-V2/V3 multi-head latent attention: llama.cpp caches one latent of kv_lora_rank + qk_rope_head_dim
// values per token and layer as K (one "head"), V empty. DeepSeek-V3: 512 + 64 = 576.
void mla(const hf_keys & cfg, std::string_view key, hf_build & b, warnings &) {
    model_desc & m = b.m;
    m.kv_lora_rank = static_cast<uint32_t>(cfg.uint(key, 65536));
    m.n_rot_mla = static_cast<uint32_t>(cfg.uint("qk_rope_head_dim", 65536));
    m.q_lora_rank = static_cast<uint32_t>(cfg.uint_or("q_lora_rank", 0, 65536)); // null: q not compressed
    m.head_dim_qk_nope = static_cast<uint32_t>(cfg.uint("qk_nope_head_dim", 65536));
    m.head_dim_v_mla = static_cast<uint32_t>(cfg.uint("v_head_dim", 65536));
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        b.kind[il] = layer_kind::mla;
        m.n_head_kv[il] = 1;
        m.head_dim_k[il] = m.kv_lora_rank + m.n_rot_mla;
        m.head_dim_v[il] = m.kv_lora_rank;
    }
}

// The layer pattern string of a hybrid, checked: one character per layer.
std::string pattern_of(const hf_keys & cfg, std::string_view key, uint32_t n_layer) {
    const auto & v = cfg.at(key);
    if (!v.is_string()) throw cfg.bad(key, std::string("expected string, got ") + v.type_name());
    const auto p = v.get<std::string>();
    if (p.size() != n_layer) throw cfg.bad(key, fmt::format("has {} blocks for num_hidden_layers {}", p.size(), n_layer));
    return p;
}

// Nemotron-H: one block per character, each a norm plus one mixer. M = Mamba2 (recurrent), * = attention
// (full), - = MLP and E = MoE (no cache). "M-M-M-M*-..." -> il 0 recurrent, il 1 none, ... il 7 full.
void hybrid_override_pattern(const hf_keys & cfg, std::string_view key, hf_build & b, warnings &) {
    const std::string p = pattern_of(cfg, key, b.m.n_layer);
    bool any_mamba = false;
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        b.n_norm[il] = 1;
        switch (p[il]) {
        case 'M': set_no_attention(b, il, layer_kind::recurrent); any_mamba = true; break;
        case '*': break;
        case '-': case 'E': set_no_attention(b, il, layer_kind::none); break;
        default: throw cfg.bad(key, fmt::format("block {}: '{}' is not one of M * - E", il, p[il]));
        }
    }
    if (any_mamba) read_mamba2(cfg, b);
}

// Nemotron NAS (DeciLM): per-layer block_configs. attention.no_op or replace_with_linear -> no cache;
// otherwise n_head_kv = num_attention_heads / n_heads_in_group (64 / 8 = 8).
void block_configs(const hf_keys & cfg, std::string_view key, hf_build & b, warnings &) {
    const auto & arr = cfg.at(key);
    if (!arr.is_array() || arr.size() != b.m.n_layer) {
        throw cfg.bad(key, fmt::format("expected an array of {} blocks", b.m.n_layer));
    }
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        const hf_keys att = cfg.element(key, il, arr[il]).child("attention");
        if (att.flag_or("no_op", false)) {
            set_no_attention(b, il, layer_kind::none);
            b.n_norm[il] -= 1; // input_layernorm exists only with an attention block
        } else if (att.flag_or("replace_with_linear", false)) {
            set_no_attention(b, il, layer_kind::none);
            b.attn_linear[il] = 1;
        } else {
            const auto group = static_cast<uint32_t>(att.uint("n_heads_in_group", 65536));
            if (b.m.n_head[il] % group != 0) {
                throw att.bad("n_heads_in_group", fmt::format("{} does not divide num_attention_heads {}", group, b.m.n_head[il]));
            }
            b.m.n_head_kv[il] = b.m.n_head[il] / group;
        }
    }
}

} // namespace

namespace {

// "qkv_bias qk_norm" -> param_flags with those set (names as the fields).
param_flags with(std::string_view names) {
    param_flags f;
    auto has = [&](std::string_view n) { return names.find(n) != std::string_view::npos; };
    f.qkv_bias = has("qkv_bias");
    f.qk_norm = has("qk_norm");
    f.attn_gate = has("attn_gate");
    f.sinks = has("sinks");
    f.ffn_gated = !has("ffn_plain");
    f.router_bias = has("router_bias");
    f.expert_bias = has("expert_bias");
    f.shexp_gate = has("shexp_gate");
    f.score_bias = has("score_bias");
    f.mrope = has("mrope");
    return f;
}

const std::vector<arch_row> & rows() {
    // Citations are files of huggingface/transformers (src/transformers/models/...) unless stated.
    static const std::vector<arch_row> table = {
        // model_type        gguf arch     layout                   layout key                 ffn                ffn key                      flags                                 citation
        {"llama",            "llama",      all_full,                "",                        dense,             "intermediate_size",         with(""),                             "llama/modeling_llama.py"},
        {"mistral",          "llama",      sliding_window,          "sliding_window",          dense,             "intermediate_size",         with(""),                             "mistral/modeling_mistral.py"},
        {"mixtral",          "llama",      sliding_window,          "sliding_window",          moe_all,           "",                          with(""),                             "mixtral/modeling_mixtral.py (MixtralSparseMoeBlock)"},
        {"qwen2",            "qwen2",      sliding_window_if_used,  "sliding_window",          dense,             "intermediate_size",         with("qkv_bias"),                     "qwen2/configuration_qwen2.py (layer_types), modeling_qwen2.py"},
        {"qwen2_moe",        "qwen2moe",   sliding_window_if_used,  "sliding_window",          moe_sparse_step,   "decoder_sparse_step",       with("qkv_bias shexp_gate"),          "qwen2_moe/modeling_qwen2_moe.py"},
        {"qwen3",            "qwen3",      sliding_window_if_used,  "sliding_window",          dense,             "intermediate_size",         with("qk_norm"),                      "qwen3/modeling_qwen3.py"},
        {"qwen3_moe",        "qwen3moe",   sliding_window_if_used,  "sliding_window",          moe_sparse_step,   "decoder_sparse_step",       with("qk_norm"),                      "qwen3_moe/modeling_qwen3_moe.py"},
        {"qwen3_next",       "qwen3next",  from_array_or_interval,  "full_attention_interval", moe_sparse_step,   "decoder_sparse_step",       with("qk_norm attn_gate shexp_gate"), "qwen3_next/modeling_qwen3_next.py (Qwen3NextGatedDeltaNet)"},
        {"qwen3_5_text",     "qwen35",     from_array_or_interval,  "full_attention_interval", dense,             "intermediate_size",         with("qk_norm attn_gate mrope"),      "qwen3_5/modeling_qwen3_5.py (Qwen3_5GatedDeltaNet)"},
        {"qwen3_5_moe_text", "qwen35moe",  from_array_or_interval,  "full_attention_interval", moe_sparse_step,   "decoder_sparse_step",       with("qk_norm attn_gate shexp_gate mrope"), "qwen3_5_moe/modeling_qwen3_5_moe.py"},
        {"deepseek_v2",      "deepseek2",  mla,                     "kv_lora_rank",            moe_first_k_dense, "first_k_dense_replace",     with(""),                             "deepseek_v2/modeling_deepseek_v2.py"},
        {"deepseek_v3",      "deepseek2",  mla,                     "kv_lora_rank",            moe_first_k_dense, "first_k_dense_replace",     with("score_bias"),                   "deepseek_v3/modeling_deepseek_v3.py (DeepseekV3TopkRouter)"},
        {"llama4_text",      "llama4",     chunked,                 "attention_chunk_size",    moe_interleave,    "interleave_moe_layer_step", with(""),                             "llama4/configuration_llama4.py (no_rope_layers), modeling_llama4.py"},
        {"gpt_oss",          "gpt-oss",    from_array,              "layer_types",             moe_all,           "",                          with("sinks router_bias expert_bias"),"gpt_oss/modeling_gpt_oss.py"},
        {"nemotron_h",       "nemotron_h", hybrid_override_pattern, "hybrid_override_pattern", hybrid_ffn,        "hybrid_override_pattern",   with("ffn_plain"),                    "nemotron_h/modeling_nemotron_h.py (NemotronHBlock)"},
        {"nemotron-nas",     "deci",       block_configs,           "block_configs",           block_ffn,         "block_configs",             with(""),                             "nvidia/Llama-3_3-Nemotron-Super-49B-v1 modeling_decilm.py; llama.cpp convert_hf_to_gguf.py DeciModel"},
    };
    return table;
}

} // namespace

void caches_from_kinds(hf_build & b) {
    model_desc & m = b.m;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        auto & cs = m.caches[il];
        cs.clear();
        switch (b.kind[il]) {
        case layer_kind::full:      cs.push_back(layer_cache::attention(cache_kind::full, m.n_head_kv[il], m.head_dim_k[il], m.head_dim_v[il])); break;
        case layer_kind::swa:       cs.push_back(layer_cache::attention(cache_kind::window, m.n_head_kv[il], m.head_dim_k[il], m.head_dim_v[il], m.n_swa)); break;
        case layer_kind::chunked:   cs.push_back(layer_cache::attention(cache_kind::chunked, m.n_head_kv[il], m.head_dim_k[il], m.head_dim_v[il], m.n_chunk)); break;
        case layer_kind::mla:       cs.push_back(layer_cache::latent(m.kv_lora_rank + m.n_rot_mla)); break;
        case layer_kind::recurrent: add_recurrent_state(m, il); break;
        case layer_kind::none:      break;
        }
    }
}

const arch_row * find_arch(std::string_view model_type) {
    for (const auto & r : rows()) {
        if (r.model_type == model_type) return &r;
    }
    return nullptr;
}

const arch_row & generic_arch() {
    static const arch_row row{"", "", from_array_or_full, "", dense, "intermediate_size", with(""),
                              "generic decoder (llama/modeling_llama.py shapes)"};
    return row;
}

} // namespace kvfit::detail
