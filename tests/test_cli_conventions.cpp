// Command-line conventions (issue 15): -hf as llama.cpp means it, --version, kvfit help, -fa spellings, --list
// --json, one message for a repeated option, value types in --help, file suffixes in any case, vLLM's k/K suffixes,
// and control characters from files escaped in every output.
#include "kvfit/gguf_writer.h"
#include "kvfit/launch.h"
#include "kvfit/printable.h"
#include "kvfit/llamacpp.h"
#include "kvfit/plan.h"
#include "kvfit/server.h"
#include "support/fake_hub.h"
#include "support/files.h"
#include "support/run_cli.h"

#include <filesystem>
#include <fstream>

namespace {

using namespace kvfit::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string gguf_dir = std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/";

// `kvfit -hf org/name:QUANT` is `kvfit hf:org/name:QUANT` (it used to read -h, print the help and exit 0, so
// `kvfit -hf x && llama-server -hf x` went on); -hff names the file; a failure is exit 2, never 0.
TEST(cli_conventions, hf_flag_is_the_hub_model) {
    fake_hub h;
    scratch_dir local("cc_hf_local"), cache("cc_hf_cache");
    put_gguf_repo(h, "org/gguf", local.path.string());
    const std::string env = "HF_ENDPOINT=" + h.hub.origin() + " KVFIT_CACHE=" + cache.path.string();
    const auto want = run_kvfit_env(env, "hf:org/gguf:Q4_K_M --json");
    ASSERT_EQ(want.status, 0) << want.err;
    for (const char * flags : {"-hf org/gguf:Q4_K_M --json", "-hfr org/gguf:q4_k_m --json", "--hf-repo org/gguf:Q4_K_M --json",
                               "-hf org/gguf:Q8_0 -hff model-Q4_K_M.gguf --json"}) {
        const auto got = run_kvfit_env(env, flags);
        EXPECT_EQ(got.status, 0) << flags << ": " << got.err;
        json a = json::parse(got.out), b = json::parse(want.out);
        a["model"].erase("source"), b["model"].erase("source"); // the spelling given
        a.erase("launch"), b.erase("launch");                   // names the model as given
        EXPECT_EQ(a, b) << flags;
    }
    const auto missing = run_kvfit_env(env, "-hf org/absent:Q4_K_M");
    EXPECT_EQ(missing.status, 2);
    EXPECT_NE(missing.err.find("HTTP 404"), std::string::npos) << missing.err;
    EXPECT_EQ(run_kvfit("-hf").status, 2); // a missing value is an error, not the help
    EXPECT_EQ(run_kvfit("-hf org/x Qwen3.5-9B").err, "kvfit: -hf org/x and MODEL Qwen3.5-9B: give one model\n");
    EXPECT_EQ(run_kvfit("-hff x.gguf").err, "kvfit: -hff/--hf-file needs -hf org/name (the repository holding the file)\n");
}

TEST(cli_conventions, version_and_help) {
    const auto v = run_kvfit("--version");
    EXPECT_EQ(v.status, 0);
    EXPECT_EQ(v.out, "kvfit 0.1.0\nllama.cpp rules: v0.5.0 (node-llama-cpp 3.22.1, the default), 5b4ebc5 (node-llama-cpp "
                     "3.21.1); --llamacpp-version picks one\n");
    EXPECT_EQ(run_kvfit("Qwen3.5-9B --gpu 8GiB --version").out, v.out);
    const auto help = run_kvfit("--help"), word = run_kvfit("help");
    EXPECT_EQ(word.status, 0);
    EXPECT_EQ(word.out, help.out);
    EXPECT_NE(help.out.find("kvfit help [exec|explain|serve|fit-params]"), std::string::npos);
    const auto exec = run_kvfit("help exec");
    EXPECT_EQ(exec.status, 0);
    EXPECT_NE(exec.out.find("--fix"), std::string::npos) << exec.out;
    const auto serve = run_kvfit("help serve");
    EXPECT_EQ(serve.status, 0);
    EXPECT_NE(serve.out.find("--port"), std::string::npos) << serve.out;
    const auto bogus = run_kvfit("help bogus"); // it printed the main help and exited 0
    EXPECT_EQ(bogus.status, 2);
    EXPECT_EQ(bogus.err, "kvfit: help bogus: no such command (help topics: exec, explain, fit-params, serve; kvfit --help "
                         "for the flags)\n");
    // numeric options say so in --help (CLI11 wrote TEXT for every one)
    for (const char * shown : {"-c,--ctx-size INT[,INT...]", "--ubatch-size INT", "--gpu GPUS", "--margin SIZE",
                               "--weights-size SIZE", "--n-gpu-layers INT|all|auto", "--flash-attn on|off|auto",
                               "--max-model-len INT[k|K|m|M]|-1", "--gpu-memory-utilization FLOAT", "--num-ctx INT"}) {
        EXPECT_NE(help.out.find(shown), std::string::npos) << shown;
    }
    EXPECT_EQ(help.out.find(" TEXT "), std::string::npos) << "an option without a type name";
}

// -fa as llama.cpp reads it (common/arg.cpp is_truthy / is_falsey / is_autoy), in the CLI, exec and the API.
TEST(cli_conventions, flash_attn_spellings) {
    const auto on = run_kvfit("Qwen3.5-9B -c 4096 -ctv q8_0 -fa on --json").out;
    const auto off = run_kvfit("Qwen3.5-9B -c 4096 -fa off --json").out;
    const auto automatic = run_kvfit("Qwen3.5-9B -c 4096 -fa auto --json").out;
    for (const char * v : {"1", "true", "enabled"}) EXPECT_EQ(run_kvfit(std::string("Qwen3.5-9B -c 4096 -ctv q8_0 -fa ") + v + " --json").out, on) << v;
    for (const char * v : {"0", "false", "disabled"}) EXPECT_EQ(run_kvfit(std::string("Qwen3.5-9B -c 4096 -fa ") + v + " --json").out, off) << v;
    EXPECT_EQ(run_kvfit("Qwen3.5-9B -c 4096 -fa -1 --json").out, automatic);
    EXPECT_EQ(run_kvfit("-fa maybe").err, "kvfit: -fa 'maybe': expected on, off or auto (or 1, 0, true, false, -1)\n");
    for (const char * v : {"1", "true", "on", "enabled"}) {
        EXPECT_EQ(kvfit::parse_launch_command({"llama-server", "-m", "x.gguf", "-fa", v}).settings.flash_attn, kvfit::flash_attn_mode::on) << v;
    }
    EXPECT_EQ(kvfit::parse_launch_command({"llama-server", "-fa", "-1", "-c", "8"}).settings.flash_attn, kvfit::flash_attn_mode::automatic);
    EXPECT_EQ(kvfit::parse_launch_command({"llama-server", "-fa", "0"}).settings.flash_attn, kvfit::flash_attn_mode::off);
    EXPECT_EQ(kvfit::parse_launch_command({"llama-server", "-fa"}).settings.flash_attn, kvfit::flash_attn_mode::on); // older builds
    kvfit::server_options o;
    EXPECT_EQ(kvfit::handle_plan(R"({"model": "Qwen3.5-9B", "ctx_size": 4096, "flash_attn": "0"})", o).body, off);
}

TEST(cli_conventions, list_json_is_the_models_document) {
    const auto r = run_kvfit("--list --json");
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, kvfit::models_json());
    EXPECT_EQ(json::parse(r.out)[0]["name"], "Qwen3.5-9B");
}

