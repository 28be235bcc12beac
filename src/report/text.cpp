// The human report (include/kvfit/report.h: render_text): the llama.cpp section here, the serving runtimes' in
// text_serving.cpp, and the common sections for a runtime without its own. Prints only what the plan holds.
#include "report/sections.h"
#include "kvfit/printable.h"

#include "kvfit/error.h"
#include "kvfit/llamacpp.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace kvfit {
namespace detail {

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
    // caches beside a layer's kind: compressed caches by ratio (DeepSeek-V4 CSA/HCA) and indexer keys (DSA, MSA)
    std::map<uint32_t, uint32_t> compressed, indexed;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (c.kind == cache_kind::compressed) ++compressed[c.ratio];
            if (c.kind == cache_kind::indexer) ++indexed[c.ratio];
        }
    }
    for (const auto & [ratio, n] : compressed) out += fmt::format("; {} with a compressed cache (1 cell per {} tokens)", n, ratio);
    for (const auto & [ratio, n] : indexed) {
        out += ratio == 1 ? fmt::format("; {} with indexer keys", n)
                          : fmt::format("; {} with indexer keys (1 cell per {} tokens)", n, ratio);
    }
    return out;
}

std::string render_generic_text(const plan_result & r) {
    const runtime_plan & p = r.plan;
    std::string out;
    for (const auto & w : p.warnings) out += fmt::format("warning: {}\n", printable(w, false));
    out += fmt::format("{} ({}, from {})\n  {}\n  rules: {}; context {} tokens, {} sequence{}\n",
                       printable(r.model.name, false), printable(r.model.architecture, false), printable(r.model.source, false), layer_summary(r.model), p.rules, with_commas(p.context_tokens),
                       p.sequences, p.sequences == 1 ? "" : "s");
    for (const auto & d : p.devices) {
        out += fmt::format("\n  {}: {} used{}\n", d.name, human_bytes(d.used_bytes()),
                           d.is_host ? " (host RAM)" : fmt::format(" of {}, {} kept free{}", human_bytes(d.capacity_bytes),
                                                                   human_bytes(d.reserved_bytes), d.fits() ? "" : ": OVER"));
        for (const auto & b : d.buffers) {
            out += fmt::format("    {:<16} {:>12}{}\n", buffer_label(b.name), human_bytes(b.bytes), b.estimate ? " (estimate)" : "");
        }
    }
    for (const auto & c : p.caches) {
        out += fmt::format("  KV cache {}: {} cells x {} streams, {} layers, {}\n", c.name, with_commas(c.cells_per_stream),
                           c.n_stream, c.n_layer, human_bytes(c.bytes()));
    }
    out += fmt::format("\nVerdict: {}\n", p.fits ? "fits" : p.starts ? "does not fit" : "does not start");
    for (const auto & e : p.refusals) out += fmt::format("  error: {}\n", e);
    for (const auto & a : p.assumptions) out += fmt::format("  assumed: {}\n", a); // --strict refuses these
    for (const auto & n : p.notes) out += fmt::format("  note: {}\n", n);
    render_search(out, r);
    if (!p.launch.empty()) out += "\nLaunch\n" + p.launch + (p.launch.ends_with('\n') ? "" : "\n");
    out += "\nGiB = 2^30 bytes.\n";
    return out;
}

} // namespace detail

namespace {

using detail::flag;
using detail::host_over;
using detail::str;
using detail::u64;

std::string gib(uint64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(1ull << 30)); }

// "8 layers x 2 (K, V) x 4 KV heads x 256 head_dim x 2 B" when every growing cache is the same attention cache.
std::string per_token_formula(const model_desc & m, ggml_type type_k, ggml_type type_v, bool mla_kv) {
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
    if (n == 0 || type_k != type_v || ggml_is_quantized(type_k)) return "";
    const uint32_t bytes = ggml_traits(type_k).type_size;
    if (ref.kind == cache_kind::latent && !mla_kv) {
        return fmt::format("{} MLA layers x {} latent (K only) x {} B", n, ref.head_dim_k, bytes);
    }
    if (ref.kind == cache_kind::latent) return "";
    if (ref.head_dim_k == ref.head_dim_v) {
        return fmt::format("{} layers x 2 (K, V) x {} KV heads x {} head_dim x {} B", n, ref.n_head, ref.head_dim_k, bytes);
    }
    return fmt::format("{} layers x {} KV heads x ({} K + {} V) x {} B", n, ref.n_head, ref.head_dim_k, ref.head_dim_v,
                       bytes);
}

