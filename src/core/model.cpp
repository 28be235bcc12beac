// Queries and invariants of the model description (include/kvfit/model.h).
// Formulas of n_embd_r / n_embd_s mirror llama_hparams::n_embd_r / n_embd_s (llama.cpp src/llama-hparams.cpp).
#include "kvfit/model.h"
#include "kvfit/error.h"

#include <fmt/format.h>

namespace kvfit {

const char * cache_kind_name(cache_kind k) {
    switch (k) {
    case cache_kind::full:       return "full";
    case cache_kind::window:     return "window";
    case cache_kind::chunked:    return "chunked";
    case cache_kind::latent:     return "latent";
    case cache_kind::indexer:    return "indexer";
    case cache_kind::compressed: return "compressed";
    case cache_kind::conv_state: return "conv_state";
    case cache_kind::ssm_state:  return "ssm_state";
    case cache_kind::ple_state:  return "ple_state";
    }
    return "?";
}

bool layer_cache::grows_with_ctx() const {
    return kind == cache_kind::full || kind == cache_kind::latent || kind == cache_kind::indexer ||
           kind == cache_kind::compressed;
}

bool layer_cache::is_attention() const {
    return kind == cache_kind::full || kind == cache_kind::window || kind == cache_kind::chunked ||
           kind == cache_kind::latent;
}

layer_cache layer_cache::attention(cache_kind kind, uint32_t n_head_kv, uint32_t head_dim_k, uint32_t head_dim_v,
                                   uint32_t window) {
    return layer_cache{kind, n_head_kv, head_dim_k, head_dim_v, window, 1};
}

layer_cache layer_cache::latent(uint32_t width) { return layer_cache{cache_kind::latent, 1, width, 0, 0, 1}; }

layer_cache layer_cache::indexer(uint32_t width, uint32_t ratio) {
    return layer_cache{cache_kind::indexer, 1, width, 0, 0, ratio};
}

layer_cache layer_cache::compressed(uint32_t width, uint32_t ratio) {
    return layer_cache{cache_kind::compressed, 1, width, 0, 0, ratio};
}

layer_cache layer_cache::state(cache_kind kind, uint32_t elements) { return layer_cache{kind, 1, elements, 0, 0, 1}; }

const char * layer_kind_name(layer_kind k) {
    switch (k) {
    case layer_kind::full:      return "full_attention";
    case layer_kind::swa:       return "sliding_window";
    case layer_kind::chunked:   return "chunked";
    case layer_kind::mla:       return "mla";
    case layer_kind::recurrent: return "recurrent";
    case layer_kind::none:      return "none";
    }
    return "?";
}

const char * recurrent_kind_name(recurrent_kind k) {
    switch (k) {
    case recurrent_kind::none:           return "none";
    case recurrent_kind::gated_deltanet: return "gated_deltanet";
    case recurrent_kind::mamba2:         return "mamba2";
    case recurrent_kind::mamba1:         return "mamba1";
    case recurrent_kind::short_conv:     return "short_conv";
    case recurrent_kind::rwkv:           return "rwkv";
    case recurrent_kind::kda:            return "kda";
    case recurrent_kind::lightning:      return "lightning";
    }
    return "?";
}

uint64_t model_weights::total_params() const {
    uint64_t n = token_embd.n_params + output.n_params + other.n_params;
    for (const auto & l : layers) n += l.n_params;
    return n;
}

uint64_t model_weights::total_bytes() const {
    uint64_t n = token_embd.bytes + output.bytes + other.bytes;
    for (const auto & l : layers) n += l.bytes;
    return n;
}

uint64_t vision_tower::n_params() const {
    if (!present()) return 0;
    const uint64_t h = hidden, i = intermediate, m2 = uint64_t(merge) * merge, out = out_hidden ? out_hidden : h;
    return uint64_t(depth) * (4 * h * h + 2 * h * i) + (m2 * h) * (m2 * h) + m2 * h * out;
}

uint64_t model_weights::expert_params() const {
    uint64_t n = 0;
    for (const auto & l : layers) n += l.expert_params;
    return n;
}

layer_kind model_desc::kind_of(uint32_t il) const {
    const auto & cs = caches.at(il);
    const layer_cache * a = attention_cache(il);
    if (a != nullptr) {
        switch (a->kind) {
        case cache_kind::latent:  return layer_kind::mla;
        case cache_kind::window:  return layer_kind::swa;
        case cache_kind::chunked: return layer_kind::chunked;
        default:                  return layer_kind::full;
        }
    }
    for (const auto & c : cs) {
        if (c.is_state()) return layer_kind::recurrent;
    }
    return layer_kind::none;
}

bool model_desc::has_kv(uint32_t il) const {
    for (const auto & c : caches.at(il)) {
        if (!c.is_state()) return true;
    }
    return false;
}

bool model_desc::is_swa(uint32_t il) const {
    const layer_cache * a = attention_cache(il);
    return a != nullptr && (a->kind == cache_kind::window || a->kind == cache_kind::chunked);
}

bool model_desc::is_recurrent(uint32_t il) const {
    for (const auto & c : caches.at(il)) {
        if (c.is_state()) return true;
    }
    return false;
}

const layer_cache * model_desc::attention_cache(uint32_t il) const {
    for (const auto & c : caches.at(il)) {
        if (c.is_attention()) return &c;
    }
    return nullptr;
}

uint32_t model_desc::n_embd_k_gqa(uint32_t il) const {
    const layer_cache * a = attention_cache(il);
    return a ? static_cast<uint32_t>(a->width_k()) : 0;
}

uint32_t model_desc::n_embd_v_gqa(uint32_t il) const {
    const layer_cache * a = attention_cache(il);
    return a ? static_cast<uint32_t>(a->width_v()) : 0;
}

uint64_t model_desc::n_embd_r() const {
    const uint64_t conv = ssm_d_conv > 0 ? ssm_d_conv - 1 : 0;
    switch (rec_kind) {
    case recurrent_kind::gated_deltanet:
    case recurrent_kind::mamba2:
        return conv * (uint64_t(ssm_d_inner) + 2ull * ssm_n_group * ssm_d_state);
    case recurrent_kind::mamba1:     return conv * ssm_d_inner;
    case recurrent_kind::short_conv: return conv * n_embd;
    case recurrent_kind::rwkv:       return 2ull * n_embd; // token_shift_count (2) * n_embd
    case recurrent_kind::kda:        return 3ull * conv * ssm_n_head * ssm_head_dim;
    case recurrent_kind::lightning:  return 0; // no convolution (vLLM linear_attention_state_shape: one tensor)
    case recurrent_kind::none:       return 0;
    }
    return 0;
}

uint64_t model_desc::n_embd_s() const {
    switch (rec_kind) {
    case recurrent_kind::gated_deltanet:
    case recurrent_kind::mamba2:
    case recurrent_kind::mamba1:     return uint64_t(ssm_d_state) * ssm_d_inner;
    case recurrent_kind::short_conv: return 0;
    case recurrent_kind::rwkv:       return uint64_t(n_embd) * rwkv_head_size;
    case recurrent_kind::kda:
    case recurrent_kind::lightning:  return uint64_t(ssm_head_dim) * ssm_head_dim * ssm_n_head;
    case recurrent_kind::none:       return 0;
    }
    return 0;
}

uint32_t model_desc::count(layer_kind k) const {
    uint32_t n = 0;
    for (uint32_t il = 0; il < n_layer; ++il) n += kind_of(il) == k;
    return n;
}

void resize_layers(model_desc & m) {
    m.caches.resize(m.n_layer);
    m.n_head.resize(m.n_layer, 0);
    m.n_head_kv.resize(m.n_layer, 0);
    m.head_dim_k.resize(m.n_layer, 0);
    m.head_dim_v.resize(m.n_layer, 0);
    m.n_ff.resize(m.n_layer, 0);
    m.is_moe.resize(m.n_layer, 0);
    m.weights.layers.resize(m.n_layer);
}

model_desc all_full_attention_variant(const model_desc & m) {
    model_desc v = m;
    uint32_t ref = m.n_layer;
    for (uint32_t il = 0; il < m.n_layer && ref == m.n_layer; ++il) {
        const layer_cache * a = m.attention_cache(il);
        if (a && (a->kind == cache_kind::full || a->kind == cache_kind::latent)) ref = il;
    }
    for (uint32_t il = 0; il < m.n_layer && ref == m.n_layer; ++il) {
        if (m.attention_cache(il)) ref = il;
    }
    if (ref == m.n_layer) return v; // no attention layer to copy
    std::vector<layer_cache> like;
    for (layer_cache c : m.caches[ref]) {
        if (c.is_state() || c.ratio != 1) continue;
        if (c.kind == cache_kind::window || c.kind == cache_kind::chunked) c.kind = cache_kind::full, c.window = 0;
        like.push_back(c);
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        v.caches[il] = like;
        v.n_head[il] = m.n_head[ref];
        v.n_head_kv[il] = m.n_head_kv[ref];
        v.head_dim_k[il] = m.head_dim_k[ref];
        v.head_dim_v[il] = m.head_dim_v[ref];
    }
    v.rec_kind = recurrent_kind::none;
    v.name = m.name + " (all full attention)";
    return v;
}

void add_recurrent_state(model_desc & m, uint32_t il) {
    if (m.n_embd_r() + m.n_embd_s() == 0) {
        throw error::at(m.source.empty() ? m.name : m.source, fmt::format("layer {}: recurrent layer with an empty state", il));
    }
    if (const uint64_t r = m.n_embd_r(); r > 0) m.caches.at(il).push_back(layer_cache::state(cache_kind::conv_state, uint32_t(r)));
    if (const uint64_t s = m.n_embd_s(); s > 0) m.caches.at(il).push_back(layer_cache::state(cache_kind::ssm_state, uint32_t(s)));
}

void model_desc::validate() const {
    const std::string where = source.empty() ? name : source;
    auto fail = [&](const std::string & what) { throw error::at(where, what); };
    if (n_layer == 0) fail("n_layer is 0");
    if (n_layer > max_n_layer) fail(fmt::format("n_layer {} exceeds the limit {}", n_layer, max_n_layer));
    for (auto * v : {&n_head, &n_head_kv, &head_dim_k, &head_dim_v, &n_ff}) {
        if (v->size() != n_layer) fail(fmt::format("per-layer array of length {} for n_layer {}", v->size(), n_layer));
    }
    if (caches.size() != n_layer) fail(fmt::format("cache lists of length {} for n_layer {}", caches.size(), n_layer));
    bool any_state = false;
    for (uint32_t il = 0; il < n_layer; ++il) {
        for (const auto & c : caches[il]) {
            const char * name = cache_kind_name(c.kind);
            if (c.is_state()) {
                any_state = true;
                if (c.width_k() == 0) fail(fmt::format("layer {}: empty {}", il, name));
                continue;
            }
            if (c.n_head == 0) fail(fmt::format("layer {}: {} cache with 0 heads", il, name));
            if (c.head_dim_k == 0) fail(fmt::format("layer {}: {} cache with K width 0", il, name));
            if (c.head_dim_k > 65536 || c.head_dim_v > 65536 || c.n_head > 65536) {
                fail(fmt::format("layer {}: absurd {} cache shape ({} heads x {}/{})", il, name, c.n_head, c.head_dim_k,
                                 c.head_dim_v));
            }
            if ((c.kind == cache_kind::window || c.kind == cache_kind::chunked) && c.window == 0) {
                fail(fmt::format("layer {}: {} cache with a window of 0 tokens", il, name));
            }
            if (c.ratio == 0) fail(fmt::format("layer {}: {} cache with ratio 0", il, name));
        }
    }
    if (any_state && rec_kind == recurrent_kind::none) fail("recurrent state without a recurrent kind");
}

std::vector<uint8_t> rope_freqs_blocks(const model_desc & m) {
    std::vector<uint8_t> out(m.n_layer, 1);
    if (!m.arch.rope_freqs_full) return out;
    uint32_t full_hd = 0, swa_hd = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_kind k = m.kind_of(il);
        if (k == layer_kind::full) full_hd = m.head_dim_k[il];
        if (k == layer_kind::swa) swa_hd = m.head_dim_k[il];
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_kind k = m.kind_of(il);
        out[il] = k == layer_kind::full || (k == layer_kind::none && m.head_dim_k[il] == full_hd && full_hd != swa_hd);
    }
    return out;
}

