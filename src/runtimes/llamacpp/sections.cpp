// The typed report sections of a llama.cpp plan (sections.h; runtime.h plan_section), built from llamacpp_plan: the
// words and numbers the text report printed from detail before (tests/data/golden/llamacpp_*.txt, README examples),
// now with each figure's source. The rules behind the figures are cited where they are computed (rules.cpp,
// placement.cpp, host_ram.cpp, spec.cpp, compute_cuda.cpp); a figure's `source` names that file.
#include "runtimes/llamacpp/sections.h"

#include "kvfit/llamacpp_extras.h"
#include "kvfit/printable.h"
#include "kvfit/units.h"
#include "runtimes/common/sections.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace kvfit::detail {
namespace {

// where the figures come from (llama.cpp's files whose rules kvfit reproduces)
constexpr const char * k_src_kv = "llama.cpp src/llama-kv-cache.cpp llama_kv_cache (rules.cpp)";
constexpr const char * k_src_ctx = "llama.cpp src/llama-context.cpp llama_context (rules.cpp llamacpp_context_size)";
constexpr const char * k_src_state = "llama.cpp src/llama-memory-recurrent.cpp (rules.cpp llamacpp_recurrent)";
constexpr const char * k_src_place = "llama.cpp src/llama-model.cpp load_tensors (placement.cpp)";
constexpr const char * k_src_search = "kvfit planner search over -c (plan.h plan_model)";

std::string llsec_gib(uint64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(1ull << 30)); }

