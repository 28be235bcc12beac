// `kvfit fit-params` (app/cli_fit_params.cpp) as a drop-in for llama.cpp v0.5.0's llama-fit-params. The text is
// checked against llama.cpp's own printf calls, transcribed below from the v0.5.0 sources; the figures against
// kvfit's llama.cpp plan (plan_llamacpp), so a change of a memory rule moves both sides together.
#include "support/run_cli.h"

#include "kvfit/error.h"
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/plan.h"
#include "kvfit/sources.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

using kvfit::test::run_kvfit;

namespace {

constexpr uint64_t MiB = 1024ull * 1024ull;

// common/fit.cpp common_fit_print, one device: printf("%s ", name); printf("%zu ", model/1024/1024); ... "\n".
std::string fit_print_line(const char * name, size_t model, size_t context, size_t compute) {
    char buf[256];
    std::string out;
    std::snprintf(buf, sizeof buf, "%s ", name), out += buf;
    std::snprintf(buf, sizeof buf, "%zu ", model / 1024 / 1024), out += buf;
    std::snprintf(buf, sizeof buf, "%zu ", context / 1024 / 1024), out += buf;
    std::snprintf(buf, sizeof buf, "%zu ", compute / 1024 / 1024), out += buf;
    return out + "\n";
}

// tools/fit-params/fit-params.cpp: printf("-c %" PRIu32 " -ngl %" PRIi32, n_ctx, n_gpu_layers), then " -ts a,b",
// then " -ot \"pattern=CPU,...\"", then "\n".
std::string fit_args_line(uint32_t n_ctx, int32_t ngl, const std::vector<uint32_t> & ts = {},
                          const std::vector<std::string> & ot = {}) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "-c %" PRIu32 " -ngl %" PRIi32, n_ctx, ngl);
    std::string out = buf;
    for (size_t id = 0; id < ts.size(); ++id) {
        if (id == 0) out += " -ts ";
        std::snprintf(buf, sizeof buf, "%s%" PRIu32, id > 0 ? "," : "", ts[id]);
        out += buf;
    }
    for (size_t i = 0; i < ot.size(); ++i) {
        if (i == 0) out += " -ot \"";
        out += (i > 0 ? "," : "") + ot[i] + "=CPU";
    }
    return out + (ot.empty() ? "" : "\"") + "\n";
}

kvfit::model_desc catalog_model(const std::string & name) {
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::load_model(name, warn);
    kvfit::plan_request q;
    kvfit::apply_request_weights(m, q, kvfit::find_runtime("llama.cpp"), warn); // q4_k_m, as the CLI assumes
    return m;
}

kvfit::llamacpp_plan plan_of(const kvfit::model_desc & m, uint64_t n_ctx, const std::vector<uint64_t> & gib,
                             kvfit::placement_settings p = {}) {
    kvfit::llamacpp_settings s;
    s.n_ctx = n_ctx;
    std::vector<kvfit::device_spec> gpus;
    for (uint64_t g : gib) gpus.push_back({"GPU", g << 30, 0});
    return kvfit::plan_llamacpp(m, s, p, gpus, 0);
}

uint64_t total_of(const kvfit::device_usage & d) {
    return d.used.weights_bytes + d.used.kv_bytes + d.used.state_bytes + d.used.compute_bytes;
}

} // namespace

TEST(FitParams, PrintOnOneDeviceIsCommonFitPrintOfThePlan) {
    const auto r = run_kvfit("fit-params -m Meta-Llama-3.1-8B -c 8192 --fit-print on --gpu 24GiB");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto p = plan_of(catalog_model("Meta-Llama-3.1-8B"), 8192, {24});
    ASSERT_EQ(p.devices.size(), 2u);
    const auto & g = p.devices[0].used;
    const auto & h = p.devices[1].used;
    EXPECT_EQ(r.out, fit_print_line("CUDA0", g.weights_bytes, g.kv_bytes + g.state_bytes, g.compute_bytes) +
                         fit_print_line("Host", h.weights_bytes, h.kv_bytes + h.state_bytes, h.compute_bytes));
    // llama.cpp's figures for this plan are whole MiB of the model on the GPU, the KV cache (8192 x 32 layers x
    // 8 KV heads x 128 x 2 (K, V) x 2 bytes = 1024 MiB), and a compute buffer
    EXPECT_EQ((g.kv_bytes + g.state_bytes) / MiB, 1024u);
    EXPECT_NE(r.err.find("printing estimated memory in MiB to stdout (device, model, context, compute)"), std::string::npos);
}

