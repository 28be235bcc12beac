// The human report (include/kvfit/report.h: render_text): the dispatch on what the plan carries, buffer labels, and
// the common lines of a plan without sections; the sections themselves are printed by text_serving.cpp. Prints only
// what the plan holds; names no runtime.
#include "report/sections.h"
#include "kvfit/printable.h"

#include <fmt/format.h>

namespace kvfit {
namespace detail {

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

// What the plan carries decides the report (runtime.h): no sections, the common lines; sections that are the whole
// report (sections_complete), printed after the warnings; else the sections framed by the device and model lines,
// the verdict, the searches and the launch.
std::string render_text(const plan_result & r) {
    if (r.plan.sections.empty()) return detail::render_generic_text(r);
    if (r.plan.sections_complete) return detail::render_complete_text(r);
    return detail::render_serving_text(r);
}

} // namespace kvfit
