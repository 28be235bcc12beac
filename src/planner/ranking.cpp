// "What fits my machine" (include/kvfit/ranking.h): every model planned for the same GPUs through the runtime
// interface, the largest context found by the planner's search (plan.h largest_context), ranked. No memory rule
// lives here.
#include "kvfit/ranking.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/speed.h"
#include "sources/text.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include "core/util.h"

namespace kvfit {
namespace {

// The GGUF ladder, best first: what people download from a GGUF repository, by size (sources.h weight_formats).
const std::vector<std::string> k_ladder = {"f16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k"};

bool contains_ci(std::string_view hay, std::string_view needle) { return detail::ascii_lower(std::string(hay)).find(detail::ascii_lower(std::string(needle))) != std::string::npos; }

std::string family_of(const model_desc & m) { return m.gguf_architecture.empty() ? m.architecture : m.gguf_architecture; }

// The weight formats to try for this model, best first (ranking.h).
std::vector<std::string> formats_for(const model_desc & m, const runtime_info & rt, const rank_settings & s) {
    if (m.weights.exact) return {""}; // the file's own bytes
    if (!s.weights.empty()) return {s.weights};
    model_desc probe = m;
    warnings ignored;
    rt.default_weights(probe, ignored);
    const std::string def = detail::ascii_lower(std::string(probe.weights.format));
    if (std::find(k_ladder.begin(), k_ladder.end(), def) != k_ladder.end()) return k_ladder;
    return {"="}; // the runtime's default alone
}

// The model in format `f` ("" exact, "=" the runtime's default), with the warnings that choice adds.
model_desc with_format(const model_desc & m, const std::string & f, const runtime_info & rt, warnings & warn) {
    model_desc out = m;
    if (rt.adapt_model) rt.adapt_model(out, warn);
    if (f == "=") rt.default_weights(out, warn);
    else if (!f.empty()) apply_weight_format(out, f, true);
    return out;
}

// The flags that fit at the target: `g` itself, else `g` with the first of the runtime's knobs that keeps the model
// on the GPUs and is not the context (vLLM's --max-num-seqs and --gpu-memory-utilization, SGLang's
// --max-running-requests, ...) at the value the planner's search finds (plan.h knob_fit); `changed` names it.
std::optional<flag_values> fitting_flags(const runtime_info & rt, const model_desc & m, const flag_values & g,
                                         const machine & mc, std::string & changed) {
    changed.clear();
    if (rt.plan(m, g, mc).fits) return g;
    for (const knob & k : rt.knobs) {
        if (k.offloads || k.flag == rt.context.flag) continue;
        std::optional<uint64_t> v;
        try {
            v = knob_fit(rt, k, m, g, mc);
        } catch (const error &) {
            continue; // the runtime refuses the knob's values with these flags
        }
        if (!v) continue;
        changed = knob_flags(k, *v);
        return with_knob(g, k, *v);
    }
    return std::nullopt;
}

// The first buffer of the fullest over-budget GPU that crosses its budget, and by how much the GPU is short.
void fill_short(rank_row & row, const runtime_plan & p) {
    int64_t worst = 0;
    for (const auto & d : p.devices) {
        if (d.is_host || d.fits()) continue;
        const int64_t deficit = -d.free_bytes();
        if (deficit <= worst) continue;
        worst = deficit;
        row.short_device = d.name;
        const uint64_t budget = d.capacity_bytes > d.reserved_bytes ? d.capacity_bytes - d.reserved_bytes : 0;
        uint64_t sum = 0;
        row.short_buffer.clear();
        for (const auto & b : d.buffers) {
            sum += b.bytes;
            if (sum > budget) {
                row.short_buffer = b.name;
                break;
            }
        }
    }
    row.short_bytes = uint64_t(worst);
    row.refusals = p.refusals;
}

std::optional<double> decode_speed(const runtime_info & rt, const model_desc & m, const flag_values & f,
                                   const machine & mc, uint64_t n_ctx, const rank_settings & s) {
    const speed_model * sm = find_speed_model(rt);
    if (!sm) return std::nullopt; // kvfit has no speed model for this runtime (speed.h)
    return sm->decode_speed(m, f, mc, n_ctx, s.speed);
}

rank_row plan_one(const rank_candidate & c, const runtime_info & rt, const machine & mc, const rank_settings & s,
                  uint64_t asked) {
    rank_row row;
    row.name = c.name;
    row.hf_id = c.hf_id;
    row.source = c.source;
    if (!c.model) {
        row.error = c.error;
        return row;
    }
    const model_desc & m = *c.model;
    if (!m.weights.exact && m.n_params() == 0) {
        row.family = family_of(m);
        row.n_ctx_train = m.n_ctx_train;
        row.error = "no parameter count, so no weight size (plan it alone with --weights-size)";
        return row;
    }
    row.family = family_of(m);
    row.n_params = m.n_params();
    row.n_ctx_train = m.n_ctx_train;
    row.target_context = m.n_ctx_train > 0 ? std::min(asked, m.n_ctx_train) : asked;
    std::vector<std::string> types;
    if (s.flags.has(rt.cache_type_k) || s.flags.has(rt.cache_type_v) || rt.cache_types.empty()) {
        types = {""}; // the flags' own types
    } else {
        types.assign(rt.cache_types.begin(), rt.cache_types.end());
    }
    flag_values base = s.flags;
    base.erase(rt.context.flag);
    const flag_values at_target = [&] {
        flag_values f = base;
        if (!rt.context.flag.empty()) f.set(rt.context.flag, std::to_string(row.target_context));
        return f;
    }();
    const std::vector<std::string> formats = formats_for(m, rt, s);
    runtime_plan smallest; // the last plan tried: the smallest format and cache type, for "what is short"
    bool have_smallest = false;
    try {
        for (size_t fi = 0; fi < formats.size(); ++fi) {
            warnings warn = c.warn;
            const model_desc mf = with_format(m, formats[fi], rt, warn);
            const auto flags_at = [&](const std::string & type) {
                return type.empty() ? at_target : with_cache_type(rt, at_target, type);
            };
            // the smallest cache type first: when it does not fit, no larger one does (bytes grow with the type)
            runtime_plan last;
            try {
                last = rt.plan(mf, flags_at(types.back()), mc);
            } catch (const error &) {
                continue; // the runtime refuses that type with these flags (llama.cpp: quantized V without -fa)
            }
            smallest = last;
            have_smallest = true;
            row.weights = mf.weights.format;
            row.weights_bytes = mf.weights.total_bytes();
            row.weights_exact = mf.weights.exact;
            row.cache_type = types.back();
            row.format_rank = int(fi);
            // before the model is filed under "does not fit": the runtime's knobs (fewer sequences, a larger memory
            // fraction), as the planner's alternatives turn them
            std::string changed;
            std::optional<flag_values> fitting = fitting_flags(rt, mf, flags_at(types.back()), mc, changed);
            if (!fitting) continue;
            std::string chosen = types.back();
            for (size_t ti = 0; ti + 1 < types.size(); ++ti) {
                try {
                    std::string c;
                    if (auto g = fitting_flags(rt, mf, flags_at(types[ti]), mc, c)) {
                        chosen = types[ti], fitting = std::move(g), changed = c;
                        break;
                    }
                } catch (const error &) {
                }
            }
            flag_values g = *fitting;
            g.erase(rt.context.flag);
            row.fits = true;
            row.cache_type = chosen;
            row.changed = changed;
            row.context_tokens = largest_context(rt, mf, g, mc);
            const knob_range range = rt.context.range ? rt.context.range(mf, g) : knob_range{};
            row.context_capped = range.step > 0 && row.context_tokens >= range.lo + (range.hi - range.lo) / range.step * range.step;
            flag_values at_best = g;
            at_best.set(rt.context.flag, std::to_string(row.context_tokens));
            const runtime_plan best = rt.plan(mf, at_best, mc);
            row.launch = best.launch;
            row.warnings = warn;
            row.warnings.insert(row.warnings.end(), best.warnings.begin(), best.warnings.end());
            row.decode_tokens_per_s = decode_speed(rt, mf, *fitting, mc, row.context_tokens, s);
            if (row.cache_type.empty()) row.cache_type = requested_cache_type(rt, s.flags);
            return row;
        }
        if (!have_smallest) throw error(fmt::format("no format and cache type the runtime accepts with these flags"));
        fill_short(row, smallest);
        row.warnings = c.warn;
        row.warnings.insert(row.warnings.end(), smallest.warnings.begin(), smallest.warnings.end());
        if (row.cache_type.empty()) row.cache_type = requested_cache_type(rt, s.flags);
    } catch (const error & e) {
        row.error = e.what();
    }
    return row;
}

} // namespace

std::vector<rank_candidate> catalog_candidates() {
    std::vector<rank_candidate> out;
    for (const auto & e : catalog()) {
        rank_candidate c;
        c.name = std::string(e.name);
        c.hf_id = std::string(e.hf_id);
        c.source = "catalog";
        try {
            c.model = model_from_catalog(e, c.warn);
        } catch (const error & x) {
            c.error = x.what();
        }
        out.push_back(std::move(c));
    }
    return out;
}

uint64_t parse_param_count(std::string_view flag, std::string_view text) {
    const auto bad = [&] { return error(fmt::format("{} '{}': expected a parameter count like 7B, 500M or 8030261248", flag, text)); };
    if (text.empty()) throw bad();
    double scale = 1;
    std::string_view num = text;
    switch (std::tolower(static_cast<unsigned char>(text.back()))) {
    case 'k': scale = 1e3; break;
    case 'm': scale = 1e6; break;
    case 'b': scale = 1e9; break;
    case 't': scale = 1e12; break;
    default: break;
    }
    if (scale != 1) num.remove_suffix(1);
    if (num.empty() || !std::all_of(num.begin(), num.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }) ||
        std::count(num.begin(), num.end(), '.') > 1 || num.front() == '.' || num.back() == '.') {
        throw bad();
    }
    const double v = std::stod(std::string(num)) * scale;
    if (v < 1 || v > 1e15) throw bad();
    return uint64_t(v + 0.5);
}