TEST(FitParams, PrintOnTwoDevicesAndTheHybridModelsState) {
    const auto r = run_kvfit("fit-params --model Qwen3.5-9B -c 16384 -ctk q8_0 -ctv q8_0 -fa on --fit-print on --gpu 12GiB,12GiB");
    ASSERT_EQ(r.status, 0) << r.err;
    kvfit::llamacpp_settings s;
    s.n_ctx = 16384;
    s.type_k = s.type_v = kvfit::ggml_type::q8_0;
    s.flash_attn = kvfit::flash_attn_mode::on;
    const auto p = kvfit::plan_llamacpp(catalog_model("Qwen3.5-9B"), s, {}, {{"a", 12ull << 30, 0}, {"b", 12ull << 30, 0}}, 0);
    std::string want;
    // llama-fit-params measures in no_alloc mode, the prompt graph alone (ggml_backend_sched_reserve_size): the
    // scheduler replay's prompt figures where the graph is replayed (compute_sched.cpp)
    ASSERT_TRUE(p.gpu_compute.replayed) << p.gpu_compute.why;
    for (size_t i = 0; i < p.devices.size(); ++i) {
        const auto & u = p.devices[i].used;
        want += fit_print_line(p.devices[i].is_host ? "Host" : ("CUDA" + std::to_string(i)).c_str(), u.weights_bytes,
                               u.kv_bytes + u.state_bytes, p.gpu_compute.prompt_bytes.at(i));
    }
    EXPECT_EQ(r.out, want);
    EXPECT_NE(r.out.find("CUDA1 "), std::string::npos);
}

TEST(FitParams, NoChangeNeededPrintsTheGivenContextAndDefaultNgl) {
    // fit.cpp step 1: every device keeps its target (1024 MiB) free: no change; -ngl stays llama.cpp's default -1
    const auto r = run_kvfit("fit-params -m Meta-Llama-3.1-8B -c 8192 --gpu 24GiB");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, fit_args_line(8192, -1));
}

TEST(FitParams, ContextReducedByFitCppsInterpolation) {
    // -c unset: n_ctx_train (131072) does not fit 12 GiB; step 2 interpolates between --fit-ctx 4096 and 131072
    const auto r = run_kvfit("fit-params -m Meta-Llama-3.1-8B --gpu 12GiB");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto m = catalog_model("Meta-Llama-3.1-8B");
    const int64_t free_b = 12ll << 30, target = free_b - int64_t(1024 * MiB);
    const int64_t used_max = int64_t(total_of(plan_of(m, 131072, {12}).devices[0]));
    const int64_t used_min = int64_t(total_of(plan_of(m, 4096, {12}).devices[0]));
    ASSERT_GT(used_max, target);
    ASSERT_GT(target, used_min);
    uint64_t n_ctx = 4096 + uint64_t((131072 - 4096) * (target - used_min) / (used_max - used_min));
    n_ctx -= n_ctx % 256;
    EXPECT_EQ(r.out, fit_args_line(uint32_t(n_ctx), -1));
    // and the context found fits
    EXPECT_LE(int64_t(total_of(plan_of(m, n_ctx, {12}).devices[0])), target);
}

TEST(FitParams, DenseLayersWhenTheMinimumContextDoesNotFit) {
    // 6 GiB cannot hold the 8B model's weights at q4_k_m plus 4096 tokens: step 3 keeps the largest -ngl that fits
    const auto r = run_kvfit("fit-params -m Meta-Llama-3.1-8B --gpu 6GiB");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto m = catalog_model("Meta-Llama-3.1-8B");
    int32_t best = -1;
    for (int32_t ngl = int32_t(m.n_layer) + 1; ngl >= 0 && best < 0; --ngl) {
        kvfit::placement_settings p;
        p.n_gpu_layers = ngl;
        if (int64_t(total_of(plan_of(m, 4096, {6}, p).devices[0])) <= (6ll << 30) - int64_t(1024 * MiB)) best = ngl;
    }
    ASSERT_GT(best, 0);
    ASSERT_LT(best, int32_t(m.n_layer) + 1);
    EXPECT_EQ(r.out, fit_args_line(4096, best));
}

