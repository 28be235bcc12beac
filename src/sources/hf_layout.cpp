// config.json -> layer layout, from the keys, in this order (the first rule that applies wins; later rules refine):
//  1. a per-layer list: layer_types, attn_type_list, hybrid_layer_pattern, layers_block_type,
//     hybrid_override_pattern, block_configs, linear_attn_config.full_attn_layers;
//  2. without a list: compress_ratios (DeepSeek-V4: every layer a window plus compressed caches), or
//     full_attention_interval with linear_* keys (Gated DeltaNet hybrids), else every layer attention;
//  3. kv_lora_rank: attention layers are MLA (one latent); index_head_dim + index_n_heads: a DSA indexer on the
//     layers indexer_types marks "full" (without it: index_topk_pattern, else index_topk_freq /
//     index_skip_topk_offset, as GlmMoeDsaConfig derives it; all MLA layers when none); without a latent, sparse_attention_config
//     (MiniMax-M3 MSA): an indexer beside the attention cache after the leading dense blocks;
//  4. windows when no list placed them: sliding_window on every layer (row quirk swa_all), on il >=
//     max_window_layers when use_sliding_window (Qwen2), by sliding_window_pattern (Gemma 3); attention_chunk_size
//     on the RoPE layers (no_rope_layers, or the row's NoPE interval: Llama 4);
//  5. num_kv_shared_layers: the last N layers keep no cache;
//  6. per-layer heads and widths by layer type: full layers num_global_key_value_heads x global_head_dim (Gemma 4),
//     window layers swa_num_key_value_heads x swa_head_dim / swa_v_head_dim (MiMo-V2), else num_key_value_heads x
//     head_dim / v_head_dim.
// A layer kind kvfit cannot classify, or keys that do not say which layers slide or are chunked, are refused:
// kvfit never plans an unknown attention as dense.
#include "sources/hf_detail.h"
#include "core/util.h"

#include <fmt/format.h>

#include <algorithm>

