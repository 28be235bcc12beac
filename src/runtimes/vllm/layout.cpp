// vLLM v1 KV-cache specs, page sizes, hybrid block-size alignment and KV-cache groups (RULES §1, §2.2).
// Mirrors vllm/v1/kv_cache_interface.py (page_size_bytes, max_memory_usage_bytes),
// vllm/model_executor/layers/mamba/mamba_utils.py (MambaStateShapeCalculator, MambaStateDtypeCalculator),
// vllm/platforms/interface.py (_align_hybrid_block_size) and vllm/v1/core/kv_cache_utils.py
// (get_kv_cache_groups, _get_kv_cache_groups_uniform_page_size, unify_kv_cache_spec_page_size).
#include "runtimes/vllm/layout.h"

#include "kvfit/error.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <numeric>

namespace kvfit::detail {

namespace {

// Per-layer spec before grouping.
struct layer_spec {
    std::string kind;      // "" = no cache
    uint32_t window = 0;   // sliding window or chunk
    uint64_t page = 0;     // bytes of one block of this layer
    uint32_t block = 0;    // tokens of one block
};

// kv_cache_interface.py AttentionSpec.page_size_bytes for block 1: H x (D_k + D_v) x s, MLA H = 1 and no x2,
// nvfp4 f(d) = d/2 + d/16, fp8_ds_mla 656 B, plus 2 x H x 4 B of fp32 scales in the per-token-head modes.
uint64_t attention_bytes_per_token(const model_desc & m, const vllm_settings & s, uint32_t il, uint32_t & heads) {
    const std::string & dt = s.kv_cache_dtype;
    const uint32_t model_s = torch_dtype_bytes(m.dtype, 2, "dtype");
    const layer_cache & a = *m.attention_cache(il);
    const bool mla = a.kind == cache_kind::latent;
    heads = mla ? 1 : std::max<uint32_t>(1, a.n_head / s.tp); // ModelConfig.get_num_kv_heads
    uint64_t bytes = 0;
    if (mla && dt == "fp8_ds_mla") {
        bytes = 656; // flashmla_sparse.py packed layout
    } else if (dt == "nvfp4") {
        auto f = [](uint64_t d) { return d / 2 + d / 16; }; // nvfp4_kv_cache_full_dim
        bytes = mla ? f(a.head_dim_k) : uint64_t(heads) * (f(a.head_dim_k) + f(a.head_dim_v));
    } else {
        const uint32_t es = dt == "auto" ? model_s : 1;
        bytes = mla ? uint64_t(a.head_dim_k) * es : uint64_t(heads) * (a.head_dim_k + a.head_dim_v) * es;
    }
    if (dt == "fp8_per_token_head" || dt == "int8_per_token_head") bytes += 2ull * heads * 4;
    // DSA indexer keys (DeepseekV32IndexerCache.get_kv_cache_spec, vllm/model_executor/models/deepseek_v2.py): an
    // MLAAttentionSpec of head_size index_head_dim + index_head_dim / 128 x 4, uint8 (fp8 values and one fp32 scale
    // per 128), whatever --kv-cache-dtype is: 132 B per token per layer. It joins the MLA layers' UniformType group
    // (one block size), so a block of the layer costs both pages (vllm-frontier.md §2.1).
    // MSA index keys beside a full (non-latent) attention cache (MiniMax-M3; vllm/models/minimax_m3/common/indexer.py
    // MiniMaxM3IndexerCache.get_kv_cache_spec @545393a3): an MLAAttentionSpec of one head of sparse_index_dim, key
    // only, stored as --attention-config indexer_kv_dtype, "bf16" by default (vllm/config/attention.py), whatever
    // --kv-cache-dtype is: 128 x 2 = 256 B per token per sparse layer. It joins the FullAttentionSpec layers'
    // UniformType group (vllm-frontier.md §6).
    for (const layer_cache & c : m.caches.at(il)) {
        if (c.kind != cache_kind::indexer || c.ratio != 1) continue;
        bytes += mla ? c.width_k() + cdiv(c.width_k(), 128) * 4 : c.width_k() * 2;
    }
    return bytes;
}

// MambaStateDtypeCalculator: conv = --mamba-cache-dtype (auto: model dtype); temporal = --mamba-ssm-cache-dtype
// (auto: the config's mamba_ssm_dtype, Qwen3.5: float32, else the conv dtype).
void mamba_state_bytes(const model_desc & m, const vllm_settings & s, uint64_t & conv, uint64_t & ssm) {
    const uint32_t model_s = torch_dtype_bytes(m.dtype, 2, "dtype");
    const uint32_t conv_s = torch_dtype_bytes(s.mamba_cache_dtype, model_s, "--mamba-cache-dtype");
    const uint32_t ssm_s = s.mamba_ssm_cache_dtype != "auto"
                               ? torch_dtype_bytes(s.mamba_ssm_cache_dtype, conv_s, "--mamba-ssm-cache-dtype")
                               : torch_dtype_bytes(m.ssm_dtype, conv_s, "mamba_ssm_dtype");
    recurrent_state_bytes(m, s.tp, conv_s, ssm_s, conv, ssm);
    // Speculative decoding: mamba2, gated_delta_net and kda conv states hold conv_kernel - 1 + num_spec rows
    // (mamba_utils.py @02d71083 MambaStateShapeCalculator, num_spec = num_speculative_tokens); mamba1 and short_conv
    // none more. Checked: Qwen3.6-27B, MTP 3, fp8 KV, vLLM 0.20.0 logs block 1600 and "Padding mamba page size by 0.25%"
    // (docs/rules/vllm-speculative.md §3).
    const uint64_t n_spec = s.speculative.num_speculative_tokens, k1 = m.ssm_d_conv > 0 ? m.ssm_d_conv - 1 : 0;
    const bool grows = m.rec_kind == recurrent_kind::gated_deltanet || m.rec_kind == recurrent_kind::mamba2 ||
                       m.rec_kind == recurrent_kind::kda;
    if (n_spec > 0 && grows && k1 > 0) conv = conv / k1 * (k1 + n_spec);
}

const char * spec_kind(layer_kind k) {
    switch (k) {
    case layer_kind::full: return "full_attention";
    case layer_kind::mla: return "mla";
    case layer_kind::swa: return "sliding_window";
    case layer_kind::chunked: return "chunked";
    case layer_kind::recurrent: return "mamba";
    default: return "";
    }
}

// platforms/interface.py _align_hybrid_block_size (v2026; v2025: HybridAttentionMambaModelConfig with grain 16).
void align_hybrid(vllm_layout & lay, const vllm_settings & s, const model_desc & m, uint64_t mamba_page) {
    const uint32_t grain = s.rules == vllm_rules::v2026 ? std::max<uint32_t>(16, lay.block_size) : 16;
    uint64_t attn_block = 0;
    if (s.mamba_mode == mamba_cache_mode::all) {
        uint32_t chunk0 = s.mamba_block_size ? s.mamba_block_size : m.ssm_chunk_size;
        if (chunk0 == 0) {
            chunk0 = 64;
            lay.notes.push_back("mamba chunk size not in the config: 64 assumed (--mamba-block-size sets it)");
        }
        const uint64_t chunk = std::lcm<uint64_t>(chunk0, grain);
        attn_block = chunk * cdiv(cdiv(mamba_page, lay.attn1), chunk);
        lay.mamba_block_size = uint32_t(attn_block);
    } else {
        attn_block = grain * cdiv(mamba_page, uint64_t(grain) * lay.attn1);
    }
    if (lay.block_size < attn_block) {
        lay.block_size = uint32_t(attn_block);
        lay.raised = true;
    }
    if (s.mamba_mode != mamba_cache_mode::all) lay.mamba_block_size = lay.block_size;
    const uint64_t attn_page = uint64_t(lay.block_size) * lay.attn1;
    if (attn_page > mamba_page) lay.padding_pct = 100.0 * double(attn_page - mamba_page) / double(mamba_page);
}

uint64_t round_up(uint64_t a, uint64_t b) { return cdiv(a, b) * b; }

// kv_cache_planning.py _approximate_gcd: the d >= lower_bound that pads the counts least (sum of ru(x, d) - x).
uint64_t approximate_gcd(const std::vector<uint64_t> & xs, uint64_t lower_bound) {
    uint64_t best = lower_bound, best_pad = UINT64_MAX, hi = lower_bound;
    for (uint64_t x : xs) hi = std::max(hi, x);
    for (uint64_t d = std::max<uint64_t>(1, lower_bound); d <= hi; ++d) {
        uint64_t pad = 0;
        for (uint64_t x : xs) pad += x ? round_up(x, d) - x : 0;
        if (pad < best_pad) best = d, best_pad = pad;
    }
    return best;
}

// DeepSeek-V4 (vllm-frontier.md §3; vllm/models/deepseek_v4/attention.py, compressor.py, kv_cache_planning.py
// _get_kv_cache_config_deepseek_v4): fp8_ds_mla entries of 584 B (448 fp8 nope + 64 bf16 rope + 8 scale bytes), pages
// padded to 576; every layer a sliding-window MLA cache (block 64); C4 layers a compressed MLA cache and indexer keys
// (block B, B/4 entries) and two fp32 compressor states (block 4, window 8); C128 layers a compressed cache (B/128
// entries) and a state (block 8, window 128). The full-MLA pages make one layer tuple; num_layer_tuples =
// approximate_gcd of the spec counts; the SWA specs split into cdiv(n, tuples) groups; every group's block costs
// tuples x the tuple's bytes. DSV4-Flash at B 256: 5 groups, 22 tuples, 1,051,776 B per block.
vllm_layout dsv4_layout(const model_desc & m, const vllm_settings & s) {
    vllm_layout lay;
    lay.block_size = s.block_size;
    const uint64_t B = s.block_size, align = 576;
    const layer_cache * win = nullptr;
    uint64_t idx_dim = 0, n_c4 = 0, n_c128 = 0, n_win = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const layer_cache & c : m.caches[il]) {
            if (c.kind == cache_kind::window) win = &c, ++n_win;
            if (c.kind == cache_kind::compressed && c.ratio == 4) ++n_c4;
            if (c.kind == cache_kind::compressed && c.ratio == 128) ++n_c128;
            if (c.kind == cache_kind::indexer) idx_dim = c.width_k();
        }
    }
    if (win == nullptr) throw error("vllm: a compressed-attention model without a window cache is not modelled");
    const uint64_t hd = win->head_dim_k, rope = m.n_rot_mla ? m.n_rot_mla : 64;
    const uint64_t entry = (hd - rope) + 2 * rope + 8;
    const uint64_t swa_page = round_up(64 * entry, align);
    const uint64_t c4_page = n_c4 ? round_up(B / 4 * entry, align) : 0;
    const uint64_t idx_page = n_c4 && idx_dim ? round_up(B / 4 * (idx_dim + cdiv(idx_dim, 128) * 4), align) : 0;
    const uint64_t c128_page = n_c128 ? round_up(std::max<uint64_t>(1, B / 128) * entry, align) : 0;
    const uint64_t full_tuples = std::max(n_c4, n_c128);
    const uint64_t tuples = approximate_gcd({full_tuples, n_win, n_c4, n_c128}, full_tuples);
    lay.fixed_block_bytes = (c4_page + idx_page + c128_page) * tuples;
    lay.page = std::max({c4_page, idx_page, c128_page, swa_page});
    lay.group_size = uint32_t(tuples);
    lay.attn1 = entry;
    lay.n_head_kv_rank = 1;
    auto add = [&](const char * kind, uint32_t n, uint32_t block, uint32_t window) {
        lay.groups.push_back({kind, n, 0, block, 0});
        lay.group_layers.emplace_back();
        lay.group_window.push_back(window);
    };
    add("mla", uint32_t(n_c4 * (idx_page ? 2 : 1) + n_c128), uint32_t(B), 0);
    const uint64_t n_swa_groups = cdiv(n_win, tuples);
    for (uint64_t g = 0; g < n_swa_groups; ++g) {
        add("sliding_window", uint32_t(n_win / n_swa_groups + (g < n_win % n_swa_groups ? 1 : 0)), 64, win->window);
    }
    if (n_c4) add("sliding_window", uint32_t(n_c4 * (idx_page ? 2 : 1)), 4, 8);
    if (n_c128) add("sliding_window", uint32_t(n_c128), 8, 128);
    lay.notes.push_back(fmt::format("DeepSeek-V4 layout: {} groups, {} layer tuples, {} B per block (fp8_ds_mla entries of "
                                    "{} B, pages aligned to 576)", lay.groups.size(), tuples, lay.fixed_block_bytes, entry));
    return lay;
}

} // namespace

