// GGUF metadata -> model_desc. Keys are llama.cpp's LLM_KV_NAMES ("%s.block_count", "%s.attention.head_count_kv",
// ... in src/llama-arch.cpp) with %s = general.architecture; per-layer keys may be a scalar or an array of length
// block_count, as llama_model_loader::get_key_or_arr reads them. Layer kinds follow the architecture's row in
// gguf_arch.cpp; weights are the tensor infos summed by placement (token_embd, blocks, output, other).
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "sources/gguf_arch.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

namespace kvfit {
namespace {

using detail::gguf_layout;

/// Typed reads of "<arch>.<suffix>" keys with messages naming the file, key and offset.
struct gguf_keys {
    const gguf_file & f;
    std::string arch;

    const gguf_value * get(std::string_view suffix) const { return f.find(fmt::format("{}.{}", arch, suffix)); }

    [[noreturn]] void bad(const gguf_value & v, std::string_view suffix, std::string_view what) const {
        throw error::at_offset(f.path(), v.offset, fmt::format("key '{}.{}': {}", arch, suffix, what));
    }

    std::optional<uint64_t> uint(std::string_view suffix) const {
        const gguf_value * v = get(suffix);
        if (!v) return std::nullopt;
        const auto n = v->to_uint();
        if (!n) bad(*v, suffix, fmt::format("expected an unsigned integer, got {}", gguf_type_name(v->type)));
        return n;
    }
    uint32_t u32(std::string_view suffix, uint32_t fallback) const {
        const auto n = uint(suffix);
        if (n && *n > UINT32_MAX) bad(*get(suffix), suffix, fmt::format("value {} exceeds {}", *n, UINT32_MAX));
        return n ? uint32_t(*n) : fallback;
    }
    uint32_t required(std::string_view suffix) const {
        if (!get(suffix)) throw error::missing_key(f.path(), fmt::format("{}.{}", arch, suffix));
        return u32(suffix, 0);
    }
    /// Scalar or array of length n_block (get_key_or_arr); `fallback` per layer when absent.
    std::vector<uint32_t> per_layer(std::string_view suffix, uint32_t n_block, const std::vector<uint32_t> & fallback) const {
        const gguf_value * v = get(suffix);
        if (!v) return fallback;
        if (!v->is_array()) return std::vector<uint32_t>(n_block, u32(suffix, 0));
        if (v->n != n_block) bad(*v, suffix, fmt::format("array length {} differs from block_count {}", v->n, n_block));
        std::vector<uint32_t> out(n_block);
        for (uint32_t il = 0; il < n_block; ++il) {
            const auto e = v->at(il, f.path()).to_uint();
            if (!e || *e > UINT32_MAX) bad(*v, suffix, fmt::format("element {} is not an unsigned 32-bit integer", il));
            out[il] = uint32_t(*e);
        }
        return out;
    }
};

/// Sliding-window layers: the pattern key (array per layer or scalar period) or the row's period.
/// set_swa_pattern(p) (llama.cpp src/llama-hparams.cpp): swa iff p == 0 || il % p < p - 1.
std::vector<bool> swa_layers(const gguf_keys & k, const detail::gguf_arch_row & row, uint32_t n_block) {
    std::vector<bool> swa(n_block, false);
    const gguf_value * v = k.get("attention.sliding_window_pattern");
    if (v && v->is_array()) {
        if (v->n != n_block) k.bad(*v, "attention.sliding_window_pattern", fmt::format("array length {} differs from block_count {}", v->n, n_block));
        for (uint32_t il = 0; il < n_block; ++il) swa[il] = v->at(il, k.f.path()).to_uint().value_or(0) != 0;
        return swa;
    }
    const uint32_t p = v ? k.u32("attention.sliding_window_pattern", row.period) : row.period;
    if (row.layout != gguf_layout::swa_period && row.layout != gguf_layout::chunked_period && !v) return swa;
    for (uint32_t il = 0; il < n_block; ++il) swa[il] = p == 0 || il % p < p - 1;
    return swa;
}

/// Kind of each block from the row's layout (per-layer arrays already read).
std::vector<layer_kind> layer_kinds(const gguf_keys & k, const detail::gguf_arch_row & row, const model_desc & m,
                                    uint32_t n_block, const std::vector<uint32_t> & kv, const std::vector<uint32_t> & ff) {
    std::vector<layer_kind> kind(n_block, layer_kind::none);
    const uint32_t interval = k.u32("full_attention_interval", row.period);
    if (row.layout == gguf_layout::interval && interval == 0) {
        k.bad(*k.get("full_attention_interval"), "full_attention_interval", "interval 0");
    }
    const auto swa = swa_layers(k, row, n_block);
    for (uint32_t il = 0; il < n_block; ++il) {
        const layer_kind attn = kv[il] == 0 ? layer_kind::none
                              : !swa[il] ? layer_kind::full
                              : row.layout == gguf_layout::chunked_period ? layer_kind::chunked : layer_kind::swa;
        switch (row.layout) {
        case gguf_layout::attention:
        case gguf_layout::swa_period:
        case gguf_layout::chunked_period:
        case gguf_layout::parallel_hybrid: kind[il] = attn; break;
        case gguf_layout::interval:        kind[il] = (il + 1) % interval == 0 ? attn : layer_kind::recurrent; break;
        case gguf_layout::kv_or_recurrent: kind[il] = kv[il] > 0 ? attn : layer_kind::recurrent; break;
        case gguf_layout::nemotron_h:      kind[il] = kv[il] > 0 ? attn : ff[il] == 0 ? layer_kind::recurrent : layer_kind::none; break;
        case gguf_layout::all_recurrent:   kind[il] = layer_kind::recurrent; break;
        }
        if ((kind[il] == layer_kind::swa || kind[il] == layer_kind::chunked) && (m.n_swa == 0 && m.n_chunk == 0)) {
            kind[il] = layer_kind::full; // window 0: llama.cpp sets swa_type NONE
        }
        if (row.kv_from_start > 0 && il >= row.kv_from_start && kind[il] != layer_kind::recurrent) kind[il] = layer_kind::none;
    }
    return kind;
}

void read_recurrent(const gguf_keys & k, const detail::gguf_arch_row & row, model_desc & m) {
    m.rec_kind = row.rec;
    if (row.rec == recurrent_kind::short_conv) {
        m.ssm_d_conv = k.u32("shortconv.l_cache", 0);
    } else if (row.rec == recurrent_kind::rwkv) {
        m.rwkv_head_size = k.u32("wkv.head_size", 0);
    } else {
        m.ssm_d_conv = k.u32("ssm.conv_kernel", 0);
        m.ssm_d_inner = k.u32("ssm.inner_size", 0);
        m.ssm_d_state = k.u32("ssm.state_size", 0);
        m.ssm_n_group = k.u32("ssm.group_count", 0);
        m.ssm_n_head = k.u32("ssm.time_step_rank", 0);
        m.ssm_head_dim = m.ssm_n_head > 0 ? m.ssm_d_inner / m.ssm_n_head : 0;
    }
}

// "blk.12.attn_q.weight" -> 12; nullopt for other names.
std::optional<uint32_t> block_index(std::string_view name) {
    if (name.substr(0, 4) != "blk.") return std::nullopt;
    uint64_t il = 0;
    size_t i = 4;
    for (; i < name.size() && i < 14 && name[i] >= '0' && name[i] <= '9'; ++i) il = il * 10 + uint64_t(name[i] - '0');
    if (i == 4 || i >= name.size() || name[i] != '.' || il > UINT32_MAX) return std::nullopt;
    return uint32_t(il);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Placement as llama.cpp's loader sees it: input layer (token and position embeddings, the per-layer token
// embedding of gemma3n), blocks il < n_layer, output layer (output and output_norm), everything else.
void add_weights(model_desc & m, const std::vector<gguf_file> & shards) {
    auto & w = m.weights;
    w.layers.assign(m.n_layer, weight_group{});
    bool has_output = false;
    for (const auto & f : shards) {
        for (const auto & t : f.tensors()) {
            weight_group * g = &w.other;
            if (const auto il = block_index(t.name)) {
                g = *il < m.n_layer ? &w.layers[*il] : &w.mtp; // blocks past n_layer are NextN/MTP
            } else if (starts_with(t.name, "token_embd") || starts_with(t.name, "position_embd") ||
                       starts_with(t.name, "per_layer_token_embd")) {
                g = &w.token_embd;
            } else if (starts_with(t.name, "output.") || starts_with(t.name, "output_norm")) {
                g = &w.output;
                has_output |= starts_with(t.name, "output.weight");
            }
            g->n_params += t.n_elements;
            g->bytes += t.bytes;
            if (t.name.find("_exps") != std::string_view::npos) {
                g->expert_params += t.n_elements;
                g->expert_bytes += t.bytes;
            }
        }
    }
    w.exact = true;
    w.format = "gguf";
    m.tied_embeddings = !has_output;
}

uint32_t vocab_size(const gguf_file & f, const gguf_keys & k) {
    if (const gguf_value * v = f.find("tokenizer.ggml.tokens"); v && v->is_array()) return uint32_t(std::min<uint64_t>(v->n, UINT32_MAX));
    if (const auto n = k.uint("vocab_size")) return uint32_t(std::min<uint64_t>(*n, UINT32_MAX));
    if (const gguf_tensor_info * t = f.find_tensor("token_embd.weight")) return uint32_t(std::min<uint64_t>(t->ne[1], UINT32_MAX));
    return 0;
}

} // namespace

model_desc model_from_gguf(const std::vector<gguf_file> & shards, warnings & warn) {
    if (shards.empty()) throw error("gguf: no file given");
    const gguf_file & f = shards[0];
    const gguf_value * arch_v = f.find("general.architecture");
    if (!arch_v) throw error::missing_key(f.path(), "general.architecture");
    const auto arch = arch_v->to_string();
    if (!arch) throw error::at_offset(f.path(), arch_v->offset, "key 'general.architecture': expected a string");
    const gguf_keys k{f, std::string(*arch)};
    const detail::gguf_arch_row * row = detail::find_gguf_arch(*arch);
    if (!row) {
        warn.push_back(fmt::format("{}: unknown architecture '{}': read with the generic keys, attention layers only",
                                   f.path(), *arch));
        row = &detail::generic_gguf_arch();
    }

    model_desc m;
    m.architecture = k.arch;
    m.source = f.path();
    const gguf_value * name = f.find("general.name");
    m.name = name && name->to_string() ? std::string(*name->to_string()) : std::filesystem::path(f.path()).stem().string();
    const uint32_t n_block = k.required("block_count");
    if (n_block == 0 || n_block > max_n_layer) k.bad(*k.get("block_count"), "block_count", fmt::format("value {} out of range 1-{}", n_block, max_n_layer));
    m.n_layer_mtp = k.u32("nextn_predict_layers", 0);
    if (m.n_layer_mtp >= n_block) {
        k.bad(*k.get("nextn_predict_layers"), "nextn_predict_layers", fmt::format("{} leaves no layer of {}", m.n_layer_mtp, n_block));
    }
    m.n_layer = n_block - m.n_layer_mtp; // NextN/MTP blocks sit at the end and hold no cache
    m.n_embd = k.required("embedding_length");
    m.n_ctx_train = k.uint("context_length").value_or(0);
    m.n_vocab = vocab_size(f, k);
    // M-RoPE: llama.cpp gives 4 positions per token to the MROPE/IMROPE rope types, which are exactly the models
    // whose rope.dimension_sections has non-zero t and h sections (use_mrope(), src/llama-hparams.cpp; qwen2vl,
    // qwen3vl, qwen35 and qwen35moe always carry the key). Example qwen35: [11, 11, 10, 0] -> 4.
    if (const gguf_value * sec = k.get("rope.dimension_sections"); sec && sec->is_array() && sec->n >= 2) {
        const bool t = sec->at(0, f.path()).to_uint().value_or(0) > 0;
        const bool h = sec->at(1, f.path()).to_uint().value_or(0) > 0;
        m.n_pos_per_embd = t && h ? 4 : 1;
    }
    m.n_swa = row->layout == gguf_layout::chunked_period ? 0 : k.u32("attention.sliding_window", row->window);
    m.n_chunk = row->layout == gguf_layout::chunked_period && k.u32("attention.sliding_window", 1) != 0 ? row->window : 0;

    const auto n_head = k.per_layer("attention.head_count", n_block, std::vector<uint32_t>(n_block, 0));
    const auto n_head_kv = k.per_layer("attention.head_count_kv", n_block, n_head);
    const auto n_ff = k.per_layer("feed_forward_length", n_block, std::vector<uint32_t>(n_block, 0));
    const uint32_t head0 = n_head.empty() ? 0 : *std::max_element(n_head.begin(), n_head.end());
    const uint32_t dim_k = k.u32("attention.key_length", head0 > 0 ? m.n_embd / head0 : 0);
    const uint32_t dim_v = k.u32("attention.value_length", head0 > 0 ? m.n_embd / head0 : 0);
    const auto kinds = layer_kinds(k, *row, m, n_block, n_head_kv, n_ff);

    const bool mla = row->mla && k.get("attention.key_length_mla") != nullptr;
    if (mla) {
        m.kv_lora_rank = k.required("attention.kv_lora_rank");
        m.n_rot_mla = k.required("rope.dimension_count");
        m.q_lora_rank = k.u32("attention.q_lora_rank", 0);
        const uint32_t k_mla = k.u32("attention.key_length_mla", 0);
        m.head_dim_qk_nope = k_mla > m.n_rot_mla ? k_mla - m.n_rot_mla : 0;
        m.head_dim_v_mla = k.u32("attention.value_length_mla", 0);
    }
    resize_layers(m);
    if (std::count(kinds.begin(), kinds.end(), layer_kind::recurrent) > 0) read_recurrent(k, *row, m);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        m.n_head[il] = n_head[il];
        m.n_ff[il] = n_ff[il];
        m.head_dim_k[il] = dim_k;
        m.head_dim_v[il] = dim_v;
        const bool attn = kinds[il] != layer_kind::none && kinds[il] != layer_kind::recurrent;
        m.n_head_kv[il] = attn ? n_head_kv[il] : 0;
        auto & cs = m.caches[il];
        if (mla && attn) { // one latent of kv_lora_rank + rope values per token, K only (llama-kv-cache.cpp)
            m.n_head_kv[il] = 1;
            m.head_dim_k[il] = m.kv_lora_rank + m.n_rot_mla;
            m.head_dim_v[il] = m.kv_lora_rank;
            cs.push_back(layer_cache::latent(m.kv_lora_rank + m.n_rot_mla));
            continue;
        }
        switch (kinds[il]) {
        case layer_kind::full:      cs.push_back(layer_cache::attention(cache_kind::full, n_head_kv[il], dim_k, dim_v)); break;
        case layer_kind::swa:       cs.push_back(layer_cache::attention(cache_kind::window, n_head_kv[il], dim_k, dim_v, m.n_swa)); break;
        case layer_kind::chunked:   cs.push_back(layer_cache::attention(cache_kind::chunked, n_head_kv[il], dim_k, dim_v, m.n_chunk)); break;
        case layer_kind::recurrent: add_recurrent_state(m, il); break;
        case layer_kind::mla:
        case layer_kind::none:      break;
        }
    }
    if (row->layout == gguf_layout::parallel_hybrid) {
        warn.push_back(fmt::format("{}: {} runs attention and a recurrent mixer in every layer; kvfit counts the "
                                   "KV cache only, not the recurrent state", f.path(), k.arch));
    }

