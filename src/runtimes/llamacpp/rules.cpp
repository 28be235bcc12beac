// llama.cpp allocation rules: context sizing, KV caches, recurrent state, output buffer.
// Reproduces llama.cpp 5b4ebc5 (measured in ../shared/reference/llamacpp/results.csv, RULES.md there) and v0.5.0
// (the conformance suite, tests/conformance/); a rule that differs between them names its release.
#include "kvfit/llamacpp.h"
#include "kvfit/error.h"
#include "runtimes/llamacpp/compute.h"

#include <algorithm>
#include <fmt/format.h>
#include "core/util.h"

namespace kvfit {
namespace {

bool flash_attn_resolved(flash_attn_mode m) { return m != flash_attn_mode::off; }

// Model-wide facts llama.cpp's KV cache sizes every layer by (llama_hparams, src/llama-hparams.cpp).
struct kv_shape {
    bool mla = false;      ///< hparams.is_mla(): an MLA (or DeepSeek-V4) model keeps no V tensor in any cache
    bool indexer_k_only = false; ///< v0.5.0's llama_memory_hybrid_idx: a hybrid model's indexer keeps K only
    uint64_t v_max = 0;    ///< n_embd_v_gqa_max(): the widest V row of any layer
    uint64_t v_head_max = 0; ///< the widest V head (n_embd_head_v) of any layer
};

kv_shape kv_shape_of(const model_desc & m, llamacpp_release release) {
    kv_shape k;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        k.indexer_k_only |= release == llamacpp_release::v0_5_0 && m.is_recurrent(il);
        const layer_cache * a = m.attention_cache(il);
        // llama_kv_cache_dsv4 makes every one of its caches K only too (dsv4_make_k_only, llama-kv-cache-dsv4.cpp:883)
        for (const auto & c : m.caches[il]) k.mla |= c.kind == cache_kind::latent || c.kind == cache_kind::compressed;
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
//   indexer width, V left at the layer's V head) keeps a V of one V head, which its graph never reads; so did the
//   indexer of a hybrid model (llama_memory_hybrid_idx, Qwen3.8-Flash-Next) in 5b4ebc5, while v0.5.0 makes it K only
//   (the MLA trick, src/llama-memory-hybrid-idx.cpp:58-60; measured: 5b4ebc5 +201,326,592 B at 32768 f16);
// - without flash attention V is stored transposed and every V row is padded to the widest one of the model
//   ("padding V cache to N", n_embd_v_gqa_max(), src/llama-kv-cache.cpp:157-160, 209-210).
// - the MLA K-and-V layout (before the V-less cache) keeps kv_lora_rank V values beside the latent.
uint64_t v_width(const model_desc & m, const kv_shape & k, uint32_t il, const layer_cache & c, mla_layout mla,
                 bool flash_attn) {
    if (c.kind == cache_kind::latent) return mla == mla_layout::k_and_v ? m.kv_lora_rank : 0;
    if (k.mla) return 0;
    if (c.kind == cache_kind::indexer) {
        if (k.indexer_k_only) return 0;
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

// True when the model's memory is llama_kv_cache_dsv4 (it keeps compressed caches).
bool has_compressed(const model_desc & m) {
    for (const auto & cs : m.caches) {
        for (const auto & c : cs) {
            if (c.kind == cache_kind::compressed) return true;
        }
    }
    return false;
}

// llama_kv_cache_dsv4 knows two compression ratios: 4 (CSA, with its lightning indexer) and 128 (HCA)
// (DSV4_CSA_RATIO, DSV4_HCA_RATIO, src/llama-kv-cache-dsv4.cpp:1271-1311); an indexer outside it has ratio 1.
void check_modelled(const model_desc & m) {
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            const bool ok = c.kind == cache_kind::compressed ? c.ratio == 4 || c.ratio == 128
                          : c.kind == cache_kind::indexer    ? c.ratio == 1 || c.ratio == 4
                                                             : c.ratio == 1;
            if (!ok) {
                throw error(fmt::format("llama.cpp: layer {} keeps a {} cache of ratio {}; llama.cpp sizes compressed "
                                        "caches of ratio 4 and 128 only", il, cache_kind_name(c.kind), c.ratio));
            }
        }
    }
}

} // namespace

uint64_t llamacpp_cell_bytes(const model_desc & m, uint32_t il, const layer_cache & c, ggml_type type_k,
                             ggml_type type_v, mla_layout mla, bool flash_attn, llamacpp_release release) {
    return cell_bytes(m, kv_shape_of(m, release), il, c, type_k, type_v, mla, flash_attn);
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
    projector_bytes += o.projector_bytes;
    adapter_bytes += o.adapter_bytes;
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
    if (s.type_k != s.type_v && (m.count(layer_kind::mla) > 0 || has_compressed(m))) {
        // llama_init_from_model (src/llama-context.cpp:3776): is_mla() || LLM_ARCH_DEEPSEEK4 -> "model does not support
        // different K and V cache types" (both keep K-only caches)
        throw error(fmt::format("llama.cpp: a model with K-only caches (MLA, DeepSeek-V4) does not support different K "
                                "({}) and V ({}) cache types", ggml_traits(s.type_k).name, ggml_traits(s.type_v).name));
    }
    if (flash_attn_resolved(s.flash_attn)) {
        // llama_init_from_model (src/llama-context.cpp:3792-3812): with flash attention a quantized type's block must
        // divide the K (V) head width of every layer (n_embd_head_k(il), n_embd_head_v(il)). Kimi-Linear's GGUF keeps
        // value_length 72, so q8_0 V is refused although no V is cached.
        for (const auto & [type, dims, what] : {std::tuple{s.type_k, &m.head_dim_k, "K"}, std::tuple{s.type_v, &m.head_dim_v, "V"}}) {
            if (!ggml_is_quantized(type)) continue;
            const uint32_t block = ggml_traits(type).block_size;
            for (uint32_t il = 0; il < m.n_layer; ++il) {
                if ((*dims)[il] % block == 0) continue;
                throw error(fmt::format("llama.cpp: {} cache type {} with block size {} does not divide the {} head width "
                                        "{} of layer {}", what, ggml_traits(type).name, block, what, (*dims)[il], il));
            }
        }
    }
    // Kimi-K3 (models/kimi-k3.cpp, attention residuals: attn_res_block) builds it with any -np (measured: 516.53 MiB
    // at -np 3 -ub 512, tests/conformance/measured/kimi-k3.v0.5.0.jsonl), so the abort is kimi-linear.cpp's graph
    if (s.release == llamacpp_release::v0_5_0 && m.rec_kind == recurrent_kind::kda && m.attn_res_block == 0 &&
        s.n_ubatch % s.n_seq != 0) {
        // measured (tests/conformance/measured/kimi-linear-48b.v0.5.0.jsonl): v0.5.0's KDA graph (models/kimi-linear.cpp
        // fused-QKV path) aborts in GGML_ASSERT(ggml_can_repeat(b, a)) (ggml.c:2063) while reserving the worst-case graph
        // whenever n_ubatch is not a multiple of n_seq; 5b4ebc5 builds it
        throw error(fmt::format("llama.cpp v0.5.0: a KDA model aborts (GGML_ASSERT ggml_can_repeat) when -ub {} is not a "
                                "multiple of -np {}; use -ub {}", s.n_ubatch, s.n_seq, std::max(s.n_seq, s.n_ubatch / s.n_seq * s.n_seq)));
    }
    uint64_t n_ctx = s.n_ctx != 0 ? s.n_ctx : m.n_ctx_train;
    if (n_ctx == 0) throw error("llama.cpp: no context given and the model does not state its training context: give -c N");
    if (n_ctx > (1ull << 32)) throw error(fmt::format("llama.cpp: n_ctx {} exceeds 4294967296 tokens", n_ctx));

    llamacpp_context c;
    c.n_seq = s.n_seq;
    c.flash_attn = flash_attn_resolved(s.flash_attn);
    n_ctx = detail::round_up(n_ctx, 256);
    if (s.kv_unified) {
        c.n_stream = 1;
        c.n_ctx_seq = n_ctx;
        c.n_ctx = n_ctx;
    } else {
        c.n_stream = s.n_seq;
        c.n_ctx_seq = detail::round_up(n_ctx / s.n_seq, 256);
        c.n_ctx = c.n_ctx_seq * s.n_seq;
    }
    c.n_batch = static_cast<uint32_t>(std::min<uint64_t>(c.n_ctx, s.n_batch));
    c.n_ubatch = std::min(c.n_batch, s.n_ubatch);
    // speculative decoding (docs/rules/llamacpp-spec.md): llama-server reserves n_parallel x (1 + n_max) outputs
    // (server_output_limits, server-context.cpp:41-53; common_speculative_get_output_limits, speculative.cpp:2606-2615,
    // capped at n_batch), and with MTP the target keeps n_max extra recurrent snapshots (need_n_rs_seq, common.h:394-400)
    // on the architectures that roll their state back (llm_arch_supports_rs_rollback; clamped to 0 elsewhere,
    // llama-context.cpp:105-110)
    // Without speculative decoding llama-server reserves n_parallel outputs (server_outputs: server_output_limits with
    // n_max 0, at least 1, at most -b; server-context.cpp:41-53, 1014-1016); libllama's own default is n_batch.
    uint64_t outputs = s.n_outputs_max;
    if (s.spec.active()) outputs = uint64_t(s.n_seq) * (1 + s.spec.n_max);
    else if (s.server_outputs) outputs = std::max<uint64_t>(1, std::min<uint64_t>(s.n_batch, s.n_seq));
    // llama-context.cpp:250: n_outputs_max 0 -> n_batch
    c.n_outputs_max = outputs == 0 ? c.n_batch : uint32_t(std::min<uint64_t>(outputs, c.n_batch));
    if (s.spec.mtp && m.arch.rs_rollback) c.n_rs_seq = s.spec.n_max;
    return c;
}

namespace {

// Cells per stream of cache `c`: n_ctx_seq, or the capped window for window / chunked caches
// (llama_kv_cache_iswa: size_swa = GGML_PAD(min(size_base, n_swa * (unified ? n_seq : 1) + n_ubatch), 256)).
// A compressed cache (and its indexer) holds one cell per `ratio` tokens, padded to 256:
// GGML_PAD(max(1, ceil(n_ctx_seq / ratio)), 256) (dsv4_comp_size, src/llama-kv-cache-dsv4.cpp:28-30, 1289-1311).
uint64_t cells_per_stream(const layer_cache & c, const llamacpp_settings & s, const llamacpp_context & ctx, bool dsv4) {
    if (c.ratio > 1) return detail::round_up(std::max<uint64_t>(1, (ctx.n_ctx_seq + c.ratio - 1) / c.ratio), 256);
    if ((c.kind != cache_kind::window && c.kind != cache_kind::chunked) || s.swa_full) return ctx.n_ctx_seq;
    // llama_kv_cache_dsv4 keeps its window cache per sequence even when the cache is unified (unified_raw, :1244)
    const bool unified = s.kv_unified && !dsv4;
    const uint64_t span = uint64_t(c.window) * (unified ? ctx.n_seq : 1) + ctx.n_ubatch;
    return detail::round_up(std::min<uint64_t>(ctx.n_ctx_seq, span), 256);
}

// Streams of every cache: one per sequence, or one when unified; llama_kv_cache_dsv4 always keeps one per sequence
// ("only supports non-unified mode even if unified flag is passed", src/llama-kv-cache-dsv4.h).
uint32_t n_stream_of(const llamacpp_context & ctx, bool dsv4) { return dsv4 ? ctx.n_seq : ctx.n_stream; }

// `dsv4` is has_compressed(m), computed once by the caller: asked per layer it made planning quadratic.
void add_cache(kv_cache_buffer & cache, const model_desc & m, const kv_shape & k, uint32_t il, const layer_cache & c,
               const llamacpp_settings & s, const llamacpp_context & ctx, bool dsv4) {
    cache.n_stream = n_stream_of(ctx, dsv4);
    cache.cells_per_stream = cells_per_stream(c, s, ctx, dsv4);
    const uint64_t cells = cache.cells_per_stream * cache.n_stream;
    cache.n_layer += 1;
    const uint64_t k_row = ggml_row_size(s.type_k, c.width_k());
    cache.k_bytes += cells * k_row;
    cache.v_bytes += cells * (cell_bytes(m, k, il, c, s.type_k, s.type_v, s.mla, ctx.flash_attn) - k_row);
}

// Which llama.cpp cache object holds `c`: "base" (full and MLA layers; the one cache of a model without windows),
// "swa" (window and chunked layers: llama_kv_cache_iswa), "indexer" (the DSA / MSA / hybrid-idx indexer's own
// llama_kv_cache), "csa" and "hca" (DeepSeek-V4's compressed caches of ratio 4 and 128), "lid" (its ratio-4 indexer).
// The groups in the order llama.cpp logs them; cache_group() is an index into it.
constexpr const char * k_cache_groups[] = {"base", "swa", "indexer", "csa", "hca", "lid"};
constexpr size_t k_n_cache_groups = sizeof(k_cache_groups) / sizeof(k_cache_groups[0]);
constexpr size_t k_group_swa = 1;

constexpr size_t k_group_base = 0, k_group_indexer = 2, k_group_csa = 3, k_group_hca = 4, k_group_lid = 5;

size_t cache_group(const layer_cache & c) {
    if (c.kind == cache_kind::window || c.kind == cache_kind::chunked) return k_group_swa;
    if (c.kind == cache_kind::indexer) return c.ratio > 1 ? k_group_lid : k_group_indexer;
    if (c.kind == cache_kind::compressed) return c.ratio == 4 ? k_group_csa : k_group_hca;
    return k_group_base;
}

// The window cache llama_kv_cache_dsv4 gives an MTP block: every block of the file is a window layer
// (deepseek4.cpp:67-74) and its raw cache has no MTP filter (hparams_raw.n_layer_nextn = 0, :1246).
const layer_cache * mtp_window_cache(const model_desc & m, uint32_t il) {
    if (il < m.n_layer || il >= m.n_layer + m.n_layer_mtp || !has_compressed(m)) return nullptr;
    for (const auto & c : m.caches[0]) {
        if (c.kind == cache_kind::window) return &c;
    }
    return nullptr;
}

} // namespace

namespace detail {

std::vector<kv_cache_buffer> kv_caches_by_layer(const model_desc & m, const llamacpp_settings & s,
                                                const llamacpp_context & c, std::vector<uint64_t> * by_layer) {
    check_modelled(m);
    const kv_shape k = kv_shape_of(m, s.release);
    const bool dsv4 = has_compressed(m);
    // one pass over the layers, each cache added to its group (layers in order within a group, as llama.cpp adds them)
    std::vector<kv_cache_buffer> groups;
    groups.reserve(k_n_cache_groups);
    for (const char * name : k_cache_groups) groups.push_back(kv_cache_buffer{name, 0, c.n_stream, 0, 0, 0});
    if (by_layer) by_layer->assign(m.n_layer + m.n_layer_mtp, 0);
    // a layer's bytes: what its caches add to their groups
    auto add = [&](kv_cache_buffer & g, uint32_t il, const layer_cache & cache) {
        const uint64_t before = g.bytes();
        add_cache(g, m, k, il, cache, s, c, dsv4);
        if (by_layer) (*by_layer)[il] += g.bytes() - before;
    };
    for (uint32_t il = 0; il < m.n_layer + m.n_layer_mtp; ++il) {
        if (il >= m.n_layer) {
            if (const layer_cache * w = mtp_window_cache(m, il)) add(groups[k_group_swa], il, *w);
            continue;
        }
        for (const auto & cache : m.caches[il]) {
            // --swa-full keeps the two caches of llama_kv_cache_iswa and gives the window one n_ctx_seq cells
            if (!cache.is_state()) add(groups[cache_group(cache)], il, cache);
        }
    }
    std::vector<kv_cache_buffer> out;
    for (auto & g : groups) {
        if (g.n_layer > 0) out.push_back(std::move(g));
    }
    return out;
}

} // namespace detail

std::vector<kv_cache_buffer> llamacpp_kv_caches(const model_desc & m, const llamacpp_settings & s,
                                                const llamacpp_context & c) {
    return detail::kv_caches_by_layer(m, s, c, nullptr);
}

void llamacpp_adapt_model(model_desc & m, std::vector<std::string> & warnings) {
    // llama.cpp's loader asserts the expert groups of group-limited routing before any buffer is made (llama-model.cpp
    // load_hparams, v0.5.0:1297-1301 and 5b4ebc5 alike: GGML_ASSERT aborts the process): n_expert % n_expert_groups == 0
    // and 0 < n_group_used < n_expert_groups. A config's n_group / topk_group (or the GGUF's expert_group_count /
    // expert_group_used_count) that breaks them is a model llama.cpp does not load: refused here, not planned.
    if (const auto g = m.graph_dims.find("expert_group_count"); g != m.graph_dims.end() && g->second > 1 && m.n_expert > 0) {
        const uint64_t groups = g->second;
        const auto u = m.graph_dims.find("expert_group_used_count");
        const uint64_t used = u == m.graph_dims.end() ? 0 : u->second;
        if (m.n_expert % groups != 0) {
            throw error(fmt::format("n_group {}: the {} routed experts do not divide into {} expert groups; llama.cpp's "
                                    "loader asserts n_expert % n_expert_groups == 0 (llama-model.cpp load_hparams)",
                                    groups, m.n_expert, groups));
        }
        if (used == 0 || used >= groups) {
            throw error(fmt::format("topk_group {}: llama.cpp's loader asserts 0 < n_group_used < n_expert_groups ({}) "
                                    "(llama-model.cpp load_hparams)", used, groups));
        }
    }
    const uint32_t fixed_chunk = m.arch.n_chunk_fixed;
    if (fixed_chunk > 0) {
        // llama4: models/llama4.cpp load_arch_hparams sets n_swa = 8192 whatever the file says (both releases), and
        // conversion/llama4.py writes no chunk size: the config's attention_chunk_size is vLLM's and SGLang's only
        const uint32_t config_chunk = m.n_chunk;
        bool chunked = false;
        for (auto & layer : m.caches) {
            for (auto & c : layer) {
                if (c.kind != cache_kind::chunked) continue;
                c.window = fixed_chunk;
                chunked = true;
            }
        }
        if (chunked) m.n_chunk = fixed_chunk;
        if (chunked && config_chunk != fixed_chunk) {
            warnings.push_back(fmt::format("attention_chunk_size: llama.cpp's {} uses chunks of {} tokens (models/{}.cpp "
                                           "hard-codes n_swa = {}); the config's {} is planned by vLLM and SGLang only",
                                           m.gguf_architecture, fixed_chunk, m.gguf_architecture, fixed_chunk, config_chunk));
        }
    }
    if (!m.arch.no_window) return;
    uint32_t n = 0;
    for (auto & layer : m.caches) {
        for (auto & c : layer) {
            if (c.kind != cache_kind::window && c.kind != cache_kind::chunked) continue;
            c.kind = cache_kind::full;
            c.window = 0;
            ++n;
        }
    }
    if (n == 0) return;
    warnings.push_back(fmt::format("sliding window: llama.cpp's {} architecture uses no sliding window (models/{}.cpp), so "
                                   "the {} window layer{} of {} ({} tokens) are planned as full attention, as llama.cpp "
                                   "allocates them; vLLM and SGLang use the window", m.gguf_architecture,
                                   m.gguf_architecture, n, n == 1 ? "" : "s", m.name, m.n_swa));
    m.n_swa = 0;
}

namespace detail {

uint64_t window_cells_per_stream(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c) {
    // the last cache llamacpp_kv_caches() adds to "swa" sets its cells: the MTP blocks' window (DeepSeek-V4), else
    // the last window or chunked layer
    const bool dsv4 = has_compressed(m);
    for (uint32_t il = m.n_layer + m.n_layer_mtp; il-- > m.n_layer;) {
        if (const layer_cache * w = mtp_window_cache(m, il)) return cells_per_stream(*w, s, c, dsv4);
    }
    for (uint32_t il = m.n_layer; il-- > 0;) {
        for (auto it = m.caches[il].rbegin(); it != m.caches[il].rend(); ++it) {
            if (!it->is_state() && cache_group(*it) == k_group_swa) return cells_per_stream(*it, s, c, dsv4);
        }
    }
    return c.n_ctx_seq;
}

} // namespace detail

namespace {

uint64_t kv_layer_bytes(const model_desc & m, const kv_shape & k, bool dsv4, const llamacpp_settings & s,
                        const llamacpp_context & c, uint32_t il) {
    uint64_t n = 0;
    if (il >= m.n_layer) {
        const layer_cache * w = mtp_window_cache(m, il);
        if (w == nullptr) return 0;
        kv_cache_buffer one{"", 0, c.n_stream, 0, 0, 0};
        add_cache(one, m, k, il, *w, s, c, dsv4);
        return one.bytes();
    }
    for (const auto & cache : m.caches.at(il)) {
        if (cache.is_state()) continue;
        kv_cache_buffer one{"", 0, c.n_stream, 0, 0, 0};
        add_cache(one, m, k, il, cache, s, c, dsv4);
        n += one.bytes();
    }
    return n;
}

} // namespace

uint64_t llamacpp_kv_layer_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                 uint32_t il) {
    check_modelled(m);
    return kv_layer_bytes(m, kv_shape_of(m, s.release), has_compressed(m), s, c, il);
}

std::vector<uint64_t> llamacpp_kv_bytes_by_layer(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c) {
    std::vector<uint64_t> out; // the per-layer view of the caches' one pass (kv_caches_by_layer), as placement reads it
    (void)detail::kv_caches_by_layer(m, s, c, &out);
    return out;
}

std::vector<std::vector<cache_row_widths>> llamacpp_cache_row_widths(const model_desc & m, const llamacpp_settings & s) {
    const kv_shape k = kv_shape_of(m, s.release);
    const bool fa = flash_attn_resolved(s.flash_attn);
    std::vector<std::vector<cache_row_widths>> out(m.n_layer);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const layer_cache & c : m.caches[il]) {
            if (c.is_state()) out[il].push_back({});
            else out[il].push_back({c.width_k(), v_width(m, k, il, c, s.mla, fa)});
        }
    }
    return out;
}