namespace kvfit::detail {
namespace {

using detail::u32;

void set_mixer(hf_build & b, uint32_t il, mixer x) {
    b.mix[il] = x;
    if (x == mixer::attention || x == mixer::mla || x == mixer::dsv4) return;
    b.m.n_head[il] = b.m.n_head_kv[il] = b.m.head_dim_k[il] = b.m.head_dim_v[il] = 0;
}

// Gated DeltaNet (Qwen3-Next, Qwen3.5) in llama.cpp's terms: ssm.inner_size = H_v * D_v,
// ssm.group_count = H_k, ssm.state_size = D_k, ssm.time_step_rank = H_v (conversion/qwen.py Qwen3NextModel).
void read_gated_deltanet(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    const auto h_k = u32(cfg.uint("linear_num_key_heads", 65536));
    const auto d_k = u32(cfg.uint("linear_key_head_dim", 65536));
    const auto h_v = u32(cfg.uint("linear_num_value_heads", 65536));
    const auto d_v = u32(cfg.uint("linear_value_head_dim", 65536));
    m.rec_kind = recurrent_kind::gated_deltanet;
    m.ssm_d_conv = u32(cfg.uint("linear_conv_kernel_dim", 1024));
    m.ssm_d_inner = h_v * d_v;
    m.ssm_n_group = h_k;
    m.ssm_d_state = d_k;
    m.ssm_n_head = h_v;
    m.ssm_head_dim = d_v;
}

// Mamba2 mixer (hf nemotron_h NemotronHMamba2Mixer): intermediate_size = mamba_num_heads * mamba_head_dim.
void read_mamba2(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    m.rec_kind = recurrent_kind::mamba2;
    m.ssm_n_head = u32(cfg.uint("mamba_num_heads", 65536));
    m.ssm_head_dim = u32(cfg.uint("mamba_head_dim", 65536));
    m.ssm_d_inner = m.ssm_n_head * m.ssm_head_dim;
    m.ssm_d_state = u32(cfg.uint("ssm_state_size", 65536));
    m.ssm_n_group = u32(cfg.uint("n_groups", 65536));
    m.ssm_d_conv = u32(cfg.uint("conv_kernel", 1024));
}

// Kimi Delta Attention (conversion/kimi_linear.py, kimi_k3.py): linear_attn_config.num_heads heads of head_dim,
// short_conv_kernel_size; llama.cpp sizes the state by n_embd_head_kda (llama-hparams.cpp n_embd_r / n_embd_s).
void read_kda(const hf_keys & lin, hf_build & b) {
    model_desc & m = b.m;
    m.rec_kind = recurrent_kind::kda;
    m.ssm_n_head = u32(lin.uint("num_heads", 65536));
    m.ssm_head_dim = u32(lin.uint("head_dim", 65536));
    m.ssm_d_conv = u32(lin.uint("short_conv_kernel_size", 1024));
    m.ssm_d_inner = m.ssm_n_head * m.ssm_head_dim;
}

// MiniMax lightning attention (MiniMax-Text-01, MiniMax-M1: attn_type_list 0): num_attention_heads heads of head_dim
// (hidden_size / num_attention_heads without it), no convolution; the state is head_dim x head_dim per head
// (vllm/model_executor/layers/mamba/linear_attn.py MiniMaxText01LinearAttention: linear_attention_state_shape;
// llama.cpp models/minimax-01.cpp: n_embd_head_la = n_embd_head_k, llama-hparams.cpp n_embd_s).
void read_lightning(const hf_keys & cfg, hf_build & b) {
    if (b.head_dim == 0) throw refuse(cfg, b, b.head_dim_missing + ": the lightning-attention head width is not stated");
    model_desc & m = b.m;
    m.rec_kind = recurrent_kind::lightning;
    m.ssm_n_head = u32(cfg.uint("num_attention_heads", 65536));
    m.ssm_head_dim = b.head_dim;
    m.ssm_d_inner = m.ssm_n_head * m.ssm_head_dim;
    m.ssm_d_conv = 0;
}

// The recurrent mixer a "linear" entry names, by the keys that describe it.
mixer linear_mixer(const hf_keys & cfg, const hf_build & b, std::string_view entry) {
    if (cfg.has("linear_num_key_heads")) return mixer::gated_deltanet;
    if (cfg.has("mamba_num_heads")) return mixer::mamba2;
    // the row knows the family: its keys are then missing (read_gated_deltanet / read_mamba2 name them)
    if (b.row && b.row->rec == recurrent_kind::gated_deltanet) return mixer::gated_deltanet;
    if (b.row && b.row->rec == recurrent_kind::mamba2) return mixer::mamba2;
    if (b.row && b.row->rec == recurrent_kind::lightning) return mixer::lightning; // MiniMaxConfig layer_types
    throw refuse(cfg, b, fmt::format("{}: a linear layer without linear_num_key_heads or mamba_num_heads: the "
                                     "recurrent mixer is not stated", entry));
}

std::string entry_name(const hf_keys & cfg, std::string_view key, uint32_t il, const std::string & value) {
    return fmt::format("{}{}[{}] '{}'", cfg.prefix, key, il, value);
}

kvfit::error unknown_kind(const hf_keys & cfg, const hf_build & b, std::string_view key, uint32_t il,
                          const std::string & value) {
    return refuse(cfg, b, entry_name(cfg, key, il, value) + ": a layer kind kvfit does not know");
}

std::string text_of(const nlohmann::json & v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// layer_types: full_attention, sliding_attention, chunked_attention, linear_attention (Gated DeltaNet, Mamba2 or
// MiniMax lightning by the keys), mamba, deepseek_sparse_attention. gpt-oss-20b: il 0 window, il 1 full, ...
// deepseek_sparse_attention is DSA: MLA with the lightning indexer (transformers GlmMoeDsaConfig writes it for every
// layer, "drives cache-class dispatch"; a config saved by transformers has the list, zai-org's GLM-5.2 file does not),
// so it needs kv_lora_rank and the index keys, and mla_and_indexer places the latent and the indexers.
void from_layer_types(const hf_keys & cfg, hf_build & b) {
    const auto & arr = per_layer_array(cfg, b, "layer_types");
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        const std::string t = text_of(arr[il]);
        if (t == "deepseek_sparse_attention") {
            if (!cfg.has("kv_lora_rank") || !cfg.has("index_head_dim") || !cfg.has("index_n_heads")) {
                throw refuse(cfg, b, entry_name(cfg, "layer_types", il, t) + ": DeepSeek sparse attention (MLA with an "
                                     "indexer) needs kv_lora_rank, index_head_dim and index_n_heads");
            }
            b.attn[il] = cache_kind::full;
        } else if (t == "full_attention") b.attn[il] = cache_kind::full;
        else if (t == "sliding_attention") b.attn[il] = cache_kind::window;
        else if (t == "chunked_attention") b.attn[il] = cache_kind::chunked;
        else if (t == "linear_attention") set_mixer(b, il, linear_mixer(cfg, b, entry_name(cfg, "layer_types", il, t)));
        else if (t == "mamba") set_mixer(b, il, mixer::mamba2);
        else throw unknown_kind(cfg, b, "layer_types", il, t);
    }
}

// attn_type_list (MiniMax's own configs: MiniMax-Text-01, MiniMax-M1, MiniMax-M2 / M3 with every entry 1): 0 lightning
// (linear) attention, 1 softmax attention (MiniMax-M1 modeling_minimax_m1.py; vllm/config/model.py counts the
// attention layers as the entries equal to 1). MiniMax-M1: il 0-6 lightning, il 7 full, ... il 79 full.
void from_attn_type_list(const hf_keys & cfg, hf_build & b) {
    const auto & arr = per_layer_array(cfg, b, "attn_type_list");
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if (arr[il] == 1) b.attn[il] = cache_kind::full;
        else if (arr[il] == 0) set_mixer(b, il, mixer::lightning);
        else throw unknown_kind(cfg, b, "attn_type_list", il, text_of(arr[il]));
    }
}

// llama.cpp's loader of the row's architecture ignores the list: conversion/minimax.py writes none, and
// models/minimax-01.cpp places the softmax layers at every full_attention_interval-th layer (default 8). A list that
// says otherwise is named, so a GGUF of the same checkpoint is not expected to plan the same.
void warn_interval_differs(const hf_keys & cfg, const hf_build & b, warnings & warn) {
    std::string differ;
    uint32_t n = 0;
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if ((b.mix[il] == mixer::attention) == interval_attention(il, b.row->period)) continue;
        if (++n <= 8) differ += fmt::format("{}{}", differ.empty() ? "" : ", ", il);
    }
    if (n == 0) return;
    warn.push_back(fmt::format("{}: {}attn_type_list differs from llama.cpp's {} layout on {} layer{} (il {}{}): its loader "
                               "makes every {}th layer softmax attention and the others lightning (models/{}.cpp; the "
                               "converter writes no layer list), so a GGUF of this checkpoint keeps other caches than "
                               "planned here", cfg.where, cfg.prefix, b.row->gguf_arch, n, n == 1 ? "" : "s", differ,
                               n > 8 ? ", ..." : "", b.row->period, b.row->gguf_arch));
}

