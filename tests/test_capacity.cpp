// Issue 25 item 1, "capacities as the runtime sees them": the examples of the issue through the CLI. vLLM and SGLang
// budget from the total CUDA reports (torch.cuda.mem_get_info, not the marketed size), a name sold with several memory
// sizes asks which, and every output names which figure it planned with.
#include "support/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <string_view>

namespace {

constexpr uint64_t MiB = 1ull << 20;

// Whether one line of a --json list (warnings, notes) starts with `prefix`.
bool has_line(const nlohmann::json & lines, std::string_view prefix) {
    return std::any_of(lines.begin(), lines.end(), [&](const nlohmann::json & l) { return l.get<std::string>().starts_with(prefix); });
}

// "kvfit Qwen3-8B --runtime vllm --gpu L4 --max-model-len 40960 says starts; with --gpu 23034MiB it exits 3": both
// now exit 3 (the L4 is 22.05 GiB to CUDA; 23,034 MiB is nvidia-smi's figure, above what CUDA reports).
TEST(capacity, l4_vllm_example_does_not_meet_the_request) {
    for (const char * gpu : {"L4", "23034MiB"}) {
        SCOPED_TRACE(gpu);
        const auto r = kvfit::test::run_kvfit(std::string("Qwen3-8B --runtime vllm --max-model-len 40960 --gpu ") + gpu);
        EXPECT_EQ(r.status, 3) << r.err;
    }
    const auto r = kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --max-model-len 40960 --gpu L4");
    EXPECT_NE(r.out.find("1 x L4 (22.05 GiB as CUDA reports it (estimate; nvidia-smi 23,034 MiB; marketed 24 GB))"),
              std::string::npos) << r.out;
    EXPECT_NE(r.out.find("total 22.05 GiB x gpu_memory_utilization 0.92 = 20.29 GiB requested"), std::string::npos) << r.out;
}

// An estimated capacity is an assumption: a warning in every output, refused by --strict; a published one is not.
TEST(capacity, an_estimated_capacity_is_a_warning) {
    const auto r = kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu L4 --weights-size 16.4GB --json");
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(has_line(j["warnings"], "L4: 22.05 GiB as CUDA reports it is an estimate")) << j["warnings"].dump();
    // the vLLM terms given, so that the capacity is the one assumption left (serving_cases: each estimate is one)
    const std::string given = " --weights-size 16.4GB --activation-memory 1GiB --non-torch-memory 0.5GiB --cudagraph-memory 0.5GiB --strict";
    const auto strict = kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu L4" + given);
    EXPECT_EQ(strict.status, 2);
    EXPECT_NE(strict.err.find("strict: 1 warning refused: L4: 22.05 GiB as CUDA reports it is an estimate"), std::string::npos)
        << strict.err;
    EXPECT_EQ(kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu H100" + given).status, 0);
}

// The H100 as the driver reports it: nvidia-smi 81,559 MiB, CUDA 81,082 MiB (vLLM logs 79.22 GiB, torch 79.18 GiB);
// vLLM's budget starts from the CUDA figure, SGLang's default fraction from nvidia-smi's.
TEST(capacity, h100_reports_81559_mib) {
    const auto r = kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu H100 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["gpus"][0]["reported_bytes"], 81559 * MiB);
    EXPECT_EQ(j["gpus"][0]["memory_bytes"], 81082 * MiB);
    EXPECT_EQ(j["gpus"][0]["marketed_gb"], 80);
    EXPECT_EQ(j["gpus"][0]["memory"], "79.18 GiB as CUDA reports it (nvidia-smi 81,559 MiB; marketed 80 GB)");
    EXPECT_EQ(j["devices"][0]["capacity_bytes"], 81082 * MiB);
    const auto s = kvfit::test::run_kvfit("Qwen3-8B --runtime sglang --gpu H100 --json");
    ASSERT_EQ(s.status, 0) << s.err;
    const auto sj = nlohmann::json::parse(s.out);
    // 0.830: the reserve of 81,559 MiB at TP 1 (13,440 MiB) and Qwen3-8B's 58 piecewise CUDA graphs (464 MiB)
    EXPECT_TRUE(has_line(sj["notes"], "--mem-fraction-static 0.830: SGLang's default for 81559 MiB at --tp 1")) << s.out;
}

// A bare "A100" names a 40 and an 80 GB card: one line, exit 2, the choices named.
TEST(capacity, bare_a100_is_refused_naming_the_choices) {
    const auto r = kvfit::test::run_kvfit("Qwen3-8B --gpu A100");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "kvfit: gpu 'A100': sold with several memory sizes, name one: A100 40GB SXM, A100 80GB SXM, "
                     "A100 40GB PCIe, A100 80GB PCIe\n");
    EXPECT_EQ(kvfit::test::run_kvfit("Qwen3-8B --gpu 'A100 80GB SXM'").status, 0);
}

// README's vLLM example (RULES.md §7.1: total_gpu_memory=23.58GiB on an RTX 3090 in vllm #10517): kvfit budgets from
// what CUDA reports, 24,115 MiB = 23.55 GiB, not 24.00.
TEST(capacity, rtx_3090_budget_is_what_cuda_reports) {
    const auto r = kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu 'RTX 3090' --json");
    ASSERT_LE(r.status, 3) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["devices"][0]["capacity_bytes"], 24115 * MiB);
}

} // namespace
