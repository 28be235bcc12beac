// Draws a chart_series as SVG (include/kvfit/chart.h: render_chart_svg). A small writer on purpose: the
// chart is a handful of polygons, polylines and text, and every coordinate comes from one of two mappings,
// x_px(n_ctx) on a log2 axis and y_px(bytes) on a linear one.
#include "kvfit/chart.h"
#include "kvfit/printable.h"
#include "kvfit/report.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kvfit {
namespace {

constexpr double k_width = 960, k_height = 540;
constexpr double k_left = 70, k_right = 250, k_top = 66, k_bottom = 50; // plot area insets, px
constexpr double k_gib = double(1ull << 30);

// Colours and legend labels of the stacked buffers; a buffer not listed gets the next of k_other_colors.
struct component { std::string_view name; const char * label; const char * color; };
constexpr component k_components[] = {
    {"weights", "weights", "#4e79a7"},        {"kv", "KV cache", "#f28e2b"},
    {"state", "recurrent state", "#59a14f"},  {"compute", "compute buffer", "#e15759"},
    {"output", "output buffer", "#b07aa1"},
};
constexpr const char * k_other_colors[] = {"#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"};

// The label and colour of band `k` of the chart.
std::pair<std::string, const char *> band_style(const chart_series & c, size_t k) {
    for (const auto & comp : k_components) {
        if (comp.name == c.stack[k].name) return {comp.label, comp.color};
    }
    size_t other = 0;
    for (size_t i = 0; i < k; ++i) {
        other += std::none_of(std::begin(k_components), std::end(k_components),
                              [&](const component & comp) { return comp.name == c.stack[i].name; });
    }
    return {std::string(buffer_label(c.stack[k].name)), k_other_colors[other % std::size(k_other_colors)]};
}

bool any_bytes(const chart_band & b) {
    return std::any_of(b.bytes.begin(), b.bytes.end(), [](uint64_t v) { return v != 0; });
}

constexpr const char * k_curve_colors[] = {"#222222", "#1f6f8b", "#7b2d8b", "#8c564b"};
const char * curve_color(const chart_series & c, size_t k) {
    const int i = c.curves[k].color >= 0 ? c.curves[k].color : int(k);
    return k_curve_colors[size_t(i) % std::size(k_curve_colors)];
}
constexpr const char * k_margin_color = "#d9d9d9", * k_capacity_color = "#c0392b";

// Markup escaped, and characters XML 1.0 forbids (controls, bytes that are not UTF-8) spelled out first: a model
// name from a GGUF must not make the SVG unreadable.
std::string xml_escape(std::string_view s) {
    std::string out;
    for (char ch : printable(s, false)) {
        switch (ch) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += ch;
        }
    }
    return out;
}

// "1K", "256K", "1M": tokens on the x axis (binary K as llama.cpp's context sizes are spoken).
std::string tokens_label(uint64_t n) {
    if (n >= (1u << 20) && n % (1u << 20) == 0) return fmt::format("{}M", n >> 20);
    if (n >= 1024 && n % 1024 == 0) return fmt::format("{}K", n >> 10);
    return with_commas(n);
}

// A tick step of 1, 2, 2.5 or 5 x 10^k GiB giving about six ticks up to `top`.
double nice_step(double top) {
    const double raw = top / 6, p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        if (m * p >= raw) return m * p;
    }
    return 10 * p;
}

struct frame {
    double x_lo, x_hi, y_top; // data range: log2 tokens, bytes
    double x_px(uint64_t n) const {
        return k_left + (std::log2(double(n)) - x_lo) / (x_hi - x_lo) * (k_width - k_left - k_right);
    }
    double y_px(double bytes) const { return k_height - k_bottom - bytes / y_top * (k_height - k_top - k_bottom); }
};

std::string list_attr(const std::vector<uint64_t> & v) {
    std::string s;
    for (uint64_t x : v) s += fmt::format("{}{}", s.empty() ? "" : " ", x);
    return s;
}