    m.n_expert = k.u32("expert_count", 0);
    m.n_expert_used = k.u32("expert_used_count", 0);
    m.n_expert_shared = k.u32("expert_shared_count", 0);
    m.n_ff_exp = k.u32("expert_feed_forward_length", 0);
    m.n_ff_shexp = k.u32("expert_shared_feed_forward_length", 0);
    add_weights(m, shards);
    // Shapes the compute-buffer model needs that no key states: the routed expert width when
    // expert_feed_forward_length is absent (granitehybrid: ffn_down_exps [n_ff_exp, n_embd, n_expert]) and
    // whether the dense FFN has a gate (nemotron_h: ffn_up + relu^2 + ffn_down only).
    bool dense_ffn = false, gate = false;
    for (const auto & f : shards) {
        for (const auto & t : f.tensors()) {
            const auto il = block_index(t.name);
            if (!il || *il >= m.n_layer) continue;
            const std::string_view n = t.name;
            if (m.n_ff_exp == 0 && n.ends_with(".ffn_down_exps.weight")) m.n_ff_exp = uint32_t(t.ne[0]);
            dense_ffn |= n.ends_with(".ffn_up.weight");
            gate |= n.ends_with(".ffn_gate.weight");
        }
    }
    if (dense_ffn && !gate) m.ffn_gated = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        m.is_moe[il] = m.weights.layers[il].expert_params > 0;
        if (m.is_moe[il]) m.n_ff[il] = 0;
    }
    m.validate();
    return m;
}

model_desc model_from_gguf(const std::string & path, warnings & warn) {
    return model_from_gguf(gguf_open_shards(path), warn);
}

} // namespace kvfit
