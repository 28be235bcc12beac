// Typed plan sections (include/kvfit/runtime.h: plan_section, plan_row, plan_figure; issue 26 item 1): each serving
// runtime builds its report sections from its own plan, with a source and an estimate flag on every figure, and the
// text report of those runtimes (src/report/text_serving.cpp) renders them without naming a runtime or reading
// detail by key. The words and numbers are the goldens' (tests/data/golden/vllm_*.txt, sglang_*.txt, ollama_*.txt).
#include "kvfit/gpus.h"
#include "kvfit/llamacpp.h"
#include "kvfit/mlx.h"
#include "kvfit/ollama.h"
#include "kvfit/report.h"
#include "kvfit/plan.h"
#include "kvfit/sglang.h"
#include "kvfit/sources.h"
#include "kvfit/vllm.h"
#include "support/files.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <initializer_list>
#include <regex>
#include <utility>
#include <string_view>

namespace {

constexpr uint64_t GiB = 1ull << 30;

// A catalog model at a weight format (support/files.h).
kvfit::model_desc load(const char * name, const char * format) {
    kvfit::model_desc m = kvfit::test::catalog_model(name);
    kvfit::apply_weight_format(m, format, true);
    return m;
}

// Flags by JSON name, as the CLI would set them.
kvfit::flag_values flags_of(std::initializer_list<std::pair<const char *, const char *>> given) {
    kvfit::flag_values f;
    for (const auto & [name, value] : given) f.set(name, value);
    return f;
}

// The figure labelled `label` in the first row of section `title_prefix` that has one; nullptr when none.
const kvfit::plan_figure * find_figure(const kvfit::runtime_plan & p, std::string_view title_prefix, std::string_view label) {
    for (const auto & s : p.sections) {
        if (!s.title.starts_with(title_prefix)) continue;
        for (const auto & r : s.rows) {
            for (const auto & f : r.figures) {
                if (f.label == label) return &f;
            }
        }
    }
    return nullptr;
}

// No report names a runtime, includes a runtime's header or reads a figure of detail by key (issue 26 item 1: "a test
// greps src/report"): every runtime-specific line comes from plan.sections, and --check and charts read the plan's
// typed fields (words, host_ram). u64(d, "block_size") was in text_serving.cpp 43 times; render_llamacpp_text, --check
// and the charts read u64(d, "n_ctx"), str(s, "cache_type_k"), detail.at("settings") and compared p.runtime ==
// "llama.cpp"; speed.cpp replanned with llama.cpp's planner and refused another runtime by name (the --speed section is
// now the speed model of the plan's runtime, speed.h find_speed_model). json.cpp copies detail whole into --json
// (no key read).
TEST(plan_sections, reports_name_no_runtime_and_read_no_detail) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(KVFIT_SOURCE_DIR) / "src" / "report";
    const std::regex names(R"re("(llama\.cpp|vllm|sglang|ollama|mlx)")re");
    // the readers report/sections.h had (u64, i64, dbl, flag, str) and any keyed read of a plan's detail
    const std::regex reads(R"(\b(u64|i64|dbl|flag|str)\s*\(|detail\s*(\[|\.at\s*\(|\.contains\s*\(|\.value\s*\())");
    size_t files = 0;
    for (const auto & e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (!e.is_regular_file() || !(name.ends_with(".cpp") || name.ends_with(".h"))) continue;
        ++files;
        const std::string src = kvfit::test::read_text(e.path().string());
        ASSERT_FALSE(src.empty()) << name;
        std::smatch hit;
        EXPECT_FALSE(std::regex_search(src, hit, names)) << name << " names a runtime: " << hit.str();
        for (const char * header : {"kvfit/vllm.h", "kvfit/sglang.h", "kvfit/ollama.h", "kvfit/llamacpp.h",
                                    "kvfit/llamacpp_extras.h", "kvfit/mlx.h", "runtimes/"}) {
            EXPECT_EQ(src.find(header), std::string::npos) << header << " included by " << name;
        }
        EXPECT_FALSE(std::regex_search(src, hit, reads)) << name << " reads detail: " << hit.str();
    }
    EXPECT_GE(files, 10u); // text, text_serving, check, chart, json, ... were read
}