// "8 layers x 2 (K, V) x 4 KV heads x 256 head_dim x 2 B" when every growing cache is the same attention cache.
std::string llsec_per_token_formula(const model_desc & m, ggml_type type_k, ggml_type type_v, bool mla_kv) {
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

// The model lines: name, layers, rules and the settings every figure below is at.
plan_section llsec_model(const model_desc & m, const llamacpp_plan & p, const runtime_plan & r) {
    plan_section s;
    add_row(s, fmt::format("{} ({}, from {})", printable(m.name, false), printable(m.architecture, false),
                           printable(m.source, false)));
    add_row(s, "  " + layer_summary(m));
    add_row(s, fmt::format("  rules: {}; n_seq {}, n_ubatch {}, flash attention {}", r.rules, p.ctx.n_seq,
                           p.ctx.n_ubatch, p.ctx.flash_attn ? "on" : "off"),
            {count_figure("n_seq", p.ctx.n_seq, "sequences", k_src_ctx), count_figure("n_ubatch", p.ctx.n_ubatch, "tokens", k_src_ctx),
             word_figure("flash_attn", p.ctx.flash_attn ? "on" : "off", k_src_ctx)});
    return s;
}

// KV cache per token, its comparisons, and the fixed state of one sequence (blank line first).
plan_section llsec_per_token(const model_desc & m, const llamacpp_plan & p, const runtime_plan & r,
                             const llamacpp_report_figures & f) {
    const llamacpp_settings & s = p.settings;
    const std::string type_k(ggml_traits(s.type_k).name), type_v(ggml_traits(s.type_v).name);
    const bool mla_kv = s.mla == mla_layout::k_and_v;
    const uint64_t per_token = r.kv_bytes_per_token.value_or(0);
    const std::string formula = llsec_per_token_formula(m, s.type_k, s.type_v, mla_kv);
    // compressed caches (DeepSeek-V4 CSA/HCA and their indexer keys) grow by one cell per `ratio` tokens: bytes per
    // cell summed by ratio, under the plan's types and release (llamacpp_cell_bytes)
    std::map<uint32_t, std::pair<uint32_t, uint64_t>> by_ratio; // ratio -> caches, bytes per cell
    const mla_layout mla = mla_kv ? mla_layout::k_and_v : mla_layout::k_only;
    const bool fa = p.ctx.flash_attn; // as llama.cpp resolved it (-fa auto)
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (!c.grows_with_ctx() || c.ratio <= 1) continue;
            auto & [n, bytes] = by_ratio[c.ratio];
            ++n;
            bytes += llamacpp_cell_bytes(m, il, c, s.type_k, s.type_v, mla, fa, s.release);
        }
    }
    plan_section sec;
    add_row(sec, "");
    if (per_token == 0 && !by_ratio.empty()) {
        add_row(sec, fmt::format("KV cache per token ({} K, {} V): no cache takes a cell for every token", type_k, type_v),
                {size_figure("kv_bytes_per_token", 0, k_src_kv)});
    } else {
        add_row(sec, fmt::format("KV cache per token ({} K, {} V): {} B ({}){}", type_k, type_v, with_commas(per_token),
                                 human_bytes(per_token), formula.empty() ? "" : " = " + formula),
                {size_figure("kv_bytes_per_token", per_token, k_src_kv)});
    }
    for (const auto & [ratio, nb] : by_ratio) {
        add_row(sec, fmt::format("  + compressed caches, 1 cell per {} tokens ({} caches): {} B per {} tokens, {} B per "
                                 "token on average", ratio, nb.first, with_commas(nb.second), ratio,
                                 nb.second % ratio == 0 ? with_commas(nb.second / ratio)
                                                        : fmt::format("{:.1f}", double(nb.second) / double(ratio))),
                {size_figure("cell_bytes", nb.second, k_src_kv), count_figure("ratio", ratio, "tokens per cell", k_src_kv)});
    }
    const uint64_t if_all_full = f.kv_bytes_per_token_if_all_full;
    if (per_token > 0) {
        add_row(sec, fmt::format("  if all {} layers were full attention: {} B ({:.2f}x)", m.n_layer, with_commas(if_all_full),
                                 double(if_all_full) / double(per_token)),
                {size_figure("kv_bytes_per_token_if_all_full_attention", if_all_full, k_src_kv)});
    }
    const uint64_t f16 = f.kv_bytes_per_token_f16, q8_0 = f.kv_bytes_per_token_q8_0;
    if (f16 > 0) {
        add_row(sec, fmt::format("  q8_0 cache: {} B per token = 34/64 of f16 ({:.3f}x): a little more than half, because "
                                 "q8_0 stores a 2-byte scale with every 32 values", with_commas(q8_0), double(q8_0) / double(f16)),
                {size_figure("kv_bytes_per_token_q8_0", q8_0, k_src_kv), size_figure("kv_bytes_per_token_f16", f16, k_src_kv)});
    }
    if (m.count(layer_kind::swa) + m.count(layer_kind::chunked) > 0) {
        add_row(sec, "  sliding-window/chunked layers are capped near their window and appear only in the table below");
    }
    const uint64_t state = r.state_bytes_per_sequence.value_or(0);
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
        add_row(sec, fmt::format("{} per sequence (f32{}): {} B ({}) = {}", only_recurrent ? "Recurrent state" : "Fixed state",
                                 only_recurrent ? ", fixed" : "", with_commas(state), human_bytes(state), parts),
                {size_figure("state_bytes_per_sequence", state, k_src_state)});
    }
    return sec;
}

// The seeds' table: all KV caches at each -c, and if every layer were full attention.
plan_section llsec_table(const llamacpp_report_figures & f) {
    plan_section sec;
    add_row(sec, "");
    add_row(sec, fmt::format("{:>9}  {:>14}  {:>22}  {:>6}", "n_ctx", "KV cache", "if all full attention", "ratio"));
    for (const auto & c : f.contexts) {
        add_row(sec, fmt::format("{:>9}  {:>14}  {:>22}  {:>6}", with_commas(c.n_ctx), llsec_gib(c.kv_bytes),
                                 llsec_gib(c.kv_bytes_if_all_full),
                                 c.kv_bytes ? fmt::format("{:.2f}x", double(c.kv_bytes_if_all_full) / double(c.kv_bytes)) : "-"),
                {count_figure("n_ctx", double(c.n_ctx), "tokens", "flag"), size_figure("kv_bytes", c.kv_bytes, k_src_kv),
                 size_figure("kv_bytes_if_all_full_attention", c.kv_bytes_if_all_full, k_src_kv)});
    }
    return sec;
}

