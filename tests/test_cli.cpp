// The CLI as a person runs it: the seeds' table, the seeds' 8 GiB point, and bad input (issue 2 "done when").
#include "support/run_cli.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace {

using kvfit::test::run_kvfit;
using kvfit::test::write_temp;

TEST(cli, default_model_prints_the_seeds_table) {
    const auto r = run_kvfit("");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string & o = r.out;
    EXPECT_NE(o.find("Qwen3.5-9B"), std::string::npos);
    EXPECT_NE(o.find("32 layers: 8 full attention, 24 recurrent (gated_deltanet)"), std::string::npos) << o;
    EXPECT_NE(o.find("KV cache per token (f16 K, f16 V): 32,768 B"), std::string::npos) << o;
    EXPECT_NE(o.find("8 layers x 2 (K, V) x 4 KV heads x 256 head_dim x 2 B"), std::string::npos) << o;
    EXPECT_NE(o.find("if all 32 layers were full attention: 131,072 B (4.00x)"), std::string::npos) << o;
    EXPECT_NE(o.find("52,690,944 B (50.25 MiB)"), std::string::npos) << o;
    EXPECT_NE(o.find("34/64 of f16"), std::string::npos) << o;
    EXPECT_NE(o.find("a little more than half"), std::string::npos) << o;
    // the seeds' table: KV and the all-full-attention column
    EXPECT_NE(o.find("    8,192        0.25 GiB                1.00 GiB   4.00x\n"), std::string::npos) << o;
    EXPECT_NE(o.find("   32,768        1.00 GiB                4.00 GiB   4.00x\n"), std::string::npos) << o;
    EXPECT_NE(o.find("  131,072        4.00 GiB               16.00 GiB   4.00x\n"), std::string::npos) << o;
    EXPECT_NE(o.find("  262,144        8.00 GiB               32.00 GiB   4.00x\n"), std::string::npos) << o;
    EXPECT_NE(o.find("GiB = 2^30 bytes"), std::string::npos);
}

// DeepSeek-V4-Flash keeps no cache that takes a cell per token: its compressed caches grow by one cell per 4 (CSA and
// its indexer keys) or 128 tokens (HCA), and its fixed state is the compressors' pending tokens. The report says so
// instead of "0 B per token" and "0 layers x (0 conv + 0 state)". Per 4 tokens: 21 CSA layers x 512 x 2 B + 21 indexer
// x 128 x 2 B = 26,880 B, as llama.cpp's caches measured (csa 704,643,072 B and lid 176,160,768 B at 32,768 cells:
// tests/conformance/measured/deepseek-v4-flash.v0.5.0.jsonl, n_ctx 131,072).
TEST(cli, compressed_caches_are_reported_by_their_ratio) {
    const auto r = run_kvfit("DeepSeek-V4-Flash -c 131072");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string & o = r.out;
    EXPECT_NE(o.find("43 layers: 43 sliding window (128 tokens); 21 with a compressed cache (1 cell per 4 tokens); 20 with "
                     "a compressed cache (1 cell per 128 tokens); 21 with indexer keys (1 cell per 4 tokens)"),
              std::string::npos) << o;
    EXPECT_NE(o.find("KV cache per token (f16 K, f16 V): no cache takes a cell for every token"), std::string::npos) << o;
    EXPECT_NE(o.find("1 cell per 4 tokens (42 caches): 26,880 B per 4 tokens, 6,720 B per token on average"),
              std::string::npos) << o;
    EXPECT_NE(o.find("1 cell per 128 tokens (20 caches): 20,480 B per 128 tokens, 160 B per token on average"),
              std::string::npos) << o;
    EXPECT_NE(o.find("Fixed state per sequence (f32): 12,206,080 B (11.64 MiB) = compressor states 12,206,080 B"),
              std::string::npos) << o;
    EXPECT_EQ(o.find("0 layers x"), std::string::npos) << o;
    // per sequence whatever -np is (the parts too: 4 sequences hold 4 x 12,206,080 B, not one)
    const auto r4 = run_kvfit("DeepSeek-V4-Flash -c 131072 -np 4");
    ASSERT_EQ(r4.status, 0) << r4.err;
    EXPECT_NE(r4.out.find("Fixed state per sequence (f32): 12,206,080 B (11.64 MiB) = compressor states 12,206,080 B"),
              std::string::npos) << r4.out;
}