// hybrid_layer_pattern (MiMo-V2): 0 full attention, 1 sliding window (conversion/mimo.py writes it as
// sliding_window_pattern). MiMo-V2-Flash: il 0 full, il 1-4 window, il 5 full, ...
void from_hybrid_layer_pattern(const hf_keys & cfg, hf_build & b) {
    const auto & arr = per_layer_array(cfg, b, "hybrid_layer_pattern");
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if (arr[il] == 0) b.attn[il] = cache_kind::full;
        else if (arr[il] == 1) b.attn[il] = cache_kind::window;
        else throw unknown_kind(cfg, b, "hybrid_layer_pattern", il, text_of(arr[il]));
    }
}

// layers_block_type (Nemotron-H / Nemotron-3 configs without hybrid_override_pattern; conversion/nemotron.py
// NemotronHModel: mamba / linear_attention are Mamba2, attention / full_attention attention, moe and mlp FFN-only).
void from_layers_block_type(const hf_keys & cfg, hf_build & b) {
    const auto & arr = per_layer_array(cfg, b, "layers_block_type");
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        const std::string t = text_of(arr[il]);
        b.n_norm[il] = 1;
        if (t == "mamba" || t == "linear_attention") set_mixer(b, il, mixer::mamba2);
        else if (t == "attention" || t == "full_attention") b.attn[il] = cache_kind::full;
        else if (t == "moe" || t == "mlp") set_mixer(b, il, mixer::none);
        else throw unknown_kind(cfg, b, "layers_block_type", il, t);
    }
}

// hybrid_override_pattern (Nemotron-H): M Mamba2, * attention, - MLP, E MoE; one norm per block.
// "M-M-M-M*-..." -> il 0 recurrent, il 1 none, ... il 7 full.
void from_hybrid_override_pattern(const hf_keys & cfg, hf_build & b) {
    const auto & v = cfg.at("hybrid_override_pattern");
    if (!v.is_string()) throw cfg.bad("hybrid_override_pattern", std::string("expected string, got ") + v.type_name());
    const auto p = v.get<std::string>();
    if (p.size() != b.m.n_layer) {
        throw cfg.bad("hybrid_override_pattern", fmt::format("has {} blocks for num_hidden_layers {}", p.size(), b.m.n_layer));
    }
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        b.n_norm[il] = 1;
        switch (p[il]) {
        case 'M': set_mixer(b, il, mixer::mamba2); break;
        case '*': break;
        case '-': case 'E': set_mixer(b, il, mixer::none); break;
        default: throw unknown_kind(cfg, b, "hybrid_override_pattern", il, std::string(1, p[il]));
        }
    }
}

// Nemotron NAS (DeciLM): per-layer block_configs. attention.no_op or replace_with_linear -> no cache;
// otherwise n_head_kv = num_attention_heads / n_heads_in_group (64 / 8 = 8).
void from_block_configs(const hf_keys & cfg, hf_build & b) {
    const auto & arr = per_layer_array(cfg, b, "block_configs");
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        const hf_keys att = cfg.element("block_configs", il, arr[il]).child("attention");
        if (att.flag_or("no_op", false)) {
            set_mixer(b, il, mixer::none);
            b.n_norm[il] -= 1; // input_layernorm exists only with an attention block
        } else if (att.flag_or("replace_with_linear", false)) {
            set_mixer(b, il, mixer::none);
            b.attn_linear[il] = 1;
        } else {
            const auto group = u32(att.uint("n_heads_in_group", 65536));
            if (b.m.n_head[il] % group != 0) {
                throw att.bad("n_heads_in_group", fmt::format("{} does not divide num_attention_heads {}", group, b.m.n_head[il]));
            }
            b.m.n_head_kv[il] = b.m.n_head[il] / group;
        }
    }
}

