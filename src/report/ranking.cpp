// The ranked list as text and JSON (include/kvfit/ranking.h). Every figure is the planner's; nothing is computed here.
#include "kvfit/ranking.h"

#include "kvfit/gpus.h"
#include "kvfit/metal.h"
#include "kvfit/report.h"
#include "kvfit/runtime.h"
#include "kvfit/units.h"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit {
namespace {

using json = nlohmann::ordered_json;

// 8,190,735,360 -> "8.2B"; 671,026,419,200 -> "671B"; 494,032,768 -> "0.49B"; 0 -> "?"
std::string params_text(uint64_t n) {
    if (n == 0) return "?";
    const double b = double(n) / 1e9;
    return b >= 100 ? fmt::format("{:.0f}B", b) : b >= 1 ? fmt::format("{:.1f}B", b) : fmt::format("{:.2f}B", b);
}

// The GPUs as the plans budget them: an Apple GPU by its Metal working set beside its unified memory (metal.h: the
// rule every runtime that runs on a Mac plans with), "16.00 GiB Metal working set (24.00 GiB unified memory; ...)".
std::string gpus_text(const machine & mc, const rank_settings & s) {
    if (mc.gpus.empty()) return "no GPU";
    std::vector<std::string> notes;
    uint64_t wired = 0;
    if (const std::string w = s.flags.text("iogpu_wired_limit_mb"); !w.empty()) wired = parse_flag_count("--iogpu-wired-limit-mb", w, 0, 1ull << 32);
    const bool apple = std::any_of(mc.gpus.begin(), mc.gpus.end(), [](const device_spec & g) { return g.vendor == "Apple"; });
    const std::vector<device_spec> gpus = apple ? metal_budget(mc.gpus, wired, notes) : mc.gpus;
    std::string out;
    for (const auto & g : gpus) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", g.name, gpu_memory_text(g));
    return out;
}

std::string weights_text(const rank_row & r) {
    return fmt::format("{} {}{}", r.weights, human_bytes(r.weights_bytes), r.weights_exact ? "" : "*");
}

} // namespace

std::string render_ranking_text(const std::vector<rank_row> & rows, const machine & mc, const rank_settings & s) {
    const runtime_info & rt = find_runtime(s.runtime);
    size_t w = 5;
    for (const auto & r : rows) w = std::max(w, r.name.size());
    size_t n_fit = 0, n_short = 0, n_err = 0;
    for (const auto & r : rows) (r.error.empty() ? (r.fits ? n_fit : n_short) : n_err)++;
    std::string out = fmt::format("{} model{} on {} under {} rules: {} fit{}, {} do not{}\n", rows.size(),
                                  rows.size() == 1 ? "" : "s", gpus_text(mc, s), rt.display, n_fit, n_fit == 1 ? "s" : "",
                                  n_short, n_err ? fmt::format(", {} could not be planned", n_err) : "");
    if (n_fit) {
        out += fmt::format("\n  {:<{}} {:>6}  {:<18} {:<5} {:>20} {:>10}\n", "model", w, "params", "weights", "KV",
                           "largest context", "decode");
        for (const auto & r : rows) {
            if (!r.error.empty() || !r.fits) continue;
            const std::string ctx = fmt::format("{}{}", with_commas(r.context_tokens), r.context_capped ? " (trained)" : "");
            const std::string dec = r.decode_tokens_per_s ? fmt::format("{:.1f} t/s", *r.decode_tokens_per_s) : "-";
            out += fmt::format("  {:<{}} {:>6}  {:<18} {:<5} {:>20} {:>10}{}\n", r.name, w, params_text(r.n_params),
                               weights_text(r), r.cache_type, ctx, dec, r.changed.empty() ? "" : "  with " + r.changed);
        }
    }
    if (n_short) {
        out += "\nDo not fit, even at the smallest format and KV cache type:\n";
        for (const auto & r : rows) {
            if (!r.error.empty() || r.fits) continue;
            std::string why = !r.refusals.empty() ? "refused: " + r.refusals.front()
                              : fmt::format("short {} on {}{}", human_bytes(r.short_bytes), r.short_device,
                                            r.short_buffer.empty() ? "" : fmt::format(" (at the {})", buffer_label(r.short_buffer)));
            out += fmt::format("  {:<{}} {:>6}  {:<18} {:<5} {:>8} ctx: {}\n", r.name, w, params_text(r.n_params),
                               weights_text(r), r.cache_type, with_commas(r.target_context), why);
        }
    }
    if (n_err) {
        out += "\nCould not be planned:\n";
        for (const auto & r : rows) {
            if (!r.error.empty()) out += fmt::format("  {}: {}\n", r.name, r.error);
        }
    }
    out += fmt::format("\nEach model must fit fully on the GPUs at {} tokens ({} sets it), or at its training context "
                       "when shorter: the best weight format first, then the best KV cache type. \"largest context\" is "
                       "the planner's search at that pair; \"(trained)\": it stops at the training context. * = weights "
                       "estimated from the parameter count.{}{}\n",
                       with_commas(rank_target_context(s)), rt.context.spelled,
                       std::any_of(rows.begin(), rows.end(), [](const rank_row & r) { return !r.changed.empty(); })
                           ? " \"with\": the one setting changed from the flags to fit (the planner's search)." : "",
                       // the decode column's note, when a row has the estimate (speed.h: llama.cpp's plans only)
                       std::any_of(rows.begin(), rows.end(), [](const rank_row & r) { return r.decode_tokens_per_s.has_value(); })
                           ? " Decode: roofline estimate at that depth, one sequence (docs/speed.md)." : "");
    return out;
}

json ranking_json(const std::vector<rank_row> & rows, const machine & mc, const rank_settings & s) {
    const runtime_info & rt = find_runtime(s.runtime);
    json gpus = json::array();
    for (const auto & g : mc.gpus) gpus.push_back({{"name", g.name}, {"memory_bytes", g.memory_bytes}});
    json models = json::array();
    for (const auto & r : rows) {
        json j = {{"name", r.name},
                  {"hf_id", r.hf_id},
                  {"source", r.source},
                  {"family", r.family},
                  {"parameter_count", r.n_params},
                  {"n_ctx_train", r.n_ctx_train},
                  {"target_context", r.target_context},
                  {"fits", r.fits},
                  {"weights", r.weights},
                  {"weights_bytes", r.weights_bytes},
                  {"weights_exact", r.weights_exact},
                  {"cache_type", r.cache_type},
                  {"changed", r.changed},
                  {"context_tokens", r.context_tokens},
                  {"context_capped", r.context_capped},
                  {"decode_tokens_per_s", r.decode_tokens_per_s ? json(*r.decode_tokens_per_s) : json(nullptr)},
                  {"short_bytes", r.short_bytes},
                  {"short_device", r.short_device},
                  {"short_buffer", r.short_buffer},
                  {"refusals", r.refusals},
                  {"launch", r.launch},
                  {"warnings", r.warnings},
                  {"error", r.error}};
        models.push_back(std::move(j));
    }
    return {{"schema_version", 1}, {"kind", "list"}, {"runtime", rt.name}, {"gpus", gpus}, {"target_context", rank_target_context(s)}, {"models", models}};
}

} // namespace kvfit