// vLLM: the budget's figures are the rank's own, each with the source of the term that made it; the activation
// peak is a kvfit estimate until --activation-memory gives it, the weights are not an estimate.
TEST(plan_sections, vllm_budget_figures_carry_source_and_estimate) {
    const kvfit::model_desc m = load("Meta-Llama-3.1-8B", "bf16");
    kvfit::flag_values f = flags_of({{"max_model_len", "131072"}});
    const kvfit::machine mc{{{"H100", 80 * GiB, 9.0}}};
    const kvfit::runtime_plan p = kvfit::find_runtime("vllm").plan(m, f, mc);
    kvfit::vllm_settings s;
    s.max_model_len = 131072;
    const kvfit::vllm_plan q = kvfit::plan_vllm(m, s, mc.gpus[0], 9.0);
    ASSERT_EQ(q.ranks.size(), 1u);
    const kvfit::vllm_rank & k = q.ranks[0];

    ASSERT_FALSE(p.sections.empty());
    EXPECT_EQ(p.sections[0].title, ""); // the lead section: the placement line under the model line
    ASSERT_EQ(p.sections[0].rows.size(), 1u);
    EXPECT_EQ(p.sections[0].rows[0].text, "placement: TP 1, PP 1, DP 1");
    EXPECT_EQ(p.nodes, 1u);

    const kvfit::plan_figure * act = find_figure(p, "Budget per GPU", "activation");
    ASSERT_NE(act, nullptr);
    ASSERT_TRUE(act->bytes.has_value());
    EXPECT_EQ(*act->bytes, k.activation_bytes);
    EXPECT_TRUE(act->estimate);
    EXPECT_EQ(act->source, "gpu_model_runner.py profile_run"); // the term's source (overhead.cpp)
    const kvfit::plan_figure * weights = find_figure(p, "Budget per GPU", "weights");
    ASSERT_NE(weights, nullptr);
    ASSERT_TRUE(weights->bytes.has_value());
    EXPECT_EQ(*weights->bytes, k.weights_bytes);
    EXPECT_FALSE(weights->estimate);
    EXPECT_FALSE(weights->source.empty());
    const kvfit::plan_figure * blocks = find_figure(p, "Pool", "num_gpu_blocks");
    ASSERT_NE(blocks, nullptr);
    ASSERT_TRUE(blocks->value.has_value());
    EXPECT_EQ(*blocks->value, double(q.num_gpu_blocks));
    EXPECT_EQ(blocks->unit, "blocks");
    EXPECT_FALSE(blocks->bytes.has_value());
    // every figure of every section names its source
    for (const auto & sec : p.sections) {
        for (const auto & r : sec.rows) {
            for (const auto & fig : r.figures) EXPECT_FALSE(fig.source.empty()) << sec.title << ": " << fig.label;
        }
    }

    // given from a log, the activation peak is no longer an estimate, and says where it came from
    f.set("activation_memory", "2GiB");
    const kvfit::runtime_plan given = kvfit::find_runtime("vllm").plan(m, f, mc);
    const kvfit::plan_figure * act2 = find_figure(given, "Budget per GPU", "activation");
    ASSERT_NE(act2, nullptr);
    ASSERT_TRUE(act2->bytes.has_value());
    EXPECT_EQ(*act2->bytes, 2 * GiB);
    EXPECT_FALSE(act2->estimate);
    EXPECT_EQ(act2->source, "--activation-memory");
}

// vLLM over nodes: the device line's node count is a typed field of the plan, not a key of detail.
TEST(plan_sections, vllm_nodes_is_typed) {
    const kvfit::model_desc m = load("Meta-Llama-3.1-8B", "bf16");
    kvfit::flag_values f = flags_of({{"max_model_len", "8192"}, {"nodes", "2"}});
    const kvfit::runtime_plan p = kvfit::find_runtime("vllm").plan(m, f, {{{"H100", 80 * GiB, 9.0}}});
    EXPECT_EQ(p.nodes, 2u);
    EXPECT_EQ(p.detail["nodes"], 2u); // detail keeps it for JSON readers
}

