// The fuzz targets of fuzz/fuzz_targets.h over their seeds (fuzz/seeds/) and over every find kept in
// tests/data/fuzz_crashes/<target>/: each input ends normally or in kvfit::error, nothing else.
#include "../fuzz/fuzz_targets.h"
#include "support/run_cli.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

size_t replay(const fs::path & dir, const std::function<void(std::string_view)> & target) {
    size_t n = 0;
    std::error_code ec;
    for (const auto & e : fs::directory_iterator(dir, ec)) {
        if (e.path().extension() == ".md") continue;
        std::ifstream in(e.path(), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_NO_THROW(target(bytes)) << e.path();
        ++n;
    }
    return n;
}

struct target_row {
    const char * name;
    std::function<void(std::string_view)> run;
};

TEST(fuzz_replay, finds_and_seeds_end_in_kvfit_error_or_nothing) {
    const fs::path crashes = fs::path(KVFIT_TEST_DATA) / "fuzz_crashes";
    const fs::path seeds = fs::path(KVFIT_SOURCE_DIR) / "fuzz" / "seeds";
    const target_row rows[] = {
        {"hf_config", kvfit::fuzz::read_hf_config},
        {"llamacpp_log", kvfit::fuzz::read_llamacpp_log},
        {"serving_log", kvfit::fuzz::read_serving_log},
        {"http_request", kvfit::fuzz::read_http_request},
        {"hub_listing", kvfit::fuzz::read_hub_listing},
    };
    for (const auto & r : rows) {
        replay(crashes / r.name, r.run);
        replay(seeds / r.name, r.run);
    }
    EXPECT_GT(replay(fs::path(KVFIT_TEST_DATA) / "logs", kvfit::fuzz::read_llamacpp_log), 0u);
    EXPECT_GT(replay(fs::path(KVFIT_TEST_DATA) / "configs", kvfit::fuzz::read_hf_config), 0u);
    EXPECT_GT(replay(fs::path(KVFIT_TEST_DATA) / "serving_logs", kvfit::fuzz::read_serving_log), 0u);
}

} // namespace

namespace {

// The first find of fuzz_hf_config: a number past double's range made nlohmann throw out_of_range, not parse_error,
// and it escaped as "kvfit: internal error" (the CLI) and HTTP 500 (the API, for any body holding such a number).
TEST(fuzz_replay, number_overflow_is_bad_input) {
    const std::string find = std::string(KVFIT_TEST_DATA) + "/fuzz_crashes/hf_config/number-overflow-5e353.json";
    const auto r = kvfit::test::run_kvfit(find);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "kvfit: " + find + ": not valid JSON: number overflow parsing '5e353'\n");
    kvfit::warnings warn;
    EXPECT_THROW(kvfit::model_from_hf_config(R"({"hidden_size": 1e400})", "x.json", warn), kvfit::error);
    const auto a = kvfit::handle_plan(R"({"model": "Qwen3.5-9B", "gpu": 1e400})", kvfit::server_options{});
    EXPECT_EQ(a.status, 400);
    EXPECT_EQ(a.body, "{\"error\":\"request: not valid JSON: number overflow parsing '1e400'\"}\n");
}

} // namespace

namespace {

// A fuzz_hf_config find (the --long run of 2026-12-02, after 4.9 M executions): a Nemotron-H config whose layers a
// hybrid_override_pattern places and whose block_configs is `true` reached the DeciLM FFN step, which indexed it as
// a list: nlohmann's type_error escaped (std::terminate under the fuzzer; "internal error" from the CLI).
TEST(fuzz_replay, block_configs_that_is_not_a_list_is_bad_input) {
    const std::string find = std::string(KVFIT_TEST_DATA) + "/fuzz_crashes/hf_config/block-configs-boolean.json";
    const auto r = kvfit::test::run_kvfit(find);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("key 'block_configs': expected array, got boolean"), std::string::npos) << r.err;
    kvfit::warnings warn;
    const auto cfg = R"({"architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas", "hidden_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 32, "block_configs": [{}]})";
    try {
        kvfit::model_from_hf_config(cfg, "x.json", warn);
        ADD_FAILURE() << "a block_configs of 1 entry for 2 layers was accepted";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("key 'block_configs': has 1 entries for num_hidden_layers 2"), std::string::npos) << e.what();
    }
}

} // namespace

namespace {

// A fuzz_llamacpp_log find: an 8.6 kB "loaded meta data" line with many " from " made the regex backtrack for over
// 10 s under the sanitizers. The path is now found by hand and long lines are not tried by any pattern.
TEST(fuzz_replay, long_log_lines_take_no_time) {
    const auto path = [](const std::string & line) {
        try {
            return kvfit::parse_llamacpp_log(line + "\nload_tensors:   CPU_Mapped model buffer size =     1.00 MiB\n").model_path;
        } catch (const kvfit::error & e) {
            return std::string("error: ") + e.what();
        }
    };
    EXPECT_EQ(path("llama_model_loader: loaded meta data with 19 key-value pairs and 292 tensors from /m/a b.gguf (version GGUF V3 (latest))"),
              "/m/a b.gguf");
    EXPECT_EQ(path("llama_model_loader: loaded meta data with 2 pairs from x from /m/y.gguf (version GGUF V3 (latest))"), "/m/y.gguf");
    EXPECT_EQ(path("llama_model_loader: loaded meta data with 2 pairs from (version"), "");
    const auto start = std::chrono::steady_clock::now();
    std::string hostile = "llama_model_loader: loaded meta data with ";
    while (hostile.size() < (1u << 20)) hostile += " from x (versio ";
    EXPECT_EQ(path(hostile), "");
    std::string sizes = "llama_kv_cache: size = ";
    while (sizes.size() < (1u << 20)) sizes += "1 ";
    EXPECT_EQ(path(sizes), "");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
}

} // namespace
