// The planner (include/kvfit/plan.h): a request -> the runtime's plan, and the searches over the runtime's knobs that
// answer "what would fit instead". It knows no runtime's rules: only runtime_info (runtime.h) and search.h.
#include "kvfit/plan.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/search.h"
#include "kvfit/units.h"
#include "runtimes/common/model_warnings.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit {
namespace {

// The knob's value as its flag takes it (knob::value_text; decimal by default).
std::string knob_text(const knob & k, uint64_t v) { return k.value_text ? k.value_text(v) : std::to_string(v); }

// A search result on the last step of the knob's range: the range, not the memory, stopped it.
bool at_top(const knob & k, const model_desc & m, const flag_values & f, uint64_t v) {
    if (v == 0 || !k.range) return false;
    const knob_range range = k.range(m, f);
    return range.step > 0 && v + range.step > range.hi;
}

uint64_t host_bytes(const runtime_plan & p) {
    uint64_t n = 0;
    for (const auto & d : p.devices) n += d.is_host ? d.used_bytes() : 0;
    return n;
}

// "-ctk q8_0 -ctv q8_0", "--kv-cache-dtype fp8"; the unset type: "no --kv-bits".
std::string cache_type_flags(const runtime_info & rt, const std::string & type) {
    std::string out;
    for (const std::string_view flag : {rt.cache_type_k, rt.cache_type_v}) {
        if (flag.empty()) continue;
        const std::string spelled = flag_spelling(rt, flag);
        out += (out.empty() ? "" : " ") +
               (type == rt.cache_type_unset ? "no " + spelled : fmt::format("{} {}", spelled, type));
    }
    return out;
}

// A cache-type row whose search found nothing: the runtime's own refusal when the type alone makes it refuse to
// start (mlx-lm's server has no --kv-bits), else "" (memory, not the type, stops it).
std::string type_refusal(const runtime_info & rt, const model_desc & m, const flag_values & f, const flag_values & g,
                         const machine & mc) {
    const knob_range range = rt.context.range ? rt.context.range(m, g) : knob_range{};
    if (range.step == 0) return "";
    const runtime_plan with_type = rt.plan(m, with_knob(g, rt.context, range.lo), mc);
    if (with_type.starts || with_type.refusals.empty()) return "";
    try {
        if (!rt.plan(m, with_knob(f, rt.context, range.lo), mc).starts) return "";
    } catch (const error &) {
        return "";
    }
    return with_type.refusals.front();
}

// max_context: the largest context for each cache type, then for the all-full-attention variant.
void find_max_context(runtime_plan & out, const runtime_info & rt, const model_desc & m, const flag_values & f,
                      const machine & mc) {
    std::vector<std::string> types(rt.cache_types.begin(), rt.cache_types.end());
    const std::string type_k = requested_cache_type(rt, f);
    const std::string type_v = rt.cache_type_v.empty() ? type_k : f.text(rt.cache_type_v, rt.cache_types[0]);
    for (const std::string & t : {type_k, type_v}) {
        if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    }
    for (const std::string & t : types) {
        context_limit row;
        row.cache_type = t;
        const flag_values g = with_cache_type(rt, f, t);
        try {
            row.context_tokens = knob_fit(rt, rt.context, m, g, mc).value_or(0);
            row.capped = at_top(rt.context, m, g, row.context_tokens);
            if (row.context_tokens == 0) row.refusal = type_refusal(rt, m, f, g, mc);
            row.allowed = row.refusal.empty();
        } catch (const error & e) { // the runtime refuses this type with these flags (llama.cpp: q8_0 V without -fa)
            row.allowed = false;
            row.refusal = e.what();
        }
        out.max_context.push_back(row);
    }
    context_limit variant;
    variant.cache_type = type_k;
    variant.all_full_attention = true;
    const model_desc full = all_full_attention_variant(m);
    variant.context_tokens = knob_fit(rt, rt.context, full, f, mc).value_or(0);
    variant.capped = at_top(rt.context, full, f, variant.context_tokens);
    out.max_context.push_back(variant);
}

// No one setting fits (vLLM at its default length, where the sampler and the CUDA graphs of 256 sequences leave too
// little for any length): the context with another knob that keeps the model on the GPUs at its least memory (the
// bottom of its grid, or the top for knob::smallest), then that knob at the most it may take at the context found,
// both by the one search. One alternative, knob "context+<name>", with both flags; its command becomes the launch.
void find_pair(runtime_plan & out, const runtime_info & rt, const model_desc & m, const flag_values & f,
               const machine & mc, std::string & launch) {
    for (const knob & k : rt.knobs) {
        if (k.offloads || k.flag == rt.context.flag || !k.range || rt.context.flag.empty()) continue;
        try {
            const knob_range range = k.range(m, f);
            if (range.step == 0 || range.hi < range.lo) continue;
            const uint64_t least = k.smallest ? range.lo + (range.hi - range.lo) / range.step * range.step : range.lo;
            const std::optional<uint64_t> c = knob_fit(rt, rt.context, m, with_knob(f, k, least), mc);
            if (!c) continue;
            const flag_values at_c = with_knob(f, rt.context, *c);
            const std::optional<uint64_t> v = knob_fit(rt, k, m, at_c, mc);
            if (!v) continue;
            const runtime_plan at = rt.plan(m, with_knob(at_c, k, *v), mc);
            if (!at.fits) continue;
            launch = at.launch;
            out.alternatives.push_back({fmt::format("context+{}", k.name), *c, "",
                                        knob_flags(rt.context, *c) + " " + knob_flags(k, *v), *c, host_bytes(at)});
            return;
        } catch (const error &) { // the runtime refuses the knob's values with these flags
        }
    }
}

// alternatives, when the plan does not fit: each knob of the runtime in order (the context knob's value is the
// largest context of the requested type, max_context), then the first other cache type of max_context, in the
// runtime's order, that fits at the requested context; when none of these keeps the model on the GPUs, the context
// with another knob (find_pair). The launch becomes the command of the first alternative that keeps the model on
// the GPUs (no offloading knob), or "" when there is none.
void find_alternatives(runtime_plan & out, const runtime_info & rt, const model_desc & m, const flag_values & f,
                       const machine & mc) {
    std::string launch;
    const std::string type_k = requested_cache_type(rt, f);
    for (const knob & k : rt.knobs) {
        const bool context = k.flag == rt.context.flag;
        std::optional<uint64_t> v;
        if (context && !out.max_context.empty()) {
            for (const auto & row : out.max_context) {
                if (!row.all_full_attention && row.cache_type == type_k && row.context_tokens > 0) v = row.context_tokens;
            }
        } else {
            try {
                v = knob_fit(rt, k, m, f, mc);
            } catch (const error &) { // the runtime refuses the knob's values with these flags: no alternative
                continue;
            }
        }
        if (!v) continue;
        const runtime_plan at = rt.plan(m, with_knob(f, k, *v), mc);
        if (!k.offloads && launch.empty()) launch = at.launch;
        out.alternatives.push_back({std::string(k.name), *v, "", knob_flags(k, *v),
                                    context ? *v : out.context_tokens, host_bytes(at)});
    }
    for (const auto & row : out.max_context) {
        if (row.all_full_attention || !row.allowed || row.cache_type == type_k || row.context_tokens < out.context_tokens) {
            continue;
        }
        const runtime_plan at = rt.plan(m, with_cache_type(rt, f, row.cache_type), mc);
        if (!at.fits) continue;
        if (launch.empty()) launch = at.launch;
        out.alternatives.push_back({"cache_type", 0, row.cache_type, cache_type_flags(rt, row.cache_type),
                                    out.context_tokens, host_bytes(at)});
        break;
    }
    if (launch.empty()) find_pair(out, rt, m, f, mc, launch); // no one setting keeps the model on the GPUs
    out.launch = launch;
}

} // namespace

