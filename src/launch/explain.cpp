// `kvfit explain` (include/kvfit/launch.h): read a llama.cpp log, rebuild its settings, plan the same run
// and set every size line beside kvfit's figure. Line formats: llama.cpp src/llama-context.cpp,
// src/llama-kv-cache.cpp, src/llama-memory-recurrent.cpp, src/llama-model.cpp (build 5b4ebc5).
#include "kvfit/error.h"
#include "kvfit/launch.h"
#include "kvfit/printable.h"
#include "kvfit/units.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <charconv>
#include <fmt/format.h>
#include <istream>
#include <map>
#include <optional>
#include <regex>

namespace kvfit {
namespace {

constexpr double mib = 1048576.0;

// The log patterns, compiled once at the first `kvfit explain` (not at process start: std::regex compiles slowly,
// and every other command would pay for it).
struct log_patterns {
    const std::string num = R"(([0-9]+(?:\.[0-9]+)?))";
    const std::regex context{R"(^llama_context: (n_ctx|n_ctx_seq|n_batch|n_ubatch|n_seq_max|flash_attn|kv_unified|n_rs_seq|n_outputs_max)\s+=\s+(\S+)\s*$)"};
    const std::regex offloaded{R"(offloaded (\d+)/(\d+) layers to GPU)"};
    const std::regex model_buffer{R"(^load_tensors:\s+(\S+) model buffer size =\s+)" + num + " MiB"};
    const std::regex output{R"(^llama_context:\s+(\S+)\s+output buffer size =\s+)" + num + " MiB"};
    const std::regex iswa{R"(^llama_kv_cache_iswa: creating\s+(non-SWA|SWA) KV cache, size = (\d+) cells)"};
    // llama_kv_cache_unified: the name of the KV cache's log lines in mid-2025 releases (src/llama-kv-cache-unified.cpp,
    // e.g. b5898; renamed back to llama_kv_cache later), whose size line prints "N seqs" without "used/".
    const std::regex kv_buffer{R"(^llama_kv_cache(?:_iswa|_unified)?:\s+(\S+) KV buffer size =\s+)" + num + " MiB"};
    const std::regex kv_size{R"(^llama_kv_cache(?:_unified)?: size =\s+)" + num + R"( MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+)(?:/\s*(\d+))? seqs\), K \((\w+)\):\s+)" + num + R"( MiB, V \((\w+)\):\s+)" + num + " MiB"};
    const std::regex rs_buffer{R"(^llama_memory_recurrent:\s+(\S+) RS buffer size =\s+)" + num + " MiB"};
    const std::regex rs_size{R"(^llama_memory_recurrent: size =\s+)" + num + R"( MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+) seqs.*\), R \(\w+\):\s+)" + num + R"( MiB, S \(\w+\):\s+)" + num + " MiB"};
    const std::regex compute{R"(^\w+:\s+(\S+) compute buffer size =\s+)" + num + " MiB"};
    const std::regex compute_4dp{R"(^~?\w+:\s+(\S+) compute buffer size is\s+([0-9]+\.[0-9]+) MiB)"};
    // clip.cpp load_hparams / reserve_compute_meta (alloc_compute_meta), llama-adapter.cpp llama_adapter_lora_init_impl
    const std::regex clip_size{R"(^load_hparams: model size:\s+)" + num + " MiB"};
    const std::regex clip_compute{R"(^\w+_compute_meta:\s+(\S+) compute buffer size =\s+)" + num + " MiB"};
    const std::regex lora_buffer{R"(^llama_adapter_lora_init\w*:\s+(\S+) LoRA buffer size =\s+)" + num + " MiB"};
    // llama-server prefixes: "0.00.123.456 I ", "srv  load_model: ", "[1712345678] "
    const std::regex prefix{R"(^(?:\d+\.\d+\.\d+\.\d+ [IWEDT] |\[\d+\] ))"};
};

const log_patterns & rx() {
    static const log_patterns p;
    return p;
}

// "llama_model_loader: loaded meta data with 19 key-value pairs and 292 tensors from PATH (version GGUF V3 (latest))"
// -> PATH: the last " from " with " (version" after it, to the first " (version" after that. Found by hand: the
// regex ".* from (.+?) \(version" backtracked quadratically on a long line (a fuzzer find, 8.6 kB, over 10 s).
std::optional<std::string> loaded_model_path(std::string_view line) {
    static constexpr std::string_view head = "llama_model_loader: loaded meta data with ", from = " from ", version = " (version";
    const size_t at = line.find(head);
    const size_t last_version = line.rfind(version);
    if (at == std::string_view::npos || last_version == std::string_view::npos || last_version < at + head.size()) return {};
    const size_t f = line.rfind(from, last_version - 1);
    if (f == std::string_view::npos || f < at + head.size() || f + from.size() >= last_version) return {};
    const size_t start = f + from.size();
    const size_t end = line.find(version, start + 1);
    return std::string(line.substr(start, end - start));
}

// The lines the patterns below read are short (a llama.cpp size or context line is under 300 characters); a longer
// one is not tried, so no pattern can take long on it.
constexpr size_t k_max_pattern_line = 1024;

// Every pattern above holds one of these words: a line with none of them cannot match, and is skipped without
// running a regex (most lines of a long server log are requests; std::regex made a 32 MB log take 11 s).
bool may_match(std::string_view line) {
    static constexpr std::string_view words[] = {"llama_model_loader: loaded meta data", "llama_context:", "offloaded ",
                                                 "model buffer size", "llama_kv_cache", "llama_memory_recurrent",
                                                 "compute buffer size", "load_hparams: model size", "LoRA buffer size",
                                                 "warmup: flash attention is"};
    for (const std::string_view w : words) {
        if (line.find(w) != std::string_view::npos) return true;
    }
    return false;
}

// Numbers of log lines; anything but a plain number is a one-line error naming the value.
double to_d(const std::string & s) {
    double v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) throw error(fmt::format("log: '{}' is not a number", s));
    return v;
}
uint64_t to_u(const std::string & s) {
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) {
        throw error(fmt::format("log: '{}' is not a whole number", s));
    }
    return v;
}