std::string points_attr(const frame & f, const std::vector<uint64_t> & xs, const std::vector<double> & ys) {
    std::string s;
    for (size_t i = 0; i < xs.size(); ++i) s += fmt::format("{}{:.2f},{:.2f}", i ? " " : "", f.x_px(xs[i]), f.y_px(ys[i]));
    return s;
}

double data_top(const chart_series & c) {
    double top = 0;
    for (size_t i = 0; i < c.n_ctx.size() && !c.stack.empty(); ++i) {
        uint64_t total = c.margin_bytes;
        for (const auto & band : c.stack) total += band.bytes[i];
        top = std::max(top, double(total));
    }
    for (const auto & cv : c.curves) {
        for (uint64_t b : cv.bytes) top = std::max(top, double(b));
    }
    // Curves far above the GPU (all full attention at 256K) would flatten the part that matters: clip at 2x.
    if (c.capacity_bytes) top = std::min(top, 2.0 * double(c.capacity_bytes));
    return std::max({top, double(c.capacity_bytes) * 1.05, 1.0 * k_gib});
}

void axes(std::string & o, const chart_series & c, const frame & f, double step) {
    const double x0 = k_left, x1 = k_width - k_right, y0 = k_height - k_bottom, y1 = k_top;
    for (double g = 0; g * k_gib <= f.y_top * 1.0001; g += step) {
        const double y = f.y_px(g * k_gib);
        o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.2f}\" x2=\"{:.1f}\" y2=\"{:.2f}\" stroke=\"#e6e6e6\"/>", x0, y, x1, y);
        o += fmt::format("<text x=\"{:.1f}\" y=\"{:.2f}\" text-anchor=\"end\" class=\"tick\">{:g}</text>\n", x0 - 6, y + 4, g);
    }
    const uint64_t lo = c.n_ctx.front(), hi = c.n_ctx.back();
    int n_ticks = 0;
    for (uint64_t t = 1; t <= hi; t *= 2) n_ticks += t >= lo;
    const int every = n_ticks > 12 ? 2 : 1;
    int i = 0;
    for (uint64_t t = 1; t <= hi; t *= 2) {
        if (t < lo || i++ % every) continue;
        const double x = f.x_px(t);
        o += fmt::format("<line x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" y2=\"{:.1f}\" stroke=\"#e6e6e6\"/>", x, y0, x, y1);
        o += fmt::format("<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"middle\" class=\"tick\">{}</text>\n", x, y0 + 16,
                         tokens_label(t));
    }
    o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#444\"/>\n",
                     x0, y1, x1 - x0, y0 - y1);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" class=\"axis\">context n_ctx (tokens, log2 scale)</text>\n",
                     (x0 + x1) / 2, k_height - 12);
    o += fmt::format("<text transform=\"translate(18,{:.1f}) rotate(-90)\" text-anchor=\"middle\" class=\"axis\">{}</text>\n",
                     (y0 + y1) / 2, xml_escape(c.y_label));
}

// Stacked areas: each component between the running sum below it and the sum including it; margin on top.
void stack(std::string & o, const chart_series & c, const frame & f) {
    std::vector<double> below(c.n_ctx.size(), 0.0);
    auto band = [&](const std::string & label, const char * color, const std::vector<uint64_t> & bytes) {
        std::vector<double> above = below;
        for (size_t i = 0; i < bytes.size(); ++i) above[i] += double(bytes[i]);
        std::vector<uint64_t> xs_rev(c.n_ctx.rbegin(), c.n_ctx.rend());
        std::vector<double> below_rev(below.rbegin(), below.rend());
        o += fmt::format("<polygon class=\"area\" data-label=\"{}\" data-n-ctx=\"{}\" data-bytes=\"{}\" fill=\"{}\" "
                         "fill-opacity=\"0.85\" stroke=\"none\" points=\"{} {}\"/>\n",
                         label, list_attr(c.n_ctx), list_attr(bytes), color, points_attr(f, c.n_ctx, above),
                         points_attr(f, xs_rev, below_rev));
        below = above;
    };
    for (size_t k = 0; k < c.stack.size(); ++k) {
        const auto [label, color] = band_style(c, k);
        if (any_bytes(c.stack[k])) band(label, color, c.stack[k].bytes);
    }
    if (c.margin_bytes) band("margin", k_margin_color, std::vector<uint64_t>(c.n_ctx.size(), c.margin_bytes));
}

