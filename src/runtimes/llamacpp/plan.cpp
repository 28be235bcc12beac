// llama.cpp behind the runtime interface (include/kvfit/llamacpp.h, runtime.h): flags -> settings -> plan_llamacpp ->
// runtime_plan, the llama-server command of a plan, and the registry entry with its knobs.
#include "kvfit/llamacpp.h"
#include "kvfit/printable.h"
#include "runtimes/llamacpp/graph_replay.h"
#include "runtimes/llamacpp/compute.h"
#include "runtimes/llamacpp/sections.h"
#include "core/util.h"

#include "kvfit/metal.h"
#include "kvfit/sources.h"
#include "kvfit/units.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit {
namespace {

using json = nlohmann::ordered_json;

const std::vector<uint64_t> k_default_contexts = {8192, 32768, 131072, 262144};

bool flash_attn_on(const llamacpp_settings & s) { return s.flash_attn != flash_attn_mode::off; }

buffer make_buffer(const char * name, uint64_t bytes, bool estimate = false) { return {name, bytes, estimate, ""}; }


// All KV caches of the model at `n_ctx` (the seeds' table).
uint64_t total_kv(const model_desc & m, const llamacpp_settings & s, uint64_t n_ctx) {
    llamacpp_settings t = s;
    t.n_ctx = n_ctx;
    const llamacpp_context c = llamacpp_context_size(m, t);
    uint64_t bytes = 0;
    for (const auto & kv : llamacpp_kv_caches(m, t, c)) bytes += kv.bytes();
    return bytes;
}

json settings_json(const llamacpp_inputs & in) {
    const llamacpp_settings & s = in.settings;
    const placement_settings & p = in.placement;
    json j;
    j["ctx_size"] = in.contexts;
    j["cache_type_k"] = ggml_traits(s.type_k).name;
    j["cache_type_v"] = ggml_traits(s.type_v).name;
    j["flash_attn"] = flash_attn_name(s.flash_attn);
    j["ubatch_size"] = s.n_ubatch;
    j["batch_size"] = s.n_batch;
    j["parallel"] = s.n_seq;
    j["kv_unified"] = s.kv_unified;
    j["swa_full"] = s.swa_full;
    j["mla_kv"] = s.mla == mla_layout::k_and_v;
    j["llamacpp_version"] = s.release == llamacpp_release::b5b4ebc5 ? "5b4ebc5" : "v0.5.0";
    j["margin_bytes"] = in.margin_bytes;
    j["n_gpu_layers"] = p.n_gpu_layers;
    j["no_kv_offload"] = p.no_kv_offload;
    j["tensor_split"] = p.tensor_split;
    j["override_tensor_cpu"] = p.override_tensor_cpu;
    j["cpu_moe"] = p.cpu_moe;
    j["n_cpu_moe"] = p.n_cpu_moe;
    // as given, so the settings do not depend on the machine: "auto", a variant, or "assumed" (detail.cpu_backend)
    j["cpu_features"] = p.cpu.source.rfind("this machine", 0) == 0 ? "auto" : p.cpu.source == "--cpu-features" ? p.cpu.variant : "assumed";
    j["mmap"] = p.mmap;
    j["repack"] = p.repack;
    j["no_host"] = p.no_host;
    if (s.spec.active()) j["spec_type"] = s.spec.mtp ? "draft-mtp" : "draft-simple"; // only with speculative decoding
    j["backend"] = s.backend ? gpu_backend_name(*s.backend) : "auto"; // as given; detail.backend: the one planned
    j["no_op_offload"] = !s.op_offload;
    j["n_outputs_max"] = s.server_outputs ? std::string("server") : s.n_outputs_max ? std::to_string(s.n_outputs_max) : std::string("batch");
    return j;
}

std::string c_features(const cpu_features & c) { return c.amx ? "AMX" : c.avx512 ? "AVX-512" : c.avx2 ? "AVX2" : "no AVX2"; }

std::string mib(uint64_t bytes) { return fmt::format("{:.2f} MiB", double(bytes) / 1048576.0); }

// The host's model buffers by llama.cpp's names, as its log prints them ("CPU_Mapped model buffer size = ...").
json cpu_backend_json(const model_desc & m, const llamacpp_plan & p) {
    const cpu_features & c = p.placement.cpu;
    json j;
    j["modelled"] = p.host_weights_exact;
    if (!p.host_weights_exact) return j; // no tensor list (config.json, catalog): the CPU does not enter the plan
    j["variant"] = c.variant;
    j["source"] = c.source;
    j["assumed"] = c.source.rfind("assumed", 0) == 0;
    j["features"] = {{"avx2", c.avx2}, {"avx512", c.avx512}, {"amx", c.amx}};
    j["extra_buffer_types"] = p.extra_buffers_used ? json(llamacpp_cpu_extra_buffer_types(c)) : json::array();
    j["mmap"] = p.placement.mmap;
    const cpu_weight_buffers & w = p.host_weights;
    json buffers = json::array();
    buffers.push_back({{"name", p.placement.mmap ? "CPU_Mapped" : "CPU"}, {"bytes", w.mapped_bytes}});
    if (w.amx_tensors) buffers.push_back({{"name", "AMX"}, {"bytes", w.amx_bytes}, {"n_tensors", w.amx_tensors}});
    if (w.repack_tensors) buffers.push_back({{"name", "CPU_REPACK"}, {"bytes", w.repack_bytes}, {"n_tensors", w.repack_tensors}});
    j["model_buffers"] = buffers;
    (void)m;
    return j;
}

// "CPU_Mapped 205.29 MiB + CPU_REPACK 18.00 MiB (libggml-cpu-zen4, this machine (/proc/cpuinfo))": only when a weight
// moved to an extra buffer.
std::string host_weights_what(const llamacpp_plan & p) {
    const cpu_weight_buffers & w = p.host_weights;
    if (!p.host_weights_exact || w.amx_tensors + w.repack_tensors == 0) return "";
    std::string out = fmt::format("{} {}", p.placement.mmap ? "CPU_Mapped" : "CPU", mib(w.mapped_bytes));
    if (w.amx_tensors) out += fmt::format(" + AMX {}", mib(w.amx_bytes));
    if (w.repack_tensors) out += fmt::format(" + CPU_REPACK {}", mib(w.repack_bytes));
    return out + fmt::format(" (libggml-cpu-{}, {})", p.placement.cpu.variant, p.placement.cpu.source);
}

// The backend's terms on GPU `dev` (compute_cuda.cpp) beside the buffers they enlarge: the buffer becomes an estimate
// and says what it holds beyond the CPU graph ("+ flash_attn_ext_f16_kv 1024.00 MiB (CUDA estimate from ggml source)").
void backend_terms_what(const llamacpp_plan & p, uint32_t dev, device_plan & dp) {
    for (const auto & t : p.backend_terms) {
        if (t.device != dev || !t.applied || t.added_bytes == 0) continue;
        for (auto & b : dp.buffers) {
            if (b.name != t.buffer) continue;
            b.estimate = true;
            b.what += fmt::format("{}+ {} {}", b.what.empty() ? "" : "; ", t.name, mib(t.added_bytes));
        }
    }
    for (auto & b : dp.buffers) {
        if (b.estimate && b.what.find("+ ") != std::string::npos && b.what.find("estimate from") == std::string::npos) {
            b.what += fmt::format(" ({} estimate from ggml's source and public logs; no {} run)", gpu_backend_name(p.backend.backend),
                                  gpu_backend_name(p.backend.backend));
        }
    }
}

// detail.backend: the backend planned, why, and its terms; warnings for the CUDA terms another GPU backend does not
// get, a note when the backend is assumed (docs/json.md).
json backend_json(const llamacpp_plan & p, std::vector<std::string> & warnings, std::vector<std::string> & notes) {
    json j;
    j["name"] = gpu_backend_name(p.backend.backend);
    j["source"] = p.backend.source;
    j["assumed"] = p.backend.assumed;
    json terms = json::array();
    std::string skipped;
    for (const auto & t : p.backend_terms) {
        terms.push_back({{"name", t.name}, {"device", t.device}, {"buffer", t.buffer}, {"tensor_bytes", t.tensor_bytes},
                         {"added_bytes", t.added_bytes}, {"applied", t.applied}, {"estimate", true}, {"what", t.what}});
        if (!t.applied && t.added_bytes > 0) {
            skipped += fmt::format("{}{} (CUDA: +{} on {})", skipped.empty() ? "" : ", ", t.name, mib(t.added_bytes),
                                   p.devices[t.device].name);
        }
    }
    j["terms"] = terms;
    if (!skipped.empty()) {
        warnings.push_back(fmt::format("backend {}: compute is planned with the CPU graph; not modelled for it: {}; keep "
                                       "a margin", gpu_backend_name(p.backend.backend), skipped));
    }
    if (p.backend.assumed) notes.push_back("backend " + std::string(gpu_backend_name(p.backend.backend)) + " " + p.backend.source);
    return j;
}

// Speculative decoding's buffers on one device (llamacpp_plan::spec_usage, spec.cpp): "mtp_weights", "mtp_kv",
// "mtp_output", "mtp_compute" for the MTP context, "draft_weights", "draft_kv", "draft_state", "draft_output", "draft_compute" for a
// draft model; only those with bytes.
void add_spec_buffers(device_plan & dp, const llamacpp_plan & p, const buffer_set & sp) {
    const bool mtp = p.spec.mtp;
    // with both, the MTP context's KV / compute and the draft's share a device's figures: named after the draft
    const char * pre = p.spec.draft ? "draft_" : "mtp_";
    const std::string w = std::string(pre) + "weights", kv = std::string(pre) + "kv", st = std::string(pre) + "state",
                      out = std::string(pre) + "output", comp = std::string(pre) + "compute";
    auto add = [&](const std::string & name, uint64_t bytes, bool estimate, std::string what) {
        if (bytes > 0) dp.buffers.push_back({name, bytes, estimate, std::move(what)});
    };
    add(w, sp.weights_bytes, false, mtp && !p.spec.draft ? "the NextN (MTP) block, loaded with draft-mtp" : "the draft model");
    add(kv, sp.kv_bytes, false, fmt::format("{} cells per stream", with_commas(p.spec.ctx.n_ctx_seq)));
    add(st, sp.state_bytes, false, "");
    add(out, sp.output_bytes, false, "");
    add(comp, sp.compute_bytes, p.spec.compute_estimate && mtp, mtp ? "the MTP graph (estimate)" : "");
}

json spec_json(const llamacpp_plan & p) {
    const auto & u = p.spec;
    const llamacpp_spec & sp = p.settings.spec;
    json j;
    j["type"] = u.mtp && u.draft ? "draft-mtp+draft-simple" : u.mtp ? "draft-mtp" : "draft-simple";
    j["n_max"] = sp.n_max;
    j["draft_ctx"] = sp.draft_ctx == spec_draft_ctx::target ? "target" : "n_ctx_train";
    j["draft_model"] = sp.draft_path;
    j["cache_type_k"] = ggml_traits(sp.type_k).name;
    j["cache_type_v"] = ggml_traits(sp.type_v).name;
    j["n_ctx"] = u.ctx.n_ctx;
    j["n_ctx_seq"] = u.ctx.n_ctx_seq;
    j["n_outputs_max"] = p.ctx.n_outputs_max;
    j["n_rs_seq"] = p.ctx.n_rs_seq;
    j["n_layer_kv"] = u.n_layer_kv;
    j["weights_bytes"] = u.bytes.weights_bytes;
    j["kv_bytes"] = u.bytes.kv_bytes;
    j["state_bytes"] = u.bytes.state_bytes;
    j["output_bytes"] = u.bytes.output_bytes;
    j["compute_bytes"] = u.bytes.compute_bytes;
    j["compute_estimate"] = u.compute_estimate && u.mtp;
    // how the MTP compute buffer is estimated (spec.cpp llamacpp_mtp_buffers); "" without an MTP context
    j["compute_rule"] = !u.mtp                 ? ""
                        : u.compute_upper_bound ? "target_bound"
                        : u.compute_fitted      ? "fitted"
                                                : "target_estimate";
    j["total_bytes"] = u.bytes.total();
    return j;
}

runtime_plan plan(const model_desc & m, const flag_values & f, const machine & mc) {
    const llamacpp_inputs in = parse_llamacpp_flags(f);
    const llamacpp_settings & s = in.settings;
    const bool from_model = in.contexts.empty();
    const uint64_t requested = from_model ? m.n_ctx_train : *std::max_element(in.contexts.begin(), in.contexts.end());
    llamacpp_settings at = s;
    at.n_ctx = requested;
    const llamacpp_plan lp = plan_llamacpp(m, at, in.placement, mc.gpus, in.margin_bytes);

    runtime_plan r = llamacpp_runtime_plan(m, lp);
    r.context_tokens = requested;
    if (requested > m.n_ctx_train && m.n_ctx_train > 0) {
        r.warnings.push_back(fmt::format("n_ctx {} exceeds the model's training context {}: llama.cpp accepts it, but "
                                         "quality beyond it is not what the model was trained for; fit searches stop "
                                         "at {}", with_commas(requested), with_commas(m.n_ctx_train),
                                         with_commas(m.n_ctx_train)));
    }
    // a raised Metal working set is part of the plan: the launch sets it first (metal.h)
    r.launch = iogpu_sysctl_prefix(s.iogpu_wired_limit_mb) + llama_server_command(m, s, in.placement, requested);

    const bool fa = flash_attn_on(s); // V rows are padded without flash attention
    const model_desc full = all_full_attention_variant(m);
    detail::llamacpp_report_figures fig;
    fig.from_model = from_model;
    // kv_bytes_per_token_if_all_full(m, ...), from the variant already built
    fig.kv_bytes_per_token_if_all_full = kv_bytes_per_token(full, s.type_k, s.type_v, s.mla, fa, s.release);
    fig.kv_bytes_per_token_f16 = kv_bytes_per_token(m, ggml_type::f16, ggml_type::f16, s.mla, fa, s.release);
    fig.kv_bytes_per_token_q8_0 = kv_bytes_per_token(m, ggml_type::q8_0, ggml_type::q8_0, s.mla, fa, s.release);
    for (uint64_t n_ctx : from_model ? k_default_contexts : in.contexts) {
        fig.contexts.push_back({n_ctx, total_kv(m, s, n_ctx), total_kv(full, s, n_ctx)});
    }
    json d;
    d["settings"] = settings_json(in);
    d["requested_from_model"] = from_model;
    for (auto it = r.detail.begin(); it != r.detail.end(); ++it) d[it.key()] = it.value();
    d["kv_bytes_per_token_if_all_full_attention"] = fig.kv_bytes_per_token_if_all_full;
    d["kv_bytes_per_token_f16"] = fig.kv_bytes_per_token_f16;
    d["kv_bytes_per_token_q8_0"] = fig.kv_bytes_per_token_q8_0;
    d["contexts"] = json::array();
    for (const auto & c : fig.contexts) {
        d["contexts"].push_back({{"n_ctx", c.n_ctx}, {"kv_bytes", c.kv_bytes}, {"kv_bytes_if_all_full_attention", c.kv_bytes_if_all_full}});
    }
    if (!mc.gpus.empty()) d["weights_bytes_that_fit"] = detail::llamacpp_weights_bytes_that_fit(m, r);
    r.detail = std::move(d);
    // the text report's sections (sections.cpp): the whole report; the planner appends its searches' words
    r.sections = detail::llamacpp_sections(m, in, lp, r, mc.gpus, fig);
    r.sections_complete = true;
    r.words = detail::llamacpp_words(m, in, lp, r, fig);
    return r;
}

// plan(m, f, mc).fits alone (runtime.h: runtime_info::fits): the same settings, the same plan_llamacpp, no report.
bool fits(const model_desc & m, const flag_values & f, const machine & mc) {
    const llamacpp_inputs in = parse_llamacpp_flags(f);
    llamacpp_settings at = in.settings;
    at.n_ctx = in.contexts.empty() ? m.n_ctx_train : *std::max_element(in.contexts.begin(), in.contexts.end());
    // with host RAM known (--ram, --gpu auto), what the host needs must fit it too (host_ram.cpp)
    return llamacpp_fits(m, at, in.placement, mc.gpus, in.margin_bytes, true);
}

void check_flags(const flag_values & f) { (void)parse_llamacpp_flags(f); }

void default_weights(model_desc & m, std::vector<std::string> & warn) {
    // A config.json gives no bytes: plan with the format most people run in llama.cpp, and say so.
    apply_weight_format(m, default_weight_format);
    warn.push_back(fmt::format("weights assumed {} (no --weights or --weights-size given; the file holds no weight "
                               "bytes)", default_weight_format));
}

// -c: llama.cpp pads n_ctx to 256 per stream, so the context is searched in steps of 256 x streams, up to the
// model's training context.
knob_range context_range(const model_desc & m, const flag_values & f) {
    const llamacpp_settings s = parse_llamacpp_flags(f).settings;
    const uint64_t step = 256ull * (s.kv_unified ? 1 : s.n_seq);
    // up to the training context, and at least one step (-np 256 without --kv-unified: 65,536 > a 40,960 training
    // context, which llama.cpp still creates: n_ctx_seq is padded to 256 per stream)
    return {step, std::max<uint64_t>(step, m.n_ctx_train ? m.n_ctx_train : k_context_search_top), step};
}

// -ngl counts the output layer: 0 .. n_layer + n_layer_mtp + 1. Fewer layers on the GPU never need more GPU memory.
knob_range gpu_layers_range(const model_desc & m, const flag_values &) { return {0, m.n_layer + m.n_layer_mtp + 1, 1}; }

// --n-cpu-moe N keeps the routed experts of blocks 0..N-1 on the CPU: only for MoE models.
knob_range cpu_moe_range(const model_desc & m, const flag_values &) {
    return {0, m.n_layer, m.weights.expert_params() > 0 ? 1u : 0u};
}

} // namespace

