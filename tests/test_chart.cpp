// Charts are correct by construction (issue 9): every plotted value is a plan_llamacpp result, equal to the
// CLI's --json at that n_ctx, and the SVG draws exactly those values on its axes.
#include "kvfit/chart.h"
#include "kvfit/llamacpp.h"
#include "kvfit/plan.h"
#include "support/run_cli.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

namespace {

using kvfit::test::run_kvfit;

// The seeds' point: Qwen3.5-9B, 6.6 GB of 4-bit weights, an 8 GiB GPU.
kvfit::plan_request seeds_request(const std::string & cache_type = "f16") {
    kvfit::plan_request q;
    q.model = "Qwen3.5-9B";
    q.gpu = "8GiB";
    q.weights_size = "6.6GB";
    q.flags.set("cache_type_k", cache_type);
    q.flags.set("cache_type_v", cache_type);
    return q;
}

kvfit::plan_result seeds_report(const std::string & cache_type = "f16") {
    const kvfit::plan_request q = seeds_request(cache_type);
    return kvfit::make_plan(q, [&](kvfit::warnings & w) { return kvfit::load_model(q.model, w); });
}

// The settings the seeds' plan was made with, as plan_llamacpp takes them.
kvfit::llamacpp_inputs seeds_inputs(const kvfit::plan_result & r) { return kvfit::parse_llamacpp_flags(r.flags); }

// The bytes of one band of the chart's stack (0 when the chart has no such band).
uint64_t band(const kvfit::chart_series & c, const std::string & name, size_t i) {
    for (const auto & b : c.stack) {
        if (b.name == name) return b.bytes[i];
    }
    return 0;
}

uint64_t stack_total(const kvfit::chart_series & c, size_t i) {
    uint64_t n = 0;
    for (const auto & b : c.stack) n += b.bytes[i];
    return n;
}

uint64_t bytes_of(const std::vector<kvfit::buffer> & v, const std::string & name) {
    for (const auto & b : v) {
        if (b.name == name) return b.bytes;
    }
    return 0;
}

uint64_t total_of(const std::vector<kvfit::buffer> & v) {
    uint64_t n = 0;
    for (const auto & b : v) n += b.bytes;
    return n;
}

// The GPUs' bytes of one buffer in a --json document (schema 2), or their used bytes for "total".
uint64_t gpu_bytes(const nlohmann::json & plan, const std::string & name) {
    uint64_t sum = 0;
    for (const auto & d : plan["devices"]) {
        if (d["is_host"]) continue;
        if (name == "total") sum += d["used_bytes"].get<uint64_t>();
        for (const auto & b : d["buffers"]) sum += b["name"] == name ? b["bytes"].get<uint64_t>() : 0;
    }
    return sum;
}

uint64_t max_context(const nlohmann::json & plan, const std::string & type) {
    for (const auto & row : plan["max_context"]) {
        if (!row["all_full_attention"] && row["cache_type"] == type) return row["context_tokens"];
    }
    return 0;
}

TEST(chart, x_values_are_four_per_octave_multiples_of_256_plus_marks) {
    const auto xs = kvfit::chart_n_ctx_values(8192, {5000, 0});
    const std::vector<uint64_t> expected = {1024, 1280, 1536, 1792, 2048, 2560, 2816, 3328, 4096, 4864, 5000, 5888, 6912, 8192};
    EXPECT_EQ(xs, expected);
}

TEST(chart, every_point_is_plan_llamacpp_at_that_n_ctx) {
    const kvfit::plan_result r = seeds_report();
    const kvfit::chart_series c = kvfit::make_chart_series(r);
    ASSERT_EQ(c.n_ctx.front(), 1024u);
    ASSERT_EQ(c.n_ctx.back(), 262144u);
    ASSERT_EQ(c.stack.size(), 5u); // weights, kv, state, compute, output
    for (const auto & b : c.stack) ASSERT_EQ(b.bytes.size(), c.n_ctx.size());
    ASSERT_EQ(c.curves.size(), 3u); // f16, q8_0, q4_0
    const kvfit::ggml_type types[] = {kvfit::ggml_type::f16, kvfit::ggml_type::q8_0, kvfit::ggml_type::q4_0};
    const kvfit::llamacpp_inputs in = seeds_inputs(r);
    for (size_t i = 0; i < c.n_ctx.size(); ++i) {
        kvfit::llamacpp_settings s = in.settings;
        s.n_ctx = c.n_ctx[i];
        const auto p = kvfit::plan_llamacpp(r.model, s, in.placement, r.target.gpus, in.margin_bytes);
        kvfit::buffer_set gpu;
        for (const auto & d : p.devices) {
            if (!d.is_host) gpu += d.used;
        }
        EXPECT_EQ(band(c, "weights", i), gpu.weights_bytes) << "n_ctx " << c.n_ctx[i];
        EXPECT_EQ(band(c, "kv", i), gpu.kv_bytes) << "n_ctx " << c.n_ctx[i];
        EXPECT_EQ(band(c, "state", i), gpu.state_bytes) << "n_ctx " << c.n_ctx[i];
        EXPECT_EQ(band(c, "compute", i), gpu.compute_bytes) << "n_ctx " << c.n_ctx[i];
        EXPECT_EQ(band(c, "output", i), gpu.output_bytes) << "n_ctx " << c.n_ctx[i];
        for (size_t k = 0; k < 3; ++k) {
            s.type_k = s.type_v = types[k];
            const auto pk = kvfit::plan_llamacpp(r.model, s, in.placement, r.target.gpus, in.margin_bytes);
            uint64_t total = 0;
            for (const auto & d : pk.devices) total += d.is_host ? 0 : d.used.total();
            EXPECT_EQ(c.curves[k].bytes[i], total) << c.curves[k].label << " n_ctx " << c.n_ctx[i];
        }
    }
}

TEST(chart, points_and_marks_equal_the_cli_json) {
    const kvfit::chart_series c = kvfit::make_chart_series(seeds_report());
    const auto cli = run_kvfit("Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB --json");
    const auto j = nlohmann::json::parse(cli.out);
    EXPECT_EQ(c.curves[0].max_n_ctx, max_context(j, "f16"));
    EXPECT_EQ(c.curves[1].max_n_ctx, max_context(j, "q8_0"));
    EXPECT_EQ(c.curves[2].max_n_ctx, max_context(j, "q4_0"));
    EXPECT_EQ(c.max_n_ctx, 44800u); // llama-server reserves 1 output (server_output_limits): 32,768 with n_batch
    EXPECT_EQ(c.capacity_bytes, j["gpus"][0]["memory_bytes"]);
    EXPECT_EQ(c.margin_bytes, j["detail"]["settings"]["margin_bytes"]);
    for (uint64_t n : {1024ull, 8192ull, 32768ull, 44800ull, 68864ull, 262144ull}) {
        const auto it = std::find(c.n_ctx.begin(), c.n_ctx.end(), n);
        ASSERT_NE(it, c.n_ctx.end()) << n;
        const size_t i = size_t(it - c.n_ctx.begin());
        const auto p = nlohmann::json::parse(run_kvfit("Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB --json -c " + std::to_string(n)).out);
        EXPECT_EQ(band(c, "weights", i), gpu_bytes(p, "weights")) << n;
        EXPECT_EQ(band(c, "kv", i), gpu_bytes(p, "kv")) << n;
        EXPECT_EQ(band(c, "state", i), gpu_bytes(p, "state")) << n;
        EXPECT_EQ(band(c, "compute", i), gpu_bytes(p, "compute")) << n;
        EXPECT_EQ(stack_total(c, i), gpu_bytes(p, "total")) << n;
    }
}

TEST(chart, compare_shows_the_seeds_4x) {
    const kvfit::plan_result r = seeds_report();
    const kvfit::chart_series c = kvfit::make_compare_series(r);
    ASSERT_EQ(c.curves.size(), 4u);
    EXPECT_EQ(c.curves[0].max_n_ctx, 44800u);
    EXPECT_EQ(c.curves[1].max_n_ctx, r.plan.max_context.back().context_tokens); // the all-full-attention row
    EXPECT_TRUE(r.plan.max_context.back().all_full_attention);
    const kvfit::model_desc full = kvfit::all_full_attention_variant(r.model);
    const kvfit::runtime_info & rt = kvfit::find_runtime("llama.cpp");
    for (size_t i = 0; i < c.n_ctx.size(); ++i) {
        kvfit::flag_values f = r.flags;
        f.set("ctx_size", std::to_string(c.n_ctx[i]));
        const auto a = kvfit::chart_bytes(rt.plan(r.model, f, r.target));
        const auto b = kvfit::chart_bytes(rt.plan(full, f, r.target));
        EXPECT_EQ(c.curves[0].bytes[i], total_of(a));
        EXPECT_EQ(c.curves[1].bytes[i], total_of(b));
        EXPECT_EQ(c.curves[3].bytes[i], 4 * bytes_of(a, "kv")) << "all full attention KV = 4x at n_ctx " << c.n_ctx[i];
        EXPECT_EQ(c.curves[2].bytes[i], bytes_of(a, "kv") + bytes_of(a, "state"));
    }
    EXPECT_NE(c.note.find("32,768 B"), std::string::npos) << c.note;
    EXPECT_NE(c.note.find("131,072 B (4.00x)"), std::string::npos) << c.note;
}

std::vector<double> numbers(const std::string & text) {
    std::vector<double> out;
    std::istringstream in(text);
    std::string item;
    while (in >> item) {
        for (auto & ch : item) ch = ch == ',' ? ' ' : ch;
        std::istringstream pair(item);
        double v = 0;
        while (pair >> v) out.push_back(v);
    }
    return out;
}

// The SVG draws the series' values: each polyline's data-bytes are the curve's bytes, and its pixels are those
// bytes on the axes (y from the capacity line's scale, x on log2 from the first to the last n_ctx).
TEST(chart, svg_draws_exactly_the_series) {
    const kvfit::chart_series c = kvfit::make_chart_series(seeds_report());
    const std::string svg = kvfit::render_chart_svg(c);
    const std::regex cap_re(R"re(<line class="limit" data-bytes="(\d+)" x1="[\d.]+" y1="([\d.]+)")re");
    std::smatch cap;
    ASSERT_TRUE(std::regex_search(svg, cap, cap_re));
    ASSERT_EQ(std::stoull(cap[1]), 8ull << 30);
    const double y_axis = 490; // k_height - k_bottom: bytes 0
    const double px_per_byte = (y_axis - std::stod(cap[2])) / double(8ull << 30);
    const std::regex poly_re(R"re(<polyline class="curve" data-label="([^"]*)" data-n-ctx="([^"]*)" data-bytes="([^"]*)"[^>]* points="([^"]*)")re");
    size_t k = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), poly_re); it != std::sregex_iterator(); ++it, ++k) {
        ASSERT_LT(k, c.curves.size());
        EXPECT_EQ((*it)[1].str(), c.curves[k].label);
        const auto xs = numbers((*it)[2]), bytes = numbers((*it)[3]), pts = numbers((*it)[4]);
        ASSERT_EQ(bytes.size(), c.n_ctx.size());
        ASSERT_EQ(pts.size(), 2 * c.n_ctx.size());
        for (size_t i = 0; i < c.n_ctx.size(); ++i) {
            EXPECT_EQ(uint64_t(xs[i]), c.n_ctx[i]);
            EXPECT_EQ(uint64_t(bytes[i]), c.curves[k].bytes[i]);
            EXPECT_NEAR(pts[2 * i + 1], y_axis - bytes[i] * px_per_byte, 0.011) << c.curves[k].label << " " << c.n_ctx[i];
            const double frac = (std::log2(xs[i]) - 10) / (18 - 10); // 1K .. 256K
            EXPECT_NEAR(pts[2 * i], 70 + frac * (960 - 70 - 250), 0.011);
        }
    }
    EXPECT_EQ(k, c.curves.size());
    EXPECT_NE(svg.find("<text x=\"70\" y=\"24\" class=\"title\">Qwen3.5-9B</text>"), std::string::npos);
    EXPECT_NE(svg.find("class=\"mark\" data-n-ctx=\"44800\""), std::string::npos);
    EXPECT_NE(svg.find(">256K</text>"), std::string::npos);
    EXPECT_NE(svg.find(">KV cache</text>"), std::string::npos);
}