bool is_host_device(const std::string & d) { return d.rfind("CPU", 0) == 0; }

// The GPU a buffer line names. A Metal run with mmap prints its weights as "MTL0_Mapped model buffer" (the buffer made
// from the mapped file) and its KV and compute buffers as "MTL0" (tests/data/gpu_logs/gpt-oss-20b_metal_m5_c131072.log
// and the other Metal logs there): one device, whose name is the part before "_Mapped".
std::string gpu_of(const std::string & d) {
    constexpr std::string_view mapped = "_Mapped";
    return !is_host_device(d) && d.ends_with(mapped) ? d.substr(0, d.size() - mapped.size()) : d;
}

std::string mib2(uint64_t bytes) { return fmt::format("{:.2f} MiB", double(bytes) / mib); }
std::string mib2(double value) { return fmt::format("{:.2f} MiB", value); }

} // namespace

const char * const k_no_startup_log = "log: no line of a llama.cpp, vLLM, SGLang, Ollama or mlx-lm startup log found "
                                      "(kvfit explain reads those; is this the server's own output?)";

const log_value * llamacpp_log::value(std::string_view key) const {
    for (const auto & [k, v] : context) {
        if (k == key) return &v;
    }
    return nullptr;
}

namespace {

// The most size and context lines one log may give, over all its runs (a run prints about 40), and the most runs:
// what a parse keeps stays bounded whatever the log's length ("log: more than 65536 ...").
constexpr size_t k_max_records = 65536;
constexpr size_t k_max_runs = 256;

// The reader of a log, line by line. With `split`, a model load after the current run created a context starts the
// next run (appended logs: two processes' output one after the other), unless the line before announced a draft
// model ("common_speculative_init_from_params: loading draft model 'X'", common/speculative.cpp: the draft is loaded
// into the same process after the target's context).
class log_reader {
  public:
    explicit log_reader(bool split) : split_(split) { runs_.emplace_back(); }

    void line(std::string_view raw, size_t line_no) {
        if (raw.find('\0') != std::string_view::npos) return; // no text line (a binary file's bytes)
        if (!may_match(raw)) {
            if (raw.find(": loading draft model '") != std::string_view::npos) draft_next_ = true;
            return;
        }
        std::string line(raw.substr(0, k_max_line));
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (!line.empty() && (std::isdigit(static_cast<unsigned char>(line[0])) || line[0] == '[')) {
            line = std::regex_replace(line, rx().prefix, "", std::regex_constants::format_first_only);
        }
        if (auto path = loaded_model_path(line)) {
            if (split_ && !draft_next_ && runs_.back().value("n_ctx") != nullptr) next_run(line_no);
            if (!draft_next_) runs_.back().model_path = std::move(*path);
            draft_next_ = false;
            ++known_;
            return;
        }
        if (read(runs_.back(), line, line_no)) {
            ++known_;
            if (++records_ > k_max_records) {
                throw error(fmt::format("log: more than {} size and context lines (line {}): not a llama.cpp log kvfit "
                                        "reads", k_max_records, line_no));
            }
        }
    }

    std::vector<llamacpp_log> finish() {
        if (known_ == 0 && runs_.front().model_buffers.empty()) {
            // the serving engines' logs were tried first (app/cli_explain_serving.cpp detect_serving_engine): nothing
            // of any startup log kvfit reads is in it, whichever runtime the user ran
            throw error(k_no_startup_log);
        }
        return std::move(runs_);
    }

  private:
    // lines longer than this are cut: every line a pattern reads is under k_max_pattern_line, the model path line
    // under a few hundred bytes; a longer line costs no more than this
    static constexpr size_t k_max_line = 64 << 10;

