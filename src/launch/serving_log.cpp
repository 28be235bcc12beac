// The serving-engine log readers of `kvfit explain` (include/kvfit/serving_log.h): vLLM, SGLang, Ollama and mlx-lm lines, read
// by hand (a literal, then a number) rather than by regex, so that any line costs time linear in its length. Which
// engine prints each line, and from which file, is listed in serving_log.h.
#include "kvfit/serving_log.h"

#include "kvfit/error.h"
#include "kvfit/llamacpp.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fmt/format.h>
#include <sstream>

namespace kvfit {

const char * serving_engine_name(serving_engine e) {
    switch (e) {
    case serving_engine::vllm: return "vLLM";
    case serving_engine::sglang: return "SGLang";
    case serving_engine::mlx_lm: return "mlx-lm";
    case serving_engine::ollama: return "Ollama";
    }
    return "?";
}

const char * serving_engine_runtime(serving_engine e) {
    switch (e) {
    case serving_engine::vllm: return "vllm";
    case serving_engine::sglang: return "sglang";
    case serving_engine::mlx_lm: return "mlx";
    case serving_engine::ollama: return "ollama";
    }
    return "vllm";
}

const log_value * serving_log::arg(std::string_view key) const {
    for (const auto & [k, v] : args) {
        if (k == key) return &v;
    }
    return nullptr;
}

const serving_figure * serving_log::figure(std::string_view key, bool min_of) const {
    const serving_figure * best = nullptr;
    for (const auto & f : figures) {
        if (f.key != key) continue;
        if (!best) best = &f;
        if (!min_of) break;
        if (f.value < best->value) best = &f;
    }
    return best;
}

namespace {

constexpr size_t k_max_line = 64 << 10;   // longer lines are cut
constexpr size_t k_max_records = 65536;   // figures + arguments kept over the whole log
constexpr size_t k_max_runner = 4u << 20; // an Ollama runner's llama.cpp lines kept for the llama.cpp reader
constexpr int k_engines = 4;              // vLLM, SGLang, mlx-lm, Ollama (serving_engine's order)
constexpr int k_llama = 4;                // engine_of: a llama.cpp line

// The number printed right after `key` in `line` (spaces skipped; "1,234", "5.98", "-2.14"); false when none.
bool number_after(std::string_view line, std::string_view key, double & value, std::string & text, size_t from = 0) {
    const size_t at = line.find(key, from);
    if (at == std::string_view::npos) return false;
    size_t i = at + key.size();
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    if (i < line.size() && line[i] == '-') ++i;
    bool digit = false;
    while (i < line.size() && (std::isdigit(static_cast<unsigned char>(line[i])) || line[i] == ',' || line[i] == '.')) {
        digit |= std::isdigit(static_cast<unsigned char>(line[i])) != 0;
        ++i;
    }
    while (i > start && (line[i - 1] == ',' || line[i - 1] == '.')) --i; // "... 1478, # CPU" / "took 1.2."
    if (!digit || i - start > 40) return false;
    text = std::string(line.substr(start, i - start));
    std::string plain;
    for (char c : text) {
        if (c != ',') plain += c;
    }
    const auto [p, ec] = std::from_chars(plain.data(), plain.data() + plain.size(), value);
    return ec == std::errc() && p == plain.data() + plain.size();
}

// Python reprs of engine arguments: "k=v, k2=v2" (a dataclass / Namespace / engine config line) or "'k': v, ..." (a
// dict). Items split at top-level commas (quotes and brackets balanced); a value keeps its repr. Linear in the text.
std::vector<std::pair<std::string, std::string>> python_items(std::string_view body, bool dict) {
    std::vector<std::pair<std::string, std::string>> out;
    size_t depth = 0, start = 0;
    char quote = 0;
    auto item = [&](std::string_view s) {
        while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
        while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
        const size_t sep = dict ? s.find(':') : s.find('=');
        if (sep == std::string_view::npos || sep == 0) return;
        std::string_view k = s.substr(0, sep), v = s.substr(sep + 1);
        while (!k.empty() && k.back() == ' ') k.remove_suffix(1);
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
        if (dict) {
            if (k.size() < 2 || (k.front() != '\'' && k.front() != '"') || k.back() != k.front()) return;
            k = k.substr(1, k.size() - 2);
        }
        if (k.empty() || k.size() > 64) return;
        if (!std::all_of(k.begin(), k.end(), [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-'; })) return;
        out.emplace_back(std::string(k), std::string(v.substr(0, 4096)));
    };
    for (size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        if (quote) {
            if (c == '\\') ++i;
            else if (c == quote) quote = 0;
            continue;
        }
        if (c == '\'' || c == '"') quote = c;
        else if (c == '(' || c == '[' || c == '{') ++depth;
        else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) { // the list's own closing bracket
                item(body.substr(start, i - start));
                return out;
            }
            --depth;
        } else if (c == ',' && depth == 0) {
            item(body.substr(start, i - start));
            start = i + 1;
        }
    }
    item(body.substr(start));
    return out;
}

// A repr without its quotes: "'Qwen/Qwen3-8B'" -> "Qwen/Qwen3-8B"; "torch.bfloat16" -> "bfloat16".
std::string unquote(std::string_view v) {
    if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) return std::string(v.substr(1, v.size() - 2));
    if (v.rfind("torch.", 0) == 0) return std::string(v.substr(6));
    return std::string(v);
}

// A release number at `at` ("0.24.0", "v0.8.3.dev", "0.20.2rc1.dev9+g01d4d1ad3"): the token up to a space, ')' or ','.
std::string version_at(std::string_view line, size_t at) {
    if (at < line.size() && line[at] == 'v') ++at;
    size_t end = at;
    while (end < line.size() && line[end] != ' ' && line[end] != ')' && line[end] != ',' && end - at < 64) ++end;
    const std::string_view v = line.substr(at, end - at);
    if (v.empty() || !std::isdigit(static_cast<unsigned char>(v.front()))) return {};
    return std::string(v);
}

bool has(std::string_view line, std::string_view word) { return line.find(word) != std::string_view::npos; }

// Whether `at` opens `line`'s message: after its logger's prefix, the last "] " before `at` (vLLM's "INFO 08-20
// 18:04:22 [gpu_worker.py:276] " with or without "(EngineCore pid=N) " before it, its older "gpu_executor.py:122] ",
// SGLang's "[2025-12-19 07:42:57 TP2] ") or a level word ("... INFO "), else the line's start (a log quoted without
// its prefix); spaces skipped.
bool at_message_start(std::string_view line, size_t at) {
    // a logfmt record (a logging config with a key=value formatter: `level=INFO name=vllm.v1... msg="..."`)
    if (at >= 5 && line.substr(at - 5, 5) == "msg=\"") return true;
    size_t start = 0;
    if (at >= 2) {
        if (const size_t b = line.rfind("] ", at - 2); b != std::string_view::npos) start = b + 2;
    }
    std::string_view before = line.substr(start, at - start);
    while (!before.empty() && before.back() == ' ') before.remove_suffix(1);
    if (before.empty()) return true;
    const size_t sp = before.rfind(' ');
    const std::string_view last = sp == std::string_view::npos ? before : before.substr(sp + 1);
    for (std::string_view level : {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL"}) {
        if (last == level) return true;
    }
    return false;
}

// One mark of an engine's own line: the words, where they must stand, and what must come with them.
struct line_mark {
    std::string_view words;
    int engine;                 // serving_engine's order; k_llama: a llama.cpp line
    bool at_start;              // the words open the line's message (at_message_start)
    bool number;                // a number follows the words (the figure the engine prints)
    std::string_view with = {}; // words the same line also holds (a mark in the middle of the engine's line)
    bool ends = false;          // nothing but the end of the line or ", ..." after the figure
};

// The marks of each engine's own startup lines (and llama.cpp's, which keep a log with the llama.cpp reader). A mark
// counts only in the shape the engine prints it: the words at the start of the message and followed by their figure,
// or beside the other words of the same line, so that prose, a README quoting a line ("Available KV cache memory:
// 5.69 GiB" in quotes) or a binary's strings are no engine's log. The sources of each line: serving_log.h.
constexpr line_mark k_marks[] = {
    // Ollama's slog lines (llm/server.go, llm/llama_server.go startLlamaServer's slog.Info("starting llama-server",
    // "cmd", cmd), llm/memory.go, discover/types.go, server/sched.go): "time=... level=INFO source=... msg=...", checked
    // first, as its runner's llama.cpp lines follow them in the same log
    {"msg=\"starting llama server\"", 3, false, false, "level="},
    {"msg=\"starting runner\"", 3, false, false, "level="},
    {"msg=\"starting llama-server\"", 3, false, false, "level="},
    {"msg=\"using llama-server for model\"", 3, false, false, "level="},
    {"msg=\"loading model via llama-server\"", 3, false, false, "level="},
    {"msg=\"offload to ", 3, false, false, "level="},
    {"msg=offload ", 3, false, false, "level="},
    {"msg=\"inference compute\"", 3, false, false, "level="},
    {"msg=\"kv cache\" device=", 3, false, false, "level="},
    {"msg=\"total memory\"", 3, false, false, "level="},
    {"msg=\"model weights\" device=", 3, false, false, "level="},
    {"msg=\"llama runner started", 3, false, false, "level="},
    {"source=sched.go:", 3, false, false, " msg="},
    {"llama_model_loader: ", k_llama, false, false},
    {"llama_context: ", k_llama, false, false},
    {"llama_kv_cache: ", k_llama, false, false},
    {"llama_kv_cache_init: ", k_llama, false, false},
    // vLLM
    {"GPU KV cache size: ", 0, true, true},
    {"Available KV cache memory: ", 0, true, true},
    {"Model loading took ", 0, true, true},
    {"Loading model weights took ", 0, true, true},
    // "# GPU blocks: N, # CPU blocks: M" (V0 executor_base.py), "# GPU blocks: N" (early V1); not kvfit's own
    // "# GPU blocks: 237 (minimum over 1 worker)"
    {"# GPU blocks: ", 0, true, true, {}, true},
    {"# cuda blocks: ", 0, true, true, {}, true},
    {"vLLM API server version ", 0, true, true},
    {"non-default args: {", 0, true, false},
    {" LLM engine (v", 0, false, false, "with config: "},
    {"GiB KV cache is needed, which is larger than the available KV cache memory (", 0, false, false, "max seq len ("},
    {"the rest of the memory reserved for KV Cache is ", 0, false, true, "model weights take "},
    {"kv_cache_size=", 0, false, true, "total_gpu_memory="},
    // the refusal of a hybrid model whose max_num_seqs exceeds its Mamba blocks (v1/worker/gpu_model_runner.py:
    // "ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (939)"), which a refused start may be alone
    {"max_num_seqs (", 0, false, true, "exceeds available Mamba cache blocks ("},
    // SGLang
    {"KV Cache is allocated. #tokens: ", 1, true, true},
    {"server_args=ServerArgs(", 1, true, false},
    {"max_total_num_tokens=", 1, true, true},
    {"Load weight end. ", 1, true, false},
    {"Memory pool end. ", 1, true, false},
    // mlx-lm (mlx_lm/generate.py, mlx_lm/benchmark.py)
    {"Peak memory: ", 2, true, true},
    {"peak_memory=", 2, false, true, "prompt_tps="},
};

// The engine whose own line `line` is (k_llama: llama.cpp's), or -1. A line holding a NUL byte is no log's line.
int engine_of(std::string_view line) {
    if (has(line, std::string_view("\0", 1))) return -1;
    for (const auto & m : k_marks) {
        const size_t at = line.find(m.words);
        if (at == std::string_view::npos) continue;
        if (m.at_start && !at_message_start(line, at)) continue;
        if (!m.with.empty() && !has(line, m.with)) continue;
        if (m.engine == 3 && !has(line, "time=")) continue; // slog's "time=... level=... msg=..."
        double v = 0;
        std::string t;
        if (m.number && !number_after(line, m.words, v, t, at)) continue;
        if (m.ends) {
            std::string_view rest = line.substr(line.find(t, at + m.words.size()) + t.size());
            while (!rest.empty() && (rest.back() == '\r' || rest.back() == ' ')) rest.remove_suffix(1);
            if (!rest.empty() && rest.front() != ',' && !(rest.front() == '"' && at >= 5 && line.substr(at - 5, 5) == "msg=\"")) continue;
        }
        return m.engine;
    }
    return -1;
}

class serving_reader {
  public:
    void line(std::string_view raw, size_t line_no) {
        last_ = line_no;
        std::string_view l = raw.substr(0, k_max_line);
        while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.remove_suffix(1);
        if ((!body_ && (l.rfind("# ", 0) == 0 || l == "#")) || has(l, std::string_view("\0", 1))) {
            runner_ += '\n'; // a corpus file's header (tests/data/serving_logs), or no text line: the runner's lines
            return;           // keep the log's numbers
        }
        body_ = true;
        const int e = engine_of(l);
        if (e >= 0 && e < k_engines) votes_[e] += 1;
        read_vllm(l, line_no);
        read_sglang(l, line_no);
        read_mlx(l, line_no);
        read_ollama(l, line_no);
        keep_runner_line(l);
    }

    serving_log finish() {
        // Ollama's lines decide (its log may hold vLLM-like words nowhere, but its runner's lines are llama.cpp's)
        const int best = votes_[3] > 0 ? 3 : int(std::max_element(votes_, votes_ + k_engines) - votes_);
        if (votes_[best] == 0) throw error(k_no_startup_log);
        serving_log log;
        log.engine = serving_engine(best);
        log.version = versions_[best];
        log.v0_engine = best == 0 && v0_;
        log.model = models_[best];
        for (auto & [k, v] : args_) {
            if (k.first == best) log.args.emplace_back(k.second, v);
        }
        for (auto & f : figures_) {
            if (f.first == best) log.figures.push_back(std::move(f.second));
        }
        for (auto & f : errors_) {
            if (f.first == best) log.errors.push_back(std::move(f.second));
        }
        if (log.model.empty()) {
            for (const char * k : {"model", "model_path", "model_tag"}) {
                if (const log_value * v = log.arg(k); v && log.model.empty()) log.model = unquote(v->text);
            }
        }
        log.last_line = last_;
        if (best == 3 && runner_lines_ > 0) {
            try {
                log.runner = parse_llamacpp_log(runner_);
            } catch (const error &) { // no size or context line the llama.cpp reader keeps
            }
        }
        // an engine's line without one figure, refusal or runner line after it (a banner, a command line): nothing
        // to set beside a plan, as for a file with no such line at all
        if (log.figures.empty() && log.errors.empty() && !log.runner) throw error(k_no_startup_log);
        return log;
    }

  private:
    size_t figure_count(std::string_view key) const {
        return size_t(std::count_if(figures_.begin(), figures_.end(), [&](const auto & f) { return f.second.key == key; }));
    }
    void count() {
        if (++records_ > k_max_records) {
            throw error(fmt::format("log: more than {} figures and arguments (line {}): not a serving log kvfit reads",
                                    k_max_records, last_));
        }
    }
    void fig(int engine, size_t line_no, std::string key, double v, std::string text) {
        count();
        figures_.push_back({engine, {line_no, std::move(key), v, std::move(text)}});
    }
    // `key` followed by a number on `l`: a figure
    bool num(int engine, std::string_view l, size_t line_no, std::string_view key, const char * name, size_t from = 0) {
        double v = 0;
        std::string t;
        if (!number_after(l, key, v, t, from)) return false;
        fig(engine, line_no, name, v, t);
        return true;
    }
    void error_line(int engine, size_t line_no, const char * key, std::string_view l, double v = 0) {
        count();
        errors_.push_back({engine, {line_no, key, v, std::string(l.substr(0, 1024))}});
    }
    void arg(int engine, size_t line_no, const std::string & k, const std::string & v) {
        for (const auto & [key, val] : args_) { // the first value of a key wins (several ranks print the same)
            if (key.first == engine && key.second == k) return;
        }
        count();
        args_.push_back({{engine, k}, {line_no, v}});
    }
    void items(int engine, size_t line_no, std::string_view body, bool dict) {
        for (auto & [k, v] : python_items(body, dict)) arg(engine, line_no, k, v);
    }

    void read_vllm(std::string_view l, size_t n) {
        constexpr int E = 0;
        size_t at = 0;
        if ((at = l.find("non-default args: {")) != std::string_view::npos) items(E, n, l.substr(at + 19), true);
        if ((at = l.find(" LLM engine (")) != std::string_view::npos) { // "Initializing a V1 LLM engine (v0.24.0) with config: "
            v0_ |= has(l, "Initializing an LLM engine") || has(l, "a V0 LLM engine");
            if (versions_[E].empty()) versions_[E] = version_at(l, at + 13);
            if (const size_t c = l.find("with config: ", at); c != std::string_view::npos) items(E, n, l.substr(c + 13), false);
        }
        if ((at = l.find("vLLM API server version ")) != std::string_view::npos && versions_[E].empty()) {
            versions_[E] = version_at(l, at + 24);
        }
        if ((at = l.find("args: Namespace(")) != std::string_view::npos) items(E, n, l.substr(at + 16), false);
        if (versions_[E].empty() && (at = l.find("  version ")) != std::string_view::npos && has(l, "\xe2\x96")) {
            versions_[E] = version_at(l, at + 10); // the 2026 banner: "█▄█▀ █ ... version 0.18.0"
        }
        if ((at = l.find("  model   ")) != std::string_view::npos && has(l, "\xe2\x96") && models_[E].empty()) {
            std::string_view m = l.substr(at + 10);
            while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
            models_[E] = std::string(m.substr(0, m.find(' ')));
        }
        // V0's memory-profiling lines (worker/worker.py determine_num_available_blocks, v0.6-v0.9)
        v0_ |= has(l, "Memory profiling results: total_gpu_memory=") || has(l, "the rest of the memory reserved for KV Cache") ||
               has(l, "# CPU blocks:") || has(l, "Loading model weights took ");
        num(E, l, n, "Model loading took ", "weights_gib") || num(E, l, n, "Loading model weights took ", "weights_gib") ||
            num(E, l, n, "model weights take ", "weights_gib");
        num(E, l, n, "Available KV cache memory: ", "available_kv_gib") ||
            num(E, l, n, "the rest of the memory reserved for KV Cache is ", "available_kv_gib") ||
            num(E, l, n, "kv_cache_size=", "available_kv_gib") || num(E, l, n, "available_kv_cache_memory ", "available_kv_gib");
        num(E, l, n, "total_gpu_memory (", "total_gpu_gib") || num(E, l, n, "total_gpu_memory=", "total_gpu_gib") ||
            num(E, l, n, "total_gpu_memory ", "total_gpu_gib");
        num(E, l, n, "gpu_memory_utilization (", "gpu_memory_utilization") ||
            num(E, l, n, "gpu_memory_utilization=", "gpu_memory_utilization");
        num(E, l, n, "non_torch_memory takes ", "non_torch_gib") || num(E, l, n, "non_torch_memory=", "non_torch_gib");
        num(E, l, n, "PyTorch activation peak memory takes ", "activation_gib") ||
            num(E, l, n, "peak_torch_memory=", "peak_torch_gib");
        num(E, l, n, "GPU KV cache size: ", "kv_tokens");
        num(E, l, n, "# GPU blocks: ", "gpu_blocks") || num(E, l, n, "# cuda blocks: ", "gpu_blocks") ||
            num(E, l, n, "GPU blocks: ", "gpu_blocks");
        if ((at = l.find("Maximum concurrency for ")) != std::string_view::npos) {
            num(E, l, n, "Maximum concurrency for ", "concurrency_len");
            if (const size_t r = l.find("per request: ", at); r != std::string_view::npos) num(E, l, n, "per request: ", "max_concurrency", r);
        }
        num(E, l, n, "Using max model len ", "max_model_len");
        if (has(l, "Graph capturing finished")) num(E, l, n, ", took ", "cudagraph_gib");
        // refusals
        if ((at = l.find("GiB KV cache is needed, which is larger than the available KV cache memory (")) != std::string_view::npos) {
            double need = 0, avail = 0, est = 0;
            std::string t;
            size_t end = at; // the number just before " GiB KV cache is needed" ("..., (6.66 GiB" or "..., 3.05 GiB")
            while (end > 0 && l[end - 1] == ' ') --end;
            size_t start = end;
            while (start > 0 && end - start < 32 && (std::isdigit(static_cast<unsigned char>(l[start - 1])) || l[start - 1] == '.')) --start;
            if (start < end && number_after(l.substr(start, end - start), "", need, t)) error_line(E, n, "kv_needed", l, need);
            if (number_after(l, "available KV cache memory (", avail, t)) fig(E, n, "available_kv_gib", avail, t);
            if (number_after(l, "estimated maximum model length is ", est, t)) fig(E, n, "estimated_max_len", est, t);
            if (number_after(l, "max seq len (", est, t)) fig(E, n, "concurrency_len", est, t);
        } else if (has(l, "is larger than the maximum number of tokens that can be stored in KV cache (")) {
            double v = 0;
            std::string t;
            if (number_after(l, "stored in KV cache (", v, t)) {
                fig(E, n, "kv_tokens", v, t);
                error_line(E, n, "max_seq_len", l, v);
            }
        } else if (has(l, "No available memory for the cache blocks")) {
            error_line(E, n, "no_memory", l);
        } else if (has(l, "exceeds available Mamba cache blocks (")) {
            double v = 0;
            std::string t;
            if (number_after(l, "exceeds available Mamba cache blocks (", v, t)) {
                fig(E, n, "mamba_blocks", v, t);
                error_line(E, n, "mamba_blocks", l, v);
            }
        } else if (has(l, "EngineCore failed to start") || has(l, "Engine core initialization failed")) {
            error_line(E, n, "engine_failed", l);
        } else if ((has(l, "CUDA out of memory") || has(l, "OutOfMemoryError")) && votes_[0] > 0) {
            error_line(E, n, "oom", l);
        }
    }

    void read_sglang(std::string_view l, size_t n) {
        constexpr int E = 1;
        size_t at = 0;
        if ((at = l.find("server_args=ServerArgs(")) != std::string_view::npos) items(E, n, l.substr(at + 23), false);
        if (has(l, "Load weight begin.")) num(E, l, n, "avail mem=", "load_begin_avail_gb");
        if (has(l, "Load weight end.")) {
            num(E, l, n, "avail mem=", "load_end_avail_gb");
            num(E, l, n, "mem usage=", "weights_gb");
        }
        // "KV Cache is allocated. #tokens: N, K size: ..."; builds before 2025-03 print the sizes only ("KV Cache is
        // allocated. K size: 27.13 GB, V size: 27.13 GB.", the pool's tokens on the scheduler's max_total_num_tokens line)
        if (has(l, "KV Cache is allocated.")) {
            num(E, l, n, "#tokens: ", "kv_tokens");
            num(E, l, n, "K size: ", "k_gb") ? (void)num(E, l, n, "V size: ", "v_gb") : (void)num(E, l, n, "KV size: ", "kv_gb");
        }
        if (has(l, "SWAKVPool mem usage: ")) {
            num(E, l, n, "SWAKVPool mem usage: ", "swa_pool_gb");
            num(E, l, n, "swa size: ", "swa_layer_tokens");
            num(E, l, n, "full size: ", "full_layer_tokens");
        }
        if (has(l, "Memory pool end.")) num(E, l, n, "avail mem=", "pool_end_avail_gb");
        // the static budget itself, rest_memory in GiB (model_runner profile_max_num_token: available after the load -
        // pre-load free x (1 - mem_fraction_static)), as SGLang builds of 2025-12 print it (ktransformers #1757)
        num(E, l, n, "The available memory for KV cache is ", "kv_avail_gb");
        if (has(l, "Use sliding window memory pool.")) {
            num(E, l, n, "full_layer_tokens=", "full_layer_tokens");
            num(E, l, n, "swa_layer_tokens=", "swa_layer_tokens");
        }
        if (has(l, "Mamba Cache is allocated.")) num(E, l, n, "max_mamba_cache_size: ", "mamba_slots");
        if (has(l, "max_total_num_tokens=")) {
            num(E, l, n, "max_total_num_tokens=", "max_total_num_tokens");
            num(E, l, n, "max_running_requests=", "max_running_requests");
            num(E, l, n, "context_len=", "context_len");
        }
        if (has(l, "Not enough memory") && votes_[1] > 0) error_line(E, n, "sglang_not_enough", l);
        // a scheduler that raised during its start (scheduler.py run_scheduler_process: "Scheduler hit an exception"):
        // the server does not start, whatever the cause (a memory cause is the lines above; another is the log's own)
        else if (has(l, "Scheduler hit an exception") && votes_[1] > 0) error_line(E, n, "scheduler_exception", l);
        else if (has(l, "Memory pool size is too small") || (has(l, "out of memory") && votes_[1] > 0)) error_line(E, n, "oom", l);
    }

    // A size as Ollama prints it (format.HumanBytes2: "896.0 MiB", "2.4 GiB", "0 B") right after `key` + '"': bytes.
    bool ollama_size(std::string_view l, std::string_view key, double & bytes, std::string & text, size_t from = 0) {
        const size_t at = l.find(key, from);
        if (at == std::string_view::npos) return false;
        double v = 0;
        if (!number_after(l, key, v, text, from)) return false;
        size_t u = at + key.size() + text.size();
        while (u < l.size() && l[u] == ' ') ++u;
        const std::string_view unit = l.substr(u, 3);
        const double mult = unit == "GiB" ? double(1ull << 30) : unit == "MiB" ? double(1ull << 20) : unit == "KiB" ? 1024.0
                          : unit == "TiB" ? double(1ull << 40) : unit.substr(0, 1) == "B" ? 1.0 : 0.0;
        if (mult == 0) return false;
        bytes = v * mult;
        text += " " + std::string(unit.substr(0, unit.substr(0, 1) == "B" ? 1 : 3));
        return true;
    }
    bool osize(std::string_view l, size_t n, std::string_view key, const char * name, size_t from = 0) {
        double b = 0;
        std::string t;
        if (!ollama_size(l, key, b, t, from)) return false;
        fig(3, n, name, b, t);
        return true;
    }

    void read_ollama(std::string_view l, size_t n) {
        constexpr int E = 3;
        size_t at = 0;
        if ((at = l.find("(version ")) != std::string_view::npos && has(l, "Listening on") && versions_[E].empty()) {
            versions_[E] = version_at(l, at + 9);
        }
        if (has(l, "msg=\"offload to ") || has(l, "msg=offload ")) { // llm/memory.go EstimateGPULayers' summary
            num(E, l, n, "layers.model=", "layers_model");
            num(E, l, n, "layers.offload=", "layers_offload");
            osize(l, n, "memory.available=\"[", "available_bytes");
            osize(l, n, "memory.required.full=\"", "required_full_bytes");
            osize(l, n, "memory.required.kv=\"", "kv_estimate_bytes");
            osize(l, n, "memory.weights.total=\"", "weights_total_bytes");
            osize(l, n, "memory.graph.full=\"", "graph_full_bytes");
            osize(l, n, "memory.graph.partial=\"", "graph_partial_bytes");
        }
        if (has(l, "msg=\"inference compute\"")) {
            osize(l, n, " total=\"", "gpu_total_bytes");
            if (const size_t nm = l.find(" name=\""); nm != std::string_view::npos) {
                const std::string_view rest = l.substr(nm + 7);
                arg(E, n, "gpu_name", std::string(rest.substr(0, std::min<size_t>(rest.find('"'), 128))));
            }
        }
        // the new engine's allocations (0.11.5+): one line per device
        if (has(l, "msg=\"model weights\" device=")) osize(l, n, "size=\"", "weights_device_bytes");
        if (has(l, "msg=\"kv cache\" device=")) osize(l, n, "size=\"", "kv_device_bytes");
        if (has(l, "msg=\"compute graph\" device=") || has(l, "msg=\"compute graph\" backend=")) {
            const bool cpu = has(l, "device=CPU") || has(l, "backend=CPU");
            osize(l, n, "size=\"", cpu ? "graph_host_bytes" : "graph_device_bytes");
        }
        if (has(l, "msg=\"total memory\"")) osize(l, n, "size=\"", "total_bytes");
        // llama-server's device list under Ollama (common/arg.cpp "device_info:": "  - CUDA0   : NVIDIA GeForce RTX 2060
        // (5738 MiB, 5141 MiB free)"): the free memory its --fit starts from, and the GPU's name
        if (l.rfind("  - ", 0) == 0 && has(l, " MiB free)") && !has(l, " - CPU ") && votes_[E] > 0) {
            const size_t colon = l.find(" : "), open = l.rfind(" (");
            const size_t comma = open == std::string_view::npos ? open : l.find(", ", open);
            if (colon != std::string_view::npos && open != std::string_view::npos && open > colon && comma != std::string_view::npos) {
                double v = 0;
                std::string t;
                if (number_after(l, ", ", v, t, comma) && figure_count("runner_gpu_free_bytes") == 0) {
                    fig(E, n, "runner_gpu_free_bytes", v * double(1ull << 20), t + " MiB");
                    arg(E, n, "runner_gpu_name", std::string(l.substr(colon + 3, std::min<size_t>(open - colon - 3, 128))));
                }
            }
        }
        // the llama-server era's scheduler line (server/sched.go: slog "gpu memory" id, library, available, free)
        if (has(l, "msg=\"gpu memory\"")) osize(l, n, " free=\"", "gpu_free_bytes");
        if (has(l, "msg=\"llama runner started in")) fig(E, n, "runner_started", 1, "started");
        // the runner's command line: llm/server.go NewLlamaServer ("starting llama server", 0.11+: "starting runner":
        // --ctx-size N --batch-size N --n-gpu-layers N --parallel N [--flash-attn] [--kv-cache-type T]) and, since the
        // llama-server runner (ollama PR #16031), llm/llama_server.go startLlamaServer (slog "starting llama-server":
        // -c NumCtx x numParallel -np numParallel [--cache-type-k T --cache-type-v T] --flash-attn on|off|auto
        // [-b N -ub N] [-ngl N]). Short flags are kept under their long names (ctx_size, parallel, ubatch_size, ...).
        if ((at = l.find(" cmd=\"")) != std::string_view::npos &&
            (has(l, "msg=\"starting llama server\"") || has(l, "msg=\"starting runner\"") ||
             has(l, "msg=\"starting llama-server\""))) {
            std::string_view cmd = l.substr(at + 6);
            cmd = cmd.substr(0, cmd.find('"'));
            std::istringstream in{std::string(cmd)};
            std::vector<std::string> words;
            for (std::string w; in >> w && words.size() < 4096;) words.push_back(std::move(w));
            // a flag of llama.cpp's tables (include/kvfit/llamacpp.h) by any spelling (-c, -np, -ngl, -m) is kept under
            // its JSON name; another long flag under its own name without "--" ("--kv-cache-type": kv_cache_type)
            auto key_of = [&](const std::string & w) -> std::string {
                const flag_spec * f = find_flag_spelled(llamacpp_flags(), w);
                if (!f) f = find_flag_spelled(llamacpp_command_flags(), w);
                if (f) return f->json_name();
                if (w.rfind("--", 0) == 0 && w.size() > 2) {
                    std::string k = w.substr(2);
                    std::replace(k.begin(), k.end(), '-', '_');
                    return k;
                }
                return {};
            };
            for (size_t i = 0; i < words.size(); ++i) {
                const std::string k = key_of(words[i]);
                if (k.empty()) continue;
                const bool value = i + 1 < words.size() && key_of(words[i + 1]).empty();
                if (!value) { // a switch (--flash-attn of the old runner, --embedding, --no-mmap)
                    arg(E, n, k, "true");
                    continue;
                }
                if (k == "model" && models_[E].empty()) models_[E] = words[i + 1];
                arg(E, n, k, words[i + 1]);
                ++i;
            }
        }
        if (votes_[E] > 0 && (has(l, "cudaMalloc failed: out of memory") || has(l, "error loading model") ||
                              has(l, "llama runner process has terminated") || has(l, "msg=\"error starting llama server"))) {
            error_line(E, n, "oom", l);
        }
    }

    // An Ollama runner's llama.cpp line, from its marker on (a journald or slog prefix dropped), for the llama.cpp
    // reader; other lines as empty lines, so that its line numbers are the log's. Bounded by k_max_runner.
    void keep_runner_line(std::string_view l) {
        if (runner_.size() >= k_max_runner) return;
        static constexpr std::string_view marks[] = {"llama_model_loader:", "llm_load_tensors:", "load_tensors:",
                                                     "llama_new_context_with_model:", "llama_context:",
                                                     "llama_kv_cache_init:", "llama_kv_cache:", "llm_load_print_meta:",
                                                     "print_info:"};
        // the runner builds of 2024 print llama.cpp's names before its 2025 refactor; the lines are the same
        // ("CUDA0 KV buffer size = X MiB"), so the old name becomes the one the llama.cpp reader knows
        static constexpr std::pair<std::string_view, std::string_view> renamed[] = {
            {"llama_kv_cache_init:", "llama_kv_cache:"}, {"llm_load_tensors:", "load_tensors:"},
            {"llama_new_context_with_model:", "llama_context:"}, {"llm_load_print_meta:", "print_info:"}};
        size_t at = std::string_view::npos;
        for (auto m : marks) at = std::min(at, l.find(m));
        if (at != std::string_view::npos) {
            std::string_view rest = l.substr(at);
            for (const auto & [from, to] : renamed) {
                if (rest.rfind(from, 0) == 0) {
                    runner_.append(to);
                    rest.remove_prefix(from.size());
                    break;
                }
            }
            runner_.append(rest.substr(0, k_max_runner - std::min(k_max_runner, runner_.size())));
            ++runner_lines_;
        }
        runner_ += '\n';
    }

    void read_mlx(std::string_view l, size_t n) {
        constexpr int E = 2;
        size_t at = 0;
        if (l.rfind("Prompt: ", 0) == 0) num(E, l, n, "Prompt: ", "prompt_tokens");
        if (l.rfind("Generation: ", 0) == 0) num(E, l, n, "Generation: ", "generation_tokens");
        num(E, l, n, "Peak memory: ", "peak_gb");
        if (has(l, "Timing with prompt_tokens=")) {
            num(E, l, n, "prompt_tokens=", "prompt_tokens");
            num(E, l, n, "generation_tokens=", "generation_tokens");
        }
        if ((at = l.find("Averages: ")) != std::string_view::npos) num(E, l, n, "peak_memory=", "peak_gb", at);
        // the command line: "mlx_lm.generate --model X --prefill-step-size 512 ...", "python -m mlx_lm generate ..."
        if ((at = l.find("mlx_lm")) != std::string_view::npos && (has(l, "--model") || has(l, " -m "))) {
            if (has(l, "mlx_lm.server") || has(l, "mlx_lm server")) arg(E, n, "command", "server");
            std::istringstream words{std::string(l.substr(at))};
            std::string w, prev;
            while (words >> w) {
                if (prev == "--model") models_[E] = w;
                else if (prev.rfind("--", 0) == 0 && prev.size() > 2 && w.rfind("-", 0) != 0) {
                    std::string k = prev.substr(2);
                    std::replace(k.begin(), k.end(), '-', '_');
                    arg(E, n, k, w);
                } else if (prev == "-p" || prev == "-g") {
                    arg(E, n, prev == "-p" ? "prompt_tokens" : "generation_tokens", w);
                }
                prev = w;
            }
        }
    }

    size_t votes_[k_engines] = {0, 0, 0, 0};
    std::string versions_[k_engines], models_[k_engines];
    std::string runner_;       // the runner's llama.cpp lines (Ollama), one per log line
    size_t runner_lines_ = 0;
    bool v0_ = false, body_ = false;
    std::vector<std::pair<std::pair<int, std::string>, log_value>> args_;
    std::vector<std::pair<int, serving_figure>> figures_, errors_;
    size_t records_ = 0, last_ = 0;
};

} // namespace

bool detect_serving_engine(std::string_view head, serving_engine & engine) {
    head = head.substr(0, 4u << 20);
    size_t votes[k_engines] = {0, 0, 0, 0};
    bool body = false, llama = false;
    for (size_t start = 0; start < head.size();) {
        const size_t end = std::min(head.find('\n', start), head.size());
        const std::string_view line = head.substr(start, std::min<size_t>(end - start, k_max_line));
        start = end + 1;
        if (!body && line.rfind("# ", 0) == 0) continue; // a corpus file's header
        body = true;
        const int e = engine_of(line);
        if (e == 3) { // an Ollama line: the log is Ollama's, its runner's llama.cpp lines with it
            engine = serving_engine::ollama;
            return true;
        }
        if (e == k_llama) llama = true; // a llama.cpp line: the llama.cpp reader's, unless Ollama's lines come later
        else if (e >= 0) ++votes[e];
    }
    if (llama) return false;
    const int best = int(std::max_element(votes, votes + k_engines) - votes);
    if (votes[best] == 0) return false;
    engine = serving_engine(best);
    return true;
}

serving_log parse_serving_log(std::string_view text) {
    serving_reader r;
    size_t line_no = 0;
    for (size_t start = 0; start < text.size();) {
        const size_t end = std::min(text.find('\n', start), text.size());
        r.line(text.substr(start, end - start), ++line_no);
        start = end + 1;
    }
    return r.finish();
}

serving_log parse_serving_log(std::istream & in) {
    // One character at a time through the stream's buffer: a line longer than k_max_line is cut there (the rest of it
    // skipped), so memory stays one line whatever the file holds.
    serving_reader r;
    std::string line;
    line.reserve(1024);
    size_t line_no = 0;
    bool any = false;
    std::streambuf * sb = in.rdbuf();
    for (int c = sb->sbumpc(); c != std::char_traits<char>::eof(); c = sb->sbumpc()) {
        any = true;
        if (c == '\n') {
            r.line(line, ++line_no);
            line.clear();
            any = false;
        } else if (line.size() < k_max_line) {
            line += char(c);
        }
    }
    if (any) r.line(line, ++line_no);
    return r.finish();
}

} // namespace kvfit