TEST(chart, svg_escapes_names) {
    kvfit::chart_series c = kvfit::make_chart_series(seeds_report());
    c.title = "<script>&\" - x";
    const std::string svg = kvfit::render_chart_svg(c);
    EXPECT_EQ(svg.find("<script>"), std::string::npos);
    EXPECT_NE(svg.find("&lt;script&gt;&amp;&quot;"), std::string::npos);
}

// The CLI writes what the library renders; PNG through rsvg-convert. The PNGs are kept in build/artifacts
// for a person to look at.
TEST(chart, cli_writes_svg_and_png) {
    const std::filesystem::path dir = std::filesystem::path(KVFIT_BINARY).parent_path() / "artifacts";
    std::filesystem::create_directories(dir);
    const std::string svg = (dir / "chart-qwen35-9b.svg").string(), png = (dir / "chart-qwen35-9b.png").string();
    const std::string cmp = (dir / "chart-compare-qwen35-9b.png").string();
    const auto r = run_kvfit("Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB --chart " + svg);
    ASSERT_EQ(r.status, 3) << r.err; // 262,144 tokens do not fit
    std::ifstream in(svg);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), kvfit::render_chart_svg(kvfit::make_chart_series(seeds_report())));
    const auto p = run_kvfit("Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB -c 32768 --chart " + png + " --chart-compare " + cmp);
    ASSERT_EQ(p.status, 0) << p.err;
    for (const auto & f : {png, cmp}) {
        std::ifstream b(f, std::ios::binary);
        char magic[8] = {};
        b.read(magic, 8);
        EXPECT_EQ(std::string(magic + 1, 3), "PNG") << f;
        EXPECT_GT(std::filesystem::file_size(f), 20000u) << f;
    }
    const auto bad = run_kvfit("--chart out.pdf");
    EXPECT_EQ(bad.status, 2);
    EXPECT_EQ(bad.err, "kvfit: out.pdf: chart file must end in .svg or .png\n");
}