vllm_layout vllm_kv_layout(const model_desc & m, const vllm_settings & s) {
    for (const auto & layer : m.caches) {
        for (const auto & c : layer) {
            if (c.kind == cache_kind::compressed) return dsv4_layout(m, s);
        }
    }
    vllm_layout lay;
    lay.block_size = s.block_size;
    std::vector<layer_spec> spec(m.n_layer);
    std::vector<uint64_t> attn1(m.n_layer, 0);
    bool any_attn = false, any_mamba = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        spec[il].kind = spec_kind(m.kind_of(il));
        if (m.has_kv(il)) {
            uint32_t heads = 0;
            attn1[il] = attention_bytes_per_token(m, s, il, heads);
            if (!any_attn) lay.n_head_kv_rank = heads, lay.attn1 = attn1[il];
            any_attn = true;
            spec[il].window = m.attention_cache(il)->window;
            // --disable-hybrid-kv-cache-manager: unify_hybrid_kv_cache_specs turns every sliding / chunked spec into a
            // FullAttentionSpec at full length (vllm/v1/core/kv_cache_utils.py), one UniformType group
            if (s.disable_hybrid_kv_cache_manager && spec[il].window) spec[il].kind = "full_attention", spec[il].window = 0;
        }
        any_mamba |= m.is_recurrent(il);
    }
    uint64_t mamba_page = 0;
    if (any_mamba) {
        mamba_state_bytes(m, s, lay.mamba_conv, lay.mamba_ssm);
        mamba_page = lay.mamba_conv + lay.mamba_ssm;
    }
    if (any_attn && any_mamba && s.disable_hybrid_kv_cache_manager) {
        throw error("vllm: ValueError: Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one "
                    "unified type.");
    }
    if (s.disable_hybrid_kv_cache_manager) {
        lay.notes.push_back("Hybrid KV cache manager is disabled for this hybrid model, This means we do not enable any "
                            "optimizations for saving KV cache memory (e.g., dropping the KV cache outside the sliding "
                            "window). The compute of layers like sliding window is still saved.");
    }
    if (any_attn && any_mamba) align_hybrid(lay, s, m, mamba_page);
    lay.mamba_block_size = lay.mamba_block_size ? lay.mamba_block_size : lay.block_size;
    const uint64_t padded_mamba = any_attn ? std::max(mamba_page, uint64_t(lay.block_size) * lay.attn1) : mamba_page;

    lay.layer_page.assign(m.n_layer, 0);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.has_kv(il)) spec[il].page = uint64_t(lay.block_size) * attn1[il], spec[il].block = lay.block_size;
        if (m.is_recurrent(il)) spec[il].page = padded_mamba, spec[il].block = lay.mamba_block_size;
        lay.layer_page[il] = spec[il].page;
    }
    std::vector<uint32_t> cached;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (!spec[il].kind.empty()) cached.push_back(il);
    }
    if (cached.empty()) throw error("vllm: the model has no layer that holds a KV cache or state");
    const layer_spec & first = spec[cached[0]];
    const bool one_type = std::all_of(cached.begin(), cached.end(), [&](uint32_t il) {
        return spec[il].kind == first.kind && spec[il].window == first.window;
    });
    const bool same_page = std::all_of(cached.begin(), cached.end(), [&](uint32_t il) { return spec[il].page == first.page; });
    if (one_type) { // uniform spec, or UniformTypeKVCacheSpecs when pages differ: one group of every layer
        lay.uniform_type = !same_page;
        lay.page = 0;
        for (uint32_t il : cached) lay.page = std::max(lay.page, spec[il].page);
        lay.group_size = uint32_t(cached.size());
        lay.groups.push_back({first.kind, uint32_t(cached.size()), 0, first.block, 0});
        lay.group_layers.push_back(cached);
        lay.group_window.push_back(first.window);
        return lay;
    }
    // unify_kv_cache_spec_page_size: smaller pages take max_page / page times more tokens per block.
    uint64_t max_page = 0;
    for (uint32_t il : cached) max_page = std::max(max_page, spec[il].page);
    for (uint32_t il : cached) {
        if (max_page % spec[il].page != 0) {
            throw error(fmt::format("vllm: NotImplementedError: page size {} of layer {} does not divide the largest "
                                    "page {}; the KV cache specs cannot be unified", spec[il].page, il, max_page));
        }
        spec[il].block = uint32_t(spec[il].block * (max_page / spec[il].page));
        spec[il].page = max_page;
    }
    lay.page = max_page;
    // Bucket by spec, in first-seen order; group_size = min count, or max when max < 1.5 x min.
    std::vector<std::vector<uint32_t>> buckets;
    std::map<std::tuple<std::string, uint32_t, uint32_t>, size_t> index;
    for (uint32_t il : cached) {
        const auto key = std::make_tuple(spec[il].kind, spec[il].window, spec[il].block);
        if (!index.count(key)) index[key] = buckets.size(), buckets.emplace_back();
        buckets[index[key]].push_back(il);
    }
    size_t lo = SIZE_MAX, hi = 0;
    for (const auto & b : buckets) lo = std::min(lo, b.size()), hi = std::max(hi, b.size());
    lay.group_size = uint32_t(double(hi) < 1.5 * double(lo) ? hi : lo);
    for (const auto & b : buckets) {
        const size_t n_groups = cdiv(b.size(), lay.group_size);
        for (size_t g = 0; g < n_groups; ++g) {
            std::vector<uint32_t> layers;
            for (size_t i = g; i < b.size(); i += n_groups) layers.push_back(b[i]); // layers [g::num_groups]
            const uint32_t pad = lay.group_size - uint32_t(layers.size());
            lay.groups.push_back({spec[b[0]].kind, uint32_t(layers.size()), pad, spec[b[0]].block, 0});
            lay.group_layers.push_back(layers);
            lay.group_window.push_back(spec[b[0]].window);
        }
    }
    return lay;
}