std::vector<uint64_t> llamacpp_attention_cell_bytes(const model_desc & m, const llamacpp_settings & s) {
    const kv_shape k = kv_shape_of(m, s.release);
    std::vector<uint64_t> out(m.n_layer);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_cache * a = m.attention_cache(il);
        if (a) out[il] = cell_bytes(m, k, il, *a, s.type_k, s.type_v, s.mla, s.flash_attn != flash_attn_mode::off);
    }
    return out;
}

namespace {

// Compressor state bytes of one layer, per plane (a sequence or one of its rollback snapshots): llama_dsv4_comp_state
// keeps a kv and a score tensor of n_embd_state x state_size f32 per compressed cache; the ratio-4 caches compress
// overlapping windows (2 x width, 2 x ratio), the ratio-128 cache does not (src/llama-kv-cache-dsv4.cpp:964-966,
// 1313-1330).
uint64_t compressor_bytes_per_seq(const model_desc & m, uint32_t il) {
    uint64_t n = 0;
    for (const auto & c : m.caches.at(il)) {
        if (c.ratio <= 1) continue;
        const bool overlap = c.ratio == 4;
        n += 2 * (overlap ? 2 : 1) * c.width_k() * (overlap ? 2 : 1) * c.ratio * 4;
    }
    return n;
}

struct layer_state {
    uint64_t r = 0, s = 0, p = 0, comp = 0;
};

layer_state state_of(const model_desc & m, const llamacpp_context & c, uint32_t il) {
    layer_state st;
    // llama_memory_recurrent (src/llama-memory-recurrent.cpp): per recurrent layer one r tensor of
    // n_embd_r * mem_size and one s tensor of n_embd_s * mem_size, f32, mem_size = max(1, n_seq_max)
    // rows = mem_size * (1 + n_rs_seq) (llama-memory-recurrent.cpp:101: speculative rollback snapshots)
    const uint64_t rows = uint64_t(std::max<uint32_t>(1, c.n_seq)) * (1 + c.n_rs_seq);
    for (const auto & cache : m.caches.at(il)) {
        if (cache.kind == cache_kind::conv_state) st.r += rows * cache.width_k() * 4;
        if (cache.kind == cache_kind::ssm_state) st.s += rows * cache.width_k() * 4;
        // the P tensor of the PLE layers (llama-memory-recurrent.cpp:110-113): ple_conv_state() x mem_size, f32
        if (cache.kind == cache_kind::ple_state) st.p += rows * cache.width_k() * 4;
    }
    // one plane per stream and per rollback snapshot: n_planes = n_stream x (1 + n_rs_seq) (llama-kv-cache-dsv4.cpp:964,
    // measured with MTP: +12,206,080 B per snapshot for DeepSeek-V4-Flash, spec-mtp.*.jsonl)
    st.comp = uint64_t(c.n_seq) * (1 + c.n_rs_seq) * compressor_bytes_per_seq(m, il);
    return st;
}

} // namespace