void curves(std::string & o, const chart_series & c, const frame & f) {
    for (size_t k = 0; k < c.curves.size(); ++k) {
        const chart_curve & cv = c.curves[k];
        const char * color = curve_color(c, k);
        const std::vector<double> ys(cv.bytes.begin(), cv.bytes.end());
        o += fmt::format("<polyline class=\"curve\" data-label=\"{}\" data-n-ctx=\"{}\" data-bytes=\"{}\" fill=\"none\" "
                         "stroke=\"{}\" stroke-width=\"2\"{} points=\"{}\"/>\n",
                         xml_escape(cv.label), list_attr(c.n_ctx), list_attr(cv.bytes), color,
                         cv.dashed ? " stroke-dasharray=\"6 4\"" : "", points_attr(f, c.n_ctx, ys));
    }
}

void hline(std::string & o, const frame & f, double bytes, const char * dash, const std::string & label) {
    const double y = f.y_px(bytes);
    o += fmt::format("<line class=\"limit\" data-bytes=\"{:.0f}\" x1=\"{:.1f}\" y1=\"{:.2f}\" x2=\"{:.1f}\" y2=\"{:.2f}\" "
                     "stroke=\"{}\" stroke-width=\"2\"{}/>",
                     bytes, k_left, y, k_width - k_right, y, k_capacity_color, dash);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.2f}\" class=\"note\" fill=\"{}\">{}</text>\n", k_left + 6, y - 5,
                     k_capacity_color, xml_escape(label));
}

// A vertical mark at each largest fitting n_ctx, labelled; labels step down so that close marks stay legible.
void marks(std::string & o, const chart_series & c, const frame & f) {
    struct mark { uint64_t n; std::string label; const char * color; };
    std::vector<mark> ms;
    bool stack_marked = false; // the requested types' mark, unless a solid curve (same types) carries it
    for (size_t k = 0; k < c.curves.size(); ++k) {
        if (c.curves[k].max_n_ctx) ms.push_back({c.curves[k].max_n_ctx, c.curves[k].label, curve_color(c, k)});
        stack_marked = stack_marked || (!c.curves[k].dashed && c.curves[k].max_n_ctx == c.max_n_ctx);
    }
    if (c.max_n_ctx && !c.stack.empty() && !stack_marked) ms.insert(ms.begin(), {c.max_n_ctx, "requested types", "#000"});
    int row = 0;
    for (const auto & m : ms) {
        const double x = f.x_px(m.n);
        o += fmt::format("<line class=\"mark\" data-n-ctx=\"{}\" x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" y2=\"{:.1f}\" "
                         "stroke=\"{}\" stroke-dasharray=\"2 3\"/>",
                         m.n, x, k_top, x, k_height - k_bottom, m.color);
        const bool right = x < k_width - k_right - 150;
        o += fmt::format("<text x=\"{:.2f}\" y=\"{:.1f}\" text-anchor=\"{}\" class=\"note\" fill=\"{}\">{} max {}</text>\n",
                         x + (right ? 4 : -4), k_top + 14 + 14 * row++, right ? "start" : "end", m.color,
                         xml_escape(m.label), with_commas(m.n));
    }
}

