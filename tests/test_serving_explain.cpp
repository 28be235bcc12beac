// Issue 27 items 2 and 3: `kvfit explain` for vLLM, SGLang, Ollama and mlx-lm logs, and the serving-log corpus
// (tests/data/serving_logs, INDEX.md) reproduced through it. Each corpus file's header names its source, launch and
// model, a "# kvfit:" line the explain arguments (the model config, and what the log does not print, as --gpu and
// --assume KEY=VALUE, each marked inferred in the header), and "# known:" lines the rows kvfit is known to miss, each
// with its cause. Every other row must match: the pool at the log's budget exactly (within the rounding of the
// printed budget), kvfit's own budget within 2 %, and the start verdict.
#include "kvfit/error.h"
#include "kvfit/plan.h"
#include "kvfit/serving_log.h"
#include "kvfit/sources.h"
#include "support/files.h"
#include "support/run_cli.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <optional>
#include <regex>
#include <sstream>

namespace {

namespace fs = std::filesystem;

struct corpus_file {
    std::string name, text;
    std::vector<std::string> args;      // the "# kvfit:" line, split (double quotes group words)
    std::vector<std::string> known;     // "# known: <row> | <cause>": the rows' names
    std::vector<std::optional<double>> known_error; // the cause's leading "+x.y %" / "-x.y %": kvfit's stated error
};

/// A figure of an explain row as a number in one unit: "21.70 GB", "2.07 GiB", "1,496,958" (commas dropped). nullopt
/// when the row's text is not a number (a verdict, a word).
std::optional<std::pair<double, std::string>> figure(const std::string & text) {
    std::string digits;
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == ',')) {
        if (text[i] != ',') digits += text[i];
        ++i;
    }
    if (digits.empty()) return std::nullopt;
    while (i < text.size() && text[i] == ' ') ++i;
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    return std::make_pair(std::stod(digits), unit);
}

/// "-20.9 %: ..." or "-3.2 % (0.17 GB): ..." -> -20.9; nullopt when the cause does not start with a percentage.
std::optional<double> stated_error(const std::string & cause) {
    std::smatch m;
    static const std::regex pct("^([+-][0-9]+(\\.[0-9]+)?) %");
    if (!std::regex_search(cause, m, pct)) return std::nullopt;
    return std::stod(m[1]);
}

std::vector<std::string> split_args(const std::string & s) {
    std::vector<std::string> out;
    std::istringstream words(s);
    for (std::string w; words >> w;) {
        if (w.front() != '"') {
            out.push_back(w);
            continue;
        }
        std::string group = w; // "H100 SXM": words up to the closing quote
        for (std::string more; (group.size() < 2 || group.back() != '"') && words >> more;) group += " " + more;
        out.push_back(group.substr(1, group.size() - 2));
    }
    return out;
}

std::vector<corpus_file> corpus() {
    std::vector<corpus_file> out;
    for (const auto & e : fs::directory_iterator(fs::path(KVFIT_TEST_DATA) / "serving_logs")) {
        if (e.path().extension() != ".log") continue;
        corpus_file f;
        f.name = e.path().filename().string();
        f.text = kvfit::test::read_text(e.path().string());
        std::istringstream lines(f.text);
        for (std::string l; std::getline(lines, l);) {
            if (l.rfind("# kvfit: ", 0) == 0) f.args = split_args(l.substr(9));
            if (l.rfind("# known: ", 0) == 0) {
                f.known.push_back(l.substr(9, l.find(" | ") - 9));
                f.known_error.push_back(l.find(" | ") == std::string::npos ? std::nullopt
                                                                             : stated_error(l.substr(l.find(" | ") + 3)));
            }
        }
        out.push_back(std::move(f));
    }
    std::sort(out.begin(), out.end(), [](const auto & a, const auto & b) { return a.name < b.name; });
    return out;
}

std::string model_path(const std::string & spec) {
    if (spec.rfind("shared:", 0) == 0) return std::string(KVFIT_SHARED_DIR) + "/configs/" + spec.substr(7);
    if (spec.rfind("data:", 0) == 0) return std::string(KVFIT_TEST_DATA) + "/configs/" + spec.substr(5);
    return spec;
}

struct explained {
    kvfit::serving_log log;
    kvfit::explanation e;
    std::string text;
};

explained explain(const corpus_file & f) {
    std::string model;
    kvfit::serving_inputs in;
    for (size_t i = 0; i + 1 < f.args.size(); i += 2) {
        if (f.args[i] == "-m") model = model_path(f.args[i + 1]);
        else if (f.args[i] == "--gpu") in.gpu = f.args[i + 1];
        else if (f.args[i] == "--assume") {
            const std::string & a = f.args[i + 1];
            in.assumed.emplace_back(a.substr(0, a.find('=')), a.substr(a.find('=') + 1));
        } else ADD_FAILURE() << f.name << ": unknown argument " << f.args[i];
    }
    explained x;
    x.log = kvfit::parse_serving_log(std::string_view(f.text));
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::load_model(model, warn);
    kvfit::apply_request_weights(m, kvfit::plan_request{}, kvfit::find_runtime(kvfit::serving_engine_runtime(x.log.engine)), warn);
    x.e = kvfit::explain_serving_log(x.log, m, in);
    x.text = kvfit::render_serving_explanation(x.log, m, x.e);
    return x;
}