TEST(FitParams, MoeExpertsOverflowAsFitCppsPatterns) {
    const auto r = run_kvfit("fit-params -m Qwen3.5-35B-A3B --gpu 12GiB");
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_TRUE(r.out.starts_with("-c 4096 -ngl ")) << r.out;
    // LAYER_FRACTION_MOE of fit.cpp get_overflow_pattern, from block 0 up
    EXPECT_NE(r.out.find(" -ot \"blk\\.0\\.ffn_(up|down|gate_up|gate)_(ch|)exps=CPU,blk\\.1\\.ffn_"), std::string::npos) << r.out;
    EXPECT_TRUE(r.out.ends_with("exps=CPU\"\n")) << r.out;
}

TEST(FitParams, FailuresExitOneAsLlamaFitParams) {
    // -c given (no context reduction) and -ngl given: fit.cpp "n_gpu_layers already set by user to 33, abort",
    // and llama_fit_params exits 1
    auto r = run_kvfit("fit-params -m Meta-Llama-3.1-8B -c 8192 -ngl 33 --gpu 4GiB");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("n_gpu_layers already set by user to 33, abort"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("failed to fit CLI arguments to free memory"), std::string::npos) << r.err;
    r = run_kvfit("fit-params -m Meta-Llama-3.1-8B --fit-print maybe --gpu 4GiB");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "kvfit fit-params: unknown value for --fit-print: 'maybe'\n");
    r = run_kvfit("fit-params -m Meta-Llama-3.1-8B --bogus 1 --gpu 4GiB");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "kvfit fit-params: invalid argument: --bogus\n");
    r = run_kvfit("fit-params -m Meta-Llama-3.1-8B -c 0x10 --gpu 4GiB");
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.err.starts_with("kvfit fit-params: -c '0x10'")) << r.err;
}

TEST(FitParams, FitTargetPerDevice) {
    // --fit-target 8000: 24 GiB - 8000 MiB cannot hold 131072 tokens, so the context is reduced; 1024 fits as is
    const auto wide = run_kvfit("fit-params -m Meta-Llama-3.1-8B -c 8192 --fit-target 1024 --gpu 24GiB");
    EXPECT_EQ(wide.out, fit_args_line(8192, -1));
    const auto tight = run_kvfit("fit-params -m Meta-Llama-3.1-8B --fit-target 20000 --gpu 24GiB");
    ASSERT_EQ(tight.status, 0) << tight.err;
    EXPECT_TRUE(tight.out.starts_with("-c ")) << tight.out;
    EXPECT_NE(tight.out, fit_args_line(131072, -1));
}

// `kvfit fit-params --help` and `kvfit help fit-params` list the flags fit-params reads (it used to answer "invalid
// argument: --help"), exit 0; without -m it exits 1 as llama-fit-params does, with one line naming -m.
TEST(FitParams, HelpListsItsFlagsAndAMissingModelIsOneLine) {
    for (const char * cmd : {"fit-params --help", "help fit-params", "fit-params -h"}) {
        const auto r = run_kvfit(cmd);
        EXPECT_EQ(r.status, 0) << cmd << ": " << r.err;
        EXPECT_NE(r.out.find("Usage: kvfit fit-params -m MODEL"), std::string::npos) << cmd << ": " << r.out;
        for (const char * f : {"-fitt, --fit-target", "-fitp, --fit-print", "-ot, --override-tensor", "-kvu, --kv-unified"}) {
            EXPECT_NE(r.out.find(f), std::string::npos) << cmd << ": " << f;
        }
    }
    const auto r = run_kvfit("fit-params -c 4096");
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "kvfit fit-params: no model: give -m MODEL (a .gguf, config.json, model directory or catalog name)\n");
}

