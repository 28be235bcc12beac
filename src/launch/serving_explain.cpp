// `kvfit explain` for vLLM, SGLang, Ollama and mlx-lm logs (include/kvfit/serving_log.h): the log's settings become the
// runtime's flags (parse_vllm_flags, parse_sglang_flags, parse_mlx_flags: the same parsing as the CLI's), the run is
// planned, and every figure the log prints is set beside kvfit's. Two kinds of row:
// - at the log's budget: the pool the log's own "Available KV cache memory" (vLLM) or avail-mem figures (SGLang) give,
//   planned over the rounding of the printed figure (2 decimals of GiB): equal when the logged figure is within it;
// - kvfit's own: what kvfit derives without the log's budget (its non-KV terms, the GPU given), equal within 2 %.
#include "kvfit/serving_log.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/mlx.h"
#include "kvfit/ollama.h"
#include "kvfit/printable.h"
#include "kvfit/sglang.h"
#include "kvfit/vllm.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit {
namespace {

constexpr double GiB = double(1ull << 30);
constexpr double k_derived_tolerance = 0.02; // issue 27: kvfit's own budget within 2 % of the log

void add(explanation & e, size_t line, std::string what, std::string log, std::string mine, bool same, std::string note = {}) {
    e.rows.push_back({line, std::move(what), std::move(log), std::move(mine), same, std::move(note)});
    if (!same) ++e.differences;
}

/// A log's figure as a byte or token count: a negative, NaN or absurd figure (a fuzzed or corrupted log) clamps to
/// [0, 2^60] instead of a float-to-integer conversion outside its range (undefined behaviour).
uint64_t clamp_count(double v) {
    constexpr double top = double(1ull << 60);
    if (!(v > 0)) return 0;
    return v >= top ? (1ull << 60) : uint64_t(v);
}

bool within(double mine, double logged, double tol) {
    return logged == 0 ? mine == 0 : std::abs(mine - logged) <= tol * std::abs(logged);
}

std::string pct(double mine, double logged) {
    return logged == 0 ? std::string("-") : fmt::format("{:+.1f} %", (mine - logged) / logged * 100);
}

std::string tokens(uint64_t n) { return fmt::format("{}", n); }

// A Python repr as a flag's text: strings unquoted, True/False as true/false, None as absent, a dict or list as JSON.
bool flag_text(const std::string & repr, std::string & out) {
    if (repr == "None" || repr.empty()) return false;
    if (repr == "True" || repr == "False") {
        out = repr == "True" ? "true" : "false";
        return true;
    }
    if ((repr.front() == '\'' || repr.front() == '"') && repr.size() >= 2 && repr.back() == repr.front()) {
        out = repr.substr(1, repr.size() - 2);
        return true;
    }
    if (repr.rfind("torch.", 0) == 0) {
        out = repr.substr(6);
        return true;
    }
    if (repr.front() == '{' || repr.front() == '[') { // {'method': 'mtp', 'x': True} -> JSON
        std::string j;
        char quote = 0;
        for (size_t i = 0; i < repr.size(); ++i) {
            const char c = repr[i];
            if (quote) {
                j += c == quote ? '"' : c;
                if (c == quote) quote = 0;
                continue;
            }
            if (c == '\'' || c == '"') {
                quote = c;
                j += '"';
            } else if (repr.compare(i, 4, "True") == 0) {
                j += "true", i += 3;
            } else if (repr.compare(i, 5, "False") == 0) {
                j += "false", i += 4;
            } else if (repr.compare(i, 4, "None") == 0) {
                j += "null", i += 3;
            } else {
                j += c;
            }
        }
        out = j;
        return true;
    }
    out = repr;
    return true;
}

// The runtime's flags from the log's arguments (those the runtime knows, by JSON name; `rename` maps an engine's
// argument name to kvfit's), then the --assume values; each assumption noted.
flag_values flags_from(const serving_log & log, const serving_inputs & in, const std::vector<flag_spec> & known,
                       const std::vector<std::pair<std::string, std::string>> & rename, std::vector<std::string> & notes) {
    flag_values f;
    auto json_of = [&](std::string name) {
        for (const auto & [from, to] : rename) {
            if (name == from) name = to;
        }
        for (const auto & k : known) {
            if (k.json_name() == name) return name;
        }
        return std::string();
    };
    std::vector<std::string> read;
    for (const auto & [k, v] : log.args) {
        const std::string name = json_of(k);
        std::string text;
        if (name.empty() || !flag_text(v.text, text)) continue;
        f.set(name, text);
        read.push_back(fmt::format("{}={}", name, text));
    }
    if (!read.empty()) {
        std::string s;
        for (const auto & r : read) s += (s.empty() ? "" : ", ") + r;
        notes.push_back("from the log: " + s);
    }
    for (const auto & [k, v] : in.assumed) {
        const std::string name = json_of(k);
        if (name.empty() && k != "vllm_rules") {
            throw error(fmt::format("--assume {}: not a {} setting kvfit plans", k, serving_engine_name(log.engine)));
        }
        f.set(name.empty() ? k : name, v);
        notes.push_back(fmt::format("given (the log does not print it): {}={}", name.empty() ? k : name, v));
    }
    return f;
}

// The printed figure's rounding interval: "5.98" -> [5.975, 5.985).
std::pair<double, double> rounding(const serving_figure & f) {
    const size_t dot = f.text.find('.');
    const int decimals = dot == std::string::npos ? 0 : int(f.text.size() - dot - 1);
    const double half = 0.5 * std::pow(10.0, -decimals);
    return {f.value - half, f.value + half};
}

std::string range_text(uint64_t lo, uint64_t hi) { return lo == hi ? tokens(lo) : fmt::format("{}-{}", lo, hi); }

const device_spec * first_gpu(const std::vector<device_spec> & gpus) { return gpus.empty() ? nullptr : &gpus.front(); }

// The log's verdict: a refusal line, or a pool it sized (or a peak it printed).
// Where the log prints both pools of SGLang's hybrid SWA memory ("swa size: S, full size: F"), the ratio they imply
// (HybridSWAPoolConfigurator: swa = int(full x --swa-full-tokens-ratio)), named beside a difference: equal pools are
// a ratio of 1 (--swa-full-tokens-ratio 1; with --disable-hybrid-swa-memory every layer is full). "" when the log has
// no full pool.
std::string implied_swa_ratio(const serving_log & log, const serving_figure & swa) {
    const serving_figure * full = log.figure("full_layer_tokens");
    if (full == nullptr || full->value <= 0) return "";
    const double r = swa.value / full->value;
    if (swa.value == full->value) {
        return fmt::format("; the log's pools are equal (swa {} = full {}, line {}): --swa-full-tokens-ratio 1 "
                           "(--assume swa_full_tokens_ratio=1)", swa.text, full->text, full->line_no);
    }
    return fmt::format("; the log's pools imply --swa-full-tokens-ratio {:.3f} (swa {} / full {}, line {})", r, swa.text,
                       full->text, full->line_no);
}

std::string log_verdict(const serving_log & log, size_t & line) {
    if (!log.errors.empty()) {
        line = log.errors.front().line_no;
        return "does not start";
    }
    for (const auto & f : log.figures) {
        if (f.key == "kv_tokens" || f.key == "gpu_blocks" || f.key == "peak_gb" || f.key == "max_total_num_tokens") {
            line = f.line_no;
            return "starts";
        }
    }
    line = 0;
    return "";
}

// ---- vLLM --------------------------------------------------------------------------------------------------------

// vLLM's release from the log's version: "0.24.0" -> 0.24; a dev build with no release ("0.1.dev19754+g...") and a
// log that prints none take the 2026 rules, said so.
void vllm_release(const serving_log & log, flag_values & f, std::vector<std::string> & notes) {
    if (f.has("vllm_rules")) return;
    const std::string & v = log.version;
    const size_t dot = v.find('.');
    const size_t dot2 = dot == std::string::npos ? dot : v.find_first_not_of("0123456789", dot + 1);
    const std::string minor = dot == std::string::npos ? "" : v.substr(0, dot2 == std::string::npos ? v.size() : dot2);
    try {
        if (!minor.empty() && minor != "0.1") {
            f.set("vllm_rules", minor);
            (void)parse_vllm_rules(minor);
            notes.push_back(fmt::format("vLLM {} (the log's release): {}", v, vllm_rules_name(parse_vllm_rules(minor))));
            return;
        }
    } catch (const error &) {
    }
    f.set("vllm_rules", log.v0_engine ? "2025" : "2026");
    notes.push_back(fmt::format("vLLM release {}: {} assumed", v.empty() ? "not printed" : "'" + v + "' (a dev build)",
                                vllm_rules_name(log.v0_engine ? vllm_rules::v2025 : vllm_rules::v2026)));
}

std::string vllm_terms(const vllm_rank & r) {
    std::string s;
    for (const auto & t : r.terms) {
        if (t.name == "vision tower weights") continue;
        // a rule or a given figure has no arithmetic: its source says why (--enforce-eager: no graphs)
        s += fmt::format("; {} {:.2f} GiB ({}: {})", t.name, double(t.bytes) / GiB, t.basis, t.how.empty() ? t.source : t.how);
    }
    return s;
}

void explain_vllm(explanation & e, const serving_log & log, const model_desc & m, const serving_inputs & in) {
    flag_values f = flags_from(log, in, vllm_flags(), {{"max_seq_len", "max_model_len"}}, e.notes);
    vllm_release(log, f, e.notes);
    if (f.has("quantization")) { // a method kvfit does not size (auto_round, ...): the weights row shows the log's
        flag_values q;
        q.set("quantization", f.text("quantization"));
        try {
            (void)parse_vllm_flags(q);
        } catch (const error &) {
            e.notes.push_back(fmt::format("quantization '{}' is not one kvfit sizes: weights as the model's source gives them",
                                          f.text("quantization")));
            f.erase("quantization");
        }
    }
    if (!f.has("max_model_len")) {
        for (const char * k : {"max_model_len", "concurrency_len"}) {
            if (const auto * x = log.figure(k); x && !f.has("max_model_len")) {
                f.set("max_model_len", fmt::format("{:.0f}", x->value));
                e.notes.push_back(fmt::format("max_model_len {:.0f} from line {}", x->value, x->line_no));
            }
        }
    }
    if (!f.has("gpu_memory_utilization")) {
        if (const auto * x = log.figure("gpu_memory_utilization")) f.set("gpu_memory_utilization", x->text);
    }
    vllm_settings s = parse_vllm_flags(f);
    if (log.v0_engine && s.max_num_batched_tokens == 0 && s.max_model_len > 0) {
        // V0's SchedulerConfig: without chunked prefill the profile batch is max(max_model_len, 2048) tokens (chunked
        // prefill came on by default above 32K, with 512: EngineArgs.create_engine_config, v0.5-v0.6)
        s.max_num_batched_tokens = uint32_t(s.max_model_len > 32768 ? 512 : std::max<int64_t>(s.max_model_len, 2048));
        e.notes.push_back(fmt::format("V0 engine: max_num_batched_tokens {} (V0's SchedulerConfig default)", s.max_num_batched_tokens));
    }
    std::vector<device_spec> gpus;
    if (!in.gpu.empty()) gpus = parse_gpu_list(in.gpu);
    else if (const auto * t = log.figure("total_gpu_gib")) {
        gpus.push_back({"GPU (the log's total)", clamp_count(t->value * GiB)});
        e.notes.push_back(fmt::format("GPU total {} GiB from line {}", t->text, t->line_no));
    }
    const device_spec unknown{"GPU", 1ull << 40};
    const device_spec & gpu = first_gpu(gpus) ? gpus.front() : unknown;

    // weights
    const serving_figure * w = log.figure("weights_gib");
    const vllm_plan own = plan_vllm(m, s, gpu, gpu.compute_capability);
    size_t limiting = 0;
    for (size_t i = 0; i < own.ranks.size(); ++i) {
        if (own.ranks[i].available_kv_bytes < own.ranks[limiting].available_kv_bytes) limiting = i;
    }
    const vllm_rank & r0 = own.ranks.at(limiting);
    if (w) {
        const double mine = double(r0.weights_bytes) / GiB;
        add(e, w->line_no, "weights per GPU", w->text + " GiB", fmt::format("{:.2f} GiB", mine), within(mine, w->value, k_derived_tolerance),
            within(mine, w->value, k_derived_tolerance) ? "kvfit's weights, within 2 %"
                : fmt::format("{}: kvfit sizes the config's {} parameters as {}; the checkpoint loaded takes the log's "
                              "figure, which kvfit's budget below uses", pct(mine, w->value), m.n_params(),
                              m.weights.exact ? "read from the checkpoint" : "the runtime's default weights"));
    }

    // the pool at the log's budget
    const serving_figure * avail = log.figure("available_kv_gib", true);
    const serving_figure * toks = log.figure("kv_tokens");
    const serving_figure * blocks = log.figure("gpu_blocks");
    const serving_figure * conc = log.figure("max_concurrency");
    const serving_figure * mamba = log.figure("mamba_blocks");
    const serving_figure * need_err = nullptr;
    for (const auto & x : log.errors) {
        if (x.key == "kv_needed") need_err = &x;
    }
    // the budget: the log's (over the rounding of its 2 decimals), else --kv-cache-memory-bytes as the run gave it
    const bool given_budget = s.kv_cache_memory_bytes > 0;
    if ((avail && avail->value > 0) || given_budget) {
        vllm_settings a = s, b = s;
        std::string at;
        if (avail && avail->value > 0) {
            const auto [lo, hi] = rounding(*avail);
            a.kv_cache_memory_bytes = clamp_count(lo * GiB);
            b.kv_cache_memory_bytes = std::max<uint64_t>(clamp_count(hi * GiB), 1) - 1;
            at = fmt::format("at the log's {} GiB (line {})", avail->text, avail->line_no);
        } else {
            at = fmt::format("at --kv-cache-memory-bytes {}", s.kv_cache_memory_bytes);
        }
        const vllm_plan pa = plan_vllm(m, a, gpu, gpu.compute_capability), pb = plan_vllm(m, b, gpu, gpu.compute_capability);
        if (toks) {
            const bool v2025 = pa.settings.rules == vllm_rules::v2025;
            const uint64_t tl = v2025 ? pa.kv_cache_tokens_v2025 : pa.kv_cache_tokens, th = v2025 ? pb.kv_cache_tokens_v2025 : pb.kv_cache_tokens;
            const bool v0_tokens = log.v0_engine || (toks->key == "kv_tokens" && blocks != nullptr);
            const uint64_t l0 = v0_tokens ? pa.num_gpu_blocks * pa.block_size : tl, h0 = v0_tokens ? pb.num_gpu_blocks * pb.block_size : th;
            const bool same = toks->value >= double(l0) && toks->value <= double(h0);
            add(e, toks->line_no, "GPU KV cache size (tokens)", toks->text, range_text(l0, h0), same,
                same ? at : fmt::format("{} {}: {} blocks of {} tokens, {} per request", at, pct(double(l0), toks->value),
                                        pa.num_gpu_blocks, pa.block_size, pa.per_request_blocks));
        }
        if (blocks) {
            const bool same = blocks->value >= double(pa.num_gpu_blocks) && blocks->value <= double(pb.num_gpu_blocks);
            add(e, blocks->line_no, "GPU blocks", blocks->text, range_text(pa.num_gpu_blocks, pb.num_gpu_blocks), same, at);
        }
        if (conc) {
            const std::string cl = fmt::format("{:.2f}", pa.max_concurrency), ch = fmt::format("{:.2f}", pb.max_concurrency);
            const bool same = conc->value >= std::stod(cl) - 1e-9 && conc->value <= std::stod(ch) + 1e-9;
            add(e, conc->line_no, "maximum concurrency", conc->text + "x", cl == ch ? cl + "x" : cl + "x-" + ch + "x", same, at);
        }
        if (mamba) {
            const bool same = mamba->value >= double(pa.num_gpu_blocks) && mamba->value <= double(pb.num_gpu_blocks);
            add(e, mamba->line_no, "Mamba cache blocks", mamba->text, range_text(pa.num_gpu_blocks, pb.num_gpu_blocks), same, at);
        }
        if (need_err) {
            const std::string mine = fmt::format("{:.2f} GiB", double(pa.need_bytes) / GiB);
            const std::string logged = fmt::format("{:.2f} GiB", need_err->value);
            add(e, need_err->line_no, "KV one request of max_model_len needs", logged, mine, mine == logged,
                "kv_cache_spec.max_memory_usage_bytes summed over the worker's layers");
            if (const auto * est = log.figure("estimated_max_len")) {
                const bool same = est->value >= double(std::min(pa.max_model_len_fit, pb.max_model_len_fit)) &&
                                  est->value <= double(std::max(pa.max_model_len_fit, pb.max_model_len_fit));
                add(e, est->line_no, "estimated maximum model length", est->text,
                    range_text(pa.max_model_len_fit, pb.max_model_len_fit), same, at);
            }
        }
    }

    // the pool at kvfit's own budget (the GPU known)
    bool derived = false;
    vllm_plan mine = own;
    int64_t budget = 0;
    if (first_gpu(gpus) && !given_budget) {
        budget = own.available_kv_bytes;
        if (w) budget += int64_t(r0.weights_bytes) - int64_t(clamp_count(w->value * GiB));
        std::string how = fmt::format("{} x {:.2f} GiB = {:.2f} GiB, minus weights {:.2f} GiB ({}){}", s.gpu_memory_utilization ? s.gpu_memory_utilization : own.settings.gpu_memory_utilization,
                                      double(r0.total_bytes) / GiB, double(r0.requested_bytes) / GiB,
                                      w ? w->value : double(r0.weights_bytes) / GiB, w ? "the log's" : "kvfit's", vllm_terms(r0));
        if (budget > 0) {
            vllm_settings d = s;
            d.kv_cache_memory_bytes = uint64_t(budget);
            mine = plan_vllm(m, d, gpu, gpu.compute_capability);
        }
        derived = true;
        if (avail) {
            const double kb = double(budget) / GiB;
            const bool same = within(kb, avail->value, k_derived_tolerance) || (budget <= 0 && avail->value <= 0);
            add(e, avail->line_no, "available KV cache memory (kvfit's budget)", avail->text + " GiB", fmt::format("{:.2f} GiB", kb), same,
                fmt::format("{}{}", same ? "within 2 %: " : pct(kb, avail->value) + ": the profile run measured what kvfit "
                            "estimates here; ", how));
        }
        if (toks && budget > 0) {
            const bool v2025 = mine.settings.rules == vllm_rules::v2025;
            const uint64_t t = log.v0_engine || blocks ? mine.num_gpu_blocks * mine.block_size : v2025 ? mine.kv_cache_tokens_v2025 : mine.kv_cache_tokens;
            add(e, toks->line_no, "pool tokens at kvfit's budget", toks->text, tokens(t), within(double(t), toks->value, k_derived_tolerance),
                within(double(t), toks->value, k_derived_tolerance) ? "within 2 %" : pct(double(t), toks->value) + ": from the budget above");
        }
    }

    // the verdict
    size_t vline = 0;
    const std::string lv = log_verdict(log, vline);
    if (!lv.empty()) {
        vllm_plan at_log = given_budget ? own : mine;
        if (!derived && !given_budget && avail && avail->value > 0) {
            vllm_settings a = s;
            a.kv_cache_memory_bytes = clamp_count(avail->value * GiB);
            at_log = plan_vllm(m, a, gpu, gpu.compute_capability);
        }
        const bool starts = derived ? budget > 0 && mine.fits() : avail && avail->value <= 0 ? false : at_log.fits();
        const std::string kv = derived || given_budget || (avail && avail->value > 0) ? (starts ? "starts" : "does not start") : "unknown (no GPU, no budget)";
        add(e, vline, "start", lv, kv, kv == lv,
            kv == lv ? (derived ? "kvfit's budget" : "at the log's budget")
                     : (at_log.errors.empty() ? std::string("kvfit: no refusal") : "kvfit: " + at_log.errors.front()));
    }
    for (const auto & x : own.assumptions) e.notes.push_back("assumed: " + x);
}

// ---- SGLang ------------------------------------------------------------------------------------------------------

// The free memory before the weights load and the weights, as the log gives them (model_runner.py load_model prints
// "Load weight begin. avail mem=A" and "Load weight end. ... avail mem=E, mem usage=A - E"; builds before 2025-03 print
// no mem usage, an excerpt may lack the begin line): A and W, and the (A, W) corners of the printed figures' rounding
// that give the smallest and the largest pool (rest = A x fraction - W, profile_max_num_token).
struct sglang_load {
    bool ok = false;
    double a = 0, w = 0;         // the figures as printed (A derived as E + W, or W as A - E)
    double a_lo = 0, w_lo = 0;   // the smallest pool
    double a_hi = 0, w_hi = 0;   // the largest pool
    std::string how;
};

sglang_load sglang_load_window(const serving_figure * begin, const serving_figure * end, const serving_figure * w) {
    sglang_load x;
    if (begin && w) {
        const auto [alo, ahi] = rounding(*begin);
        const auto [wlo, whi] = rounding(*w);
        x = {true, begin->value, w->value, alo, whi, ahi, wlo,
             fmt::format("the log's {} GB free before the load (line {}) and {} GB of weights (line {})", begin->text,
                         begin->line_no, w->text, w->line_no)};
    } else if (end && w) { // rest = (E + W) f - W = E f - W (1 - f): smallest at E low, W high
        const auto [elo, ehi] = rounding(*end);
        const auto [wlo, whi] = rounding(*w);
        x = {true, end->value + w->value, w->value, elo + whi, whi, ehi + wlo, wlo,
             fmt::format("{:.2f} GB free before the load (avail mem {} + mem usage {}, line {}) and {} GB of weights",
                         end->value + w->value, end->text, w->text, w->line_no, w->text)};
    } else if (begin && end) { // no mem usage: W = A - E, rest = E - A (1 - f): smallest at E low, A high
        const auto [alo, ahi] = rounding(*begin);
        const auto [elo, ehi] = rounding(*end);
        x = {true, begin->value, begin->value - end->value, ahi, ahi - elo, alo, alo - ehi,
             fmt::format("the log's {} GB free before the load (line {}) and {} GB after it (line {}): {:.2f} GB of "
                         "weights", begin->text, begin->line_no, end->text, end->line_no, begin->value - end->value)};
    }
    return x;
}

void explain_sglang(explanation & e, const serving_log & log, const model_desc & m, const serving_inputs & in) {
    flag_values f = flags_from(log, in, sglang_flags(), {{"tp_size", "tp"}, {"dp_size", "dp"}}, e.notes);
    if (!f.has("speculative_algorithm")) {
        // server_args prints the speculative defaults without an algorithm (0.4.x: speculative_num_steps=5,
        // speculative_eagle_topk=8, speculative_num_draft_tokens=64, speculative_algorithm=None): no drafter runs
        bool dropped = false;
        for (const char * k : {"speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"}) {
            dropped |= f.has(k);
            f.erase(k);
        }
        if (dropped) e.notes.push_back("speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens: "
                                       "server_args' defaults without a speculative_algorithm, not used");
    }
    sglang_settings s = parse_sglang_flags(f);
    const serving_figure * begin = log.figure("load_begin_avail_gb", true);
    const serving_figure * w = log.figure("weights_gb");
    std::vector<device_spec> gpus;
    if (!in.gpu.empty()) gpus = parse_gpu_list(in.gpu);
    // the pool: "KV Cache is allocated. #tokens: N"; builds before 2025-03 print it on the scheduler's line only
    // ("max_total_num_tokens=N", tp_worker.py: the pool's size unless --max-total-tokens caps it lower)
    const serving_figure * toks = log.figure("kv_tokens");
    if (!toks) toks = log.figure("max_total_num_tokens");
    const serving_figure * swa = log.figure("swa_layer_tokens");
    const serving_figure * slots = log.figure("mamba_slots");
    const serving_figure * mrr = log.figure("max_running_requests");
    const serving_figure * kv_avail = log.figure("kv_avail_gb");
    const sglang_load load = sglang_load_window(begin, log.figure("load_end_avail_gb", true), w);
    // --mem-fraction-static as the log's server_args or --assume states it; else SGLang's default formula, for the GPU
    // given (its capacity, as nvidia-smi reports it), and the pool at that fraction is kvfit's budget (within 2 %)
    const bool fraction_stated = s.mem_fraction_static != 0;
    if (!fraction_stated && first_gpu(gpus)) {
        std::string spec = s.speculative_algorithm;
        std::transform(spec.begin(), spec.end(), spec.begin(), [](unsigned char c) { return char(std::toupper(c)); });
        if (spec == "NEXTN") spec = "EAGLE"; // _resolve_speculative_algorithm_alias
        const uint64_t cap = gpus.front().reported_bytes ? gpus.front().reported_bytes : gpus.front().memory_bytes;
        // the piecewise CUDA graphs SGLang captures hold 8 MiB each of its reserve (rules.cpp sglang_piecewise_cuda_graph)
        const sglang_piecewise pw = sglang_piecewise_cuda_graph(m, s, gpus.front(), spec);
        s.mem_fraction_static = sglang_default_fraction(cap, s.tp, s.dp, s.enable_dp_attention, spec, pw.on ? pw.graphs : 0);
        e.notes.push_back(fmt::format("--mem-fraction-static {:.3f}: not in the log; SGLang's default for {} ({} MiB, "
                                      "server_args._handle_gpu_memory_settings; piecewise CUDA graphs {})",
                                      s.mem_fraction_static, gpus.front().name, cap >> 20,
                                      pw.on ? fmt::format("on: {} x 8 MiB reserved", pw.graphs) : "off: " + pw.why));
        e.notes.insert(e.notes.end(), pw.notes.begin(), pw.notes.end());
    }

    // the K buffer (MHATokenToKVPool: K and V of the pool's size + one page of padding x layers x heads x head_dim; one
    // pool: a sliding-window model prints two, each of its own layers)
    // (MLA and DSA pools print one "KV size": the latent, and DSA's indexer keys, per token)
    auto k_row = [&](const sglang_plan & at) {
        const serving_figure * k = log.figure("k_gb");
        const serving_figure * kv = k ? nullptr : log.figure("kv_gb");
        if ((!k && !kv) || !toks || !at.cell_bytes || at.swa_bytes_per_token != 0) return;
        const serving_figure & f = k ? *k : *kv;
        const double kb = (toks->value + at.settings.page_size) * double(at.alloc_bytes_per_token) / (k ? 2 : 1) / GiB;
        const auto [lo_k, hi_k] = rounding(f);
        const bool ks = kb >= lo_k && kb <= hi_k;
        add(e, f.line_no, k ? "K buffer (GB)" : "KV buffer (GB)", f.text, fmt::format("{:.3f}", kb), ks,
            fmt::format("{}({} + {}) tokens x {} B{}", ks ? "" : pct(kb, f.value) + ": ", toks->text,
                        at.settings.page_size, at.alloc_bytes_per_token, k ? " / 2 (K of K+V)" : " (one latent buffer)"));
    };

    sglang_plan at{};
    bool have_at = false, at_load = false;
    // the budget the log prints ("The available memory for KV cache is X GB": rest_memory, GiB): the pool at exactly
    // that budget, through plan_sglang's own split (mamba slots, sliding-window ratio, page) with nothing else charged
    if (kv_avail && toks && kv_avail->value > 0) {
        auto plan_rest = [&](double gib) {
            sglang_settings x = s;
            x.pre_load_overhead_bytes = 0;
            x.weights_bytes = 0;
            if (x.mem_fraction_static == 0) x.mem_fraction_static = 0.5; // rest = gpu x fraction - 0 = the budget
            const uint64_t rest = clamp_count(gib * GiB);
            return plan_sglang(m, x, {"GPU (the log's budget)", uint64_t(double(rest) / x.mem_fraction_static) + 1});
        };
        const auto [klo, khi] = rounding(*kv_avail);
        const sglang_plan lo = plan_rest(klo), hi = plan_rest(khi);
        at = plan_rest(kv_avail->value);
        have_at = true;
        const bool same = toks->value >= double(lo.max_total_num_tokens) && toks->value <= double(hi.max_total_num_tokens);
        add(e, toks->line_no, "KV cache #tokens at the log's budget", toks->text,
            range_text(lo.max_total_num_tokens, hi.max_total_num_tokens), same,
            fmt::format("{}{} GB (line {}) // {} B per token (cell_size), page {}", same ? "" : pct(double(at.max_total_num_tokens), toks->value) + ": ",
                        kv_avail->text, kv_avail->line_no, at.cell_bytes, at.settings.page_size));
        k_row(at);
    } else if (load.ok) {
        // at the log's load: the free memory before it is the total, the load's use the weights
        auto plan_at = [&](double a, double wb) {
            sglang_settings x = s;
            x.pre_load_overhead_bytes = 0;
            x.weights_bytes = clamp_count(wb * GiB);
            return plan_sglang(m, x, {"GPU (the log's free memory)", clamp_count(a * GiB)});
        };
        const sglang_plan lo = plan_at(load.a_lo, load.w_lo), hi = plan_at(load.a_hi, load.w_hi);
        at = plan_at(load.a, load.w);
        have_at = at_load = true;
        const std::string how = fmt::format("at {}, --mem-fraction-static {}{}", load.how, at.settings.mem_fraction_static,
                                            fraction_stated ? "" : " (SGLang's default: kvfit's budget)");
        if (toks) {
            const bool in_range = toks->value >= double(lo.max_total_num_tokens) && toks->value <= double(hi.max_total_num_tokens);
            const bool same = in_range || (!fraction_stated && within(double(at.max_total_num_tokens), toks->value, k_derived_tolerance));
            add(e, toks->line_no, fraction_stated ? "KV cache #tokens" : "KV cache #tokens (SGLang's default fraction)", toks->text,
                range_text(lo.max_total_num_tokens, hi.max_total_num_tokens), same,
                in_range ? how : fmt::format("{}{}: {}; {} B per token per rank", same ? "within 2 %, " : "",
                                             pct(double(at.max_total_num_tokens), toks->value), how, at.cell_bytes));
        }
        if (swa) {
            const bool same = swa->value >= double(lo.swa_tokens) && swa->value <= double(hi.swa_tokens);
            add(e, swa->line_no, "sliding-window pool tokens", swa->text, range_text(lo.swa_tokens, hi.swa_tokens), same,
                fmt::format("--swa-full-tokens-ratio {}{}{}", at.settings.swa_full_tokens_ratio,
                            at.settings.swa_full_tokens_ratio_given ? "" : " (SGLang's default)",
                            same ? "" : implied_swa_ratio(log, *swa)));
        }
        if (slots) {
            const bool same = slots->value >= double(lo.mamba_slots) && slots->value <= double(hi.mamba_slots);
            add(e, slots->line_no, "mamba cache slots", slots->text, range_text(lo.mamba_slots, hi.mamba_slots), same,
                fmt::format("--mamba-full-memory-ratio {}", at.settings.mamba_full_memory_ratio));
        }
        if (mrr) {
            add(e, mrr->line_no, "max_running_requests", mrr->text, tokens(at.max_running_requests),
                mrr->value == double(at.max_running_requests), "SGLang's default from the pool and the context");
        }
        k_row(at);
    }
    if (!begin && w && !fraction_stated && !at_load) {
        if (const serving_figure * end = log.figure("load_end_avail_gb")) {
            e.notes.push_back(fmt::format("{} GB free before the load (line {}: avail mem {} + mem usage {}), but "
                                          "--mem-fraction-static is not in the log: kvfit's budget not derived",
                                          fmt::format("{:.2f}", end->value + w->value), end->line_no, end->text, w->text));
        }
    }
    const serving_figure * pool = log.figure("swa_pool_gb");
    if (!have_at && pool && toks) {
        // the sliding-window pool's own size ("SWAKVPool mem usage: X GB"): full x full_bytes + swa x swa_bytes
        at = plan_sglang(m, s, {"GPU", 1ull << 40});
        const double ratio = at.settings.swa_full_tokens_ratio;
        const double per = double(at.full_bytes_per_token) + ratio * double(at.swa_bytes_per_token);
        if (per > 0) {
            const auto [lo, hi] = rounding(*pool);
            const uint64_t tl = uint64_t(lo * GiB / per), th = uint64_t(hi * GiB / per);
            const bool same = toks->value >= double(tl) && toks->value <= double(th);
            const serving_figure * swa_tokens = log.figure("swa_layer_tokens");
            add(e, toks->line_no, "KV cache #tokens (full pool)", toks->text, range_text(tl, th), same,
                fmt::format("in the log's {} GB sliding-window pool (line {}): {} B per full token + {} x {} B per "
                            "sliding token{}", pool->text, pool->line_no, at.full_bytes_per_token, ratio, at.swa_bytes_per_token,
                            same || swa_tokens == nullptr ? "" : implied_swa_ratio(log, *swa_tokens)));
            have_at = true;
        }
    }
    const serving_figure * full = log.figure("full_layer_tokens");
    if (!have_at && full && swa) {
        // the sliding-window pool from the full pool the log prints (HybridSWAPoolConfigurator: int(full x ratio),
        // page-aligned)
        at = plan_sglang(m, s, {"GPU", 1ull << 40});
        const uint64_t page = std::max<uint32_t>(1, at.settings.page_size);
        const uint64_t mine = clamp_count(full->value * at.settings.swa_full_tokens_ratio) / page * page;
        add(e, swa->line_no, "sliding-window pool tokens", swa->text, tokens(mine), swa->value == double(mine),
            fmt::format("int({} full tokens (line {}) x --swa-full-tokens-ratio {}{}), page {}{}", full->text, full->line_no,
                        at.settings.swa_full_tokens_ratio, at.settings.swa_full_tokens_ratio_given ? "" : " (SGLang's default)", page,
                        swa->value == double(mine) ? "" : implied_swa_ratio(log, *swa)));
        have_at = true;
    }
    if (w) {
        const uint64_t own_w = plan_sglang(m, s, first_gpu(gpus) ? gpus.front() : device_spec{"GPU", 1ull << 40}).weights_bytes;
        const double mine = double(own_w) / GiB;
        add(e, w->line_no, "weights per rank (mem usage)", w->text + " GB", fmt::format("{:.2f} GB", mine), within(mine, w->value, k_derived_tolerance),
            within(mine, w->value, k_derived_tolerance) ? "within 2 %" : pct(mine, w->value) + ": the load also holds what the weights do not (CUDA graphs come later)");
    }
    bool derived = false;
    sglang_plan own{};
    if (first_gpu(gpus)) {
        sglang_settings x = s;
        if (load.ok) x.weights_bytes = clamp_count(load.w * GiB);
        own = plan_sglang(m, x, gpus.front());
        derived = true;
        if (toks) {
            const bool same = within(double(own.max_total_num_tokens), toks->value, k_derived_tolerance);
            std::string how = fmt::format("{} x {:.2f} GiB free before the load ({} GiB CUDA context: {}), minus {} weights",
                                          own.settings.mem_fraction_static, double(gpus.front().memory_bytes) / GiB,
                                          x.pre_load_overhead_bytes ? fmt::format("{:.2f}", double(*x.pre_load_overhead_bytes) / GiB) : "0.50",
                                          x.pre_load_overhead_bytes ? "given" : "kvfit's constant", load.ok ? "the log's" : "kvfit's");
            add(e, toks->line_no, "KV cache #tokens at kvfit's budget", toks->text, tokens(own.max_total_num_tokens), same,
                (same ? "within 2 %: " : pct(double(own.max_total_num_tokens), toks->value) + ": ") + how);
        }
    }
    size_t vline = 0;
    const std::string lv = log_verdict(log, vline);
    if (!lv.empty() && (have_at || derived)) {
        const sglang_plan & p = derived ? own : at;
        const std::string kv = p.fits() ? "starts" : "does not start";
        std::string why = p.errors.empty() ? (derived ? "kvfit's budget" : "at the log's budget") : "kvfit: " + p.errors.front();
        if (kv != lv && p.errors.empty() && !log.errors.empty()) {
            why = fmt::format("kvfit: no memory refusal; the log stops at line {} ({})", log.errors.front().line_no,
                              log.errors.front().key);
        }
        add(e, vline, "start", lv, kv, kv == lv, why);
    }
}

// ---- mlx-lm ------------------------------------------------------------------------------------------------------

void explain_mlx(explanation & e, const serving_log & log, const model_desc & m, const serving_inputs & in) {
    flag_values f = flags_from(log, in, mlx_flags(), {{"command", "mlx_command"}}, e.notes);
    const serving_figure * pt = log.figure("prompt_tokens");
    const serving_figure * gt = log.figure("generation_tokens");
    const serving_figure * peak = log.figure("peak_gb");
    if (!f.has("context_tokens") && pt) {
        const uint64_t ctx = clamp_count(pt->value) + (gt ? clamp_count(gt->value) : 0);
        f.set("context_tokens", std::to_string(ctx));
        e.notes.push_back(fmt::format("context {} tokens: the prompt (line {}){}", ctx, pt->line_no,
                                      gt ? fmt::format(" and the generation (line {})", gt->line_no) : ""));
    }
    if (!m.weights.exact && !f.has("q_bits")) { // an MLX checkpoint's name says its bits ("...-4bit")
        for (const char * b : {"2bit", "3bit", "4bit", "5bit", "6bit", "8bit"}) {
            if (log.model.find(b) != std::string::npos) {
                f.set("q_bits", std::string(1, b[0]));
                e.notes.push_back(fmt::format("weights: {}-bit affine, group 64 (from the model's name {})", b[0], log.model));
            }
        }
    }
    const mlx_settings s = parse_mlx_flags(f);
    std::vector<device_spec> gpus = in.gpu.empty() ? std::vector<device_spec>{{"Mac (not given)", 1ull << 40}} : parse_gpu_list(in.gpu);
    const mlx_plan p = plan_mlx(m, s, gpus);
    if (peak && !p.devices.empty()) {
        uint64_t used = 0;
        std::string parts;
        for (const auto & b : p.devices.front().buffers) {
            used += b.bytes;
            parts += fmt::format("{}{} {:.2f} GB{} ({})", parts.empty() ? "" : "; ", b.name, double(b.bytes) / 1e9,
                                 b.estimate ? " estimate" : "", b.what);
        }
        const double mine = double(used) / 1e9;
        const bool same = within(mine, peak->value, k_derived_tolerance);
        add(e, peak->line_no, "peak memory (mx.get_peak_memory)", peak->text + " GB", fmt::format("{:.3f} GB", mine), same,
            (same ? "within 2 %: " : pct(mine, peak->value) + ": ") + parts);
    }
    size_t vline = 0;
    const std::string lv = log_verdict(log, vline);
    if (!lv.empty()) {
        const std::string kv = p.starts && (in.gpu.empty() || p.fits) ? "starts" : "does not start";
        add(e, vline, "start", lv, kv, kv == lv, p.refusals.empty() ? (in.gpu.empty() ? "no Mac given: the working set not checked" : "")
                                                                    : "kvfit: " + p.refusals.front());
    }
}


// ---- Ollama ------------------------------------------------------------------------------------------------------

// Ollama prints sizes with format.HumanBytes2 (one decimal of KiB/MiB/GiB): the figure's interval in bytes.
std::pair<double, double> ollama_rounding(const serving_figure & f) {
    const size_t sp = f.text.find(' ');
    const std::string unit = sp == std::string::npos ? "B" : f.text.substr(sp + 1);
    const double mult = unit == "GiB" ? GiB : unit == "MiB" ? double(1ull << 20) : unit == "KiB" ? 1024.0 : unit == "TiB" ? GiB * 1024 : 1.0;
    const std::string num = f.text.substr(0, sp);
    const size_t dot = num.find('.');
    const int decimals = dot == std::string::npos ? 0 : int(num.size() - dot - 1);
    const double half = 0.5 * std::pow(10.0, -decimals) * mult;
    return {f.value - half, f.value + half};
}

std::string human(uint64_t b) { // as Ollama prints it (format.HumanBytes2)
    const double v = double(b);
    if (v >= GiB) return fmt::format("{:.1f} GiB", v / GiB);
    if (v >= double(1ull << 20)) return fmt::format("{:.1f} MiB", v / double(1ull << 20));
    if (v >= 1024) return fmt::format("{:.1f} KiB", v / 1024);
    return fmt::format("{} B", b);
}

void explain_ollama(explanation & e, const serving_log & log, const model_desc & m, const serving_inputs & in) {
    // The settings the log states, each said with its line; --assume only for what it does not state. First the
    // runner's own llama.cpp lines (what llama-server created: "llama_context: n_ctx = N", "n_seq_max = N",
    // "n_ubatch = N", "flash_attn = auto|enabled|disabled", "llama_kv_cache: ... K (f16) ..."), else Ollama's launch
    // line: -c / --ctx-size is NumCtx x numParallel and -np / --parallel numParallel (llm/llama_server.go
    // startLlamaServer; the runner of 2024, llm/server.go NewLlamaServer). Without either, Ollama's default num_ctx
    // applies (server/sched.go: the VRAM tier) and the plan's notes say so.
    flag_values f;
    std::vector<std::pair<std::string, std::string>> stated; // Ollama flag -> how the log states it
    auto state = [&](const std::string & key, const std::string & value, const std::string & how) {
        f.set(key, value);
        stated.emplace_back(key, how);
        e.notes.push_back("from the log: " + how);
    };
    const llamacpp_log * r = log.runner ? &*log.runner : nullptr;
    const log_value * r_ctx = r ? r->value("n_ctx") : nullptr;
    const log_value * r_seq = r ? r->value("n_seq_max") : nullptr;
    const log_value * c_ctx = log.arg("ctx_size");
    const log_value * c_par = log.arg("parallel");
    uint64_t ctx = 0, par = 1;
    if (r_ctx) {
        ctx = clamp_count(std::atof(r_ctx->text.c_str()));
        if (r_seq) par = std::max<uint64_t>(1, clamp_count(std::atof(r_seq->text.c_str())));
        else if (c_par) par = std::max<uint64_t>(1, clamp_count(std::atof(c_par->text.c_str())));
    } else if (c_ctx) {
        ctx = clamp_count(std::atof(c_ctx->text.c_str()));
        if (c_par) par = std::max<uint64_t>(1, clamp_count(std::atof(c_par->text.c_str())));
    }
    par = std::min<uint64_t>(par, 256);
    if (ctx > 0) {
        const std::string where =
            r_ctx ? fmt::format("n_ctx = {} (line {}), {} sequence(s){}", ctx, r_ctx->line_no, par,
                                r_seq ? fmt::format(" (n_seq_max, line {})", r_seq->line_no) : std::string())
                  : fmt::format("launch line -c/--ctx-size {} -np/--parallel {} (line {})", ctx, par, c_ctx->line_no);
        const std::string how = fmt::format("{}: num_ctx {} x {} slot(s)", where, std::max<uint64_t>(1, ctx / par), par);
        state("num_ctx", std::to_string(std::max<uint64_t>(1, ctx / par)), how);
        f.set("num_parallel", std::to_string(par));
        stated.emplace_back("num_parallel", how);
    }
    // flash attention: the runner's "flash_attn = ..." line; else the launch's --flash-attn on|off|auto; the runner of
    // 2024 took a bare --flash-attn only when Ollama enabled it (llm/server.go), so its absence there is "off"
    const log_value * r_fa = r ? r->value("flash_attn") : nullptr;
    const log_value * c_fa = log.arg("flash_attn");
    if (r_fa || c_fa) {
        const std::string t = r_fa ? r_fa->text : c_fa->text;
        const std::string v = t == "auto" ? "" : (t == "disabled" || t == "off" || t == "0" || t == "false") ? "0" : "1";
        const std::string how = fmt::format("flash attention {} (line {})", t == "true" ? "on" : t, (r_fa ? r_fa : c_fa)->line_no);
        if (!v.empty()) {
            state("ollama_flash_attention", v, how);
        } else { // auto: Ollama's own default (OLLAMA_FLASH_ATTENTION unset)
            stated.emplace_back("ollama_flash_attention", how);
            e.notes.push_back("from the log: " + how);
        }
    } else if (c_ctx) {
        state("ollama_flash_attention", "0", fmt::format("no --flash-attn on the launch line (line {}): off", c_ctx->line_no));
    }
    // K/V cache type: the runner's cache line, else the launch's --cache-type-k / --kv-cache-type (OLLAMA_KV_CACHE_TYPE)
    if (r && !r->kv_caches.empty()) {
        const log_kv_cache & k = r->kv_caches.front();
        state("ollama_kv_cache_type", k.type_k, fmt::format("K ({}), V ({}) (line {})", k.type_k, k.type_v, k.line_no));
    } else if (const log_value * t = log.arg("kv_cache_type") ? log.arg("kv_cache_type") : log.arg("cache_type_k")) {
        state("ollama_kv_cache_type", t->text, fmt::format("cache type {} (line {})", t->text, t->line_no));
    }
    for (const auto & [k, v] : in.assumed) {
        bool known = false;
        for (const auto & x : ollama_flags()) known |= x.json_name() == k;
        if (!known) throw error(fmt::format("--assume {}: not an Ollama setting kvfit plans", k));
        for (const auto & [sk, how] : stated) {
            if (sk == k) throw error(fmt::format("--assume {}: the log states it ({}); --assume gives only what the log "
                                                 "does not print", k, how));
        }
        f.set(k, v);
        e.notes.push_back(fmt::format("given (the log does not print it): {}={}", k, v));
    }
    const ollama_settings s = parse_ollama_flags(f);
    std::vector<device_spec> gpus;
    if (!in.gpu.empty()) gpus = parse_gpu_list(in.gpu);
    else if (const auto * t = log.figure("gpu_total_bytes")) {
        const log_value * nm = log.arg("gpu_name");
        gpus.push_back({nm ? nm->text : "GPU (the log's total)", clamp_count(t->value)});
        e.notes.push_back(fmt::format("GPU {} of {} from line {}", nm ? nm->text : "(unnamed)", t->text, t->line_no));
    } else if (const auto * a = log.figure("available_bytes")) {
        gpus.push_back({"GPU (the log's free memory)", clamp_count(a->value)});
        e.notes.push_back(fmt::format("GPU: the {} Ollama saw free (line {}) taken as its size (assumed: the log names no GPU)",
                                      a->text, a->line_no));
    } else if (const auto * d = log.figure("runner_gpu_free_bytes")) {
        const log_value * nm = log.arg("runner_gpu_name");
        gpus.push_back({nm ? nm->text : "GPU (the runner's free memory)", clamp_count(d->value)});
        e.notes.push_back(fmt::format("GPU {}: the {} free llama-server saw (line {}) taken as its size, what its --fit "
                                      "starts from (the log names no total Ollama planned on)",
                                      nm ? nm->text : "(unnamed)", d->text, d->line_no));
    } else if (const auto * g = log.figure("gpu_free_bytes")) {
        gpus.push_back({"GPU (the log's free memory)", clamp_count(g->value)});
        e.notes.push_back(fmt::format("GPU: the {} free on it at the load (line {}, server/sched.go \"gpu memory\") taken as "
                                      "its size, what llama-server's --fit starts from (assumed: the log names no total)",
                                      g->text, g->line_no));
    }
    const ollama_plan p = plan_ollama(m, s, gpus);
    bool ctx_given = ctx > 0;
    for (const auto & a : in.assumed) ctx_given |= a.first == "num_ctx";
    if (!ctx_given) {
        e.notes.push_back(fmt::format("assumed: the log states no context (no 'llama_context: n_ctx' or launch line): "
                                      "Ollama's default num_ctx {} ({}, server/sched.go); --assume num_ctx=N gives the "
                                      "run's", p.num_ctx, p.num_ctx_from));
    }
    // n_ubatch: Ollama passes -b / -ub num_batch (llm/llama_server.go appendBatchArgs), which kvfit's Ollama plan does
    // not take; a logged one other than the plan's is said, as the compute buffers follow it
    const log_value * r_ub = r ? r->value("n_ubatch") : nullptr;
    const log_value * ub = r_ub ? r_ub : log.arg("ubatch_size");
    if (ub) {
        const uint64_t logged = clamp_count(std::atof(ub->text.c_str()));
        e.notes.push_back(logged == p.llama.n_ubatch
                              ? fmt::format("from the log: n_ubatch {} (line {}), as kvfit plans", logged, ub->line_no)
                              : fmt::format("the log's n_ubatch {} (line {}) is not the {} kvfit plans (Ollama's num_batch "
                                            "is no kvfit setting): its compute buffers differ", logged, ub->line_no,
                                            p.llama.n_ubatch));
    }
    const bool fit_placed = !log.figure("layers_offload") && r && r->offloaded;
    e.notes.push_back("kvfit plans today's Ollama (llama-server with --fit, ollama PR #16031) on llama.cpp's rules; this "
                      "log's Ollama " + (log.version.empty() ? std::string("(release not printed)") : log.version) +
                      (fit_placed ? fmt::format(" ran llama-server, whose --fit placed the layers (line {})", r->offloaded_line)
                                  : std::string(" placed layers with its own estimate (llm/memory.go EstimateGPULayers)")));
    uint64_t kv = 0, weights = 0, gpu_compute = 0;
    for (const auto & d : p.plan.devices) {
        kv += d.used.kv_bytes;
        weights += d.used.weights_bytes;
        if (!d.is_host) gpu_compute = std::max(gpu_compute, d.used.compute_bytes);
    }
    // KV: Ollama's estimate (memory.required.kv: n_ctx x n_layer x (n_embd_k_gqa + n_embd_v_gqa) x the cache type's
    // bytes, llm/memory.go / fs/ggml GraphSize), the new engine's allocation, the runner's buffers
    std::string kv_how = fmt::format("{} cells x {} layers, {} ({} per token)", p.llama.n_ctx, m.n_layer,
                                     ggml_traits(p.cache_type).name, human(p.llama.n_ctx ? kv / p.llama.n_ctx : 0));
    auto kv_row = [&](const serving_figure & x, const char * what) {
        const auto [lo, hi] = ollama_rounding(x);
        const bool same = double(kv) >= lo && double(kv) <= hi;
        add(e, x.line_no, what, x.text, human(kv), same, same ? kv_how : pct(double(kv), x.value) + ": " + kv_how);
    };
    if (const auto * x = log.figure("kv_estimate_bytes")) kv_row(*x, "KV cache (memory.required.kv)");
    double kv_dev = 0;
    const serving_figure * kv_dev_first = nullptr;
    for (const auto & x : log.figures) {
        if (x.key != "kv_device_bytes") continue;
        kv_dev += x.value;
        if (!kv_dev_first) kv_dev_first = &x;
    }
    if (kv_dev_first) {
        serving_figure sum = *kv_dev_first;
        sum.value = kv_dev;
        kv_row(sum, "KV cache (\"kv cache\" device lines)");
    }
    if (log.runner && !log.runner->kv_buffers.empty()) {
        double mib = 0;
        for (const auto & b : log.runner->kv_buffers) mib += b.mib;
        const double mine = double(kv) / double(1ull << 20);
        const bool same = std::abs(mine - mib) <= 0.005 * double(log.runner->kv_buffers.size()) + 1e-9;
        add(e, log.runner->kv_buffers.front().line_no, "KV buffers (runner, llama_kv_cache_init)", fmt::format("{:.2f} MiB", mib),
            fmt::format("{:.2f} MiB", mine), same, same ? kv_how : pct(mine, mib) + ": " + kv_how);
    }
    // weights: Ollama's count of the GGUF's tensors; kvfit's from the model it was given
    if (const auto * x = log.figure("weights_total_bytes")) {
        const auto [lo, hi] = ollama_rounding(*x);
        const bool same = double(weights) >= lo && double(weights) <= hi;
        add(e, x->line_no, "weights (memory.weights.total)", x->text, human(weights), same,
            same ? "the model's tensors" : fmt::format("{}: kvfit sizes {} ({}); Ollama counts the GGUF it loaded (pass the "
                                                      "blob as -m for its tensors)", pct(double(weights), x->value),
                                                      m.weights.exact ? "the checkpoint's tensors" : "the config's parameters at "
                                                      "the runtime's default quantization", m.weights.format.empty() ? m.source : m.weights.format));
    }
    // compute graph: Ollama's own estimate (memory.graph.full: fs/ggml GraphSize) or the new engine's reserve, beside
    // llama.cpp's reserved graph as kvfit plans it
    if (const auto * x = log.figure("graph_full_bytes")) {
        const bool same = within(double(gpu_compute), x->value, k_derived_tolerance);
        add(e, x->line_no, "compute graph (memory.graph.full)", x->text, human(gpu_compute), same,
            same ? "within 2 %"
                 : fmt::format("{}: Ollama's own formula (fs/ggml GraphSize) against llama.cpp's reserved graph as kvfit "
                               "plans today's runner: n_ubatch {}, {} KV stream(s) of {} cells (llama-server's per-slot "
                               "streams; the runner of 2024 kept one unified cache of --ctx-size cells)",
                               pct(double(gpu_compute), x->value), p.llama.n_ubatch,
                               p.plan.kv.empty() ? 1u : p.plan.kv.front().n_stream,
                               p.plan.kv.empty() ? p.llama.n_ctx : p.plan.kv.front().cells_per_stream));
    }
    // the new engine's reserve (0.11.5+): its graph on the GPUs and its total, beside kvfit's
    double graph_dev = 0, weights_dev = 0;
    const serving_figure * graph_first = nullptr;
    for (const auto & x : log.figures) {
        if (x.key == "graph_device_bytes") graph_dev += x.value, graph_first = graph_first ? graph_first : &x;
        if (x.key == "weights_device_bytes") weights_dev += x.value;
    }
    if (graph_first) {
        const bool same = within(double(gpu_compute), graph_dev, k_derived_tolerance);
        add(e, graph_first->line_no, "compute graph (\"compute graph\" device lines)", human(clamp_count(graph_dev)), human(gpu_compute), same,
            same ? "within 2 %" : pct(double(gpu_compute), graph_dev) + ": Ollama's engine reserves its own graph; kvfit plans llama.cpp's");
    }
    if (const auto * t = log.figure("total_bytes")) {
        uint64_t total = 0;
        for (const auto & d : p.plan.devices) total += d.used.weights_bytes + d.used.kv_bytes + d.used.compute_bytes;
        const bool same = within(double(total), t->value, k_derived_tolerance);
        add(e, t->line_no, "total memory", t->text, human(total), same,
            same ? "weights, KV and graphs, all devices, within 2 %"
                 : fmt::format("{}: weights {} (the log's device lines: {}), KV {}, graphs; kvfit's weights are {}",
                               pct(double(total), t->value), human(weights), human(clamp_count(weights_dev)), human(kv),
                               m.weights.exact ? "the checkpoint's" : "an estimate"));
    }
    // offloaded layers (layers.model = blocks + the output layer, as -ngl counts them)
    const serving_figure * lm = log.figure("layers_model");
    const serving_figure * lo = log.figure("layers_offload");
    const uint32_t all = m.n_layer + m.n_layer_mtp + 1;
    if (lm) {
        add(e, lm->line_no, "layers (blocks + output)", lm->text, std::to_string(all), lm->value == double(all),
            lm->value == double(all) ? "the model's blocks and its output layer" : "the model given is not the log's");
    }
    if (lo && !gpus.empty()) {
        const bool same = lo->value == double(p.plan.n_gpu_layers);
        add(e, lo->line_no, "layers on the GPU", lo->text, std::to_string(p.plan.n_gpu_layers), same,
            same ? "every layer fits" : fmt::format("kvfit's --fit keeps {} free per GPU; Ollama {} placed layers by its "
                                                    "estimate (memory.required.full)", human(p.fit_target_bytes), log.version));
    }
    // the runner's own placement ("load_tensors: offloaded N/M layers to GPU"), beside kvfit's --fit on that GPU
    if (!lo && r && r->offloaded && !gpus.empty()) {
        const bool same = *r->offloaded == p.plan.n_gpu_layers;
        add(e, r->offloaded_line, "layers on the GPU (runner, load_tensors)", fmt::format("{}/{}", *r->offloaded,
            r->offload_total.value_or(all)), fmt::format("{}/{}", p.plan.n_gpu_layers, all), same,
            same ? fmt::format("llama-server's --fit keeping {} free", human(p.fit_target_bytes))
                 : fmt::format("kvfit's --fit keeps {} free on {} of GPU", human(p.fit_target_bytes), human(gpus.front().memory_bytes)));
    }
    // the verdict: the runner started (or a pool was sized) unless a failure line came
    size_t vline = 0;
    std::string lv;
    if (!log.errors.empty()) lv = "does not start", vline = log.errors.front().line_no;
    else if (const auto * r = log.figure("runner_started")) lv = "starts", vline = r->line_no;
    else if (const auto * t = log.figure("total_bytes")) lv = "starts", vline = t->line_no;
    else if (lo) lv = "starts", vline = lo->line_no;
    if (!lv.empty()) {
        const std::string kvv = p.plan.fits() ? "starts" : "does not start";
        add(e, vline, "start", lv, kvv, kvv == lv,
            kvv == lv ? (lv == "starts" && !log.figure("runner_started") ? "the log ends before the runner reports; its "
                                                                          "plan was made" : "kvfit's Ollama plan")
                      : (p.plan.fits() ? "kvfit: the plan fits" : "kvfit: over a GPU's memory"));
    }
    for (const auto & w : p.warnings) e.notes.push_back("kvfit's Ollama plan: " + w);
}

} // namespace

