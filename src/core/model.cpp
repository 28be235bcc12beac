// Queries and invariants of the model description (include/kvfit/model.h).
// Formulas of n_embd_r / n_embd_s mirror llama_hparams::n_embd_r / n_embd_s (llama.cpp src/llama-hparams.cpp).
#include "kvfit/model.h"
#include "kvfit/error.h"

#include <fmt/format.h>

namespace kvfit {

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

uint64_t model_weights::expert_params() const {
    uint64_t n = 0;
    for (const auto & l : layers) n += l.expert_params;
    return n;
}

bool model_desc::has_kv(uint32_t il) const {
    const layer_kind k = kind.at(il);
    return k == layer_kind::full || k == layer_kind::swa || k == layer_kind::chunked || k == layer_kind::mla;
}

bool model_desc::is_swa(uint32_t il) const {
    const layer_kind k = kind.at(il);
    return k == layer_kind::swa || k == layer_kind::chunked;
}

bool model_desc::is_recurrent(uint32_t il) const { return kind.at(il) == layer_kind::recurrent; }

uint32_t model_desc::n_embd_k_gqa(uint32_t il) const {
    return has_kv(il) ? head_dim_k.at(il) * n_head_kv.at(il) : 0;
}

uint32_t model_desc::n_embd_v_gqa(uint32_t il) const {
    return has_kv(il) ? head_dim_v.at(il) * n_head_kv.at(il) : 0;
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
    case recurrent_kind::none:       return 0;
    }
    return 0;
}

uint32_t model_desc::count(layer_kind k) const {
    uint32_t n = 0;
    for (auto x : kind) n += x == k;
    return n;
}

void resize_layers(model_desc & m) {
    m.kind.resize(m.n_layer, layer_kind::none);
    m.n_head.resize(m.n_layer, 0);
    m.n_head_kv.resize(m.n_layer, 0);
    m.head_dim_k.resize(m.n_layer, 0);
    m.head_dim_v.resize(m.n_layer, 0);
    m.n_ff.resize(m.n_layer, 0);
    m.is_moe.resize(m.n_layer, 0);
    m.weights.layers.resize(m.n_layer);
}

void model_desc::validate() const {
    const std::string where = source.empty() ? name : source;
    auto fail = [&](const std::string & what) { throw error::at(where, what); };
    if (n_layer == 0) fail("n_layer is 0");
    if (n_layer > 100000) fail(fmt::format("n_layer {} exceeds the limit 100000", n_layer));
    for (auto * v : {&n_head, &n_head_kv, &head_dim_k, &head_dim_v, &n_ff}) {
        if (v->size() != n_layer) fail(fmt::format("per-layer array of length {} for n_layer {}", v->size(), n_layer));
    }
    if (kind.size() != n_layer) fail(fmt::format("layer kinds of length {} for n_layer {}", kind.size(), n_layer));
    bool any_recurrent = false;
    for (uint32_t il = 0; il < n_layer; ++il) {
        if (has_kv(il)) {
            if (n_head_kv[il] == 0) fail(fmt::format("layer {}: n_head_kv is 0 on an attention layer", il));
            if (head_dim_k[il] == 0) fail(fmt::format("layer {}: head_dim_k is 0 on an attention layer", il));
            if (head_dim_k[il] > 65536 || head_dim_v[il] > 65536 || n_head_kv[il] > 65536) {
                fail(fmt::format("layer {}: absurd attention shape ({} KV heads x {}/{})", il, n_head_kv[il],
                                 head_dim_k[il], head_dim_v[il]));
            }
        }
        if (kind[il] == layer_kind::swa && n_swa == 0) fail(fmt::format("layer {}: sliding window layer but n_swa is 0", il));
        if (kind[il] == layer_kind::chunked && n_chunk == 0) fail(fmt::format("layer {}: chunked layer but n_chunk is 0", il));
        any_recurrent |= kind[il] == layer_kind::recurrent;
    }
    if (any_recurrent && rec_kind == recurrent_kind::none) fail("recurrent layers without a recurrent kind");
    if (any_recurrent && n_embd_r() + n_embd_s() == 0) fail("recurrent layers with an empty state");
}

} // namespace kvfit