// linear_attn_config (Kimi Linear, Kimi-K3): layers listed in full_attn_layers (1-based, conversion/kimi_k3.py
// `(il + 1) in full_attn_layers`) are attention (MLA with kv_lora_rank), the others Kimi Delta Attention.
void from_linear_attn_config(const hf_keys & cfg, hf_build & b) {
    const hf_keys lin = cfg.child("linear_attn_config");
    const auto & full = lin.at("full_attn_layers");
    if (!full.is_array()) throw lin.bad("full_attn_layers", std::string("expected array, got ") + full.type_name());
    std::vector<uint8_t> is_full(b.m.n_layer, 0);
    for (const auto & v : full) {
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > int64_t(b.m.n_layer)) {
            throw lin.bad("full_attn_layers", fmt::format("expected layer numbers 1-{}, got {}", b.m.n_layer, v.dump()));
        }
        is_full[v.get<uint32_t>() - 1] = 1;
    }
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if (!is_full[il]) set_mixer(b, il, mixer::kda);
    }
    read_kda(lin, b);
}

// Which layers slide or are chunked when no list says: the row's quirk or the keys that state it.
void windows_without_list(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    if (cfg.has("sliding_window")) {
        const auto n_swa = u32(cfg.uint("sliding_window"));
        if (b.flags.swa_all) {
            m.n_swa = n_swa;
            std::fill(b.attn.begin(), b.attn.end(), cache_kind::window);
        } else if (b.flags.swa_if_used || cfg.has("use_sliding_window")) {
            // Qwen2Config layer_types: sliding iff use_sliding_window and il >= max_window_layers
            if (cfg.flag_or("use_sliding_window", false)) {
                m.n_swa = n_swa;
                for (uint64_t il = cfg.count_or("max_window_layers", 0, 100000); il < m.n_layer; ++il) {
                    b.attn[il] = cache_kind::window;
                }
            }
        } else if (cfg.has("sliding_window_pattern")) {
            // Gemma3Config layer_types: sliding iff (il + 1) % sliding_window_pattern != 0 (set_swa_pattern)
            const uint64_t p = cfg.uint("sliding_window_pattern", m.n_layer);
            m.n_swa = n_swa;
            for (uint32_t il = 0; il < m.n_layer; ++il) {
                if (swa_pattern_layer(il, uint32_t(p))) b.attn[il] = cache_kind::window;
            }
        } else {
            throw refuse(cfg, b, fmt::format("{}sliding_window {} without layer_types, use_sliding_window or "
                                             "sliding_window_pattern: which layers slide is not stated",
                                             cfg.prefix, n_swa));
        }
    }
    if (cfg.has("attention_chunk_size") && !b.flags.chunk_alias) {
        const auto chunk = u32(cfg.uint("attention_chunk_size"));
        const bool listed = cfg.has("no_rope_layers") && cfg.at("no_rope_layers").is_array() &&
                            !cfg.at("no_rope_layers").empty();
        if (!listed && !b.flags.chunk_nope) {
            throw refuse(cfg, b, fmt::format("{}attention_chunk_size {} without no_rope_layers: which layers are "
                                             "chunked is not stated", cfg.prefix, chunk));
        }
        // Llama4TextConfig: no_rope_layers[il] == 0 marks NoPE (global); default il global iff
        // (il + 1) % no_rope_layer_interval == 0 (4): il 0, 1, 2 chunked, il 3 full, ...
        const uint64_t every = cfg.uint_or("no_rope_layer_interval", 4, m.n_layer);
        if (listed && cfg.at("no_rope_layers").size() != m.n_layer) {
            throw cfg.bad("no_rope_layers", fmt::format("has {} entries for num_hidden_layers {}",
                                                        cfg.at("no_rope_layers").size(), m.n_layer));
        }
        m.n_chunk = chunk;
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            const bool rope = listed ? cfg.at("no_rope_layers")[il] != 0 : swa_pattern_layer(il, uint32_t(every));
            if (rope && b.mix[il] == mixer::attention) b.attn[il] = cache_kind::chunked;
        }
    }
}

// Window and chunk lengths of the layers a list marked.
void windows_of_list(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    bool any_window = false, any_chunk = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (b.mix[il] != mixer::attention) continue;
        any_window |= b.attn[il] == cache_kind::window;
        any_chunk |= b.attn[il] == cache_kind::chunked;
    }
    if (any_window) m.n_swa = u32(cfg.uint("sliding_window"));
    if (any_chunk) m.n_chunk = u32(cfg.uint("attention_chunk_size"));
    // attention_chunk_size that no layer uses: an alias of the window (row quirk, or equal to it), else unknown
    if (!any_chunk && cfg.has("attention_chunk_size") && !b.flags.chunk_alias &&
        !(any_window && cfg.uint("attention_chunk_size") == m.n_swa)) {
        throw refuse(cfg, b, fmt::format("{}attention_chunk_size {} but no layer is chunked_attention: which layers "
                                         "are chunked is not stated", cfg.prefix, cfg.uint("attention_chunk_size")));
    }
}

