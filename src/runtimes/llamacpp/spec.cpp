// Speculative decoding in llama-server (include/kvfit/llamacpp.h, "Speculative decoding"): the MTP draft context
// (--spec-type draft-mtp, --spec-draft-n-max) and a draft model (-md, -ngld, -ctkd, -ctvd, -devd). Rules and their
// measurements: docs/rules/llamacpp-spec.md sections 1-2, tests/conformance/measured/spec-{mtp,draft,k6}.*.jsonl
// (llama.cpp v0.5.0 and 5b4ebc5 gave identical bytes on every shared row). File:line citations are v0.5.0
// (/work/scratch/llama050/src); 5b4ebc5 has the same code within a few lines.
#include "kvfit/llamacpp.h"

#include "kvfit/error.h"

#include <algorithm>
#include <fmt/format.h>
#include "core/util.h"

namespace kvfit {
namespace {

// The cache the NextN block keeps (create_memory, llama-model.cpp:2539-2546 / 2677-2683: a plain llama_kv_cache
// filtered to il >= n_layer; deepseek32 / glm-dsa :2322-2344: the MLA latent only, no indexer; deepseek4 :2469-2489:
// a window cache). The NextN block is a decoder block of the trunk's attention shape, so its cache is the trunk's
// first full (or latent) attention cache; a model whose every attention cache is windowed (DeepSeek-V4) gives the
// window cache. Returns the layer index whose cache stands for it, or -1 when no layer has attention.
int32_t nextn_reference_layer(const model_desc & m) {
    int32_t window = -1;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_cache * c = m.attention_cache(il);
        if (!c) continue;
        if (c->kind == cache_kind::window || c->kind == cache_kind::chunked) {
            if (window < 0) window = int32_t(il);
            continue;
        }
        return int32_t(il);
    }
    return window;
}

uint32_t nextn_layers(const model_desc & m) { return m.n_layer_mtp ? m.n_layer_mtp : m.n_layer_mtp_apart; }

// Upper bound for a graph kvfit has not derived: the target's own compute buffer at the draft context's sizes (one
// decoder block + the head never needs more than the whole trunk: measured MTP / target 0.48 DeepSeek-V3.2, 0.34
// GLM-5, 0.36 Nemotron-3-Super, 0.77 Qwen3.5-35B-A3B at 65536, spec-mtp.v0.5.0.jsonl).
uint64_t target_bound(const model_desc & m, const llamacpp_settings & ds, const llamacpp_context & dc) {
    llamacpp_settings t = ds;
    t.spec = {};
    return llamacpp_compute_bytes(m, t, dc);
}

} // namespace

bool parse_spec_type(std::string_view value) {
    // common/speculative.cpp:33-45 common_speculative_type_from_name_map; kvfit models the types with memory of
    // their own that llama-server builds from a NextN block (draft-mtp) or a -md model (draft-simple)
    bool mtp = false;
    size_t start = 0;
    while (start <= value.size()) {
        const size_t end = std::min(value.find(',', start), value.size());
        const std::string_view t = value.substr(start, end - start);
        start = end + 1;
        if (t == "draft-mtp") mtp = true;
        else if (t == "none" || t == "draft-simple") continue;
        else if (t == "draft-eagle3" || t == "draft-dflash" || t == "draft-dspark" || t.rfind("ngram-", 0) == 0) {
            throw error(fmt::format("--spec-type '{}': {} is not modelled by kvfit (draft-mtp and draft-simple with -md are)",
                                    value, t));
        } else {
            throw error(fmt::format("--spec-type '{}': unknown type (allowed: none, draft-simple, draft-mtp)", value));
        }
    }
    return mtp;
}

std::vector<int32_t> parse_draft_devices(std::string_view value) { return parse_device_list("-devd", value); }

