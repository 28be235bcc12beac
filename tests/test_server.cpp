// `kvfit serve` (issue 9): the API returns the CLI's --json byte for byte, bad input gives the CLI's one-line
// message with a 4xx and the server keeps serving, uploads have a limit, and a short loopback load test.
#include "kvfit/error.h"
#include "kvfit/gguf_writer.h"
#include "kvfit/runtime.h"
#include "kvfit/server.h"
#include "support/gguf_fixture.h"
#include "support/run_cli.h"

#include "kvfit/sources.h"

#include <atomic>
#include <fstream>
#include <chrono>
#include <csignal>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <thread>

namespace {

using kvfit::test::run_kvfit;
using kvfit::test::write_temp;
using json = nlohmann::json;

// A server on a free loopback port, run on its own thread for the test's lifetime.
struct live_server {
    kvfit::server_options opt;
    std::unique_ptr<kvfit::server> srv;
    std::thread thread;
    int port = 0;
    explicit live_server(kvfit::server_options o = {}) : opt(std::move(o)) {
        opt.port = 0;
        std::signal(SIGPIPE, SIG_IGN); // a client still sending when the server has answered (an early 413) and closed
        srv = std::make_unique<kvfit::server>(opt);
        port = srv->bind();
        thread = std::thread([this] { srv->run(); });
        httplib::Client c("127.0.0.1", port);
        for (int i = 0; i < 200 && !c.Get("/v1/models"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ~live_server() {
        srv->stop();
        thread.join();
    }
    httplib::Client client() const {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(30);
        return c;
    }
};

std::string base64(const std::string & in) {
    static const char * t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
        for (int s = 18; s >= 0; s -= 6) out += t[(v >> s) & 63];
    }
    if (i + 1 == in.size()) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16;
        out += {t[(v >> 18) & 63], t[(v >> 12) & 63], '=', '='};
    } else if (i + 2 == in.size()) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8;
        out += {t[(v >> 18) & 63], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
    }
    return out;
}

struct same_case {
    std::string cli;   // kvfit flags
    json body;         // the same request over HTTP
};

TEST(server, plan_is_the_cli_json_byte_for_byte) {
    const std::string cfg_text =
        R"({"model_type":"llama","hidden_size":2048,"num_hidden_layers":16,"num_attention_heads":32,)"
        R"("num_key_value_heads":8,"vocab_size":32000,"intermediate_size":8192,"max_position_embeddings":8192})";
    const std::string cfg = write_temp("api_config.json", cfg_text);
    kvfit::gguf_writer w = kvfit::test::model_writer("llama", 4);
    w.add("llama.attention.head_count", kvfit::gguf_wvalue::u32(8));
    w.add("llama.attention.head_count_kv", kvfit::gguf_wvalue::u32(2));
    const std::string gguf = write_temp("api_model.gguf", w.header());
    const same_case cases[] = {
        {"", json::object()},
        {"Qwen3.5-9B --gpu 8GiB --weights-size 6.6GB",
         {{"model", "Qwen3.5-9B"}, {"gpu", "8GiB"}, {"weights_size", "6.6GB"}}},
        {"Qwen3.5-9B -c 8192 -ctk q8_0 -ctv q8_0 --gpu 8GiB --weights-size 6.6GB",
         {{"model", "Qwen3.5-9B"}, {"ctx_size", {8192}}, {"cache_type_k", "q8_0"}, {"cache_type_v", "q8_0"}, {"gpu", "8GiB"},
          {"weights_size", "6.6GB"}}},
        {"Qwen3.5-9B -c 8192,32768 -np 4 -ub 256 -fa off --gpu 'RTX 4060' --weights q4_k_m --margin 512MiB",
         {{"model", "Qwen3.5-9B"}, {"ctx_size", "8192,32768"}, {"parallel", 4}, {"ubatch_size", 256}, {"flash_attn", "off"},
          {"gpu", "RTX 4060"}, {"weights", "q4_k_m"}, {"margin", "512MiB"}}},
        {"Qwen3.5-27B --gpu 2x24GiB -ts 3,1 --kv-unified -np 2",
         {{"model", "Qwen3.5-27B"}, {"gpu", "2x24GiB"}, {"tensor_split", "3,1"}, {"kv_unified", true}, {"parallel", "2"}}},
        // every runtime of the registry through the same door, by its flags' JSON names
        {"Qwen3.5-27B --runtime vllm --gpu 2xH100 -tp 2 --max-model-len 65536 --enable-prefix-caching",
         {{"runtime", "vllm"}, {"model", "Qwen3.5-27B"}, {"gpu", "2xH100"}, {"tensor_parallel_size", 2},
          {"max_model_len", 65536}, {"enable_prefix_caching", true}}},
        {"Qwen3.5-9B --runtime ollama --gpu 'RTX 4090' --num-parallel 4",
         {{"runtime", "ollama"}, {"model", "Qwen3.5-9B"}, {"gpu", "RTX 4090"}, {"num_parallel", "4"}}},
        {"Qwen3-8B --runtime mlx --gpu 'M4 Max 64GB' --q-bits 4 --context-tokens 32768",
         {{"runtime", "mlx"}, {"model", "Qwen3-8B"}, {"gpu", "M4 Max 64GB"}, {"q_bits", 4}, {"context_tokens", 32768}}},
        // uploads named like the CLI's path give the CLI's document (the name is the model's source)
        {cfg, {{"config", cfg_text}, {"upload_name", cfg}}},
        {gguf + " --gpu 4GiB", {{"gguf_base64", base64(w.header())}, {"upload_name", gguf}, {"gpu", "4GiB"}}},
    };
    live_server s;
    auto c = s.client();
    for (size_t i = 0; i < std::size(cases); ++i) {
        const json & body = cases[i].body;
        const auto cli = run_kvfit(cases[i].cli + " --json");
        ASSERT_TRUE(cli.status == 0 || cli.status == 3) << cases[i].cli << ": " << cli.err;
        const auto res = c.Post("/v1/plan", body.dump(), "application/json");
        ASSERT_TRUE(res) << cases[i].cli;
        EXPECT_EQ(res->status, 200) << cases[i].cli << ": " << res->body;
        EXPECT_EQ(res->body, cli.out) << cases[i].cli; // bytes, not parsed JSON
        EXPECT_EQ(kvfit::handle_plan(body.dump(), s.opt).body, cli.out) << cases[i].cli;
    }
}

struct bad_case {
    const char * name;
    std::string body;  // POST /v1/plan body
    const char * cli;  // the same mistake on the command line ("" when the CLI has no such input)
    int status;
    const char * message; // substring of the error (when cli is "")
};

TEST(server, bad_input_gives_4xx_with_the_cli_message_and_the_server_keeps_serving) {
    const std::string not_json = write_temp("api_not_json.json", "{ this is not json");
    std::string many_zeros; // ",0" x 299,999: a 600 KB body of 300,000 values
    for (int i = 1; i < 300000; ++i) many_zeros += ",0";
    const bad_case cases[] = {
        {"-c 0", R"({"ctx_size": 0})", "-c 0", 400, ""},
        {"-c -1", R"({"ctx_size": [-1]})", "-c -1", 400, ""},
        {"-c abc", R"({"ctx_size": "abc"})", "-c abc", 400, ""},
        {"-c huge", R"({"ctx_size": 99999999999})", "-c 99999999999", 400, ""},
        {"unknown cache type", R"({"cache_type_k": "q9_9"})", "-ctk q9_9", 400, ""},
        {"quantized V without FA", R"({"cache_type_v": "q8_0", "flash_attn": "off"})", "-ctv q8_0 -fa off", 400, ""},
        {"-fa maybe", R"({"flash_attn": "maybe"})", "-fa maybe", 400, ""},
        {"-np absurd", R"({"parallel": 100000})", "-np 100000", 400, ""},
        {"bad gpu", R"({"gpu": "8XB"})", "--gpu 8XB", 400, ""},
        {"absurd gpu size", R"({"gpu": "99999999TiB"})", "--gpu 99999999TiB", 400, ""},
        {"bad margin", R"({"margin": "lots"})", "--margin lots", 400, ""},
        {"bad weights", R"({"weights": "q3_x"})", "--weights q3_x", 400, ""},
        {"bad -ts", R"({"gpu": "2x8GiB", "tensor_split": "3,x"})", "--gpu 2x8GiB -ts 3,x", 400, ""},
        {"config not json", R"({"config": "{ this is not json", "upload_name": ")" + not_json + "\"}", not_json.c_str(), 400, ""},
        {"malformed body", R"({"model": )", "", 400, "request: not valid JSON: "},
        {"not an object", R"([1, 2])", "", 400, "request: expected a JSON object, got array"},
        {"unknown field", R"({"ctx": 8192})", "", 400, "request: unknown field 'ctx' (known: model, "},
        {"wrong type", R"({"kv_unified": "yes"})", "", 400, "request: field 'kv_unified': expected true or false, got string"},
        {"object as flag", R"({"gpu": {"a": 1}})", "", 400, "request: field 'gpu': expected a string or a number, got object"},
        {"a path, not a catalog name", R"({"model": "/etc/passwd"})", "", 400, "/etc/passwd: no such catalog model"},
        {"two models", R"({"model": "Qwen3.5-9B", "config": "{}"})", "", 400, "request: give one of 'model', 'config' or 'gguf_base64'"},
        {"gguf not base64", R"({"gguf_base64": "@@@@"})", "", 400, "upload.gguf: byte 0: not base64"},
        {"gguf not gguf", R"({"gguf_base64": "AAAAAAAA"})", "", 400, "upload.gguf"},
        {"upload over the limit", R"({"config": ")" + std::string(17u << 20, ' ') + "\"}", "", 413,
         "config.json: 17825792 bytes exceeds the upload limit of 16777216 bytes"},
        // bounded parse (issue 25): refused as read, never stored whole
        {"300,000 numbers", R"({"model": "Qwen3.5-9B", "x": [0)" + many_zeros + "]}", "", 400,
         "request: more than 262144 JSON values in the keys kvfit reads"},
        {"nested too deep", R"({"model": )" + std::string(40, '[') + std::string(40, ']') + "}", "", 400,
         "request: JSON nested deeper than 32 levels"},
        // a field given twice: the CLI refuses an option given twice, so the body does too (was: the last one won)
        {"a field twice", R"({"gpu": "8GiB", "model": "Qwen3-8B", "gpu": "24GiB"})", "", 400, "request: member 'gpu' given twice"},
    };
    live_server s;
    auto c = s.client();
    for (const auto & k : cases) {
        const auto res = c.Post("/v1/plan", k.body, "application/json");
        ASSERT_TRUE(res) << k.name;
        EXPECT_EQ(res->status, k.status) << k.name << ": " << res->body;
        const json j = json::parse(res->body);
        const std::string message = j["error"];
        if (*k.cli) {
            const auto cli = run_kvfit(std::string(k.cli) + " --json");
            EXPECT_EQ(cli.status, 2) << k.name;
            EXPECT_EQ("kvfit: " + message + "\n", cli.err) << k.name; // the same one line
        } else {
            EXPECT_NE(message.find(k.message), std::string::npos) << k.name << ": " << message;
        }
        EXPECT_EQ(message.find('\n'), std::string::npos) << k.name;
        const auto alive = c.Get("/v1/models");
        ASSERT_TRUE(alive) << "server stopped after " << k.name;
        EXPECT_EQ(alive->status, 200);
    }
}

// A config sent as an object is read as the CLI reads the file: members kvfit does not keep (id2label here, 300,000
// values) are read past and not counted, so the body plans as the CLI plans the same text (it was 400, "more than
// 262144 JSON values in the keys kvfit reads").
TEST(server, a_config_object_counts_only_the_keys_kvfit_reads) {
    json cfg = json::parse(R"({"model_type":"llama","hidden_size":2048,"num_hidden_layers":16,"num_attention_heads":32,)"
                           R"("num_key_value_heads":8,"vocab_size":32000,"intermediate_size":8192,"max_position_embeddings":8192})");
    cfg["id2label"] = json::array();
    for (int i = 0; i < 300000; ++i) cfg["id2label"].push_back(0);
    const std::string path = write_temp("api_config_big.json", cfg.dump());
    const auto cli = run_kvfit(path + " --gpu 8GiB --json");
    ASSERT_EQ(cli.status, 0) << cli.err;
    kvfit::server_options o;
    const auto res = kvfit::handle_plan(json{{"config", cfg}, {"upload_name", path}, {"gpu", "8GiB"}}.dump(), o);
    EXPECT_EQ(res.status, 200) << res.body.substr(0, 300);
    EXPECT_EQ(res.body, cli.out);
}

TEST(server, body_over_the_limit_is_413_and_unknown_paths_404) {
    kvfit::server_options o;
    o.max_body_bytes = 1u << 20;
    live_server s(o);
    auto c = s.client();
    const auto big = c.Post("/v1/plan", std::string(2u << 20, ' '), "application/json");
    ASSERT_TRUE(big);
    EXPECT_EQ(big->status, 413);
    EXPECT_NE(big->body.find("body exceeds the limit of 1048576 bytes"), std::string::npos) << big->body;
    const auto missing = c.Get("/no/such/page");
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    EXPECT_EQ(missing->body, "{\"error\":\"/no/such/page: no such page\"}\n");
    const auto dotdot = c.Get("/../CMakeLists.txt");
    ASSERT_TRUE(dotdot);
    EXPECT_EQ(dotdot->status, 404);
    const auto ok = c.Get("/v1/gpus");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
}

TEST(server, page_models_and_gpus) {
    live_server s;
    auto c = s.client();
    const auto page = c.Get("/");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
    EXPECT_NE(page->body.find("<title>kvfit"), std::string::npos);
    // every asset the page names is served
    const std::string prefix = "./assets/";
    for (size_t at = page->body.find(prefix); at != std::string::npos; at = page->body.find(prefix, at + 1)) {
        const std::string name = page->body.substr(at + 2, page->body.find('"', at) - at - 2);
        const auto a = c.Get(("/" + name).c_str());
        ASSERT_TRUE(a) << name;
        EXPECT_EQ(a->status, 200) << name;
    }
    const json models = json::parse(c.Get("/v1/models")->body);
    EXPECT_EQ(models[0]["name"], "Qwen3.5-9B");
    EXPECT_EQ(models[0]["hf_id"], "Qwen/Qwen3.5-9B");
    const json runtimes = json::parse(c.Get("/v1/runtimes")->body);
    ASSERT_EQ(runtimes.size(), kvfit::runtimes().size());
    EXPECT_EQ(runtimes[0]["name"], "llama.cpp");
    EXPECT_EQ(runtimes[1]["context_flag"], "max_model_len");
    bool tp = false;
    for (const auto & f : runtimes[1]["flags"]) tp = tp || (f["name"] == "tensor_parallel_size" && f["alias"] == "-tp");
    EXPECT_TRUE(tp);
    // the flag table's other fields: every spelling, the value's name, the shared setting, the engine's own name
    bool alternate = false, ollama_env = false, metavar = false;
    for (const auto & rt : runtimes) {
        for (const auto & f : rt["flags"]) {
            ASSERT_TRUE(f.contains("alternates") && f.contains("metavar") && f.contains("setting") && f.contains("engine_name")) << f;
            if (rt["name"] == "llama.cpp" && f["flag"] == "--ctx-checkpoints") {
                for (const auto & a : f["alternates"]) alternate = alternate || a == "--swa-checkpoints";
            }
            if (rt["name"] == "llama.cpp" && f["flag"] == "--ctx-size") metavar = f["metavar"] == "INT[,INT...]";
            if (rt["name"] == "ollama" && f["engine_name"] == "OLLAMA_NUM_PARALLEL") ollama_env = true;
        }
    }
    EXPECT_TRUE(alternate);
    EXPECT_TRUE(ollama_env);
    EXPECT_TRUE(metavar);
    const json gpus = json::parse(c.Get("/v1/gpus")->body);
    bool found = false;
    for (const auto & g : gpus) {
        found = found || (g["name"] == "RTX 4060" && g["memory_bytes"] == (7782ull << 20) && g["marketed_gb"] == 8 &&
                          g["reported_bytes"] == (8188ull << 20));
        // a Mac: its unified RAM, and the working set the Mac runtimes budget (2/3 of 24 GiB)
        if (g["name"] == "M4 Pro 24GB") {
            EXPECT_EQ(g["memory_bytes"], 24ull << 30);
            EXPECT_EQ(g["working_set_bytes"], 16ull << 30);
        }
        if (g["vendor"] != "Apple") EXPECT_FALSE(g.contains("working_set_bytes")) << g["name"];
    }
    EXPECT_TRUE(found);
    const auto chart = c.Post("/v1/chart", R"({"model":"Qwen3.5-9B","gpu":"8GiB","weights_size":"6.6GB"})", "application/json");
    ASSERT_TRUE(chart);
    const json cj = json::parse(chart->body);
    EXPECT_EQ(cj["chart"]["max_n_ctx"], 44800); // llama-server's 1 output (server_output_limits)
    EXPECT_EQ(cj["compare"]["curves"].size(), 4u);
}

TEST(server, listens_on_loopback_unless_asked) {
    EXPECT_EQ(kvfit::server_options{}.host, "127.0.0.1");
    kvfit::server_options o;
    o.port = 0;
    o.host = "256.1.1.1";
    kvfit::server bad(o);
    EXPECT_THROW(bad.bind(), kvfit::error);
}

// 500 requests from 4 client threads on loopback, against a server with 2 worker threads and few connections:
// every answer is right. No timing is asserted (speed is bench/'s); CTest's timeout is the hang guard.
TEST(server, bounded_load_test_on_loopback) {
    kvfit::server_options o;
    o.n_threads = 2;
    o.max_connections = 8;
    live_server s(o);
    // a plan of milliseconds (qwen2: stage estimates, no graph replay; Qwen3-8B's plan replays the qwen3 template since
    // it has one, 40x slower under the sanitizers) keeps the requests, not the planning, the load
    const std::string body = R"({"model":"Qwen2.5-7B","gpu":"8GiB","ctx_size":8192})";
    const std::string expected = kvfit::handle_plan(body, s.opt).body;
    ASSERT_NE(expected.find("\"schema_version\""), std::string::npos) << expected.substr(0, 200);
    std::atomic<int> ok{0}, wrong{0};
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> clients;
    for (int t = 0; t < 4; ++t) {
        clients.emplace_back([&, t] {
            auto c = s.client();
            for (int i = 0; i < 125; ++i) {
                const bool plan = (i + t) % 5 != 0;
                const auto res = plan ? c.Post("/v1/plan", body, "application/json") : c.Get("/v1/models");
                const bool good = res && res->status == 200 && (!plan || res->body == expected);
                (good ? ok : wrong)++;
            }
        });
    }
    for (auto & t : clients) t.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(ok.load(), 500) << "wrong: " << wrong.load();
    std::printf("load test: 500 requests over 4 threads in %.2f s\n", seconds);
}

} // namespace