uint64_t rank_target_context(const rank_settings & s) {
    const runtime_info & rt = find_runtime(s.runtime);
    if (rt.context.flag.empty() || !s.flags.has(rt.context.flag)) return default_rank_context;
    uint64_t asked = 0;
    for (const auto & v : s.flags.list(rt.context.flag)) {
        for (size_t at = 0; at <= v.size();) { // -c 8192,32768
            const size_t end = std::min(v.find(',', at), v.size());
            asked = std::max(asked, parse_flag_count(rt.context.spelled, v.substr(at, end - at), 1, 1ull << 40));
            at = end + 1;
        }
    }
    return asked;
}

bool rank_filter_matches(const rank_filter & f, const rank_candidate & c) {
    if (!f.name.empty() && !contains_ci(c.name, f.name) && !contains_ci(c.hf_id, f.name)) return false;
    if (!c.model) return f.family.empty() && f.min_params == 0 && f.max_params == 0 && f.min_context == 0;
    const model_desc & m = *c.model;
    if (!f.family.empty() && !detail::iequals(m.gguf_architecture, f.family) && !detail::iequals(m.architecture, f.family)) {
        return false;
    }
    if (f.min_params && m.n_params() < f.min_params) return false;
    if (f.max_params && m.n_params() > f.max_params) return false;
    if (f.min_context && m.n_ctx_train < f.min_context) return false;
    return true;
}