// The weights, the host's model buffers when llama.cpp's CPU backend moved weights into an extra buffer, and the
// projector and adapter lines (host_ram.cpp places them).
plan_section llsec_weights(const model_desc & m, const llamacpp_plan & p) {
    const model_weights & w = m.weights;
    plan_section sec;
    add_row(sec, "");
    add_row(sec, fmt::format("Weights: {} parameters ({:.2f} B){}{}", with_commas(m.n_params()), double(m.n_params()) / 1e9,
                             w.exact ? " read from the file" : " computed from the config",
                             w.total_bytes() > 0 ? fmt::format("; {} as {}{}", human_bytes(w.total_bytes()), w.format,
                                                               w.exact ? " (exact)" : " (estimate)")
                                                 : std::string("; pass --weights FORMAT or --weights-size SIZE for their bytes")),
            {count_figure("n_params", double(m.n_params()), "parameters", w.exact ? "the file" : "the config"),
             size_figure("weights", w.total_bytes(), w.exact ? "the file's tensors" : "weight format x parameters", !w.exact)});
    // llama.cpp's CPU backend moved host-resident weights into an extra buffer (AMX, CPU_REPACK): name the buffers
    const cpu_weight_buffers & hw = p.host_weights;
    if (p.host_weights_exact && hw.amx_tensors + hw.repack_tensors > 0) {
        const cpu_features & c = p.placement.cpu;
        std::string bufs = fmt::format("{} {}", p.placement.mmap ? "CPU_Mapped" : "CPU", human_bytes(hw.mapped_bytes));
        std::vector<plan_figure> figs = {size_figure(p.placement.mmap ? "CPU_Mapped" : "CPU", hw.mapped_bytes, "llamacpp_cpu.h (cpu.cpp)")};
        if (hw.amx_tensors) bufs += " + AMX " + human_bytes(hw.amx_bytes), figs.push_back(size_figure("AMX", hw.amx_bytes, "cpu.cpp"));
        if (hw.repack_tensors) {
            bufs += " + CPU_REPACK " + human_bytes(hw.repack_bytes);
            figs.push_back(size_figure("CPU_REPACK", hw.repack_bytes, "cpu.cpp"));
        }
        add_row(sec, fmt::format("  host model buffers on libggml-cpu-{} ({}{}): {}{}", c.variant, c.source,
                                 c.source.rfind("assumed", 0) == 0 ? "; --cpu-features names the CPU" : "", bufs,
                                 p.placement.mmap ? " (mmap: the moved weights also stay in the mapped range)" : ""),
                std::move(figs));
    }
    const llamacpp_settings & s = p.settings;
    if (s.mmproj) {
        const mmproj_desc & mp = *s.mmproj;
        const bool fa = s.flash_attn != flash_attn_mode::off;
        const mmproj_compute c = llamacpp_mmproj_compute(mp, fa);
        const size_t d = s.mmproj_offload && p.devices.size() > 1 ? 0 : p.devices.size() - 1;
        add_row(sec, fmt::format("Projector (--mmproj {}): {}, weights {} B ({}) + clip compute {} B ({}{}), flash attention {}"
                                 ", {} patches; on {} (in its total below)", mp.path,
                                 mp.vision_projector.empty() ? mp.audio_projector : mp.vision_projector,
                                 with_commas(mp.weights_bytes), human_bytes(mp.weights_bytes), with_commas(c.bytes),
                                 human_bytes(c.bytes), c.modelled ? "" : ", estimate", fa ? "on" : "off",
                                 with_commas(c.n_patches), p.devices[d].name),
                {size_figure("projector_weights", mp.weights_bytes, "the mmproj file (mmproj.cpp)", mp.from_config),
                 size_figure("clip_compute", c.bytes, "llama.cpp tools/mtmd/clip.cpp warmup (mmproj.cpp)", !c.modelled)});
    }
    for (const auto & a : s.lora) {
        add_row(sec, fmt::format("LoRA adapter {} (scale {}): {} B ({}), {} tensors, on their base weights' devices (in "
                                 "their totals below)", a.path, double(a.scale), with_commas(a.bytes()), human_bytes(a.bytes()),
                                 a.n_tensors),
                {size_figure("adapter", a.bytes(), "llama.cpp src/llama-adapter.cpp (lora.cpp)")});
    }
    return sec;
}