    void next_run(size_t line_no) {
        if (runs_.size() >= k_max_runs) {
            throw error(fmt::format("log: more than {} runs (model loads after a context, line {})", k_max_runs, line_no));
        }
        runs_.back().last_line = line_no - 1;
        runs_.emplace_back();
        runs_.back().first_line = line_no;
        which_ = "base";
    }

    // One size or context line into `log`; false when the line is none kvfit reads.
    bool read(llamacpp_log & log, const std::string & line, size_t line_no) {
        std::smatch m;
        // A pattern is tried only on a line holding its word; the ones anchored at ^ only at the line's start.
        const auto match = [&](std::string_view word, const std::regex & rx, bool anchored = true) {
            return line.size() <= k_max_pattern_line && line.find(word) != std::string::npos &&
                   std::regex_search(line, m, rx, anchored ? std::regex_constants::match_continuous : std::regex_constants::match_default);
        };
        if (match("llama_context: ", rx().context)) {
            if (m[1] == "n_ctx" && log.value("n_ctx") && log.draft_context_line == 0) log.draft_context_line = line_no;
            log.context.push_back({m[1], {line_no, m[2]}});
        } else if (match("offloaded ", rx().offloaded, false)) {
            log.offloaded = uint32_t(to_u(m[1]));
            log.offload_total = uint32_t(to_u(m[2]));
            log.offloaded_line = line_no;
        } else if (match("model buffer size", rx().model_buffer)) log.model_buffers.push_back({line_no, m[1], to_d(m[2])});
        else if (match("output buffer size", rx().output)) log.output_buffers.push_back({line_no, m[1], to_d(m[2])});
        else if (match("llama_kv_cache_iswa: creating", rx().iswa)) {
            which_ = m[1] == "SWA" ? "swa" : "base";
            log.iswa_cells.push_back({which_, to_u(m[2])});
        } else if (match("KV buffer size", rx().kv_buffer)) {
            // the cache a buffer belongs to: the size lines before it, or, where a poster filtered those out, the
            // iSWA "creating ... KV cache" lines (each cache's buffers follow its creating line)
            const size_t cache = std::max(log.kv_caches.size(), log.iswa_cells.empty() ? 0 : log.iswa_cells.size() - 1);
            log.kv_buffers.push_back({line_no, m[1], to_d(m[2]), int(cache)});
        } else if (match("llama_kv_cache", rx().kv_size) && line.find(" size =") != std::string::npos) {
            const uint32_t seqs_used = uint32_t(to_u(m[4]));
            log.kv_caches.push_back({line_no, to_d(m[1]), to_d(m[7]), to_d(m[9]), to_u(m[2]), uint32_t(to_u(m[3])),
                                     seqs_used, m[5].matched ? uint32_t(to_u(m[5])) : seqs_used, m[6], m[8], which_});
        } else if (match("RS buffer size", rx().rs_buffer)) log.rs_buffers.push_back({line_no, m[1], to_d(m[2])});
        else if (match("llama_memory_recurrent: size =", rx().rs_size)) {
            log.recurrent = log_recurrent{line_no, to_d(m[1]), to_d(m[5]), to_d(m[6]), to_u(m[2]), uint32_t(to_u(m[3])),
                                          uint32_t(to_u(m[4]))};
        } else if (match("_compute_meta:", rx().clip_compute)) log.clip_compute_buffers.push_back({line_no, m[1], to_d(m[2])});
        else if (match("load_hparams: model size", rx().clip_size)) log.mmproj_weights = log_buffer{line_no, "clip", to_d(m[1])};
        else if (line.rfind("warmup: flash attention is ", 0) == 0) log.clip_flash_attn = line.find("enabled") != std::string::npos;
        else if (match("LoRA buffer size", rx().lora_buffer)) log.lora_buffers.push_back({line_no, m[1], to_d(m[2])});
        else if (match("compute buffer size =", rx().compute)) log.compute_buffers.push_back({line_no, m[1], to_d(m[2])});
        else if (match("compute buffer size is", rx().compute_4dp)) log.compute_buffers_4dp.push_back({line_no, m[1], to_d(m[2])});
        else if (line.find(" buffer size ") != std::string::npos && line.find(" MiB") != std::string::npos &&
                 (line.find("llama_") != std::string::npos || line.find("load_tensors:") != std::string::npos)) {
            // a size line of llama.cpp's whose figure no pattern reads (llama.cpp prints "%8.2f MiB" of a size_t, so
            // never a sign, an exponent or nan): an edited or corrupted line, said, not dropped
            if (log.unreadable.size() < 16) log.unreadable.push_back({line_no, line.substr(0, 200)});
            return true;
        }
        else return false;
        return true;
    }

    bool split_;
    std::vector<llamacpp_log> runs_;
    std::string which_ = "base";
    bool draft_next_ = false;
    size_t known_ = 0, records_ = 0;
};

} // namespace