// The indexer type of each layer, "full" or "shared", as transformers' GlmMoeDsaConfig.__post_init__ derives it when
// the file has no indexer_types (and as llama.cpp's converter then writes them, conversion/glm.py reading the
// configuration's indexer_types): index_topk_pattern ("FSSS...", or a list of names), else index_topk_freq (default
// 1) and index_skip_topk_offset (default 2): il is "full" iff max(il - offset + 1, 0) % freq == 0. GLM-5.2 (freq 4,
// offset 3): il 0, 1, 2 full, 3-5 shared, 6 full, ... (21 of 78).
std::vector<std::string> indexer_types(const hf_keys & cfg, const hf_build & b) {
    const uint32_t n = b.m.n_layer;
    std::vector<std::string> out(n, "full");
    if (cfg.has("indexer_types")) {
        const auto & arr = per_layer_array(cfg, b, "indexer_types");
        for (uint32_t il = 0; il < n; ++il) out[il] = text_of(arr[il]);
    } else if (cfg.has("index_topk_pattern")) {
        const auto & p = cfg.at("index_topk_pattern");
        if (p.is_string()) {
            const std::string codes = p.get<std::string>();
            if (codes.size() != n) {
                throw cfg.bad("index_topk_pattern", fmt::format("has {} entries for num_hidden_layers {}", codes.size(), n));
            }
            for (uint32_t il = 0; il < n; ++il) {
                if (codes[il] != 'F' && codes[il] != 'S') throw unknown_kind(cfg, b, "index_topk_pattern", il, codes.substr(il, 1));
                out[il] = codes[il] == 'F' ? "full" : "shared";
            }
        } else {
            const auto & arr = per_layer_array(cfg, b, "index_topk_pattern");
            for (uint32_t il = 0; il < n; ++il) out[il] = text_of(arr[il]);
        }
    } else {
        const uint64_t freq = std::max<uint64_t>(1, cfg.count_or("index_topk_freq", 1, n));
        const uint64_t offset = cfg.count_or("index_skip_topk_offset", 2, n);
        for (uint32_t il = 0; il < n; ++il) {
            const uint64_t from = il + 1 >= offset ? il + 1 - offset : 0;
            out[il] = from % freq == 0 ? "full" : "shared";
        }
    }
    return out;
}

// MLA (kv_lora_rank) and the DSA indexer (index_head_dim, index_n_heads, indexer_types).
void mla_and_indexer(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    m.kv_lora_rank = u32(cfg.uint("kv_lora_rank", 65536));
    m.n_rot_mla = u32(cfg.uint("qk_rope_head_dim", 65536));
    m.q_lora_rank = u32(cfg.uint_or("q_lora_rank", 0, 65536)); // null: q not compressed
    m.head_dim_qk_nope = u32(cfg.uint("qk_nope_head_dim", 65536));
    m.head_dim_v_mla = u32(cfg.uint("v_head_dim", 65536));
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (b.mix[il] != mixer::attention) continue;
        if (b.attn[il] != cache_kind::full) {
            throw refuse(cfg, b, fmt::format("layer {}: {} MLA attention: kvfit models MLA on full-attention layers only",
                                             il, cache_kind_name(b.attn[il])));
        }
        b.mix[il] = mixer::mla;
    }
    if (!cfg.has("index_head_dim") && !cfg.has("index_n_heads")) return;
    b.index_head_dim = u32(cfg.uint("index_head_dim", 65536));
    b.index_n_head = u32(cfg.uint("index_n_heads", 65536));
    m.indexer_n_head = b.index_n_head;
    m.indexer_top_k = u32(cfg.uint_or("index_topk", 0, 1u << 24)); // llama_hparams::indexer_top_k
    // conversion/glm.py: indexer_types "full" own an indexer, "shared" reuse the previous one (glm-dsa PR #26474)
    const std::vector<std::string> types = indexer_types(cfg, b);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (b.mix[il] != mixer::mla) continue;
        if (types[il] != "full" && types[il] != "shared") throw unknown_kind(cfg, b, "indexer_types", il, types[il]);
        b.indexer[il] = types[il] == "full";
    }
}

// MiniMax-M3's sparse attention (MSA; conversion/minimax.py MiniMaxM3Model writes sparse_attention_config's
// sparse_num_index_heads / sparse_index_dim / sparse_topk_blocks as attention.indexer.head_count / key_length / top_k,
// and leading_dense_block_count = the leading zeros of moe_layer_freq): an indexer key cache of sparse_index_dim
// beside the full attention cache of every attention layer after the leading dense blocks (llama-kv-cache-msa.cpp;
// filter_idx, llama-model.cpp:2300), as the GGUF source reads it.
void msa_indexer(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    const hf_keys sac = cfg.child("sparse_attention_config");
    b.index_head_dim = u32(sac.uint("sparse_index_dim", 65536));
    b.index_n_head = u32(sac.uint("sparse_num_index_heads", 65536));
    m.indexer_n_head = b.index_n_head;
    m.indexer_top_k = u32(sac.uint("sparse_topk_blocks", 1u << 24));
    // the converter requires moe_layer_freq and counts its leading zeros (any other value is an MoE block)
    const auto & freq = per_layer_array(cfg, b, "moe_layer_freq");
    uint64_t dense = 0;
    for (size_t il = 0; il < freq.size(); ++il) {
        if (!freq[il].is_number_integer()) throw cfg.bad("moe_layer_freq", fmt::format("entry {} is not an integer", il));
    }
    while (dense < freq.size() && freq[dense] == 0) ++dense;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (b.mix[il] == mixer::attention && il >= dense) b.indexer[il] = 1;
    }
}