namespace {

// The source states neither a parameter count nor weight bytes: no weights can be planned for it.
bool states_no_weights(const model_desc & m) { return m.n_layer > 0 && m.weights.total_bytes() == 0 && m.n_params() == 0; }

} // namespace

void apply_request_weights(model_desc & m, const plan_request & q, const runtime_info & rt, warnings & warn) {
    if (!q.weights_size.empty()) {
        const uint64_t bytes = parse_size_flag("--weights-size", q.weights_size);
        if (bytes == 0) throw error(fmt::format("weights size '{}': must be more than 0 bytes", q.weights_size));
        apply_weight_size(m, bytes);
        if (!q.weights.empty()) warn.push_back(fmt::format("weights {} ignored: the weights size {} is planned", q.weights, q.weights_size));
    } else if (!q.weights.empty()) {
        apply_weight_format(m, q.weights, true);
    } else if (!m.weights.exact) {
        rt.default_weights(m, warn);
    }
    // A model whose source states neither a parameter count nor weight bytes would be planned without weights: say so
    // in every output (and --strict refuses), never a silent "fits".
    if (states_no_weights(m)) {
        warn.push_back(fmt::format("{}: no parameter count and no weight bytes in its source: 0 B of weights planned, so "
                                   "the verdict counts no weights (give its GGUF or safetensors)", m.name));
    }
}

flag_values with_knob(flag_values f, const knob & k, uint64_t v) {
    for (const auto & [name, value] : k.with) f.set(name, std::string(value));
    f.set(k.flag, knob_text(k, v));
    return f;
}

std::string knob_flags(const knob & k, uint64_t v) { return fmt::format("{} {}", k.spelled, knob_text(k, v)); }

std::optional<uint64_t> knob_fit(const runtime_info & rt, const knob & k, const model_desc & m, const flag_values & f,
                                 const machine & mc, uint64_t limit) {
    if (k.flag.empty() || !k.range) return std::nullopt;
    knob_range range = k.range(m, f);
    if (range.step == 0) return std::nullopt;
    if (limit) range.hi = std::min(range.hi, limit);
    const auto fits = [&](uint64_t v) {
        const flag_values g = with_knob(f, k, v);
        return rt.fits ? rt.fits(m, g, mc) : rt.plan(m, g, mc).fits; // runtime.h: the verdict alone
    };
    return k.smallest ? smallest_fitting(range.lo, range.hi, range.step, fits)
                      : largest_fitting(range.lo, range.hi, range.step, fits);
}