llamacpp_log parse_llamacpp_log(std::string_view text) {
    log_reader reader(false);
    size_t line_no = 0, start = 0;
    while (start < text.size()) {
        const size_t end = std::min(text.find('\n', start), text.size());
        reader.line(text.substr(start, end - start), ++line_no);
        start = end + 1;
    }
    llamacpp_log log = std::move(reader.finish().front());
    log.last_line = line_no;
    return log;
}

std::vector<llamacpp_log> parse_llamacpp_runs(std::istream & in) {
    log_reader reader(true);
    std::string pending; // the line being read, at most 64 KiB of it kept
    std::vector<char> block(1 << 16);
    size_t line_no = 0;
    bool cut = false;
    while (in) {
        in.read(block.data(), std::streamsize(block.size()));
        const std::string_view chunk(block.data(), size_t(in.gcount()));
        size_t start = 0;
        while (start < chunk.size()) {
            const size_t nl = chunk.find('\n', start);
            const std::string_view part = chunk.substr(start, (nl == std::string_view::npos ? chunk.size() : nl) - start);
            if (!cut) {
                pending.append(part.substr(0, std::min(part.size(), (64u << 10) - std::min<size_t>(pending.size(), 64u << 10))));
                cut = pending.size() >= (64u << 10);
            }
            if (nl == std::string_view::npos) break;
            reader.line(pending, ++line_no);
            pending.clear();
            cut = false;
            start = nl + 1;
        }
    }
    if (!pending.empty()) reader.line(pending, ++line_no);
    std::vector<llamacpp_log> runs = reader.finish();
    runs.back().last_line = line_no;
    return runs;
}

