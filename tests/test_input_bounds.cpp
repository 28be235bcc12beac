// Bounded memory on every input (issue 25 item 5): config.json is read keeping only the members kvfit reads
// (src/core/json_bounded.cpp); what it keeps has a nesting, a value-count and a string limit, each refused in one
// line; a llama.cpp log is read line by line and split into its runs. The figures (time, peak RSS) of the largest
// accepted inputs are in docs/reliability.md; these tests pin the behaviour, not the speed.
#include "sources/json_bounded.h"
#include "kvfit/error.h"
#include "kvfit/launch.h"
#include "kvfit/sources.h"

#include "support/files.h"
#include "support/run_cli.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace {

const std::string qwen3 = kvfit::test::shared_config("Qwen__Qwen3-8B.json");

// `text` (a config.json object) with `member` inserted after its opening brace.
std::string with_member(const std::string & text, const std::string & member) {
    return "{" + member + "," + text.substr(text.find('{') + 1);
}

std::string expect_error(const std::string & text) {
    kvfit::warnings warn;
    try {
        kvfit::model_from_hf_config(text, "big.json", warn);
    } catch (const kvfit::error & e) {
        return e.what();
    }
    ADD_FAILURE() << "planned";
    return "";
}

// What kvfit never reads costs nothing and changes nothing: a 24 MB table beside the keys (the shape of a config that
// carries a tokenizer or label table) plans as the file without it, with no warning.
TEST(input_bounds, members_kvfit_never_reads_are_skipped) {
    std::string table = "\"id2label\": {";
    for (int i = 0; i < 1000000; ++i) table += (i ? ",\"" : "\"") + std::to_string(i) + "\": \"LABEL_" + std::to_string(i) + "\"";
    table += "}";
    std::string numbers = "\"task_specific_params\": [0";
    for (int i = 1; i < 2000000; ++i) numbers += ",1";
    numbers += "]";
    kvfit::warnings w0, w1;
    const auto plain = kvfit::model_from_hf_config(qwen3, "qwen3.json", w0);
    const auto big = kvfit::model_from_hf_config(with_member(with_member(qwen3, table), numbers), "qwen3.json", w1);
    EXPECT_EQ(big, plain);
    EXPECT_EQ(w1, w0);
}

// What it keeps is bounded, and past a bound the file is refused in one line.
TEST(input_bounds, kept_members_have_limits) {
    std::string types = "\"layer_types\": [\"full_attention\"";
    for (int i = 1; i < 300000; ++i) types += ",\"full_attention\"";
    types += "]";
    EXPECT_EQ(expect_error(with_member(qwen3, types)), "big.json: more than 262144 JSON values in the keys kvfit reads");
    std::string levels; // the root object, rope_scaling's array, then 30 more: the 33rd level is refused
    for (int i = 0; i < 31; ++i) levels += "[]";
    EXPECT_EQ(expect_error(with_member(qwen3, "\"rope_scaling\": " + std::string(40, '[') + std::string(40, ']'))),
              "big.json: JSON nested deeper than 32 levels at 'rope_scaling" + levels + "'");
    EXPECT_EQ(expect_error(with_member(qwen3, "\"model_type\": \"" + std::string(70000, 'q') + "\"")),
              "big.json: a string of 70000 bytes at 'model_type' exceeds the limit of 65536 bytes");
    std::string ignore = "\"quantization_config\": {\"quant_method\": \"fp8\", \"ignore\": [\"\"";
    for (int i = 0; i < 100; ++i) ignore += ",\"" + std::string(60000, 'm') + "\"";
    ignore += "]}";
    EXPECT_EQ(expect_error(with_member(qwen3, ignore)), "big.json: more than 4194304 bytes of strings in the keys kvfit reads");
    // and the parse errors keep their wording
    EXPECT_EQ(expect_error("{\"a\": 5e353}"), "big.json: not valid JSON: number overflow parsing '5e353'");
}

