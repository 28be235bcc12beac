// The human report (include/kvfit/report.h: render_text). Prints only what make_report computed.
#include "kvfit/report.h"
#include "kvfit/printable.h"

#include <fmt/format.h>

namespace kvfit {
namespace {

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
    return out;
}

// "8 layers x 2 (K, V) x 4 KV heads x 256 head_dim x 2 B" when every growing cache is the same attention cache.
std::string per_token_formula(const model_desc & m, const llamacpp_settings & s) {
    uint32_t n = 0;
    layer_cache ref;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (!c.grows_with_ctx()) continue;
            if (!c.is_attention() || (n > 0 && !(c == ref))) return "";
            ref = c;
            ++n;
        }
    }
    if (n == 0 || s.type_k != s.type_v || ggml_is_quantized(s.type_k)) return "";
    const uint32_t bytes = ggml_traits(s.type_k).type_size;
    if (ref.kind == cache_kind::latent && s.mla == mla_layout::k_only) {
        return fmt::format("{} MLA layers x {} latent (K only) x {} B", n, ref.head_dim_k, bytes);
    }
    if (ref.kind == cache_kind::latent) return "";
    if (ref.head_dim_k == ref.head_dim_v) {
        return fmt::format("{} layers x 2 (K, V) x {} KV heads x {} head_dim x {} B", n, ref.n_head, ref.head_dim_k, bytes);
    }
    return fmt::format("{} layers x {} KV heads x ({} K + {} V) x {} B", n, ref.n_head, ref.head_dim_k, ref.head_dim_v,
                       bytes);
}

std::string gib(uint64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(1ull << 30)); }

std::string type_name(ggml_type t) { return std::string(ggml_traits(t).name); }

void render_fit(std::string & out, const report & r) {
    const fit_report & f = *r.fit;
    const llamacpp_plan & p = r.plan;
    out += fmt::format("\nFit with llama.cpp on {} GPU{} (", f.gpus.size(), f.gpus.size() == 1 ? "" : "s");
    for (size_t i = 0; i < f.gpus.size(); ++i) out += fmt::format("{}{}", i ? " + " : "", human_bytes(f.gpus[i].memory_bytes));
    out += fmt::format("), keeping {} free per GPU (llama.cpp --fit's default target; --margin changes it)\n",
                       human_bytes(f.margin_bytes));
    out += fmt::format("  n_ctx {}{} -> llama.cpp sets n_ctx {}, n_ctx_seq {}, {} sequence{}, n_ubatch {}, flash attention {}\n",
                       with_commas(r.requested_n_ctx),
                       r.requested_from_model ? " (no -c: llama-server's default is the model's training context)" : "",
                       with_commas(p.ctx.n_ctx), with_commas(p.ctx.n_ctx_seq), p.ctx.n_seq, p.ctx.n_seq == 1 ? "" : "s",
                       p.ctx.n_ubatch, p.ctx.flash_attn ? "on" : "off");
    out += fmt::format("  {:<8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "device", "weights", "KV cache",
                       "state", "output", "compute", "total", "capacity");
    for (const auto & d : p.devices) {
        const buffer_set & u = d.used;
        out += fmt::format("  {:<8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}{}\n", d.name, human_bytes(u.weights_bytes),
                           human_bytes(u.kv_bytes), human_bytes(u.state_bytes), human_bytes(u.output_bytes),
                           human_bytes(u.compute_bytes), human_bytes(u.total()),
                           d.is_host ? "RAM" : human_bytes(d.capacity_bytes),
                           d.is_host ? "" : (d.fits() ? "  fits" : fmt::format("  OVER by {} (capacity minus margin)", human_bytes(uint64_t(-d.free_bytes())))));
    }
    out += fmt::format("  offloaded {}/{} layers to the GPU (-ngl counts the output layer)\n", p.n_gpu_layers,
                       r.model.n_layer + r.model.n_layer_mtp + 1);
    if (p.fits()) {
        const device_usage & host = p.devices.back();
        const bool on_host = host.n_layers > 0 || host.used.kv_bytes + host.used.state_bytes > 0 ||
                             host.used.weights_bytes > r.model.weights.token_embd.bytes + r.model.weights.other.bytes;
        out += on_host ? fmt::format("  FITS the GPU memory: n_ctx {} with {} K / {} V, but with {} in host memory "
                                     "(the CPU does part of the work: slower than a full offload).\n",
                                     with_commas(r.requested_n_ctx), type_name(r.settings.type_k),
                                     type_name(r.settings.type_v), human_bytes(host.used.total()))
                       : fmt::format("  FITS: n_ctx {} with {} K / {} V runs fully on the GPU.\n",
                                     with_commas(r.requested_n_ctx), type_name(r.settings.type_k),
                                     type_name(r.settings.type_v));
    } else {
        out += fmt::format("  DOES NOT FIT: n_ctx {} needs more than the GPU holds. llama.cpp would not refuse: with --fit "
                           "(on by default) it shrinks the context or moves layers to the CPU, and with a fixed -ngl it "
                           "keeps fewer layers on the GPU; either way generation slows down sharply.\n",
                           with_commas(r.requested_n_ctx));
    }
    out += "  Largest n_ctx that fits the GPU memory with these placement flags, by KV cache type (-ctk/-ctv):\n";
    for (const auto & c : f.max_n_ctx) {
        if (!c.allowed) {
            out += fmt::format("    {:<7} needs flash attention (-fa on)\n", type_name(c.type));
            continue;
        }
        out += fmt::format("    {:<7} {:>9}{}\n", type_name(c.type), with_commas(c.max_n_ctx),
                           c.max_n_ctx == 0 ? "  (nothing fits: smaller weights or more GPU memory needed)" : "");
    }
    out += fmt::format("    if all {} layers were full attention ({}): {}\n", r.model.n_layer, type_name(r.settings.type_k),
                       with_commas(f.max_n_ctx_if_all_full));
    if (!p.fits()) {
        out += "  What would fit instead:\n";
        for (const auto & c : f.max_n_ctx) {
            if (c.allowed && c.max_n_ctx > 0) {
                out += fmt::format("    -c {} with -ctk {} -ctv {}\n", c.max_n_ctx, type_name(c.type), type_name(c.type));
            }
        }
        const uint32_t n_all = r.model.n_layer + r.model.n_layer_mtp + 1;
        if (f.offload_n_gpu_layers >= 0) {
            out += fmt::format("    -ngl {} (of {}): the first {} blocks run on the CPU from host RAM ({} in host memory) "
                               "at n_ctx {} — this is the spill: it fits, but decoding slows down sharply\n",
                               f.offload_n_gpu_layers, n_all, n_all - std::min<uint32_t>(n_all, f.offload_n_gpu_layers),
                               human_bytes(f.offload_host_bytes), with_commas(r.requested_n_ctx));
        }
        if (f.offload_n_cpu_moe >= 0) {
            out += fmt::format("    --n-cpu-moe {}: the routed experts of the first {} blocks in host RAM ({} in host "
                               "memory), attention and KV on the GPU\n", f.offload_n_cpu_moe, f.offload_n_cpu_moe,
                               human_bytes(f.offload_moe_host_bytes));
        }
        if (f.weights_bytes_that_fit > 0) {
            out += fmt::format("    weights of at most {} (now {}) at n_ctx {}\n", human_bytes(f.weights_bytes_that_fit),
                               human_bytes(r.model.weights.total_bytes()), with_commas(r.requested_n_ctx));
        }
    }
    if (f.recommended_n_ctx > 0) {
        out += fmt::format("  Launch: {}\n", llama_server_command(r, f.recommended_n_ctx));
    }
}

} // namespace

