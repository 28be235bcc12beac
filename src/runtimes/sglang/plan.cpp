// SGLang behind the runtime interface (include/kvfit/sglang.h, runtime.h): its flags, the runtime_plan of one TP rank
// (devices, refusals, detail) and the launch_server command that realises it.
#include "kvfit/sglang.h"
#include "kvfit/printable.h"

#include "kvfit/error.h"
#include "kvfit/sources.h"
#include "kvfit/units.h"
#include "runtimes/common/launch.h"
#include "runtimes/common/model_warnings.h"
#include "runtimes/common/quant.h"
#include "runtimes/common/numbers.h"
#include "runtimes/common/sections.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>

namespace kvfit {

using detail::count;
using detail::fraction;
using detail::number;

const std::vector<flag_spec> & sglang_flags() {
    using t = flag_type;
    using s = flag_setting; // the shared settings, spelled as sglang/srt/server_args.py
    static const std::vector<flag_spec> v = {
        {"--mem-fraction-static", "", "static pool fraction (default: SGLang's, from GPU memory and TP)", t::fraction, "", s::memory_margin},
        // server_args.py add_cli_args: "--tensor-parallel-size", "--tp-size", "--tp" (and the same three for --dp)
        {"--tp", "", "tensor parallel size (default: chosen over the GPUs given)", t::count, "", s::none,
         {"--tp-size", "--tensor-parallel-size"}},
        {"--dp", "", "data parallel size: replicas, or attention DP ranks with --enable-dp-attention", t::count, "", s::none,
         {"--dp-size", "--data-parallel-size"}},
        {"--enable-dp-attention", "", "attention DP: attention at tp/dp, one KV pool per rank", t::boolean},
        {"--context-length", "", "tokens per request", t::count, "", s::context},
        {"--max-running-requests", "", "running requests", t::count, "", s::concurrency},
        {"--kv-cache-dtype", "", "auto fp8_e4m3 fp8_e5m2", t::text, "DTYPE", s::cache_type},
        {"--page-size", "", "tokens per page (default 1)", t::count},
        {"--max-mamba-cache-size", "", "mamba slots", t::count},
        {"--mamba-full-memory-ratio", "", "mamba / KV ratio (0.9)", t::text, "FLOAT"},
        {"--disable-radix-cache", "", "radix cache off", t::boolean},
        {"--swa-full-tokens-ratio", "", "sliding-window pool / full pool tokens (default 0.8, server_args.py)", t::text, "FLOAT"},
        {"--cuda-context-memory", "", "input: memory in use before the weights load per GPU (default 0.5 GiB)", t::size},
        {"--speculative-algorithm", "", "EAGLE EAGLE3 NEXTN STANDALONE (default: none)", t::text, "NAME"},
        {"--speculative-num-steps", "", "draft steps (default: SGLang's choice, 3)", t::count},
        {"--speculative-eagle-topk", "", "draft branches per step (default: SGLang's choice, 1)", t::count},
        {"--speculative-num-draft-tokens", "", "tokens verified per step (default: steps + 1 at topk 1)", t::count},
        {"--mamba-radix-cache-strategy", "", "auto no_buffer extra_buffer extra_buffer_lazy (default auto)", t::text, "STRATEGY"},
        // piecewise (prefill) CUDA graphs: 8 MiB per captured size in the default fraction's reserve (rules.cpp
        // sglang_piecewise_cuda_graph; server_args.py _handle_piecewise_cuda_graph, _handle_gpu_memory_settings)
        {"--disable-piecewise-cuda-graph", "", "no piecewise CUDA graphs (default: on, unless SGLang turns them off)", t::boolean},
        {"--enforce-piecewise-cuda-graph", "", "piecewise CUDA graphs whatever SGLang's auto-disable rules say", t::boolean},
        {"--piecewise-cuda-graph-max-tokens", "", "largest piecewise graph (default: chunked prefill size, 2048 for MLA)", t::count},
    };
    return v;
}

sglang_settings parse_sglang_flags(const flag_values & f) {
    sglang_settings s;
    const auto text = [&](const char * name) { return f.text(name); };
    if (!text("mem_fraction_static").empty()) s.mem_fraction_static = fraction("--mem-fraction-static", text("mem_fraction_static"), true);
    s.tp = count("--tp", text("tp"), 1, 1024);
    s.dp = count("--dp", text("dp"), 1, 1024);
    s.enable_dp_attention = f.boolean("enable_dp_attention");
    if (!text("context_length").empty()) s.context_length = number<uint64_t>("--context-length", text("context_length"), 1, 1ull << 32);
    s.max_running_requests = count("--max-running-requests", text("max_running_requests"), 0);
    if (!text("kv_cache_dtype").empty()) s.kv_cache_dtype = text("kv_cache_dtype");
    s.page_size = count("--page-size", text("page_size"), 0, 1u << 20);
    s.max_mamba_cache_size = count("--max-mamba-cache-size", text("max_mamba_cache_size"), 0);
    if (!text("mamba_full_memory_ratio").empty()) {
        s.mamba_full_memory_ratio = number<double>("--mamba-full-memory-ratio", text("mamba_full_memory_ratio"), 0.01, 100.0);
    }
    s.disable_radix_cache = f.boolean("disable_radix_cache");
    if (!text("swa_full_tokens_ratio").empty()) {
        s.swa_full_tokens_ratio = number<double>("--swa-full-tokens-ratio", text("swa_full_tokens_ratio"), 0.001, 100.0);
        s.swa_full_tokens_ratio_given = true;
    }
    if (!text("cuda_context_memory").empty()) s.pre_load_overhead_bytes = parse_size(text("cuda_context_memory"));
    s.speculative_algorithm = text("speculative_algorithm");
    s.speculative_num_steps = count("--speculative-num-steps", text("speculative_num_steps"), 0, 64);
    s.speculative_eagle_topk = count("--speculative-eagle-topk", text("speculative_eagle_topk"), 0, 64);
    s.speculative_num_draft_tokens = count("--speculative-num-draft-tokens", text("speculative_num_draft_tokens"), 0, 1024);
    s.disable_piecewise_cuda_graph = f.boolean("disable_piecewise_cuda_graph");
    s.enforce_piecewise_cuda_graph = f.boolean("enforce_piecewise_cuda_graph");
    s.piecewise_cuda_graph_max_tokens = count("--piecewise-cuda-graph-max-tokens", text("piecewise_cuda_graph_max_tokens"), 0,
                                              1u << 24);
    if (!text("mamba_radix_cache_strategy").empty()) {
        const std::string v = text("mamba_radix_cache_strategy");
        if (v != "auto" && v != "no_buffer" && v != "extra_buffer" && v != "extra_buffer_lazy") {
            throw error(fmt::format("--mamba-radix-cache-strategy '{}': expected auto, no_buffer, extra_buffer or "
                                    "extra_buffer_lazy", v));
        }
        s.mamba_radix_cache_strategy = v;
    }
    return s;
}

namespace {

using json = nlohmann::ordered_json;

constexpr uint64_t k_default_pre_load_overhead = 512ull << 20; // plan_sglang's default: the CUDA context

std::string sglang_command(const model_desc & m, const sglang_plan & p) {
    const sglang_settings & s = p.settings;
    std::string c = fmt::format("python -m sglang.launch_server --model-path {} --tp {}",
                                shell_word(detail::launch_model_ref(m)), s.tp);
    // --weights fp8 on an unquantized checkpoint: SGLang's --quantization fp8 quantizes it at load (launch.h)
    if (const std::string q = detail::launch_quantization(m); !q.empty()) c += " --quantization " + q;
    if (s.dp > 1) c += fmt::format(" --dp {}{}", s.dp, s.enable_dp_attention ? " --enable-dp-attention" : "");
    c += fmt::format(" --mem-fraction-static {} --context-length {}", s.mem_fraction_static, p.context_length);
    if (p.max_running_requests > 0) c += fmt::format(" --max-running-requests {}", p.max_running_requests);
    if (s.kv_cache_dtype != "auto") c += " --kv-cache-dtype " + s.kv_cache_dtype;
    if (s.page_size != 1) c += fmt::format(" --page-size {}", s.page_size);
    if (p.mamba_slots) c += fmt::format(" --max-mamba-cache-size {}", p.mamba_slots);
    if (s.disable_radix_cache) c += " --disable-radix-cache";
    if (s.swa_full_tokens_ratio_given) c += fmt::format(" --swa-full-tokens-ratio {}", s.swa_full_tokens_ratio);
    if (s.mamba_radix_cache_strategy != "auto") c += " --mamba-radix-cache-strategy " + s.mamba_radix_cache_strategy;
    if (s.disable_piecewise_cuda_graph) c += " --disable-piecewise-cuda-graph";
    if (s.enforce_piecewise_cuda_graph) c += " --enforce-piecewise-cuda-graph";
    if (s.piecewise_cuda_graph_max_tokens) c += fmt::format(" --piecewise-cuda-graph-max-tokens {}", s.piecewise_cuda_graph_max_tokens);
    if (!p.spec_algorithm.empty()) {
        c += fmt::format(" --speculative-algorithm {} --speculative-num-steps {} --speculative-eagle-topk {} "
                         "--speculative-num-draft-tokens {}", s.speculative_algorithm, p.spec_num_steps, p.spec_eagle_topk,
                         p.spec_num_draft_tokens);
    }
    return c + "\n";
}

json detail_json(const sglang_plan & p) {
    const sglang_settings & s = p.settings;
    json j;
    j["settings"] = {{"mem_fraction_static", s.mem_fraction_static}, {"tp", s.tp}, {"dp", s.dp},
                     {"enable_dp_attention", s.enable_dp_attention}, {"context_length", s.context_length},
                     {"max_running_requests", s.max_running_requests}, {"kv_cache_dtype", s.kv_cache_dtype},
                     {"page_size", s.page_size}, {"max_mamba_cache_size", s.max_mamba_cache_size},
                     {"mamba_full_memory_ratio", s.mamba_full_memory_ratio}, {"disable_radix_cache", s.disable_radix_cache}};
    j["block_size"] = s.page_size;
    j["page_bytes"] = p.cell_bytes * s.page_size;
    j["num_gpu_blocks"] = p.max_total_num_tokens / s.page_size;
    j["per_request_blocks"] = (p.context_length + s.page_size - 1) / s.page_size;
    j["max_concurrency"] = p.context_length ? double(p.max_total_num_tokens) / double(p.context_length) : 0.0;
    j["kv_cache_tokens"] = p.max_total_num_tokens;
    j["available_kv_bytes"] = p.kv_pool_bytes;
    j["max_model_len_fit"] = std::min(p.max_total_num_tokens, p.context_length);
    j["weights_bytes"] = p.weights_bytes;
    j["rest_bytes"] = p.rest_bytes;
    j["kv_pool_bytes"] = p.kv_pool_bytes;
    j["cell_bytes"] = p.cell_bytes;
    j["alloc_bytes_per_token"] = p.alloc_bytes_per_token;
    j["kv_dtype"] = p.kv_dtype;
    j["mamba_bytes_per_request"] = p.mamba_bytes_per_request;
    j["max_mamba_cache_size"] = p.mamba_slots;
    j["max_running_requests"] = p.max_running_requests;
    j["swa_full_tokens_ratio"] = s.swa_full_tokens_ratio;
    if (p.swa_tokens) { // the hybrid SWA pool (HybridSWAPoolConfigurator): both pools
        j["full_tokens"] = p.max_total_num_tokens;
        j["swa_tokens"] = p.swa_tokens;
        j["full_bytes_per_token"] = p.full_bytes_per_token;
        j["swa_bytes_per_token"] = p.swa_bytes_per_token;
    }
    if (!p.spec_algorithm.empty()) { // speculative decoding: the drafter and the mamba intermediate states (rules.cpp)
        j["settings"]["speculative_algorithm"] = s.speculative_algorithm;
        j["speculative"] = {{"algorithm", p.spec_algorithm}, {"num_steps", p.spec_num_steps},
                            {"eagle_topk", p.spec_eagle_topk}, {"num_draft_tokens", p.spec_num_draft_tokens},
                            {"draft_layers", p.spec_draft_layers}, {"draft_kv_bytes", p.spec_draft_kv_bytes},
                            {"draft_weights_bytes", p.spec_draft_weights_bytes},
                            {"mamba_intermediate_bytes", p.mamba_intermediate_bytes},
                            {"mamba_intermediate_bytes_per_request",
                             p.mamba_bytes_per_request * p.spec_num_draft_tokens}};
        if (p.mamba_ratio) {
            j["mamba_ratio"] = p.mamba_ratio;
            j["mamba_radix_cache_strategy"] = p.mamba_strategy;
        }
    }
    // piecewise (prefill) CUDA graphs as SGLang decides them, and what the default fraction's reserve holds for them
    j["piecewise_cuda_graph"] = {{"enabled", p.piecewise_on}, {"max_tokens", p.piecewise_max_tokens},
                                 {"capture_sizes", p.piecewise_graphs}, {"reserve_bytes", p.piecewise_reserve_bytes},
                                 {"why", p.piecewise_why}};
    j["pre_load_overhead_bytes"] = s.pre_load_overhead_bytes.value_or(k_default_pre_load_overhead);
    j["constants"] = json::array();
    j["constants"].push_back({{"name", "CUDA context"}, {"bytes", s.pre_load_overhead_bytes.value_or(k_default_pre_load_overhead)},
                              {"basis", s.pre_load_overhead_bytes ? "given" : "estimate"},
                              {"source", "model_runner.py: memory in use before the weights load (pre_model_load_free)"},
                              {"how", s.pre_load_overhead_bytes ? "--cuda-context-memory" : "0.50 GiB (kvfit constant)"}});
    j["constants"].push_back({{"name", "swa_full_tokens_ratio"}, {"value", s.swa_full_tokens_ratio},
                              {"basis", s.swa_full_tokens_ratio_given ? "given" : "rule"},
                              {"source", "server_args.py swa_full_tokens_ratio: float = 0.8"}, {"how", ""}});
    if (!p.fraction_given) { // a term of the default fraction's reserve only when kvfit derives that fraction
        j["constants"].push_back({{"name", "piecewise CUDA graphs"}, {"bytes", p.piecewise_reserve_bytes}, {"basis", "rule"},
                                  {"source", "server_args.py _handle_gpu_memory_settings: len(piecewise_cuda_graph_tokens) "
                                             "x 8 MiB; _handle_piecewise_cuda_graph"},
                                  {"how", p.piecewise_on ? fmt::format("{} sizes up to {} tokens x 8 MiB: {}", p.piecewise_graphs,
                                                                       p.piecewise_max_tokens, p.piecewise_why)
                                                         : "off: " + p.piecewise_why}});
    }
    j["constants"].push_back({{"name", "mem_fraction_static"}, {"value", s.mem_fraction_static},
                              {"basis", p.fraction_given ? "given" : "rule"},
                              {"source", "server_args.py _handle_gpu_memory_settings"}, {"how", ""}});
    return j;
}

// The report's section of an SGLang plan (runtime_plan::sections): the static pool of one rank, with SGLang's own
// log line ("KV Cache is allocated. #tokens") quoted so a reader can match it against a real start.
std::vector<plan_section> sections_of(const sglang_plan & p) {
    const sglang_settings & s = p.settings;
    constexpr const char * pool_src = "sglang/srt/mem_cache/pool_configurator.py";
    plan_section out{fmt::format("Static pool per rank (--mem-fraction-static {}, --tp {})", s.mem_fraction_static, s.tp), {}};
    detail::add_row(out, fmt::format("weights {}; rest for the pools {}", detail::gib_text(uint64_t(p.weights_bytes)),
                                     detail::signed_gib_text(p.rest_bytes)),
                    {detail::size_figure("weights", p.weights_bytes, s.weights_bytes ? "given (--weights-size per rank)"
                                                                                     : "model_runner.py load_model (\"Load weight end\")"),
                     detail::size_figure("rest_bytes", uint64_t(std::max<int64_t>(0, p.rest_bytes)), pool_src)});
    if (p.mamba_bytes_per_request) {
        detail::add_row(out, fmt::format("mamba state {} per request; {} slots", human_bytes(p.mamba_bytes_per_request),
                                         p.mamba_slots),
                        {detail::size_figure("mamba_bytes_per_request", p.mamba_bytes_per_request, pool_src),
                         detail::count_figure("max_mamba_cache_size", double(p.mamba_slots), "slots", pool_src)});
    }
    if (!p.spec_algorithm.empty()) { // speculative decoding (rules.cpp): the drafter and the draft tokens' states
        const uint32_t layers = p.spec_draft_layers;
        std::vector<plan_figure> figs = {detail::count_figure("num_draft_tokens", p.spec_num_draft_tokens, "tokens",
                                                              "server_args.py _auto_choose_speculative_params")};
        if (layers) {
            figs.push_back(detail::size_figure("draft_kv_bytes", p.spec_draft_kv_bytes, pool_src));
            figs.push_back(detail::size_figure("draft_weights_bytes", p.spec_draft_weights_bytes,
                                               "kvfit: the drafter's blocks / --tp", true));
        }
        detail::add_row(out, fmt::format("speculative {}: {} steps, topk {}, {} draft tokens; {}", p.spec_algorithm,
                                         p.spec_num_steps, p.spec_eagle_topk, p.spec_num_draft_tokens, layers
                                         ? fmt::format("drafter KV {} ({} layer{}), weights {} (estimate)",
                                                       detail::gib_text(uint64_t(p.spec_draft_kv_bytes)), layers,
                                                       layers == 1 ? "" : "s",
                                                       detail::gib_text(uint64_t(p.spec_draft_weights_bytes)))
                                         : std::string("the draft model is not read (its KV and weights are not counted)")),
                        std::move(figs));
        if (p.mamba_ratio) {
            const uint64_t per_request = p.mamba_bytes_per_request * p.spec_num_draft_tokens;
            detail::add_row(out, fmt::format("mamba intermediate states {} ({} per request); {} slots per running request ({})",
                                             detail::gib_text(uint64_t(p.mamba_intermediate_bytes)), human_bytes(per_request),
                                             p.mamba_ratio, p.mamba_strategy),
                            {detail::size_figure("mamba_intermediate_bytes", p.mamba_intermediate_bytes, pool_src),
                             detail::count_figure("mamba_ratio", p.mamba_ratio, "slots per request",
                                                  "server_args.py _calculate_mamba_ratio")});
        }
    }
    { // piecewise (prefill) CUDA graphs: their share of the default fraction's reserve (rules.cpp)
        // a --piecewise-cuda-graph-max-tokens below the ladder's first size (4 tokens, rules.cpp) captures nothing
        const std::string what = !p.piecewise_on ? "off"
                               : p.piecewise_graphs == 0 ? fmt::format("on, but no size captured: the smallest capture size is 4 tokens, above "
                                                                       "--piecewise-cuda-graph-max-tokens {}", p.piecewise_max_tokens)
                               : fmt::format("on, {} size{} up to {} tokens", p.piecewise_graphs, p.piecewise_graphs == 1 ? "" : "s",
                                             with_commas(p.piecewise_max_tokens));
        const std::string reserve = p.fraction_given ? "not counted: --mem-fraction-static given"
                                  : p.piecewise_on ? fmt::format("{} MiB in the default fraction's reserve",
                                                                 p.piecewise_reserve_bytes >> 20)
                                                   : "none in the default fraction's reserve";
        detail::add_row(out, fmt::format("piecewise CUDA graphs {}: {}; {}", what, p.piecewise_why, reserve),
                        {detail::count_figure("piecewise_cuda_graphs", p.piecewise_on ? p.piecewise_graphs : 0, "graphs",
                                              "server_args.py _handle_piecewise_cuda_graph"),
                         detail::size_figure("piecewise_reserve_bytes", p.piecewise_reserve_bytes,
                                             "server_args.py _handle_gpu_memory_settings (8 MiB per graph)")});
    }
    detail::add_row(out, fmt::format("KV pool {} at {} B per token (cell_size)", detail::gib_text(uint64_t(p.kv_pool_bytes)),
                                     with_commas(p.cell_bytes)),
                    {detail::size_figure("kv_pool_bytes", p.kv_pool_bytes, pool_src),
                     detail::size_figure("cell_bytes", p.cell_bytes, "pool_configurator.py DefaultPoolConfigurator._compute_cell_size")});
    if (p.swa_tokens) { // the hybrid SWA pool: both pools, and the ratio between them
        detail::add_row(out, fmt::format("full pool {} tokens x {} B; sliding-window pool {} tokens x {} B "
                                         "(--swa-full-tokens-ratio {})", with_commas(p.max_total_num_tokens),
                                         with_commas(p.full_bytes_per_token), with_commas(p.swa_tokens),
                                         with_commas(p.swa_bytes_per_token), s.swa_full_tokens_ratio),
                        {detail::count_figure("full_tokens", double(p.max_total_num_tokens), "tokens", pool_src),
                         detail::count_figure("swa_tokens", double(p.swa_tokens), "tokens",
                                              "pool_configurator.py HybridSWAPoolConfigurator"),
                         detail::count_figure("swa_full_tokens_ratio", s.swa_full_tokens_ratio, "ratio",
                                              s.swa_full_tokens_ratio_given ? "flag"
                                                                            : "server_args.py swa_full_tokens_ratio = 0.8")});
    }
    detail::add_row(out, fmt::format("\"KV Cache is allocated. #tokens: {}\"; max running requests {}; context length {}",
                                     with_commas(p.max_total_num_tokens), p.max_running_requests,
                                     with_commas(s.context_length)),
                    {detail::count_figure("kv_cache_tokens", double(p.max_total_num_tokens), "tokens", pool_src),
                     detail::count_figure("max_running_requests", double(p.max_running_requests), "requests",
                                          pool_src),
                     detail::count_figure("context_length", double(s.context_length), "tokens", "flag")});
    return {out};
}

// One device per TP rank, all alike: the memory in use before the weights load, the weights, then the static pool
// (KV, and the mamba slots of a hybrid) inside pre_free x mem_fraction_static; the rest of the GPU is left free.
std::vector<device_plan> devices_of(const model_desc & m, const sglang_plan & p, const device_spec & gpu) {
    const sglang_settings & s = p.settings;
    const uint64_t overhead = s.pre_load_overhead_bytes.value_or(k_default_pre_load_overhead);
    const int64_t budget = p.rest_bytes + int64_t(p.weights_bytes); // pre_free x mem_fraction_static
    const uint64_t mamba = p.rest_bytes > 0 ? uint64_t(p.rest_bytes) - p.kv_pool_bytes : 0;
    std::vector<device_plan> out;
    const uint32_t gpus = s.enable_dp_attention ? s.tp : s.tp * s.dp;
    for (uint32_t i = 0; i < gpus; ++i) {
        device_plan d;
        d.name = gpu.name;
        d.capacity_bytes = gpu.memory_bytes;
        d.reserved_bytes = uint64_t(std::max<int64_t>(0, int64_t(gpu.memory_bytes) - int64_t(overhead) - budget));
        d.n_layers = m.n_layer;
        d.buffers = {{"non_torch", overhead, !s.pre_load_overhead_bytes, "in use before the weights load (CUDA context)"},
                     {"weights", p.weights_bytes, !m.weights.exact, ""},
                     {"kv_pool", p.kv_pool_bytes, false, "\"KV Cache is allocated\""}};
        if (mamba > 0) { // with speculative decoding, the intermediate states per draft token too (rules.cpp)
            d.buffers.push_back({"mamba_pool", mamba, false, p.mamba_intermediate_bytes
                                 ? "mamba state slots and the draft tokens' intermediate states" : "mamba state slots"});
        }
        out.push_back(std::move(d));
    }
    return out;
}

// SGLang takes --tp and --dp as given (both default to 1, server_args.py); kvfit chooses them as for vLLM when the
// user gives neither: every TP dividing the GPUs (and the heads) with DP replicas over the rest; the plan that starts
// with the most tokens over all replicas wins, else the one with the largest pool budget.
sglang_plan choose(const model_desc & m, const flag_values & f, const machine & mc, const device_spec & gpu,
                   std::vector<std::string> & considered) {
    sglang_settings s = parse_sglang_flags(f);
    const uint32_t n = uint32_t(mc.gpus.size());
    const uint32_t world = s.enable_dp_attention ? s.tp : s.tp * s.dp;
    if (world > n) {
        throw error(fmt::format("--tp {}{} = {} GPUs, but {} are given", s.tp, s.enable_dp_attention || s.dp == 1 ? ""
                                : fmt::format(" x --dp {}", s.dp), world, n));
    }
    if (f.has("tp") || f.has("dp") || n == 1) return plan_sglang(m, s, gpu);
    std::optional<sglang_plan> best;
    for (uint32_t tp = n; tp >= 1; --tp) {
        if (n % tp != 0) continue;
        sglang_settings t = s;
        t.tp = tp, t.dp = n / tp;
        try {
            sglang_plan p = plan_sglang(m, t, gpu);
            considered.push_back(fmt::format("--tp {} --dp {}: {}", tp, t.dp, p.fits() ? fmt::format("{} tokens per replica",
                                             p.max_total_num_tokens) : "does not start"));
            const auto score = [](const sglang_plan & q) { return double(q.max_total_num_tokens) * q.settings.dp; };
            const bool better = !best || (p.fits() ? (!best->fits() || score(p) > score(*best))
                                                   : (!best->fits() && p.rest_bytes > best->rest_bytes));
            if (better) best = std::move(p);
        } catch (const error & e) {
            // a TP the heads do not divide: SGLang would refuse it; any other refusal is the user's to see
            if (std::string_view(e.what()).find("does not divide") == std::string_view::npos) throw;
        }
    }
    if (!best) throw error(fmt::format("sglang: no --tp up to {} divides the model's attention heads", n));
    best->notes.push_back(fmt::format("--tp {} --dp {} chosen over the {} GPUs (SGLang defaults both to 1): {}",
                                      best->settings.tp, best->settings.dp, n, fmt::join(considered, "; ")));
    return *best;
}

runtime_plan plan(const model_desc & m, const flag_values & f, const machine & mc) {
    if (mc.gpus.empty()) throw error("sglang: no GPUs given (the devices it runs on)");
    std::vector<std::string> gpu_warnings;
    const device_spec gpu = detail::serving_rank_gpu("sglang", "SGLang", mc.gpus, gpu_warnings); // every rank alike: the smallest
    std::vector<std::string> considered;
    const sglang_plan p = choose(m, f, mc, gpu, considered);
    runtime_plan r;
    r.runtime = "sglang";
    r.rules = "SGLang (pool_configurator.py, 2026 main)";
    r.context_tokens = p.context_length;
    r.sequences = uint32_t(p.max_running_requests);
    r.devices = devices_of(m, p, gpu);
    r.starts = p.fits();
    // a shorter pool caps requests, fewer mamba slots cap the requests at once (a warning says each)
    r.fits = p.fits() && p.max_total_num_tokens >= p.context_length && p.max_running_requests >= p.max_running_requests_asked;
    r.refusals = p.errors;
    r.warnings = p.warnings;
    r.warnings.insert(r.warnings.end(), gpu_warnings.begin(), gpu_warnings.end());
    r.notes = p.notes;
    r.assumptions = p.assumptions;
    if (p.fits()) r.launch = sglang_command(m, p); // no launch line for a plan SGLang would not start
    r.detail = detail_json(p);
    r.sections = sections_of(p);
    return r;
}

void check_flags(const flag_values & f) { (void)parse_sglang_flags(f); }

void default_weights(model_desc & m, std::vector<std::string> & warn) { detail::serving_default_weights(m, warn); }

// --context-length from 7: scheduler.py asserts max_req_input_len = min(context_len - 1, pool - 1) - 5 > 0, so SGLang
// refuses 1 to 6 whatever the memory (rules.cpp), and the search's grid starts where "fits" is monotone.
knob_range length_range(const model_desc & m, const flag_values &) {
    const uint64_t derived = sglang_derived_context_length(m);
    return {7, derived ? derived : k_context_search_top, 1};
}

// --max-running-requests up to the value given, else 4096, the top of SGLang's default clamp (rules.cpp). Memory is
// monotone in it: it sizes the mamba slots under --disable-radix-cache, the draft tokens' intermediate mamba states
// under speculative decoding and DeepSeek-V4's C128 state (rules.cpp), and nothing else of the pool; otherwise fewer
// requests free nothing and the search finds none.
knob_range sglang_requests_range(const model_desc &, const flag_values & f) {
    const sglang_settings s = parse_sglang_flags(f);
    const uint64_t hi = s.max_running_requests ? s.max_running_requests : 4096;
    return {1, hi, hi > 1 ? 1u : 0u};
}

} // namespace

runtime_info sglang_runtime() {
    runtime_info r;
    r.name = "sglang";
    r.display = "SGLang";
    r.summary = "SGLang's static memory pool: --mem-fraction-static, the token pool and the mamba slots";
    r.flags = sglang_flags;
    r.check_flags = check_flags;
    r.default_weights = default_weights;
    r.plan = plan;
    r.context = {"context", "context_length", "--context-length", false, length_range, {}};
    r.knobs = {r.context, {"sequences", "max_running_requests", "--max-running-requests", false, sglang_requests_range, {}}};
    // --kv-cache-dtype: the model's dtype (auto) or one byte (fp8_e5m2 takes fp8_e4m3's bytes, rules.cpp cell_bytes)
    r.cache_types = {"auto", "fp8_e4m3"};
    r.cache_type_k = "kv_cache_dtype";
    return r;
}

} // namespace kvfit