// DeepSeek-V4 (models/deepseek4.cpp): every layer a window MQA of head_dim, compressors by compress_ratios[il].
void dsv4(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    const auto & arr = cfg.at("compress_ratios");
    // the list also covers the MTP layers (44 entries for 43 + 1); llama.cpp refuses one shorter than the blocks
    if (!arr.is_array() || arr.size() < m.n_layer) {
        throw cfg.bad("compress_ratios", fmt::format("has {} entries for num_hidden_layers {}",
                                                     arr.is_array() ? arr.size() : 0, m.n_layer));
    }
    m.n_swa = u32(cfg.uint("sliding_window"));
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const auto & r = arr[il];
        if (r != 0 && r != 4 && r != 128) {
            throw refuse(cfg, b, fmt::format("{}compress_ratios[{}] {}: llama.cpp's DeepSeek-V4 loader supports the "
                                             "ratios 0, 4 and 128 only", cfg.prefix, il, r.dump()));
        }
        b.mix[il] = mixer::dsv4;
        b.compress[il] = r.get<uint32_t>();
    }
    b.index_head_dim = u32(cfg.uint("index_head_dim", 65536));
    b.index_n_head = u32(cfg.uint("index_n_heads", 65536));
    // as the GGUF source reads attention.indexer.head_count / top_k (conversion/deepseek.py writes them)
    m.indexer_n_head = b.index_n_head;
    m.indexer_top_k = u32(cfg.uint_or("index_topk", 0, 1u << 24));
    // the graph's own dimensions under their GGUF keys (model_desc::graph_dims; conversion/deepseek.py)
    m.graph_dims = {{"attention.q_lora_rank", u32(cfg.uint("q_lora_rank", 65536))},
                    {"attention.output_group_count", u32(cfg.uint_or("o_groups", 0, 65536))},
                    {"attention.output_lora_rank", u32(cfg.uint_or("o_lora_rank", 0, 65536))},
                    {"attention.indexer.key_length", b.index_head_dim},
                    {"hash_layer_count", u32(cfg.count_or("num_hash_layers", 0, 100000))},
                    // the rotated tail of each head (conversion/deepseek.py: rope.dimension_count = qk_rope_head_dim);
                    // 0 when absent, as the GGUF source reads a missing key (llama.cpp then rotates the whole head)
                    {"rope.dimension_count", u32(cfg.uint_or("qk_rope_head_dim", 0, 65536))}};
}

// Attention output gates: gating_types per layer (or one `gating` for all), "per_head" one logit per head,
// "per_element" one per value (conversion/laguna.py _attn_gate_types); the row's arch_facts head_gate (Step) per head.
void gates(const hf_keys & cfg, hf_build & b) {
    const model_desc & m = b.m;
    const nlohmann::json * types = cfg.has("gating_types") ? &per_layer_array(cfg, b, "gating_types") : nullptr;
    const std::string all = cfg.has("gating") && cfg.at("gating").is_string() ? cfg.at("gating").get<std::string>() : "";
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (b.mix[il] != mixer::attention) continue;
        std::string t = types ? text_of((*types)[il]) : all.empty() ? (b.row && b.row->facts.head_gate ? "per_head" : "none") : all;
        std::replace(t.begin(), t.end(), '-', '_');
        if (t == "per_head") b.gate[il] = m.n_head[il];
        else if (t == "per_element") b.gate[il] = m.n_head[il] * m.head_dim_k[il];
        else if (t != "none") throw unknown_kind(cfg, b, types ? "gating_types" : "gating", il, t);
    }
}