// Every corpus file: its source and launch stated; every row kvfit compares matches unless named as a known miss (and a
// known miss must still differ, so that a fix is noticed); the start verdict compared in every file.
TEST(serving_explain, corpus_reproduced) {
    const auto files = corpus();
    EXPECT_GE(files.size(), 30u); // issue 27's corpus of at least 30 public startup logs (INDEX.md)
    size_t explained_files = 0, by_engine[4] = {0, 0, 0, 0}, stated_misses = 0;
    for (const auto & f : files) {
        SCOPED_TRACE(f.name);
        EXPECT_EQ(f.text.rfind("# source: https://", 0), 0u);
        EXPECT_NE(f.text.find("\n# launch"), std::string::npos);
        EXPECT_NE(f.text.find("\n# model: "), std::string::npos);
        if (f.args.empty()) continue; // reproduced by serving_logs.corpus / serving_cases (a budget the log does not print)
        const explained x = explain(f);
        ++explained_files;
        by_engine[int(x.log.engine)] += 1;
        bool verdict = false;
        for (const auto & r : x.e.rows) {
            verdict |= r.what == "start";
            const auto k = std::find(f.known.begin(), f.known.end(), r.what);
            const bool known = k != f.known.end();
            if (known) EXPECT_FALSE(r.same) << "known miss now matches: " << r.what << "\n" << x.text;
            // a known miss whose cause states kvfit's error ("-20.9 %") must still be that error (within 0.15
            // points, the rounding of the printed figures), so that a miss growing or shrinking is noticed
            if (known && f.known_error[size_t(k - f.known.begin())]) {
                const double stated = *f.known_error[size_t(k - f.known.begin())];
                const auto lg = figure(r.log), kv = figure(r.kvfit);
                if (lg && kv && lg->second == kv->second && lg->first > 0) {
                    const double err = 100.0 * (kv->first - lg->first) / lg->first;
                    EXPECT_NEAR(err, stated, 0.15) << r.what << ": log " << r.log << ", kvfit " << r.kvfit
                                                   << ": the known line states " << stated << " %";
                } else {
                    ADD_FAILURE() << r.what << ": the known line states " << stated << " % but the row's figures ("
                                  << r.log << " / " << r.kvfit << ") are not comparable numbers";
                }
                ++stated_misses;
            }
            if (!known) EXPECT_TRUE(r.same) << r.what << ": log " << r.log << ", kvfit " << r.kvfit << " (" << r.note << ")\n" << x.text;
            if (!r.same) EXPECT_FALSE(r.note.empty()) << r.what << ": a difference without its cause";
        }
        EXPECT_TRUE(verdict) << x.text;
        EXPECT_GE(x.e.rows.size(), 2u) << x.text;
        EXPECT_EQ(x.text.find(": )"), std::string::npos) << "a term printed without its basis\n" << x.text;
    }
    EXPECT_GE(explained_files, 10u);
    EXPECT_GE(stated_misses, 10u); // the mlx-lm peaks and vLLM's budget: each known miss with its measured error
    EXPECT_GE(by_engine[0], 8u);  // vLLM
    EXPECT_GE(by_engine[1], 8u);  // SGLang: 0.4.x (2025-01 to 03), 0.5.x (2025-12, 2026-02) and main of 2026
    EXPECT_GE(by_engine[2], 3u);  // mlx-lm
    EXPECT_GE(by_engine[3], 2u);  // Ollama
}

const kvfit::explain_row * row(const explained & x, const std::string & what) {
    for (const auto & r : x.e.rows) {
        if (r.what == what) return &r;
    }
    return nullptr;
}

explained explain_file(const std::string & name) {
    for (const auto & f : corpus()) {
        if (f.name == name) return explain(f);
    }
    ADD_FAILURE() << name << ": not in the corpus";
    return {};
}

// A 2026 log whose server_args prints disable_piecewise_cuda_graph=True: explain reads the flag from the log, and
// SGLang's default fraction leaves the piecewise reserve out (0.857 on the B200, not 0.854). The text is the
// skill0427 log with that one argument added to its (elided) server_args line, so the logged pool, of a run that did
// reserve 74 x 8 MiB, is no longer the pool at the fraction: +0.4 %, within the 2 % of a derived budget, and said.
TEST(serving_explain, sglang_piecewise_flag_read_from_the_log) {
    for (auto f : corpus()) {
        if (f.name != "sglang-skill0427_qwen3-8b_b200.log") continue;
        const std::string from = "ServerArgs(model_path='Qwen/Qwen3-8B', ...)";
        ASSERT_NE(f.text.find(from), std::string::npos);
        f.text.replace(f.text.find(from), from.size(),
                       "ServerArgs(model_path='Qwen/Qwen3-8B', disable_piecewise_cuda_graph=True, ...)");
        const explained x = explain(f);
        bool read = false, fraction = false;
        for (const auto & n : x.e.notes) {
            read |= n.find("disable_piecewise_cuda_graph=true") != std::string::npos ||
                    n.find("disable_piecewise_cuda_graph=True") != std::string::npos;
            fraction |= n.find("--mem-fraction-static 0.857: not in the log") != std::string::npos &&
                        n.find("piecewise CUDA graphs off: --disable-piecewise-cuda-graph") != std::string::npos;
        }
        EXPECT_TRUE(read) << x.text;
        EXPECT_TRUE(fraction) << x.text;
        const auto * r = row(x, "KV cache #tokens (SGLang's default fraction)");
        ASSERT_NE(r, nullptr) << x.text;
        EXPECT_TRUE(r->same) << x.text;
        EXPECT_NE(r->note.find("within 2 %, +0.4 %"), std::string::npos) << r->note;
        return;
    }
    ADD_FAILURE() << "sglang-skill0427_qwen3-8b_b200.log: not in the corpus";
}