// Host RAM (host_ram.cpp): what llama-server holds in system memory, line by line, and the verdict against --ram.
plan_section llsec_host_ram(const model_desc & m, const llamacpp_plan & p) {
    const host_ram_usage h = llamacpp_host_ram(m, p);
    plan_section sec;
    sec.title = fmt::format("Host RAM{}: {} needed{}{}{}",
                            h.known ? fmt::format(" ({} given)", human_bytes(h.capacity_bytes)) : "",
                            human_bytes(h.needed_bytes),
                            h.total_bytes > h.needed_bytes ? fmt::format(", {} with the prompt cache at its limit",
                                                                         human_bytes(h.total_bytes)) : "",
                            h.pinned_bytes ? fmt::format(", {} of it pinned", human_bytes(h.pinned_bytes)) : "",
                            !h.known  ? " (pass --ram SIZE for a verdict)"
                            : h.fits  ? ": FITS"
                            : h.unbounded ? ": UNCERTAIN (--cache-ram -1)"
                                      : ": OVER");
    for (const auto & l : h.lines) {
        add_row(sec, fmt::format("{:<13} {:>12} {:<13} {}", l.name, human_bytes(l.bytes),
                                 l.bound ? "(at most)" : l.reclaimable ? "(reclaimable)" : "", l.what),
                {size_figure(l.name, l.bytes, "docs/rules/llamacpp-host-ram.md (host_ram.cpp)")});
    }
    return sec;
}

// Speculative decoding (spec.cpp): the draft / MTP context's sizes and buffers, and where each device holds them (its
// mtp_* / draft_* buffers, inside the device's total above).
void llsec_spec(plan_section & sec, const llamacpp_plan & p, const runtime_plan & r) {
    const auto & u = p.spec;
    const llamacpp_spec & sp = p.settings.spec;
    const std::string type = u.mtp && u.draft ? "draft-mtp+draft-simple" : u.mtp ? "draft-mtp" : "draft-simple";
    add_row(sec, fmt::format("speculative decoding {} (n_max {}): draft context n_ctx {} ({} cells per stream, {} K / {} V), "
                             "{} outputs reserved{}", type, sp.n_max, with_commas(u.ctx.n_ctx), with_commas(u.ctx.n_ctx_seq),
                             ggml_traits(sp.type_k).name, ggml_traits(sp.type_v).name, p.ctx.n_outputs_max,
                             u.mtp && p.ctx.n_rs_seq ? fmt::format(", recurrent state x {} (rollback snapshots)", 1 + p.ctx.n_rs_seq) : ""),
            {count_figure("draft_n_ctx", double(u.ctx.n_ctx), "tokens", "spec.cpp"),
             size_figure("spec_total", u.bytes.total(), "spec.cpp", u.compute_estimate && u.mtp)});
    for (const auto & dev : r.devices) {
        std::string parts;
        for (const auto & b : dev.buffers) {
            if (b.name.rfind("mtp_", 0) != 0 && b.name.rfind("draft_", 0) != 0) continue;
            parts += fmt::format("{}{} {}{}", parts.empty() ? "" : ", ", b.name, human_bytes(b.bytes), b.estimate ? " (estimate)" : "");
        }
        if (!parts.empty()) add_row(sec, fmt::format("  on {}: {} (in its total)", dev.name, parts));
    }
}