log_settings settings_from_log(const llamacpp_log & log, const model_desc & m) {
    log_settings r;
    llamacpp_settings & s = r.settings;
    const log_value * n_ctx = log.value("n_ctx");
    if (!n_ctx) throw error("log: no 'llama_context: n_ctx' line (the log ends before a context was created)");
    s.n_ctx = to_u(n_ctx->text);
    if (const auto * v = log.value("n_seq_max")) {
        s.n_seq = uint32_t(to_u(v->text));
    } else if (const auto * cs = log.value("n_ctx_seq"); cs && to_u(cs->text) > 0 && to_u(cs->text) < s.n_ctx) {
        // a log without the line (a filtered paste): llama.cpp splits n_ctx over the sequences when the cache is not
        // unified (llama-context.cpp: n_ctx_seq = kv_unified ? n_ctx : n_ctx / n_seq_max), so the split gives n_seq
        s.n_seq = uint32_t(s.n_ctx / to_u(cs->text));
        r.notes.push_back(fmt::format("no 'llama_context: n_seq_max = N' line: {} sequences from n_ctx {} / n_ctx_seq {}",
                                      s.n_seq, s.n_ctx, to_u(cs->text)));
    } else {
        r.notes.push_back("no 'llama_context: n_seq_max = N' line: compared at one sequence (-np 1)");
    }
    if (const auto * v = log.value("n_batch")) s.n_batch = uint32_t(to_u(v->text));
    if (const auto * v = log.value("n_ubatch")) s.n_ubatch = uint32_t(to_u(v->text));
    // A log without the lines (a cut or filtered paste) is compared at llama.cpp's defaults (common.h: n_batch 2048,
    // n_ubatch 512); the compute buffer scales with n_ubatch, so the assumption is said, not taken silently.
    for (const char * key : {"n_batch", "n_ubatch"}) {
        if (!log.value(key)) {
            r.notes.push_back(fmt::format("no 'llama_context: {} = N' line: compared at llama.cpp's default {} {} (the "
                                          "compute buffer depends on it)", key, key == std::string_view("n_batch") ? "-b" : "-ub",
                                          key == std::string_view("n_batch") ? s.n_batch : s.n_ubatch));
        }
    }
    if (const auto * v = log.value("kv_unified")) s.kv_unified = v->text == "true" || v->text == "1";
    if (const auto * v = log.value("flash_attn")) {
        s.flash_attn = v->text == "disabled" || v->text == "0" || v->text == "false" ? flash_attn_mode::off
                       : v->text == "auto" ? flash_attn_mode::automatic : flash_attn_mode::on;
    }
    if (!log.kv_caches.empty()) {
        for (auto t : {ggml_type::f32, ggml_type::f16, ggml_type::bf16, ggml_type::q8_0, ggml_type::q4_0, ggml_type::q4_1,
                       ggml_type::iq4_nl, ggml_type::q5_0, ggml_type::q5_1}) {
            if (ggml_traits(t).name == log.kv_caches.front().type_k) s.type_k = t;
            if (ggml_traits(t).name == log.kv_caches.front().type_v) s.type_v = t;
        }
    }
    // the outputs the target reserved, as logged (llama-context.cpp:318 "n_outputs_max = N"): llama-server's
    // n_parallel x (1 + N) (server_output_limits, server-context.cpp:41-53), libllama's / the addon's n_batch, or what
    // the program set. A log without the line (builds before n_outputs_max) reserved n_batch outputs (0).
    if (const auto * v = log.value("n_outputs_max")) s.n_outputs_max = uint32_t(to_u(v->text));
    // speculative decoding (spec.cpp): the target's n_rs_seq is --spec-draft-n-max with draft-mtp (need_n_rs_seq,
    // common.h:394-400); a second context on a model with NextN layers is the MTP context, N from the target's outputs
    // (n_parallel x (1 + N), server_output_limits)
    const log_value * rs_seq = log.value("n_rs_seq");
    if (rs_seq && to_u(rs_seq->text) > 0) {
        s.spec.mtp = true;
        s.spec.n_max = uint32_t(to_u(rs_seq->text));
        r.notes.push_back(fmt::format("n_rs_seq {}: --spec-type draft-mtp --spec-draft-n-max {}", s.spec.n_max, s.spec.n_max));
    } else if (log.draft_context_line && (m.n_layer_mtp > 0 || m.n_layer_mtp_apart > 0)) {
        s.spec.mtp = true;
        if (const auto * v = log.value("n_outputs_max"); v && to_u(v->text) >= s.n_seq) {
            s.spec.n_max = uint32_t(to_u(v->text) / std::max<uint32_t>(1, s.n_seq) - 1);
        }
        r.notes.push_back(fmt::format("a second context on a model with NextN layers: --spec-type draft-mtp "
                                      "--spec-draft-n-max {}", s.spec.n_max));
    }
    if (s.spec.mtp) {
        for (const auto & k : log.kv_caches) {
            if (k.line_no < log.draft_context_line) continue;
            for (auto t : {ggml_type::f32, ggml_type::f16, ggml_type::bf16, ggml_type::q8_0, ggml_type::q4_0}) {
                if (ggml_traits(t).name == k.type_k) s.spec.type_k = t;
                if (ggml_traits(t).name == k.type_v) s.spec.type_v = t;
            }
            break;
        }
    }
    // A window cache as large as the full one means --swa-full.
    for (const auto & [which, cells] : log.iswa_cells) {
        if (which != "swa") continue;
        llamacpp_settings capped = s;
        const auto c = llamacpp_context_size(m, capped);
        const auto caches = llamacpp_kv_caches(m, capped, c);
        if (caches.size() == 2 && cells > caches[1].cells_per_stream) {
            s.swa_full = true;
            r.notes.push_back(fmt::format("window cache of {} cells (> {} capped): --swa-full", cells, caches[1].cells_per_stream));
        }
    }
    std::vector<double> split;
    for (const auto & b : log.model_buffers) {
        const std::string dev = gpu_of(b.device);
        if (is_host_device(dev) || std::count(r.log_devices.begin(), r.log_devices.end(), dev)) continue;
        r.log_devices.push_back(dev);
        r.gpus.push_back({dev, 1ull << 40});
        split.push_back(b.mib);
    }
    // -ngl 0 on a GPU build (ROCm/ROCm#5104: "offloaded 0/41 layers", "ROCm0 compute buffer size = 1094.99 MiB"): no
    // GPU model buffer, yet llama_context creates a backend for every device of the model whatever -ngl
    // (llama-context.cpp, the loop over model.devices that calls ggml_backend_dev_init) and the scheduler reserves that
    // GPU's compute buffer for the ops it offloads. Such a GPU is named only by its compute buffer ("<dev>_Host" is its
    // pinned host buffer, not a device).
    if (r.gpus.empty()) {
        for (const auto & b : log.compute_buffers) {
            if ((log.draft_context_line && b.line_no >= log.draft_context_line) || is_host_device(b.device) ||
                b.device.ends_with("_Host") || std::count(r.log_devices.begin(), r.log_devices.end(), b.device)) {
                continue;
            }
            r.log_devices.push_back(b.device);
            r.gpus.push_back({b.device, 1ull << 40});
            r.notes.push_back(fmt::format("{}: a compute buffer and no model buffer: a GPU with no layer (-ngl 0)", b.device));
        }
    }
    if (r.gpus.size() > 1 && split.size() == r.gpus.size()) {
        r.placement.tensor_split = split;
        r.notes.push_back("several GPUs: layers split in proportion to their model buffers (the log does not print -ts)");
    }
    if (log.offloaded) r.placement.n_gpu_layers = int32_t(*log.offloaded);
    else r.placement.n_gpu_layers = r.gpus.empty() ? 0 : -1;
    const bool kv_on_gpu = std::any_of(log.kv_buffers.begin(), log.kv_buffers.end(),
                                       [](const log_buffer & b) { return !is_host_device(b.device); });
    if (!r.gpus.empty() && r.placement.n_gpu_layers != 0 && !log.kv_buffers.empty() && !kv_on_gpu) {
        r.placement.no_kv_offload = true;
        r.notes.push_back("KV buffers only on the CPU with a GPU present: --no-kv-offload");
    }
    if (r.gpus.empty()) r.notes.push_back("no GPU model buffer in the log: a CPU-only run");
    return r;
}