std::string render_check(const report & r) {
    const llamacpp_plan & p = r.plan;
    std::string out;
    for (const auto & w : r.warn) out += fmt::format("warning: {}\n", printable(w, false));
    if (p.fits()) {
        out += fmt::format("OK: {} at n_ctx {} ({} K / {} V, {} sequence{}) fits:", printable(r.model.name, false), with_commas(p.ctx.n_ctx),
                           type_name(r.settings.type_k), type_name(r.settings.type_v), p.ctx.n_seq, p.ctx.n_seq == 1 ? "" : "s");
        for (const auto & d : p.devices) {
            if (!d.is_host) out += fmt::format(" {} uses {} of {} ({} free after the margin);", d.name,
                                               human_bytes(d.used.total()), human_bytes(d.capacity_bytes), human_bytes(uint64_t(d.free_bytes())));
        }
        out.back() = '\n';
        return out;
    }
    out += fmt::format("DOES NOT FIT: {} at n_ctx {} ({} K / {} V, {} sequence{})\n", printable(r.model.name, false), with_commas(p.ctx.n_ctx),
                       type_name(r.settings.type_k), type_name(r.settings.type_v), p.ctx.n_seq, p.ctx.n_seq == 1 ? "" : "s");
    for (const auto & d : p.devices) {
        if (d.is_host || d.fits()) continue;
        const uint64_t budget = d.capacity_bytes > d.margin_bytes ? d.capacity_bytes - d.margin_bytes : 0;
        const std::pair<const char *, uint64_t> order[] = {{"weights", d.used.weights_bytes}, {"KV cache", d.used.kv_bytes},
                                                            {"recurrent state", d.used.state_bytes},
                                                            {"compute buffer", d.used.compute_bytes}};
        uint64_t sum = 0;
        for (const auto & [what, bytes] : order) {
            sum += bytes;
            if (sum > budget) {
                out += fmt::format("  {}: the {} ({}) overflows it: {} with the buffers allocated before it, {} "
                                   "available ({} minus a {} margin); all buffers together are over by {}\n", d.name,
                                   what, human_bytes(bytes), human_bytes(sum), human_bytes(budget),
                                   human_bytes(d.capacity_bytes), human_bytes(d.margin_bytes),
                                   human_bytes(uint64_t(-d.free_bytes())));
                break;
            }
        }
    }
    out += "  llama.cpp would not refuse this: it moves layers to the CPU (--fit, the default) or fails to allocate, "
           "and a spill to the CPU slows generation sharply.\n";
    for (const auto & c : r.fit->max_n_ctx) {
        if (c.allowed && c.max_n_ctx > 0) {
            out += fmt::format("  fits instead: -c {} -ctk {} -ctv {}\n", c.max_n_ctx, type_name(c.type), type_name(c.type));
        }
    }
    return out;
}

