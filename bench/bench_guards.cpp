// Bounded work on outside input (issue 15): `kvfit explain` over a 32 MB llama-server log, and planning with
// --speed on deep configs (the parser's limit is max_n_layer = 4096 layers). bench/run.sh runs it; the figures
// before and after the change are in docs/reliability.md.
// Before: explain 11 s on a 32 MB log (std::regex on every line), --speed on 4096 layers 28 min 49 s (one plan per
// -ngl value, each re-deriving model-wide widths per layer: cubic). Targets: explain 20x faster than before
// (a regex pass over the same bytes takes 0.5 s), --speed linear in the layer count.
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/plan.h"
#include "kvfit/report.h"
#include "kvfit/sources.h"
#include "kvfit/speed.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <fstream>
#include <regex>

namespace {

const std::string k_log = std::string(KVFIT_SOURCE_DIR) + "/tests/data/logs/qwen35-9b_c4096_np2.log";

// A real load log followed by llama-server request lines until the text reaches 32 MB.
const std::string & long_log() {
    static const std::string text = [] {
        std::ifstream in(k_log, std::ios::binary);
        std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (uint64_t task = 0; s.size() < (32u << 20); ++task) {
            s += fmt::format("slot launch_slot_: id  0 | task {} | processing task\n"
                             "slot update_slots: id  0 | task {} | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 37\n"
                             "slot update_slots: id  0 | task {} | prompt done, n_past = 37, n_tokens = 37\n"
                             "prompt eval time =      12.34 ms /    37 tokens (    0.33 ms per token,  2998.38 tokens per second)\n"
                             "       eval time =     456.78 ms /    64 tokens (    7.14 ms per token,   140.11 tokens per second)\n"
                             "srv  update_slots: all slots are idle\n", task, task, task);
        }
        return s;
    }();
    return text;
}

const kvfit::model_desc & qwen35() {
    static const kvfit::model_desc m = [] {
        kvfit::warnings warn;
        return kvfit::load_model(std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/qwen35-9b_v512.gguf", warn);
    }();
    return m;
}

void explain_32mb_log(benchmark::State & state) {
    const std::string & text = long_log();
    for (auto _ : state) {
        const auto log = kvfit::parse_llamacpp_log(text);
        const auto e = kvfit::explain_log(log, qwen35());
        benchmark::DoNotOptimize(e.rows.size());
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}
BENCHMARK(explain_32mb_log)->Unit(benchmark::kMillisecond);

// The yardstick of the issue: one std::regex_search per line of the same 32 MB.
void regex_pass_32mb(benchmark::State & state) {
    const std::string & text = long_log();
    const std::regex rx(R"(compute buffer size =\s+([0-9.]+) MiB)");
    for (auto _ : state) {
        size_t hits = 0;
        for (size_t start = 0; start < text.size();) {
            const size_t end = std::min(text.find('\n', start), text.size());
            hits += std::regex_search(text.begin() + long(start), text.begin() + long(end), rx);
            start = end + 1;
        }
        benchmark::DoNotOptimize(hits);
    }
}
BENCHMARK(regex_pass_32mb)->Unit(benchmark::kMillisecond);

// A llama-shaped config with n layers, as the CLI would read it.
kvfit::model_desc deep_model(int64_t n_layer) {
    const std::string cfg = fmt::format(R"({{"model_type": "llama", "hidden_size": 256, "num_hidden_layers": {},
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 512,
        "max_position_embeddings": 4096}})", n_layer);
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::model_from_hf_config(cfg, "deep/config.json", warn);
    kvfit::apply_weight_format(m, "q4_k_m", true);
    return m;
}

// `kvfit deep/config.json --gpu 2GiB -c 4096 --speed`: the report (its searches) and the spill cliff.
void speed_section(benchmark::State & state) {
    const kvfit::model_desc m = deep_model(state.range(0));
    kvfit::plan_request q;
    q.gpu = "2GiB";
    q.flags.set("ctx_size", "4096");
    for (auto _ : state) {
        const kvfit::plan_result r = kvfit::make_plan(q, [&](kvfit::warnings &) { return m; });
        const std::string text = kvfit::render_speed_section(r, kvfit::speed_settings{});
        benchmark::DoNotOptimize(text.size());
    }
    state.SetComplexityN(state.range(0));
}
BENCHMARK(speed_section)->Unit(benchmark::kMillisecond)->RangeMultiplier(2)->Range(256, 4096)->Complexity();

// One plan: placing every layer's weights, KV cache and state.
void plan_one(benchmark::State & state) {
    const kvfit::model_desc m = deep_model(state.range(0));
    const std::vector<kvfit::device_spec> gpus{{"GPU0", 2ull << 30}};
    kvfit::llamacpp_settings s;
    s.n_ctx = 4096;
    for (auto _ : state) {
        const auto plan = kvfit::plan_llamacpp(m, s, {}, gpus, kvfit::default_margin_bytes);
        benchmark::DoNotOptimize(plan.total.kv_bytes);
    }
    state.SetComplexityN(state.range(0));
}
BENCHMARK(plan_one)->Unit(benchmark::kMicrosecond)->RangeMultiplier(2)->Range(256, 4096)->Complexity();

} // namespace
