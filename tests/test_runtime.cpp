// The one runtime interface (include/kvfit/runtime.h, plan.h): the registry, flag names, each runtime's plan through
// the interface against its own typed rules, and the planner's searches on a toy runtime that only the interface
// knows (a new runtime is one folder and one registry line: the planner, the reports and the JSON need nothing else).
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/llamacpp.h"
#include "kvfit/mlx.h"
#include "kvfit/plan.h"
#include "kvfit/report.h"
#include "kvfit/vllm.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>

namespace {

constexpr uint64_t GiB = 1ull << 30;

kvfit::model_desc catalog_model(const char * name, const char * format) {
    kvfit::warnings w;
    kvfit::model_desc m = kvfit::load_model(name, w);
    kvfit::apply_weight_format(m, format, true);
    return m;
}

TEST(runtime, registry_lists_every_runtime_llamacpp_first) {
    const auto & all = kvfit::runtimes();
    ASSERT_EQ(all.size(), 5u); // llama.cpp, vLLM, SGLang, Ollama, MLX
    EXPECT_EQ(all[0].name, "llama.cpp");
    for (const auto & rt : all) {
        EXPECT_EQ(&kvfit::find_runtime(rt.name), &rt);
        EXPECT_TRUE(rt.flags && rt.check_flags && rt.default_weights && rt.plan) << rt.name;
        EXPECT_FALSE(rt.context.flag.empty()) << rt.name << ": every runtime has a context setting";
        std::set<std::string> names;
        for (const auto & f : rt.flags()) {
            EXPECT_TRUE(names.insert(f.json_name()).second) << rt.name << ": " << f.name << " twice";
            EXPECT_EQ(f.name.substr(0, 2), "--") << f.name;
        }
        EXPECT_TRUE(names.count(std::string(rt.context.flag))) << rt.name << ": the context knob sets one of its flags";
    }
    EXPECT_THROW(kvfit::find_runtime("tgi"), kvfit::error);
    EXPECT_EQ((kvfit::flag_spec{"--max-model-len", "", "", kvfit::flag_type::text}).json_name(), "max_model_len");
}

TEST(runtime, flag_values_keep_text_as_given) {
    kvfit::flag_values f;
    EXPECT_FALSE(f.has("ctx_size"));
    EXPECT_EQ(f.text("ctx_size", "0"), "0");
    f.add("ctx_size", "8192");
    f.add("ctx_size", "32768");
    EXPECT_EQ(f.list("ctx_size"), (std::vector<std::string>{"8192", "32768"}));
    EXPECT_EQ(f.text("ctx_size"), "32768");
    f.set("kv_unified", "false");
    EXPECT_FALSE(f.boolean("kv_unified"));
    f.set("kv_unified", "true");
    EXPECT_TRUE(f.boolean("kv_unified"));
    f.erase("kv_unified");
    EXPECT_FALSE(f.has("kv_unified"));
}

// llama.cpp through the interface: the device buffers are plan_llamacpp's, the launch its llama-server command.
TEST(runtime, llamacpp_plan_is_plan_llamacpp) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-9B", "q4_k_m");
    kvfit::flag_values f;
    f.set("ctx_size", "65536");
    f.set("parallel", "2");
    const kvfit::machine mc{{{"GPU0", 8 * GiB}}};
    const kvfit::runtime_plan p = kvfit::find_runtime("llama.cpp").plan(m, f, mc);
    kvfit::llamacpp_settings s;
    s.n_ctx = 65536;
    s.n_seq = 2;
    s.server_outputs = true; // the flags' default: llama-server's n_outputs_max (server_output_limits)
    const kvfit::llamacpp_plan q = kvfit::plan_llamacpp(m, s, {}, mc.gpus);
    ASSERT_EQ(p.devices.size(), q.devices.size());
    for (size_t i = 0; i < q.devices.size(); ++i) {
        EXPECT_EQ(p.devices[i].bytes_of("weights"), q.devices[i].used.weights_bytes);
        EXPECT_EQ(p.devices[i].bytes_of("kv"), q.devices[i].used.kv_bytes);
        EXPECT_EQ(p.devices[i].bytes_of("state"), q.devices[i].used.state_bytes);
        EXPECT_EQ(p.devices[i].bytes_of("compute"), q.devices[i].used.compute_bytes);
        EXPECT_EQ(p.devices[i].used_bytes(), q.devices[i].used.total());
        EXPECT_EQ(p.devices[i].fits(), q.devices[i].fits());
    }
    EXPECT_EQ(p.fits, q.fits());
    EXPECT_EQ(p.context_tokens, 65536u);
    EXPECT_EQ(p.sequences, 2u);
    EXPECT_EQ(p.kv_bytes_per_token, 32768u);
    EXPECT_EQ(p.state_bytes_per_sequence, 52690944u);
    ASSERT_EQ(p.caches.size(), 1u);
    EXPECT_EQ(p.caches[0].bytes(), q.kv[0].bytes());
    EXPECT_EQ(p.launch, kvfit::llama_server_command(m, s, {}, 65536));
    EXPECT_EQ(p.detail["n_ctx_seq"], q.ctx.n_ctx_seq);
}