recurrent_buffer llamacpp_recurrent(const model_desc & m, const llamacpp_context & c) {
    recurrent_buffer r;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_state st = state_of(m, c, il);
        r.r_bytes += st.r;
        r.s_bytes += st.s;
        r.p_bytes += st.p;
        r.comp_bytes += st.comp;
        r.n_layer += m.is_recurrent(il);
    }
    r.n_seq = r.n_layer > 0 ? std::max<uint32_t>(1, c.n_seq) : 0;
    return r;
}

uint64_t llamacpp_state_layer_bytes(const model_desc & m, const llamacpp_context & c, uint32_t il) {
    const layer_state st = state_of(m, c, il);
    return st.r + st.s + st.p + st.comp;
}

uint64_t llamacpp_output_bytes(const model_desc & m, const llamacpp_context & c) {
    return uint64_t(m.n_vocab) * c.n_seq * 4;
}

uint64_t kv_bytes_per_token(const model_desc & m, ggml_type type_k, ggml_type type_v, mla_layout mla, bool flash_attn,
                            llamacpp_release release) {
    const kv_shape k = kv_shape_of(m, release);
    uint64_t n = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (c.grows_with_ctx() && c.ratio == 1) n += cell_bytes(m, k, il, c, type_k, type_v, mla, flash_attn);
        }
    }
    return n;
}

uint64_t kv_bytes_per_token_if_all_full(const model_desc & m, ggml_type type_k, ggml_type type_v, mla_layout mla,
                                        bool flash_attn, llamacpp_release release) {
    return kv_bytes_per_token(all_full_attention_variant(m), type_k, type_v, mla, flash_attn, release);
}

} // namespace kvfit