void legend(std::string & o, const chart_series & c) {
    double y = k_top + 6;
    const double x = k_width - k_right + 16;
    auto item = [&](const std::string & swatch, const std::string & label) {
        o += swatch + fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"legend\">{}</text>\n", x + 26, y + 9,
                                  xml_escape(label));
        y += 20;
    };
    for (size_t k = 0; k < c.stack.size(); ++k) {
        const auto [label, color] = band_style(c, k);
        if (any_bytes(c.stack[k])) item(fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"18\" height=\"12\" fill=\"{}\"/>", x, y, color), label);
    }
    if (c.margin_bytes && !c.stack.empty()) {
        item(fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"18\" height=\"12\" fill=\"{}\"/>", x, y, k_margin_color), "margin");
    }
    for (size_t k = 0; k < c.curves.size(); ++k) {
        item(fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"{}/>",
                         x, y + 6, x + 18, y + 6, curve_color(c, k), c.curves[k].dashed ? " stroke-dasharray=\"6 4\"" : ""),
             c.curves[k].label);
    }
    if (c.capacity_bytes) {
        item(fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>",
                         x, y + 6, x + 18, y + 6, k_capacity_color), "GPU capacity");
        item(fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\" "
                         "stroke-dasharray=\"6 4\"/>", x, y + 6, x + 18, y + 6, k_capacity_color), "capacity - margin");
    }
    y += 10;
    for (size_t start = 0; start < c.note.size();) {
        const size_t end = std::min(c.note.find('\n', start), c.note.size());
        o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"note\">{}</text>\n", x, y + 9,
                         xml_escape(c.note.substr(start, end - start)));
        y += 16;
        start = end + 1;
    }
}

} // namespace

std::string render_chart_svg(const chart_series & c) {
    frame f{std::log2(double(c.n_ctx.front())), std::log2(double(c.n_ctx.back())), data_top(c)};
    if (f.x_hi <= f.x_lo) f.x_hi = f.x_lo + 1;
    const double step = nice_step(f.y_top / k_gib);
    f.y_top = std::ceil(f.y_top / k_gib / step) * step * k_gib; // the top gridline is a tick
    std::string o = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                                "font-family=\"DejaVu Sans, Arial, sans-serif\">\n", k_width, k_height);
    o += "<style>.tick{font-size:11px;fill:#333}.axis{font-size:12px;fill:#222}.legend{font-size:12px;fill:#222}"
         ".note{font-size:11px}.title{font-size:15px;font-weight:bold}.subtitle{font-size:12px;fill:#444}</style>\n";
    o += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", k_width, k_height);
    const size_t cut = c.title.find(" - ");
    o += fmt::format("<text x=\"{}\" y=\"24\" class=\"title\">{}</text>\n", k_left, xml_escape(c.title.substr(0, cut)));
    if (cut != std::string::npos) {
        o += fmt::format("<text x=\"{}\" y=\"44\" class=\"subtitle\">{}</text>\n", k_left, xml_escape(c.title.substr(cut + 3)));
    }
    o += fmt::format("<clipPath id=\"plot\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n", k_left, k_top,
                     k_width - k_left - k_right, k_height - k_top - k_bottom);
    axes(o, c, f, step);
    o += "<g clip-path=\"url(#plot)\">\n";
    if (!c.stack.empty()) stack(o, c, f);
    curves(o, c, f);
    if (c.capacity_bytes) {
        hline(o, f, double(c.capacity_bytes), "", fmt::format("GPU capacity {}", human_bytes(c.capacity_bytes)));
        hline(o, f, double(c.capacity_bytes - std::min(c.margin_bytes, c.capacity_bytes)), " stroke-dasharray=\"6 4\"",
              fmt::format("capacity - margin {}", human_bytes(c.capacity_bytes - std::min(c.margin_bytes, c.capacity_bytes))));
    }
    marks(o, c, f);
    o += "</g>\n";
    legend(o, c);
    return o + "</svg>\n";
}

} // namespace kvfit