uint64_t largest_context(const runtime_info & rt, const model_desc & m, const flag_values & f, const machine & mc,
                         uint64_t limit) {
    return knob_fit(rt, rt.context, m, f, mc, limit).value_or(0);
}

plan_result plan_model(const runtime_info & rt, model_desc m, const warnings & source_warnings, const flag_values & f,
                       machine mc) {
    plan_result r;
    r.runtime = &rt;
    r.flags = f;
    r.plan = rt.plan(m, f, mc);
    r.plan.warnings.insert(r.plan.warnings.begin(), source_warnings.begin(), source_warnings.end());
    if (!mc.gpus.empty()) {
        if (!rt.cache_types.empty() && !rt.context.flag.empty()) find_max_context(r.plan, rt, m, f, mc);
        // every runtime registers its knobs (runtime.h): the one search below turns them, none searches its own
        if (!r.plan.fits) find_alternatives(r.plan, rt, m, f, mc);
    }
    if (rt.search_sections) rt.search_sections(m, r.plan); // the runtime's words for the searches (runtime.h)
    r.model = std::move(m);
    r.target = std::move(mc);
    return r;
}

plan_result make_plan(const plan_request & q, const model_loader & load, const gpu_parser & parse_gpus) {
    const runtime_info & rt = find_runtime(q.runtime);
    rt.check_flags(q.flags);
    machine mc;
    if (!q.gpu.empty()) mc.gpus = parse_gpus ? parse_gpus(q.gpu) : parse_gpu_list(q.gpu);
    for (auto & g : mc.gpus) {
        // a table row already carries its vendor; a device given by size is named "GPU<i>" by parse_gpu_list and is
        // no table row: only other names (a detected GPU, a parse_gpus of the caller's) are looked up
        const bool sized = g.name.size() > 3 && g.name.starts_with("GPU") &&
                           g.name.find_first_not_of("0123456789", 3) == std::string::npos;
        if (!g.vendor.empty() || sized) continue;
        if (const gpu_info * info = find_gpu(g.name)) g.compute_capability = info->compute_capability, g.vendor = info->vendor;
    }
    warnings warn;
    model_desc m = load(warn);
    if (rt.adapt_model) rt.adapt_model(m, warn);
    apply_request_weights(m, q, rt, warn);
    // no weights known: a verdict would count none, so none is given (the KV figures without --gpu stay)
    if (!mc.gpus.empty() && states_no_weights(m)) {
        throw error(fmt::format("{}: no parameter count and no weight bytes in its source, so no verdict for the GPUs "
                                "(plan its GGUF or safetensors)", m.name));
    }
    detail::serving_model_warnings(rt.name, m, warn); // caches and layouts without a source (issue 13)
    // a GPU table figure without a published log of it (data/gpus.csv "estimate:"): an assumption, said once per card
    for (size_t i = 0; i < mc.gpus.size(); ++i) {
        const device_spec & g = mc.gpus[i];
        if (!g.memory_estimate || (i > 0 && mc.gpus[i - 1].name == g.name)) continue;
        warn.push_back(fmt::format("{}: {} as CUDA reports it is an estimate of the GPU table (no published log names "
                                   "this card's figure; data/gpus.csv says how it was derived); --gpu auto on the "
                                   "machine, or --gpu SIZE with the total torch.cuda.mem_get_info() prints, plans the "
                                   "measured figure", g.name, human_bytes(g.memory_bytes)));
    }
    if (q.strict && !warn.empty()) { // a launcher that must not guess: each assumption is a refusal
        std::string all;
        for (const auto & w : warn) all += (all.empty() ? "" : "; ") + w;
        throw error(fmt::format("strict: {} warning{} refused: {}", warn.size(), warn.size() == 1 ? "" : "s", all));
    }
    plan_result r = plan_model(rt, std::move(m), warn, q.flags, std::move(mc));
    if (q.strict) { // what vLLM's --speculative-config plan leaves out or estimates (src/runtimes/vllm/spec.cpp)
        std::string all;
        size_t n = 0;
        for (const auto & w : r.plan.warnings) {
            if (w.rfind("--speculative-config", 0) == 0) all += (all.empty() ? "" : "; ") + w, ++n;
        }
        if (n > 0) throw error(fmt::format("strict: {} warning{} refused: {}", n, n == 1 ? "" : "s", all));
    }
    if (q.strict && !r.plan.assumptions.empty()) { // a serving plan's estimates (runtime_plan::assumptions)
        std::string all;
        for (const auto & a : r.plan.assumptions) all += (all.empty() ? "" : "; ") + a;
        throw error(fmt::format("strict: {} assumption{} refused: {}", r.plan.assumptions.size(),
                                r.plan.assumptions.size() == 1 ? "" : "s", all));
    }
    return r;
}

} // namespace kvfit
