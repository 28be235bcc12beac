// The Metal working set (include/kvfit/metal.h, src/runtimes/common/metal.cpp): the one budget of an Apple GPU, shared
// by the MLX, llama.cpp and Ollama plans, checked against recommendedMaxWorkingSetSize as published llama.cpp logs
// print it (docs/rules/mlx.md §7) and against the Metal logs in tests/data/gpu_logs.
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/llamacpp.h"
#include "kvfit/metal.h"
#include "kvfit/mlx.h"
#include "kvfit/ollama.h"
#include "kvfit/plan.h"
#include "kvfit/sources.h"
#include "support/files.h"
#include "support/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <string>

namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;

// recommendedMaxWorkingSetSize as a llama.cpp log prints it: "= 17179.89 MB" (MB = 10^6 B since ggml-metal's device
// rewrite; older logs printed MiB and called them MB). Read from a tests/data/gpu_logs file.
double logged_working_set_mb(const std::string & log) {
    const std::string text = kvfit::test::read_text(std::string(KVFIT_TEST_DATA) + "/gpu_logs/" + log);
    std::smatch m;
    EXPECT_TRUE(std::regex_search(text, m, std::regex("recommendedMaxWorkingSetSize += ([0-9.]+) MB"))) << log;
    return m.empty() ? 0 : std::stod(m[1]);
}

// The default (macOS 13-15) against every published log of it: 2/3 of the RAM up to 32 GB, 3/4 from 36 GB. Logs print
// two decimals and round to 16 KiB pages, so kvfit's figure is within 32 KiB of each.
TEST(metal, default_working_set_matches_published_logs) {
    struct row { uint64_t ram_gib; double logged_bytes; const char * source; };
    for (const row & r : {
             row{16, 11453.25e6, "llama.cpp CI, a 16 GB M-series Mac (code index file 25258031058)"},
             row{16, 10922.67 * MiB, "abetlen/llama-cpp-python #687, M1 16 GB (MiB printed as MB)"},
             row{32, 22906.50e6, "a 32 GB Mac on MTLGPUFamilyMetal3 (code index file 45251246612)"},
             row{32, 21845.34 * MiB, "ollama/ollama #434, M2 Max 32 GB (MiB printed as MB)"},
             row{36, 28991.03e6, "M4 Max 36 GB on MTLGPUFamilyMetal3, b7690 (code index file 60247611371)"},
             row{64, 49152.00 * MiB, "ggml-org/llama.cpp #1870, M1 Max 64 GB"},
             row{96, 73728.00 * MiB, "ggml-org/llama.cpp #3213, M2 Max 96 GB"},
         }) {
        SCOPED_TRACE(r.source);
        const double kvfit = double(kvfit::metal_working_set_bytes(r.ram_gib * GiB));
        EXPECT_LE(std::abs(kvfit - r.logged_bytes), 32768.0) << r.ram_gib << " GiB: " << kvfit;
    }
    EXPECT_EQ(kvfit::metal_working_set_bytes(8 * GiB), 8 * GiB / 3 * 2); // 5.33 GiB on an 8 GB Mac
    EXPECT_EQ(kvfit::metal_working_set_bytes(36 * GiB), 27 * GiB);
    EXPECT_EQ(kvfit::metal_working_set_bytes(64 * GiB), 48 * GiB);
}

// tests/data/gpu_logs: the Mac mini M4 Pro log (MTLGPUFamilyMetal3, macOS 15) shows 16384 MiB as the device total in
// llama.cpp's memory breakdown: 2/3 of the 24 GB base configuration.
TEST(metal, m4_pro_log_is_two_thirds_of_24_gb) {
    const std::string log = "qwen35-9b_metal_m4pro_c262144_q8kv.log";
    EXPECT_LE(std::abs(logged_working_set_mb(log) * 1e6 - double(kvfit::metal_working_set_bytes(24 * GiB))), 32768.0);
    const std::string text = kvfit::test::read_text(std::string(KVFIT_TEST_DATA) + "/gpu_logs/" + log);
    EXPECT_NE(text.find("MTL0 (Apple M4 Pro) | 16384 = "), std::string::npos);
    EXPECT_EQ(kvfit::metal_working_set_bytes(24 * GiB), 16384 * MiB);
    EXPECT_EQ(kvfit::find_gpu("M4 Pro 24GB")->memory_bytes, 24 * GiB);
}