namespace {

// Every example command in docs/api.md runs against a live server (STYLE.md: docs examples run in CI), in a
// scratch directory holding the config.json and model.gguf the examples upload.
TEST(server, docs_api_examples_run) {
    std::ifstream doc(std::string(KVFIT_TEST_DATA) + "/../../docs/api.md");
    ASSERT_TRUE(doc);
    kvfit::test::scratch_dir dir("api_examples");
    std::ofstream(dir.file("config.json")) << kvfit::find_catalog("Qwen3-8B")->config_json;
    std::ofstream(dir.file("body.json")) << R"({"model": "Qwen3.5-9B", "gpu": "8GiB", "weights_size": "6.6GB"})";
    // 12,000 tokens: a 110 KiB header, so the upload example sends curl -d's form encoding over 8 KiB
    kvfit::gguf_writer w = kvfit::test::model_writer("llama", 4, 256, 12000);
    w.add("llama.attention.head_count", kvfit::gguf_wvalue::u32(8));
    w.add("llama.attention.head_count_kv", kvfit::gguf_wvalue::u32(2));
    std::ofstream(dir.file("model.gguf"), std::ios::binary) << w.header();
    ASSERT_GT(w.header().size(), 100u << 10);
    live_server s;
    int n = 0;
    for (std::string line; std::getline(doc, line);) {
        if (line.rfind("curl ", 0) != 0 && line.rfind("{ printf", 0) != 0) continue;
        for (size_t at; (at = line.find(":8080/")) != std::string::npos;) line.replace(at, 6, ":" + std::to_string(s.port) + "/");
        const std::string out = dir.file("out" + std::to_string(n++));
        const int rc = std::system(("cd " + dir.path.string() + " && (" + line + ") > " + out).c_str());
        EXPECT_EQ(rc, 0) << line;
        std::ifstream in(out);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const bool error_example = line.find("\"ctx_size\": 0") != std::string::npos;
        if (error_example) {
            EXPECT_EQ(text, "{\"error\":\"-c 0: must be at least 1\"}\n HTTP 400\n") << line;
        } else {
            EXPECT_TRUE(json::accept(text)) << line << "\n" << text.substr(0, 300);
            EXPECT_EQ(text.find("\"error\""), std::string::npos) << line << "\n" << text.substr(0, 300);
        }
    }
    EXPECT_EQ(n, 12);
}

} // namespace