void vllm_fill_per_request(vllm_layout & lay, const vllm_settings & s, uint64_t len) {
    const uint64_t mnbt = s.max_num_batched_tokens;
    for (size_t g = 0; g < lay.groups.size(); ++g) {
        vllm_group & grp = lay.groups[g];
        const uint64_t b = grp.block_size, w = lay.group_window[g];
        if (grp.kind == "sliding_window") {
            grp.per_request_blocks = cdiv(std::min(w - 1 + mnbt, len), b) + 1;
        } else if (grp.kind == "chunked") {
            grp.per_request_blocks = cdiv(std::min(w + mnbt, len), b);
        } else if (grp.kind == "mamba") {
            // MambaSpec.max_memory_usage_bytes (kv_cache_interface.py @bc8282e6): num_speculative_blocks =
            // num_speculative_tokens more pages under none and align (mamba/abstract.py @00b08dc4)
            const uint64_t spec = s.speculative.num_speculative_tokens;
            grp.per_request_blocks = s.mamba_mode == mamba_cache_mode::all   ? cdiv(len, b)
                                     : s.mamba_mode == mamba_cache_mode::align ? 2 + spec : 1 + spec;
        } else { // full attention and MLA: max_model_len spread over dcp ranks
            grp.per_request_blocks = cdiv(s.dcp > 1 ? cdiv(len, s.dcp) : len, b);
        }
    }
}

uint64_t vllm_stage_block_bytes(const vllm_layout & lay, uint32_t first, uint32_t n, uint32_t & n_tensors) {
    if (lay.fixed_block_bytes) { // DeepSeek-V4: one pool of layer tuples for every group (no PP split modelled)
        n_tensors = 0;
        for (const auto & g : lay.groups) n_tensors += g.n_layer;
        return lay.fixed_block_bytes;
    }
    const uint32_t end = first + n;
    if (lay.uniform_type) {
        uint64_t sum = 0;
        n_tensors = 0;
        for (uint32_t il = first; il < end; ++il) sum += lay.layer_page[il], n_tensors += lay.layer_page[il] != 0;
        return sum;
    }
    n_tensors = 0;
    for (const auto & layers : lay.group_layers) {
        const auto k = std::count_if(layers.begin(), layers.end(), [&](uint32_t il) { return il >= first && il < end; });
        n_tensors = std::max<uint32_t>(n_tensors, uint32_t(k));
    }
    return uint64_t(n_tensors) * lay.page;
}

} // namespace kvfit::detail