// A new user's trial (issue 25 follow-up): on a Mac, fit-params printed "-c 131072 -ngl -1" for a 24 GB M4 Pro where
// the plan says 131072 does not fit. ggml-metal reports Metal's working set as the device's memory
// (ggml-metal-device.m ggml_metal_device_get_memory), so fit.cpp budgets 16 GiB there, as the plan does (metal.h):
// the answer is the one for a 16 GiB device, the context it gives fits the plan, and the device is MTL0.
TEST(FitParams, MacBudgetsTheMetalWorkingSetAsThePlan) {
    const auto mac = run_kvfit("fit-params -m Meta-Llama-3.1-8B --weights q4_k_m --gpu 'M4 Pro 24GB'");
    ASSERT_EQ(mac.status, 0) << mac.err;
    const auto sized = run_kvfit("fit-params -m Meta-Llama-3.1-8B --weights q4_k_m --gpu 16GiB --backend metal");
    ASSERT_EQ(sized.status, 0) << sized.err;
    EXPECT_EQ(mac.out, sized.out);
    ASSERT_TRUE(mac.out.starts_with("-c ")) << mac.out;
    EXPECT_NE(mac.out, fit_args_line(131072, -1));
    const std::string n_ctx = mac.out.substr(3, mac.out.find(' ', 3) - 3);
    EXPECT_EQ(run_kvfit("Meta-Llama-3.1-8B --weights q4_k_m --gpu 'M4 Pro 24GB' --check -c " + n_ctx).status, 0);
    EXPECT_EQ(run_kvfit("Meta-Llama-3.1-8B --weights q4_k_m --gpu 'M4 Pro 24GB' --check -c 131072").status, 3);
    EXPECT_NE(mac.err.find("M4 Pro 24GB: Metal working set 16.00 GiB"), std::string::npos) << mac.err;
    // `sudo sysctl iogpu.wired_limit_mb=20480`: fit-params takes the flag the plan takes (it was "invalid argument")
    const auto wired = run_kvfit("fit-params -m Meta-Llama-3.1-8B --weights q4_k_m --gpu 'M4 Pro 24GB' "
                                 "--iogpu-wired-limit-mb 20480");
    ASSERT_EQ(wired.status, 0) << wired.err;
    EXPECT_EQ(wired.out, run_kvfit("fit-params -m Meta-Llama-3.1-8B --weights q4_k_m --gpu 20GiB --backend metal").out);
    // the device names of the backend's build (ggml_backend_dev_name)
    const auto print = run_kvfit("fit-params -m Meta-Llama-3.1-8B --weights q4_k_m -c 8192 --gpu 'M1 8GB' --fit-print on");
    ASSERT_EQ(print.status, 0) << print.err;
    EXPECT_TRUE(print.out.starts_with("MTL0 ")) << print.out;
    EXPECT_TRUE(run_kvfit("fit-params -m Meta-Llama-3.1-8B -c 8192 --gpu MI300X --fit-print on").out.starts_with("ROCm0 "));
    EXPECT_TRUE(run_kvfit("fit-params -m Meta-Llama-3.1-8B -c 8192 --gpu 24GiB --backend vulkan --fit-print on")
                    .out.starts_with("Vulkan0 "));
}

// llama.cpp's -ngl takes auto (-1), all (-2) and any integer (common/arg.cpp:2785-2800; a negative one offloads every
// layer, llama-model.cpp:1926): -ngl -1, the value fit-params prints, is accepted everywhere kvfit reads -ngl, and a
// user's -2 / all aborts fit.cpp's layer step as llama-fit-params does.
TEST(FitParams, NegativeNglAsLlamaCpp) {
    EXPECT_EQ(kvfit::parse_ngl_flag("-ngl", "-1"), -1);
    EXPECT_EQ(kvfit::parse_ngl_flag("-ngl", "-2"), -1);
    EXPECT_EQ(kvfit::parse_ngl_flag("-ngl", "all"), -1);
    EXPECT_EQ(kvfit::parse_ngl_flag("-ngl", "20"), 20);
    EXPECT_THROW((void)kvfit::parse_ngl_flag("-ngl", "-"), kvfit::error);
    EXPECT_THROW((void)kvfit::parse_ngl_flag("-ngl", "2x"), kvfit::error);
    const auto all = run_kvfit("Meta-Llama-3.1-8B --gpu 12GiB -c 8192 -ngl -1 --json");
    ASSERT_EQ(all.status, 0) << all.err;
    const auto dflt = run_kvfit("Meta-Llama-3.1-8B --gpu 12GiB -c 8192 --json");
    EXPECT_EQ(nlohmann::json::parse(all.out)["devices"], nlohmann::json::parse(dflt.out)["devices"]);
    // kvfit exec reads the command fit-params answers (it refused "-ngl -1" before)
    const auto c = kvfit::parse_launch_command({"llama-server", "-m", "X.gguf", "-c", "52736", "-ngl", "-1"});
    EXPECT_EQ(c.placement.n_gpu_layers, -1);
    EXPECT_EQ(c.settings.n_ctx, 52736u);
    const auto two = run_kvfit("fit-params -m Meta-Llama-3.1-8B -c 8192 -ngl -2 --gpu 4GiB");
    EXPECT_EQ(two.status, 1);
    EXPECT_NE(two.err.find("n_gpu_layers already set by user to -2, abort"), std::string::npos) << two.err;
}