namespace {

// Index into plan.devices of a log device name ("CPU*" -> host, GPUs by their order in the model buffers).
size_t device_index(const log_settings & ls, const llamacpp_plan & plan, const std::string & name) {
    const auto it = std::find(ls.log_devices.begin(), ls.log_devices.end(), gpu_of(name));
    return it == ls.log_devices.end() || is_host_device(name) ? plan.devices.size() - 1 : size_t(it - ls.log_devices.begin());
}

void add(explanation & e, size_t line, std::string what, std::string log, std::string kvfit, std::string note = {}) {
    const bool same = log == kvfit;
    if (!same && log.find(" MiB") != std::string::npos && kvfit.find(" MiB") != std::string::npos) {
        const double delta = std::strtod(kvfit.c_str(), nullptr) - std::strtod(log.c_str(), nullptr);
        note = fmt::format("kvfit {} by {:.2f} MiB{}{}", delta < 0 ? "under" : "over", std::abs(delta),
                           note.empty() ? "" : "; ", note);
    }
    e.rows.push_back({line, std::move(what), std::move(log), std::move(kvfit), same, std::move(note)});
    if (!same) ++e.differences;
}

// Bytes of KV cache `cache` (0 = base, 1 = swa when two) on device `dev`.
uint64_t kv_bytes_on(const model_desc & m, const llamacpp_plan & plan, size_t cache, size_t dev) {
    const bool two = plan.kv.size() == 2;
    const std::vector<uint64_t> bytes = llamacpp_kv_bytes_by_layer(m, plan.settings, plan.ctx);
    uint64_t sum = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (!m.has_kv(il)) continue;
        const bool in_swa = m.is_swa(il) && !plan.settings.swa_full;
        if (two && (cache == 1) != in_swa) continue;
        const size_t d = plan.placement.no_kv_offload ? plan.devices.size() - 1 : plan.layer_device[il];
        if (d == dev) sum += bytes[il];
    }
    return sum;
}

void explain_context(explanation & e, const llamacpp_log & log, const llamacpp_plan & plan) {
    const std::map<std::string, std::string> kv = {
        {"n_ctx", std::to_string(plan.ctx.n_ctx)},       {"n_ctx_seq", std::to_string(plan.ctx.n_ctx_seq)},
        {"n_batch", std::to_string(plan.ctx.n_batch)},   {"n_ubatch", std::to_string(plan.ctx.n_ubatch)},
        {"n_seq_max", std::to_string(plan.ctx.n_seq)},   {"kv_unified", plan.settings.kv_unified ? "true" : "false"},
        {"flash_attn", plan.ctx.flash_attn ? "enabled" : "disabled"}};
    for (const auto & [key, v] : log.context) {
        const auto it = kv.find(key);
        if (it == kv.end()) continue;
        std::string mine = it->second;
        if (log.draft_context_line && v.line_no >= log.draft_context_line) { // the draft / MTP context's own line
            if (key != "n_ctx" && key != "n_ctx_seq") continue;
            mine = std::to_string(key == "n_ctx" ? plan.spec.ctx.n_ctx : plan.spec.ctx.n_ctx_seq);
            add(e, v.line_no, "draft context " + key, v.text, mine);
            continue;
        }
        if (key == "flash_attn" && v.text == "auto") mine = "auto"; // printed before the auto check resolves it
        add(e, v.line_no, key, v.text, mine);
    }
}