// The fit on the GPUs: budget, settings, backend, compute source, the device table, the offload and the verdict.
plan_section llsec_fit(const model_desc & m, const llamacpp_inputs & in, const llamacpp_plan & p, const runtime_plan & r,
                       const std::vector<device_spec> & gpus, const llamacpp_report_figures & f) {
    plan_section sec;
    std::string title = fmt::format("Fit with llama.cpp on {} GPU{} (", gpus.size(), gpus.size() == 1 ? "" : "s");
    // each GPU's budget as the plan has it: the CUDA total of a table row, an Apple GPU's Metal working set; a run of
    // GPUs with the same text is written once with its count ("8 x 79.18 GiB as CUDA reports it (...)")
    std::vector<std::pair<std::string, size_t>> budgets;
    for (size_t i = 0; i < gpus.size(); ++i) {
        device_spec g = gpus[i];
        if (i < r.devices.size() && !r.devices[i].is_host && r.devices[i].capacity_bytes != g.memory_bytes) {
            g.memory_is_working_set = g.vendor == "Apple"; // metal_budget (metal.h) replaced the unified RAM
            g.memory_bytes = r.devices[i].capacity_bytes;
        }
        std::string text = gpu_memory_text(g);
        if (!budgets.empty() && budgets.back().first == text) {
            ++budgets.back().second;
        } else {
            budgets.emplace_back(std::move(text), 1);
        }
    }
    for (size_t i = 0; i < budgets.size(); ++i) {
        title += fmt::format("{}{}{}", i ? " + " : "", budgets[i].second > 1 ? fmt::format("{} x ", budgets[i].second) : "",
                             budgets[i].first);
    }
    const uint64_t margin = in.margin_bytes;
    sec.title = title + fmt::format("), keeping {} free per GPU ({})", human_bytes(margin),
                                    margin == default_margin_bytes ? "llama.cpp --fit's default target; --margin changes it"
                                                                   : fmt::format("--margin; llama.cpp --fit's default target is {}",
                                                                                 human_bytes(default_margin_bytes)));
    for (const auto & n : r.notes) { // where an Apple GPU's working set comes from (metal_working_set_text)
        for (const auto & g : gpus) {
            if (n.starts_with(g.name + ": Metal working set")) {
                add_row(sec, n);
                break;
            }
        }
    }
    const uint64_t n_seq = p.ctx.n_seq;
    add_row(sec, fmt::format("n_ctx {}{} -> llama.cpp sets n_ctx {}, n_ctx_seq {}, {} sequence{}, n_ubatch {}, flash attention {}",
                             with_commas(r.context_tokens),
                             f.from_model ? " (no -c: llama-server's default is the model's training context)" : "",
                             with_commas(p.ctx.n_ctx), with_commas(p.ctx.n_ctx_seq), n_seq, n_seq == 1 ? "" : "s",
                             p.ctx.n_ubatch, p.ctx.flash_attn ? "on" : "off"),
            {count_figure("requested_n_ctx", double(r.context_tokens), "tokens", f.from_model ? "the model's training context" : "flag"),
             count_figure("n_ctx", double(p.ctx.n_ctx), "tokens", k_src_ctx),
             count_figure("n_ctx_seq", double(p.ctx.n_ctx_seq), "tokens", k_src_ctx)});
    // the backend planned and its terms (compute_cuda.cpp): one line
    std::string terms;
    std::vector<plan_figure> term_figs;
    for (const auto & t : p.backend_terms) {
        if (!t.applied || t.added_bytes == 0) continue;
        terms += fmt::format("{}{} {} + {} {}{}", terms.empty() ? "" : ", ",
                             t.device < r.devices.size() ? r.devices[t.device].name : "GPU", t.buffer, t.name,
                             human_bytes(t.tensor_bytes),
                             t.added_bytes == t.tensor_bytes ? "" : fmt::format(" (the buffer grows {})", human_bytes(t.added_bytes)));
        term_figs.push_back(size_figure(t.name, t.added_bytes, t.what, true));
    }
    add_row(sec, fmt::format("backend: {} ({}){}", gpu_backend_name(p.backend.backend), p.backend.source,
                             terms.empty() ? "" : fmt::format("; terms beyond the CPU graph: {}", terms)),
            std::move(term_figs));
    // where the compute buffers on the GPUs come from: the scheduler replayed over the recorded graph, or estimates
    if (p.devices.size() > 1) {
        const auto & g = p.gpu_compute;
        if (g.replayed) {
            // Vulkan: ggml-vulkan's answers from source, the driver's limits assumed (backend_vulkan.h)
            add_row(sec, fmt::format("compute: llama.cpp's scheduler replayed over the recorded graph ({}; {} split{}): "
                                     "{}", g.variant, g.n_splits, g.n_splits == 1 ? "" : "s",
                                     g.assumed.empty() ? "exact per device"
                                                       : "ggml-vulkan v0.5.0's rules, the driver's limits assumed (" + g.assumed + ")"));
        } else {
            add_row(sec, fmt::format("compute: estimates on every device ({})", g.why));
        }
    }
    add_row(sec, fmt::format("{:<8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}", "device", "weights", "KV cache",
                             "state", "output", "compute", "total", "capacity"));
    for (const auto & dev : r.devices) {
        std::vector<plan_figure> figs;
        for (const char * name : {"weights", "kv", "state", "output", "compute"}) {
            bool estimate = false;
            for (const auto & b : dev.buffers) estimate = estimate || (b.name == name && b.estimate);
            figs.push_back(size_figure(name, dev.bytes_of(name), k_src_place, estimate));
        }
        figs.push_back(size_figure("total", dev.used_bytes(), k_src_place));
        if (!dev.is_host) figs.push_back(size_figure("capacity", dev.capacity_bytes, "--gpu"));
        add_row(sec, fmt::format("{:<8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}{}", dev.name,
                                 human_bytes(dev.bytes_of("weights")), human_bytes(dev.bytes_of("kv")),
                                 human_bytes(dev.bytes_of("state")), human_bytes(dev.bytes_of("output")),
                                 human_bytes(dev.bytes_of("compute")), human_bytes(dev.used_bytes()),
                                 dev.is_host ? "RAM" : human_bytes(dev.capacity_bytes),
                                 dev.is_host ? "" : (dev.fits() ? "  fits" : fmt::format("  OVER by {} (capacity minus margin)",
                                                                                        human_bytes(uint64_t(-dev.free_bytes()))))),
                std::move(figs));
    }
    if (p.settings.spec.active()) llsec_spec(sec, p, r);
    const uint32_t n_all = m.n_layer + m.n_layer_mtp + 1;
    add_row(sec, fmt::format("offloaded {}/{} layers to the GPU (-ngl counts the output layer)", p.n_gpu_layers, n_all),
            {count_figure("n_gpu_layers", p.n_gpu_layers, "layers", k_src_place)});
    for (const auto & n : r.notes) {
        if (n.find("--fit (no_alloc)") != std::string::npos) add_row(sec, fmt::format("note: {}", printable(n, false)));
    }
    const std::string type_k(ggml_traits(p.settings.type_k).name), type_v(ggml_traits(p.settings.type_v).name);
    const bool host_over = r.host_ram && r.host_ram->over;
    if (r.fits) {
        const device_plan & host = r.devices.back();
        const bool on_host = host.n_layers > 0 || host.bytes_of("kv") + host.bytes_of("state") > 0 ||
                             host.bytes_of("weights") > m.weights.token_embd.bytes + m.weights.other.bytes;
        add_row(sec, on_host ? fmt::format("FITS the GPU memory: n_ctx {} with {} K / {} V, but with {} in host memory "
                                           "(the CPU does part of the work: slower than a full offload).",
                                           with_commas(r.context_tokens), type_k, type_v, human_bytes(host.used_bytes()))
                             : fmt::format("FITS: n_ctx {} with {} K / {} V runs fully on the GPU.",
                                           with_commas(r.context_tokens), type_k, type_v));
    } else if (host_over && std::all_of(r.devices.begin(), r.devices.end(), [](const device_plan & x) { return x.is_host || x.fits(); })) {
        const host_ram_usage h = llamacpp_host_ram(m, p);
        add_row(sec, fmt::format("DOES NOT FIT: n_ctx {} fits the GPU memory, but host RAM does not: {} needed, {} given "
                                 "(--ram): {}.", with_commas(r.context_tokens), human_bytes(h.needed_bytes),
                                 human_bytes(h.capacity_bytes), h.cause),
                {size_figure("host_ram_needed", h.needed_bytes, "host_ram.cpp"), size_figure("ram", h.capacity_bytes, "--ram")});
    } else {
        add_row(sec, fmt::format("DOES NOT FIT: n_ctx {} needs more than the GPU holds. llama.cpp would not refuse: with --fit "
                                 "(on by default) it shrinks the context or moves layers to the CPU, and with a fixed -ngl it "
                                 "keeps fewer layers on the GPU; either way generation slows down sharply.",
                                 with_commas(r.context_tokens)));
    }
    return sec;
}