// The M4 and M5 logs (MTLGPUFamilyMetal4: macOS 26) report 0.74 of a 16 and a 24 GB Mac: more than the default rule,
// which stays the smaller figure; `--iogpu-wired-limit-mb` with the logged MiB plans exactly what they report.
TEST(metal, macos_26_logs_report_more_than_the_default) {
    struct row { const char * log; uint64_t ram_gib; uint64_t free_mib; };
    for (const row & r : {row{"gemma4-e4b_metal_m4_c65536.log", 16, 12123}, row{"gpt-oss-20b_metal_m5_c131072.log", 24, 18185}}) {
        SCOPED_TRACE(r.log);
        const double logged = logged_working_set_mb(r.log) * 1e6;
        EXPECT_NEAR(logged / double(r.ram_gib * GiB), 0.74, 0.0005);
        EXPECT_LT(double(kvfit::metal_working_set_bytes(r.ram_gib * GiB)), logged);
        // llama.cpp's -fit starts from the working set less what is already allocated ("N MiB of free device memory")
        EXPECT_LE(double(r.free_mib * MiB), logged);
        const uint64_t mib = uint64_t(logged) / MiB;
        EXPECT_EQ(kvfit::metal_working_set_bytes(r.ram_gib * GiB, mib), mib * MiB);
    }
}

TEST(metal, wired_limit_sets_it_exactly) {
    // `sudo sysctl iogpu.wired_limit_mb=114688` on a 128 GB Mac: 112.00 GiB reported back (antirez/ds4 #893)
    EXPECT_EQ(kvfit::metal_working_set_bytes(128 * GiB, 114688), 112 * GiB);
    try {
        (void)kvfit::metal_working_set_bytes(64 * GiB, 70000);
        ADD_FAILURE() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "iogpu.wired_limit_mb 70000 exceeds the memory (65536 MiB)");
    }
    EXPECT_EQ(kvfit::metal_working_set_text("M4 Max 64GB", 64 * GiB, 57344),
              "M4 Max 64GB: Metal working set 56.00 GiB from iogpu.wired_limit_mb 57344 (of 64.00 GiB unified memory)");
}

TEST(metal, budget_replaces_the_memory_of_apple_gpus_only) {
    const auto gpus = kvfit::parse_gpu_list("M4 Max 64GB,RTX 4090,24GiB");
    std::vector<std::string> notes;
    const auto b = kvfit::metal_budget(gpus, 0, notes);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(b[0].memory_bytes, 48 * GiB);
    EXPECT_TRUE(b[0].memory_is_working_set);
    EXPECT_EQ(b[1].memory_bytes, gpus[1].memory_bytes);
    EXPECT_FALSE(b[1].memory_is_working_set);
    EXPECT_EQ(b[2].memory_bytes, 24 * GiB);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0], "M4 Max 64GB: Metal working set 48.00 GiB = 3/4 of 64.00 GiB unified memory (macOS 13-15's "
                        "default recommendedMaxWorkingSetSize; macOS 26 reports more; --iogpu-wired-limit-mb N for "
                        "`sudo sysctl iogpu.wired_limit_mb=N`)");
    // budgeted once: a second pass changes nothing
    std::vector<std::string> again;
    EXPECT_EQ(kvfit::metal_budget(b, 0, again)[0].memory_bytes, 48 * GiB);
    EXPECT_TRUE(again.empty());
    // a wired limit without a Mac would change nothing planned: refused by name, never silently dropped
    std::vector<std::string> cuda;
    try {
        (void)kvfit::metal_budget(kvfit::parse_gpu_list("RTX 4090"), 20000, cuda);
        ADD_FAILURE() << "no refusal";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "--iogpu-wired-limit-mb 20000: it sets a Mac's Metal working set, and --gpu names no Mac: "
                               "name one (e.g. --gpu \"M4 Max 64GB\") or drop the flag");
    }
    // 0 is macOS's default (`sysctl iogpu.wired_limit_mb=0`): accepted, and the default rule applies
    EXPECT_EQ(kvfit::metal_budget(kvfit::parse_gpu_list("M4 Max 64GB"), 0, cuda)[0].memory_bytes, 48 * GiB);
}