// vLLM through the interface: one device per GPU of the replica, its pool the rank's available KV memory.
TEST(runtime, vllm_plan_is_plan_vllm) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B", "bf16");
    kvfit::flag_values f;
    f.set("tensor_parallel_size", "2");
    f.set("max_model_len", "131072");
    f.set("max_num_seqs", "8");
    const kvfit::runtime_plan p = kvfit::find_runtime("vllm").plan(m, f, {{{"RTX 3090", 24 * GiB, 8.6}, {"RTX 3090", 24 * GiB, 8.6}}});
    kvfit::vllm_settings s;
    s.tp = 2;
    s.max_model_len = 131072;
    s.max_num_seqs = 8;
    const kvfit::vllm_plan q = kvfit::plan_vllm(m, s, {"RTX 3090", 24 * GiB}, 8.6);
    ASSERT_EQ(p.devices.size(), 2u);
    EXPECT_EQ(p.devices[0].bytes_of("weights"), q.ranks[0].weights_bytes);
    EXPECT_EQ(p.devices[0].bytes_of("kv_pool"), uint64_t(std::max<int64_t>(0, q.ranks[0].available_kv_bytes)));
    EXPECT_EQ(p.devices[0].reserved_bytes, 24 * GiB - q.ranks[0].requested_bytes);
    EXPECT_EQ(p.detail["num_gpu_blocks"], q.num_gpu_blocks);
    EXPECT_EQ(p.context_tokens, q.max_model_len);
    EXPECT_EQ(p.starts, q.fits());
    EXPECT_EQ(p.refusals, q.errors);
    EXPECT_FALSE(p.kv_bytes_per_token.has_value()); // vLLM states no whole-model figure: see detail
}

// MLX through the interface: plan_mlx's buffers, its largest context in detail, its launch line.
TEST(runtime, mlx_plan_is_plan_mlx) {
    kvfit::warnings w;
    const kvfit::model_desc m = kvfit::load_model("Qwen3-8B", w);
    kvfit::flag_values f;
    f.set("context_tokens", "32768");
    f.set("q_bits", "4");
    const auto gpus = kvfit::parse_gpu_list("M4 Max 64GB");
    const kvfit::runtime_plan p = kvfit::find_runtime("mlx").plan(m, f, {gpus});
    kvfit::mlx_settings s;
    s.context_tokens = 32768;
    s.weights.bits = 4;
    const kvfit::mlx_plan q = kvfit::plan_mlx(m, s, gpus);
    ASSERT_EQ(p.devices.size(), 1u);
    ASSERT_EQ(p.devices[0].buffers.size(), q.devices[0].buffers.size());
    for (size_t i = 0; i < q.devices[0].buffers.size(); ++i) {
        EXPECT_EQ(p.devices[0].buffers[i].name, q.devices[0].buffers[i].name);
        EXPECT_EQ(p.devices[0].buffers[i].bytes, q.devices[0].buffers[i].bytes);
    }
    EXPECT_EQ(p.devices[0].capacity_bytes, q.devices[0].capacity_bytes); // the working set
    EXPECT_EQ(p.fits, q.fits);
    EXPECT_EQ(p.kv_bytes_per_token, q.kv_bytes_per_token);
    EXPECT_EQ(p.detail["max_context_fit"], q.max_context_fit);
    EXPECT_GT(q.max_context_fit, 32768u);
    EXPECT_EQ(p.launch, q.launch);
    EXPECT_THROW(kvfit::find_runtime("mlx").check_flags([] { kvfit::flag_values g; g.set("mlx_command", "serve"); return g; }()),
                 kvfit::error);
}