std::string layer_summary(const model_desc & m) {
    std::string out = fmt::format("{} layers:", m.n_layer);
    const char * sep = " ";
    for (layer_kind k : {layer_kind::full, layer_kind::swa, layer_kind::chunked, layer_kind::mla,
                         layer_kind::recurrent, layer_kind::none}) {
        const uint32_t n = m.count(k);
        if (n == 0) continue;
        std::string label = layer_kind_name(k);
        for (auto & c : label) c = c == '_' ? ' ' : c;
        if (k == layer_kind::swa) label = fmt::format("sliding window ({} tokens)", m.n_swa);
        if (k == layer_kind::chunked) label = fmt::format("chunked ({} tokens)", m.n_chunk);
        if (k == layer_kind::recurrent) label = fmt::format("recurrent ({})", recurrent_kind_name(m.rec_kind));
        if (k == layer_kind::none) label = "without cache";
        out += fmt::format("{}{} {}", sep, n, label);
        sep = ", ";
    }
    // caches beside a layer's kind: compressed caches by ratio (DeepSeek-V4 CSA/HCA) and indexer keys (DSA, MSA)
    std::map<uint32_t, uint32_t> compressed, indexed;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (c.kind == cache_kind::compressed) ++compressed[c.ratio];
            if (c.kind == cache_kind::indexer) ++indexed[c.ratio];
        }
    }
    for (const auto & [ratio, n] : compressed) out += fmt::format("; {} with a compressed cache (1 cell per {} tokens)", n, ratio);
    for (const auto & [ratio, n] : indexed) {
        out += ratio == 1 ? fmt::format("; {} with indexer keys", n)
                          : fmt::format("; {} with indexer keys (1 cell per {} tokens)", n, ratio);
    }
    return out;
}

} // namespace kvfit