// The logs added for issue 27's named cases and the 30-log corpus, with their figures: the pool at the logged budget
// exactly (vLLM 0.24 / 2026 rules on Qwen3.6-27B FP8 and Qwen3.8-27B FP8, TP 2, MTP 3), Ollama's KV estimate and
// layer count exactly, and the mlx-lm 0.31 peaks of Qwen3.6-35B-A3B 4-bit as the known misses they are, with their
// measured error (issue 27: -4 % at 8K, +28 % at 192K; kvfit now: -3.9 % and +30.0 %).
TEST(serving_explain, issue27_added_logs) {
    {
        const auto x = explain_file("vllm-club3090-594_qwen36-27b-fp8_2x3090.log");
        EXPECT_EQ(x.log.version, "0.24.0");
        ASSERT_NE(row(x, "GPU KV cache size (tokens)"), nullptr);
        EXPECT_EQ(row(x, "GPU KV cache size (tokens)")->log, "300,220");
        EXPECT_TRUE(row(x, "GPU KV cache size (tokens)")->same) << x.text;
        EXPECT_TRUE(row(x, "maximum concurrency")->same) << x.text;
    }
    {
        const auto x = explain_file("vllm-club3090-998_qwen38-27b-fp8_2x5090.log");
        ASSERT_NE(row(x, "GPU KV cache size (tokens)"), nullptr);
        EXPECT_EQ(row(x, "GPU KV cache size (tokens)")->log, "705,884");
        EXPECT_TRUE(row(x, "GPU KV cache size (tokens)")->same) << x.text;
    }
    for (const char * name : {"ollama-8098_llama32-3b_h100.log", "ollama-7622_llama3-8b_cpu-runner.log"}) {
        SCOPED_TRACE(name);
        const auto x = explain_file(name);
        EXPECT_EQ(x.log.engine, kvfit::serving_engine::ollama);
        ASSERT_NE(x.log.arg("ctx_size"), nullptr);
        EXPECT_EQ(x.log.arg("ctx_size")->text, "8192");
        EXPECT_EQ(x.log.arg("parallel")->text, "4");
        const auto * kv = row(x, "KV cache (memory.required.kv)");
        ASSERT_NE(kv, nullptr) << x.text;
        EXPECT_TRUE(kv->same) << x.text;
        EXPECT_TRUE(row(x, "layers (blocks + output)")->same) << x.text;
        EXPECT_TRUE(row(x, "layers on the GPU")->same) << x.text;
        EXPECT_TRUE(row(x, "start")->same) << x.text;
        EXPECT_NE(x.text.find("the Ollama log beside kvfit's plan"), std::string::npos) << x.text;
    }
    EXPECT_EQ(row(explain_file("ollama-8098_llama32-3b_h100.log"), "KV cache (memory.required.kv)")->kvfit, "896.0 MiB");
    EXPECT_EQ(row(explain_file("ollama-7622_llama3-8b_cpu-runner.log"), "KV cache (memory.required.kv)")->kvfit, "1.0 GiB");
    // the mlx-lm 0.31.3 ladder of mlx-lm #1480: the measured error of kvfit's peak, as the corpus files' known lines say
    auto peak_error = [](const explained & x) {
        const auto * r = row(x, "peak memory (mx.get_peak_memory)");
        if (!r) return 0.0;
        return (std::stod(r->kvfit) - std::stod(r->log)) / std::stod(r->log) * 100;
    };
    // MLX's unfused attention holds one score matrix (mask and softmax are donated into it; docs/rules/mlx.md §6): the
    // growth between the rows is kvfit's, the constant 1.1-1.4 GB under both is not the prefill.
    const double low = peak_error(explain_file("mlx-1480-8k_qwen36-35b-a3b-4bit_m5max.log"));
    const double high = peak_error(explain_file("mlx-1480-192k_qwen36-35b-a3b-4bit_m5max.log"));
    EXPECT_NEAR(low, -6.3, 0.1);
    EXPECT_NEAR(high, -2.8, 0.1);
    // peak growth 8K -> 192K: the log's 38.0 - 21.7 = 16.3 GB; kvfit's within 2 % of it
    const double grown_log = 38.0 - 21.7, grown_kvfit = 38.0 * (1 + high / 100) - 21.7 * (1 + low / 100);
    EXPECT_NEAR(grown_kvfit / grown_log, 1.0, 0.02);
}

// Issue 27's last two named cases, from their public logs: Gemma-4-31B's pool under vLLM (hf-mem PR #61: 26,800 tokens at
// the logged 24.54 GiB, the pre-v0.21 token line) and MiniMax-M2.1 under SGLang with the routed experts on the CPU
// (ktransformers #1757: 23,063 tokens at the logged "available memory for KV cache" of 5.45 GB, K buffer 2.73 GB; the
// GPU share of the weights is the known miss it is, and kvfit's own budget is not derived: no --mem-fraction-static).
TEST(serving_explain, issue27_gemma4_31b_and_minimax_m21) {
    {
        const auto x = explain_file("vllm-hfmem61_gemma4-31b.log");
        EXPECT_EQ(x.log.engine, kvfit::serving_engine::vllm);
        const auto * r = row(x, "GPU KV cache size (tokens)");
        ASSERT_NE(r, nullptr) << x.text;
        EXPECT_EQ(r->log, "26,800");
        EXPECT_TRUE(r->same) << x.text;
        EXPECT_TRUE(row(x, "start")->same) << x.text;
    }
    {
        const auto x = explain_file("sglang-kt1757_minimax-m21_cpu-experts_rtxpro6000.log");
        EXPECT_EQ(x.log.engine, kvfit::serving_engine::sglang);
        ASSERT_NE(x.log.figure("kv_avail_gb"), nullptr);
        EXPECT_EQ(x.log.figure("kv_avail_gb")->text, "5.45");
        const auto * r = row(x, "KV cache #tokens at the log's budget");
        ASSERT_NE(r, nullptr) << x.text;
        EXPECT_EQ(r->log, "23063");
        EXPECT_EQ(r->kvfit, "23022-23064");
        EXPECT_TRUE(r->same) << x.text;
        EXPECT_NE(r->note.find("253952 B per token"), std::string::npos) << r->note;
        ASSERT_NE(row(x, "K buffer (GB)"), nullptr) << x.text;
        EXPECT_TRUE(row(x, "K buffer (GB)")->same) << x.text;
        const auto * w = row(x, "weights per rank (mem usage)");
        ASSERT_NE(w, nullptr);
        EXPECT_FALSE(w->same); // experts on the CPU: the file's known line
        EXPECT_TRUE(row(x, "start")->same) << x.text;
        bool said = false;
        for (const auto & n : x.e.notes) said |= n.find("94.07 GB free before the load") != std::string::npos;
        EXPECT_TRUE(said) << x.text;
    }
}