// SGLang: the static pool's figures are plan_sglang's; the speculative drafter's weights are a kvfit estimate.
TEST(plan_sections, sglang_pool_figures_are_the_plans) {
    const kvfit::model_desc m = load("Qwen3.5-27B", "bf16");
    const kvfit::flag_values f =
        flags_of({{"mem_fraction_static", "0.9"}, {"context_length", "32768"}, {"speculative_algorithm", "NEXTN"}});
    const kvfit::machine mc{{{"H200", 141 * GiB, 9.0}}};
    const kvfit::runtime_plan p = kvfit::find_runtime("sglang").plan(m, f, mc);
    ASSERT_EQ(p.sections.size(), 1u);
    EXPECT_TRUE(p.sections[0].title.starts_with("Static pool per rank (--mem-fraction-static 0.9, --tp 1)"));
    const kvfit::plan_figure * pool = find_figure(p, "Static pool", "kv_pool_bytes");
    ASSERT_NE(pool, nullptr);
    ASSERT_TRUE(pool->bytes.has_value());
    EXPECT_EQ(*pool->bytes, p.detail["kv_pool_bytes"].get<uint64_t>());
    const kvfit::plan_figure * draft = find_figure(p, "Static pool", "draft_weights_bytes");
    ASSERT_NE(draft, nullptr);
    EXPECT_TRUE(draft->estimate);
    ASSERT_TRUE(draft->bytes.has_value());
    EXPECT_GT(*draft->bytes, 0u);
}

// Ollama: its choices carry where num_ctx came from (the VRAM tier on a 24 GiB GPU) and the forced single slot.
TEST(plan_sections, ollama_choices_name_their_source) {
    const kvfit::model_desc m = load("Qwen3.5-9B", "q4_k_m");
    kvfit::flag_values f = flags_of({{"num_parallel", "4"}});
    const kvfit::runtime_plan p = kvfit::find_runtime("ollama").plan(m, f, {{{"RTX 4090", 24 * GiB}}});
    kvfit::ollama_settings s;
    s.num_parallel = 4;
    const kvfit::ollama_plan q = kvfit::plan_ollama(m, s, {{"RTX 4090", 24 * GiB}});
    ASSERT_EQ(p.sections.size(), 2u);
    EXPECT_EQ(p.sections[0].title, "Ollama's choices");
    const kvfit::plan_figure * ctx = find_figure(p, "Ollama's choices", "num_ctx");
    ASSERT_NE(ctx, nullptr);
    ASSERT_TRUE(ctx->value.has_value());
    EXPECT_EQ(*ctx->value, double(q.num_ctx));
    EXPECT_EQ(ctx->source, q.num_ctx_from);
    const kvfit::plan_figure * slots = find_figure(p, "Ollama's choices", "num_parallel");
    ASSERT_NE(slots, nullptr);
    ASSERT_TRUE(slots->value.has_value());
    EXPECT_EQ(*slots->value, 1.0); // forced to 1 for the qwen35 family
    EXPECT_NE(slots->source.find("sched.go"), std::string::npos);
}

// llama.cpp: the whole text report is its sections (sections_complete), built from llamacpp_plan in its folder; the
// figures are the plan's own: Qwen3.5-9B's 8 full-attention layers x 2 (K, V) x 4 KV heads x 256 x 2 B = 32,768 B per
// token in f16, 24 gated-deltanet layers x (24,576 conv + 524,288 state) x 4 B = 52,690,944 B of state per sequence
// (llama_hparams::n_embd_r / n_embd_s), n_ctx as llama.cpp pads it. The planner appends the search words after.
TEST(plan_sections, llamacpp_sections_are_the_plans_figures) {
    const kvfit::model_desc m = load("Qwen3.5-9B", "q4_k_m");
    const kvfit::runtime_info & rt = kvfit::find_runtime("llama.cpp");
    const kvfit::flag_values f = flags_of({{"ctx_size", "100000"}});
    const kvfit::machine mc{kvfit::parse_gpu_list("8GiB")};
    const kvfit::runtime_plan p = rt.plan(m, f, mc);
    EXPECT_TRUE(p.sections_complete);
    ASSERT_GE(p.sections.size(), 5u); // model, per token, table, weights, fit
    const kvfit::plan_figure * kv = nullptr, * state = nullptr, * n_ctx = nullptr;
    for (const auto & sec : p.sections) {
        for (const auto & r : sec.rows) {
            for (const auto & fig : r.figures) {
                EXPECT_FALSE(fig.source.empty()) << r.text << ": " << fig.label;
                if (fig.label == "kv_bytes_per_token") kv = &fig;
                if (fig.label == "state_bytes_per_sequence") state = &fig;
                if (fig.label == "n_ctx" && fig.unit == "tokens" && sec.title.starts_with("Fit with")) n_ctx = &fig;
            }
        }
    }
    ASSERT_NE(kv, nullptr);
    ASSERT_TRUE(kv->bytes.has_value());
    EXPECT_EQ(*kv->bytes, 32768u);
    EXPECT_EQ(*kv->bytes, p.kv_bytes_per_token.value());
    ASSERT_NE(state, nullptr);
    EXPECT_EQ(state->bytes.value_or(0), 52690944u);
    ASSERT_NE(n_ctx, nullptr);
    const kvfit::llamacpp_inputs in = kvfit::parse_llamacpp_flags(f);
    kvfit::llamacpp_settings s = in.settings;
    s.n_ctx = 100000;
    const kvfit::llamacpp_plan lp = kvfit::plan_llamacpp(m, s, in.placement, mc.gpus, in.margin_bytes);
    EXPECT_EQ(n_ctx->value.value_or(0), double(lp.ctx.n_ctx)); // padded to 256: 100,096
    EXPECT_EQ(lp.ctx.n_ctx, 100096u);
    // --check's words are the plan's (runtime_plan::words), not a key of detail read by the report
    EXPECT_EQ(p.words.setting, "n_ctx 100,096 (f16 K / f16 V, 1 sequence)");
    EXPECT_EQ(p.words.reserve, "margin");
    EXPECT_TRUE(p.words.fits_instead_by_cache_type);

    // the planner adds the search words as one more section, after the fit; without GPUs there is none
    const kvfit::plan_result r = kvfit::plan_model(rt, m, {}, f, mc);
    ASSERT_EQ(r.plan.sections.size(), p.sections.size() + 1);
    const kvfit::plan_section & search = r.plan.sections.back();
    ASSERT_FALSE(search.rows.empty());
    EXPECT_TRUE(search.rows[0].text.starts_with("  Largest n_ctx that fits the GPU memory")) << search.rows[0].text;
    EXPECT_NE(kvfit::render_text(r).find(search.rows[0].text + "\n"), std::string::npos);
    const kvfit::plan_result cpu = kvfit::plan_model(rt, m, {}, f, {});
    EXPECT_EQ(cpu.plan.sections.size(), rt.plan(m, f, {}).sections.size());
}

