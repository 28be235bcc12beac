// SGLang's static memory pool (RULES §5): KVCacheConfigurator._profile_available_bytes,
// _handle_max_mamba_cache, DefaultPoolConfigurator._compute_cell_size (sglang/srt/mem_cache/pool_configurator.py,
// 2026 main), and the max_running_requests default.
#include "kvfit/sglang.h"
#include "runtimes/common/torch.h"

#include "kvfit/error.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kvfit {

using detail::cdiv;

namespace {

// Weights on one TP rank: everything / tp (linear layers and the vocab-parallel embedding and head).
uint64_t rank_weights(const model_desc & m, uint32_t tp) {
    const uint32_t s = detail::torch_dtype_bytes(m.dtype, 2, "dtype");
    auto bytes = [&](const weight_group & g) { return detail::weight_bytes(g, s); };
    uint64_t b = bytes(m.weights.token_embd) + bytes(m.weights.output) + bytes(m.weights.other);
    for (const auto & g : m.weights.layers) b += bytes(g);
    return b / tp;
}

// cell_size: bytes of one token in the pool on one rank. MHA: H_kv(tp) x (D_k + D_v) x s per full layer;
// MLA: (kv_lora_rank + rope) x s per layer, not divided by tp; sliding layers weighted by swa_full_tokens_ratio.
uint64_t cell_bytes(const model_desc & m, const sglang_settings & s, uint32_t es) {
    double cell = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_cache * a = m.attention_cache(il);
        if (a == nullptr) continue;
        if (a->kind == cache_kind::latent) {
            cell += double(a->width_k()) * es;
            continue;
        }
        const uint64_t heads = std::max<uint32_t>(1, a->n_head / s.tp);
        const double per = double(heads * (a->head_dim_k + a->head_dim_v) * es);
        cell += m.is_swa(il) ? s.swa_full_tokens_ratio * per : per;
    }
    return uint64_t(std::ceil(cell));
}

} // namespace

sglang_plan plan_sglang(const model_desc & m, const sglang_settings & s_in, const device_spec & gpu) {
    sglang_plan p;
    sglang_settings s = s_in;
    if (s.mem_fraction_static == 0) {
        s.mem_fraction_static = 0.85;
        p.notes.push_back("--mem-fraction-static 0.85 assumed: SGLang chooses it from GPU memory and TP in "
                          "server_args (not modelled); pin it");
    }
    if (!(s.mem_fraction_static > 0 && s.mem_fraction_static < 1)) {
        throw error(fmt::format("--mem-fraction-static {}: must be in (0, 1)", s.mem_fraction_static));
    }
    if (s.tp == 0 || s.page_size == 0) throw error("sglang: --tp and --page-size must be at least 1");
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.n_head[il] != 0 && m.n_head[il] % s.tp != 0) {
            throw error(fmt::format("sglang: --tp {} does not divide the {} attention heads", s.tp, m.n_head[il]));
        }
    }
    const uint32_t model_s = detail::torch_dtype_bytes(m.dtype, 2, "dtype");
    uint32_t es = model_s;
    if (s.kv_cache_dtype == "fp8_e4m3" || s.kv_cache_dtype == "fp8_e5m2") es = 1;
    else if (s.kv_cache_dtype != "auto") {
        throw error(fmt::format("--kv-cache-dtype '{}': expected auto, fp8_e4m3 or fp8_e5m2", s.kv_cache_dtype));
    }
    s.context_length = s.context_length ? s.context_length : m.n_ctx_train;
    p.context_length = s.context_length;

    // rest = free_after_weights - pre_model_load_free x (1 - fraction) = pre_free x fraction - weights
    const uint64_t overhead = s.pre_load_overhead_bytes.value_or(512ull << 20);
    if (!s.pre_load_overhead_bytes) p.notes.push_back("0.50 GiB in use before the weights load (CUDA context): kvfit default");
    const uint64_t pre_free = gpu.memory_bytes > overhead ? gpu.memory_bytes - overhead : 0;
    p.weights_bytes = rank_weights(m, s.tp);
    p.rest_bytes = int64_t(double(pre_free) * s.mem_fraction_static) - int64_t(p.weights_bytes);
    p.cell_bytes = cell_bytes(m, s, es);

    const uint32_t n_rec = m.count(layer_kind::recurrent);
    int64_t kv = p.rest_bytes;
    if (n_rec > 0 && p.rest_bytes > 0) {
        uint64_t conv = 0, ssm = 0;
        const uint32_t ssm_s = detail::torch_dtype_bytes(m.ssm_dtype, model_s, "mamba_ssm_dtype");
        detail::recurrent_state_bytes(m, s.tp, model_s, ssm_s, conv, ssm);
        p.mamba_bytes_per_request = uint64_t(n_rec) * (conv + ssm);
        if (s.max_mamba_cache_size) {
            p.mamba_slots = s.max_mamba_cache_size;
            kv -= int64_t(p.mamba_slots * p.mamba_bytes_per_request);
        } else if (s.disable_radix_cache && s.max_running_requests) {
            p.mamba_slots = s.max_running_requests;
            kv -= int64_t(p.mamba_slots * p.mamba_bytes_per_request);
        } else { // mamba_budget = rest x r / (1 + r)
            const double r = s.mamba_full_memory_ratio;
            const double budget = double(p.rest_bytes) * r / (1 + r);
            p.mamba_slots = uint64_t(budget / double(p.mamba_bytes_per_request));
            kv -= int64_t(budget);
        }
    }
    p.kv_pool_bytes = kv > 0 ? uint64_t(kv) : 0;
    p.max_total_num_tokens = p.cell_bytes ? p.kv_pool_bytes / p.cell_bytes / s.page_size * s.page_size : 0;

    // max_running_requests: clamp(tokens / context_len x 512, 2048, 4096), at most tokens / 2, and for hybrids
    // at most mamba slots / ratio (1 with the radix cache off; 2 assumed with it on).
    uint64_t mrr = s.max_running_requests;
    if (mrr == 0) {
        const double by_len = double(p.max_total_num_tokens) / double(std::max<uint64_t>(1, s.context_length)) * 512;
        mrr = uint64_t(std::clamp(by_len, 2048.0, 4096.0));
        mrr = std::min(mrr, p.max_total_num_tokens / 2);
    }
    if (n_rec > 0) mrr = std::min<uint64_t>(mrr, p.mamba_slots / (s.disable_radix_cache ? 1 : 2));
    p.max_running_requests = mrr;
    p.settings = s;

    if (p.rest_bytes <= 0) {
        p.errors.push_back(fmt::format("Not enough memory: the weights take {:.2f} GiB of the {:.2f} GiB static budget; "
                                       "increase --mem-fraction-static to at least {:.3f}",
                                       double(p.weights_bytes) / double(1ull << 30),
                                       double(pre_free) * s.mem_fraction_static / double(1ull << 30),
                                       double(p.weights_bytes) / double(std::max<uint64_t>(1, pre_free))));
    } else if (p.max_total_num_tokens < s.context_length) {
        p.errors.push_back(fmt::format("the pool holds {} tokens, fewer than one request of --context-length {}",
                                       p.max_total_num_tokens, s.context_length));
    } else if (n_rec > 0 && p.max_running_requests == 0) {
        p.errors.push_back("no mamba cache slot fits: lower --mamba-full-memory-ratio or raise --mem-fraction-static");
    }
    return p;
}

} // namespace kvfit
