// MLX behind the runtime interface (include/kvfit/mlx.h, runtime.h): its flags, and plan_mlx's plan as a runtime_plan
// (the plan was shaped like runtime_plan, so this is a copy plus the detail).
#include "kvfit/mlx.h"

#include "kvfit/error.h"
#include "kvfit/units.h"
#include "runtimes/common/numbers.h"
#include "runtimes/common/sections.h"

#include <cctype>
#include <fmt/format.h>

namespace kvfit {

using detail::number;

// mlx_lm.generate's and mlx_lm.server's arguments as mlx-lm spells them (--max-kv-size, --kv-bits, ...); --context-tokens,
// --num-sequences, --mlx-command and the --q-* weights are kvfit's.
const std::vector<flag_spec> & mlx_flags() {
    using t = flag_type;
    using s = flag_setting;
    static const std::vector<flag_spec> v = {
        {"--mlx-command", "", "generate (mlx_lm.generate, default) or server (mlx_lm.server)", t::text, "COMMAND"},
        {"--context-tokens", "", "tokens per sequence planned, prompt + generated (default n_ctx_train)", t::count, "",
         s::context},
        {"--num-sequences", "", "sequences decoded together (server; generate runs 1)", t::count, "", s::concurrency},
        {"--max-kv-size", "", "generate: RotatingKVCache(max_size, keep 4) on models without make_cache", t::count},
        {"--kv-bits", "", "generate: QuantizedKVCache bits once a cache holds --quantized-kv-start tokens", t::count,
         "", s::cache_type},
        {"--kv-group-size", "", "generate: QuantizedKVCache group size (default 64)", t::count},
        {"--quantized-kv-start", "", "generate: tokens before the cache is quantized (default 5000)", t::count},
        {"--prompt-cache-file", "", "generate: a cache saved by mlx_lm.cache_prompt", t::text, "FILE"},
        {"--max-tokens", "", "generate: tokens to generate (shown in the launch line)", t::count},
        {"--prefill-step-size", "", "prompt chunk, tokens (default 2048)", t::count},
        {"--decode-concurrency", "", "server: sequences decoded at once (default 32)", t::count},
        {"--prompt-concurrency", "", "server: prompts prefilled at once (default 8)", t::count},
        {"--prompt-cache-size", "", "server: LRU prompt-cache entries (default 10)", t::count},
        {"--prompt-cache-bytes", "", "server: LRU prompt-cache byte limit: bytes as mlx_lm.server reads them (8G = 8e9), "
                                     "or 8GiB", t::size},
        {"--q-bits", "", "weights of a config.json as mlx_lm.convert -q writes them: bits (0 = model dtype)", t::count},
        {"--q-group-size", "", "mlx_lm.convert --q-group-size (default by mode)", t::count},
        {"--q-mode", "", "mlx_lm.convert --q-mode: affine, mxfp4, nvfp4, mxfp8", t::text, "MODE"},
        {"--q-experts-only", "", "only the routed experts quantized (an HF MXFP4 checkpoint)", t::boolean},
        {"--iogpu-wired-limit-mb", "", "sudo sysctl iogpu.wired_limit_mb=N: the GPU working set in MiB", t::count},
        {"--memory-is-working-set", "", "--gpu gives Metal's recommendedMaxWorkingSetSize, not the RAM", t::boolean},
    };
    return v;
}

mlx_settings parse_mlx_flags(const flag_values & f) {
    mlx_settings s;
    const auto text = [&](const char * name) { return f.text(name); };
    const auto u64 = [&](const char * name, const char * flag, uint64_t lo, uint64_t hi) {
        return number<uint64_t>(flag, text(name), lo, hi);
    };
    const auto u32 = [&](const char * name, const char * flag, uint32_t lo, uint32_t hi) {
        return number<uint32_t>(flag, text(name), lo, hi);
    };
    if (const std::string c = text("mlx_command"); !c.empty()) {
        if (c != "generate" && c != "server") throw error(fmt::format("--mlx-command '{}': expected generate or server", c));
        s.command = c == "server" ? mlx_command::server : mlx_command::generate;
    }
    if (!text("context_tokens").empty()) s.context_tokens = u64("context_tokens", "--context-tokens", 1, 1ull << 32);
    if (!text("num_sequences").empty()) s.n_seq = u32("num_sequences", "--num-sequences", 1, 4096);
    if (!text("max_kv_size").empty()) s.max_kv_size = u64("max_kv_size", "--max-kv-size", 1, 1ull << 32);
    if (!text("kv_bits").empty()) s.kv_bits = u32("kv_bits", "--kv-bits", 1, 8);
    if (!text("kv_group_size").empty()) s.kv_group_size = u32("kv_group_size", "--kv-group-size", 1, 1u << 20);
    if (!text("quantized_kv_start").empty()) {
        s.quantized_kv_start = u64("quantized_kv_start", "--quantized-kv-start", 0, 1ull << 32);
    }
    s.prompt_cache_file = text("prompt_cache_file");
    if (!text("max_tokens").empty()) s.max_tokens = u64("max_tokens", "--max-tokens", 1, 1ull << 32);
    if (!text("prefill_step_size").empty()) s.prefill_step_size = u32("prefill_step_size", "--prefill-step-size", 1, 1u << 20);
    if (!text("decode_concurrency").empty()) s.decode_concurrency = u32("decode_concurrency", "--decode-concurrency", 1, 4096);
    if (!text("prompt_concurrency").empty()) s.prompt_concurrency = u32("prompt_concurrency", "--prompt-concurrency", 1, 4096);
    if (!text("prompt_cache_size").empty()) s.prompt_cache_size = u32("prompt_cache_size", "--prompt-cache-size", 0, 1u << 20);
    if (const std::string v = text("prompt_cache_bytes"); !v.empty()) {
        // mlx_lm/server.py parse_size: a plain number is bytes; M and G (MB, GB) are decimal there, unlike kvfit's 24G
        const char last = v.back();
        const bool mlx_suffix = v.size() > 1 && std::isdigit(static_cast<unsigned char>(v[v.size() - 2])) &&
                                (last == 'G' || last == 'g' || last == 'M' || last == 'm');
        s.prompt_cache_bytes = parse_size(mlx_suffix ? v + "B" : v);
    }
    if (!text("q_bits").empty()) s.weights.bits = u32("q_bits", "--q-bits", 0, 8);
    if (!text("q_group_size").empty()) s.weights.group_size = u32("q_group_size", "--q-group-size", 1, 1u << 20);
    if (!text("q_mode").empty()) s.weights.mode = text("q_mode");
    s.weights.experts_only = f.boolean("q_experts_only");
    if (!text("iogpu_wired_limit_mb").empty()) {
        s.iogpu_wired_limit_mb = u64("iogpu_wired_limit_mb", "--iogpu-wired-limit-mb", 0, 1ull << 32);
    }
    s.memory_is_working_set = f.boolean("memory_is_working_set");
    return s;
}

namespace {

using json = nlohmann::ordered_json;

json detail_json(const mlx_plan & p) {
    const mlx_settings & s = p.settings;
    json j;
    j["settings"] = {{"mlx_command", mlx_command_name(s.command)}, {"context_tokens", s.context_tokens},
                     {"num_sequences", s.n_seq}, {"max_kv_size", s.max_kv_size ? json(*s.max_kv_size) : json(nullptr)},
                     {"kv_bits", s.kv_bits ? json(*s.kv_bits) : json(nullptr)}, {"kv_group_size", s.kv_group_size},
                     {"quantized_kv_start", s.quantized_kv_start}, {"prefill_step_size", s.prefill_step_size},
                     {"decode_concurrency", s.decode_concurrency}, {"prompt_concurrency", s.prompt_concurrency},
                     {"prompt_cache_size", s.prompt_cache_size},
                     {"prompt_cache_bytes", s.prompt_cache_bytes ? json(*s.prompt_cache_bytes) : json(nullptr)},
                     {"q_bits", s.weights.bits}, {"q_group_size", s.weights.group_size}, {"q_mode", s.weights.mode},
                     {"q_experts_only", s.weights.experts_only}, {"iogpu_wired_limit_mb", s.iogpu_wired_limit_mb},
                     {"memory_is_working_set", s.memory_is_working_set}};
    j["memory_bytes"] = p.devices.empty() ? 0 : p.devices[0].memory_bytes;
    j["working_set_bytes"] = p.devices.empty() ? 0 : p.devices[0].capacity_bytes;
    j["max_context_fit"] = p.max_context_fit;
    j["cache_groups"] = json::array();
    for (const auto & g : p.caches) {
        j["cache_groups"].push_back({{"name", g.name}, {"kind", cache_kind_name(g.kind)}, {"n_layer", g.n_layer},
                                     {"cells", g.cells}, {"n_seq", g.n_seq}, {"k_bytes_per_cell", g.k_bytes_per_cell},
                                     {"v_bytes_per_cell", g.v_bytes_per_cell}, {"bytes", g.bytes}});
    }
    return j;
}

// The report's sections of an mlx-lm plan (runtime_plan::sections; issue 26 item 1): the settings with mlx-lm's
// per-token and per-sequence figures and its own largest context, each device's memory against Metal's working set
// buffer by buffer, and the caches as mlx-lm allocates them at the peak (mlx-lm d78bf58 mlx_lm/models/cache.py).
// Rendered by src/report without naming the runtime.
std::vector<plan_section> mlx_sections(const mlx_plan & p) {
    using detail::add_row, detail::count_figure, detail::size_figure, detail::word_figure;
    const mlx_settings & s = p.settings;
    constexpr const char * cache_py = "mlx-lm d78bf58 mlx_lm/models/cache.py (src/runtimes/mlx/caches.cpp)";
    std::vector<plan_section> out;
    plan_section set;
    set.title = fmt::format("Settings ({}, --context-tokens {}, {} sequence{})", mlx_command_name(s.command),
                            with_commas(p.context_tokens), p.sequences, p.sequences == 1 ? "" : "s");
    add_row(set, fmt::format("KV cache per token, one sequence: {} B ({})", with_commas(p.kv_bytes_per_token),
                             human_bytes(p.kv_bytes_per_token)),
            {size_figure("kv_bytes_per_token", p.kv_bytes_per_token, cache_py)});
    if (p.state_bytes_per_sequence > 0) {
        add_row(set, fmt::format("fixed state per sequence: {} B ({})", with_commas(p.state_bytes_per_sequence),
                                 human_bytes(p.state_bytes_per_sequence)),
                {size_figure("state_bytes_per_sequence", p.state_bytes_per_sequence, cache_py)});
    }
    if (s.kv_bits) {
        add_row(set, fmt::format("--kv-bits {} (group {}): QuantizedKVCache from {} tokens on", *s.kv_bits, s.kv_group_size,
                                 with_commas(s.quantized_kv_start)),
                {count_figure("kv_bits", *s.kv_bits, "bits", "flag"),
                 count_figure("quantized_kv_start", double(s.quantized_kv_start), "tokens", "flag")});
    }
    if (!p.devices.empty()) {
        add_row(set, fmt::format("largest --context-tokens that fits with these flags: {}", with_commas(p.max_context_fit)),
                {count_figure("max_context_fit", double(p.max_context_fit), "tokens", "plan_mlx search (src/runtimes/mlx/plan.cpp)")});
    }
    out.push_back(std::move(set));
    for (const auto & d : p.devices) {
        plan_section dev;
        dev.title = fmt::format("{} (Metal working set {} of {} given)", d.name, human_bytes(d.capacity_bytes),
                                human_bytes(d.memory_bytes));
        for (const auto & b : d.buffers) {
            add_row(dev, fmt::format("{:<13} {:>12}{}{}", b.name, human_bytes(b.bytes), b.estimate ? " (estimate)" : "",
                                     b.what.empty() ? "" : "  " + b.what),
                    {size_figure(b.name, b.bytes, b.what.empty() ? "src/runtimes/mlx/plan.cpp" : b.what, b.estimate)});
        }
        const uint64_t used = d.used_bytes();
        add_row(dev, fmt::format("{:<13} {:>12}  {}", "total", human_bytes(used),
                                 d.fits() ? fmt::format("fits, {} to spare", human_bytes(d.capacity_bytes - used))
                                          : fmt::format("OVER the working set by {}", human_bytes(used - d.capacity_bytes))),
                {size_figure("total", used, "src/runtimes/mlx/plan.cpp"),
                 size_figure("working_set", d.capacity_bytes, "mlx 846d176 recommendedMaxWorkingSetSize (metal.h)")});
        out.push_back(std::move(dev));
    }
    if (!p.caches.empty()) {
        plan_section caches;
        caches.title = "Caches at the peak (mlx-lm's classes, per layer)";
        for (const auto & g : p.caches) {
            const std::string per = g.cells ? fmt::format("{} cells x {} B", with_commas(g.cells), with_commas(g.k_bytes_per_cell + g.v_bytes_per_cell))
                                            : fmt::format("{} {} B", cache_kind_name(g.kind), with_commas(g.k_bytes_per_cell));
            add_row(caches, fmt::format("{} x {} {}{}: {}", g.n_layer, g.name, per,
                                        g.n_seq > 1 ? fmt::format(", x {} sequences", g.n_seq) : "", human_bytes(g.bytes)),
                    {word_figure("class", g.name, cache_py), count_figure("n_layer", g.n_layer, "layers", cache_py),
                     count_figure("cells", double(g.cells), "tokens", cache_py), size_figure("bytes", g.bytes, cache_py)});
        }
        out.push_back(std::move(caches));
    }
    return out;
}

runtime_plan plan(const model_desc & m, const flag_values & f, const machine & mc) {
    const mlx_plan p = plan_mlx(m, parse_mlx_flags(f), mc.gpus);
    runtime_plan r;
    r.runtime = p.runtime;
    r.rules = p.rules;
    r.context_tokens = p.context_tokens;
    r.sequences = p.sequences;
    for (const auto & d : p.devices) {
        device_plan dp{d.name, false, d.capacity_bytes, 0, {}, m.n_layer};
        for (const auto & b : d.buffers) dp.buffers.push_back({b.name, b.bytes, b.estimate, b.what});
        r.devices.push_back(std::move(dp));
    }
    for (const auto & g : p.caches) { // the caches that hold cells; states are in detail.cache_groups
        if (g.cells == 0) continue;
        const uint64_t cells = uint64_t(g.n_layer) * g.n_seq * g.cells;
        r.caches.push_back({g.name, g.cells, g.n_seq, g.n_layer, cells * g.k_bytes_per_cell, cells * g.v_bytes_per_cell});
    }
    r.kv_bytes_per_token = p.kv_bytes_per_token;
    r.state_bytes_per_sequence = p.state_bytes_per_sequence;
    r.starts = p.starts;
    r.fits = p.fits;
    r.refusals = p.refusals;
    r.warnings = p.warnings;
    r.notes = p.notes;
    r.assumptions = p.assumptions;
    r.launch = p.launch;
    r.detail = detail_json(p);
    r.sections = mlx_sections(p);
    return r;
}

void check_flags(const flag_values & f) { (void)parse_mlx_flags(f); }

// mlx-lm estimates a config.json's weights itself from --q-bits (weights_buffer in plan.cpp): nothing to apply here.
void default_weights(model_desc &, std::vector<std::string> &) {}

knob_range context_range(const model_desc & m, const flag_values &) {
    return {1, m.n_ctx_train ? m.n_ctx_train : k_context_search_top, 1};
}

// --num-sequences below the value given (mlx_lm.server's batch; generate runs one): each sequence holds its own
// caches (plan.cpp), so the memory grows with it.
knob_range num_sequences_range(const model_desc &, const flag_values & f) {
    const uint64_t given = parse_mlx_flags(f).n_seq;
    return {1, given, given > 1 ? 1u : 0u};
}

} // namespace

runtime_info mlx_runtime() {
    runtime_info r;
    r.name = "mlx";
    r.display = "MLX";
    r.summary = "mlx-lm on Apple silicon: KVCache growth, rotating and quantized caches, the Metal working set";
    r.flags = mlx_flags;
    r.check_flags = check_flags;
    r.default_weights = default_weights;
    r.plan = plan;
    // the planner's search finds the largest --context-tokens per --kv-bits (max_context; detail.max_context_fit is
    // plan_mlx's own figure at the flags' setting, kept for the text report)
    r.context = {"context", "context_tokens", "--context-tokens", false, context_range, {}};
    r.knobs = {r.context, {"sequences", "num_sequences", "--num-sequences", false, num_sequences_range, {}}};
    // --kv-bits (mlx_lm.generate: QuantizedKVCache once a cache holds --quantized-kv-start tokens): none = the model's
    // dtype; mlx_lm.server takes no --kv-bits, so its rows of 8 and 4 are refused with mlx-lm's argparse message
    r.cache_types = {"none", "8", "4"};
    r.cache_type_k = "kv_bits";
    r.cache_type_unset = "none";
    return r;
}

} // namespace kvfit