std::vector<int32_t> parse_device_list(std::string_view flag, std::string_view value) {
    // common/arg.cpp parse_device_list: comma-separated backend device names, "none" = no device
    if (value == "none") return {-1};
    std::vector<int32_t> out;
    size_t start = 0;
    while (start <= value.size()) {
        const size_t end = std::min(value.find(',', start), value.size());
        const std::string_view d = value.substr(start, end - start);
        start = end + 1;
        size_t digits = d.size();
        while (digits > 0 && d[digits - 1] >= '0' && d[digits - 1] <= '9') --digits;
        if (digits == 0 || digits == d.size() || d.size() - digits > 3) {
            throw error(fmt::format("{} '{}': expected device names such as CUDA0,CUDA1 or none", flag, value));
        }
        out.push_back(std::stoi(std::string(d.substr(digits))));
    }
    return out;
}

llamacpp_settings llamacpp_draft_settings(const model_desc & dm, const llamacpp_settings & t, const llamacpp_context & tc) {
    llamacpp_settings d = t;
    // the draft context holds as many tokens per sequence as the target context: cparams.n_ctx = llama_n_ctx(ctx_tgt)
    // (common/speculative.cpp:2550); n_seq, n_batch, n_ubatch, kv_unified and flash attention are the target's
    // (common_context_params_to_llama of the same params); build 9893 sized it at n_ctx 0 -> n_ctx_train
    d.n_ctx = t.spec.draft_ctx == spec_draft_ctx::n_ctx_train && dm.n_ctx_train ? dm.n_ctx_train : tc.n_ctx;
    // common_base_params_to_speculative (:2496-2501): -ctkd/-ctvd, n_outputs_max = n_parallel, 1 per sequence
    d.type_k = t.spec.type_k;
    d.type_v = t.spec.type_v;
    d.n_outputs_max = t.n_seq;
    d.server_outputs = false; // set explicitly above, not by llama-server's rule for the target
    d.spec = {}; // n_rs_seq = 0 (:2554): no snapshots, no draft of its own
    return d;
}