// Issue 27 item 2: SGLang logs from 0.4.x to 2026 main, each reproduced at the budget the log states (the free memory
// before the load, the weights' "mem usage" or the free memory after the load, and --mem-fraction-static from server_args
// or the post): rest = A x fraction - W // cell (model_runner.py profile_max_num_token). Builds before 2025-03 print
// neither "#tokens" nor "mem usage": the pool is the scheduler's max_total_num_tokens, the weights A - E.
TEST(serving_explain, issue27_sglang_releases) {
    {
        const auto x = explain_file("sglang-docs0123_llama31-8b_h100.log");
        EXPECT_EQ(x.log.engine, kvfit::serving_engine::sglang);
        EXPECT_EQ(x.log.figure("kv_tokens"), nullptr); // the 0.4.1 line: "KV Cache is allocated. K size: ..."
        ASSERT_NE(x.log.figure("k_gb"), nullptr);
        EXPECT_EQ(x.log.figure("k_gb")->text, "27.13");
        const auto * r = row(x, "KV cache #tokens");
        ASSERT_NE(r, nullptr) << x.text;
        EXPECT_EQ(r->log, "444500");
        EXPECT_TRUE(r->same) << x.text; // 63.72 - 78.81 x 0.12 = 54.26 GiB // 131,072 B
        EXPECT_NE(r->note.find("78.81 GB free before the load"), std::string::npos) << r->note;
        EXPECT_NE(r->note.find("15.09 GB of weights"), std::string::npos) << r->note;
        ASSERT_NE(row(x, "K buffer (GB)"), nullptr) << x.text;
        EXPECT_TRUE(row(x, "K buffer (GB)")->same) << x.text;
        ASSERT_NE(row(x, "KV cache #tokens at kvfit's budget"), nullptr) << x.text;
        EXPECT_TRUE(row(x, "KV cache #tokens at kvfit's budget")->same) << x.text; // H100 80GB, 0.5 GiB context
        const auto * m = row(x, "max_running_requests");
        ASSERT_NE(m, nullptr) << x.text;
        EXPECT_EQ(m->log, "2049");   // ReqToTokenPool(size=max_num_reqs + 1) in 0.4.x: the file's known line
        EXPECT_EQ(m->kvfit, "2048");
        EXPECT_TRUE(row(x, "start")->same) << x.text;
    }
    {
        const auto x = explain_file("sglang-jerryzsj_r1-distill-qwen-7b_rtx3090.log");
        const auto * r = row(x, "KV cache #tokens");
        ASSERT_NE(r, nullptr) << x.text;
        EXPECT_EQ(r->log, "105531");
        EXPECT_TRUE(r->same) << x.text; // 8.37 - 22.76 x 0.12 = 5.64 GiB // 57,344 B
        EXPECT_TRUE(row(x, "K buffer (GB)")->same) << x.text;
    }
    {
        const auto x = explain_file("sglang-4760_llama31-8b_fa3_h100.log");
        const auto * r = row(x, "KV cache #tokens");
        ASSERT_NE(r, nullptr) << x.text;
        EXPECT_EQ(r->log, "442750");
        EXPECT_TRUE(r->same) << x.text; // (63.48 + 15.11) x 0.88 - 15.11
        EXPECT_NE(r->note.find("78.59 GB free before the load (avail mem 63.48 + mem usage 15.11"), std::string::npos) << r->note;
        EXPECT_TRUE(row(x, "weights per rank (mem usage)")->same) << x.text;
    }
    {
        // the fraction is not in the log: SGLang's default for the B200 given, piecewise CUDA graphs counted (74 x 8
        // MiB, sglang_piecewise_cuda_graph): 0.854, and the pool at the log's load is the logged one exactly (in the
        // range of the printed figures' rounding, not within 2 % as at 0.857 before)
        const auto x = explain_file("sglang-skill0427_qwen3-8b_b200.log");
        const auto * r = row(x, "KV cache #tokens (SGLang's default fraction)");
        ASSERT_NE(r, nullptr) << x.text;
        EXPECT_EQ(r->log, "992896");
        EXPECT_TRUE(r->same) << x.text;
        EXPECT_EQ(r->note.find("within 2 %"), std::string::npos) << r->note;
        EXPECT_NE(r->note.find("--mem-fraction-static 0.854 (SGLang's default"), std::string::npos) << r->note;
        EXPECT_TRUE(row(x, "K buffer (GB)")->same) << x.text;
        EXPECT_TRUE(row(x, "KV cache #tokens at kvfit's budget")->same) << x.text;
        bool said = false;
        for (const auto & n : x.e.notes) {
            said |= n.find("--mem-fraction-static 0.854: not in the log") != std::string::npos &&
                    n.find("piecewise CUDA graphs on: 74 x 8 MiB reserved") != std::string::npos;
        }
        EXPECT_TRUE(said) << x.text;
    }
    {
        // MLA on 8 MI355X, the fraction as server_args prints it; the start failed in graph capture (a TypeError), not
        // for memory: the file's known line
        const auto x = explain_file("sglang-amdissues-kimi-k25_tp8_mi355x.log");
        ASSERT_NE(x.log.arg("mem_fraction_static"), nullptr);
        EXPECT_EQ(x.log.arg("mem_fraction_static")->text, "0.8260405859375");
        EXPECT_EQ(x.log.figure("load_begin_avail_gb", true)->text, "283.53");
        const auto * r = row(x, "KV cache #tokens");
        ASSERT_NE(r, nullptr) << x.text;
        EXPECT_EQ(r->log, "2454421");
        EXPECT_TRUE(r->same) << x.text;
        ASSERT_NE(row(x, "KV buffer (GB)"), nullptr) << x.text; // "KV size: 160.63 GB" = 2,454,422 x 70,272 B
        EXPECT_TRUE(row(x, "KV buffer (GB)")->same) << x.text;
        const auto * st = row(x, "start");
        ASSERT_NE(st, nullptr) << x.text;
        EXPECT_EQ(st->log, "does not start");
        EXPECT_EQ(st->kvfit, "starts");
        EXPECT_NE(st->note.find("no memory refusal"), std::string::npos) << st->note;
    }
}