// Keys that may change memory and that kvfit does not read are named, sixteen at most, then counted.
TEST(input_bounds, unknown_keys_are_named_then_counted) {
    std::string keys;
    for (int i = 0; i < 1000; ++i) keys += (i ? ",\"layer_extra_" : "\"layer_extra_") + std::to_string(i) + "\": 1";
    kvfit::warnings warn;
    kvfit::model_from_hf_config(with_member(qwen3, keys), "keys.json", warn);
    ASSERT_EQ(warn.size(), 17u);
    EXPECT_EQ(warn[16], "keys.json: 984 more keys that may change memory and that kvfit does not read (the first: "
                        "'layer_extra_112')"); // std::map order: layer_extra_0, _1, _10, _100, ...
}

// The same limits for any document read with them: the request body of `kvfit serve` (tests/test_server.cpp) and the
// filter's view of paths ("" for an array level).
TEST(input_bounds, filter_sees_the_path) {
    std::vector<std::string> seen;
    const auto j = kvfit::detail::parse_json_bounded(R"({"a": {"b": [{"c": 1, "d": 2}]}, "e": 3})", "x", {},
                                                     [&](const std::vector<std::string> & path, std::string_view key) {
                                                         std::string p;
                                                         for (const auto & k : path) p += "/" + k;
                                                         seen.push_back(p + ":" + std::string(key));
                                                         return key != "d" && key != "e";
                                                     });
    EXPECT_EQ(j.dump(), R"({"a":{"b":[{"c":1}]}})");
    EXPECT_EQ(seen, (std::vector<std::string>{":a", "/a:b", "/a/b/:c", "/a/b/:d", ":e"}));
}

// --- logs ------------------------------------------------------------------------------------------------------

const std::string logs_dir = std::string(KVFIT_TEST_DATA) + "/logs/";

// Two runs appended to one file (two model loads, each followed by its context) are two runs, each with its own
// lines; read as one run they looked like a target with a draft context (draft_context_line set).
TEST(input_bounds, appended_runs_are_split) {
    const std::string a = kvfit::test::read_text(logs_dir + "llama31-8b_c4096.log");
    const std::string b = kvfit::test::read_text(logs_dir + "qwen35-9b_c4096_np2.log");
    std::istringstream in(a + b);
    const auto runs = kvfit::parse_llamacpp_runs(in);
    ASSERT_EQ(runs.size(), 2u);
    const size_t lines_a = size_t(std::count(a.begin(), a.end(), '\n'));
    EXPECT_EQ(runs[0].first_line, 1u);
    EXPECT_EQ(runs[0].last_line, lines_a);
    EXPECT_EQ(runs[1].first_line, lines_a + 1);
    EXPECT_EQ(runs[0].model_path, "/work/scratch/conformance/models/llama31-8b_v512.gguf");
    EXPECT_EQ(runs[1].model_path, "/work/scratch/conformance/models/qwen35-9b_v512.gguf");
    EXPECT_EQ(runs[0].draft_context_line, 0u);
    EXPECT_EQ(runs[1].draft_context_line, 0u);
    EXPECT_FALSE(runs[0].recurrent.has_value());
    EXPECT_TRUE(runs[1].recurrent.has_value());
    // each run as parse_llamacpp_log reads it alone, line numbers shifted by the first run's
    const auto alone = kvfit::parse_llamacpp_log(b);
    ASSERT_EQ(runs[1].kv_caches.size(), alone.kv_caches.size());
    EXPECT_EQ(runs[1].kv_caches[0].line_no, alone.kv_caches[0].line_no + lines_a);
    EXPECT_GT(kvfit::parse_llamacpp_log(a + b).draft_context_line, 0u); // the old reading
}

// A draft model llama-server announces ("loading draft model") stays in the run it serves.
TEST(input_bounds, an_announced_draft_model_is_not_a_new_run) {
    const std::string a = kvfit::test::read_text(logs_dir + "llama31-8b_c4096.log");
    std::istringstream in(a + "common_speculative_init_from_params: loading draft model '/m/draft.gguf'\n" + a);
    const auto runs = kvfit::parse_llamacpp_runs(in);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].model_path, "/work/scratch/conformance/models/llama31-8b_v512.gguf");
    EXPECT_GT(runs[0].draft_context_line, 0u);
}