runtime_plan llamacpp_runtime_plan(const model_desc & m, const llamacpp_plan & p) {
    const llamacpp_settings & s = p.settings;
    // "" when the compute buffer is modelled (a stage set, or a recorded graph replayed at this context)
    const std::string compute_unmodelled = llamacpp_compute_unmodelled(m, s, &p.ctx);
    runtime_plan r;
    r.runtime = "llama.cpp";
    r.rules = llamacpp_release_name(s.release);
    r.context_tokens = s.n_ctx;
    r.sequences = p.ctx.n_seq;
    uint32_t output_device = 0;
    const std::string gpu_class = detail::gpu_placement_class(m, p);
    double gpu_range_lo = 0, gpu_range_hi = 0;
    uint32_t gpu_range_rows = 0;
    for (size_t i = 0; i < p.devices.size(); ++i) {
        const device_usage & d = p.devices[i];
        const buffer_set & u = d.used;
        device_plan dp{d.name, d.is_host, d.capacity_bytes, d.margin_bytes, {}, d.n_layers};
        // in llama.cpp's order: weights at load, KV and state at context creation, then output and compute
        // the target's own buffers; speculative decoding's share (d.spec, spec.cpp) follows as its own buffers
        const buffer_set & sp = d.spec;
        dp.buffers = {make_buffer("weights", u.weights_bytes - sp.weights_bytes, !m.weights.exact),
                      make_buffer("kv", u.kv_bytes - sp.kv_bytes), make_buffer("state", u.state_bytes - sp.state_bytes),
                      make_buffer("output", u.output_bytes - sp.output_bytes),
                      make_buffer("compute", u.compute_bytes - sp.compute_bytes, !compute_unmodelled.empty())};
        if (d.is_host) dp.buffers[0].what = host_weights_what(p);
        // with GPUs: a compute buffer the scheduler replay did not give is an estimate, with its measured error
        if (p.devices.size() > 1 && !p.gpu_compute.replayed) {
            buffer & cb = dp.buffers[4];
            cb.estimate = true;
            if (const auto e = detail::gpu_compute_error(s, gpu_class, d.is_host)) {
                cb.has_range = true, cb.range_lo = e->lo, cb.range_hi = e->hi;
                gpu_range_lo = std::min(gpu_range_lo, e->lo), gpu_range_hi = std::max(gpu_range_hi, e->hi);
                gpu_range_rows = std::max(gpu_range_rows, e->rows);
            }
        }
        add_spec_buffers(dp, p, sp);
        backend_terms_what(p, uint32_t(i), dp); // the backend's terms on this GPU (compute_cuda.cpp)
        r.devices.push_back(std::move(dp));
        if (d.has_output) output_device = uint32_t(i);
    }
    // llama.cpp's own fit (--fit, llama-fit-params, node-llama-cpp) sizes the prompt graph in no_alloc mode, after a
    // scheduler reset that drops the graph callback's pins: it can see other compute buffers than a context allocates
    // one note per distinct pair of figures as written, naming every GPU it holds for by its index ("GPUs 1-7 (H100 SXM)")
    std::vector<std::pair<std::pair<std::string, std::string>, std::vector<size_t>>> fit_notes;
    for (size_t i = 0; p.gpu_compute.replayed && i < p.devices.size() && i < p.gpu_compute.prompt_bytes.size(); ++i) {
        const uint64_t fit = p.gpu_compute.prompt_bytes[i], run = p.devices[i].used.compute_bytes - p.devices[i].spec.compute_bytes;
        if (fit == run) continue;
        std::pair<std::string, std::string> figures{detail::mib_text(fit), detail::mib_text(run)};
        auto it = std::find_if(fit_notes.begin(), fit_notes.end(), [&](const auto & n) {
            return n.first == figures && p.devices[n.second.front()].name == p.devices[i].name;
        });
        if (it == fit_notes.end()) it = fit_notes.insert(fit_notes.end(), {std::move(figures), {}});
        it->second.push_back(i);
    }
    for (const auto & [figures, idx] : fit_notes) {
        const std::string & name = p.devices[idx.front()].name;
        std::string who = name;
        if (p.devices.size() > 1) {
            std::string list;
            for (size_t a = 0; a < idx.size();) {
                size_t b = a;
                while (b + 1 < idx.size() && idx[b + 1] == idx[b] + 1) ++b;
                list += fmt::format("{}{}", list.empty() ? "" : ", ",
                                    b == a ? std::to_string(idx[a]) : fmt::format("{}-{}", idx[a], idx[b]));
                a = b + 1;
            }
            who = fmt::format("GPU{} {} ({})", idx.size() == 1 ? "" : "s", list, name);
        }
        r.notes.push_back(fmt::format("{}: llama.cpp's --fit (no_alloc) measures a {} compute buffer here, a context "
                                      "allocates {} (its prompt graph pins each layer's norm to the layer's GPU; the fit's "
                                      "reserve drops the pins: ggml_backend_sched_reserve_size)",
                                      who, figures.first, figures.second));
    }
    for (const auto & kv : p.kv) {
        r.caches.push_back({kv.name, kv.cells_per_stream, kv.n_stream, kv.n_layer, kv.k_bytes, kv.v_bytes});
    }
    r.kv_bytes_per_token = kv_bytes_per_token(m, s.type_k, s.type_v, s.mla, flash_attn_on(s), s.release);
    llamacpp_context one_sequence;
    one_sequence.n_seq = 1;
    r.state_bytes_per_sequence = llamacpp_recurrent(m, one_sequence).bytes();
    if (!compute_unmodelled.empty()) r.warnings.push_back("llama.cpp compute buffer: " + compute_unmodelled + "; keep a margin");
    if (p.devices.size() > 1 && !p.gpu_compute.replayed) {
        // loud: the figures a GPU verdict rests on are not the scheduler's
        std::string w = "llama.cpp compute buffers with GPUs: estimates (" + p.gpu_compute.why + ")";
        if (p.backend.backend != gpu_backend::cuda && p.backend.backend != gpu_backend::rocm) {
            // the ranges below were measured on ggml-cuda's scheduler; another backend's error was never measured
            w += fmt::format("; the {} backend's estimate error was never measured (the ranges kvfit has are ggml-cuda's)",
                             gpu_backend_name(p.backend.backend));
        } else if (gpu_range_rows > 0) {
            w += fmt::format("; measured against llama.cpp's own scheduler on a simulated CUDA device, this placement's "
                             "estimates ({}, {} rows) were {:+.0f} % to {:+.0f} % off (docs/accuracy-cuda-{}.md)", gpu_class,
                             gpu_range_rows, 100 * gpu_range_lo, 100 * gpu_range_hi, detail::release_tag(s));
        } else {
            w += "; their error for this placement was never measured";
        }
        r.warnings.push_back(w + "; keep a margin");
    }
    if (p.gpu_compute.replayed && !p.gpu_compute.assumed.empty()) {
        // the Vulkan replay: ggml-vulkan's rules are read from source, the driver's limits cannot be
        r.warnings.push_back("llama.cpp compute buffers on Vulkan: ggml-vulkan v0.5.0's supports_op, offload_op and "
                             "graph_optimize reorder replayed from source; assumed, not read from your driver: " +
                             p.gpu_compute.assumed + "; keep a margin");
    }
    r.notes.insert(r.notes.end(), p.notes.begin(), p.notes.end()); // the GPUs' budget (an Apple GPU's working set)
    r.starts = true; // llama.cpp does not refuse for memory: --fit moves layers, or an allocation fails
    r.fits = p.fits();
    json d;
    d["n_ctx"] = p.ctx.n_ctx;
    d["n_ctx_seq"] = p.ctx.n_ctx_seq;
    d["n_seq"] = p.ctx.n_seq;
    d["n_stream"] = p.ctx.n_stream;
    d["n_batch"] = p.ctx.n_batch;
    d["n_ubatch"] = p.ctx.n_ubatch;
    // outputs the graph reserves logits for (llama-context.cpp:250, 672): llama-server's n_parallel x (1 + n_max)
    // (server_output_limits, server-context.cpp:41-53) by default, n_batch with --n-outputs-max batch
    d["n_outputs_max"] = p.ctx.n_outputs_max;
    d["flash_attn"] = p.ctx.flash_attn;
    d["n_gpu_layers"] = p.n_gpu_layers;
    d["output_device"] = output_device;
    d["compute_modelled"] = compute_unmodelled.empty(); // false: the compute buffer is an estimate (warned)
    // the reserve graph recorded from the real llama.cpp and replayed, when there is one (graph_replay.h)
    if (p.gpu_compute.replayed) d["compute_graph"] = p.gpu_compute.variant;
    else if (const auto r = detail::sched_compute_cpu(m, s, p.ctx)) d["compute_graph"] = r->variant;
    else if (const auto r = detail::replay_compute(m, s, p.ctx)) d["compute_graph"] = r->variant;
    d["compute_graph_key"] = detail::llamacpp_graph_key(m);
    // the compute buffers on GPUs: the scheduler replay of the recorded graph (compute_sched.cpp), or the rules
    if (!p.devices.empty() && p.devices.size() > 1) {
        const auto & gc = p.gpu_compute;
        json g{{"replayed", gc.replayed}, {"full_offload_rule", gc.full_offload_rule}};
        if (gc.replayed) {
            g["variant"] = gc.variant;
            g["prompt_bytes"] = gc.prompt_bytes; // per device, the prompt graph's: what a no_alloc fit reserves
            g["n_splits"] = gc.n_splits;
            g["n_copies"] = gc.n_copies;
            if (!gc.assumed.empty()) g["assumed"] = gc.assumed;
        } else {
            g["why"] = gc.why;
        }
        d["gpu_compute"] = std::move(g);
    }
    // the weights as a no-mmap (or no_alloc) load sizes them, when that differs from the mmap figure: + the
    // duplicated tied output (llamacpp_tied_duplicate_bytes)
    if (const uint64_t dup = llamacpp_tied_duplicate_bytes(m); dup > 0) d["weights_bytes_no_mmap"] = m.weights.total_bytes() + dup;
    d["recurrent"] = {{"n_layer", p.rs.n_layer}, {"n_seq", p.rs.n_seq}, {"r_bytes", p.rs.r_bytes},
                      {"s_bytes", p.rs.s_bytes}, {"p_bytes", p.rs.p_bytes}, {"comp_bytes", p.rs.comp_bytes}};
    d["cpu_backend"] = cpu_backend_json(m, p);
    if (s.spec.active()) {
        d["spec"] = spec_json(p);
        if (!p.spec.why.empty()) r.warnings.push_back("speculative decoding: " + p.spec.why + "; keep a margin");
    }
    d["backend"] = backend_json(p, r.warnings, r.notes);
    if (p.host_weights_exact && p.extra_buffers_used && p.placement.cpu.source.rfind("assumed", 0) == 0 &&
        p.host_weights.amx_tensors + p.host_weights.repack_tensors > 0) {
        r.notes.push_back(fmt::format("CPU assumed: {} (libggml-cpu-{}); its extra buffers hold {} of the host's weights: "
                                      "pass --cpu-features for the CPU that runs them (auto: this machine)",
                                      c_features(p.placement.cpu), p.placement.cpu.variant,
                                      mib(p.host_weights.amx_bytes + p.host_weights.repack_bytes)));
    }
    // a config.json's NextN/MTP blocks, planned as llama.cpp's converter writes the GGUF (model_desc::n_layer_mtp)
    if (m.n_layer_mtp > 0 && m.n_layer_mtp_apart == m.n_layer_mtp) {
        r.notes.push_back(fmt::format("planned as llama.cpp's converter writes the GGUF: block_count {} = {} layers + {} "
                                      "NextN/MTP block{} (loaded unused; -ngl counts {} layers with the output, -ts splits "
                                      "them); a GGUF converted with --no-mtp has block_count {}",
                                      m.n_layer + m.n_layer_mtp, m.n_layer, m.n_layer_mtp, m.n_layer_mtp == 1 ? "" : "s",
                                      m.n_layer + m.n_layer_mtp + 1, m.n_layer));
    }
    r.detail = std::move(d);
    llamacpp_extras_report(m, p, r); // --mmproj, --lora, host RAM (host_ram.cpp)
    return r;
}