const alternative * find_alternative(const runtime_plan & p, std::string_view knob) {
    for (const auto & a : p.alternatives) {
        if (a.knob == knob) return &a;
    }
    return nullptr;
}

// Speculative decoding (detail.spec, src/runtimes/llamacpp/spec.cpp): the draft / MTP context's sizes and buffers, and
// where each device holds them (its mtp_* / draft_* buffers, inside the device's total above).
void render_spec(std::string & out, const runtime_plan & p) {
    const auto & j = p.detail["spec"];
    const bool mtp = str(j, "type").find("draft-mtp") != std::string::npos;
    out += fmt::format("  speculative decoding {} (n_max {}): draft context n_ctx {} ({} cells per stream, {} K / {} V), "
                       "{} outputs reserved{}\n", str(j, "type"), u64(j, "n_max"), with_commas(u64(j, "n_ctx")),
                       with_commas(u64(j, "n_ctx_seq")), str(j, "cache_type_k"), str(j, "cache_type_v"),
                       u64(j, "n_outputs_max"),
                       mtp && u64(j, "n_rs_seq") ? fmt::format(", recurrent state x {} (rollback snapshots)", 1 + u64(j, "n_rs_seq")) : "");
    for (const auto & dev : p.devices) {
        std::string parts;
        for (const auto & b : dev.buffers) {
            if (b.name.rfind("mtp_", 0) != 0 && b.name.rfind("draft_", 0) != 0) continue;
            parts += fmt::format("{}{} {}{}", parts.empty() ? "" : ", ", b.name, human_bytes(b.bytes), b.estimate ? " (estimate)" : "");
        }
        if (!parts.empty()) out += fmt::format("    on {}: {} (in its total)\n", dev.name, parts);
    }
}

