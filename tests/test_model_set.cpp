// Sets of models sharing one machine (include/kvfit/model_set.h, issue 28): for every runtime, two models that fit
// together and two that fit alone but not together, with the joint alternatives planned again. Models are the
// catalog's (../shared/configs), GPUs the GPU table's.
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/model_set.h"
#include "kvfit/server.h"
#include "kvfit/sources.h"
#include "kvfit/units.h"
#include "support/files.h"
#include "support/run_cli.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>
#include <nlohmann/json.hpp>

namespace {

using kvfit::test::run_kvfit;

kvfit::plan_request request(const std::string & model, const std::string & runtime, const std::string & gpu,
                            const std::vector<std::pair<std::string, std::string>> & flags) {
    kvfit::plan_request q;
    q.model = model;
    q.runtime = runtime;
    q.gpu = gpu;
    for (const auto & [k, v] : flags) q.flags.set(k, v);
    return q;
}

kvfit::model_desc load(const std::string & spec, kvfit::warnings & w) { return kvfit::load_model(spec, w); }

kvfit::set_result plan_set(const std::vector<kvfit::plan_request> & members, uint32_t max_loaded = 0) {
    kvfit::set_request q;
    q.members = members;
    q.max_loaded = max_loaded;
    return kvfit::plan_set(q, [&](size_t i, kvfit::warnings & w) { return load(members[i].model, w); });
}

// One model alone, planned the one way the CLI does (make_plan); `gpus` replaces --gpu's devices when given.
kvfit::plan_result plan_alone(const kvfit::plan_request & q, const std::vector<kvfit::device_spec> & gpus = {}) {
    kvfit::gpu_parser parse;
    if (!gpus.empty()) parse = [&](const std::string &) { return gpus; };
    return kvfit::make_plan(q, [&](kvfit::warnings & w) { return load(q.model, w); }, parse);
}

// Every GPU's sum is the sum of the member plans' bytes there, and the plans' own devices say the same.
void expect_sums(const kvfit::set_result & s) {
    for (size_t g = 0; g < s.devices.size(); ++g) {
        uint64_t sum = 0;
        for (size_t i = 0; i < s.plans.size(); ++i) {
            uint64_t on_g = 0;
            size_t k = 0;
            for (const auto & d : s.plans[i].plan.devices) {
                if (!d.is_host && k++ == g) on_g = d.used_bytes();
            }
            EXPECT_EQ(s.devices[g].member_bytes[i], on_g) << "model " << i << " on GPU " << g;
            sum += on_g;
        }
        EXPECT_EQ(s.devices[g].used_bytes, sum);
    }
}

// Every model fits alone on the whole machine, the set does not fit together, and the sums hold.
void expect_alone_not_together(const kvfit::set_result & s) {
    EXPECT_FALSE(s.fits);
    for (size_t i = 0; i < s.fits_alone.size(); ++i) EXPECT_TRUE(s.fits_alone[i]) << "model " << i;
    expect_sums(s);
}

// llama.cpp: each llama-server loads into what the ones before it left. Two 8B models at -c 8192 on an RTX 4090.
TEST(model_set, llamacpp_two_fit_together_each_on_what_is_left) {
    const auto a = request("Qwen3-8B", "llama.cpp", "RTX 4090", {{"ctx_size", "8192"}});
    const auto b = request("Meta-Llama-3.1-8B", "llama.cpp", "RTX 4090", {{"ctx_size", "8192"}});
    const kvfit::set_result s = plan_set({a, b});
    ASSERT_EQ(s.devices.size(), 1u);
    EXPECT_TRUE(s.fits);
    EXPECT_TRUE(s.refusals.empty());
    expect_sums(s);
    const kvfit::gpu_info * g = kvfit::find_gpu("RTX 4090");
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(s.devices[0].capacity_bytes, g->memory_bytes);
    EXPECT_EQ(s.devices[0].reserved_bytes, 1ull << 30); // llama.cpp's --fit target, kept once by the last started
    // the first is the model alone; the second is the model alone on the GPU less what the first holds
    const kvfit::plan_result alone_a = plan_alone(a);
    EXPECT_EQ(s.devices[0].member_bytes[0], alone_a.plan.devices[0].used_bytes());
    std::vector<kvfit::device_spec> left = alone_a.target.gpus;
    left[0].memory_bytes -= alone_a.plan.devices[0].used_bytes();
    const kvfit::plan_result beside = plan_alone(b, left);
    EXPECT_EQ(s.devices[0].member_bytes[1], beside.plan.devices[0].used_bytes());
    EXPECT_GT(s.devices[0].member_bytes[0], 5ull << 30); // q4_k_m 8B weights + 8,192 tokens of KV: over 5 GiB each
    EXPECT_GT(s.devices[0].member_bytes[1], 5ull << 30);
    const auto cli = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu 'RTX 4090' -c 8192");
    EXPECT_EQ(cli.status, 0) << cli.err;
    EXPECT_NE(cli.out.find("Verdict: the 2 models fit together"), std::string::npos) << cli.out;
}

// Two that fit a 16 GiB card alone at -c 40960 (about 10 GiB each) but not together: exit 3, and the largest equal
// context found is the largest that fits when planned again (one step more does not).
TEST(model_set, llamacpp_fit_alone_not_together_equal_context) {
    auto a = request("Qwen3-8B", "llama.cpp", "16GiB", {{"ctx_size", "40960"}});
    auto b = request("Meta-Llama-3.1-8B", "llama.cpp", "16GiB", {{"ctx_size", "40960"}});
    const kvfit::set_result s = plan_set({a, b});
    expect_alone_not_together(s);
    EXPECT_FALSE(s.devices[0].fits());
    ASSERT_EQ(s.alternatives.size(), 1u);
    const kvfit::set_alternative & alt = s.alternatives[0];
    EXPECT_EQ(alt.kind, "equal_context");
    ASSERT_EQ(alt.values.size(), 2u);
    const uint64_t c = alt.values[0];
    EXPECT_EQ(alt.values[1], c);
    EXPECT_EQ(alt.flags[0], "-c " + std::to_string(c));
    EXPECT_LT(c, 40960u);
    a.flags.set("ctx_size", std::to_string(c));
    b.flags.set("ctx_size", std::to_string(c));
    EXPECT_TRUE(plan_set({a, b}).fits);
    a.flags.set("ctx_size", std::to_string(c + 256));
    b.flags.set("ctx_size", std::to_string(c + 256));
    EXPECT_FALSE(plan_set({a, b}).fits);
    const auto cli = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu 16GiB -c 40960");
    EXPECT_EQ(cli.status, 3) << cli.err;
    EXPECT_NE(cli.out.find("Fits together: the largest equal context: Qwen3-8B -c " + std::to_string(c)), std::string::npos)
        << cli.out;
    EXPECT_EQ(run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu 16GiB -c " + std::to_string(c)).status, 0);
}

// vLLM: each instance's budget is its --gpu-memory-utilization x the total; at the default both ask for most of an
// H100, so the second refuses to start. The split found fits when planned again; budgets summed, no reduction.
TEST(model_set, vllm_budgets_add_up_and_the_split_fits) {
    auto a = request("Qwen3-8B", "vllm", "H100", {{"max_model_len", "32768"}});
    auto b = request("Meta-Llama-3.1-8B", "vllm", "H100", {{"max_model_len", "32768"}});
    const kvfit::set_result s = plan_set({a, b});
    expect_alone_not_together(s);
    // each instance is planned on the whole GPU (its budget is a fraction of the total, not of what is free)
    EXPECT_EQ(s.devices[0].member_bytes[1], plan_alone(b).plan.devices[0].used_bytes());
    EXPECT_EQ(s.devices[0].reserved_bytes, 0u);
    ASSERT_FALSE(s.refusals.empty());
    EXPECT_NE(s.refusals[0].find("model 2 (Meta-Llama-3.1-8B): vLLM refuses to start it"), std::string::npos) << s.refusals[0];
    const kvfit::set_alternative * split = nullptr;
    for (const auto & x : s.alternatives) {
        if (x.kind == "utilization_split") split = &x;
    }
    ASSERT_NE(split, nullptr);
    ASSERT_EQ(split->values.size(), 2u);
    EXPECT_LE(split->values[0] + split->values[1], 100u);
    const auto hundredths = [](uint64_t p) { return fmt::format("{}.{:02}", p / 100, p % 100); };
    EXPECT_EQ(split->flags[0], "--gpu-memory-utilization " + hundredths(split->values[0]));
    a.flags.set("gpu_memory_utilization", hundredths(split->values[0]));
    b.flags.set("gpu_memory_utilization", hundredths(split->values[1]));
    const kvfit::set_result again = plan_set({a, b});
    EXPECT_TRUE(again.fits);
    expect_sums(again);
    const auto cli = run_kvfit("Qwen3-8B@--gpu-memory-utilization=" + hundredths(split->values[0]) +
                               " Meta-Llama-3.1-8B@--gpu-memory-utilization=" + hundredths(split->values[1]) +
                               " --runtime vllm --gpu H100 --max-model-len 32768 --json");
    EXPECT_EQ(cli.status, 0) << cli.err;
    const auto j = nlohmann::json::parse(cli.out);
    EXPECT_TRUE(j["set"].get<bool>());
    EXPECT_EQ(j["devices"][0]["used_bytes"].get<uint64_t>(), again.devices[0].used_bytes);
    EXPECT_EQ(j["plans"].size(), 2u);
    EXPECT_EQ(j["devices"][0]["member_bytes"][1].get<uint64_t>(), j["plans"][1]["devices"][0]["used_bytes"].get<uint64_t>());
    EXPECT_EQ(run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --runtime vllm --gpu H100 --max-model-len 32768").status, 3);
}

// Two GPUs: two vLLM instances each planned on both GPUs do not fit together (each budgets 0.9 of every GPU); shown one
// GPU each (CUDA_VISIBLE_DEVICES), each fits alone on its own: the gpu_assignment alternative, checked by planning
// each model on that one GPU. Ollama places runners itself (server/sched.go): no assignment is offered.
TEST(model_set, one_gpu_per_model_when_the_set_spans_several) {
    auto a = request("Qwen3-8B", "vllm", "L40S,L40S", {{"max_model_len", "32768"}});
    auto b = request("Meta-Llama-3.1-8B", "vllm", "L40S,L40S", {{"max_model_len", "32768"}});
    const kvfit::set_result s = plan_set({a, b});
    EXPECT_FALSE(s.fits);
    const kvfit::set_alternative * pick = nullptr;
    for (const auto & x : s.alternatives) {
        if (x.kind == "gpu_assignment") pick = &x;
    }
    ASSERT_NE(pick, nullptr);
    ASSERT_EQ(pick->values, (std::vector<uint64_t>{0, 1}));
    EXPECT_EQ(pick->flags[1], "CUDA_VISIBLE_DEVICES=1 (GPU1, L40S)");
    // each alone on its one GPU fits: the alternative's own check, redone
    const std::vector<kvfit::device_spec> one = {plan_alone(a).target.gpus[0]};
    EXPECT_TRUE(plan_alone(a, one).plan.fits);
    EXPECT_TRUE(plan_alone(b, one).plan.fits);
    // the text names it
    const auto cli = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --runtime vllm --gpu L40S,L40S --max-model-len 32768");
    EXPECT_EQ(cli.status, 3);
    EXPECT_NE(cli.out.find("Fits together: one GPU per model, each process shown only its own: Qwen3-8B "
                           "CUDA_VISIBLE_DEVICES=0 (GPU0, L40S); Meta-Llama-3.1-8B CUDA_VISIBLE_DEVICES=1 (GPU1, L40S)"),
              std::string::npos) << cli.out;
    // a model that does not fit one GPU alone: no assignment (8B at 131,072 on 4090s under llama.cpp)
    auto c = request("Qwen3-8B", "llama.cpp", "RTX 4090,RTX 4090", {{"ctx_size", "131072"}});
    auto d = request("Meta-Llama-3.1-8B", "llama.cpp", "RTX 4090,RTX 4090", {{"ctx_size", "131072"}});
    for (const auto & x : plan_set({c, d}).alternatives) EXPECT_NE(x.kind, "gpu_assignment");
    // unlike GPUs: the runtime numbers its vendor's GPUs only (HIP the AMD ones), CUDA in PCI bus order when asked
    auto g = request("Qwen3-8B", "vllm", "RTX 4090,L40S", {{"max_model_len", "16384"}});
    auto h = request("Meta-Llama-3.1-8B", "vllm", "RTX 4090,L40S", {{"max_model_len", "16384"}});
    for (const auto & x : plan_set({g, h}).alternatives) {
        if (x.kind != "gpu_assignment") continue;
        for (const auto & f : x.flags) EXPECT_EQ(f.rfind("CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=", 0), 0u) << f;
    }
    auto e = request("Qwen3-8B", "ollama", "L4,L4", {{"num_ctx", "131072"}});
    auto f = request("Meta-Llama-3.1-8B", "ollama", "L4,L4", {{"num_ctx", "131072"}});
    for (const auto & x : plan_set({e, f}).alternatives) EXPECT_NE(x.kind, "gpu_assignment");
}

// SGLang: --mem-fraction-static is of what is free when a server starts: at SGLang's default the first takes most of
// the GPU and the second's weights no longer fit; the fractions found fit when planned again.
TEST(model_set, sglang_fraction_of_what_is_free) {
    auto a = request("Qwen3-8B", "sglang", "H100", {{"context_length", "32768"}});
    auto b = request("Meta-Llama-3.1-8B", "sglang", "H100", {{"context_length", "32768"}});
    const kvfit::set_result s = plan_set({a, b});
    EXPECT_FALSE(s.fits);
    EXPECT_TRUE(s.fits_alone[1]);
    EXPECT_FALSE(s.plans[1].plan.fits);
    expect_sums(s);
    ASSERT_EQ(s.alternatives.size(), 1u);
    EXPECT_EQ(s.alternatives[0].kind, "fraction_split");
    const auto & u = s.alternatives[0].values;
    ASSERT_EQ(u.size(), 2u);
    a.flags.set("mem_fraction_static", fmt::format("0.{:02}", u[0]));
    b.flags.set("mem_fraction_static", fmt::format("0.{:02}", u[1]));
    const kvfit::set_result again = plan_set({a, b});
    EXPECT_TRUE(again.fits);
    expect_sums(again);
    // the second server's pool is its fraction of what the first left: its capacity seen is the GPU less the first
    const kvfit::plan_result first = plan_alone(a);
    std::vector<kvfit::device_spec> left = first.target.gpus;
    left[0].memory_bytes -= first.plan.devices[0].used_bytes();
    EXPECT_EQ(again.devices[0].member_bytes[1], plan_alone(b, left).plan.devices[0].used_bytes());
}

// SGLang's default --mem-fraction-static is a function of the GPU's total (nvidia-smi memory.total,
// server_args._handle_gpu_memory_settings), the same for the second server as for the first: with a GPU given as a
// size the set computed it from what the first server left (-0.013 on 24 GiB: "expected a number greater than 0 and below 1", a refusal naming a
// fraction no one gave). Now the second server gets the first's default and does not fit in what is left.
TEST(model_set, sglang_default_fraction_is_of_the_gpus_total) {
    auto a = request("Qwen3-8B", "sglang", "24GiB", {});
    auto b = request("Meta-Llama-3.1-8B", "sglang", "24GiB", {});
    const kvfit::set_result s = plan_set({a, b});
    EXPECT_FALSE(s.fits);
    ASSERT_EQ(s.plans.size(), 2u);
    const auto fraction = [](const kvfit::plan_result & r) { return r.plan.detail.at("settings").at("mem_fraction_static").get<double>(); };
    EXPECT_EQ(fraction(s.plans[1]), fraction(s.plans[0]));
    EXPECT_GT(fraction(s.plans[1]), 0.5);
    for (const auto & e : s.plans[1].plan.refusals) EXPECT_EQ(e.find("expected a number greater than 0 and below 1"), std::string::npos) << e;
    ASSERT_FALSE(s.plans[1].plan.refusals.empty());
    EXPECT_NE(s.plans[1].plan.refusals[0].find("Not enough memory"), std::string::npos) << s.plans[1].plan.refusals[0];
}

// Ollama: a runner per model, each loaded on what is free; at most OLLAMA_MAX_LOADED_MODELS (3 x GPUs by default).
TEST(model_set, ollama_loaded_models_and_free_vram) {
    const auto a = request("Qwen3-8B", "ollama", "12GiB", {});
    const auto b = request("Meta-Llama-3.1-8B", "ollama", "12GiB", {});
    const kvfit::set_result s = plan_set({a, b});
    EXPECT_TRUE(s.fits);
    expect_sums(s);
    // two that fit alone but not together: the second does not fit what the first left (the scheduler would evict)
    auto a32 = a, b32 = b;
    a32.flags.set("num_ctx", "32768");
    b32.flags.set("num_ctx", "32768");
    a32.gpu = b32.gpu = "16GiB";
    const kvfit::set_result t = plan_set({a32, b32});
    expect_alone_not_together(t);
    ASSERT_FALSE(t.alternatives.empty());
    EXPECT_EQ(t.alternatives[0].kind, "equal_context");
    a32.flags.set("num_ctx", std::to_string(t.alternatives[0].values[0]));
    b32.flags.set("num_ctx", std::to_string(t.alternatives[0].values[0]));
    EXPECT_TRUE(plan_set({a32, b32}).fits);
    // four models on one GPU: past the default of 3, however much memory is left
    std::vector<kvfit::plan_request> four;
    for (const char * m : {"Qwen3-8B", "Meta-Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7b-hf"}) four.push_back(request(m, "ollama", "H100", {}));
    const kvfit::set_result f = plan_set(four);
    EXPECT_FALSE(f.fits);
    EXPECT_TRUE(f.devices[0].fits());
    ASSERT_EQ(f.refusals.size(), 1u);
    EXPECT_EQ(f.refusals[0].rfind("OLLAMA_MAX_LOADED_MODELS=3: 4 models", 0), 0u) << f.refusals[0];
    EXPECT_TRUE(f.alternatives.empty()); // no setting makes four load at once
    EXPECT_TRUE(plan_set(four, 4).fits);
    // one runner per model: the same model twice is refused (the second request would reload the first)
    EXPECT_THROW(plan_set({a, a}), kvfit::error);
    // the default num_ctx is the tier of the whole GPU, kept beside the other models (and said so)
    EXPECT_EQ(s.plans[1].plan.context_tokens, plan_alone(b).plan.context_tokens);
    const auto cli = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B Qwen2.5-7B Llama-2-7b-hf --runtime ollama --gpu H100");
    EXPECT_EQ(cli.status, 3);
    EXPECT_EQ(run_kvfit("Qwen3-8B Meta-Llama-3.1-8B Qwen2.5-7B Llama-2-7b-hf --runtime ollama --gpu H100 "
                        "--max-loaded-models 4").status, 0);
}

// MLX: one process per model; each plan's device is the Metal working set, and the plans add up within it.
TEST(model_set, mlx_plans_add_up_in_the_working_set) {
    auto a = request("Qwen3-8B", "mlx", "M2 Max 64GB", {{"context_tokens", "32768"}});
    auto b = request("Meta-Llama-3.1-8B", "mlx", "M2 Max 64GB", {{"context_tokens", "32768"}});
    const kvfit::set_result s = plan_set({a, b});
    EXPECT_TRUE(s.fits);
    expect_sums(s);
    EXPECT_EQ(s.devices[0].capacity_bytes, plan_alone(a).plan.devices[0].capacity_bytes); // the working set
    EXPECT_EQ(s.devices[0].member_bytes[1], plan_alone(b).plan.devices[0].used_bytes());
    b.flags.set("context_tokens", "131072");
    const kvfit::set_result t = plan_set({a, b});
    expect_alone_not_together(t);
    ASSERT_EQ(t.alternatives.size(), 1u);
    const uint64_t c = t.alternatives[0].values[0];
    a.flags.set("context_tokens", std::to_string(c));
    b.flags.set("context_tokens", std::to_string(c));
    EXPECT_TRUE(plan_set({a, b}).fits);
}

// POST /v1/plan with "models" is the CLI's set, byte for byte; an object's fields are that model's flags.
TEST(model_set, http_api_plans_the_same_set) {
    const nlohmann::json body = {{"runtime", "vllm"}, {"gpu", "H100"}, {"max_model_len", 32768},
                                 {"gpu_memory_utilization", "0.31"},
                                 {"models", {"Qwen3-8B", {{"model", "Meta-Llama-3.1-8B"}, {"gpu_memory_utilization", 0.29}}}}};
    const auto cli = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B@--gpu-memory-utilization=0.29 --runtime vllm --gpu H100 "
                               "--max-model-len 32768 --gpu-memory-utilization 0.31 --json");
    ASSERT_EQ(cli.status, 0) << cli.err;
    const kvfit::api_response r = kvfit::handle_plan(body.dump(), kvfit::server_options{});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, cli.out);
    EXPECT_TRUE(nlohmann::json::parse(r.body)["fits"].get<bool>());
    const auto bad = kvfit::handle_plan(R"({"gpu": "H100", "models": "Qwen3-8B"})", kvfit::server_options{});
    EXPECT_EQ(bad.status, 400);
    EXPECT_NE(bad.body.find("field 'models': expected an array"), std::string::npos) << bad.body;
    const auto one = kvfit::handle_plan(R"({"gpu": "H100", "models": ["Qwen3-8B"]})", kvfit::server_options{});
    EXPECT_EQ(one.status, 400);
    EXPECT_NE(one.body.find("a set needs at least 2 models"), std::string::npos) << one.body;
    const auto path = kvfit::handle_plan(R"({"gpu": "H100", "models": ["Qwen3-8B", "/etc/passwd"]})", kvfit::server_options{});
    EXPECT_EQ(path.status, 400); // catalog names only: the server reads no paths
}

TEST(model_set, member_settings_parse_as_the_runtime_spells_them) {
    const auto & llama = kvfit::find_runtime("llama.cpp");
    const auto [model, f] = kvfit::parse_set_member("Qwen3-8B@-c=32768,-np=2,--kv-unified", llama);
    EXPECT_EQ(model, "Qwen3-8B");
    EXPECT_EQ(f.text("ctx_size"), "32768");
    EXPECT_EQ(f.text("parallel"), "2");
    EXPECT_TRUE(f.boolean("kv_unified"));
    EXPECT_EQ(kvfit::parse_set_member("hf:org/name@main", llama).first, "hf:org/name@main");
    EXPECT_EQ(kvfit::parse_set_member("hf:org/name@main@-c=8192", llama).first, "hf:org/name@main");
    { // an existing file whose name holds "@-" is a model, not settings; its own settings still follow the last '@'
        const std::string file = (std::filesystem::temp_directory_path() / "kvfit-set@-q4.json").string();
        std::ofstream(file) << "{}";
        const auto [whole, none] = kvfit::parse_set_member(file, llama);
        EXPECT_EQ(whole, file);
        EXPECT_FALSE(none.has("ctx_size"));
        const auto [with, c] = kvfit::parse_set_member(file + "@-c=8192", llama);
        EXPECT_EQ(with, file);
        EXPECT_EQ(c.text("ctx_size"), "8192");
        std::filesystem::remove(file);
        const auto folder = std::filesystem::temp_directory_path() / "kvfit-set-d@-c=8";
        std::filesystem::create_directories(folder);
        EXPECT_EQ(kvfit::parse_set_member(folder.string() + "/", llama).first, folder.string() + "/");
        std::filesystem::remove_all(folder);
    }
    EXPECT_THROW(kvfit::parse_set_member("Qwen3-8B@--max-model-len=8192", llama), kvfit::error);
    EXPECT_THROW(kvfit::parse_set_member("Qwen3-8B@-c", llama), kvfit::error);
    EXPECT_THROW(kvfit::parse_set_member("Qwen3-8B@--kv-unified=1", llama), kvfit::error);
    // a value with commas reads as llama.cpp's (-ts 3,1); a doubled or trailing comma is refused, not skipped
    const auto [m2, ts] = kvfit::parse_set_member("Qwen3-8B@-ts=3,1,-np=2", llama);
    EXPECT_EQ(ts.list("tensor_split"), std::vector<std::string>{"3,1"});
    EXPECT_EQ(ts.text("parallel"), "2");
    for (const char * bad : {"Qwen3-8B@-c=8192,,-np=2", "Qwen3-8B@-c=8192,"}) {
        try {
            (void)kvfit::parse_set_member(bad, llama);
            ADD_FAILURE() << bad;
        } catch (const kvfit::error & e) {
            EXPECT_EQ(std::string(e.what()), std::string(bad) + ": an empty setting (two commas, or one at an end)");
        }
    }
    // an empty value of a runtime flag is refused on the command line, as --gpu '' is (it was dropped: --ram '')
    const auto ram = run_kvfit("Qwen3-8B --ram ''");
    EXPECT_EQ(ram.status, 2);
    EXPECT_EQ(ram.err, "kvfit: --ram: empty value\n");
}

TEST(model_set, bad_input_is_one_line_and_exit_2) {
    const auto no_gpu = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B");
    EXPECT_EQ(no_gpu.status, 2);
    EXPECT_EQ(no_gpu.err, "kvfit: a set needs --gpu (the GPUs the models share)\n");
    const auto flag = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B@--max-model-len=8192 --gpu H100");
    EXPECT_EQ(flag.status, 2);
    EXPECT_EQ(flag.err, "kvfit: Meta-Llama-3.1-8B@--max-model-len=8192: '--max-model-len' is not one of llama.cpp's flags\n");
    // a model of a set runs at one context: a list, or a setting given twice, is refused (it took the last silently)
    const auto list = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B -c 8192,32768 --gpu H100");
    EXPECT_EQ(list.status, 2);
    EXPECT_EQ(list.err, "kvfit: model 1 (Qwen3-8B): -c has 2 values (8192, 32768): a model of a set runs at one context; "
                        "give each model its own (MODEL@-c=N)\n");
    const auto twice = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B@-c=8192,-c=4096 --gpu H100");
    EXPECT_EQ(twice.status, 2);
    EXPECT_EQ(twice.err, "kvfit: Meta-Llama-3.1-8B@-c=8192,-c=4096: '-c' is given twice; give it once\n");
    EXPECT_EQ(run_kvfit("Qwen3-8B Meta-Llama-3.1-8B@-np=2,--parallel=4 --gpu H100").status, 2);
    const auto ollama = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B@--max-model-len=8192 --runtime ollama --gpu H100");
    EXPECT_EQ(ollama.err, "kvfit: Meta-Llama-3.1-8B@--max-model-len=8192: '--max-model-len' is not one of Ollama's flags\n");
    const auto value = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B@-c=0 --gpu H100");
    EXPECT_EQ(value.status, 2);
    EXPECT_EQ(value.err, "kvfit: model 2 (Meta-Llama-3.1-8B): -c 0: must be at least 1\n");
    EXPECT_EQ(run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --runtime vllm --gpu H100 --models-max 2").status, 2);
    EXPECT_EQ(run_kvfit("Qwen3-8B --gpu H100 --models-max 2").status, 2);
    // --strict refuses the set's own assumption (each llama-server's driver context is not modelled)
    const auto strict = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu H100 --weights q4_k_m --strict");
    EXPECT_EQ(strict.status, 2);
    EXPECT_EQ(strict.err.rfind("kvfit: strict: 1 warning refused: each of the 2 llama-server processes", 0), 0u) << strict.err;
    EXPECT_EQ(run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu H100 --check").status, 2);
    std::string many;
    for (int i = 0; i < 17; ++i) many += " Qwen3-8B";
    EXPECT_EQ(run_kvfit(many + " --gpu H100").err, "kvfit: a set of 17 models exceeds the limit 16\n");
}

// Trial defects of POST /v1/plan with "models": an item without a model, or with "", was planned as the default model
// (the CLI refuses MODEL "" with "model: empty value"); a field given twice inside an item took the last one while the
// body's own were refused; a "model" beside "models" was dropped. Each is a 400 naming the item.
TEST(model_set, http_api_refuses_items_without_a_model_and_fields_given_twice) {
    const auto error_of = [](const std::string & body) {
        const auto r = kvfit::handle_plan(body, kvfit::server_options{});
        EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
        return nlohmann::json::parse(r.body).value("error", std::string());
    };
    EXPECT_EQ(error_of(R"({"models": [{"ctx_size": 4096}, "Qwen3-8B"], "gpu": "16GiB"})"),
              "request: field 'models' item 1: names no model (a set has no default model)");
    EXPECT_EQ(error_of(R"({"models": ["Qwen3-8B", {"gguf_base64": null}], "gpu": "16GiB"})"),
              "request: field 'models' item 2: names no model (a set has no default model)");
    EXPECT_EQ(error_of(R"({"models": ["", "Qwen3-8B"], "gpu": "16GiB"})"), "request: field 'models' item 1: model: empty value");
    EXPECT_EQ(error_of(R"({"models": ["Qwen3-8B", {"model": "", "ctx_size": 4096}], "gpu": "16GiB"})"),
              "request: field 'models' item 2: model: empty value");
    EXPECT_EQ(error_of(R"({"models": [{"model": "Qwen3-8B", "ctx_size": 8192, "ctx_size": 4096}, "Meta-Llama-3.1-8B"], "gpu": "24GiB"})"),
              "request: member 'ctx_size' given twice in 'models' item 1");
    EXPECT_EQ(error_of(R"({"models": ["Meta-Llama-3.1-8B", {"model": "Qwen3-8B", "model": "Qwen3.5-9B"}], "gpu": "24GiB"})"),
              "request: member 'model' given twice in 'models' item 2");
    EXPECT_EQ(error_of(R"({"gpu": "24GiB", "gpu": "16GiB", "models": ["Qwen3-8B", "Meta-Llama-3.1-8B"]})"),
              "request: member 'gpu' given twice"); // the body's own, as before
    EXPECT_EQ(error_of(R"({"model": "Qwen3.5-9B", "models": ["Qwen3-8B", "Meta-Llama-3.1-8B"], "gpu": "24GiB"})"),
              "request: 'model' and 'models' together: put each model in 'models'");
    // an upload's name without the upload names no model either (it planned the default model)
    EXPECT_EQ(error_of(R"({"models": [{"upload_name": "mine.json"}, "Qwen3-8B"], "gpu": "24GiB"})"),
              "request: field 'upload_name' names an upload: give 'config' or 'gguf_base64' with it");
    // a config.json given inside the item (deeper than the item) keeps the config.json rule: the last one, as a file
    nlohmann::json cfg = nlohmann::json::parse(kvfit::test::read_text(std::string(KVFIT_SHARED_DIR) +
                                                                      "/configs/Qwen__Qwen3-8B.json"));
    const std::string text = cfg.dump();
    std::string twice = text;
    twice.replace(twice.find("\"max_position_embeddings\":40960"), std::string("\"max_position_embeddings\":40960").size(),
                  "\"max_position_embeddings\":8192,\"max_position_embeddings\":40960");
    const std::string ok_body = R"({"gpu": "H100", "ctx_size": 8192, "models": [{"config": )" + twice + R"(}, "Meta-Llama-3.1-8B"]})";
    const auto ok = kvfit::handle_plan(ok_body, kvfit::server_options{});
    EXPECT_EQ(ok.status, 200) << ok.body;
    // an uploaded member that fails is named as the upload it is (it said "model 1 ()")
    const std::string bad_body = R"({"gpu": "H100", "models": [{"config": {"model_type": "llama"}}, "Meta-Llama-3.1-8B"]})";
    const auto bad_upload = kvfit::handle_plan(bad_body, kvfit::server_options{});
    EXPECT_EQ(bad_upload.status, 400) << bad_upload.body;
    EXPECT_NE(bad_upload.body.find("model 1 (an uploaded file): "), std::string::npos) << bad_upload.body;
    // the same set with each item named plans, as the CLI's
    const auto named = kvfit::handle_plan(R"({"models": [{"model": "Qwen3-8B", "ctx_size": 4096}, "Meta-Llama-3.1-8B"], "gpu": "24GiB"})",
                                          kvfit::server_options{});
    const auto cli = run_kvfit("Qwen3-8B@-c=4096 Meta-Llama-3.1-8B --gpu 24GiB --json");
    EXPECT_EQ(named.status, 200) << named.body;
    EXPECT_EQ(named.body, cli.out);
}

// ---- weighted contexts (docs/sets.md "The joint solve"): each model's context is w_i x t rounded down to its
// runtime's context step, for the largest t that fits together.

// The contexts the weighted solve gives at t (tokens of weight 1): w x t rounded down to the step, as docs/sets.md says.
std::vector<uint64_t> weighted_at(const std::vector<uint32_t> & w, uint64_t t, const std::vector<uint64_t> & step) {
    std::vector<uint64_t> c;
    for (size_t i = 0; i < w.size(); ++i) c.push_back(uint64_t(w[i]) * t / 1000 / step[i] * step[i]);
    return c;
}

kvfit::set_result plan_weighted(std::vector<kvfit::plan_request> members, const std::vector<uint32_t> & weights,
                                const std::string & context_flag, const std::vector<uint64_t> & contexts = {}) {
    for (size_t i = 0; i < contexts.size(); ++i) members[i].flags.set(context_flag, std::to_string(contexts[i]));
    kvfit::set_request q;
    q.members = members;
    q.weights = weights;
    return kvfit::plan_set(q, [&](size_t i, kvfit::warnings & w) { return load(members[i].model, w); });
}

const kvfit::set_alternative * find_alternative(const kvfit::set_result & s, const std::string & kind) {
    for (const auto & a : s.alternatives) {
        if (a.kind == kind) return &a;
    }
    return nullptr;
}

// llama.cpp: two 8B models that fit a 16 GiB card alone at -c 40960 but not together, weighted 3 : 1. The second runs
// -np 2, so its -c moves in 512 (256 per stream). Re-planned at the solved contexts the set fits; at t + 1 (the next
// contexts in proportion) it does not; each context is its share of t, rounded down to its step.
TEST(model_set, weighted_contexts_llamacpp_in_proportion_and_one_step_more_does_not_fit) {
    const auto a = request("Qwen3-8B", "llama.cpp", "16GiB", {{"ctx_size", "40960"}});
    const auto b = request("Meta-Llama-3.1-8B", "llama.cpp", "16GiB", {{"ctx_size", "40960"}, {"parallel", "2"}});
    const std::vector<uint32_t> w = {3000, 1000};
    const kvfit::set_result s = plan_weighted({a, b}, w, "ctx_size");
    expect_alone_not_together(s);
    EXPECT_EQ(find_alternative(s, "equal_context"), nullptr); // weights replace the equal context
    const kvfit::set_alternative * alt = find_alternative(s, "weighted_context");
    ASSERT_NE(alt, nullptr);
    const uint64_t t = alt->per_weight;
    const std::vector<uint64_t> steps = {256, 512};
    EXPECT_EQ(alt->values, weighted_at(w, t, steps));
    EXPECT_EQ(alt->flags[0], "-c " + std::to_string(alt->values[0]));
    EXPECT_EQ(alt->values[1] % 512, 0u);
    // in proportion up to the rounding: 3 x the second's share, less than one step of each
    EXPECT_LE(alt->values[0], 3 * t);
    EXPECT_GT(alt->values[0] + 256, 3 * t);
    EXPECT_GT(alt->values[1] + 512, t);
    EXPECT_LT(alt->values[0], 40960u); // smaller than asked, and more than the equal context's share for the first
    EXPECT_GT(alt->values[0], 2 * alt->values[1]);
    EXPECT_TRUE(plan_weighted({a, b}, w, "ctx_size", alt->values).fits);
    const std::vector<uint64_t> next = weighted_at(w, t + 1, steps);
    EXPECT_NE(next, alt->values);
    EXPECT_FALSE(plan_weighted({a, b}, w, "ctx_size", next).fits);
    // each model at its solved context, re-planned as a set without weights: the same verdict
    auto a2 = a, b2 = b;
    a2.flags.set("ctx_size", std::to_string(alt->values[0]));
    b2.flags.set("ctx_size", std::to_string(alt->values[1]));
    EXPECT_TRUE(plan_set({a2, b2}).fits);
    // the CLI says it, and the solved contexts given back exit 0
    const auto cli = run_kvfit("Qwen3-8B@weight=3 Meta-Llama-3.1-8B@-np=2 --gpu 16GiB -c 40960");
    EXPECT_EQ(cli.status, 3) << cli.err;
    EXPECT_NE(cli.out.find(fmt::format("Fits together: the largest contexts in proportion 3 : 1: Qwen3-8B -c {}; "
                                       "Meta-Llama-3.1-8B -c {}", alt->values[0], alt->values[1])), std::string::npos) << cli.out;
    EXPECT_NE(cli.out.find("1. Qwen3-8B (weight 3): context 40,960 tokens"), std::string::npos) << cli.out;
    EXPECT_EQ(run_kvfit(fmt::format("Qwen3-8B@-c={} Meta-Llama-3.1-8B@-np=2,-c={} --gpu 16GiB", alt->values[0],
                                    alt->values[1])).status, 0);
    const auto j = nlohmann::json::parse(run_kvfit("Qwen3-8B@weight=3 Meta-Llama-3.1-8B@-np=2 --gpu 16GiB -c 40960 --json").out);
    EXPECT_EQ(j["weights"], nlohmann::json::parse("[3.0, 1.0]"));
    EXPECT_EQ(j["alternatives"][0]["kind"], "weighted_context");
    EXPECT_EQ(j["alternatives"][0]["per_weight"].get<uint64_t>(), t);
}

// Ollama takes any whole num_ctx (step 1): weights 1.5 : 1 on 16 GiB; fractional weights are exact thousandths.
TEST(model_set, weighted_contexts_ollama_fractional_weight) {
    const auto a = request("Qwen3-8B", "ollama", "16GiB", {{"num_ctx", "32768"}});
    const auto b = request("Meta-Llama-3.1-8B", "ollama", "16GiB", {{"num_ctx", "32768"}});
    const std::vector<uint32_t> w = {1500, 1000};
    const kvfit::set_result s = plan_weighted({a, b}, w, "num_ctx");
    expect_alone_not_together(s);
    const kvfit::set_alternative * alt = find_alternative(s, "weighted_context");
    ASSERT_NE(alt, nullptr);
    const uint64_t t = alt->per_weight;
    EXPECT_EQ(alt->values, weighted_at(w, t, {1, 1}));
    EXPECT_EQ(alt->values[1], t);
    EXPECT_EQ(alt->values[0], t * 3 / 2);
    EXPECT_EQ(alt->flags[1], "--num-ctx " + std::to_string(t));
    EXPECT_TRUE(plan_weighted({a, b}, w, "num_ctx", alt->values).fits);
    EXPECT_FALSE(plan_weighted({a, b}, w, "num_ctx", weighted_at(w, t + 1, {1, 1})).fits);
    const auto cli = run_kvfit("Qwen3-8B@weight=1.5 Meta-Llama-3.1-8B --runtime ollama --gpu 16GiB --num-ctx 32768");
    EXPECT_EQ(cli.status, 3);
    EXPECT_NE(cli.out.find("in proportion 1.5 : 1:"), std::string::npos) << cli.out;
}

// A set that fits as given still gets the weighted solve (it is what was asked): the largest contexts in proportion
// 1 : 2 on an RTX 4090, larger than the -c 8192 given, checked as above; exit 0. At 2 : 1 the first model reaches its
// training context (Qwen3-8B: 40,960) with memory to spare: the search stops there and says so (capped).
TEST(model_set, weighted_contexts_when_the_set_fits_as_given) {
    const auto a = request("Qwen3-8B", "llama.cpp", "RTX 4090", {{"ctx_size", "8192"}});
    const auto b = request("Meta-Llama-3.1-8B", "llama.cpp", "RTX 4090", {{"ctx_size", "8192"}});
    const std::vector<uint32_t> w = {1000, 2000};
    const kvfit::set_result s = plan_weighted({a, b}, w, "ctx_size");
    EXPECT_TRUE(s.fits);
    const kvfit::set_alternative * alt = find_alternative(s, "weighted_context");
    ASSERT_NE(alt, nullptr);
    EXPECT_FALSE(alt->capped);
    EXPECT_GT(alt->values[0], 8192u);
    EXPECT_EQ(alt->values, weighted_at(w, alt->per_weight, {256, 256}));
    EXPECT_TRUE(plan_weighted({a, b}, w, "ctx_size", alt->values).fits);
    EXPECT_FALSE(plan_weighted({a, b}, w, "ctx_size", weighted_at(w, alt->per_weight + 1, {256, 256})).fits);
    const auto cli = run_kvfit("Qwen3-8B@weight=1 Meta-Llama-3.1-8B@weight=2 --gpu 'RTX 4090' -c 8192");
    EXPECT_EQ(cli.status, 0) << cli.err;
    EXPECT_NE(cli.out.find(fmt::format("Largest contexts in proportion 1 : 2 that fit together: Qwen3-8B -c {}; "
                                       "Meta-Llama-3.1-8B -c {}\n", alt->values[0], alt->values[1])), std::string::npos) << cli.out;
    // 2 : 1: Qwen3-8B at its training context, 40,960, and the set still fits there
    const kvfit::set_result c = plan_weighted({a, b}, {2000, 1000}, "ctx_size");
    const kvfit::set_alternative * top = find_alternative(c, "weighted_context");
    ASSERT_NE(top, nullptr);
    EXPECT_TRUE(top->capped);
    EXPECT_EQ(top->values, (std::vector<uint64_t>{40960, 20480}));
    EXPECT_TRUE(plan_weighted({a, b}, {2000, 1000}, "ctx_size", top->values).fits);
    EXPECT_NE(run_kvfit("Qwen3-8B@weight=2 Meta-Llama-3.1-8B --gpu 'RTX 4090' -c 8192").out.find(
                  "Qwen3-8B -c 40960; Meta-Llama-3.1-8B -c 20480 (the search stops at a model's training context: more may fit)"),
              std::string::npos);
}

TEST(model_set, weights_parse_exactly_and_bad_ones_are_refused) {
    EXPECT_EQ(kvfit::parse_set_weight("2"), 2000u);
    EXPECT_EQ(kvfit::parse_set_weight("1.5"), 1500u);
    EXPECT_EQ(kvfit::parse_set_weight("0.001"), 1u);
    EXPECT_EQ(kvfit::parse_set_weight("1000"), 1000000u);
    EXPECT_EQ(kvfit::set_weight_text(1500), "1.5");
    EXPECT_EQ(kvfit::set_weight_text(250), "0.25");
    EXPECT_EQ(kvfit::set_weight_text(3000), "3");
    for (const char * bad : {"0", "0.000", "-1", "+1", "abc", "1e3", "1.2345", "1000.001", "1001", "nan", "inf", ".5", "5.", " 2", ""}) {
        EXPECT_THROW(kvfit::parse_set_weight(bad), kvfit::error) << bad;
    }
    const auto & llama = kvfit::find_runtime("llama.cpp");
    uint32_t w = 0;
    const auto [model, f] = kvfit::parse_set_member("Qwen3-8B@weight=2,-np=2", llama, &w);
    EXPECT_EQ(model, "Qwen3-8B");
    EXPECT_EQ(w, 2000u);
    EXPECT_EQ(f.text("parallel"), "2");
    EXPECT_EQ(kvfit::parse_set_member("hf:org/name@main@weight=0.5", llama, &w).first, "hf:org/name@main");
    EXPECT_EQ(w, 500u);
    EXPECT_THROW(kvfit::parse_set_member("Qwen3-8B@weight=2", llama), kvfit::error); // no set to weight
    // the CLI: one line, exit 2
    const auto err = [](const std::string & args) {
        const auto r = run_kvfit(args);
        EXPECT_EQ(r.status, 2) << args;
        return r.err;
    };
    EXPECT_EQ(err("Qwen3-8B@weight=0 Meta-Llama-3.1-8B --gpu 16GiB"),
              "kvfit: Qwen3-8B@weight=0: weight '0': expected a number from 0.001 to 1000 (at most 3 decimals)\n");
    EXPECT_EQ(err("Qwen3-8B@weight=-2 Meta-Llama-3.1-8B --gpu 16GiB"),
              "kvfit: Qwen3-8B@weight=-2: weight '-2': expected a number from 0.001 to 1000 (at most 3 decimals)\n");
    EXPECT_EQ(err("Qwen3-8B Meta-Llama-3.1-8B@weight=2x --gpu 16GiB"),
              "kvfit: Meta-Llama-3.1-8B@weight=2x: weight '2x': expected a number from 0.001 to 1000 (at most 3 decimals)\n");
    EXPECT_EQ(err("Qwen3-8B@weight= Meta-Llama-3.1-8B --gpu 16GiB"), "kvfit: Qwen3-8B@weight=: 'weight' needs a value (weight=2)\n");
    EXPECT_EQ(err("Qwen3-8B@weight=2,weight=3 Meta-Llama-3.1-8B --gpu 16GiB"),
              "kvfit: Qwen3-8B@weight=2,weight=3: 'weight' is given twice; give it once\n");
    // the HTTP API and the Python module: the item's "weight", a number or a string
    const auto error_of = [](const std::string & body) {
        const auto r = kvfit::handle_plan(body, kvfit::server_options{});
        EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
        return nlohmann::json::parse(r.body).value("error", std::string());
    };
    EXPECT_EQ(error_of(R"({"gpu": "16GiB", "models": [{"model": "Qwen3-8B", "weight": 0}, "Meta-Llama-3.1-8B"]})"),
              "request: field 'models' item 1: weight '0': expected a number from 0.001 to 1000 (at most 3 decimals)");
    EXPECT_EQ(error_of(R"({"gpu": "16GiB", "models": ["Qwen3-8B", {"model": "Meta-Llama-3.1-8B", "weight": true}]})"),
              "request: field 'models' item 2: weight true: expected a number from 0.001 to 1000");
    EXPECT_EQ(error_of(R"({"gpu": "16GiB", "models": ["Qwen3-8B", {"model": "Meta-Llama-3.1-8B", "weight": 1e-4}]})"),
              "request: field 'models' item 2: weight '0.0001': expected a number from 0.001 to 1000 (at most 3 decimals)");
    EXPECT_EQ(error_of(R"({"gpu": "16GiB", "weight": 2, "models": ["Qwen3-8B", "Meta-Llama-3.1-8B"]})"),
              "request: field 'weight': a weight is one model's: give it in its 'models' item");
    const auto ok = kvfit::handle_plan(R"({"gpu": "16GiB", "ctx_size": 40960, "models": [{"model": "Qwen3-8B", "weight": 3},
        {"model": "Meta-Llama-3.1-8B", "weight": "1", "parallel": 2}]})", kvfit::server_options{});
    EXPECT_EQ(ok.status, 200) << ok.body;
    EXPECT_EQ(ok.body, run_kvfit("Qwen3-8B@weight=3 Meta-Llama-3.1-8B@-np=2 --gpu 16GiB -c 40960 --json").out);
}

// ---- the set's host RAM (set_host): every llama-server's host part adds up, against --ram as one model's does.

// Two 8B models with 16 layers each on a 24 GiB card (-ngl 16: the other 20 and 16 layers, their weights mapped and
// their KV, on the CPU), --ram 6GiB: each alone fits its host (3.4 and 3.1 GiB), together they need 6.5 GiB: exit 3
// naming the host RAM, and the equal context found is smaller (host KV shrinks with it). The members' host figures
// are their plans' host RAM needs (detail.host_ram.needed_bytes), the sum is theirs.
TEST(model_set, host_ram_adds_up_against_ram) {
    const std::vector<std::pair<std::string, std::string>> f = {{"ctx_size", "8192"}, {"n_gpu_layers", "16"}, {"ram", "6GiB"}};
    const auto a = request("Qwen3-8B", "llama.cpp", "24GiB", f);
    const auto b = request("Meta-Llama-3.1-8B", "llama.cpp", "24GiB", f);
    const kvfit::set_result s = plan_set({a, b});
    expect_alone_not_together(s);
    EXPECT_TRUE(s.devices[0].fits()); // the GPU is not what is short
    ASSERT_EQ(s.host.member_bytes.size(), 2u);
    EXPECT_EQ(s.host.capacity_bytes, 6ull << 30);
    uint64_t sum = 0;
    for (size_t i = 0; i < 2; ++i) {
        const auto & h = s.plans[i].plan.detail.at("host_ram");
        EXPECT_EQ(s.host.member_bytes[i], h.at("needed_bytes").get<uint64_t>());
        EXPECT_GT(s.host.member_bytes[i], 2ull << 30) << i; // 16-20 layers of a q4_k_m 8B on the CPU: over 2 GiB mapped
        EXPECT_LT(s.host.member_bytes[i], 6ull << 30) << i;
        EXPECT_EQ(s.host.shared_bytes[i], 0u);
        sum += s.host.member_bytes[i];
    }
    EXPECT_EQ(s.host.used_bytes, sum);
    EXPECT_FALSE(s.host.fits());
    ASSERT_FALSE(s.refusals.empty());
    EXPECT_EQ(s.refusals.back().rfind("host RAM: the models need ", 0), 0u) << s.refusals.back();
    const kvfit::set_alternative * equal = find_alternative(s, "equal_context");
    ASSERT_NE(equal, nullptr);
    auto a_eq = a, b_eq = b;
    a_eq.flags.set("ctx_size", std::to_string(equal->values[0]));
    b_eq.flags.set("ctx_size", std::to_string(equal->values[0]));
    const kvfit::set_result at_equal = plan_set({a_eq, b_eq});
    EXPECT_TRUE(at_equal.fits);
    EXPECT_LE(at_equal.host.used_bytes, 6ull << 30);
    a_eq.flags.set("ctx_size", std::to_string(equal->values[0] + 256));
    b_eq.flags.set("ctx_size", std::to_string(equal->values[0] + 256));
    EXPECT_FALSE(plan_set({a_eq, b_eq}).host.fits()); // one step more: the host RAM is short
    // with RAM for both: fits, and the host RAM is said with its verdict
    auto a16 = a, b16 = b;
    a16.flags.set("ram", "16GiB");
    b16.flags.set("ram", "16GiB");
    EXPECT_TRUE(plan_set({a16, b16}).fits);
    const auto cli = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu 24GiB -c 8192 -ngl 16 --ram 6GiB");
    EXPECT_EQ(cli.status, 3);
    EXPECT_NE(cli.out.find(fmt::format("  host RAM: {} + {} = {} of 6.00 GiB (--ram): ", kvfit::human_bytes(s.host.member_bytes[0]),
                                       kvfit::human_bytes(s.host.member_bytes[1]), kvfit::human_bytes(sum))),
              std::string::npos) << cli.out;
    const auto j = nlohmann::json::parse(run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu 24GiB -c 8192 -ngl 16 --ram 6GiB --json").out);
    EXPECT_EQ(j["host"]["used_bytes"].get<uint64_t>(), sum);
    EXPECT_FALSE(j["host"]["fits"].get<bool>());
    // one machine, one RAM: a model's own --ram is refused
    const auto differs = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B@--ram=8GiB --gpu 24GiB --ram 6GiB");
    EXPECT_EQ(differs.status, 2);
    EXPECT_EQ(differs.err, "kvfit: --ram differs between the models (model 1: 6.00 GiB, model 2: 8.00 GiB): a set shares "
                           "one machine's RAM; give --ram once for all\n");
    // a bad value given to every model is the command line's (it blamed model 1); one model's own is that model's
    const auto all_bad = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu 24GiB --ram 0GiB");
    EXPECT_EQ(all_bad.status, 2);
    EXPECT_EQ(all_bad.err, "kvfit: --ram 0GiB: the host's memory must be more than 0\n");
    const auto own_bad = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B@-ctk=q9_9 --gpu 24GiB");
    EXPECT_EQ(own_bad.status, 2);
    EXPECT_EQ(own_bad.err.rfind("kvfit: model 2 (Meta-Llama-3.1-8B): -ctk 'q9_9': unknown cache type", 0), 0u) << own_bad.err;
    const auto first_only = run_kvfit("Qwen3-8B@--ram=8GiB Meta-Llama-3.1-8B --gpu 24GiB");
    EXPECT_EQ(first_only.status, 2);
    EXPECT_EQ(first_only.err, "kvfit: --ram differs between the models (model 1: 8.00 GiB, model 2: not given): a set "
                              "shares one machine's RAM; give --ram once for all\n");
}

// The same GGUF in two llama-server processes (two slots settings) is one page cache: the second's mapped weights are
// within the first's and counted once; without --ram the host figure is shown with no verdict.
TEST(model_set, host_ram_one_page_cache_per_file_and_no_verdict_without_ram) {
    const auto a = request("Qwen3-8B", "llama.cpp", "24GiB", {{"ctx_size", "8192"}, {"n_gpu_layers", "16"}, {"ram", "64GiB"}});
    auto b = a;
    b.flags.set("parallel", "2");
    const kvfit::set_result s = plan_set({a, b});
    const auto page_cache = [&](size_t i) {
        for (const auto & l : s.plans[i].plan.detail.at("host_ram").at("lines")) {
            if (l.at("name") == "page_cache") return l.at("bytes").get<uint64_t>();
        }
        return uint64_t(0);
    };
    ASSERT_GT(page_cache(1), 2ull << 30);
    EXPECT_EQ(page_cache(0), page_cache(1)); // the same 16 layers on the CPU
    EXPECT_EQ(s.host.shared_bytes[0], 0u);
    EXPECT_EQ(s.host.shared_bytes[1], page_cache(1));
    EXPECT_EQ(s.host.used_bytes, s.host.member_bytes[0] + s.host.member_bytes[1] - page_cache(1));
    // without --ram: each plan's host device, summed, no verdict
    const auto c = request("Qwen3-8B", "llama.cpp", "24GiB", {{"ctx_size", "8192"}, {"n_gpu_layers", "16"}});
    const auto d = request("Meta-Llama-3.1-8B", "llama.cpp", "24GiB", {{"ctx_size", "8192"}, {"n_gpu_layers", "16"}});
    const kvfit::set_result t = plan_set({c, d});
    EXPECT_FALSE(t.host.known());
    EXPECT_TRUE(t.fits);
    for (size_t i = 0; i < 2; ++i) EXPECT_EQ(t.host.member_bytes[i], t.plans[i].plan.devices.back().used_bytes()) << i;
    EXPECT_TRUE(t.plans[0].plan.devices.back().is_host);
    EXPECT_EQ(t.host.used_bytes, t.host.member_bytes[0] + t.host.member_bytes[1]);
    const auto cli = run_kvfit("Qwen3-8B Meta-Llama-3.1-8B --gpu 24GiB -c 8192 -ngl 16");
    EXPECT_EQ(cli.status, 0);
    EXPECT_NE(cli.out.find(" (pass --ram SIZE for a verdict)\n"), std::string::npos) << cli.out;
    // one file mapped twice without --ram: its pages (the host device's weights) count once, as with --ram
    auto e = c;
    e.flags.set("parallel", "2");
    const kvfit::set_result u = plan_set({c, e});
    EXPECT_FALSE(u.host.known());
    const uint64_t mapped = u.plans[1].plan.devices.back().bytes_of("weights");
    ASSERT_GT(mapped, 2ull << 30);
    EXPECT_EQ(u.host.shared_bytes[1], mapped);
    EXPECT_EQ(u.host.used_bytes, u.host.member_bytes[0] + u.host.member_bytes[1] - mapped);
    EXPECT_EQ(u.host.used_bytes, s.host.used_bytes); // the same figure --ram gives
}

} // namespace
