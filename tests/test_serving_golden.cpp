// Golden outputs of plans (text and --json, schema 2: docs/json.md) through the CLI, for every runtime: llama.cpp at
// the seeds' point and for an MoE spill; vLLM for a TP=2 and a TP=8 hybrid, an MLA and a dense plan; SGLang for a
// hybrid, with and without speculative decoding; Ollama for a hybrid and for gpt-oss. README.md quotes vllm_hybrid_tp2.txt and ollama_hybrid.txt.
// Regenerate after an intended change with KVFIT_UPDATE_GOLDEN=1 ./build/tests/kvfit_tests
// --gtest_filter='serving_golden*' and review the diff of tests/data/golden/.
#include "support/files.h"
#include "support/run_cli.h"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>

namespace {

struct golden_case {
    const char * name;  // file stem under tests/data/golden/
    const char * args;  // kvfit arguments
    int status;         // expected exit status
};

// The same flags as RULES §7.5 (Qwen3.8-27B-FP8 has the Qwen3.5-27B shape), with the FP8 checkpoint's size.
const golden_case cases[] = {
    {"llamacpp_seeds", "Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB", 3},
    {"llamacpp_moe_spill", "Mixtral-8x7B-v0.1 --gpu 24GiB --n-cpu-moe 4 -c 32768", 3},
    {"sglang_hybrid", "Qwen3.5-27B --runtime sglang --gpu H200 --mem-fraction-static 0.9 --context-length 32768", 0},
    // with MTP (NEXTN): SGLang's (3, 1, 4), 48 running requests, 5 mamba slots each, the drafter's KV layer
    {"sglang_spec_hybrid", "Qwen3.5-27B --runtime sglang --gpu H200 --mem-fraction-static 0.9 --context-length 32768 "
                           "--speculative-algorithm NEXTN", 0},
    {"vllm_hybrid_tp2", "Qwen3.5-27B --runtime vllm --gpu '2xRTX 3090' -tp 2 --gpu-memory-utilization 0.92 "
                        "--kv-cache-dtype fp8_e4m3 --enable-prefix-caching --max-num-batched-tokens 8192 "
                        "--max-num-seqs 8 --max-model-len 131072 --weights-size 28.5GB", 0},
    {"vllm_hybrid_tp8", "Qwen3-Next-80B-A3B-Thinking --runtime vllm --gpu 8xH100 -tp 8 --max-model-len 262144 "
                        "--max-num-seqs 256 --enable-prefix-caching", 0},
    {"vllm_mla_tp8", "DeepSeek-V3 --runtime vllm --gpu 8xH200 -tp 8 --max-model-len 65536 --weights-size 671GB "
                     "--block-size 64 --max-num-seqs 64", 0},
    {"vllm_dense", "Meta-Llama-3.1-8B --runtime vllm --gpu H100 --max-model-len 131072", 0},
    {"ollama_hybrid", "Qwen3.5-9B --runtime ollama --gpu 'RTX 4090' --num-parallel 4", 0},
    {"ollama_gpt_oss", "gpt-oss-20b --runtime ollama --gpu 'RTX 4090' --num-parallel 4 --ollama-kv-cache-type q8_0 "
                       "--weights mxfp4", 0},
};

void check(const std::string & file, const std::string & got) {
    const std::string path = std::string(KVFIT_TEST_DATA "/golden/") + file;
    if (std::getenv("KVFIT_UPDATE_GOLDEN")) {
        std::ofstream(path, std::ios::binary) << got;
        return;
    }
    EXPECT_EQ(kvfit::test::read_text(path), got) << "golden " << file << " differs";
}

TEST(serving_golden, text_and_json) {
    for (const auto & c : cases) {
        const auto text = kvfit::test::run_kvfit(c.args);
        EXPECT_EQ(text.status, c.status) << c.name << ": " << text.err;
        check(std::string(c.name) + ".txt", text.out);
        const auto json = kvfit::test::run_kvfit(std::string(c.args) + " --json");
        EXPECT_EQ(json.status, c.status) << c.name << ": " << json.err;
        check(std::string(c.name) + ".json", json.out);
    }
}

} // namespace
