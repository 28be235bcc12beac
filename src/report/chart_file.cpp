// Chart output: JSON for the web page, and .svg / .png files for --chart (include/kvfit/chart.h).
#include "kvfit/chart.h"

#include "kvfit/error.h"
#include "core/subprocess.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace kvfit {
namespace {

// In any case: "chart.SVG" is an SVG.
bool ends_with(const std::string & s, std::string_view suffix) {
    if (s.size() < suffix.size()) return false;
    for (size_t i = 0; i < suffix.size(); ++i) {
        const unsigned char a = static_cast<unsigned char>(s[s.size() - suffix.size() + i]);
        if (std::tolower(a) != static_cast<unsigned char>(suffix[i])) return false;
    }
    return true;
}

void write_text(const std::string & path, const std::string & text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw error::at(path, "cannot write the chart file");
}

// rsvg-convert -f png -o out.png in.svg, without a shell (the path is the user's, never interpreted), killed
// if it takes longer than a minute (a chart converts in well under a second).
bool run_rsvg_convert(const std::string & svg_path, const std::string & png_path) {
    const auto r = detail::run_tool({"rsvg-convert", "-f", "png", "-b", "white", "-o", png_path, svg_path},
                                    detail::tool_timeout(std::chrono::seconds(60)), 1u << 20);
    return r.ok();
}

} // namespace

std::string render_chart_json(const chart_series & c) {
    nlohmann::ordered_json j;
    j["title"] = c.title;
    j["y_label"] = c.y_label;
    j["n_ctx"] = c.n_ctx;
    nlohmann::ordered_json st = nlohmann::ordered_json::object();
    for (const auto & band : c.stack) st[band.name + "_bytes"] = band.bytes;
    j["stack"] = st;
    j["curves"] = nlohmann::ordered_json::array();
    for (const auto & cv : c.curves) {
        j["curves"].push_back({{"label", cv.label}, {"bytes", cv.bytes}, {"max_n_ctx", cv.max_n_ctx}, {"dashed", cv.dashed}, {"color", cv.color}});
    }
    j["capacity_bytes"] = c.capacity_bytes;
    j["margin_bytes"] = c.margin_bytes;
    j["max_n_ctx"] = c.max_n_ctx;
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace); // a name from a file may not be UTF-8
}

void write_chart_file(const std::string & path, const chart_series & c) {
    const std::string svg = render_chart_svg(c);
    if (ends_with(path, ".svg")) return write_text(path, svg);
    if (!ends_with(path, ".png")) throw error::at(path, "chart file must end in .svg or .png");
    const std::string tmp = path + ".tmp.svg";
    write_text(tmp, svg);
    const bool ok = run_rsvg_convert(tmp, path);
    std::remove(tmp.c_str());
    if (!ok) throw error::at(path, "PNG needs rsvg-convert (apt-get install librsvg2-bin); write .svg instead");
}

} // namespace kvfit
