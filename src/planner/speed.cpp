// Speed model (include/kvfit/speed.h): roofline bounds on decode and prefill for a llama.cpp plan, and the
// spill cliff. Bytes come from the plan's per-layer placement; rates from data/gpus.csv.
#include "kvfit/speed.h"
#include "kvfit/gpus.h"
#include "kvfit/error.h"
#include "kvfit/search.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fmt/format.h>

namespace kvfit {
namespace {

// FP16 rate assumed for a GPU that is not in the table: the RTX 3070 row (40.6 TFLOP/s), the same class as
// default_unknown_gpu_bandwidth_bytes_per_s.
constexpr double unknown_gpu_flops_per_s = 40.6e12;

// Parameters one token multiplies in block il (experts scaled by n_expert_used / n_expert).
double active_block_params(const model_desc & m, uint32_t il, bool experts) {
    const weight_group & w = m.weights.layers.at(il);
    if (!experts) return double(w.n_params - w.expert_params);
    if (m.n_expert == 0) return double(w.expert_params);
    return double(w.expert_params) * m.n_expert_used / m.n_expert;
}

// Cells a decoded token attends to in layer il at the given depth (one sequence).
uint64_t attended_cells(const model_desc & m, uint32_t il, uint64_t depth) {
    const layer_cache * a = m.attention_cache(il);
    if (a == nullptr) return 0;
    if (a->window > 0) return std::min<uint64_t>(depth, a->window);
    return depth;
}


void set_rates(device_speed & d, const speed_settings & s) {
    if (d.is_host) {
        d.bandwidth_bytes_per_s = s.cpu_bandwidth_bytes_per_s;
        d.flops_per_s = s.cpu_flops_per_s;
        return;
    }
    const gpu_info * g = find_gpu(d.name);
    d.assumed = g == nullptr || g->bandwidth_bytes_per_s == 0;
    const double peak = d.assumed ? s.unknown_gpu_bandwidth_bytes_per_s : double(g->bandwidth_bytes_per_s);
    d.bandwidth_bytes_per_s = peak * s.gpu_bandwidth_efficiency;
    d.flops_per_s = g && g->fp16_flops_per_s > 0 ? g->fp16_flops_per_s : unknown_gpu_flops_per_s;
}

} // namespace

uint64_t active_block_bytes(const model_desc & m, uint32_t il, bool experts) {
    const weight_group & w = m.weights.layers.at(il);
    if (!experts) return w.bytes - w.expert_bytes;
    if (m.n_expert == 0) return w.expert_bytes;
    return w.expert_bytes * m.n_expert_used / m.n_expert;
}

speed_estimate estimate_speed(const model_desc & m, const llamacpp_plan & plan, const speed_settings & s) {
    speed_estimate e;
    e.depth = s.depth ? s.depth : plan.ctx.n_ctx_seq;
    for (const auto & d : plan.devices) {
        device_speed ds;
        ds.name = d.name;
        ds.is_host = d.is_host;
        set_rates(ds, s);
        e.devices.push_back(ds);
    }
    const double prompt_half = s.prompt_tokens / 2.0; // causal: the average prompt token sees half the prompt
    const uint32_t host = uint32_t(plan.devices.size() - 1);
    const uint64_t state_per_layer = plan.rs.n_layer ? plan.rs.bytes() / plan.rs.n_layer / plan.rs.n_seq : 0;
    const std::vector<uint64_t> cell_bytes = llamacpp_attention_cell_bytes(m, plan.settings); // as llama.cpp stores a cell
    for (uint32_t il = 0; il < m.n_layer && il < plan.layer_device.size(); ++il) {
        device_speed & wd = e.devices[plan.weight_device[il]];
        device_speed & xd = e.devices[plan.expert_device[il]];
        device_speed & cd = e.devices[plan.placement.no_kv_offload ? host : plan.layer_device[il]];
        wd.weight_bytes += active_block_bytes(m, il, false);
        xd.weight_bytes += active_block_bytes(m, il, true);
        wd.prefill_flops += 2 * active_block_params(m, il, false);
        xd.prefill_flops += 2 * active_block_params(m, il, true);
        cd.kv_bytes += attended_cells(m, il, e.depth) * cell_bytes[il];
        if (m.is_recurrent(il)) cd.state_bytes += 2 * state_per_layer; // read and written back every token
        if (m.has_kv(il)) {
            const double cells = double(attended_cells(m, il, uint64_t(prompt_half)));
            cd.prefill_flops += 4.0 * m.n_head[il] * m.head_dim_k[il] * cells;
        }
    }
    // The output head is one n_vocab x n_embd matrix read per token; a tied head reads the token embedding.
    const weight_group & head = m.weights.output.n_params ? m.weights.output : m.weights.token_embd;
    for (size_t i = 0; i < plan.devices.size(); ++i) {
        if (!plan.devices[i].has_output) continue;
        e.devices[i].weight_bytes += head.bytes;
        e.devices[i].prefill_flops += 2.0 * m.n_vocab * m.n_embd / s.prompt_tokens; // logits of the last token only
    }
    double decode = 0, prefill = 0;
    const bool has_gpu = e.devices.size() > 1;
    for (auto & d : e.devices) {
        d.decode_seconds = double(d.weight_bytes + d.kv_bytes + d.state_bytes) / d.bandwidth_bytes_per_s;
        d.prefill_seconds = d.prefill_flops / d.flops_per_s;
        if (d.is_host && has_gpu) {
            // op offload: the first GPU multiplies, the weights (all experts of a batch) cross PCIe per micro-batch
            const double host_weights = double(plan.devices.back().used.weights_bytes - m.weights.token_embd.bytes);
            d.prefill_seconds = d.prefill_flops / e.devices.front().flops_per_s +
                                host_weights / (s.pcie_bytes_per_s * std::max<uint32_t>(1, plan.ctx.n_ubatch));
        }
        decode += d.decode_seconds;
        prefill += d.prefill_seconds;
    }
    e.decode_tokens_per_s = decode > 0 ? 1.0 / decode : 0;
    e.prefill_tokens_per_s = prefill > 0 ? 1.0 / prefill : 0;
    return e;
}

// --- the cliff ------------------------------------------------------------------------------------------------

namespace {

cliff_row make_row(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                   const std::vector<device_spec> & gpus, uint64_t margin, const speed_settings & ss,
                   std::string label, std::string flags, uint32_t on_cpu) {
    const llamacpp_plan plan = plan_llamacpp(m, s, p, gpus, margin);
    const speed_estimate e = estimate_speed(m, plan, ss);
    cliff_row r{std::move(label), std::move(flags), p, on_cpu, plan.fits(), 0, e.decode_tokens_per_s,
                e.prefill_tokens_per_s};
    for (const auto & d : plan.devices) {
        if (!d.is_host) r.gpu_bytes = std::max(r.gpu_bytes, d.used.total());
    }
    return r;
}

std::string layers_label(uint32_t k, uint32_t n_total) {
    if (k == 0) return "all on GPU";
    if (k >= n_total) return "all on CPU";
    return fmt::format("{} layer{} on CPU", k, k == 1 ? "" : "s");
}

} // namespace

spill_cliff make_spill_cliff(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                             const std::vector<device_spec> & gpus, uint64_t margin_bytes, const speed_settings & ss) {
    spill_cliff c;
    c.n_ctx = s.n_ctx ? s.n_ctx : m.n_ctx_train;
    const uint32_t n_total = m.n_layer + m.n_layer_mtp + 1; // -ngl counts the output layer
    auto row_for = [&](uint32_t on_cpu) {
        placement_settings q = p;
        q.n_gpu_layers = int32_t(n_total - on_cpu);
        return make_row(m, s, q, gpus, margin_bytes, ss, layers_label(on_cpu, n_total),
                        fmt::format("-ngl {}", n_total - on_cpu), on_cpu);
    };
    for (uint32_t k = 0; k < n_total; k = k == 0 ? 1 : k * 2) c.rows.push_back(row_for(k));
    c.rows.push_back(row_for(n_total));
    const auto fit_ngl = largest_fitting(0, n_total, 1, [&](uint64_t ngl) { // the most layers that fit (search.h)
        placement_settings q = p;
        q.n_gpu_layers = int32_t(ngl);
        return llamacpp_fits(m, s, q, gpus, margin_bytes); // the verdict alone
    });
    c.fit_ngl = fit_ngl ? int32_t(*fit_ngl) : -1;
    if (c.fit_ngl >= 0 && !c.rows.front().fits) {
        const uint32_t on_cpu = n_total - uint32_t(c.fit_ngl);
        auto it = std::find_if(c.rows.begin(), c.rows.end(), [&](const cliff_row & r) { return r.layers_on_cpu >= on_cpu; });
        if (it == c.rows.end() || it->layers_on_cpu != on_cpu) it = c.rows.insert(it, row_for(on_cpu));
        c.llamacpp_choice = int(it - c.rows.begin());
        c.fit_decode_tokens_per_s = it->decode_tokens_per_s;
    }
    if (m.n_expert > 0) {
        placement_settings q = p;
        q.n_gpu_layers = int32_t(n_total);
        q.cpu_moe = true;
        c.rows.push_back(make_row(m, s, q, gpus, margin_bytes, ss, "experts on CPU", "--cpu-moe", 0));
    }
    return c;
}

double parse_bandwidth(std::string_view text) {
    std::string t;
    for (char c : text) {
        if (!std::isspace(static_cast<unsigned char>(c))) t += char(std::tolower(static_cast<unsigned char>(c)));
    }
    double scale = 1e9;
    for (const auto & [suffix, factor] : {std::pair{"tb/s", 1e12}, std::pair{"gb/s", 1e9}, std::pair{"mb/s", 1e6}}) {
        const std::string_view sv(suffix);
        if (t.size() > sv.size() && t.compare(t.size() - sv.size(), sv.size(), sv) == 0) {
            t.resize(t.size() - sv.size());
            scale = factor;
            break;
        }
    }
    char * end = nullptr;
    const double v = t.empty() ? 0 : std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !(v > 0) || v > 1e6) {
        throw error(fmt::format("bandwidth '{}': expected a positive number of GB/s, e.g. 60 or 76.8GB/s", text));
    }
    return v * scale;
}

} // namespace kvfit