void render_fit(std::string & out, const plan_result & r) {
    const runtime_plan & p = r.plan;
    const model_desc & m = r.model;
    const auto & d = p.detail;
    const auto & s = d["settings"];
    const std::vector<device_spec> & gpus = r.target.gpus;
    const uint64_t n_seq = u64(d, "n_seq");
    out += fmt::format("\nFit with llama.cpp on {} GPU{} (", gpus.size(), gpus.size() == 1 ? "" : "s");
    // each GPU's budget as the plan has it: the CUDA total of a table row, an Apple GPU's Metal working set
    for (size_t i = 0; i < gpus.size(); ++i) {
        device_spec g = gpus[i];
        if (i < p.devices.size() && !p.devices[i].is_host && p.devices[i].capacity_bytes != g.memory_bytes) {
            g.memory_is_working_set = g.vendor == "Apple"; // metal_budget (metal.h) replaced the unified RAM
            g.memory_bytes = p.devices[i].capacity_bytes;
        }
        out += fmt::format("{}{}", i ? " + " : "", gpu_memory_text(g));
    }
    const uint64_t margin = u64(s, "margin_bytes");
    out += fmt::format("), keeping {} free per GPU ({})\n", human_bytes(margin),
                       margin == default_margin_bytes ? "llama.cpp --fit's default target; --margin changes it"
                                                      : fmt::format("--margin; llama.cpp --fit's default target is {}",
                                                                    human_bytes(default_margin_bytes)));
    for (const auto & n : p.notes) { // where an Apple GPU's working set comes from (metal_working_set_text)
        for (size_t i = 0; i < gpus.size(); ++i) {
            if (n.starts_with(gpus[i].name + ": Metal working set")) {
                out += fmt::format("  {}\n", n);
                break;
            }
        }
    }
    out += fmt::format("  n_ctx {}{} -> llama.cpp sets n_ctx {}, n_ctx_seq {}, {} sequence{}, n_ubatch {}, flash attention {}\n",
                       with_commas(p.context_tokens),
                       flag(d, "requested_from_model") ? " (no -c: llama-server's default is the model's training context)" : "",
                       with_commas(u64(d, "n_ctx")), with_commas(u64(d, "n_ctx_seq")), n_seq, n_seq == 1 ? "" : "s",
                       u64(d, "n_ubatch"), flag(d, "flash_attn") ? "on" : "off");
    // the backend planned and its terms (compute_cuda.cpp): one line
    if (d.contains("backend")) {
        const auto & b = d["backend"];
        std::string terms;
        for (const auto & t : b["terms"]) {
            if (!flag(t, "applied") || u64(t, "added_bytes") == 0) continue;
            const uint64_t dev = u64(t, "device");
            const uint64_t tensor = u64(t, "tensor_bytes"), added = u64(t, "added_bytes");
            terms += fmt::format("{}{} {} + {} {}{}", terms.empty() ? "" : ", ", dev < p.devices.size() ? p.devices[dev].name : "GPU",
                                 str(t, "buffer"), str(t, "name"), human_bytes(tensor),
                                 added == tensor ? "" : fmt::format(" (the buffer grows {})", human_bytes(added)));
        }
        out += fmt::format("  backend: {} ({}){}\n", str(b, "name"), str(b, "source"),
                           terms.empty() ? "" : fmt::format("; terms beyond the CPU graph: {}", terms));
    }
    // where the compute buffers on the GPUs come from: the scheduler replayed over the recorded graph, or estimates
    if (d.contains("gpu_compute")) {
        const auto & g = d["gpu_compute"];
        if (flag(g, "replayed")) {
            out += fmt::format("  compute: llama.cpp's scheduler replayed over the recorded graph ({}; {} split{}): "
                               "exact per device\n", str(g, "variant"), u64(g, "n_splits"), u64(g, "n_splits") == 1 ? "" : "s");
        } else {
            out += fmt::format("  compute: estimates on every device ({})\n", str(g, "why"));
        }
    }
    out += fmt::format("  {:<8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "device", "weights", "KV cache",
                       "state", "output", "compute", "total", "capacity");
    for (const auto & dev : p.devices) {
        out += fmt::format("  {:<8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}{}\n", dev.name,
                           human_bytes(dev.bytes_of("weights")), human_bytes(dev.bytes_of("kv")),
                           human_bytes(dev.bytes_of("state")), human_bytes(dev.bytes_of("output")),
                           human_bytes(dev.bytes_of("compute")), human_bytes(dev.used_bytes()),
                           dev.is_host ? "RAM" : human_bytes(dev.capacity_bytes),
                           dev.is_host ? "" : (dev.fits() ? "  fits" : fmt::format("  OVER by {} (capacity minus margin)",
                                                                                  human_bytes(uint64_t(-dev.free_bytes())))));
    }
    if (d.contains("spec")) render_spec(out, p);
    const uint32_t n_all = m.n_layer + m.n_layer_mtp + 1;
    out += fmt::format("  offloaded {}/{} layers to the GPU (-ngl counts the output layer)\n", u64(d, "n_gpu_layers"), n_all);
    for (const auto & n : p.notes) {
        if (n.find("--fit (no_alloc)") != std::string::npos) out += fmt::format("  note: {}\n", printable(n, false));
    }
    const std::string type_k = str(s, "cache_type_k"), type_v = str(s, "cache_type_v");
    if (p.fits) {
        const device_plan & host = p.devices.back();
        const bool on_host = host.n_layers > 0 || host.bytes_of("kv") + host.bytes_of("state") > 0 ||
                             host.bytes_of("weights") > m.weights.token_embd.bytes + m.weights.other.bytes;
        out += on_host ? fmt::format("  FITS the GPU memory: n_ctx {} with {} K / {} V, but with {} in host memory "
                                     "(the CPU does part of the work: slower than a full offload).\n",
                                     with_commas(p.context_tokens), type_k, type_v, human_bytes(host.used_bytes()))
                       : fmt::format("  FITS: n_ctx {} with {} K / {} V runs fully on the GPU.\n",
                                     with_commas(p.context_tokens), type_k, type_v);
    } else if (host_over(p) && std::all_of(p.devices.begin(), p.devices.end(), [](const device_plan & x) { return x.is_host || x.fits(); })) {
        const auto & h = d["host_ram"];
        out += fmt::format("  DOES NOT FIT: n_ctx {} fits the GPU memory, but host RAM does not: {} needed, {} given "
                           "(--ram): {}.\n", with_commas(p.context_tokens), human_bytes(u64(h, "needed_bytes")),
                           human_bytes(u64(h, "capacity_bytes")), str(h, "cause"));
    } else {
        out += fmt::format("  DOES NOT FIT: n_ctx {} needs more than the GPU holds. llama.cpp would not refuse: with --fit "
                           "(on by default) it shrinks the context or moves layers to the CPU, and with a fixed -ngl it "
                           "keeps fewer layers on the GPU; either way generation slows down sharply.\n",
                           with_commas(p.context_tokens));
    }
    const bool ram_known = d.contains("host_ram") && flag(d["host_ram"], "known");
    out += fmt::format("  Largest n_ctx that fits the GPU memory{} with these placement flags, by KV cache type (-ctk/-ctv):\n",
                       ram_known ? " and host RAM" : "");
    // the search stops at the training context (the warning says so); a row at that cap says it too, since more may fit
    const auto capped = [&](const context_limit & c) {
        if (!c.capped) return std::string();
        if (m.n_ctx_train == 0) return std::string("  (the search stops here)");
        if (c.context_tokens > m.n_ctx_train) {
            return fmt::format("  (the smallest context with these sequences, above the training context, {})",
                               with_commas(m.n_ctx_train));
        }
        return fmt::format("  (the search stops at the training context, {})", with_commas(m.n_ctx_train));
    };
    for (const auto & c : p.max_context) {
        if (c.all_full_attention) {
            out += fmt::format("    if all {} layers were full attention ({}): {}{}\n", m.n_layer, c.cache_type,
                               with_commas(c.context_tokens), capped(c));
        } else if (!c.allowed) {
            out += fmt::format("    {:<7} refused: {}\n", c.cache_type, c.refusal);
        } else {
            out += fmt::format("    {:<7} {:>9}{}\n", c.cache_type, with_commas(c.context_tokens),
                               c.context_tokens == 0 ? fmt::format("  (nothing fits: smaller weights or more GPU memory{} needed)",
                                                                   ram_known ? " or host RAM" : "")
                                                     : capped(c));
        }
    }
    if (!p.fits) {
        out += "  What would fit instead:\n";
        for (const auto & c : p.max_context) {
            if (!c.all_full_attention && c.allowed && c.context_tokens > 0) {
                out += fmt::format("    -c {} with -ctk {} -ctv {}\n", c.context_tokens, c.cache_type, c.cache_type);
            }
        }
        if (const alternative * a = find_alternative(p, "n_gpu_layers")) {
            out += fmt::format("    -ngl {} (of {}): the first {} blocks run on the CPU from host RAM ({} in host memory) "
                               "at n_ctx {} — this is the spill: it fits, but decoding slows down sharply\n",
                               a->value, n_all, n_all - std::min<uint64_t>(n_all, a->value), human_bytes(a->host_bytes),
                               with_commas(a->context_tokens));
        }
        if (const alternative * a = find_alternative(p, "n_cpu_moe")) {
            out += fmt::format("    --n-cpu-moe {}: the routed experts of the first {} blocks in host RAM ({} in host "
                               "memory), attention and KV on the GPU\n", a->value, a->value, human_bytes(a->host_bytes));
        }
        if (const uint64_t w = u64(d, "weights_bytes_that_fit"); w > 0) {
            out += fmt::format("    weights of at most {} (now {}) at n_ctx {}\n", human_bytes(w),
                               human_bytes(m.weights.total_bytes()), with_commas(p.context_tokens));
        }
    }
    if (!p.launch.empty()) out += fmt::format("  Launch: {}\n", p.launch);
}