// CLI11 said "--gpu: At Most 1 required but received 2"; kvfit names the option as typed and both values.
TEST(cli_conventions, an_option_given_twice) {
    const std::pair<const char *, const char *> rows[] = {
        {"--gpu 8GiB --gpu 24GiB", "kvfit: --gpu given 2 times ('8GiB', '24GiB'): give it once\n"},
        {"-fa on --flash-attn=off", "kvfit: -fa given 2 times ('on', 'off'): give it once\n"},
        {"-ngl 10 -ngl 20 -ngl 30", "kvfit: -ngl given 3 times ('10', '20', '30'): give it once\n"},
        {"--runtime vllm --max-model-len 8K --max-model-len 16K --gpu 24GiB",
         "kvfit: --max-model-len given 2 times ('8K', '16K'): give it once\n"},
    };
    for (const auto & [args, message] : rows) {
        const auto r = run_kvfit(args);
        EXPECT_EQ(r.status, 2) << args;
        EXPECT_EQ(r.err, message) << args;
    }
    // repeatable: -c (the table) and -ot (rules); flags twice are harmless
    EXPECT_EQ(run_kvfit("Qwen3.5-9B -c 8192 -c 32768 --json").status, 0);
    EXPECT_EQ(run_kvfit("Qwen3.5-9B -ot a=CPU -ot b=CPU --json --json").status, 0);
}

