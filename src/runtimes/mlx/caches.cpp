// Which mlx-lm cache each layer cache becomes, its peak cells and bytes, and the prefill transient (estimate).
// Cache classes: mlx_lm/models/cache.py at mlx-lm d78bf58. docs/rules/mlx.md §1-§6 work the numbers.
#include "detail.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace kvfit::detail {

namespace {

// Head dims the fused prefill attention handles (mlx/backend/metal/scaled_dot_product_attention.cpp
// has_fused_kernel and use_fallback: query length > 8 needs q == v head dim in {64, 72, 80, 96, 128, 192, 256}, and
// 192 / 256 take the unfused path anyway, except head dim 256 on NAX (M5) GPUs).
bool fused_prefill(uint32_t dk, uint32_t dv) {
    return dk == dv && (dk == 64 || dk == 72 || dk == 80 || dk == 96 || dk == 128);
}

// The score matrices MLX's unfused attention holds at its peak (mlx/fast.cpp scaled_dot_product_attention's
// fallback, MLX 0.32.1 / main 846d176): scores = matmul(q, k^T) is one (B, H, L, S) matrix in the activation dtype;
// the mask step (`where(mask, scores, min)`) and `softmax` write into that same buffer, because an input no other
// array holds is donated to the output (mlx/backend/common/ternary.h set_ternary_op_output_data, General case:
// the row-contiguous scores; mlx/backend/metal/softmax.cpp: `if (x.is_donatable()) out.copy_shared_buffer(x)`).
// Beside it the causal mask, bool (L, S), 1 B per query-key pair, built in the fallback (`greater_equal` of two
// aranges) or passed by mlx-lm for window layers (create_causal_mask). Attention sinks (gpt-oss) concatenate a
// column in front of the scores: a second (B, H, L, S + 1) matrix while the first is alive (`concatenate` donates
// nothing). Checked on mlx-lm #1480's two rows (8K and 192K prompts, one model): the peak grew 16.3 GB between them,
// this rule gives 16.6 GB (one matrix and the mask, with the KV cache), two matrices would give 29 GB.
uint64_t unfused_scores_bytes(uint64_t b, uint64_t n_head, uint64_t p, uint64_t keys, uint64_t a, bool sinks) {
    const uint64_t scores = b * n_head * p * keys * a;
    return scores + p * keys + (sinks ? b * n_head * p * (keys + 1) * a : 0);
}

// Per-head bytes of one cell of a QuantizedKVCache row of `dim` values.
uint64_t qrow(const mlx_run & r, uint64_t dim) {
    return mlx_quantized_row_bytes(dim, *r.s->kv_bits, r.s->kv_group_size, r.act_bytes);
}

// Keys one chunk attends to at `tokens` (the cells update_and_fetch returns), per attention cache kind.
uint64_t attended_cells(const mlx_run & r, const layer_cache & c, uint64_t tokens) {
    const uint32_t p = r.s->prefill_step_size;
    switch (c.kind) {
    case cache_kind::window:  return std::min<uint64_t>(tokens, c.window - 1 + uint64_t(p));
    case cache_kind::chunked: return std::min<uint64_t>(tokens, c.window + uint64_t(p));
    default:
        if (r.default_caches && r.s->max_kv_size) return std::min<uint64_t>(tokens, *r.s->max_kv_size - 1 + p);
        return tokens;
    }
}

} // namespace

uint64_t mlx_layer_cache::bytes(uint32_t n_seq) const {
    return uint64_t(n_seq) * (cells > 0 ? cells * (k_bytes_per_cell + v_bytes_per_cell) : k_bytes_per_cell);
}

std::vector<mlx_layer_cache> mlx_layer_caches(const mlx_run & r, uint64_t tokens, bool quantized) {
    const model_desc & m = *r.m;
    const mlx_settings & s = *r.s;
    const uint32_t a = r.act_bytes;
    // A fresh KVCache rounds to 256-cell steps; a cache loaded from --prompt-cache-file holds exactly its offset and
    // then grows by ceil(S / 256) x 256 from there: fewer than tokens + 256 cells (KVCache.update_and_fetch).
    const uint64_t kv_cells = s.prompt_cache_file.empty() ? mlx_kvcache_cells(tokens)
                                                          : (tokens == 0 ? 0 : tokens + 255);
    std::vector<mlx_layer_cache> out;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const auto & list = m.caches[il];
        const bool bare = list.size() == 1; // more than one cache: a CacheList, which has no to_quantized
        for (const layer_cache & c : list) {
            mlx_layer_cache e;
            e.il = il;
            e.kind = c.kind;
            switch (c.kind) {
            case cache_kind::conv_state: // ArraysCache slot 0: (B, d_conv - 1, conv_dim) in the input dtype
                e.name = "ArraysCache";
                e.k_bytes_per_cell = c.width_k() * a;
                break;
            case cache_kind::ssm_state: // ArraysCache slot 1: float32 (gated_delta.py, ssm.py)
                e.name = "ArraysCache";
                e.k_bytes_per_cell = c.width_k() * 4;
                break;
            case cache_kind::full:
            case cache_kind::latent:
                e.k_bytes_per_cell = c.width_k() * a;
                e.v_bytes_per_cell = c.width_v() * a;
                if (r.default_caches && s.max_kv_size) {
                    e.name = "RotatingKVCache";
                    e.cells = mlx_rotating_cells(tokens, *s.max_kv_size, s.prefill_step_size);
                    break;
                }
                e.quantizable = bare;
                e.grows = true;
                e.cells = kv_cells;
                e.name = "KVCache";
                if (quantized && bare) {
                    e.name = "QuantizedKVCache";
                    if (c.kind == cache_kind::latent && m.kv_lora_rank + m.n_rot_mla == c.width_k()) {
                        // deepseek_v3.py stores the latent as keys and the rope part as values
                        e.k_bytes_per_cell = qrow(r, m.kv_lora_rank);
                        e.v_bytes_per_cell = qrow(r, m.n_rot_mla);
                    } else {
                        e.k_bytes_per_cell = c.n_head * qrow(r, c.head_dim_k);
                        e.v_bytes_per_cell = c.head_dim_v ? c.n_head * qrow(r, c.head_dim_v) : 0;
                    }
                }
                break;
            case cache_kind::window: // RotatingKVCache(max_size=window): gpt_oss.py, gemma3_text.py make_cache
                e.name = "RotatingKVCache";
                e.cells = mlx_rotating_cells(tokens, c.window, s.prefill_step_size);
                e.k_bytes_per_cell = c.width_k() * a;
                e.v_bytes_per_cell = c.width_v() * a;
                break;
            case cache_kind::chunked: // ChunkedKVCache(chunk): llama4.py make_cache
                e.name = "ChunkedKVCache";
                e.cells = mlx_chunked_cells(tokens, c.window, s.prefill_step_size);
                e.k_bytes_per_cell = c.width_k() * a;
                e.v_bytes_per_cell = c.width_v() * a;
                break;
            case cache_kind::indexer: // deepseek_v32.py: CacheList(KVCache(), KVCache()), the indexer keys V-less
                if (c.ratio != 1) continue;
                e.name = "KVCache";
                e.grows = true;
                e.cells = kv_cells;
                e.k_bytes_per_cell = c.width_k() * a;
                break;
            case cache_kind::compressed:
            case cache_kind::ple_state: // no mlx-lm rule: refused (mlx_fixed_refusals)
                continue;
            }
            out.push_back(e);
        }
    }
    return out;
}

