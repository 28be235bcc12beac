// Chart data: plans at a range of contexts (include/kvfit/chart.h). Drawing is in chart_svg.cpp.
#include "kvfit/chart.h"

#include "kvfit/error.h"
#include "kvfit/report.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kvfit {
namespace {

constexpr uint64_t k_x_min = 1024;
constexpr uint64_t k_x_limit = 1ull << 32; // llamacpp_context_size refuses more

// Buffers stack in this order (weights at the bottom); names not listed follow in the order a plan lists them.
constexpr std::string_view k_stack_order[] = {"weights", "kv", "state", "compute", "output", "activation",
                                              "non_torch", "cuda_graph", "kv_pool", "mamba_pool"};

size_t stack_rank(std::string_view name) {
    const auto it = std::find(std::begin(k_stack_order), std::end(k_stack_order), name);
    return size_t(it - std::begin(k_stack_order));
}

const runtime_info & runtime_of(const plan_result & r) {
    if (!r.runtime || r.runtime->context.flag.empty()) {
        throw error(fmt::format("chart: runtime {} has no context setting to chart", r.plan.runtime));
    }
    return *r.runtime;
}

// The bands of one model and flags at each x: every value is a whole plan.
std::vector<chart_band> plans_at(const plan_result & r, const model_desc & m, const flag_values & f,
                                 const std::vector<uint64_t> & xs) {
    const runtime_info & rt = runtime_of(r);
    std::vector<chart_band> bands;
    for (size_t i = 0; i < xs.size(); ++i) {
        flag_values g = f;
        g.set(rt.context.flag, std::to_string(xs[i]));
        for (const buffer & b : chart_bytes(rt.plan(m, g, r.target))) {
            auto it = std::find_if(bands.begin(), bands.end(), [&](const chart_band & c) { return c.name == b.name; });
            if (it == bands.end()) it = bands.insert(bands.end(), chart_band{b.name, std::vector<uint64_t>(xs.size(), 0)});
            it->bytes[i] = b.bytes;
        }
    }
    return bands;
}

std::vector<uint64_t> totals(const std::vector<chart_band> & bands, size_t n) {
    std::vector<uint64_t> out(n, 0);
    for (const auto & b : bands) {
        for (size_t i = 0; i < n; ++i) out[i] += b.bytes[i];
    }
    return out;
}

uint64_t x_max_of(const plan_result & r) {
    return std::min(std::max({r.model.n_ctx_train, r.plan.context_tokens, k_x_min}), k_x_limit);
}

uint64_t gpu_capacity(const runtime_plan & p) {
    uint64_t cap = 0;
    for (const auto & d : p.devices) cap += d.is_host ? 0 : d.capacity_bytes;
    return cap;
}

// "Qwen3.5-9B - llama.cpp - f16 K/V - np 1 - ub 512 - fa auto - 8.00 GiB x1 GPU (margin 1.00 GiB)"
std::string title_of(const plan_result & r, const std::string & what) {
    const runtime_plan & p = r.plan;
    std::string t = fmt::format("{}{} - {}", r.model.name, what, r.runtime ? r.runtime->display : p.runtime);
    t += p.words.chart_settings; // the runtime's settings in its words (runtime_plan::words)
    if (!r.model.weights.format.empty()) t += fmt::format(" - weights {}", r.model.weights.format);
    if (!r.target.gpus.empty()) {
        uint64_t cap = 0;
        for (const auto & g : r.target.gpus) cap += g.memory_bytes;
        t += fmt::format(" - {} x{} GPU", human_bytes(cap), r.target.gpus.size());
        t += p.words.chart_reserve;
    }
    return t;
}

void set_capacity(chart_series & c, const plan_result & r) {
    c.y_label = r.target.gpus.empty() ? "memory (GiB)" : "GPU memory (GiB)";
    if (r.target.gpus.empty()) return;
    c.capacity_bytes = gpu_capacity(r.plan);
    for (const auto & d : r.plan.devices) c.margin_bytes += d.is_host ? 0 : d.reserved_bytes;
}

uint64_t max_for_type(const runtime_plan & p, const std::string & type, bool variant) {
    for (const auto & row : p.max_context) {
        if (row.all_full_attention == variant && (variant || row.cache_type == type)) return row.context_tokens;
    }
    return 0;
}

} // namespace