// vLLM's --max-model-len takes 128K (x 1024) and 128k (x 1000) (vllm/engine/arg_utils.py, human_readable_int).
TEST(cli_conventions, vllm_suffixes) {
    const std::string base = "Qwen3.5-9B --runtime vllm --gpu 'RTX 4090' --weights-size 6GB --json --max-model-len ";
    const auto plain = run_kvfit(base + "131072");
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(run_kvfit(base + "128K").out, plain.out);
    EXPECT_EQ(run_kvfit(base + "128000").out, run_kvfit(base + "128k").out);
    EXPECT_EQ(run_kvfit(base + "25600").out, run_kvfit(base + "25.6k").out);
    EXPECT_EQ(run_kvfit(base + "auto").out, run_kvfit(base + "-1").out);
    EXPECT_EQ(run_kvfit(base + "1.5K").err,
              "kvfit: --max-model-len '1.5K': expected a number like 131072, 128K (x 1024) or 128k (x 1000); decimals only "
              "with k, m, g (decimal multipliers)\n");
    EXPECT_EQ(run_kvfit(base + "99999999999k").status, 2);
    EXPECT_EQ(run_kvfit(base + "8192 --max-num-batched-tokens 8K").out, run_kvfit(base + "8192 --max-num-batched-tokens 8192").out);
}

// .GGUF, CONFIG.JSON and .SVG are read and written like their lower-case names.
TEST(cli_conventions, file_suffixes_in_any_case) {
    scratch_dir dir("cc_case");
    fs::copy_file(gguf_dir + "llama31-8b_v512.gguf", dir.file("MODEL.GGUF"));
    const auto upper = run_kvfit(dir.file("MODEL.GGUF") + " --json");
    const auto lower = run_kvfit(gguf_dir + "llama31-8b_v512.gguf --json");
    ASSERT_EQ(upper.status, 0) << upper.err;
    json a = json::parse(upper.out), b = json::parse(lower.out);
    a["model"].erase("source"), b["model"].erase("source");
    a.erase("launch"), b.erase("launch"); // names the file as given
    EXPECT_EQ(a, b);
    fs::create_directories(dir.path / "Qwen3-8B");
    std::ofstream(dir.file("Qwen3-8B/CONFIG.JSON")) << kvfit::find_catalog("Qwen3-8B")->config_json;
    const auto cfg = run_kvfit(dir.file("Qwen3-8B") + " --json");
    EXPECT_EQ(cfg.status, 0) << cfg.err;
    EXPECT_EQ(json::parse(cfg.out)["model"]["name"], "Qwen3-8B");
    std::ofstream(dir.file("BAD.GGUF")) << "not a gguf";
    EXPECT_EQ(run_kvfit(dir.file("BAD.GGUF")).err, "kvfit: " + dir.file("BAD.GGUF") + ": offset 0x0: not a GGUF file (bad magic)\n");
    const auto chart = run_kvfit("Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB --chart " + dir.file("CHART.SVG"));
    EXPECT_EQ(chart.status, 3) << chart.err; // does not fit at 262,144: a result, and the chart is written
    EXPECT_EQ(read_text(dir.file("CHART.SVG")).rfind("<svg", 0), 0u);
}