// Two line shapes issue 27's logs added: vLLM records through a key=value logging formatter (msg="..."), whose figure
// ends at the closing quote, and SGLang's budget line. A quote after a figure elsewhere is not a vLLM line.
TEST(serving_explain, reader_logfmt_and_sglang_budget) {
    kvfit::serving_engine e{};
    EXPECT_TRUE(kvfit::detect_serving_engine("(EngineCore pid=1) level=INFO name=vllm.v1.core.kv_cache_utils "
                                             "msg=\"GPU KV cache size: 26,800 tokens\"\n", e));
    EXPECT_EQ(e, kvfit::serving_engine::vllm);
    EXPECT_FALSE(kvfit::detect_serving_engine("echo \"GPU KV cache size: 26,800 tokens\"\n", e));
    const auto v = kvfit::parse_serving_log(std::string_view(
        "level=INFO msg=\"Available KV cache memory: 24.54 GiB\"\nlevel=INFO msg=\"GPU KV cache size: 26,800 tokens\"\n"));
    ASSERT_NE(v.figure("available_kv_gib"), nullptr);
    EXPECT_EQ(v.figure("available_kv_gib")->value, 24.54);
    EXPECT_EQ(v.figure("kv_tokens")->value, 26800);
    const auto s = kvfit::parse_serving_log(std::string_view(
        "[2025-12-26 20:03:09] The available memory for KV cache is 5.45 GB.\n"
        "[2025-12-26 20:03:09] KV Cache is allocated. #tokens: 23063, K size: 2.73 GB, V size: 2.73 GB\n"));
    EXPECT_EQ(s.engine, kvfit::serving_engine::sglang);
    ASSERT_NE(s.figure("kv_avail_gb"), nullptr);
    EXPECT_EQ(s.figure("kv_avail_gb")->text, "5.45");
    EXPECT_EQ(s.figure("k_gb")->value, 2.73);
}

// The reader: the engine told by its lines, the arguments of a non-default-args dict and of an engine-config line,
// the figures with their commas, the per-rank minimum.
TEST(serving_explain, reader_lines) {
    const auto log = kvfit::parse_serving_log(std::string_view(
        "(APIServer pid=1) INFO [utils.py:233] non-default args: {'model': '~/m', 'max_model_len': 262144, 'speculative_config': "
        "{'method': 'mtp', 'num_speculative_tokens': 3}, 'enable_prefix_caching': True, 'x': None}\n"
        "(EngineCore pid=2) INFO [core.py:112] Initializing a V1 LLM engine (v0.20.1) with config: model='~/m', "
        "dtype=torch.float16, tensor_parallel_size=2, kv_cache_dtype=fp8_e5m2, foo=Bar(a=1, b='x,y')\n"
        "(Worker_TP0) INFO Available KV cache memory: 11.08 GiB\n(Worker_TP1) INFO Available KV cache memory: 11.05 GiB\n"
        "INFO GPU KV cache size: 623,873 tokens\n"));
    EXPECT_EQ(log.engine, kvfit::serving_engine::vllm);
    EXPECT_EQ(log.version, "0.20.1");
    EXPECT_EQ(log.model, "~/m");
    ASSERT_NE(log.arg("speculative_config"), nullptr);
    EXPECT_EQ(log.arg("speculative_config")->text, "{'method': 'mtp', 'num_speculative_tokens': 3}");
    ASSERT_NE(log.arg("tensor_parallel_size"), nullptr);
    EXPECT_EQ(log.arg("tensor_parallel_size")->text, "2");
    EXPECT_EQ(log.arg("foo")->text, "Bar(a=1, b='x,y')");
    EXPECT_EQ(log.figure("kv_tokens")->value, 623873.0);
    EXPECT_EQ(log.figure("available_kv_gib", true)->text, "11.05");
    kvfit::serving_engine e{};
    EXPECT_FALSE(kvfit::detect_serving_engine("llama_model_loader: loaded meta data\nGPU KV cache size: 1 tokens\n", e));
    EXPECT_TRUE(kvfit::detect_serving_engine("[2025-05-19] KV Cache is allocated. #tokens: 91749, K size: 7.00 GB\n", e));
    EXPECT_EQ(e, kvfit::serving_engine::sglang);
    EXPECT_TRUE(kvfit::detect_serving_engine("Prompt: 1929 tokens, 775.695 tokens-per-sec\nPeak memory: 5.197 GB\n", e));
    EXPECT_EQ(e, kvfit::serving_engine::mlx_lm);
    EXPECT_THROW((void)kvfit::parse_serving_log(std::string_view("hello\nworld\n")), kvfit::error);
}