std::string llsec_type_pair(const std::string & k, const std::string & v) {
    return k == v ? fmt::format("{} K/V", k) : fmt::format("{} K, {} V", k, v);
}

} // namespace

std::vector<plan_section> llamacpp_sections(const model_desc & m, const llamacpp_inputs & in, const llamacpp_plan & p,
                                            const runtime_plan & r, const std::vector<device_spec> & gpus,
                                            const llamacpp_report_figures & f) {
    std::vector<plan_section> out;
    out.push_back(llsec_model(m, p, r));
    out.push_back(llsec_per_token(m, p, r, f));
    out.push_back(llsec_table(f));
    out.push_back(llsec_weights(m, p));
    if (r.host_ram) out.push_back(llsec_host_ram(m, p)); // shown when asked (host_ram.cpp llamacpp_extras_report)
    if (!gpus.empty()) out.push_back(llsec_fit(m, in, p, r, gpus, f));
    return out;
}

plan_words llamacpp_words(const model_desc & m, const llamacpp_inputs & in, const llamacpp_plan & p,
                          const runtime_plan & r, const llamacpp_report_figures & f) {
    const llamacpp_settings & s = in.settings;
    const std::string type_k(ggml_traits(s.type_k).name), type_v(ggml_traits(s.type_v).name);
    plan_words w;
    w.setting = fmt::format("n_ctx {} ({} K / {} V, {} sequence{})", with_commas(p.ctx.n_ctx), type_k, type_v,
                            p.ctx.n_seq, p.ctx.n_seq == 1 ? "" : "s");
    w.reserve = "margin";
    w.when_over = "llama.cpp would not refuse this: it moves layers to the CPU (--fit, the default) or fails to allocate, "
                  "and a spill to the CPU slows generation sharply.";
    w.fits_instead_by_cache_type = true;
    w.chart_settings = fmt::format(" - {} - np {} - ub {} - fa {}", llsec_type_pair(type_k, type_v), s.n_seq, s.n_ubatch,
                                   flash_attn_name(s.flash_attn));
    w.chart_reserve = fmt::format(" (margin {})", human_bytes(in.margin_bytes));
    const uint64_t per_token = r.kv_bytes_per_token.value_or(0);
    const uint64_t if_full = f.kv_bytes_per_token_if_all_full;
    const double ratio = per_token ? double(if_full) / double(per_token) : 0;
    w.chart_kv_note = fmt::format("KV per token ({}):\n{}: {} B\nall full attention: {} B{}", llsec_type_pair(type_k, type_v),
                                  m.name, with_commas(per_token), with_commas(if_full),
                                  ratio > 0 ? fmt::format(" ({:.2f}x)", ratio) : "");
    return w;
}