std::vector<rank_row> rank_models(const std::vector<rank_candidate> & candidates, const machine & mc_in,
                                  const rank_settings & s, const rank_filter & filter) {
    const runtime_info & rt = find_runtime(s.runtime);
    rt.check_flags(s.flags);
    if (!s.weights.empty()) { // an unknown format is the request's mistake, not a model's
        model_desc probe;
        apply_weight_format(probe, s.weights);
    }
    machine mc = mc_in;
    for (auto & g : mc.gpus) {
        if (const gpu_info * info = find_gpu(g.name)) g.compute_capability = info->compute_capability, g.vendor = info->vendor;
    }
    const uint64_t asked = rank_target_context(s);
    rank_settings s2 = s;
    if (s2.speed.depth == 0) s2.speed.depth = asked;
    std::vector<rank_row> rows;
    for (const auto & c : candidates) {
        if (rank_filter_matches(filter, c)) rows.push_back(plan_one(c, rt, mc, s2, asked));
    }
    std::stable_sort(rows.begin(), rows.end(), [](const rank_row & a, const rank_row & b) {
        const int ga = !a.error.empty() ? 2 : a.fits ? 0 : 1, gb = !b.error.empty() ? 2 : b.fits ? 0 : 1;
        if (ga != gb) return ga < gb;
        if (ga == 0) {
            if (a.n_params != b.n_params) return a.n_params > b.n_params;
            if (a.format_rank != b.format_rank) return a.format_rank < b.format_rank;
            return a.context_tokens > b.context_tokens;
        }
        if (ga == 1) return a.short_bytes < b.short_bytes;
        return false;
    });
    return rows;
}

} // namespace kvfit
