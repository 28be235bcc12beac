// The speed models by runtime (speed.h find_speed_model; issue 26 item 2): llama.cpp's roofline over its own plan, and
// its --speed section (the spill cliff) as text. The report and the ranking reach them by the plan's runtime, never by
// its name.
#include "kvfit/error.h"
#include "kvfit/llamacpp.h"
#include "kvfit/plan.h"
#include "kvfit/printable.h"
#include "kvfit/speed.h"
#include "kvfit/units.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit {

std::string render_spill_cliff(const model_desc & m, const spill_cliff & c, const speed_estimate & full,
                               const speed_settings & ss) {
    std::string out = fmt::format("Spill cliff: {} at n_ctx {} (decode at depth {}, one sequence; prefill of a "
                                  "{}-token prompt)\n", printable(m.name, false), with_commas(c.n_ctx), with_commas(full.depth),
                                  ss.prompt_tokens);
    for (const auto & d : full.devices) {
        out += fmt::format("  {:<10} {:>6.0f} GB/s effective{}, {:.1f} TFLOP/s{}\n", d.name, d.bandwidth_bytes_per_s / 1e9,
                           d.is_host ? " (--cpu-bandwidth)" : fmt::format(" ({:.0f}% of peak)", ss.gpu_bandwidth_efficiency * 100),
                           d.flops_per_s / 1e12,
                           d.assumed ? "  [GPU not in the table: bandwidth and FLOP/s assumed; pass its name to --gpu]" : "");
    }
    out += fmt::format("  {:<16} {:<12} {:>5} {:>12} {:>11} {:>8} {:>12}\n", "placement", "flags", "fits", "fullest GPU",
                       "decode t/s", "vs full", "prefill t/s");
    const double base = c.rows.empty() ? 0 : c.rows.front().decode_tokens_per_s;
    for (size_t i = 0; i < c.rows.size(); ++i) {
        const cliff_row & r = c.rows[i];
        out += fmt::format("  {:<16} {:<12} {:>5} {:>12} {:>11.1f} {:>7.2f}x {:>12.0f}{}\n", r.label, r.flags,
                           r.fits ? "yes" : "no", human_bytes(r.gpu_bytes), r.decode_tokens_per_s,
                           base > 0 ? r.decode_tokens_per_s / base : 0, r.prefill_tokens_per_s,
                           int(i) == c.llamacpp_choice ? "  <- what llama.cpp runs (most layers that fit)" : "");
    }
    if (c.llamacpp_choice >= 0) {
        out += fmt::format("  The full-GPU plan does not fit: llama.cpp would spill to -ngl {} and decode at {:.1f} t/s "
                           "instead of {:.1f} t/s ({:.1f}x slower).\n", c.fit_ngl, c.fit_decode_tokens_per_s, base,
                           base / std::max(1e-9, c.fit_decode_tokens_per_s));
    } else if (!c.rows.empty() && !c.rows.front().fits && c.fit_ngl < 0) {
        out += "  Nothing fits on the GPU at this context, not even -ngl 0 (the compute buffer still goes to the GPU).\n";
    }
    out += "  Roofline bounds: decode = bytes read per token / bandwidth, summed over devices; see docs/speed.md.\n";
    return out;
}

namespace {

std::optional<double> llamacpp_decode_speed(const model_desc & m, const flag_values & f, const machine & mc,
                                            uint64_t n_ctx, const speed_settings & s) {
    if (m.weights.total_bytes() == 0) return std::nullopt; // bytes read per token are the weights' bytes
    const llamacpp_inputs in = parse_llamacpp_flags(f);
    llamacpp_settings st = in.settings;
    st.n_ctx = n_ctx;
    speed_settings ss = s;
    ss.depth = std::min(n_ctx, ss.depth);
    return estimate_speed(m, plan_llamacpp(m, st, in.placement, mc.gpus, in.margin_bytes), ss).decode_tokens_per_s;
}

std::string llamacpp_speed_section(const plan_result & r, const speed_settings & ss) {
    const model_desc & m = r.model;
    const llamacpp_inputs in = parse_llamacpp_flags(r.flags);
    llamacpp_settings s = in.settings;
    s.n_ctx = r.plan.context_tokens;
    const placement_settings & p = in.placement;
    const std::vector<device_spec> & gpus = r.target.gpus;
    const uint64_t margin_bytes = gpus.empty() ? default_margin_bytes : in.margin_bytes;
    if (m.weights.total_bytes() == 0) {
        return "\nSpeed: pass --weights FORMAT or --weights-size SIZE (bytes read per token are the weights' bytes)\n";
    }
    const llamacpp_plan plan = plan_llamacpp(m, s, p, gpus, margin_bytes);
    const speed_estimate e = estimate_speed(m, plan, ss);
    if (gpus.empty()) {
        return fmt::format("\nSpeed on the CPU alone ({:.0f} GB/s, --cpu-bandwidth): decode {:.1f} t/s at depth {}, "
                           "prefill {:.0f} t/s (roofline bounds, docs/speed.md)\n", ss.cpu_bandwidth_bytes_per_s / 1e9,
                           e.decode_tokens_per_s, with_commas(e.depth), e.prefill_tokens_per_s);
    }
    return "\n" + render_spill_cliff(m, make_spill_cliff(m, s, p, gpus, margin_bytes, ss), e, ss);
}

const speed_model k_models[] = {
    {"llama.cpp", llamacpp_decode_speed, llamacpp_speed_section},
};

} // namespace

const speed_model * find_speed_model(const runtime_info & rt) {
    for (const auto & sm : k_models) {
        if (sm.runtime == rt.name) return &sm;
    }
    return nullptr;
}

} // namespace kvfit
