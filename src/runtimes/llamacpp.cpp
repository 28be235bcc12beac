// llama.cpp allocation rules: context sizing, KV caches, recurrent state, output buffer.
// Reproduces llama.cpp 5b4ebc5 (measured in ../shared/reference/llamacpp/results.csv, RULES.md there) and v0.5.0
// (the conformance suite, tests/conformance/); a rule that differs between them names its release.
#include "kvfit/runtime.h"
#include "kvfit/error.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit {
namespace {

uint64_t pad256(uint64_t n) { return (n + 255) / 256 * 256; }

bool flash_attn_resolved(flash_attn_mode m) { return m != flash_attn_mode::off; }

// Model-wide facts llama.cpp's KV cache sizes every layer by (llama_hparams, src/llama-hparams.cpp).
struct kv_shape {
    bool mla = false;      ///< hparams.is_mla(): an MLA model keeps no V tensor in any of its caches
    uint64_t v_max = 0;    ///< n_embd_v_gqa_max(): the widest V row of any layer
    uint64_t v_head_max = 0; ///< the widest V head (n_embd_head_v) of any layer
};

kv_shape kv_shape_of(const model_desc & m) {
    kv_shape k;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_cache * a = m.attention_cache(il);
        k.mla |= a != nullptr && a->kind == cache_kind::latent;
        if (a != nullptr && a->kind == cache_kind::latent) continue;
        // the attention shape counts too: a KV-shared layer has heads and no cache of its own
        k.v_max = std::max<uint64_t>({k.v_max, a ? a->width_v() : 0, uint64_t(m.n_head_kv[il]) * m.head_dim_v[il]});
        k.v_head_max = std::max<uint64_t>({k.v_head_max, a ? a->head_dim_v : 0, m.n_head_kv[il] ? m.head_dim_v[il] : 0});
    }
    return k;
}

// V elements per cell of cache `c` in layer `il` (llama_kv_cache constructor, src/llama-kv-cache.cpp:163-234):
// - no V tensor when the model is MLA (has_v = !hparams.is_mla()), for every cache, the DSA indexer included
//   (llama_kv_cache_dsa builds it from a copy of the MLA hparams, src/llama-kv-cache-dsa.cpp:44-53);
// - an indexer of a non-MLA model (llama_kv_cache_msa, src/llama-kv-cache-msa.cpp:39-49: one KV head, K set to the
//   indexer width, V left at the layer's V head) keeps a V of one V head, which its graph never reads;
// - without flash attention V is stored transposed and every V row is padded to the widest one of the model
//   ("padding V cache to N", n_embd_v_gqa_max(), src/llama-kv-cache.cpp:157-160, 209-210).
// - the MLA K-and-V layout (before the V-less cache) keeps kv_lora_rank V values beside the latent.
uint64_t v_width(const model_desc & m, const kv_shape & k, uint32_t il, const layer_cache & c, mla_layout mla,
                 bool flash_attn) {
    if (c.kind == cache_kind::latent) return mla == mla_layout::k_and_v ? m.kv_lora_rank : 0;
    if (k.mla) return 0;
    if (c.kind == cache_kind::indexer) {
        if (!flash_attn) return k.v_head_max;
        const layer_cache * a = m.attention_cache(il);
        return a ? a->head_dim_v : m.head_dim_v[il];
    }
    if (c.width_v() == 0) return 0;
    return flash_attn ? c.width_v() : k.v_max;
}

uint64_t cell_bytes(const model_desc & m, const kv_shape & k, uint32_t il, const layer_cache & c, ggml_type tk,
                    ggml_type tv, mla_layout mla, bool flash_attn) {
    const uint64_t v = v_width(m, k, il, c, mla, flash_attn);
    return ggml_row_size(tk, c.width_k()) + (v > 0 ? ggml_row_size(tv, v) : 0);
}

// The caches these rules allocate: attention K/V (full, window, chunked, latent) and indexer keys of ratio 1.
// Compressed caches and compressed indexers (DeepSeek-V4) have rules of their own not modelled yet.
void check_modelled(const model_desc & m) {
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (c.kind == cache_kind::compressed || c.ratio != 1) {
                throw error(fmt::format("llama.cpp: layer {} keeps a {} cache of ratio {}, which kvfit's llama.cpp rules "
                                        "do not size yet", il, cache_kind_name(c.kind), c.ratio));
            }
        }
    }
}

} // namespace

uint64_t llamacpp_cell_bytes(const model_desc & m, uint32_t il, const layer_cache & c, ggml_type type_k,
                             ggml_type type_v, mla_layout mla, bool flash_attn) {
    return cell_bytes(m, kv_shape_of(m), il, c, type_k, type_v, mla, flash_attn);
}

const char * llamacpp_release_name(llamacpp_release r) {
    switch (r) {
    case llamacpp_release::b5b4ebc5: return "llama.cpp 5b4ebc5 (node-llama-cpp 3.21.1)";
    case llamacpp_release::v0_5_0:   return "llama.cpp v0.5.0 (node-llama-cpp 3.22.1)";
    }
    return "?";
}