// Meta-Llama-3.1-70B's config.json is the 8B's with four fields changed (oumi's llama3_1 recipe table: hidden 8192,
// MLP 28672, 80 layers, 64 heads; vocab, KV heads, RoPE and untied embeddings as the 8B).
std::string llama_3_1_70b_config() {
    nlohmann::json c = nlohmann::json::parse(kvfit::test::shared_config("meta-llama__Meta-Llama-3.1-8B.json"));
    c["hidden_size"] = 8192, c["intermediate_size"] = 28672, c["num_hidden_layers"] = 80, c["num_attention_heads"] = 64;
    return kvfit::test::write_temp("Meta-Llama-3.1-70B.json", c.dump(2));
}

// Issue 25: Llama-3.1-70B q4_k_m at 32K on "M4 Max 64GB" was "OK, 49.90 of 64 GiB"; llama.cpp's Metal budget is the
// 48 GiB working set, so it does not fit (exit 3) unless the wired limit is raised.
TEST(metal, llamacpp_plans_a_mac_against_its_working_set) {
    const std::string cfg = llama_3_1_70b_config();
    const auto r = kvfit::test::run_kvfit(cfg + " --weights q4_k_m -c 32768 --gpu 'M4 Max 64GB' --json");
    EXPECT_EQ(r.status, 3) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["devices"][0]["capacity_bytes"], 48 * GiB);
    EXPECT_NEAR(double(j["devices"][0]["used_bytes"].get<uint64_t>()) / double(GiB), 49.90, 0.005);
    EXPECT_FALSE(j["fits"].get<bool>());
    EXPECT_EQ(j["gpus"][0]["memory"], "64.00 GiB unified memory (marketed 64 GB)");
    // `sudo sysctl iogpu.wired_limit_mb=57344`: 56 GiB of working set, and it fits
    const auto raised = kvfit::test::run_kvfit(cfg + " --weights q4_k_m -c 32768 --gpu 'M4 Max 64GB' "
                                                     "--iogpu-wired-limit-mb 57344 --json");
    EXPECT_EQ(raised.status, 0) << raised.err;
    const auto rj = nlohmann::json::parse(raised.out);
    EXPECT_EQ(rj["devices"][0]["capacity_bytes"], 56 * GiB);
    // the launch sets the working set it was planned at
    EXPECT_TRUE(rj["launch"].get<std::string>().starts_with("sudo sysctl iogpu.wired_limit_mb=57344 && llama-server ")) << rj["launch"];
}

// The three runtimes that run on a Mac budget the same figure for every Apple row of the table.
TEST(metal, mlx_llamacpp_and_ollama_share_one_rule) {
    const kvfit::model_desc m = kvfit::test::catalog_model("Qwen3-8B");
    size_t rows = 0;
    for (const auto & g : kvfit::gpu_table()) {
        if (g.vendor != "Apple") continue;
        SCOPED_TRACE(g.name);
        const auto gpus = kvfit::parse_gpu_list(g.name);
        const uint64_t ws = kvfit::metal_working_set_bytes(g.memory_bytes);
        kvfit::llamacpp_settings ls;
        ls.n_ctx = 4096;
        EXPECT_EQ(kvfit::plan_llamacpp(m, ls, {}, gpus).devices[0].capacity_bytes, ws);
        kvfit::mlx_settings ms;
        ms.context_tokens = 4096;
        EXPECT_EQ(kvfit::plan_mlx(m, ms, gpus).devices[0].capacity_bytes, ws);
        kvfit::ollama_settings os;
        os.num_ctx = 4096;
        EXPECT_EQ(kvfit::plan_ollama(m, os, gpus).plan.devices[0].capacity_bytes, ws);
        ++rows;
    }
    EXPECT_GE(rows, 40u); // M1-M5, base/Pro/Max/Ultra, each memory size
}

// Ollama's context tier reads the GPU's memory, which on a Mac is the working set: a 48 GB M4 Pro has 36 GiB, so
// Ollama picks the >= 23 GiB tier (32768), not the >= 47 GiB one its RAM would give.
TEST(metal, ollama_tier_reads_the_working_set) {
    const kvfit::model_desc m = kvfit::test::catalog_model("Qwen3-8B");
    const auto p = kvfit::plan_ollama(m, {}, kvfit::parse_gpu_list("M4 Pro 48GB"));
    EXPECT_EQ(p.num_ctx, 32768u) << p.num_ctx_from;
    EXPECT_EQ(p.plan.devices[0].capacity_bytes, 36 * GiB);
}