// The fit is the library's (src/runtimes/llamacpp/fit_params.cpp), the CLI only parses and prints: the library call
// gives what `kvfit fit-params` prints, a fit.cpp abort is llamacpp_fit_failure, and --fit-ctx 0 keeps n_ctx 0 (the
// training context: fit.cpp:414 sets cparams->n_ctx = n_ctx_min_total, 0, and the interpolation above it is never
// reached because the projected use at 0 is the use at the full context).
TEST(FitParams, TheFitIsTheLibrarysAndFitCtxZeroKeepsTheTrainingContext) {
    const auto m = catalog_model("Meta-Llama-3.1-8B");
    kvfit::llamacpp_settings s;
    s.server_outputs = false;
    s.n_outputs_max = 0;
    const std::vector<kvfit::device_spec> gpus = {{"GPU", 12ull << 30, 0}};
    const auto r = kvfit::llamacpp_fit_params(m, s, {}, gpus, {}, 4096, std::nullopt);
    const auto cli = run_kvfit("fit-params -m Meta-Llama-3.1-8B --gpu 12GiB");
    ASSERT_EQ(cli.status, 0) << cli.err;
    EXPECT_EQ(cli.out, fit_args_line(uint32_t(r.n_ctx), r.n_gpu_layers));
    EXPECT_GT(r.n_ctx, 4096u);
    EXPECT_LT(r.n_ctx, 131072u);

    const auto data = kvfit::llamacpp_device_memory_data(m, s, {}, gpus);
    ASSERT_EQ(data.size(), 2u); // the GPU, then the host line
    EXPECT_GT(data[0].model, 4ull << 30);

    EXPECT_THROW(kvfit::llamacpp_fit_params(m, s, {}, {{"GPU", 2ull << 30, 0}}, {}, 4096, 20), kvfit::llamacpp_fit_failure);
    // --fit-ctx 0: n_ctx stays 0 (printed "-c 0", as llama-fit-params prints cparams.n_ctx) and the layers are
    // fitted at the training context, which 0 means (llama-context.cpp), so fewer than every layer fit in 12 GiB
    const auto zero = kvfit::llamacpp_fit_params(m, s, {}, gpus, {}, 0, std::nullopt);
    EXPECT_EQ(zero.n_ctx, 0u);
    EXPECT_GE(zero.n_gpu_layers, 0);
    EXPECT_LT(zero.n_gpu_layers, int32_t(m.n_layer + 1));
    kvfit::llamacpp_settings full = s;
    full.n_ctx = m.n_ctx_train;
    kvfit::placement_settings q;
    q.n_gpu_layers = zero.n_gpu_layers;
    EXPECT_LE(kvfit::llamacpp_device_memory_data(m, full, q, gpus)[0].total() + 1024 * MiB, gpus[0].memory_bytes);
    q.n_gpu_layers = zero.n_gpu_layers + 1;
    EXPECT_GT(kvfit::llamacpp_device_memory_data(m, full, q, gpus)[0].total() + 1024 * MiB, gpus[0].memory_bytes);
    const auto cli0 = run_kvfit("fit-params -m Meta-Llama-3.1-8B --gpu 12GiB --fit-ctx 0");
    EXPECT_EQ(cli0.status, 0) << cli0.err;
    EXPECT_EQ(cli0.out, fit_args_line(0, zero.n_gpu_layers));
}
