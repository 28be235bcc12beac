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

flag_values with_knob(flag_values f, const knob & k, uint64_t v) {
    for (const auto & [name, value] : k.with) f.set(name, std::string(value));
    f.set(k.flag, std::to_string(v));
    return f;
}

// The knob's value that fits: the largest (or the smallest, k.smallest) on its range; nullopt when none does.
std::optional<uint64_t> search_knob(const runtime_info & rt, const knob & k, const model_desc & m,
                                    const flag_values & f, const machine & mc, uint64_t limit = 0) {
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

// max_context: the largest context for each cache type, then for the all-full-attention variant.
void find_max_context(runtime_plan & out, const runtime_info & rt, const model_desc & m, const flag_values & f,
                      const machine & mc) {
    std::vector<std::string> types(rt.cache_types.begin(), rt.cache_types.end());
    const std::string type_k = f.text(rt.cache_type_k, rt.cache_types[0]);
    const std::string type_v = f.text(rt.cache_type_v, rt.cache_types[0]);
    for (const std::string & t : {type_k, type_v}) {
        if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    }
    for (const std::string & t : types) {
        context_limit row;
        row.cache_type = t;
        flag_values g = f;
        g.set(rt.cache_type_k, t);
        g.set(rt.cache_type_v, t);
        try {
            row.context_tokens = search_knob(rt, rt.context, m, g, mc).value_or(0);
            row.capped = at_top(rt.context, m, g, row.context_tokens);
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
    variant.context_tokens = search_knob(rt, rt.context, full, f, mc).value_or(0);
    variant.capped = at_top(rt.context, full, f, variant.context_tokens);
    out.max_context.push_back(variant);
}

// alternatives, when the plan does not fit: each knob of the runtime in order. The context knob's value is the
// largest context of the requested K type (max_context), and its command becomes the plan's launch.
void find_alternatives(runtime_plan & out, const runtime_info & rt, const model_desc & m, const flag_values & f,
                       const machine & mc) {
    for (const knob & k : rt.knobs) {
        const bool context = k.flag == rt.context.flag;
        std::optional<uint64_t> v;
        if (context && !out.max_context.empty()) {
            const std::string type_k = f.text(rt.cache_type_k, rt.cache_types[0]);
            for (const auto & row : out.max_context) {
                if (!row.all_full_attention && row.cache_type == type_k && row.context_tokens > 0) v = row.context_tokens;
            }
        } else {
            v = search_knob(rt, k, m, f, mc);
        }
        if (!v) {
            if (context) out.launch.clear();
            continue;
        }
        const runtime_plan at = rt.plan(m, with_knob(f, k, *v), mc);
        if (context) out.launch = at.launch;
        out.alternatives.push_back({std::string(k.name), *v, fmt::format("{} {}", k.spelled, *v),
                                    context ? *v : out.context_tokens, host_bytes(at)});
    }
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

uint64_t largest_context(const runtime_info & rt, const model_desc & m, const flag_values & f, const machine & mc,
                         uint64_t limit) {
    return search_knob(rt, rt.context, m, f, mc, limit).value_or(0);
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
        if (!r.plan.fits) find_alternatives(r.plan, rt, m, f, mc);
    }
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