// mlx-lm builds its sections in its folder (src/runtimes/mlx/adapter.cpp) and is rendered like the serving runtimes:
// Qwen3-8B's 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 147,456 B per token, plan_mlx's own figure.
TEST(plan_sections, mlx_sections_are_the_plans_figures) {
    const kvfit::model_desc m = kvfit::test::catalog_model("Qwen3-8B");
    const kvfit::runtime_info & rt = kvfit::find_runtime("mlx");
    const kvfit::flag_values f = flags_of({{"context_tokens", "8192"}, {"q_bits", "4"}});
    const kvfit::machine mc{kvfit::parse_gpu_list("M4 Pro 24GB")};
    const kvfit::runtime_plan p = rt.plan(m, f, mc);
    const kvfit::mlx_plan q = kvfit::plan_mlx(m, kvfit::parse_mlx_flags(f), mc.gpus);
    EXPECT_FALSE(p.sections_complete);
    const kvfit::plan_figure * kv = find_figure(p, "Settings", "kv_bytes_per_token");
    ASSERT_NE(kv, nullptr);
    EXPECT_EQ(kv->bytes.value_or(0), 147456u);
    EXPECT_EQ(kv->bytes.value_or(0), q.kv_bytes_per_token);
    const kvfit::plan_figure * fit = find_figure(p, "Settings", "max_context_fit");
    ASSERT_NE(fit, nullptr);
    EXPECT_EQ(fit->value.value_or(0), double(q.max_context_fit));
    const kvfit::plan_figure * ws = find_figure(p, "M4 Pro 24GB", "working_set");
    ASSERT_NE(ws, nullptr);
    EXPECT_EQ(ws->bytes.value_or(0), q.devices.at(0).capacity_bytes);
    const kvfit::plan_figure * weights = find_figure(p, "M4 Pro 24GB", "weights");
    ASSERT_NE(weights, nullptr);
    EXPECT_TRUE(weights->estimate); // a config's weights at --q-bits 4: mlx_lm.convert's estimate
    size_t cache_rows = 0;
    for (const auto & sec : p.sections) {
        if (sec.title.starts_with("Caches at the peak")) cache_rows = sec.rows.size();
    }
    EXPECT_EQ(cache_rows, q.caches.size());
    const std::string text = kvfit::render_text(kvfit::plan_model(rt, m, {}, f, mc));
    EXPECT_NE(text.find("\nCaches at the peak (mlx-lm's classes, per layer)\n  36 x KVCache 8,192 cells x 4,096 B: 1.12 GiB\n"),
              std::string::npos) << text;
}

} // namespace