// A GGUF whose strings hold terminal escapes: every output spells them out (they used to reach the terminal raw,
// in --inspect, the report's name and errors), and --json stays valid JSON holding the exact string.
TEST(cli_conventions, control_characters_are_escaped_in_every_output) {
    scratch_dir dir("cc_escape");
    const std::string evil = "evil\x1b]0;owned\x07\x1b[2J\r\nforged line\xc2\x9b\xe2\x80\xae";
    kvfit::gguf_writer w = model_writer("llama", 2);
    w.add("general.name", kvfit::gguf_wvalue::string(evil));
    w.add("llama.attention.head_count", kvfit::gguf_wvalue::u32(8));
    w.add("llama.attention.head_count_kv", kvfit::gguf_wvalue::u32(2));
    w.add("general.description", kvfit::gguf_wvalue::string("bad \xff\xfe bytes"));
    const std::string path = dir.file("evil.gguf");
    std::ofstream(path, std::ios::binary) << w.header();
    // names are one line in every report: the line break of the name is spelled out too, so no line is forged
    const std::string shown = "evil\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x0aforged line\\u009b\\u202e";
    for (const char * flags : {"", " --inspect", " --gpu 8GiB --check", " --gpu 8GiB --speed --weights-size 1GB"}) {
        const auto r = run_kvfit(path + flags);
        EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << flags;
        EXPECT_EQ(r.out.find('\x07'), std::string::npos) << flags;
        EXPECT_EQ(r.out.find('\r'), std::string::npos) << flags;
        EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << flags;
        EXPECT_EQ(r.out.find("\nforged line"), std::string::npos) << "[" << flags << "] " << r.out.substr(r.out.find("\nforged line") == std::string::npos ? 0 : r.out.find("\nforged line") - 200, 300);
    }
    EXPECT_NE(run_kvfit(path).out.find(shown), std::string::npos);
    // the chart's SVG names the model too: still well-formed XML (no control character, valid UTF-8)
    EXPECT_EQ(run_kvfit(path + " --gpu 8GiB --chart " + dir.file("evil.svg")).status, 0);
    const std::string svg = read_text(dir.file("evil.svg"));
    EXPECT_NE(svg.find("evil\\x1b]0;owned"), std::string::npos);
    EXPECT_TRUE(std::none_of(svg.begin(), svg.end(), [](char c) { return (unsigned char)c < 0x20 && c != '\n'; }));
    EXPECT_NE(run_kvfit(path + " --inspect").out.find("bad \\xff\\xfe bytes"), std::string::npos);
    const auto j = run_kvfit(path + " --json");
    ASSERT_TRUE(json::accept(j.out)) << j.out.substr(0, 400);
    EXPECT_EQ(json::parse(j.out)["model"]["name"], evil); // the exact string, escaped by JSON itself
    EXPECT_EQ(j.out.find('\x1b'), std::string::npos);
    // errors quote values from outside: a file name, a catalog name
    std::ofstream(dir.file("x\x1b[31m.json")) << "{";
    const auto bad = run_kvfit("'" + dir.file("x\x1b[31m.json") + "'");
    EXPECT_EQ(bad.status, 2);
    EXPECT_EQ(bad.err.find('\x1b'), std::string::npos) << bad.err;
    EXPECT_NE(bad.err.find("x\\x1b[31m.json"), std::string::npos) << bad.err;
    // explain prints the log's lines and names
    const std::string log = dir.file("evil.log");
    std::ofstream(log) << "llama_model_loader: loaded meta data with 3 key-value pairs and 2 tensors from /m/\x1b[5mx.gguf (version GGUF V3 (latest))\n"
                       << "load_tensors:   CPU_Mapped model buffer size =     1.00 MiB\nllama_context: n_ctx = 4096\n";
    const auto ex = run_kvfit("explain " + log + " -m " + path);
    EXPECT_EQ(ex.out.find('\x1b'), std::string::npos) << ex.out;
    EXPECT_EQ(ex.err.find('\x1b'), std::string::npos) << ex.err;
    // the API: valid JSON (an invalid UTF-8 name made render_json throw: a 500)
    kvfit::gguf_writer u = model_writer("llama", 2);
    u.add("general.name", kvfit::gguf_wvalue::string("name \xff"));
    u.add("llama.attention.head_count", kvfit::gguf_wvalue::u32(8));
    u.add("llama.attention.head_count_kv", kvfit::gguf_wvalue::u32(2));
    std::ofstream(dir.file("utf8.gguf"), std::ios::binary) << u.header();
    const auto ju = run_kvfit(dir.file("utf8.gguf") + " --json");
    EXPECT_EQ(ju.status, 0) << ju.err;
    EXPECT_TRUE(json::accept(ju.out));
    EXPECT_EQ(json::parse(ju.out)["model"]["name"], "name \xef\xbf\xbd"); // U+FFFD
}