std::vector<buffer> chart_bytes(const runtime_plan & p) {
    const bool any_gpu = std::any_of(p.devices.begin(), p.devices.end(), [](const device_plan & d) { return !d.is_host; });
    std::vector<buffer> out;
    for (const auto & d : p.devices) {
        if (d.is_host == any_gpu) continue;
        for (const auto & b : d.buffers) {
            auto it = std::find_if(out.begin(), out.end(), [&](const buffer & x) { return x.name == b.name; });
            if (it == out.end()) it = out.insert(out.end(), buffer{b.name, 0, false, ""});
            it->bytes += b.bytes;
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const buffer & a, const buffer & b) { return stack_rank(a.name) < stack_rank(b.name); });
    return out;
}

std::vector<uint64_t> chart_n_ctx_values(uint64_t x_max, const std::vector<uint64_t> & marks) {
    std::vector<uint64_t> xs;
    for (int i = 0;; ++i) {
        const double v = double(k_x_min) * std::exp2(i / 4.0);
        const uint64_t x = uint64_t(std::llround(v / 256.0)) * 256;
        if (x >= x_max) break;
        xs.push_back(x);
    }
    xs.push_back(x_max);
    for (uint64_t m : marks) {
        if (m > 0) xs.push_back(m);
    }
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    return xs;
}

chart_series make_chart_series(const plan_result & r) {
    const runtime_info & rt = runtime_of(r);
    chart_series c;
    c.title = title_of(r, "");
    set_capacity(c, r);
    if (!r.target.gpus.empty()) c.max_n_ctx = largest_context(rt, r.model, r.flags, r.target);

    std::vector<std::pair<std::string, uint64_t>> types; // cache type, its largest context
    for (std::string_view t : rt.cache_types) types.emplace_back(t, max_for_type(r.plan, std::string(t), false));
    std::vector<uint64_t> marks = {c.max_n_ctx};
    for (const auto & t : types) marks.push_back(t.second);
    c.n_ctx = chart_n_ctx_values(x_max_of(r), marks);

    c.stack = plans_at(r, r.model, r.flags, c.n_ctx);
    const std::string type_k = requested_cache_type(rt, r.flags);
    const std::string type_v = rt.cache_type_v.empty() || rt.cache_types.empty()
                                   ? type_k : r.flags.text(rt.cache_type_v, rt.cache_types[0]);
    for (const auto & [t, mx] : types) {
        const flag_values f = with_cache_type(rt, r.flags, t);
        std::vector<chart_band> bands;
        try {
            bands = plans_at(r, r.model, f, c.n_ctx);
        } catch (const error &) {
            continue; // the runtime refuses this type with these flags (llama.cpp: a quantized V cache under -fa off)
        }
        c.curves.push_back({fmt::format("total, {} K/V", t), totals(bands, c.n_ctx.size()), mx, !(t == type_k && t == type_v), -1});
    }
    if (rt.cache_types.empty()) c.curves.push_back({"total", totals(c.stack, c.n_ctx.size()), c.max_n_ctx, false, -1});
    return c;
}

chart_series make_compare_series(const plan_result & r) {
    const runtime_info & rt = runtime_of(r);
    chart_series c;
    c.title = title_of(r, " vs all full attention");
    set_capacity(c, r);
    const model_desc full = all_full_attention_variant(r.model);
    uint64_t max_model = 0, max_full = 0;
    if (!r.target.gpus.empty()) {
        max_model = largest_context(rt, r.model, r.flags, r.target);
        max_full = r.plan.max_context.empty() ? largest_context(rt, full, r.flags, r.target) : max_for_type(r.plan, "", true);
    }
    c.n_ctx = chart_n_ctx_values(x_max_of(r), {max_model, max_full});
    const std::vector<chart_band> a = plans_at(r, r.model, r.flags, c.n_ctx);
    const std::vector<chart_band> b = plans_at(r, full, r.flags, c.n_ctx);
    auto cache_bytes = [&](const std::vector<chart_band> & bands) { // the caches and state: what the layout changes
        std::vector<uint64_t> out(c.n_ctx.size(), 0);
        for (const auto & band : bands) {
            if (band.name != "kv" && band.name != "state" && band.name != "kv_pool" && band.name != "mamba_pool") continue;
            for (size_t i = 0; i < out.size(); ++i) out[i] += band.bytes[i];
        }
        return out;
    };
    c.curves.push_back({fmt::format("{}: total", r.model.name), totals(a, c.n_ctx.size()), max_model, false, 0});
    c.curves.push_back({"all full attention: total", totals(b, c.n_ctx.size()), max_full, false, 1});
    c.curves.push_back({fmt::format("{}: KV + state", r.model.name), cache_bytes(a), 0, true, 0});
    c.curves.push_back({"all full attention: KV", cache_bytes(b), 0, true, 1});
    c.note = r.plan.words.chart_kv_note; // the runtime's KV per token, model and variant ("" when it gives none)
    return c;
}

} // namespace kvfit