TEST(chart, json_for_the_page_holds_the_same_values) {
    const kvfit::chart_series c = kvfit::make_chart_series(seeds_report("q8_0"));
    const auto j = nlohmann::json::parse(kvfit::render_chart_json(c));
    EXPECT_EQ(j["n_ctx"].get<std::vector<uint64_t>>(), c.n_ctx);
    EXPECT_EQ(j["curves"][1]["bytes"].get<std::vector<uint64_t>>(), c.curves[1].bytes);
    EXPECT_EQ(j["curves"][1]["dashed"], false); // q8_0 is the requested type
    EXPECT_EQ(j["max_n_ctx"], 68864);
    EXPECT_EQ(j["stack"]["kv_bytes"][0], band(c, "kv", 0));
    EXPECT_EQ(j["stack"].size(), c.stack.size());
}

} // namespace

namespace {

// docs/chart-qwen35-9b.svg (shown in the README) is what the README's command writes today. After a change to
// the rules, regenerate it: ./build/kvfit Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB --chart docs/chart-qwen35-9b.svg
TEST(chart, readme_chart_is_current) {
    std::ifstream in(std::string(KVFIT_TEST_DATA) + "/../../docs/chart-qwen35-9b.svg");
    ASSERT_TRUE(in);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), kvfit::render_chart_svg(kvfit::make_chart_series(seeds_report())))
        << "regenerate docs/chart-qwen35-9b.svg with the command in this test's comment";
}

} // namespace