llamacpp_release parse_llamacpp_release(std::string_view text) {
    if (text == "5b4ebc5" || text == "v0.4.0" || text == "0.4.0") return llamacpp_release::b5b4ebc5;
    if (text == "v0.5.0" || text == "0.5.0") return llamacpp_release::v0_5_0;
    throw error(fmt::format("--llamacpp-version '{}': expected 5b4ebc5 or v0.5.0", text));
}

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

// Cells per stream of cache `c`: n_ctx_seq, or the capped window for window / chunked caches
// (llama_kv_cache_iswa: size_swa = pad256(min(size_base, n_swa * (unified ? n_seq : 1) + n_ubatch))).
uint64_t cells_per_stream(const layer_cache & c, const llamacpp_settings & s, const llamacpp_context & ctx) {
    if ((c.kind != cache_kind::window && c.kind != cache_kind::chunked) || s.swa_full) return ctx.n_ctx_seq;
    const uint64_t span = uint64_t(c.window) * (s.kv_unified ? ctx.n_seq : 1) + ctx.n_ubatch;
    return pad256(std::min<uint64_t>(ctx.n_ctx_seq, span));
}

void add_cache(kv_cache_buffer & cache, const model_desc & m, const kv_shape & k, uint32_t il, const layer_cache & c,
               const llamacpp_settings & s, const llamacpp_context & ctx) {
    cache.cells_per_stream = cells_per_stream(c, s, ctx);
    const uint64_t cells = cache.cells_per_stream * cache.n_stream;
    cache.n_layer += 1;
    const uint64_t k_row = ggml_row_size(s.type_k, c.width_k());
    cache.k_bytes += cells * k_row;
    cache.v_bytes += cells * (cell_bytes(m, k, il, c, s.type_k, s.type_v, s.mla, ctx.flash_attn) - k_row);
}

// Which llama.cpp cache object holds `c`: "base" (full and MLA layers; the one cache of a model without windows),
// "swa" (window and chunked layers: llama_kv_cache_iswa), "indexer" (the DSA / MSA indexer's own llama_kv_cache).
const char * cache_group(const layer_cache & c) {
    if (c.kind == cache_kind::window || c.kind == cache_kind::chunked) return "swa";
    if (c.kind == cache_kind::indexer) return "indexer";
    return "base";
}

} // namespace

std::vector<kv_cache_buffer> llamacpp_kv_caches(const model_desc & m, const llamacpp_settings & s,
                                                const llamacpp_context & c) {
    check_modelled(m);
    const kv_shape k = kv_shape_of(m);
    std::vector<kv_cache_buffer> out;
    for (const char * name : {"base", "swa", "indexer"}) {
        kv_cache_buffer buf{name, name == std::string_view("swa") ? 0 : c.n_ctx_seq, c.n_stream, 0, 0, 0};
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            for (const auto & cache : m.caches[il]) {
                // --swa-full keeps the two caches of llama_kv_cache_iswa and gives the window one n_ctx_seq cells
                if (!cache.is_state() && cache_group(cache) == std::string_view(name)) add_cache(buf, m, k, il, cache, s, c);
            }
        }
        if (buf.n_layer > 0) out.push_back(buf);
    }
    return out;
}

uint64_t llamacpp_kv_layer_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                 uint32_t il) {
    check_modelled(m);
    const kv_shape k = kv_shape_of(m);
    uint64_t n = 0;
    for (const auto & cache : m.caches.at(il)) {
        if (cache.is_state()) continue;
        kv_cache_buffer one{"", 0, c.n_stream, 0, 0, 0};
        add_cache(one, m, k, il, cache, s, c);
        n += one.bytes();
    }
    return n;
}

recurrent_buffer llamacpp_recurrent(const model_desc & m, const llamacpp_context & c) {
    // llama_memory_recurrent (src/llama-memory-recurrent.cpp): per recurrent layer one r tensor of
    // n_embd_r * mem_size and one s tensor of n_embd_s * mem_size, f32, mem_size = max(1, n_seq_max)
    recurrent_buffer r;
    r.n_seq = std::max<uint32_t>(1, c.n_seq);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        bool any = false;
        for (const auto & cache : m.caches[il]) {
            if (!cache.is_state()) continue;
            any = true;
            uint64_t & dst = cache.kind == cache_kind::conv_state ? r.r_bytes : r.s_bytes;
            dst += uint64_t(r.n_seq) * cache.width_k() * 4;
        }
        r.n_layer += any;
    }
    if (r.n_layer == 0) r.n_seq = 0;
    return r;
}

uint64_t llamacpp_output_bytes(const model_desc & m, const llamacpp_context & c) {
    return uint64_t(m.n_vocab) * c.n_seq * 4;
}

uint64_t kv_bytes_per_token(const model_desc & m, ggml_type type_k, ggml_type type_v, mla_layout mla, bool flash_attn) {
    const kv_shape k = kv_shape_of(m);
    uint64_t n = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (c.grows_with_ctx() && c.ratio == 1) n += cell_bytes(m, k, il, c, type_k, type_v, mla, flash_attn);
        }
    }
    return n;
}

uint64_t kv_bytes_per_token_if_all_full(const model_desc & m, ggml_type type_k, ggml_type type_v, mla_layout mla,
                                        bool flash_attn) {
    return kv_bytes_per_token(all_full_attention_variant(m), type_k, type_v, mla, flash_attn);
}

} // namespace kvfit