uint64_t mlx_activation_bytes(const mlx_run & r, uint64_t tokens) {
    const model_desc & m = *r.m;
    const uint64_t a = r.act_bytes;
    const uint64_t p = std::min<uint64_t>(r.s->prefill_step_size, tokens);
    const uint64_t b = r.prefill_batch;
    uint64_t worst = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const uint64_t n_head = m.n_head[il], dk = m.head_dim_k[il], dv = m.head_dim_v[il], n_kv = m.n_head_kv[il];
        uint64_t attn = 0, rec = 0;
        for (const layer_cache & c : m.caches[il]) {
            const uint64_t keys = attended_cells(r, c, tokens);
            if (c.kind == cache_kind::latent) {
                // deepseek_v3.py prefill: pe_scores (B, H, L, keys) is the mask, and K / V are expanded per head
                // from the latent: (B, H, keys, qk_nope) and (B, H, keys, v_head_dim); the fused kernel then runs.
                const uint64_t nope = m.head_dim_qk_nope ? m.head_dim_qk_nope : dk;
                const uint64_t vdim = m.head_dim_v_mla ? m.head_dim_v_mla : dv;
                attn = std::max(attn, b * n_head * (p * keys + keys * (nope + vdim)) * a);
            } else if (c.is_attention()) {
                uint64_t t = b * p * (2 * n_head * dk + n_kv * (dk + dv)) * a; // q, output, this chunk's k and v
                if (!fused_prefill(uint32_t(dk), uint32_t(dv))) t += unfused_scores_bytes(b, n_head, p, keys, a, m.parts.sinks);
                attn = std::max(attn, t);
            } else if (c.kind == cache_kind::conv_state && m.ssm_d_conv > 1) {
                rec = std::max(rec, 3 * b * p * (c.width_k() / (m.ssm_d_conv - 1)) * a); // qkv, conv in, conv out
            }
        }
        uint64_t ffn = 0;
        if (il < m.is_moe.size() && m.is_moe[il]) {
            // SwitchGLU: tokens sorted by expert, k copies of x, gate / up / product of n_ff_exp each
            ffn = b * p * (uint64_t(m.n_expert_used) * (3ull * m.n_ff_exp + m.n_embd) + 3ull * m.n_ff_shexp) * a;
        } else {
            ffn = 3 * b * p * m.n_ff[il] * a;
        }
        worst = std::max(worst, std::max({attn, rec, ffn}) + 2 * b * p * m.n_embd * a);
    }
    return worst;
}

uint32_t mlx_unfused_head_dim(const model_desc & m) {
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const layer_cache & c : m.caches[il]) {
            if (c.is_attention() && c.kind != cache_kind::latent && !fused_prefill(m.head_dim_k[il], m.head_dim_v[il])) {
                return m.head_dim_k[il];
            }
        }
    }
    return 0;
}

std::vector<mlx_cache_group> mlx_group_caches(const std::vector<mlx_layer_cache> & caches, uint32_t n_seq) {
    using key = std::tuple<std::string, int, uint64_t, uint64_t, uint64_t>;
    std::map<key, size_t> index;
    std::vector<mlx_cache_group> out;
    for (const auto & c : caches) {
        const key k{c.name, int(c.kind), c.cells, c.k_bytes_per_cell, c.v_bytes_per_cell};
        auto it = index.find(k);
        if (it == index.end()) {
            it = index.emplace(k, out.size()).first;
            mlx_cache_group g;
            g.name = c.name;
            g.kind = c.kind;
            g.cells = c.cells;
            g.n_seq = n_seq;
            g.k_bytes_per_cell = c.k_bytes_per_cell;
            g.v_bytes_per_cell = c.v_bytes_per_cell;
            out.push_back(g);
        }
        out[it->second].n_layer += 1;
        out[it->second].bytes += c.bytes(n_seq);
    }
    return out;
}

} // namespace kvfit::detail