// Ollama's lines (ollama/ollama #12027 and #8098, the runner's llama.cpp lines of #8310): the engine told by its own
// lines even with llama.cpp's after them, the runner command's flags, the sizes in bytes as HumanBytes2 prints them,
// the new engine's per-device lines, and the runner's KV buffers through the llama.cpp reader.
TEST(serving_explain, reader_ollama_lines) {
    const std::string text =
        "time=2025-08-24T08:26:00.100Z level=INFO source=routes.go:1331 msg=\"Listening on [::]:11434 (version 0.11.6)\"\n"
        "time=2025-08-24T08:26:00.200Z level=INFO source=server.go:383 msg=\"starting runner\" cmd=\"ollama runner "
        "--ollama-engine --model /m/blobs/sha256-x --ctx-size 8192 --batch-size 512 --n-gpu-layers 33 --threads 12 "
        "--flash-attn --kv-cache-type q8_0 --parallel 2 --port 1\"\n"
        "time=2025-08-24T08:26:00.310Z level=INFO source=backend.go:321 msg=\"kv cache\" device=CUDA0 size=\"936.0 MiB\"\n"
        "time=2025-08-24T08:26:00.310Z level=INFO source=backend.go:332 msg=\"compute graph\" device=CUDA0 size=\"98.0 MiB\"\n"
        "time=2025-08-24T08:26:00.310Z level=INFO source=backend.go:337 msg=\"compute graph\" device=CPU size=\"8.0 MiB\"\n"
        "time=2025-08-24T08:26:00.310Z level=INFO source=backend.go:342 msg=\"total memory\" size=\"5.4 GiB\"\n"
        "llama_kv_cache_init:      CUDA0 KV buffer size =   574.22 MiB\n"
        "time=2025-08-24T08:26:08.833Z level=INFO source=server.go:1272 msg=\"llama runner started in 9.16 seconds\"\n";
    kvfit::serving_engine e{};
    EXPECT_TRUE(kvfit::detect_serving_engine(text, e));
    EXPECT_EQ(e, kvfit::serving_engine::ollama);
    const auto log = kvfit::parse_serving_log(std::string_view(text));
    EXPECT_EQ(log.engine, kvfit::serving_engine::ollama);
    EXPECT_EQ(log.version, "0.11.6");
    EXPECT_EQ(log.model, "/m/blobs/sha256-x");
    EXPECT_EQ(log.arg("ctx_size")->text, "8192");
    EXPECT_EQ(log.arg("parallel")->text, "2");
    EXPECT_EQ(log.arg("kv_cache_type")->text, "q8_0");
    EXPECT_EQ(log.arg("flash_attn")->text, "true");
    ASSERT_NE(log.figure("kv_device_bytes"), nullptr);
    EXPECT_EQ(log.figure("kv_device_bytes")->value, 936.0 * 1024 * 1024);
    EXPECT_EQ(log.figure("kv_device_bytes")->text, "936.0 MiB");
    EXPECT_EQ(log.figure("graph_device_bytes")->value, 98.0 * 1024 * 1024);
    EXPECT_EQ(log.figure("graph_host_bytes")->value, 8.0 * 1024 * 1024);
    EXPECT_NEAR(log.figure("total_bytes")->value, 5.4 * 1024 * 1024 * 1024, 1);
    EXPECT_NE(log.figure("runner_started"), nullptr);
    ASSERT_TRUE(log.runner.has_value());
    ASSERT_EQ(log.runner->kv_buffers.size(), 1u);
    EXPECT_EQ(log.runner->kv_buffers[0].device, "CUDA0");
    EXPECT_EQ(log.runner->kv_buffers[0].mib, 574.22);
    EXPECT_EQ(log.runner->kv_buffers[0].line_no, 7u);
    // explained against Llama-3.1-8B: the new engine's lines become rows (the excerpt's model is not named, so they
    // differ; each difference carries its cause)
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::load_model(std::string(KVFIT_SHARED_DIR) + "/configs/meta-llama__Meta-Llama-3.1-8B.json", warn);
    const auto ex = kvfit::explain_serving_log(log, m, {"RTX 4090", {}});
    size_t named = 0;
    for (const auto & r : ex.rows) {
        named += r.what == "KV cache (\"kv cache\" device lines)" || r.what == "compute graph (\"compute graph\" device lines)" ||
                 r.what == "total memory" || r.what == "KV buffers (runner, llama_kv_cache_init)" || r.what == "start";
        if (!r.same) EXPECT_FALSE(r.note.empty()) << r.what;
    }
    EXPECT_EQ(named, 5u) << kvfit::render_serving_explanation(log, m, ex);
    // q8_0 with --flash-attn: 8,192 cells x 32 layers x 2 x 1,024 x 34/32 B = 544 MiB (the log's model is another)
    for (const auto & r : ex.rows) {
        if (r.what == "KV cache (\"kv cache\" device lines)") EXPECT_EQ(r.kvfit, "544.0 MiB");
    }
    // a plain llama.cpp log stays the llama.cpp reader's
    EXPECT_FALSE(kvfit::detect_serving_engine("llama_kv_cache_init:      CUDA0 KV buffer size =   574.22 MiB\n", e));
}

