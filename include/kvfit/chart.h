#pragma once
/// @file chart.h
/// Memory-versus-context charts, for any runtime with a context setting (runtime_info::context). A chart is data
/// first: make_chart_series calls the runtime's plan at each plotted context and keeps its buffers, so every plotted
/// point *is* a plan (tests/test_chart.cpp checks each one against plan_llamacpp and the --json document).
/// render_chart_svg draws the data; render_chart_json hands the same data to the web page (`kvfit serve`,
/// POST /v1/chart).
///
/// Example (Qwen3.5-9B, --weights-size 6.6GB, --gpu 8GiB, f16 cache): x runs 1,024 ... 262,144 tokens on a
/// log2 axis; at n_ctx 32,768 the GPU holds weights 5.45 GiB (the token embedding, 0.70 GiB, stays in host
/// memory) + KV 1.00 GiB + state 0.05 GiB + compute 0.50 GiB = 6.99 GiB; the capacity line is at 8 GiB, the
/// capacity - margin line at 7 GiB, and the f16 mark at 32,768 tokens (q8_0: 61,952; q4_0: 116,992).

#include "kvfit/plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit {

/// One line on a chart: total bytes at each of the chart's n_ctx values.
struct chart_curve {
    std::string label;                 ///< legend text: "f16 K/V total", "all full attention, KV"
    std::vector<uint64_t> bytes;       ///< one per chart_series::n_ctx, bytes
    uint64_t max_n_ctx = 0;            ///< largest n_ctx that fits (marked); 0 = none or no GPU
    bool dashed = false;               ///< drawn dashed (KV-only curves, secondary cache types)
    int color = -1;                    ///< palette index (0 black, 1 teal, 2 purple, 3 brown); -1 = position
};

/// One stacked band: the bytes of one buffer (runtime.h vocabulary) at each of the chart's n_ctx values.
struct chart_band {
    std::string name;                  ///< "weights", "kv", "state", "compute", "output", "kv_pool", ...
    std::vector<uint64_t> bytes;       ///< one per chart_series::n_ctx, bytes
};

/// The data of one chart. Stacked areas (when `stack` is non-empty) show the requested settings by buffer;
/// curves are lines over them. Bytes are GPU memory (the sum over the plan's GPUs) when the plan has GPUs,
/// else all memory (the host).
struct chart_series {
    std::string title;                 ///< model, runtime and settings: "Qwen3.5-9B - llama.cpp - f16/f16 ..."
    std::string y_label;               ///< "GPU memory (GiB)" or "memory (GiB)"
    std::vector<uint64_t> n_ctx;       ///< x values: the context setting, tokens, ascending (4 per octave from 1,024, plus marks)
    std::vector<chart_band> stack;     ///< bottom first: weights, kv, state, compute, output, then other buffers
    std::vector<chart_curve> curves;   ///< lines: per cache type totals, or model vs variant
    uint64_t capacity_bytes = 0;       ///< sum of GPU memory; 0 without GPUs (no lines drawn)
    uint64_t margin_bytes = 0;         ///< kept free over all GPUs (the sum of their reserved_bytes)
    uint64_t max_n_ctx = 0;            ///< largest context that fits at the requested settings (marked); 0 = none
    std::string note;                  ///< lines ('\n') under the legend: "KV per token: 32,768 B ..."
};

/// Bytes a chart plots for one plan, by buffer name in stacking order: the sum over the GPUs, or the host's when
/// there is no GPU.
std::vector<buffer> chart_bytes(const runtime_plan & p);

/// The x values of a chart: 1,024 x 2^(i/4) rounded to a multiple of 256 (1024, 1280, 1536, 1792, 2048,
/// 2560, ...), up to `x_max` (which is included), plus each of `marks` (> 0), sorted and unique.
std::vector<uint64_t> chart_n_ctx_values(uint64_t x_max, const std::vector<uint64_t> & marks);

/// The stacked chart of a plan: `stack` at the requested settings; one curve per cache type of the runtime
/// (llama.cpp: f16, q8_0, q4_0, K and V both of that type; types the runtime refuses with these flags are left out,
/// as q8_0 under -fa off) with the plan's largest context for that type (max_context). x runs to max(n_ctx_train,
/// the plan's context), at most 2^32. Every value comes from r.runtime->plan at that context. Throws kvfit::error
/// for a runtime without a context setting.
chart_series make_chart_series(const plan_result & r);

/// The comparison chart: the model against all_full_attention_variant(model) at the requested settings, total and
/// KV-only curves for each, with each one's largest fitting context (the seeds' 4x for Qwen3.5-9B).
chart_series make_compare_series(const plan_result & r);

/// An SVG document (800 x 500 px) of the series: stacked areas, curves, capacity and margin lines, marks,
/// log2 x axis in tokens (ticks 1K 2K 4K ...), linear y axis in GiB, legend, title. Each area and curve
/// carries `data-n-ctx` and `data-bytes` attributes listing the plotted values, in the order of its points.
std::string render_chart_svg(const chart_series & c);

/// The series as JSON for the web page: {"title", "y_label", "n_ctx": [...], "stack": {"weights_bytes": [...],
/// ... one "<buffer>_bytes" per band, bottom first}, "curves": [{"label", "bytes": [...], "max_n_ctx", "dashed",
/// "color"}], "capacity_bytes", "margin_bytes", "max_n_ctx"}.
std::string render_chart_json(const chart_series & c);

/// Write a chart file by extension: ".svg" writes the SVG; ".png" converts it with rsvg-convert (Debian
/// package librsvg2-bin), run as a subprocess. Throws kvfit::error "<path>: ..." for another extension, a
/// file that cannot be written, or "<path>: PNG needs rsvg-convert (apt-get install librsvg2-bin); write
/// .svg instead" when the converter is missing or fails.
void write_chart_file(const std::string & path, const chart_series & c);

} // namespace kvfit