std::string render_llamacpp_text(const plan_result & r) {
    const model_desc & m = r.model;
    const runtime_plan & p = r.plan;
    const auto & d = p.detail;
    const auto & s = d["settings"];
    std::string out;
    for (const auto & w : p.warnings) out += fmt::format("warning: {}\n", printable(w, false));
    out += fmt::format("{} ({}, from {})\n", printable(m.name, false), printable(m.architecture, false),
                       printable(m.source, false));
    out += fmt::format("  {}\n", detail::layer_summary(m));
    out += fmt::format("  rules: {}; n_seq {}, n_ubatch {}, flash attention {}\n\n", p.rules, u64(d, "n_seq"),
                       u64(d, "n_ubatch"), flag(d, "flash_attn") ? "on" : "off");

    const std::string type_k = str(s, "cache_type_k"), type_v = str(s, "cache_type_v");
    const uint64_t per_token = p.kv_bytes_per_token.value_or(0);
    const std::string formula = per_token_formula(m, ggml_type_from_name(type_k), ggml_type_from_name(type_v),
                                                  flag(s, "mla_kv"));
    // compressed caches (DeepSeek-V4 CSA/HCA and their indexer keys) grow by one cell per `ratio` tokens: bytes per
    // cell summed by ratio, under the plan's types and release (llamacpp_cell_bytes)
    std::map<uint32_t, std::pair<uint32_t, uint64_t>> by_ratio; // ratio -> caches, bytes per cell
    {
        const llamacpp_release rel = parse_llamacpp_release(str(s, "llamacpp_version"));
        const mla_layout mla = flag(s, "mla_kv") ? mla_layout::k_and_v : mla_layout::k_only;
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            for (const auto & c : m.caches[il]) {
                if (!c.grows_with_ctx() || c.ratio <= 1) continue;
                auto & [n, bytes] = by_ratio[c.ratio];
                ++n;
                bytes += llamacpp_cell_bytes(m, il, c, ggml_type_from_name(type_k), ggml_type_from_name(type_v), mla,
                                             flag(d, "flash_attn"), rel);
            }
        }
    }
    if (per_token == 0 && !by_ratio.empty()) {
        out += fmt::format("KV cache per token ({} K, {} V): no cache takes a cell for every token\n", type_k, type_v);
    } else {
        out += fmt::format("KV cache per token ({} K, {} V): {} B ({}){}\n", type_k, type_v, with_commas(per_token),
                           human_bytes(per_token), formula.empty() ? "" : " = " + formula);
    }
    for (const auto & [ratio, nb] : by_ratio) {
        out += fmt::format("  + compressed caches, 1 cell per {} tokens ({} caches): {} B per {} tokens, {} B per token "
                           "on average\n", ratio, nb.first, with_commas(nb.second), ratio,
                           nb.second % ratio == 0 ? with_commas(nb.second / ratio)
                                                  : fmt::format("{:.1f}", double(nb.second) / double(ratio)));
    }
    const uint64_t if_all_full = u64(d, "kv_bytes_per_token_if_all_full_attention");
    if (per_token > 0) {
        out += fmt::format("  if all {} layers were full attention: {} B ({:.2f}x)\n", m.n_layer, with_commas(if_all_full),
                           double(if_all_full) / double(per_token));
    }
    const uint64_t f16 = u64(d, "kv_bytes_per_token_f16"), q8_0 = u64(d, "kv_bytes_per_token_q8_0");
    if (f16 > 0) {
        out += fmt::format("  q8_0 cache: {} B per token = 34/64 of f16 ({:.3f}x): a little more than half, because "
                           "q8_0 stores a 2-byte scale with every 32 values\n", with_commas(q8_0), double(q8_0) / double(f16));
    }
    if (m.count(layer_kind::swa) + m.count(layer_kind::chunked) > 0) {
        out += "  sliding-window/chunked layers are capped near their window and appear only in the table below\n";
    }
    const uint64_t state = p.state_bytes_per_sequence.value_or(0);
    // the parts of one sequence's state (state_bytes_per_sequence is llamacpp_recurrent of one sequence, no snapshots)
    llamacpp_context one_sequence;
    one_sequence.n_seq = 1;
    const recurrent_buffer rs = llamacpp_recurrent(m, one_sequence);
    const uint64_t comp = rs.comp_bytes, ple = rs.p_bytes;
    if (state > 0) {
        // recurrent states alone keep their one-formula line; with PLE or compressor states, each part is named
        const bool only_recurrent = comp == 0 && ple == 0;
        std::string parts;
        if (rs.r_bytes + rs.s_bytes > 0) {
            parts += fmt::format("{} {}layers x ({} conv + {} state) x 4 B", m.count(layer_kind::recurrent),
                                 only_recurrent ? "" : "recurrent ", with_commas(m.n_embd_r()), with_commas(m.n_embd_s()));
        }
        if (ple > 0) parts += fmt::format("{}per-layer-embedding conv states {} B", parts.empty() ? "" : " + ", with_commas(ple));
        if (comp > 0) {
            parts += fmt::format("{}compressor states {} B (the tokens each compressed cache has not folded into a cell "
                                 "yet)", parts.empty() ? "" : " + ", with_commas(comp));
        }
        out += fmt::format("{} per sequence (f32{}): {} B ({}) = {}\n", only_recurrent ? "Recurrent state" : "Fixed state",
                           only_recurrent ? ", fixed" : "", with_commas(state), human_bytes(state), parts);
    }
    out += fmt::format("\n{:>9}  {:>14}  {:>22}  {:>6}\n", "n_ctx", "KV cache", "if all full attention", "ratio");
    for (const auto & c : d["contexts"]) {
        const uint64_t kv = u64(c, "kv_bytes"), full = u64(c, "kv_bytes_if_all_full_attention");
        out += fmt::format("{:>9}  {:>14}  {:>22}  {:>6}\n", with_commas(u64(c, "n_ctx")), gib(kv), gib(full),
                           kv ? fmt::format("{:.2f}x", double(full) / double(kv)) : "-");
    }
    const model_weights & w = m.weights;
    out += fmt::format("\nWeights: {} parameters ({:.2f} B){}", with_commas(m.n_params()), double(m.n_params()) / 1e9,
                       w.exact ? " read from the file" : " computed from the config");
    if (w.total_bytes() > 0) {
        out += fmt::format("; {} as {}{}\n", human_bytes(w.total_bytes()), w.format, w.exact ? " (exact)" : " (estimate)");
    } else {
        out += "; pass --weights FORMAT or --weights-size SIZE for their bytes\n";
    }
    // llama.cpp's CPU backend moved host-resident weights into an extra buffer (AMX, CPU_REPACK): name the buffers
    if (d.contains("cpu_backend") && flag(d["cpu_backend"], "modelled") && d["cpu_backend"]["model_buffers"].size() > 1) {
        const auto & c = d["cpu_backend"];
        std::string bufs;
        for (const auto & b : c["model_buffers"]) {
            bufs += fmt::format("{}{} {}", bufs.empty() ? "" : " + ", str(b, "name"), human_bytes(u64(b, "bytes")));
        }
        out += fmt::format("  host model buffers on libggml-cpu-{} ({}{}): {}{}\n", str(c, "variant"), str(c, "source"),
                           flag(c, "assumed") ? "; --cpu-features names the CPU" : "", bufs,
                           flag(c, "mmap") ? " (mmap: the moved weights also stay in the mapped range)" : "");
    }
    out += detail::render_llamacpp_extras(r); // --mmproj, --lora, host RAM (text_extras.cpp)
    if (!r.target.gpus.empty()) render_fit(out, r);
    out += "\nUnits: GiB = 2^30 bytes, MiB = 2^20 bytes, KiB = 2^10 bytes.\n";
    return out;
}

} // namespace

