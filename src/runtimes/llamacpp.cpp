// llama.cpp allocation rules: context sizing, KV caches, recurrent state, output buffer.
// Reproduces llama.cpp 5b4ebc5 as measured in ../shared/reference/llamacpp/results.csv (RULES.md there).
#include "kvfit/runtime.h"
#include "kvfit/error.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit {
namespace {

uint64_t pad256(uint64_t n) { return (n + 255) / 256 * 256; }

bool flash_attn_resolved(flash_attn_mode m) { return m != flash_attn_mode::off; }

// Bytes per token of layer il for the given cache types.
uint64_t layer_kv_bytes_per_token(const model_desc & m, uint32_t il, ggml_type tk, ggml_type tv, mla_layout mla) {
    if (!m.has_kv(il)) return 0;
    const uint64_t k = ggml_row_size(tk, m.n_embd_k_gqa(il));
    const bool v_less = m.kind[il] == layer_kind::mla && mla == mla_layout::k_only;
    const uint64_t v = v_less ? 0 : ggml_row_size(tv, m.n_embd_v_gqa(il));
    return k + v;
}

} // namespace

buffer_set & buffer_set::operator+=(const buffer_set & o) {
    weights_bytes += o.weights_bytes;
    kv_bytes += o.kv_bytes;
    state_bytes += o.state_bytes;
    output_bytes += o.output_bytes;
    compute_bytes += o.compute_bytes;
    return *this;
}

llamacpp_context llamacpp_context_size(const model_desc & m, const llamacpp_settings & s) {
    if (s.n_seq == 0) throw error("llama.cpp: -np must be at least 1");
    if (s.n_seq > 256) throw error(fmt::format("llama.cpp: -np {} exceeds LLAMA_MAX_SEQ 256", s.n_seq));
    if (s.n_ubatch == 0) throw error("llama.cpp: -ub must be at least 1");
    if (s.n_batch == 0) throw error("llama.cpp: -b must be at least 1");
    if (s.flash_attn == flash_attn_mode::off && ggml_is_quantized(s.type_v)) {
        throw error(fmt::format("llama.cpp: type_v {} needs flash attention (quantized V cache requires -fa on)",
                                ggml_traits(s.type_v).name));
    }
    if (m.count(layer_kind::mla) > 0 && s.type_k != s.type_v) {
        // llama_init_from_model (src/llama-context.cpp): "model does not support different K and V cache types"
        throw error(fmt::format("llama.cpp: an MLA model does not support different K ({}) and V ({}) cache types",
                                ggml_traits(s.type_k).name, ggml_traits(s.type_v).name));
    }
    uint64_t n_ctx = s.n_ctx != 0 ? s.n_ctx : m.n_ctx_train;
    if (n_ctx == 0) throw error("llama.cpp: n_ctx 0 and the model does not state its training context");
    if (n_ctx > (1ull << 32)) throw error(fmt::format("llama.cpp: n_ctx {} exceeds 4294967296 tokens", n_ctx));

    llamacpp_context c;
    c.n_seq = s.n_seq;
    c.flash_attn = flash_attn_resolved(s.flash_attn);
    n_ctx = pad256(n_ctx);
    if (s.kv_unified) {
        c.n_stream = 1;
        c.n_ctx_seq = n_ctx;
        c.n_ctx = n_ctx;
    } else {
        c.n_stream = s.n_seq;
        c.n_ctx_seq = pad256(n_ctx / s.n_seq);
        c.n_ctx = c.n_ctx_seq * s.n_seq;
    }
    c.n_batch = static_cast<uint32_t>(std::min<uint64_t>(c.n_ctx, s.n_batch));
    c.n_ubatch = std::min(c.n_batch, s.n_ubatch);
    return c;
}

namespace {

// Cells per stream of layer il (has_kv(il) assumed): n_ctx_seq, or the capped window for swa/chunked
// layers (llama_kv_cache_iswa: size_swa = pad256(min(size_base, n_swa * (unified ? n_seq : 1) + n_ubatch))).
uint64_t layer_cells_per_stream(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                uint32_t il) {
    if (!m.is_swa(il) || s.swa_full) return c.n_ctx_seq;
    const uint64_t window = m.kind[il] == layer_kind::chunked ? m.n_chunk : m.n_swa;
    const uint64_t span = window * (s.kv_unified ? c.n_seq : 1) + c.n_ubatch;
    return pad256(std::min<uint64_t>(c.n_ctx_seq, span));
}

void add_layer(kv_cache_buffer & cache, const model_desc & m, const llamacpp_settings & s,
               const llamacpp_context & c, uint32_t il) {
    const bool v_less = m.kind[il] == layer_kind::mla && s.mla == mla_layout::k_only;
    cache.cells_per_stream = layer_cells_per_stream(m, s, c, il);
    const uint64_t cells = cache.cells_per_stream * cache.n_stream;
    cache.n_layer += 1;
    cache.k_bytes += cells * ggml_row_size(s.type_k, m.n_embd_k_gqa(il));
    cache.v_bytes += v_less ? 0 : cells * ggml_row_size(s.type_v, m.n_embd_v_gqa(il));
}

} // namespace

std::vector<kv_cache_buffer> llamacpp_kv_caches(const model_desc & m, const llamacpp_settings & s,
                                                const llamacpp_context & c) {
    kv_cache_buffer base{"base", c.n_ctx_seq, c.n_stream, 0, 0, 0};
    kv_cache_buffer swa{"swa", 0, c.n_stream, 0, 0, 0};
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (!m.has_kv(il)) continue;
        // --swa-full keeps the two caches of llama_kv_cache_iswa and gives the window one n_ctx_seq cells
        add_layer(m.is_swa(il) ? swa : base, m, s, c, il);
    }
    std::vector<kv_cache_buffer> out;
    if (base.n_layer > 0) out.push_back(base);
    if (swa.n_layer > 0) out.push_back(swa);
    return out;
}

uint64_t llamacpp_kv_layer_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                 uint32_t il) {
    if (!m.has_kv(il)) return 0;
    kv_cache_buffer one{"", 0, c.n_stream, 0, 0, 0};
    add_layer(one, m, s, c, il);
    return one.bytes();
}

recurrent_buffer llamacpp_recurrent(const model_desc & m, const llamacpp_context & c) {
    recurrent_buffer r;
    r.n_layer = m.count(layer_kind::recurrent);
    if (r.n_layer == 0) return r;
    r.n_seq = std::max<uint32_t>(1, c.n_seq);
    r.r_bytes = uint64_t(r.n_layer) * r.n_seq * m.n_embd_r() * 4;
    r.s_bytes = uint64_t(r.n_layer) * r.n_seq * m.n_embd_s() * 4;
    return r;
}

uint64_t llamacpp_output_bytes(const model_desc & m, const llamacpp_context & c) {
    return uint64_t(m.n_vocab) * c.n_seq * 4;
}

uint64_t kv_bytes_per_token(const model_desc & m, ggml_type type_k, ggml_type type_v, mla_layout mla) {
    uint64_t n = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_kind k = m.kind[il];
        if (k == layer_kind::full || k == layer_kind::mla) n += layer_kv_bytes_per_token(m, il, type_k, type_v, mla);
    }
    return n;
}

uint64_t kv_bytes_per_token_if_all_full(const model_desc & m, ggml_type type_k, ggml_type type_v, mla_layout mla) {
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_kind k = m.kind[il];
        if (k == layer_kind::full || k == layer_kind::mla) {
            return uint64_t(m.n_layer) * layer_kv_bytes_per_token(m, il, type_k, type_v, mla);
        }
    }
    return 0;
}

} // namespace kvfit
