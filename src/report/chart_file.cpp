// Chart output: JSON for the web page, and .svg / .png files for --chart (include/kvfit/chart.h).
#include "kvfit/chart.h"

#include "kvfit/error.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char ** environ;

namespace kvfit {
namespace {

bool ends_with(const std::string & s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void write_text(const std::string & path, const std::string & text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    f.close();
    if (!f) throw error::at(path, "cannot write the chart file");
}

// rsvg-convert -f png -o out.png in.svg, without a shell (the path is the user's, never interpreted).
bool run_rsvg_convert(const std::string & svg_path, const std::string & png_path) {
    const char * argv[] = {"rsvg-convert", "-f", "png", "-b", "white", "-o", png_path.c_str(), svg_path.c_str(), nullptr};
    pid_t pid = 0;
    if (posix_spawnp(&pid, "rsvg-convert", nullptr, nullptr, const_cast<char * const *>(argv), environ) != 0) return false;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
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
    return j.dump();
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