TEST(cli_conventions, printable_table) {
    const std::pair<std::string, std::string> rows[] = {
        {"plain text, caf\xc3\xa9, \xe4\xb8\xad\xe6\x96\x87", "plain text, caf\xc3\xa9, \xe4\xb8\xad\xe6\x96\x87"},
        {"a\x1b[31mb", "a\\x1b[31mb"},
        {"tab\there\nline", "tab\there\nline"},
        {"cr\r", "cr\\x0d"},
        {"del\x7f", "del\\x7f"},
        {"c1 \xc2\x9b", "c1 \\u009b"},
        {"bidi \xe2\x80\xae", "bidi \\u202e"},
        {"bad \xff \xc3", "bad \\xff \\xc3"},
        {"overlong \xc0\xaf", "overlong \\xc0\\xaf"},
        {"surrogate \xed\xa0\x80", "surrogate \\xed\\xa0\\x80"},
        {"emoji \xf0\x9f\x98\x80", "emoji \xf0\x9f\x98\x80"},
    };
    for (const auto & [in, out] : rows) EXPECT_EQ(kvfit::printable(in), out) << in;
    EXPECT_EQ(kvfit::printable("a\nb", false), "a\\x0ab");
    EXPECT_EQ(kvfit::utf8_incomplete_tail("ab\xe4\xb8"), 2u);
    EXPECT_EQ(kvfit::utf8_incomplete_tail("ab\xe4\xb8\xad"), 0u);
    EXPECT_EQ(kvfit::utf8_incomplete_tail("ab\xff"), 0u);
}

// The layer limit: 4096, stated in the sources' messages.
TEST(cli_conventions, layer_limit) {
    scratch_dir dir("cc_layers");
    auto config = [&](int n) {
        const std::string p = dir.file("l" + std::to_string(n) + ".json");
        std::ofstream(p) << json{{"model_type", "llama"}, {"hidden_size", 256}, {"num_hidden_layers", n},
                                 {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"vocab_size", 1000},
                                 {"intermediate_size", 512}, {"max_position_embeddings", 4096}}.dump();
        return p;
    };
    EXPECT_EQ(run_kvfit(config(4096) + " -c 4096 --json").status, 0);
    EXPECT_EQ(run_kvfit(config(4097)).err, "kvfit: " + dir.file("l4097.json") + ": key 'num_hidden_layers': too large (at most 4096), got 4097\n");
    kvfit::gguf_writer w = model_writer("llama", 4097);
    std::ofstream(dir.file("deep.gguf"), std::ios::binary) << w.header();
    const auto g = run_kvfit(dir.file("deep.gguf"));
    EXPECT_EQ(g.status, 2);
    EXPECT_NE(g.err.find("block_count"), std::string::npos) << g.err;
    EXPECT_NE(g.err.find("out of range 1-4096"), std::string::npos) << g.err;
}

} // namespace