uint64_t llamacpp_weights_bytes_that_fit(const model_desc & m, const runtime_plan & r) {
    int64_t room = 0;
    for (const auto & d : r.devices) {
        // the device's weights as placement sized them: the target's and speculative decoding's (plan.cpp buffers)
        if (!d.is_host) room += d.free_bytes() + int64_t(d.bytes_of("weights") + d.bytes_of("mtp_weights") + d.bytes_of("draft_weights"));
    }
    return room > 0 ? uint64_t(room) + m.weights.token_embd.bytes : 0;
}

void llamacpp_search_sections(const model_desc & m, runtime_plan & p) {
    if (std::none_of(p.devices.begin(), p.devices.end(), [](const device_plan & d) { return !d.is_host; })) return;
    plan_section sec; // untitled: its rows follow the fit section's, with its indent
    const bool ram_known = p.host_ram && p.host_ram->known;
    add_row(sec, fmt::format("  Largest n_ctx that fits the GPU memory{} with these placement flags, by KV cache type (-ctk/-ctv):",
                             ram_known ? " and host RAM" : ""));
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
        const std::vector<plan_figure> fig = {count_figure("max_n_ctx", double(c.context_tokens), "tokens", k_src_search)};
        if (c.all_full_attention) {
            add_row(sec, fmt::format("    if all {} layers were full attention ({}): {}{}", m.n_layer, c.cache_type,
                                     with_commas(c.context_tokens), capped(c)), fig);
        } else if (!c.allowed) {
            add_row(sec, fmt::format("    {:<7} refused: {}", c.cache_type, c.refusal));
        } else {
            add_row(sec, fmt::format("    {:<7} {:>9}{}", c.cache_type, with_commas(c.context_tokens),
                                     c.context_tokens == 0 ? fmt::format("  (nothing fits: smaller weights or more GPU memory{} needed)",
                                                                         ram_known ? " or host RAM" : "")
                                                           : capped(c)), fig);
        }
    }
    if (!p.fits) {
        const uint32_t n_all = m.n_layer + m.n_layer_mtp + 1;
        add_row(sec, "  What would fit instead:");
        for (const auto & c : p.max_context) {
            if (!c.all_full_attention && c.allowed && c.context_tokens > 0) {
                add_row(sec, fmt::format("    -c {} with -ctk {} -ctv {}", c.context_tokens, c.cache_type, c.cache_type));
            }
        }
        for (const auto & a : p.alternatives) {
            if (a.knob == "n_gpu_layers") {
                add_row(sec, fmt::format("    -ngl {} (of {}): the first {} blocks run on the CPU from host RAM ({} in host "
                                         "memory) at n_ctx {} — this is the spill: it fits, but decoding slows down sharply",
                                         a.value, n_all, n_all - std::min<uint64_t>(n_all, a.value), human_bytes(a.host_bytes),
                                         with_commas(a.context_tokens)),
                        {count_figure("n_gpu_layers", double(a.value), "layers", k_src_search), size_figure("host", a.host_bytes, k_src_place)});
                break;
            }
        }
        for (const auto & a : p.alternatives) {
            if (a.knob == "n_cpu_moe") {
                add_row(sec, fmt::format("    --n-cpu-moe {}: the routed experts of the first {} blocks in host RAM ({} in host "
                                         "memory), attention and KV on the GPU", a.value, a.value, human_bytes(a.host_bytes)),
                        {count_figure("n_cpu_moe", double(a.value), "blocks", k_src_search), size_figure("host", a.host_bytes, k_src_place)});
                break;
            }
        }
        if (const uint64_t w = llamacpp_weights_bytes_that_fit(m, p); w > 0) {
            add_row(sec, fmt::format("    weights of at most {} (now {}) at n_ctx {}", human_bytes(w),
                                     human_bytes(m.weights.total_bytes()), with_commas(p.context_tokens)),
                    {size_figure("weights_bytes_that_fit", w, k_src_place)});
        }
    }
    if (!p.launch.empty()) add_row(sec, fmt::format("  Launch: {}", p.launch));
    p.sections.push_back(std::move(sec));
}

} // namespace kvfit::detail