std::string render_text(const report & r) {
    const model_desc & m = r.model;
    const llamacpp_settings & s = r.settings;
    std::string out;
    for (const auto & w : r.warn) out += fmt::format("warning: {}\n", printable(w, false));
    // names and paths come from files: one line each, whatever they hold
    out += fmt::format("{} ({}, from {})\n", printable(m.name, false), printable(m.architecture, false), printable(m.source, false));
    out += fmt::format("  {}\n", layer_summary(m));
    out += fmt::format("  rules: {}; n_seq {}, n_ubatch {}, flash attention {}\n\n", llamacpp_release_name(r.settings.release), r.plan.ctx.n_seq,
                       r.plan.ctx.n_ubatch, r.plan.ctx.flash_attn ? "on" : "off");
    if (r.requested_n_ctx > m.n_ctx_train && m.n_ctx_train > 0) {
        out += fmt::format("warning: n_ctx {} exceeds the model's training context {}: llama.cpp accepts it, but quality "
                           "beyond it is not what the model was trained for; fit searches stop at {}\n\n",
                           with_commas(r.requested_n_ctx), with_commas(m.n_ctx_train), with_commas(m.n_ctx_train));
    }

    const std::string formula = per_token_formula(m, s);
    out += fmt::format("KV cache per token ({} K, {} V): {} B ({}){}\n", type_name(s.type_k), type_name(s.type_v),
                       with_commas(r.kv_bytes_per_token), human_bytes(r.kv_bytes_per_token),
                       formula.empty() ? "" : " = " + formula);
    if (r.kv_bytes_per_token > 0) {
        out += fmt::format("  if all {} layers were full attention: {} B ({:.2f}x)\n", m.n_layer,
                           with_commas(r.kv_bytes_per_token_if_all_full),
                           double(r.kv_bytes_per_token_if_all_full) / double(r.kv_bytes_per_token));
    }
    if (r.kv_bytes_per_token_f16 > 0) {
        out += fmt::format("  q8_0 cache: {} B per token = 34/64 of f16 ({:.3f}x): a little more than half, because "
                           "q8_0 stores a 2-byte scale with every 32 values\n",
                           with_commas(r.kv_bytes_per_token_q8_0),
                           double(r.kv_bytes_per_token_q8_0) / double(r.kv_bytes_per_token_f16));
    }
    if (m.count(layer_kind::swa) + m.count(layer_kind::chunked) > 0) {
        out += "  sliding-window/chunked layers are capped near their window and appear only in the table below\n";
    }
    if (r.state_bytes_per_sequence > 0) {
        out += fmt::format("Recurrent state per sequence (f32, fixed): {} B ({}) = {} layers x ({} conv + {} state) x 4 B\n",
                           with_commas(r.state_bytes_per_sequence), human_bytes(r.state_bytes_per_sequence),
                           m.count(layer_kind::recurrent), with_commas(m.n_embd_r()), with_commas(m.n_embd_s()));
    }
    out += fmt::format("\n{:>9}  {:>14}  {:>22}  {:>6}\n", "n_ctx", "KV cache", "if all full attention", "ratio");
    for (const auto & c : r.contexts) {
        out += fmt::format("{:>9}  {:>14}  {:>22}  {:>6}\n", with_commas(c.n_ctx), gib(c.kv_bytes),
                           gib(c.kv_bytes_if_all_full),
                           c.kv_bytes ? fmt::format("{:.2f}x", double(c.kv_bytes_if_all_full) / double(c.kv_bytes)) : "-");
    }
    const model_weights & w = m.weights;
    out += fmt::format("\nWeights: {} parameters ({:.2f} B){}", with_commas(m.n_params()), double(m.n_params()) / 1e9,
                       w.exact ? " read from the file" : " computed from the config");
    if (w.total_bytes() > 0) {
        out += fmt::format("; {} as {}{}\n", human_bytes(w.total_bytes()), w.format, w.exact ? " (exact)" : " (estimate)");
    } else {
        out += "; pass --weights FORMAT or --weights-size SIZE for their bytes\n";
    }
    if (r.fit) render_fit(out, r);
    out += "\nUnits: GiB = 2^30 bytes, MiB = 2^20 bytes, KiB = 2^10 bytes.\n";
    return out;
}

} // namespace kvfit