TEST(cli, default_model_json_has_exact_bytes) {
    const auto r = run_kvfit("--json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["model"]["name"], "Qwen3.5-9B");
    EXPECT_EQ(j["model"]["n_layer"], 32);
    EXPECT_EQ(j["model"]["layer_counts"]["full_attention"], 8);
    EXPECT_EQ(j["model"]["layer_counts"]["recurrent"], 24);
    EXPECT_EQ(j["kv_bytes_per_token"], 32768);
    EXPECT_EQ(j["detail"]["kv_bytes_per_token_if_all_full_attention"], 131072);
    EXPECT_EQ(j["state_bytes_per_sequence"], 52690944);
    const uint64_t ctx[] = {8192, 32768, 131072, 262144};
    for (size_t i = 0; i < 4; ++i) {
        const auto & row = j["detail"]["contexts"][i];
        EXPECT_EQ(row["n_ctx"], ctx[i]);
        EXPECT_EQ(row["kv_bytes"], ctx[i] * 32768);
        EXPECT_EQ(row["kv_bytes_if_all_full_attention"], ctx[i] * 131072);
    }
}

TEST(cli, q8_0_cache_costs_34_64_of_f16) {
    const auto r = run_kvfit("-ctk q8_0 -ctv q8_0 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["kv_bytes_per_token"], 32768 * 34 / 64); // 17,408
    EXPECT_EQ(j["detail"]["settings"]["cache_type_k"], "q8_0");
}

// The seeds' point: an 8 GB card holding ~6.6 GB of 4-bit weights has room for a conversation of roughly
// 44K tokens with an f16 cache (32K when the compute buffer held logits for n_ubatch rows, the addon's n_outputs_max;
// llama-server reserves n_parallel: server_output_limits), roughly 12K if every layer were full attention, and q8_0
// gives about 1.5x (the CUDA f16 K/V scratch of a quantized cache takes part of the gain).
TEST(cli, seeds_point_on_an_8gib_gpu) {
    const auto r = run_kvfit("Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB --json");
    ASSERT_TRUE(r.status == 0 || r.status == 3) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    uint64_t f16 = 0, q8 = 0, full = 0;
    for (const auto & row : j["max_context"]) {
        const uint64_t n = row["context_tokens"];
        if (row["all_full_attention"]) full = n;
        else if (row["cache_type"] == "f16") f16 = n;
        else if (row["cache_type"] == "q8_0") q8 = n;
    }
    EXPECT_GE(f16, 36864u);
    EXPECT_LE(f16, 49152u);
    EXPECT_GE(full, 8192u);
    EXPECT_LE(full, 14336u);
    EXPECT_GT(double(q8) / double(f16), 1.4);
    EXPECT_LT(double(q8) / double(f16), 2.0);
    EXPECT_EQ(f16 % 256, 0u);
    EXPECT_EQ(j["gpus"][0]["memory_bytes"], 8ull << 30);
    EXPECT_EQ(j["schema_version"], 2);
}

TEST(cli, exit_status_says_whether_it_fits) {
    EXPECT_EQ(run_kvfit("Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB -c 8192").status, 0);
    const auto r = run_kvfit("Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB -c 262144");
    EXPECT_EQ(r.status, 3);
    EXPECT_NE(r.out.find("DOES NOT FIT"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("moves layers to the CPU"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("-ctk q8_0 -ctv q8_0"), std::string::npos) << r.out;
}

// Found in the issue 12 trial: "FITS: n_ctx 131,072" followed by "f16 40,960" for Qwen3-8B on a 24 GiB GPU read as a
// contradiction; the search stops at the training context (40,960), and a largest context at that cap says so.
TEST(cli, largest_context_at_the_training_cap_says_so) {
    const auto r = run_kvfit("Qwen3-8B -c 131072 --gpu 24GiB");
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("fit searches stop at 40,960"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("f16        40,960  (the search stops at the training context, 40,960)"), std::string::npos) << r.out;
    // below the cap, no label: on an 8 GiB GPU f16 is limited by memory, q4_0 reaches the cap
    const auto small = run_kvfit("Qwen3-8B -c 32768 --gpu 8GiB --weights-size 4.7GB");
    EXPECT_NE(small.out.find("f16        20,480\n"), std::string::npos) << small.out;
    EXPECT_NE(small.out.find("q4_0       40,960  (the search stops at the training context, 40,960)"), std::string::npos) << small.out;
    // the last step below the cap is capped too (-np 3: steps of 768), and one step above it is still searched
    // (-np 256: 65,536 > 40,960; it was "0, nothing fits" beside "FITS")
    const auto np3 = run_kvfit("Qwen3-8B -np 3 -c 8192 --gpu H100 --json");
    const auto j = nlohmann::json::parse(np3.out);
    EXPECT_EQ(j["max_context"][0]["context_tokens"], 40704) << np3.out;
    EXPECT_EQ(j["max_context"][0]["capped"], true) << np3.out;
    const auto np256 = run_kvfit("Qwen3-8B -np 256 --gpu H100");
    EXPECT_NE(np256.out.find("f16        65,536  (the smallest context with these sequences, above the training context, "
                             "40,960)"), std::string::npos) << np256.out;
}

struct bad_case {
    const char * name;
    std::string args;
    const char * message; // a substring of the one-line error
};

TEST(cli, bad_input_gives_one_line_and_exit_2) {
    const std::string not_json = write_temp("not_json.json", "{ this is not json");
    const std::string no_layers = write_temp("no_layers.json",
        R"({"model_type":"llama","hidden_size":4096,"num_attention_heads":32,"vocab_size":32000})");
    const std::string zero_heads = write_temp("zero_heads.json",
        R"({"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":0,"vocab_size":32000})");
    const std::string neg_heads = write_temp("neg_heads.json",
        R"({"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":-8,"vocab_size":32000})");
    const std::string zeros_gguf = write_temp("zeros.gguf", std::string(64, '\0'));
    const std::string fifo = write_temp("fifo.gguf", "") + ".fifo";
    std::filesystem::remove(fifo); // a test directory of an earlier process with the same pid may hold one
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const bad_case cases[] = {
        {"missing file", "/nonexistent/model.json", "no such file"},
        {"not json", not_json, "not valid JSON"},
        {"no num_hidden_layers", no_layers, "num_hidden_layers"},
        {"zero heads", zero_heads, "num_attention_heads"},
        {"negative kv heads", neg_heads, "num_key_value_heads"},
        {"-c 0", "-c 0", "-c 0: must be at least 1"},
        {"-c -1", "-c -1", "-c '-1': expected a positive integer"},
        {"-c abc", "-c abc", "-c 'abc': expected a positive integer"},
        {"unknown cache type", "-ctk q9_9", "-ctk 'q9_9': unknown cache type"},
        {"quantized V without FA", "-ctv q8_0 -fa off", "needs flash attention"},
        {"bad gpu size", "--gpu 8XB", "unknown GPU"},
        {"unknown flag", "--no-such-flag", "no-such-flag"},
        {"empty model", "\"\"", "model: empty value"},
        {"empty gpu", "--gpu \"\"", "--gpu: empty value"},
        {"gpu without unit", "--gpu 8", "--gpu 8: no unit; write 8GiB (2^30 B) or 8GB (10^9 B)"},
        {"margin over capacity", "--gpu 24GiB --margin 100GiB", "--margin 100.00 GiB is not less than GPU0's 24.00 GiB"},
        {"set spelling for one model", "Qwen3-8B@-c=8192", "Qwen3-8B@-c=8192: MODEL@settings is for a set of models"},
        {"non-finite split", "--gpu 24GiB,8GiB -ts nan,1", "-ts 'nan,1'"},
        {"gguf with bad magic", zeros_gguf, "not a GGUF file (bad magic)"},
        {"fifo as gguf", "--inspect " + fifo, "not a regular file"},
        {"cpu bandwidth 0", "--gpu 8GiB --speed --cpu-bandwidth 0", "bandwidth '0'"},
    };
    for (const auto & c : cases) {
        const auto r = run_kvfit(c.args);
        EXPECT_EQ(r.status, 2) << c.name << ": " << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.name << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
        EXPECT_EQ(r.err.rfind("kvfit: ", 0), 0u) << c.name << ": " << r.err;
    }
}

// The fit line names where the margin came from: llama.cpp --fit's default target (1 GiB, common/arg.cpp
// --fit-target 1024 MiB), or --margin.
TEST(cli, fit_line_names_the_margin_source) {
    const auto given = run_kvfit("Qwen3-8B --gpu 24GiB --margin 2GiB");
    ASSERT_EQ(given.status, 0) << given.err;
    EXPECT_NE(given.out.find("keeping 2.00 GiB free per GPU (--margin; llama.cpp --fit's default target is 1.00 GiB)"),
              std::string::npos) << given.out;
    const auto fallback = run_kvfit("Qwen3-8B --gpu 24GiB");
    EXPECT_NE(fallback.out.find("keeping 1.00 GiB free per GPU (llama.cpp --fit's default target; --margin changes it)"),
              std::string::npos) << fallback.out;
}

TEST(cli, list_names_the_catalog) {
    const auto r = run_kvfit("--list");
    ASSERT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("Qwen3.5-9B"), std::string::npos);
    EXPECT_NE(r.out.find("Qwen/Qwen3-Next-80B-A3B-Thinking"), std::string::npos);
}

} // namespace

namespace {

TEST(cli, check_names_the_buffer_that_overflows) {
    const auto bad = kvfit::test::run_kvfit("Qwen3.5-9B --weights-size 6.6GB --gpu 8GiB -c 65536 --check");
    EXPECT_EQ(bad.status, 3);
    EXPECT_NE(bad.out.find("GPU0: the KV cache (2.00 GiB) overflows it"), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("fits instead: -c 44800 -ctk f16 -ctv f16"), std::string::npos) << bad.out;
    const auto good = kvfit::test::run_kvfit("Qwen3.5-9B --weights-size 6.6GB --gpu \"RTX 4060\" -c 16384 --check");
    EXPECT_EQ(good.status, 0);
    // the RTX 4060's CUDA total is the GPU table's estimate (docs/gpus.md): said first, then the verdict
    EXPECT_EQ(good.out.rfind("warning: RTX 4060: 7.60 GiB as CUDA reports it is an estimate of the GPU table", 0), 0u)
        << good.out;
    EXPECT_NE(good.out.find("\nOK: Qwen3.5-9B at n_ctx 16,384"), std::string::npos) << good.out;
    EXPECT_EQ(kvfit::test::run_kvfit("--check").status, 2);
}

} // namespace

namespace {
// With several GPUs and no -tp, vLLM's plan searches the TP sizes; when every one is refused, the reason TP 1 is refused
// is named (DeepSeek-V4 without an fp8 KV cache), not "no TP size divides the heads", which sent users to the wrong fix.
TEST(cli, vllm_placement_search_names_the_real_refusal) {
    const auto r = kvfit::test::run_kvfit("DeepSeek-V4-Flash --runtime vllm --gpu 8xH200");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "kvfit: vllm: AssertionError: DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got auto\n");
}
} // namespace

namespace {
// SGLang with a pool shorter than --context-length starts and caps each request at max_req_len = min(context_len - 1,
// max_total_num_tokens - 1) (scheduler.py); kvfit said "does not start". gpt-oss-120b on one H100 at 131,072: the pool
// holds 79,798 tokens (from the 81,082 MiB CUDA reports; --mem-fraction-static 0.835 from nvidia-smi's 81,559 MiB).
// Verdict: starts, does not meet the request (exit 3), the cap named.
TEST(cli, sglang_short_pool_starts_and_caps_requests) {
    const std::string cfg = std::string(KVFIT_SHARED_DIR) + "/configs/openai__gpt-oss-120b.json";
    const auto r = kvfit::test::run_kvfit(cfg + " --runtime sglang --gpu H100 --context-length 131072 --json");
    EXPECT_EQ(r.status, 3) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j["starts"].get<bool>());
    EXPECT_FALSE(j["fits"].get<bool>());
    EXPECT_TRUE(j["refusals"].empty());
    bool named = false;
    for (const auto & w : j["warnings"]) {
        // the default fraction 0.830 counts gpt-oss's 58 piecewise CUDA graphs (8 MiB each; 0.835 and 79,798 tokens
        // without them, --disable-piecewise-cuda-graph)
        named |= w.get<std::string>() == "starts, but caps a request at 73431 tokens (max_req_len = min(--context-length - 1, "
                                          "pool - 1)): the pool holds 73432 tokens, fewer than --context-length 131072";
    }
    EXPECT_TRUE(named) << j["warnings"].dump();
}
} // namespace