// Heads and widths by layer type (step 6 above).
void shapes(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    if (b.head_dim == 0 && std::any_of(b.mix.begin(), b.mix.end(), [](mixer x) { return x == mixer::attention || x == mixer::dsv4; })) {
        throw cfg.bad("num_attention_heads", b.head_dim_missing.substr(b.head_dim_missing.find(' ') + 1));
    }
    if (cfg.has("num_attention_heads_per_layer")) { // Laguna: query heads per layer (conversion/laguna.py)
        const auto & arr = per_layer_array(cfg, b, "num_attention_heads_per_layer");
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            if (!arr[il].is_number_unsigned() || arr[il].get<uint64_t>() == 0 || arr[il].get<uint64_t>() > 65536) {
                throw cfg.bad("num_attention_heads_per_layer", fmt::format("entry {}: expected 1-65536, got {}", il, arr[il].dump()));
            }
            if (b.mix[il] == mixer::attention) m.n_head[il] = arr[il].get<uint32_t>();
        }
    }
    const uint32_t v_dim = u32(cfg.uint_or("v_head_dim", b.head_dim, 65536));
    const bool k_eq_v = cfg.flag_or("attention_k_eq_v", false);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (b.mix[il] != mixer::attention && b.mix[il] != mixer::dsv4) continue;
        m.head_dim_v[il] = v_dim;
        if (b.mix[il] == mixer::dsv4) {
            m.n_head_kv[il] = 1;
            m.head_dim_v[il] = m.head_dim_k[il];
        } else if (b.attn[il] == cache_kind::window) {
            m.n_head[il] = u32(cfg.uint_or("swa_num_attention_heads", m.n_head[il], 65536));
            m.n_head_kv[il] = u32(cfg.uint_or("swa_num_key_value_heads", m.n_head_kv[il], 65536));
            m.head_dim_k[il] = u32(cfg.uint_or("swa_head_dim", m.head_dim_k[il], 65536));
            m.head_dim_v[il] = u32(cfg.uint_or("swa_v_head_dim", v_dim, 65536));
            b.sinks[il] |= cfg.flag_or("add_swa_attention_sink_bias", false);
        } else {
            m.n_head_kv[il] = u32(cfg.uint_or("num_global_key_value_heads", m.n_head_kv[il], 65536));
            m.head_dim_k[il] = u32(cfg.uint_or("global_head_dim", m.head_dim_k[il], 65536));
            if (cfg.has("global_head_dim")) m.head_dim_v[il] = m.head_dim_k[il];
            b.no_v_proj[il] = k_eq_v; // the cache still holds a V of that width (llama.cpp models/gemma4.cpp)
            b.sinks[il] |= cfg.flag_or("add_full_attention_sink_bias", false);
        }
        if (m.n_head_kv[il] == 0 || m.n_head[il] % m.n_head_kv[il] != 0) {
            throw refuse(cfg, b, fmt::format("layer {}: {} KV heads for {} query heads", il, m.n_head_kv[il], m.n_head[il]));
        }
    }
}

} // namespace

kvfit::error refuse(const hf_keys & cfg, const hf_build & b, std::string_view what) {
    return error::at(cfg.where, fmt::format("{}: {}", b.names, what));
}