// Every Mac people run (issue 25): each chip generation in its base, Pro, Max and Ultra versions and the MacBook Air.
TEST(metal, the_table_covers_the_macs_people_own) {
    for (const char * name : {"M1 8GB", "M1 16GB", "M1 Pro 32GB", "M1 Max 64GB", "M1 Ultra 128GB", "M2 24GB",
                              "M2 Pro 16GB", "M2 Max 96GB", "M2 Ultra 192GB", "M3 8GB", "M3 Pro 18GB", "M3 Pro 36GB",
                              "M3 Max 36GB", "M3 Max 48GB", "M3 Ultra 96GB", "M4 16GB", "M4 32GB", "M4 Pro 24GB",
                              "M4 Pro 64GB", "M4 Max 36GB", "M4 Max 128GB", "M5 16GB", "M5 32GB", "M5 Pro 48GB",
                              "M5 Max 128GB", "MacBook Air M1 8GB", "MacBook Air M4 24GB", "Mac mini M4 Pro 48GB"}) {
        const kvfit::gpu_info * g = kvfit::find_gpu(name);
        ASSERT_NE(g, nullptr) << name;
        EXPECT_EQ(g->vendor, "Apple") << name;
        EXPECT_FALSE(g->reported_source.empty()) << name;
    }
    const auto r = kvfit::test::run_kvfit("Qwen3-8B --gpu 'M4 Pro 24GB'");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("16.00 GiB Metal working set (24.00 GiB unified memory; marketed 24 GB)"), std::string::npos)
        << r.out;
}

} // namespace

// A trial's Mac mistakes: vLLM and SGLang said "starts" on an M4 Max (refused by name now, as MLX refuses an NVIDIA
// card); MLX's --memory-is-working-set on a named Mac planned the whole 64 GiB (the flag is for a size that already
// is the working set); --iogpu-wired-limit-mb with no Mac was dropped in silence (refused: it would change nothing).
TEST(metal, runtimes_and_flags_on_a_mac_say_what_they_plan) {
    for (const char * rt : {"vllm", "sglang"}) {
        const auto r = kvfit::test::run_kvfit(std::string("Qwen3-8B --runtime ") + rt + " --gpu 'M4 Max 64GB'");
        EXPECT_EQ(r.status, 2) << rt;
        EXPECT_NE(r.err.find("M4 Max 64GB is an Apple GPU"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("(on a Mac: --runtime llama.cpp, ollama or mlx)"), std::string::npos) << r.err;
    }
    const auto named = kvfit::test::run_kvfit("Qwen3-8B --runtime mlx --gpu 'M4 Max 64GB' --memory-is-working-set --json");
    ASSERT_EQ(named.status, 0) << named.err;
    const auto nj = nlohmann::json::parse(named.out);
    EXPECT_EQ(nj["devices"][0]["capacity_bytes"], 48 * GiB);
    bool warned = false;
    for (const auto & w : nj["warnings"]) warned |= w.get<std::string>().starts_with("--memory-is-working-set ignored");
    EXPECT_TRUE(warned) << nj["warnings"];
    const auto sized = kvfit::test::run_kvfit("Qwen3-8B --runtime mlx --gpu 48GiB --memory-is-working-set --json");
    ASSERT_EQ(sized.status, 0) << sized.err;
    EXPECT_EQ(nlohmann::json::parse(sized.out)["devices"][0]["capacity_bytes"], 48 * GiB);
    for (const char * args : {"--gpu 48GiB --backend metal", "--gpu 'RTX 4090' --runtime ollama"}) {
        const auto r = kvfit::test::run_kvfit(std::string("Qwen3-8B --iogpu-wired-limit-mb 40000 ") + args);
        EXPECT_EQ(r.status, 2) << args;
        EXPECT_NE(r.err.find("--iogpu-wired-limit-mb 40000: it sets a Mac's Metal working set"), std::string::npos) << r.err;
    }
    // 0 is macOS's default (sysctl iogpu.wired_limit_mb=0): accepted by every runtime that reads it
    for (const char * rt : {"llama.cpp", "ollama", "mlx"}) {
        EXPECT_EQ(kvfit::test::run_kvfit(std::string("Qwen3-8B --gpu 'M4 Max 64GB' --iogpu-wired-limit-mb 0 --runtime ") + rt).status, 0) << rt;
    }
}