// The CLI: a serving log is told apart from a llama.cpp one; --assume names a setting the engine plans, else exit 2.
TEST(serving_explain, cli) {
    using kvfit::test::run_kvfit;
    const std::string dir = std::string(KVFIT_TEST_DATA) + "/serving_logs/";
    const std::string cfg = std::string(KVFIT_SHARED_DIR) + "/configs/";
    const auto r = run_kvfit("explain " + dir + "vllm-club3090-612_qwen36-35b-a3b-nvfp4_rtx5090.log -m " + cfg +
                             "Qwen__Qwen3.5-35B-A3B.json");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("the vLLM 0.24.0 log beside kvfit's plan"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("GPU KV cache size (tokens)"), std::string::npos) << r.out;
    const auto bad = run_kvfit("explain " + dir + "vllm-club3090-612_qwen36-35b-a3b-nvfp4_rtx5090.log -m " + cfg +
                               "Qwen__Qwen3.5-35B-A3B.json --assume colour=blue");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--assume colour: not a vLLM setting kvfit plans"), std::string::npos) << bad.err;
    const auto noarg = run_kvfit("explain " + dir + "vllm-club3090-612_qwen36-35b-a3b-nvfp4_rtx5090.log --assume x");
    EXPECT_EQ(noarg.status, 2);
    const auto twice = run_kvfit("explain " + dir + "vllm-club3090-612_qwen36-35b-a3b-nvfp4_rtx5090.log -m " + cfg +
                                 "Qwen__Qwen3.5-35B-A3B.json --assume max_model_len=32768 --assume max_model_len=16384");
    EXPECT_EQ(twice.status, 2);
    EXPECT_EQ(twice.err, "kvfit: --assume max_model_len: given twice (32768, 16384); give it once\n");
    // an Ollama log: told apart from the llama.cpp one its runner lines resemble; its differences exit 1
    const auto ol = run_kvfit("explain " + dir + "ollama-7622_llama3-8b_cpu-runner.log -m " + cfg + "meta-llama__Meta-Llama-3.1-8B.json");
    EXPECT_EQ(ol.status, 1) << ol.out << ol.err;
    EXPECT_NE(ol.out.find("the Ollama log beside kvfit's plan"), std::string::npos) << ol.out;
    EXPECT_NE(ol.out.find("KV cache (memory.required.kv)"), std::string::npos) << ol.out;
    const auto obad = run_kvfit("explain " + dir + "ollama-7622_llama3-8b_cpu-runner.log -m " + cfg +
                                "meta-llama__Meta-Llama-3.1-8B.json --assume colour=blue");
    EXPECT_EQ(obad.status, 2);
    EXPECT_NE(obad.err.find("--assume colour: not an Ollama setting kvfit plans"), std::string::npos) << obad.err;
}

// A file that is no startup log (prose quoting an engine's lines, a binary holding their words) is no engine's log:
// exit 2 with the one-line error an empty file gets, never "All 0 lines match" or a comparison of the wrong engine.
TEST(serving_explain, not_a_startup_log) {
    using kvfit::test::run_kvfit;
    const std::string no_log = "no line of a llama.cpp, vLLM, SGLang, Ollama or mlx-lm startup log found";
    const std::string src = std::string(KVFIT_SOURCE_DIR) + "/";
    const std::string empty = kvfit::test::write_temp("empty.log", "");
    for (const std::string & file : {src + "README.md", src + "docs/sets.md", std::string(KVFIT_BINARY), empty}) {
        for (const std::string & model : {std::string(" -m Qwen3-8B"), std::string()}) {
            const auto r = run_kvfit("explain " + file + model);
            EXPECT_EQ(r.status, 2) << file << model << "\n" << r.out << r.err;
            EXPECT_NE(r.err.find(no_log), std::string::npos) << file << model << "\n" << r.err;
            EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
            EXPECT_EQ(r.out.find("lines match"), std::string::npos) << r.out;
        }
    }
    // the reader: README's quoted vLLM lines and docs' "mlx-lm" name no engine; a binary's strings none either
    kvfit::serving_engine e{};
    EXPECT_FALSE(kvfit::detect_serving_engine(kvfit::test::read_text(src + "README.md"), e));
    EXPECT_FALSE(kvfit::detect_serving_engine(kvfit::test::read_text(src + "docs/sets.md"), e));
    static const char binary[] = "x\0time=1 level=INFO msg=\"starting runner\" cmd=\"--ctx-size 8\"\n";
    EXPECT_FALSE(kvfit::detect_serving_engine(std::string_view(binary, sizeof binary - 1), e));
    EXPECT_TRUE(kvfit::detect_serving_engine(std::string_view(binary + 2, sizeof binary - 3), e)); // the same line as text
    EXPECT_FALSE(kvfit::detect_serving_engine("see \"Available KV cache memory: 5.69 GiB\" in vLLM's log\n", e));
    // an engine's line with no figure after it (mlx-lm's command line alone) is nothing to compare: the same error
    try {
        (void)kvfit::parse_serving_log(std::string_view("INFO 05-15 16:03:37 [api_server.py:1] vLLM API server version 0.9.1\n"));
        ADD_FAILURE() << "a banner alone was read";
    } catch (const kvfit::error & x) {
        EXPECT_NE(std::string(x.what()).find(no_log), std::string::npos) << x.what();
    }
}

