// Chart data: plans at a range of n_ctx (include/kvfit/chart.h). Drawing is in chart_svg.cpp.
#include "kvfit/chart.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kvfit {
namespace {

constexpr uint64_t k_x_min = 1024;
constexpr uint64_t k_x_limit = 1ull << 32; // llamacpp_context_size refuses more

std::vector<device_spec> report_gpus(const report & r) { return r.fit ? r.fit->gpus : std::vector<device_spec>{}; }
uint64_t report_margin(const report & r) { return r.fit ? r.fit->margin_bytes : default_margin_bytes; }

// Bytes at each x for one model and settings: every value is a whole plan.
std::vector<buffer_set> plans_at(const model_desc & m, llamacpp_settings s, const report & r,
                                 const std::vector<uint64_t> & xs) {
    std::vector<buffer_set> out;
    for (uint64_t x : xs) {
        s.n_ctx = x;
        out.push_back(chart_bytes(plan_llamacpp(m, s, r.placement, report_gpus(r), report_margin(r))));
    }
    return out;
}

std::vector<uint64_t> totals(const std::vector<buffer_set> & b) {
    std::vector<uint64_t> out;
    for (const auto & x : b) out.push_back(x.total());
    return out;
}

uint64_t x_max_of(const report & r) {
    return std::min(std::max({r.model.n_ctx_train, r.requested_n_ctx, k_x_min}), k_x_limit);
}

std::string type_pair(const llamacpp_settings & s) {
    const auto k = ggml_traits(s.type_k).name, v = ggml_traits(s.type_v).name;
    return k == v ? fmt::format("{} K/V", k) : fmt::format("{} K, {} V", k, v);
}

// "Qwen3.5-9B - llama.cpp - f16 K/V - np 1 - ub 512 - fa auto - 8.00 GiB GPU (margin 1.00 GiB)"
std::string title_of(const report & r, const std::string & what) {
    const llamacpp_settings & s = r.settings;
    const char * fa = s.flash_attn == flash_attn_mode::on ? "on" : s.flash_attn == flash_attn_mode::off ? "off" : "auto";
    std::string t = fmt::format("{}{} - llama.cpp - {} - np {} - ub {} - fa {}", r.model.name, what, type_pair(s),
                                s.n_seq, s.n_ubatch, fa);
    if (!r.model.weights.format.empty()) t += fmt::format(" - weights {}", r.model.weights.format);
    if (r.fit) {
        uint64_t cap = 0;
        for (const auto & g : r.fit->gpus) cap += g.memory_bytes;
        t += fmt::format(" - {} x{} GPU (margin {})", human_bytes(cap), r.fit->gpus.size(), human_bytes(r.fit->margin_bytes));
    }
    return t;
}

void set_capacity(chart_series & c, const report & r) {
    c.y_label = r.fit ? "GPU memory (GiB)" : "memory (GiB)";
    if (!r.fit) return;
    for (const auto & g : r.fit->gpus) c.capacity_bytes += g.memory_bytes;
    c.margin_bytes = r.fit->margin_bytes * r.fit->gpus.size();
}

} // namespace

buffer_set chart_bytes(const llamacpp_plan & p) {
    buffer_set gpu, host;
    bool any_gpu = false;
    for (const auto & d : p.devices) {
        if (d.is_host) {
            host += d.used;
        } else {
            gpu += d.used;
            any_gpu = true;
        }
    }
    return any_gpu ? gpu : host;
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

chart_series make_chart_series(const report & r) {
    chart_series c;
    c.title = title_of(r, "");
    set_capacity(c, r);
    if (r.fit) c.max_n_ctx = max_fitting_n_ctx(r.model, r.settings, r.placement, r.fit->gpus, r.fit->margin_bytes);

    struct typed { ggml_type type; uint64_t max_n_ctx; };
    std::vector<typed> types;
    for (ggml_type t : {ggml_type::f16, ggml_type::q8_0, ggml_type::q4_0}) {
        if (ggml_is_quantized(t) && r.settings.flash_attn == flash_attn_mode::off) continue;
        uint64_t mx = 0;
        if (r.fit) {
            for (const auto & f : r.fit->max_n_ctx) {
                if (f.type == t) mx = f.max_n_ctx;
            }
        }
        types.push_back({t, mx});
    }
    std::vector<uint64_t> marks = {c.max_n_ctx};
    for (const auto & t : types) marks.push_back(t.max_n_ctx);
    c.n_ctx = chart_n_ctx_values(x_max_of(r), marks);

    c.stack = plans_at(r.model, r.settings, r, c.n_ctx);
    for (const auto & t : types) {
        llamacpp_settings s = r.settings;
        s.type_k = s.type_v = t.type;
        const bool same = s.type_k == r.settings.type_k && s.type_v == r.settings.type_v;
        c.curves.push_back({fmt::format("total, {} K/V", ggml_traits(t.type).name), totals(plans_at(r.model, s, r, c.n_ctx)),
                            t.max_n_ctx, !same, -1});
    }
    return c;
}

chart_series make_compare_series(const report & r) {
    chart_series c;
    c.title = title_of(r, " vs all full attention");
    set_capacity(c, r);
    const model_desc full = all_full_attention_variant(r.model);
    uint64_t max_model = 0, max_full = 0;
    if (r.fit) {
        max_model = max_fitting_n_ctx(r.model, r.settings, r.placement, r.fit->gpus, r.fit->margin_bytes);
        max_full = r.fit->max_n_ctx_if_all_full;
    }
    c.n_ctx = chart_n_ctx_values(x_max_of(r), {max_model, max_full});
    const std::vector<buffer_set> a = plans_at(r.model, r.settings, r, c.n_ctx);
    const std::vector<buffer_set> b = plans_at(full, r.settings, r, c.n_ctx);
    std::vector<uint64_t> kv_a, kv_b;
    for (size_t i = 0; i < a.size(); ++i) {
        kv_a.push_back(a[i].kv_bytes + a[i].state_bytes);
        kv_b.push_back(b[i].kv_bytes + b[i].state_bytes);
    }
    const std::string pair = type_pair(r.settings);
    c.curves.push_back({fmt::format("{}: total", r.model.name), totals(a), max_model, false, 0});
    c.curves.push_back({"all full attention: total", totals(b), max_full, false, 1});
    c.curves.push_back({fmt::format("{}: KV + state", r.model.name), kv_a, 0, true, 0});
    c.curves.push_back({"all full attention: KV", kv_b, 0, true, 1});
    const double ratio = r.kv_bytes_per_token ? double(r.kv_bytes_per_token_if_all_full) / double(r.kv_bytes_per_token) : 0;
    c.note = fmt::format("KV per token ({}):\n{}: {} B\nall full attention: {} B{}", pair, r.model.name,
                         with_commas(r.kv_bytes_per_token), with_commas(r.kv_bytes_per_token_if_all_full),
                         ratio > 0 ? fmt::format(" ({:.2f}x)", ratio) : "");
    return c;
}

} // namespace kvfit
