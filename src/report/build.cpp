// Builds the report struct that every renderer prints (include/kvfit/report.h).
#include "kvfit/report.h"

#include <algorithm>

namespace kvfit {
namespace {

const std::vector<uint64_t> k_default_contexts = {8192, 32768, 131072, 262144};

uint64_t total_kv(const model_desc & m, const llamacpp_settings & s, uint64_t n_ctx) {
    llamacpp_settings t = s;
    t.n_ctx = n_ctx;
    const llamacpp_context c = llamacpp_context_size(m, t);
    uint64_t bytes = 0;
    for (const auto & kv : llamacpp_kv_caches(m, t, c)) bytes += kv.bytes();
    return bytes;
}

std::vector<cache_type_fit> fit_cache_types(const model_desc & m, const llamacpp_settings & s,
                                            const placement_settings & p, const std::vector<device_spec> & gpus,
                                            uint64_t margin) {
    std::vector<ggml_type> types = {ggml_type::f16, ggml_type::q8_0, ggml_type::q4_0};
    for (ggml_type t : {s.type_k, s.type_v}) {
        if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    }
    std::vector<cache_type_fit> out;
    for (ggml_type t : types) {
        cache_type_fit f;
        f.type = t;
        llamacpp_settings u = s;
        u.type_k = u.type_v = t;
        f.allowed = !(ggml_is_quantized(t) && s.flash_attn == flash_attn_mode::off);
        if (f.allowed) f.max_n_ctx = max_fitting_n_ctx(m, u, p, gpus, margin);
        out.push_back(f);
    }
    return out;
}

// When the GPUs cannot hold everything: the largest -ngl that fits (fits() is monotone in -ngl: fewer layers
// on the GPU never need more GPU memory) and, for MoE, the smallest --n-cpu-moe that fits with every layer
// offloaded — llama.cpp --fit makes the same two moves (common_params_fit_impl in common/fit.cpp).
void find_offload(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                  const std::vector<device_spec> & gpus, uint64_t margin, fit_report & f) {
    const int32_t n_all = int32_t(m.n_layer + m.n_layer_mtp + 1);
    auto plan_with = [&](int32_t ngl, uint32_t n_cpu_moe) {
        placement_settings q = p;
        q.n_gpu_layers = ngl;
        q.n_cpu_moe = n_cpu_moe;
        return plan_llamacpp(m, s, q, gpus, margin);
    };
    auto host_total = [](const llamacpp_plan & pl) { return pl.devices.back().used.total(); };
    if (plan_with(0, 0).fits()) {
        int32_t lo = 0, hi = n_all; // lo fits, hi does not
        while (hi - lo > 1) {
            const int32_t mid = (lo + hi) / 2;
            (plan_with(mid, 0).fits() ? lo : hi) = mid;
        }
        f.offload_n_gpu_layers = lo;
        f.offload_host_bytes = host_total(plan_with(lo, 0));
    }
    if (m.weights.expert_params() > 0 && plan_with(-1, m.n_layer).fits()) {
        uint32_t lo = 0, hi = m.n_layer; // lo does not fit (the requested plan), hi fits
        while (hi - lo > 1) {
            const uint32_t mid = (lo + hi) / 2;
            (plan_with(-1, mid).fits() ? hi : lo) = mid;
        }
        f.offload_n_cpu_moe = int32_t(hi);
        f.offload_moe_host_bytes = host_total(plan_with(-1, hi));
    }
}

} // namespace

report make_report(const model_desc & m, const warnings & warn, const llamacpp_settings & s,
                   const placement_settings & p, const std::vector<uint64_t> & user_contexts,
                   const std::vector<device_spec> & gpus, uint64_t margin_bytes) {
    report r;
    r.model = m;
    r.warn = warn;
    r.settings = s;
    r.placement = p;
    const bool fa = s.flash_attn != flash_attn_mode::off; // V rows are padded without flash attention
    r.kv_bytes_per_token = kv_bytes_per_token(m, s.type_k, s.type_v, s.mla, fa, s.release);
    r.kv_bytes_per_token_if_all_full = kv_bytes_per_token_if_all_full(m, s.type_k, s.type_v, s.mla, fa, s.release);
    r.kv_bytes_per_token_f16 = kv_bytes_per_token(m, ggml_type::f16, ggml_type::f16, s.mla, fa, s.release);
    r.kv_bytes_per_token_q8_0 = kv_bytes_per_token(m, ggml_type::q8_0, ggml_type::q8_0, s.mla, fa, s.release);
    llamacpp_context one_sequence;
    one_sequence.n_seq = 1;
    r.state_bytes_per_sequence = llamacpp_recurrent(m, one_sequence).bytes();

    const model_desc full = all_full_attention_variant(m);
    for (uint64_t n_ctx : user_contexts.empty() ? k_default_contexts : user_contexts) {
        r.contexts.push_back({n_ctx, total_kv(m, s, n_ctx), total_kv(full, s, n_ctx)});
    }
    r.requested_from_model = user_contexts.empty();
    r.requested_n_ctx = user_contexts.empty() ? m.n_ctx_train
                                              : *std::max_element(user_contexts.begin(), user_contexts.end());
    llamacpp_settings at = s;
    at.n_ctx = r.requested_n_ctx;
    r.plan = plan_llamacpp(m, at, p, gpus, margin_bytes);

    if (gpus.empty()) return r;
    fit_report f;
    f.gpus = gpus;
    f.margin_bytes = margin_bytes;
    f.max_n_ctx = fit_cache_types(m, s, p, gpus, margin_bytes);
    f.max_n_ctx_if_all_full = max_fitting_n_ctx(full, s, p, gpus, margin_bytes);
    f.recommended_n_ctx = r.requested_n_ctx;
    if (!r.plan.fits()) {
        f.recommended_n_ctx = 0;
        for (const auto & c : f.max_n_ctx) {
            if (c.type == s.type_k) f.recommended_n_ctx = c.max_n_ctx;
        }
    }
    if (!r.plan.fits()) find_offload(m, at, p, gpus, margin_bytes, f);
    int64_t room = 0;
    for (const auto & d : r.plan.devices) {
        if (!d.is_host) room += d.free_bytes() + int64_t(d.used.weights_bytes);
    }
    f.weights_bytes_that_fit = room > 0 ? uint64_t(room) + m.weights.token_embd.bytes : 0;
    r.fit = f;
    return r;
}

} // namespace kvfit