// A runtime that only the interface knows: 1,000 B of weights and 10 B per token of context on each GPU.
kvfit::runtime_plan toy_plan(const kvfit::model_desc &, const kvfit::flag_values & f, const kvfit::machine & mc) {
    kvfit::runtime_plan p;
    p.runtime = "toy";
    p.rules = "toy rules";
    p.context_tokens = kvfit::parse_flag_count("--ctx", f.text("ctx", "1000"), 1, 1u << 20);
    p.sequences = 1;
    for (const auto & g : mc.gpus) {
        p.devices.push_back({g.name, false, g.memory_bytes, 0, {{"weights", 1000, false, ""}, {"kv", 10 * p.context_tokens, false, ""}}, 1});
    }
    p.fits = std::all_of(p.devices.begin(), p.devices.end(), [](const kvfit::device_plan & d) { return d.fits(); });
    p.launch = "toy --ctx " + std::to_string(p.context_tokens);
    return p;
}

TEST(runtime, planner_searches_any_runtime_through_its_knobs) {
    static const std::vector<kvfit::flag_spec> flags = {{"--ctx", "", "context", kvfit::flag_type::count}};
    kvfit::runtime_info toy;
    toy.name = toy.display = "toy";
    toy.flags = [] () -> const std::vector<kvfit::flag_spec> & { return flags; };
    toy.check_flags = [](const kvfit::flag_values &) {};
    toy.default_weights = [](kvfit::model_desc &, std::vector<std::string> &) {};
    toy.plan = toy_plan;
    toy.context = {"context", "ctx", "--ctx", false,
                   [](const kvfit::model_desc &, const kvfit::flag_values &) { return kvfit::knob_range{100, 100000, 100}; }, {}};
    toy.knobs = {toy.context};
    kvfit::flag_values f;
    f.set("ctx", "10000");
    const kvfit::plan_result r = kvfit::plan_model(toy, catalog_model("Qwen3.5-9B", "q4_k_m"), {"a source warning"}, f,
                                                   {{{"GPU0", 60000}}});
    EXPECT_FALSE(r.plan.fits); // 1,000 + 100,000 B on 60,000 B
    ASSERT_EQ(r.plan.alternatives.size(), 1u);
    EXPECT_EQ(r.plan.alternatives[0].value, 5900u); // 1,000 + 10 x 5,900 = 60,000
    EXPECT_EQ(r.plan.alternatives[0].flags, "--ctx 5900");
    EXPECT_EQ(r.plan.launch, "toy --ctx 5900");
    EXPECT_EQ(r.plan.warnings, std::vector<std::string>{"a source warning"});
    EXPECT_EQ(kvfit::largest_context(toy, r.model, f, r.target), 5900u);
    const auto j = nlohmann::json::parse(kvfit::render_json(r));
    EXPECT_EQ(j["schema_version"], 2);
    EXPECT_EQ(j["runtime"], "toy");
    EXPECT_EQ(j["totals"]["kv_bytes"], 100000);
    EXPECT_EQ(j["devices"][0]["free_bytes"], 60000 - 101000);
    EXPECT_NE(kvfit::render_text(r).find("What would fit instead (the settings changed):\n  --ctx 5900\n"), std::string::npos)
        << kvfit::render_text(r);
    EXPECT_NE(kvfit::render_check(r).find("GPU0: the KV cache (97.66 KiB) overflows it"), std::string::npos)
        << kvfit::render_check(r);
}