std::string llama_server_command(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                                 uint64_t n_ctx) {
    // llama-server loads a GGUF: the file planned, else (a catalog model, a config.json, an hf: repository) the GGUF
    // named after the model that the user converts or downloads, never the config.json
    const bool gguf = m.source.size() > 5 && m.source.ends_with(".gguf");
    std::string cmd = fmt::format("llama-server -m {}", shell_word(gguf ? m.source : m.name + ".gguf"));
    // a GGUF read from the Hub (hf:org/name[@rev][:QUANT|:file.gguf]): llama.cpp's own spelling, -hf org/name[:QUANT]
    // or -hf org/name -hff file.gguf (common/arg.cpp; -hf takes no revision)
    if (m.source.starts_with("hf:") && m.weights.format == "gguf") {
        std::string repo = m.source.substr(3), sel;
        if (const auto c = repo.find(':'); c != std::string::npos) sel = repo.substr(c + 1), repo.resize(c);
        if (const auto at = repo.find('@'); at != std::string::npos) repo.resize(at);
        const bool file = sel.size() > 5 && (sel.ends_with(".gguf") || sel.ends_with(".GGUF"));
        cmd = fmt::format("llama-server -hf {}{}", shell_word(file || sel.empty() ? repo : repo + ":" + sel),
                          file ? " -hff " + shell_word(sel) : "");
    }
    cmd += fmt::format(" -c {}", n_ctx);
    if (s.n_seq != 1) cmd += fmt::format(" -np {}", s.n_seq);
    if (s.kv_unified) cmd += " --kv-unified";
    const int32_t ngl = p.n_gpu_layers;
    cmd += ngl < 0 ? fmt::format(" -ngl {}", m.n_layer + m.n_layer_mtp + 1) : fmt::format(" -ngl {}", ngl);
    cmd += s.flash_attn == flash_attn_mode::off ? " -fa off" : " -fa on";
    if (s.type_k != ggml_type::f16) cmd += fmt::format(" -ctk {}", ggml_traits(s.type_k).name);
    if (s.type_v != ggml_type::f16) cmd += fmt::format(" -ctv {}", ggml_traits(s.type_v).name);
    if (s.n_ubatch != 512) cmd += fmt::format(" -ub {}", s.n_ubatch);
    if (s.n_batch != 2048) cmd += fmt::format(" -b {}", s.n_batch);
    if (s.swa_full) cmd += " --swa-full";
    if (!p.tensor_split.empty()) {
        cmd += " -ts ";
        for (size_t i = 0; i < p.tensor_split.size(); ++i) cmd += fmt::format("{}{}", i ? "," : "", p.tensor_split[i]);
    }
    if (p.cpu_moe) cmd += " --cpu-moe";
    if (p.n_cpu_moe) cmd += fmt::format(" --n-cpu-moe {}", p.n_cpu_moe);
    if (p.no_kv_offload) cmd += " --no-kv-offload";
    if (!p.mmap) cmd += " --load-mode none"; // both releases (5b4ebc5's --no-mmap is deprecated, v0.5.0 has none)
    if (!p.repack) cmd += " --no-repack";
    if (p.no_host) cmd += " --no-host";
    if (s.mmproj) cmd += " --mmproj " + shell_word(s.mmproj->path) + (s.mmproj_offload ? "" : " --no-mmproj-offload");
    for (const auto & a : s.lora) {
        cmd += a.scale == 1.0 ? " --lora " + shell_word(a.path)
                              : " --lora-scaled " + shell_word(fmt::format("{}:{}", a.path, a.scale));
    }
    if (s.cache_ram_mib != llamacpp_default_cache_ram_mib) cmd += fmt::format(" --cache-ram {}", s.cache_ram_mib);
    if (s.ctx_checkpoints != llamacpp_default_ctx_checkpoints) cmd += fmt::format(" --ctx-checkpoints {}", s.ctx_checkpoints);
    // speculative decoding (spec.cpp), as v0.5.0's common/arg.cpp spells it
    const llamacpp_spec & sp = s.spec;
    if (sp.mtp) cmd += " --spec-type draft-mtp";
    if (!sp.draft_path.empty()) cmd += " -md " + shell_word(sp.draft_path);
    if (sp.active() && sp.n_max != 3) cmd += fmt::format(" --spec-draft-n-max {}", sp.n_max);
    if (sp.draft_n_gpu_layers >= 0) cmd += fmt::format(" -ngld {}", sp.draft_n_gpu_layers);
    if (sp.type_k != ggml_type::f16) cmd += fmt::format(" -ctkd {}", ggml_traits(sp.type_k).name);
    if (sp.type_v != ggml_type::f16) cmd += fmt::format(" -ctvd {}", ggml_traits(sp.type_v).name);
    if (!sp.draft_devices.empty()) {
        std::string d;
        for (int32_t i : sp.draft_devices) d += i < 0 ? std::string("none") : fmt::format("{}CUDA{}", d.empty() ? "" : ",", i);
        cmd += " -devd " + d;
    }
    if (!s.op_offload) cmd += " --no-op-offload";
    cmd += " --fit off"; // the plan fixes every setting; llama.cpp's own --fit would otherwise change them
    return cmd;
}