// An Ollama log whose runner is llama-server (tests/data/gpu_logs/llama31-8b-q4_0_rtx2060_ollama_c32768_partial15.log:
// Ollama's "starting llama-server" line with "-c 32768 -np 1 --flash-attn auto -b 512 -ub 512", then the runner's
// llama.cpp lines: n_ctx = 32768 at line 188, CPU 2304 + CUDA0 1792 MiB of f16 KV at lines 201-202). The context, slots,
// flash attention, K/V type and n_ubatch are read from the log and said with their lines; the KV row is the runner's
// KV lines; --assume of a setting the log states is refused.
TEST(serving_explain, ollama_llama_server_runner) {
    using kvfit::test::run_kvfit;
    const std::string path = std::string(KVFIT_TEST_DATA) + "/gpu_logs/llama31-8b-q4_0_rtx2060_ollama_c32768_partial15.log";
    const std::string gguf = std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/llama31-8b_v128256.gguf";
    const std::string text = kvfit::test::read_text(path);
    kvfit::serving_engine eng{};
    ASSERT_TRUE(kvfit::detect_serving_engine(text, eng));
    EXPECT_EQ(eng, kvfit::serving_engine::ollama);
    const auto log = kvfit::parse_serving_log(std::string_view(text));
    EXPECT_EQ(log.engine, kvfit::serving_engine::ollama);
    ASSERT_NE(log.arg("ctx_size"), nullptr);
    EXPECT_EQ(log.arg("ctx_size")->text, "32768");
    EXPECT_EQ(log.arg("ctx_size")->line_no, 9u);
    EXPECT_EQ(log.arg("parallel")->text, "1");
    EXPECT_EQ(log.arg("flash_attn")->text, "auto");
    EXPECT_EQ(log.arg("ubatch_size")->text, "512");
    EXPECT_EQ(log.arg("context_shift")->text, "true");
    ASSERT_TRUE(log.runner.has_value());
    ASSERT_NE(log.runner->value("n_ctx"), nullptr);
    EXPECT_EQ(log.runner->value("n_ctx")->line_no, 188u); // the log's own numbers, its 7 header lines counted
    ASSERT_EQ(log.runner->kv_buffers.size(), 2u);
    EXPECT_EQ(log.runner->kv_buffers[0].line_no, 201u);
    EXPECT_EQ(log.runner->kv_buffers[1].line_no, 202u);

    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::load_model(gguf, warn);
    const auto ex = kvfit::explain_serving_log(log, m, {});
    const std::string shown = kvfit::render_serving_explanation(log, m, ex);
    const kvfit::explain_row * kv = nullptr;
    for (const auto & r : ex.rows) kv = r.what == "KV buffers (runner, llama_kv_cache_init)" ? &r : kv;
    ASSERT_NE(kv, nullptr) << shown;
    // 32,768 cells x 32 layers x 2 x 8 heads x 128 x 2 B (f16) = 4,096 MiB = 2,304 (CPU) + 1,792 (CUDA0)
    EXPECT_EQ(kv->line_no, 201u);
    EXPECT_EQ(kv->log, "4096.00 MiB");
    EXPECT_EQ(kv->kvfit, "4096.00 MiB");
    EXPECT_TRUE(kv->same) << shown;
    EXPECT_NE(shown.find("from the log: n_ctx = 32768 (line 188), 1 sequence(s) (n_seq_max, line 187): num_ctx 32768"),
              std::string::npos) << shown;
    EXPECT_NE(shown.find("from the log: flash attention auto (line 193)"), std::string::npos) << shown;
    EXPECT_NE(shown.find("from the log: K (f16), V (f16) (line 203)"), std::string::npos) << shown;
    EXPECT_NE(shown.find("n_ubatch 512 (line 191)"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("given (the log does not print it)"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("default num_ctx"), std::string::npos) << shown;

    const auto r = run_kvfit("explain " + path + " -m " + gguf);
    EXPECT_NE(r.out.find("the Ollama log beside kvfit's plan"), std::string::npos) << r.out << r.err;
    EXPECT_NE(r.out.find("line   201  KV buffers (runner, llama_kv_cache_init)"), std::string::npos) << r.out;
    // the runner's placement (line 178: --fit chose 15 of 33 on the RTX 2060's 5141 MiB free, line 19) is compared
    EXPECT_NE(r.out.find("line   178  layers on the GPU (runner, load_tensors)  log 15/33"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("GPU NVIDIA GeForce RTX 2060: the 5141 MiB free llama-server saw (line 19)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("-87.5 %"), std::string::npos) << r.out;
    EXPECT_EQ(r.status, ex.differences == 0 ? 0 : 1) << r.out << r.err;
    const auto given = run_kvfit("explain " + path + " -m " + gguf + " --assume num_ctx=32768");
    EXPECT_EQ(given.status, 2) << given.out << given.err;
    EXPECT_NE(given.err.find("--assume num_ctx: the log states it (n_ctx = 32768 (line 188)"), std::string::npos) << given.err;
}

} // namespace

// Every public log of the corpus is a serving engine's log by its own lines: a vLLM start refused by its Mamba check
// (vllm-recipes831: "ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (939)", alone in its log) was
// read as no startup log at all, and `kvfit explain` exited 2.
TEST(serving_explain, every_corpus_log_is_detected) {
    size_t n = 0;
    for (const corpus_file & f : corpus()) {
        kvfit::serving_engine e = kvfit::serving_engine::vllm;
        EXPECT_TRUE(kvfit::detect_serving_engine(f.text, e)) << f.name;
        ++n;
    }
    EXPECT_GE(n, 30u);
}

// The issue's own example (sgl-project/sglang #15464): the log prints two equal pools ("swa size: 1496958, full size:
// 1496958"). Planned at SGLang's default ratio 0.8 the full pool differs, and explain names the cause the log shows:
// equal pools are --swa-full-tokens-ratio 1; with that assumption every line matches.
TEST(serving_explain, sglang_swa_pools_name_the_ratio_the_log_implies) {
    using kvfit::test::run_kvfit;
    const std::string log = std::string(KVFIT_TEST_DATA) + "/serving_logs/sglang-15464_mimo-v2-flash_tp4.log";
    const std::string cfg = std::string(KVFIT_SHARED_DIR) + "/configs/XiaomiMiMo__MiMo-V2-Flash.json";
    const auto r = run_kvfit("explain " + log + " -m " + cfg + " --assume tp_size=4");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("the log's pools are equal (swa 1496958 = full 1496958, line 10): --swa-full-tokens-ratio 1"),
              std::string::npos) << r.out;
    const auto one = run_kvfit("explain " + log + " -m " + cfg + " --assume tp_size=4 --assume swa_full_tokens_ratio=1");
    EXPECT_EQ(one.status, 0) << one.out << one.err;
    EXPECT_NE(one.out.find("All 2 lines match."), std::string::npos) << one.out;
}
