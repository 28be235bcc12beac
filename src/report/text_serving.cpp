// The human report of a plan with typed sections (include/kvfit/report.h render_text; runtime_plan::sections, built
// by each runtime in its own folder): framed by the device and model lines before and the verdict, the planner's
// searches and the launch after (vLLM, SGLang, Ollama, mlx-lm), or whole (sections_complete: llama.cpp). No runtime
// is named here and no figure is read from detail: a runtime that builds sections is rendered the same way.
#include "report/sections.h"
#include "kvfit/printable.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit::detail {
namespace {

// The GPUs of the plan as the device line names them; `nodes` > 1 (runtime_plan::nodes): "2 nodes of 8 x H100 (...)".
std::string devices(const plan_result & r, uint32_t nodes) {
    const std::vector<device_spec> & gpus = r.target.gpus;
    if (gpus.empty()) return "no GPU";
    const bool alike = std::all_of(gpus.begin(), gpus.end(), [&](const device_spec & g) {
        return g.name == gpus[0].name && g.memory_bytes == gpus[0].memory_bytes;
    });
    std::string s;
    if (alike) {
        s = fmt::format("{} x {} ({})", gpus.size(), gpus[0].name, gpu_memory_text(gpus[0]));
    } else { // unlike GPUs each named (the plan's warning says every rank is planned on the smallest)
        for (const auto & g : gpus) s += fmt::format("{}{} ({})", s.empty() ? "" : " + ", g.name, gpu_memory_text(g));
    }
    if (nodes > 1) s = fmt::format("{} nodes of {}", nodes, s);
    return s;
}

void lines(std::string & out, const char * head, const std::vector<std::string> & v) {
    for (const auto & x : v) out += fmt::format("{}{}\n", head, x);
}

} // namespace

void render_sections(std::string & out, const std::vector<plan_section> & sections) {
    for (const auto & sec : sections) {
        if (!sec.title.empty()) out += fmt::format("\n{}\n", sec.title);
        for (const auto & row : sec.rows) out += fmt::format("{}{}\n", sec.title.empty() ? "" : "  ", row.text);
    }
}

std::string render_complete_text(const plan_result & r) {
    std::string out;
    for (const auto & w : r.plan.warnings) out += fmt::format("warning: {}\n", printable(w, false));
    render_sections(out, r.plan.sections);
    out += "\nUnits: GiB = 2^30 bytes, MiB = 2^20 bytes, KiB = 2^10 bytes.\n";
    return out;
}

void render_search(std::string & out, const plan_result & r) {
    const runtime_plan & p = r.plan;
    if (!r.runtime || (p.max_context.empty() && p.alternatives.empty())) return;
    const runtime_info & rt = *r.runtime;
    const std::string ctx = std::string(rt.context.spelled);
    if (!p.max_context.empty()) {
        out += fmt::format("\nLargest {} that fits, by KV cache type ({}):\n", ctx, flag_spelling(rt, rt.cache_type_k));
        for (const auto & c : p.max_context) {
            const std::string top = c.capped ? "  (the top of the search, the model's context length: memory is not the limit)" : "";
            if (c.all_full_attention) {
                out += fmt::format("  if all {} layers were full attention ({}): {}{}\n", r.model.n_layer, c.cache_type,
                                   with_commas(c.context_tokens), top);
            } else if (!c.allowed) {
                out += fmt::format("  {:<9} refused: {}\n", c.cache_type, c.refusal);
            } else {
                out += fmt::format("  {:<9} {:>11}{}\n", c.cache_type, with_commas(c.context_tokens),
                                   c.context_tokens == 0 ? "  (none fits with the other settings as given)" : top);
            }
        }
    }
    if (p.alternatives.empty()) return;
    out += "What would fit instead (the settings changed):\n";
    for (const auto & a : p.alternatives) {
        const bool sets_context = a.knob.starts_with("context"); // "context", "context+sequences"
        out += fmt::format("  {}{}\n", a.flags, sets_context ? "" : fmt::format(" (at {} {})", ctx, a.context_tokens));
    }
}

std::string render_serving_text(const plan_result & r) {
    const model_desc & m = r.model;
    const runtime_plan & p = r.plan;
    std::string out;
    out += fmt::format("{} on {}: {}\n", printable(m.name, false), devices(r, p.nodes), p.rules);
    // every kind a layer has: chunked (Llama-4's local layers) and layers without attention only when present
    const uint32_t chunked = m.count(layer_kind::chunked), none = m.count(layer_kind::none);
    out += fmt::format("model: {} layers ({} full, {} sliding, {}{} MLA, {} recurrent{}), dtype {}{}\n", m.n_layer,
                       m.count(layer_kind::full), m.count(layer_kind::swa),
                       chunked ? fmt::format("{} chunked, ", chunked) : "", m.count(layer_kind::mla),
                       m.count(layer_kind::recurrent), none ? fmt::format(", {} without attention", none) : "",
                       m.dtype.empty() ? "unstated (bf16 assumed)" : m.dtype,
                       m.ssm_dtype.empty() ? "" : ", mamba_ssm_dtype " + m.ssm_dtype);
    render_sections(out, p.sections);

    out += fmt::format("\nVerdict: {}\n", p.fits ? "starts, and meets the requested length and concurrency"
                                                 : p.refusals.empty() ? "does not meet the request" : "does not start");
    lines(out, "  error: ", p.refusals);
    lines(out, "  warning: ", p.warnings);
    lines(out, "  assumed: ", p.assumptions);
    lines(out, "  note: ", p.notes);
    render_search(out, r);
    if (!p.launch.empty()) out += "\nLaunch\n" + p.launch + (p.launch.ends_with('\n') ? "" : "\n");
    out += "\nGiB = 2^30 bytes.\n";
    return out;
}

} // namespace kvfit::detail