TEST(runtime, http_bodies_take_the_selected_runtimes_flags) {
    const auto q = kvfit::plan_request_from_json(nlohmann::json::parse(
        R"({"runtime": "vllm", "model": "Qwen3.5-27B", "gpu": "2xH100", "tensor_parallel_size": 2,
            "enable_prefix_caching": true, "max_model_len": "65536"})"));
    EXPECT_EQ(q.runtime, "vllm");
    EXPECT_EQ(q.flags.text("tensor_parallel_size"), "2");
    EXPECT_TRUE(q.flags.boolean("enable_prefix_caching"));
    EXPECT_EQ(q.flags.text("max_model_len"), "65536");
    const auto message = [](const char * body) {
        try {
            kvfit::plan_request_from_json(nlohmann::json::parse(body));
        } catch (const kvfit::error & e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message(R"({"max_model_len": 8192})"),
              "request: field 'max_model_len' is a vLLM flag, not one of llama.cpp's (set \"runtime\": \"vllm\")");
    EXPECT_EQ(message(R"({"runtime": "vllm", "ctx_size": 8192})"),
              "request: field 'ctx_size' is a llama.cpp flag, not one of vLLM's (set \"runtime\": \"llama.cpp\")");
    // a blank "model" is refused, not planned as the default model (omitting the field plans the default)
    EXPECT_EQ(message(R"({"model": ""})"), "request: field 'model' is empty: name a catalog model (GET /v1/models) or "
                                           "omit the field for the default");
    EXPECT_EQ(kvfit::plan_request_from_json(nlohmann::json::parse(R"({"gpu": "24GiB"})")).model, "");
    EXPECT_EQ(message(R"({"runtime": "tgi"})"), "--runtime 'tgi': expected one of llama.cpp, vllm, sglang, ollama, mlx");
    EXPECT_EQ(message(R"({"runtime": "ollama", "nope": 1})").rfind("request: unknown field 'nope' (known: model, runtime, gpu, "
                                                                    "weights, weights_size, strict, num_ctx, ", 0), 0u);
}

} // namespace

// A GGUF read from the Hub is launched as llama.cpp spells it: -hf org/name[:QUANT], or -hff for a file name; a
// revision is dropped (-hf takes none); a config.json repository is not a GGUF and keeps -m <name>.gguf.
TEST(runtime, llama_server_command_spells_hub_ggufs_as_llamacpp) {
    kvfit::model_desc m = catalog_model("Qwen3.5-9B", "q4_k_m");
    kvfit::llamacpp_settings s;
    m.weights.format = "gguf";
    m.source = "hf:unsloth/Qwen3.5-9B-GGUF:Q4_K_M";
    EXPECT_TRUE(kvfit::llama_server_command(m, s, {}, 8192).starts_with("llama-server -hf unsloth/Qwen3.5-9B-GGUF:Q4_K_M -c 8192"));
    m.source = "hf:unsloth/Qwen3.5-9B-GGUF@main:Qwen3.5-9B-Q8_0.gguf";
    EXPECT_TRUE(kvfit::llama_server_command(m, s, {}, 8192).starts_with("llama-server -hf unsloth/Qwen3.5-9B-GGUF -hff Qwen3.5-9B-Q8_0.gguf -c 8192"));
    m.weights.format = "bf16";
    m.source = "hf:Qwen/Qwen3.5-9B";
    EXPECT_TRUE(kvfit::llama_server_command(m, s, {}, 8192).starts_with("llama-server -m " + m.name + ".gguf"));
}