mtp_buffers llamacpp_mtp_buffers(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c) {
    const uint32_t n_nextn = nextn_layers(m);
    // llama_init_from_model refuses an MTP context on a model without NextN layers (llama-context.cpp:3822-3826)
    if (n_nextn == 0) throw error("--spec-type draft-mtp: the model has no NextN (MTP) layers (nextn_predict_layers 0)");
    const int32_t ref = nextn_reference_layer(m);
    mtp_buffers b;
    if (ref < 0) return b;
    const layer_cache & cache = *m.attention_cache(uint32_t(ref));
    // cells per stream: n_ctx_seq of the draft context; a window cache (DeepSeek-V4's MTP layer) caps them as
    // llama_kv_cache_iswa does: GGML_PAD(min(n_ctx_seq, n_swa + n_ubatch), 256) (measured 768 cells at 4096 and 65536)
    uint64_t cells = c.n_ctx_seq;
    if (cache.kind == cache_kind::window || cache.kind == cache_kind::chunked) {
        cells = std::min<uint64_t>(c.n_ctx_seq, detail::round_up(uint64_t(cache.window) * (s.kv_unified ? c.n_seq : 1) + c.n_ubatch, 256));
    }
    uint64_t cell = llamacpp_cell_bytes(m, uint32_t(ref), cache, s.type_k, s.type_v, s.mla, c.flash_attn, s.release);
    // DeepSeek-V4: the trunk's llama_kv_cache_dsv4 keeps K only (dsv4_make_k_only), so kvfit's window cache has no V;
    // the MTP context gets a plain llama_kv_cache_iswa (llama-model.cpp:2469-2489) and hparams.is_mla() is false, so it
    // keeps a V of n_embd_v_gqa(il) = n_head_kv x n_embd_head_v beside K (has_v = !is_mla, llama-kv-cache.cpp:231;
    // measured 0.75 + 0.75 MiB at 768 cells f16, spec-mtp.*.jsonl)
    const bool dsv4 = std::any_of(m.caches.begin(), m.caches.end(), [](const auto & cs) {
        return std::any_of(cs.begin(), cs.end(), [](const layer_cache & x) { return x.kind == cache_kind::compressed; });
    });
    if (const uint64_t v = uint64_t(m.n_head_kv[uint32_t(ref)]) * m.head_dim_v[uint32_t(ref)]; dsv4 && v > 0) {
        cell = ggml_row_size(s.type_k, cache.width_k()) + ggml_row_size(s.type_v, v);
    }
    b.n_layer_kv = n_nextn;
    b.kv_bytes = uint64_t(n_nextn) * cells * c.n_stream * cell;

    // Compute: the MTP graph (models/qwen35.cpp build MTP: eh_proj over [embd; hidden], one decoder block, the shared
    // head) reserved for n_ubatch tokens and n_outputs_max = n_parallel outputs. Not derived tensor by tensor: fitted
    // on the rows measured with the CPU build (spec-mtp / spec-k6 jsonl, both releases alike) for a dense gated FFN with
    // flash attention, with E = [n_embd, T], F = [n_ff, T] f32, M = the f16 KQ mask [n_kv, T / n_stream, 1, n_stream]
    // and the inputs I = inp_tokens [T] + two M-RoPE position inputs [T x n_pos_per_embd] + inp_out_ids, i32:
    //   I + max(3F + 2E + (M <= 2E ? M : 0)   (the FFN stage; a small mask stays below it, a large one is reused),
    //           2F + M)                        (the attention stage over the whole mask)
    // Exact on Qwen3.5/3.6-27B -ub 1024 at 4096, 184,320, 190,464 and 262,144 (264,278,048 ... 679,514,144 B: K6) and on
    // Qwen3.5-9B -ub 512 at 4096 and 32768; elsewhere on the measured Qwen3.5 rows within 8.3 % (-6.2 % Qwen3.5-27B -ub 512
    // at 32768, +3.7 % Qwen3.5-9B at 65536, +8.3 % / -6.8 % with 2 sequences). Other graphs (MoE, MLA, windows, flash
    // attention off): the target's compute buffer at the same sizes, an upper bound.
    const uint64_t n_seq = std::max<uint32_t>(1, c.n_seq);
    const uint64_t T = (uint64_t(c.n_ubatch) + n_seq - 1) / n_seq * n_seq;
    const bool dense = m.n_expert == 0 && m.ffn_gated && m.count(layer_kind::mla) == 0 && m.n_ff[uint32_t(ref)] > 0;
    if (dense && c.flash_attn && cache.kind == cache_kind::full) {
        auto pad32 = [](uint64_t n) { return (n + 31) / 32 * 32; };
        const uint64_t E = uint64_t(m.n_embd) * T * 4, F = uint64_t(m.n_ff[uint32_t(ref)]) * T * 4;
        const uint64_t M = cells * T * 2;
        const uint64_t outputs = std::min<uint64_t>(T, c.n_outputs_max ? c.n_outputs_max : T);
        const uint64_t I = pad32(4 * T) + 2 * pad32(4 * T * m.n_pos_per_embd) + pad32(4 * outputs);
        b.compute_bytes = I + std::max(3 * F + 2 * E + (M <= 2 * E ? M : 0), 2 * F + M);
        b.fitted = true;
        b.why = "the MTP compute buffer is estimated (fitted on the Qwen3.5 rows measured with llama.cpp's CPU build: exact "
                "to 8 %)";
    } else if (const std::string unmodelled = llamacpp_compute_unmodelled(m, s); !unmodelled.empty()) {
        // the target's own figure is an estimate (warned): no bound either (DeepSeek-V4-Flash: the MTP context measured
        // up to 17 % above the target's estimate, spec-mtp.*.jsonl)
        b.compute_bytes = target_bound(m, s, c);
        b.why = "the MTP compute buffer is estimated as the target's, which is not modelled for this graph either";
    } else {
        b.compute_bytes = target_bound(m, s, c);
        b.upper_bound = true;
        b.why = "the MTP compute buffer is bounded by the target's (its graph, one block and the head, is not derived for "
                "this model: measured 34-77 % of the target's)";
    }
    return b;
}