// `kvfit explain` explains each run of an appended log under its own heading.
TEST(input_bounds, explain_cli_explains_each_run) {
    const std::string path = std::string(::testing::TempDir()) + "/kvfit_two_runs.log";
    {
        std::ofstream out(path);
        out << kvfit::test::read_text(logs_dir + "llama31-8b_c4096.log") << kvfit::test::read_text(logs_dir + "llama31-8b_c8192_fa0_q8k.log");
    }
    const std::string gguf = std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/llama31-8b_v512.gguf";
    const auto r = kvfit::test::run_kvfit("explain " + path + " -m " + gguf);
    EXPECT_TRUE(r.status == 0 || r.status == 1) << r.err;
    EXPECT_NE(r.out.find("run 1 of 2: lines 1-"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("run 2 of 2: lines "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("draft"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("n_ctx"), r.out.rfind("n_ctx")) << r.out; // one n_ctx row per run
}

// An empty file, or text that is no startup log, is refused in one line that names every log kvfit explain reads: a
// vLLM or Ollama user was told "no llama.cpp line found".
TEST(input_bounds, explain_of_no_log_names_every_runtime_it_reads) {
    const std::string empty = std::string(::testing::TempDir()) + "/kvfit_empty.log";
    const std::string text = std::string(::testing::TempDir()) + "/kvfit_not_a.log";
    { std::ofstream out(empty); }
    { std::ofstream out(text); out << "INFO: Started server process [1234]\nhello world\n\x01\x02 binary-ish\n"; }
    for (const std::string & path : {empty, text}) {
        const auto r = kvfit::test::run_kvfit("explain " + path);
        EXPECT_EQ(r.status, 2) << path;
        EXPECT_EQ(r.err, "kvfit: log: no line of a llama.cpp, vLLM, SGLang, Ollama or mlx-lm startup log found (kvfit "
                         "explain reads those; is this the server's own output?)\n") << path;
    }
}

// A size line whose figure llama.cpp never prints (an edit: 1e9999, a sign, nan) is a difference, named with its line:
// it was dropped, and the log "matched" with one line fewer (a new-user trial's find).
TEST(input_bounds, explain_names_a_size_line_it_cannot_read) {
    std::string text = kvfit::test::read_text(logs_dir + "qwen35-9b_c4096_np2.log");
    const size_t at = text.find("KV buffer size =");
    ASSERT_NE(at, std::string::npos);
    const size_t end = text.find(" MiB", at);
    text.replace(at, end - at, "KV buffer size = -98.02");
    const std::string path = std::string(::testing::TempDir()) + "/kvfit_edited.log";
    { std::ofstream out(path); out << text; }
    const std::string gguf = std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/qwen35-9b_v512.gguf";
    const auto r = kvfit::test::run_kvfit("explain " + path + " -m " + gguf);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("size line                        log unreadable figure"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("not a size llama.cpp prints: \"llama_kv_cache:"), std::string::npos) << r.out;
    const kvfit::llamacpp_log log = kvfit::parse_llamacpp_log(text);
    ASSERT_EQ(log.unreadable.size(), 1u);
}

// A log is read line by line: what is kept is bounded (size lines, runs, line length), whatever the file's size.
TEST(input_bounds, logs_keep_bounded_records) {
    std::string many;
    for (int i = 0; i < 70000; ++i) many += "load_tensors:   CPU_Mapped model buffer size =  1.00 MiB\n";
    std::istringstream in(many);
    try {
        kvfit::parse_llamacpp_runs(in);
        FAIL() << "read";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "log: more than 65536 size and context lines (line 65537): not a llama.cpp log kvfit reads");
    }
    // a 1 MB line is cut at 64 KiB, the lines after it read
    std::istringstream wide(std::string(1u << 20, 'x') + "\nload_tensors:   CPU_Mapped model buffer size =  2.00 MiB\n");
    const auto runs = kvfit::parse_llamacpp_runs(wide);
    ASSERT_EQ(runs.size(), 1u);
    ASSERT_EQ(runs[0].model_buffers.size(), 1u);
    EXPECT_EQ(runs[0].model_buffers[0].line_no, 2u);
}

} // namespace