explanation explain_serving_log(const serving_log & log, const model_desc & m, const serving_inputs & in) {
    explanation e;
    switch (log.engine) {
    case serving_engine::vllm: explain_vllm(e, log, m, in); break;
    case serving_engine::sglang: explain_sglang(e, log, m, in); break;
    case serving_engine::mlx_lm: explain_mlx(e, log, m, in); break;
    case serving_engine::ollama: explain_ollama(e, log, m, in); break;
    }
    std::stable_sort(e.rows.begin(), e.rows.end(), [](const explain_row & a, const explain_row & b) { return a.line_no < b.line_no; });
    return e;
}

std::string render_serving_explanation(const serving_log & log, const model_desc & m, const explanation & e) {
    std::string out = fmt::format("{} ({}): the {}{} log beside kvfit's plan\n", printable(m.name, false), printable(m.source, false),
                                  serving_engine_name(log.engine), log.version.empty() ? "" : " " + printable(log.version, false));
    for (const auto & n : e.notes) out += fmt::format("  settings: {}\n", printable(n, false));
    size_t width = 0;
    for (const auto & r : e.rows) width = std::max(width, r.what.size());
    for (const auto & r : e.rows) {
        out += fmt::format("  line {:>5}  {:<{}}  log {}\n", r.line_no, r.what, width, printable(r.log, false));
        out += fmt::format("  {:>10}  {:<{}}  kvfit {}{}\n", r.same ? "=" : "DIFFERS", "", width, r.kvfit,
                           r.note.empty() ? "" : "  (" + printable(r.note, false) + ")");
    }
    if (e.rows.empty()) out += "  no figure of the log could be compared (no pool, peak or refusal line kvfit reads)\n";
    out += e.rows.empty()       ? std::string("No line compared.\n")
         : e.differences == 0 ? fmt::format("All {} lines match.\n", e.rows.size())
                              : fmt::format("{} of {} lines differ.\n", e.differences, e.rows.size());
    return out;
}

} // namespace kvfit