std::string_view buffer_label(std::string_view name) {
    static const std::pair<std::string_view, std::string_view> labels[] = {
        {"kv", "KV cache"},           {"state", "recurrent state"},  {"compute", "compute buffer"},
        {"output", "output buffer"},  {"activation", "activation peak"}, {"non_torch", "non-torch memory"},
        {"cuda_graph", "CUDA graphs"}, {"kv_pool", "KV cache pool"},  {"mamba_pool", "mamba state pool"},
        {"projector", "mmproj projector"}, {"adapters", "LoRA adapters"},
        // speculative decoding (llama.cpp spec.cpp)
        {"mtp_weights", "MTP weights"}, {"mtp_kv", "MTP KV cache"},   {"mtp_output", "MTP output buffer"},
        {"mtp_compute", "MTP compute buffer"},
        {"draft_weights", "draft weights"}, {"draft_kv", "draft KV cache"}, {"draft_state", "draft recurrent state"},
        {"draft_output", "draft output buffer"}, {"draft_compute", "draft compute buffer"},
    };
    for (const auto & [n, label] : labels) {
        if (n == name) return label;
    }
    return name;
}

std::string render_text(const plan_result & r) {
    if (r.plan.runtime == "llama.cpp") return render_llamacpp_text(r);
    if (r.plan.runtime == "vllm" || r.plan.runtime == "sglang" || r.plan.runtime == "ollama") {
        return detail::render_serving_text(r);
    }
    return detail::render_generic_text(r);
}

} // namespace kvfit