void explain_buffers(explanation & e, const llamacpp_log & log, const log_settings & ls, const model_desc & m,
                     const llamacpp_plan & plan) {
    // Model buffers: several host lines (CPU_Mapped + CPU_REPACK) together hold the host's weights.
    std::map<size_t, double> model_mib;
    std::map<size_t, size_t> model_line;
    for (const auto & b : log.model_buffers) {
        const size_t d = device_index(ls, plan, b.device);
        model_mib[d] += b.mib;
        model_line[d] = b.line_no;
    }
    for (const auto & [d, total] : model_mib) {
        const auto & dev = plan.devices[d];
        add(e, model_line[d], fmt::format("model buffer {}", dev.is_host ? "host" : ls.log_devices[d]), mib2(total),
            mib2(dev.used.weights_bytes), dev.is_host ? "token embedding, CPU layers and any expert overrides" : "");
    }
    const auto in_draft = [&](size_t line) { return log.draft_context_line && line >= log.draft_context_line; };
    for (const auto & b : log.output_buffers) {
        if (in_draft(b.line_no)) continue; // the draft / MTP context's, host memory: not planned (n_vocab x n_seq x 4 B)
        const auto & host = plan.devices.back();
        add(e, b.line_no, "output buffer " + b.device, mib2(b.mib), mib2(host.used.output_bytes - host.spec.output_bytes),
            "n_vocab x n_seq x 4 B");
    }
    for (const auto & b : log.kv_buffers) {
        if (in_draft(b.line_no)) {
            const auto & dev = plan.devices[device_index(ls, plan, b.device)];
            add(e, b.line_no, "draft KV buffer " + b.device, mib2(b.mib), mib2(dev.spec.kv_bytes));
            continue;
        }
        const size_t cache = log.kv_caches.size() > 1 || log.iswa_cells.size() > 1 ? size_t(std::max(0, b.cache)) : 0;
        add(e, b.line_no, fmt::format("KV buffer {} (cache {})", b.device, cache), mib2(b.mib),
            mib2(kv_bytes_on(m, plan, cache, device_index(ls, plan, b.device))));
    }
    for (size_t i = 0; i < log.kv_caches.size(); ++i) {
        const log_kv_cache & k = log.kv_caches[i];
        if (in_draft(k.line_no)) {
            const std::string lg = fmt::format("{} ({} cells, {} layers)", mib2(k.mib), k.cells, k.n_layer);
            add(e, k.line_no, "draft KV cache", lg, fmt::format("{} ({} cells, {} layers)", mib2(plan.spec.bytes.kv_bytes),
                                                              plan.spec.ctx.n_ctx_seq, plan.spec.n_layer_kv));
            continue;
        }
        const std::string lg = fmt::format("{} ({} cells, {} layers, {}/{} seqs), K ({}): {}, V ({}): {}", mib2(k.mib),
                                           k.cells, k.n_layer, k.seqs_used, k.seqs, k.type_k, mib2(k.k_mib), k.type_v, mib2(k.v_mib));
        std::string mine = "no such cache in the plan";
        if (i < plan.kv.size()) {
            const kv_cache_buffer & c = plan.kv[i];
            mine = fmt::format("{} ({} cells, {} layers, {}/{} seqs), K ({}): {}, V ({}): {}", mib2(c.bytes()),
                               c.cells_per_stream, c.n_layer, plan.ctx.n_seq, c.n_stream,
                               ggml_traits(plan.settings.type_k).name, mib2(c.k_bytes), ggml_traits(plan.settings.type_v).name,
                               mib2(c.v_bytes));
        }
        add(e, k.line_no, fmt::format("KV cache {} ({})", i, i < plan.kv.size() ? plan.kv[i].name : k.which), lg, mine);
    }
    for (const auto & b : log.rs_buffers) {
        add(e, b.line_no, "recurrent state buffer " + b.device, mib2(b.mib), mib2(plan.rs.bytes()));
    }
    if (log.recurrent) {
        const log_recurrent & r = *log.recurrent;
        add(e, r.line_no, "recurrent state", fmt::format("{}, R (f32): {}, S (f32): {}", mib2(r.mib), mib2(r.r_mib), mib2(r.s_mib)),
            fmt::format("{}, R (f32): {}, S (f32): {}", mib2(plan.rs.bytes()), mib2(plan.rs.r_bytes), mib2(plan.rs.s_bytes)),
            fmt::format("llama.cpp prints {} layers (all blocks); {} hold state", r.n_layer, plan.rs.n_layer));
    }
    // the backend's terms on a GPU's compute buffer (compute_cuda.cpp): estimates, named in the row's note
    auto terms_note = [&](size_t dev) {
        std::string note;
        for (const auto & t : plan.backend_terms) {
            if (t.device != dev || !t.applied || t.buffer != "compute" || t.added_bytes == 0) continue;
            note += fmt::format("{}{} {} + {} (estimate from ggml source)", note.empty() ? "" : "; ",
                                gpu_backend_name(plan.backend.backend), t.name, mib2(t.added_bytes));
        }
        return note;
    };
    for (const auto & b : log.compute_buffers) {
        const size_t dev = device_index(ls, plan, b.device);
        const auto & dv = plan.devices[dev];
        if (in_draft(b.line_no)) {
            add(e, b.line_no, "draft compute buffer " + b.device, mib2(b.mib), mib2(dv.spec.compute_bytes),
                plan.spec.compute_estimate ? "estimate" : "");
            continue;
        }
        add(e, b.line_no, "compute buffer " + b.device, mib2(b.mib), mib2(dv.used.compute_bytes - dv.spec.compute_bytes),
            terms_note(dev));
    }
    for (const auto & b : log.compute_buffers_4dp) {
        const auto & dev = plan.devices[device_index(ls, plan, b.device)];
        const uint64_t bytes = dev.used.compute_bytes - dev.spec.compute_bytes;
        add(e, b.line_no, "compute buffer " + b.device + " (at dispose)", fmt::format("{:.4f} MiB", b.mib),
            fmt::format("{:.4f} MiB", double(bytes) / mib));
    }
}