void lay_out(const hf_keys & cfg, hf_build & b, warnings & warn) {
    model_desc & m = b.m;
    b.mix.assign(m.n_layer, mixer::attention);
    b.attn.assign(m.n_layer, cache_kind::full);
    b.indexer.assign(m.n_layer, 0);
    b.compress.assign(m.n_layer, 0);
    b.kv_shared.assign(m.n_layer, 0);
    b.sinks.assign(m.n_layer, b.flags.sinks);
    b.no_v_proj.assign(m.n_layer, 0);
    b.gate.assign(m.n_layer, 0);

    bool listed = true;
    if (cfg.has("layer_types")) from_layer_types(cfg, b);
    else if (cfg.has("attn_type_list")) from_attn_type_list(cfg, b);
    else if (cfg.has("hybrid_layer_pattern")) from_hybrid_layer_pattern(cfg, b);
    else if (cfg.has("layers_block_type")) from_layers_block_type(cfg, b);
    else if (cfg.has("hybrid_override_pattern")) from_hybrid_override_pattern(cfg, b);
    else if (cfg.has("block_configs")) from_block_configs(cfg, b);
    else if (cfg.has("linear_attn_config")) from_linear_attn_config(cfg, b);
    else listed = false;

    if (cfg.has("compress_ratios")) {
        dsv4(cfg, b);
    } else if (!listed && (cfg.has("full_attention_interval") || (b.row && b.row->layout == gguf_layout::interval))) {
        // absent, the configuration class's default places the layers (Qwen3NextConfig full_attention_interval=4,
        // as transformers and vLLM read the file; the row's period), and the output says so
        const bool stated = cfg.has("full_attention_interval");
        const uint64_t n = stated ? cfg.uint("full_attention_interval", m.n_layer) : b.row->period;
        if (!stated) {
            warn.push_back(fmt::format("{}: {}full_attention_interval absent: the configuration's default {} is planned "
                                       "(every {}th layer full attention, the others linear attention)", cfg.where,
                                       cfg.prefix, n, n));
        }
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            if (!interval_attention(il, uint32_t(n))) set_mixer(b, il, linear_mixer(cfg, b, fmt::format("{}full_attention_interval {}", cfg.prefix, n)));
        }
    }
    // linear-attention (Gated DeltaNet) keys with nothing that places those layers: never planned as all attention
    if (!listed && !cfg.has("compress_ratios") &&
        std::find(b.mix.begin(), b.mix.end(), mixer::gated_deltanet) == b.mix.end() &&
        (cfg.has("linear_num_value_heads") || cfg.has("linear_conv_kernel_dim"))) {
        throw refuse(cfg, b, fmt::format("{}linear_num_value_heads / linear_conv_kernel_dim without layer_types or "
                                         "full_attention_interval: which layers are linear attention is not stated",
                                         cfg.prefix));
    }
    // DeepSeek-V4's row (every layer a window plus compressed caches) without the list that places those caches
    if (!cfg.has("compress_ratios") && b.row && b.row->layout == gguf_layout::all_swa) {
        throw refuse(cfg, b, fmt::format("{}compress_ratios is missing: {} keeps a sliding window on every layer plus "
                                         "compressed caches placed by compress_ratios (one ratio per layer), so its "
                                         "caches cannot be planned without it", cfg.prefix, b.row->gguf_arch));
    }
    // MLA head keys without the latent: the cache width is not stated (DeepseekV3Config would fill kv_lora_rank 512,
    // llama.cpp's converter fails on it): refused by name, never planned as plain attention
    if (!cfg.has("kv_lora_rank") && !cfg.has("compress_ratios") &&
        (cfg.has("qk_rope_head_dim") || cfg.has("qk_nope_head_dim"))) {
        throw refuse(cfg, b, fmt::format("{}qk_rope_head_dim / qk_nope_head_dim (MLA) without kv_lora_rank: the latent "
                                         "width of the cache is not stated", cfg.prefix));
    }
    if (listed) windows_of_list(cfg, b);
    else if (!cfg.has("compress_ratios")) windows_without_list(cfg, b);
    if (cfg.has("kv_lora_rank")) mla_and_indexer(cfg, b);
    else if (cfg.has("sparse_attention_config") && b.row && !b.row->flags.index_sparse) {
        // llama.cpp's converter reads it for MiniMax-M3 only: another architecture's GGUF has no indexer
        warn.push_back(fmt::format("{}: {}sparse_attention_config is ignored: llama.cpp's {} has no sparse attention "
                                   "(conversion/minimax.py reads it for MiniMax-M3 only)",
                                   cfg.where, cfg.prefix, b.row->gguf_arch));
    } else if (cfg.has("sparse_attention_config")) {
        msa_indexer(cfg, b);
    } else if (b.row && b.row->flags.index_sparse) {
        throw refuse(cfg, b, fmt::format("{}sparse_attention_config missing: the width of the MSA indexer cache is not "
                                         "stated (conversion/minimax.py MiniMaxM3Model requires it)", cfg.prefix));
    }

    const uint64_t n_shared = cfg.count_or("num_kv_shared_layers", 0, m.n_layer);
    if (n_shared >= m.n_layer && n_shared > 0) {
        throw cfg.bad("num_kv_shared_layers", fmt::format("{} leaves no layer of {} with a cache", n_shared, m.n_layer));
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) b.kv_shared[il] = kv_shared_layer(il, m.n_layer, uint32_t(n_shared));

    const auto uses = [&](mixer x) { return std::find(b.mix.begin(), b.mix.end(), x) != b.mix.end(); };
    // Mamba shape keys with no Mamba layer placed (Falcon-H1's parallel attention + Mamba2 in every layer, an SSM layer
    // list kvfit does not read): refused by name, never planned as attention alone with the state dropped
    if (!uses(mixer::mamba2) && !uses(mixer::gated_deltanet) && !uses(mixer::kda) && !uses(mixer::lightning)) {
        for (const char * k : {"mamba_d_ssm", "mamba_d_state", "mamba_n_heads", "mamba_num_heads", "mamba_d_conv",
                               "mamba_expand", "mamba_n_groups"}) {
            if (!cfg.has(k)) continue;
            throw refuse(cfg, b, fmt::format("{}{} (a Mamba state) but no layer is placed as Mamba: kvfit does not model "
                                             "this layout from config.json (plan the model's GGUF)", cfg.prefix, k));
        }
    }
    if (uses(mixer::gated_deltanet)) read_gated_deltanet(cfg, b);
    if (uses(mixer::mamba2)) read_mamba2(cfg, b);
    if (uses(mixer::lightning)) read_lightning(cfg, b);
    if (cfg.has("attn_type_list") && b.row && b.row->layout == gguf_layout::interval) warn_interval_differs(cfg, b, warn);
    if (uses(mixer::gated_deltanet) + uses(mixer::mamba2) + uses(mixer::kda) + uses(mixer::lightning) > 1) {
        throw refuse(cfg, b, "two recurrent mixer families in one model: kvfit keeps one per model");
    }
    shapes(cfg, b);
    gates(cfg, b);
}

void build_caches(hf_build & b) {
    using mem = layer_store::mem;
    std::vector<layer_store> layers(b.m.n_layer);
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        layer_store & l = layers[il];
        switch (b.mix[il]) {
        case mixer::attention:      l.what = mem::attention; break;
        case mixer::mla:            l.what = mem::mla; break;
        case mixer::dsv4:           l.what = mem::dsv4; break;
        case mixer::gated_deltanet:
        case mixer::mamba2:
        case mixer::kda:
        case mixer::lightning:      l.what = mem::recurrent; break;
        case mixer::none:           l.what = mem::none; break;
        }
        l.attn = b.attn[il];
        l.kv_shared = b.kv_shared[il] != 0;
        l.indexer = b.indexer[il] != 0; // DSA (mla_and_indexer), MSA (msa_indexer)
        l.compress = b.compress[il];
    }
    build_layer_caches(b.m, layers, b.index_head_dim);
}

const nlohmann::json & per_layer_array(const hf_keys & cfg, const hf_build & b, std::string_view key) {
    const auto & arr = cfg.at(key);
    if (!arr.is_array()) throw cfg.bad(key, std::string("expected array, got ") + arr.type_name());
    if (arr.size() != b.m.n_layer) {
        throw cfg.bad(key, fmt::format("has {} entries for num_hidden_layers {}", arr.size(), b.m.n_layer));
    }
    return arr;
}

} // namespace kvfit::detail