runtime_info llamacpp_runtime() {
    runtime_info r;
    r.name = "llama.cpp";
    r.display = "llama.cpp";
    r.summary = "llama.cpp's llama-server (default): KV caches, recurrent state, compute buffer, placement with -ngl";
    r.flags = llamacpp_flags;
    r.check_flags = check_flags;
    r.default_weights = default_weights;
    r.adapt_model = llamacpp_adapt_model;
    r.plan = plan;
    r.fits = fits;
    r.search_sections = detail::llamacpp_search_sections;
    r.context = {"context", "ctx_size", "-c", false, context_range, {}};
    r.knobs = {
        r.context, // the largest context that fits with the requested flags: its command becomes the launch
        // the spill llama.cpp's --fit makes first: fewer layers on the GPU (common/fit.cpp, common_params_fit_impl)
        {"n_gpu_layers", "n_gpu_layers", "-ngl", false, gpu_layers_range, {{"n_cpu_moe", "0"}}, nullptr, true},
        // for MoE models, the other move of --fit: routed experts of the first N blocks in host RAM
        {"n_cpu_moe", "n_cpu_moe", "--n-cpu-moe", true, cpu_moe_range, {{"n_gpu_layers", "all"}}, nullptr, true},
    };
    r.cache_types = {"f16", "q8_0", "q4_0"};
    r.cache_type_k = "cache_type_k";
    r.cache_type_v = "cache_type_v";
    return r;
}

} // namespace kvfit