// The projector's and adapters' lines (clip.cpp, llama-adapter.cpp) beside the plan's, when the files were given.
void explain_extras(explanation & e, const llamacpp_log & log, const llamacpp_plan & plan) {
    const llamacpp_settings & s = plan.settings;
    const bool clip = log.mmproj_weights || !log.clip_compute_buffers.empty();
    if (clip && !s.mmproj) {
        e.notes.push_back(fmt::format("the log loads a projector ({} MiB of weights, {} MiB of clip compute): pass --mmproj FILE "
                                      "to compare it", log.mmproj_weights ? fmt::format("{:.2f}", log.mmproj_weights->mib) : "?",
                                      log.clip_compute_buffers.empty() ? "?" : fmt::format("{:.2f}", log.clip_compute_buffers[0].mib)));
    } else if (clip) {
        // the warmup's reserve with the log's flash attention (clip follows -fa: clip.cpp:3706-3737)
        const bool fa = log.clip_flash_attn.value_or(s.flash_attn != flash_attn_mode::off);
        const mmproj_compute c = llamacpp_mmproj_compute(*s.mmproj, fa);
        if (log.mmproj_weights) {
            add(e, log.mmproj_weights->line_no, "projector weights (clip model size)", mib2(log.mmproj_weights->mib),
                mib2(s.mmproj->weights_bytes));
        }
        if (!log.clip_compute_buffers.empty()) {
            // clip's scheduler prints one line per backend; the CPU build has one (the GPU/CPU split is not modelled)
            const log_buffer & b = log.clip_compute_buffers.front();
            add(e, b.line_no, "projector compute buffer " + b.device, mib2(b.mib), mib2(c.bytes),
                c.modelled ? "" : "estimate: " + c.why);
        }
    }
    if (!log.lora_buffers.empty() && s.lora.empty()) {
        e.notes.push_back(fmt::format("the log loads LoRA adapters ({} buffers): pass --lora FILE to compare them",
                                      log.lora_buffers.size()));
    } else if (!log.lora_buffers.empty()) {
        // one buffer per adapter and buffer type, in load order (llama-adapter.cpp:380-392)
        if (log.lora_buffers.size() == s.lora.size()) {
            for (size_t k = 0; k < s.lora.size(); ++k) {
                const log_buffer & b = log.lora_buffers[k];
                add(e, b.line_no, "LoRA buffer " + b.device, mib2(b.mib), mib2(s.lora[k].bytes()), s.lora[k].path);
            }
        } else {
            double logged = 0;
            uint64_t planned = 0;
            for (const auto & b : log.lora_buffers) logged += b.mib;
            for (const auto & a : s.lora) planned += a.bytes();
            add(e, log.lora_buffers.front().line_no, "LoRA buffers (all devices)", mib2(logged), mib2(planned),
                "the sum of every adapter's buffers");
        }
    }
}

} // namespace

explanation explain_log(const llamacpp_log & log, const model_desc & m, const llamacpp_settings * extras) {
    log_settings ls = settings_from_log(log, m);
    if (extras) {
        ls.settings.mmproj = extras->mmproj;
        ls.settings.mmproj_offload = extras->mmproj_offload;
        ls.settings.lora = extras->lora;
    }
    explanation e;
    e.notes = ls.notes;
    const llamacpp_plan plan = plan_llamacpp(m, ls.settings, ls.placement, ls.gpus, 0);
    explain_extras(e, log, plan);
    if (log.offloaded) {
        add(e, log.offloaded_line, "offloaded layers", fmt::format("{}/{}", *log.offloaded, *log.offload_total),
            fmt::format("{}/{}", plan.n_gpu_layers, m.n_layer + m.n_layer_mtp + 1), "-ngl counts the output layer");
    }
    e.release = plan.settings.release;
    explain_context(e, log, plan);
    explain_buffers(e, log, ls, m, plan);
    for (const auto & [line, text] : log.unreadable) {
        add(e, line, "size line", "unreadable figure", "-", fmt::format("not a size llama.cpp prints: \"{}\"", text));
    }
    std::stable_sort(e.rows.begin(), e.rows.end(), [](const explain_row & a, const explain_row & b) { return a.line_no < b.line_no; });
    return e;
}

std::string render_explanation(const model_desc & m, const explanation & e) {
    std::string out = fmt::format("{} ({}): the log beside kvfit's plan ({})\n", printable(m.name, false), printable(m.source, false),
                                  llamacpp_release_name(e.release));
    for (const auto & n : e.notes) out += fmt::format("  settings: {}\n", n);
    size_t width = 0;
    for (const auto & r : e.rows) width = std::max(width, r.what.size());
    for (const auto & r : e.rows) {
        out += fmt::format("  line {:>5}  {:<{}}  log {}\n", r.line_no, r.what, width, r.log);
        out += fmt::format("  {:>10}  {:<{}}  kvfit {}{}\n", r.same ? "=" : "DIFFERS", "", width, r.kvfit,
                           r.note.empty() ? "" : "  (" + r.note + ")");
    }
    out += e.differences == 0 ? fmt::format("All {} lines match.\n", e.rows.size())
                              : fmt::format("{} of {} lines differ.\n", e.differences, e.rows.size());
    return out;
}

} // namespace kvfit