void llamacpp_add_spec(const model_desc & m, const std::vector<device_spec> & gpus, llamacpp_plan & p) {
    const llamacpp_spec & sp = p.settings.spec;
    if (!sp.active()) return;
    auto & u = p.spec;
    // the device that holds the NextN block: load_tensors places blocks by index, the NextN block(s) last with the
    // output layer (llama-model.cpp load_tensors: il >= n_layer + 1 - ngl; the output layer whenever ngl >= 1)
    size_t nextn_dev = p.devices.size() - 1; // the host
    for (size_t i = 0; i < p.devices.size(); ++i) {
        if (p.devices[i].has_output && !p.devices[i].is_host) nextn_dev = i;
    }
    if (sp.mtp) {
        const llamacpp_settings ds = llamacpp_draft_settings(m, p.settings, p.ctx);
        const llamacpp_context dc = llamacpp_context_size(m, ds);
        const mtp_buffers b = llamacpp_mtp_buffers(m, ds, dc);
        u.mtp = true;
        u.ctx = dc;
        u.n_layer_kv = b.n_layer_kv;
        u.compute_estimate = b.estimate;
        u.compute_upper_bound = b.upper_bound;
        u.compute_fitted = b.fitted;
        u.why = b.why;
        buffer_set add;
        // load_mtp (common.cpp:1713): with draft-mtp the NextN tensors load (skipped otherwise: weights.mtp)
        add.weights_bytes = m.weights.mtp.bytes;
        add.kv_bytes = b.kv_bytes;
        add.compute_bytes = b.compute_bytes;
        // its own output buffer in host memory, n_vocab x n_seq x 4 B (output_reserve, llama-context.cpp:2107-2128;
        // measured 0.95 MiB for Qwen3.6-27B, spec-k6 "raw")
        add.output_bytes = llamacpp_output_bytes(m, dc);
        // --no-kv-offload keeps the MTP cache in host memory with the others
        device_usage & d = p.devices[nextn_dev];
        device_usage & host = p.devices.back();
        d.used.weights_bytes += add.weights_bytes, d.spec.weights_bytes += add.weights_bytes;
        device_usage & kvd = p.placement.no_kv_offload ? host : d;
        kvd.used.kv_bytes += add.kv_bytes, kvd.spec.kv_bytes += add.kv_bytes;
        d.used.compute_bytes += add.compute_bytes, d.spec.compute_bytes += add.compute_bytes;
        host.used.output_bytes += add.output_bytes, host.spec.output_bytes += add.output_bytes;
        u.bytes += add;
    }
    if (sp.draft) {
        const model_desc & dm = *sp.draft;
        const llamacpp_settings ds = llamacpp_draft_settings(dm, p.settings, p.ctx);
        placement_settings dp;
        dp.n_gpu_layers = sp.draft_n_gpu_layers < 0 ? -1 : sp.draft_n_gpu_layers; // -1 auto / -2 all: every layer
        dp.no_kv_offload = p.placement.no_kv_offload;
        dp.mmap = p.placement.mmap;
        dp.cpu = p.placement.cpu;
        dp.repack = p.placement.repack;
        dp.no_host = p.placement.no_host;
        // -devd (common_base_params_to_speculative :2475-2490): its own devices, default the target's
        std::vector<size_t> map;      // draft GPU i -> index into p.devices
        std::vector<device_spec> dg;
        if (sp.draft_devices.empty()) {
            dg = gpus;
            for (size_t i = 0; i < gpus.size(); ++i) map.push_back(i);
        } else if (!(sp.draft_devices.size() == 1 && sp.draft_devices[0] < 0)) {
            for (int32_t i : sp.draft_devices) {
                if (i < 0 || size_t(i) >= gpus.size()) {
                    throw error(fmt::format("-devd: device {} named, but the plan has {} GPU{}", i, gpus.size(),
                                            gpus.size() == 1 ? "" : "s"));
                }
                dg.push_back(gpus[size_t(i)]);
                map.push_back(size_t(i));
            }
        }
        const llamacpp_plan dplan = plan_llamacpp(dm, ds, dp, dg, 0);
        u.draft = true;
        if (!u.mtp) u.ctx = dplan.ctx;
        for (const auto & dd : dplan.devices) {
            const size_t to = dd.is_host ? p.devices.size() - 1 : map[size_t(&dd - dplan.devices.data())];
            p.devices[to].used += dd.used;
            p.devices[to].spec += dd.used;
            u.bytes += dd.used;
        }
        if (const std::string why = llamacpp_compute_unmodelled(dm, ds); !why.empty()) {
            u.why += std::string(u.why.empty() ? "" : "; ") + "draft compute: " + why;
        }
    }
    p.total += u.bytes;
}

} // namespace kvfit
