// Serving runtimes on the command line (app/serving_cli.h): flags, their owners, and the run.
#include "serving_cli.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/serving_report.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fmt/format.h>

namespace kvfit::cli {
namespace {

template <class T>
T number(const std::string & flag, const std::string & text, T lo, T hi) {
    T v{};
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi) {
        throw error(fmt::format("{} '{}': expected a number from {} to {}", flag, text, lo, hi));
    }
    return v;
}

// vLLM's integers with a suffix (vllm/engine/arg_utils.py, human_readable_int, which _compute_kwargs gives
// max_model_len and max_num_batched_tokens): lower case is decimal (25.6k = 25,600; 1m = 1,000,000), upper case
// binary and whole (1K = 1,024; 128K = 131,072); "1.5K" is refused as vLLM refuses it. Plain integers otherwise.
int64_t human_int(const std::string & flag, const std::string & text, int64_t lo, int64_t hi) {
    static const std::pair<char, double> suffixes[] = {{'k', 1e3}, {'m', 1e6}, {'g', 1e9}, {'t', 1e12},
                                                        {'K', 0x1p10}, {'M', 0x1p20}, {'G', 0x1p30}, {'T', 0x1p40}};
    const char last = text.empty() ? '\0' : text.back();
    const auto s = std::find_if(std::begin(suffixes), std::end(suffixes), [&](const auto & p) { return p.first == last; });
    if (s == std::end(suffixes)) return number<int64_t>(flag, text, lo, hi);
    const std::string digits = text.substr(0, text.size() - 1);
    const bool decimal = std::islower(static_cast<unsigned char>(last));
    const bool shaped = !digits.empty() && digits.size() <= 20 && std::isdigit(static_cast<unsigned char>(digits.front())) &&
                        std::isdigit(static_cast<unsigned char>(digits.back())) &&
                        std::count(digits.begin(), digits.end(), '.') <= (decimal ? 1 : 0) &&
                        std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; });
    if (!shaped) {
        throw error(fmt::format("{} '{}': expected a number like 131072, 128K (x 1024) or 128k (x 1000){}", flag, text,
                                decimal ? "" : "; decimals only with k, m, g (decimal multipliers)"));
    }
    const double v = std::stod(digits) * s->second; // vLLM: int(float(number) * mult), truncating
    if (!(v >= double(lo)) || !(v <= double(hi))) {
        throw error(fmt::format("{} '{}' = {:.0f}: expected a number from {} to {}", flag, text, v, lo, hi));
    }
    return int64_t(v);
}

// A fraction in (0, 1], as vLLM's Field(gt=0, le=1) and SGLang's mem_fraction_static take it.
double fraction(const std::string & flag, const std::string & text) {
    const double v = number<double>(flag, text, 0.0, 1.0);
    if (!(v > 0)) throw error(fmt::format("{} '{}': must be greater than 0 and at most 1", flag, text));
    return v;
}

uint32_t count(const std::string & flag, const std::string & text, uint32_t def, uint32_t hi = 1u << 30) {
    return text.empty() ? def : number<uint32_t>(flag, text, 1, hi);
}

// What a llama.cpp flag is called in the selected runtime, for the error message.
std::string llama_flag_hint(const std::string & name, const std::string & runtime) {
    struct row { const char * llama; const char * shown; const char * vllm; const char * sglang; const char * ollama; };
    static const row rows[] = {
        {"--ctx-size", "-c", "--max-model-len", "--context-length", "--num-ctx"},
        {"--parallel", "-np", "--max-num-seqs", "--max-running-requests", "--num-parallel (OLLAMA_NUM_PARALLEL)"},
        {"--cache-type-k", "-ctk", "--kv-cache-dtype", "--kv-cache-dtype", "--ollama-kv-cache-type (OLLAMA_KV_CACHE_TYPE)"},
        {"--cache-type-v", "-ctv", "--kv-cache-dtype", "--kv-cache-dtype", "--ollama-kv-cache-type (OLLAMA_KV_CACHE_TYPE)"},
        {"--flash-attn", "-fa", nullptr, nullptr, "--ollama-flash-attention (OLLAMA_FLASH_ATTENTION)"},
        {"--margin", "--margin", "--gpu-memory-utilization", "--mem-fraction-static", "--fit-target"},
    };
    for (const auto & r : rows) {
        if (name != r.llama) continue;
        const char * alt = runtime == "vllm" ? r.vllm : runtime == "sglang" ? r.sglang : r.ollama;
        std::string shown = r.shown == name ? name : fmt::format("{}/{}", r.shown, name);
        return alt ? fmt::format("{} is a llama.cpp flag; with --runtime {} use {}", shown, runtime, alt)
                   : fmt::format("{} is a llama.cpp flag, not used with --runtime {}", shown, runtime);
    }
    return fmt::format("{} is a llama.cpp flag, not used with --runtime {}", name, runtime);
}

std::string runtime_word(const std::string & r) { return r == "vllm" ? "vLLM" : r == "sglang" ? "SGLang" : "Ollama"; }

void check_owners(const CLI::App & app, const serving_options & o) {
    static const std::vector<std::string> common = {"--gpu", "--weights", "--weights-size", "--json", "--list", "--inspect",
                                                    "--help", "--runtime", "model", "--hf-repo", "--hf-file"};
    for (const CLI::Option * opt : app.get_options()) {
        if (opt->count() == 0) continue;
        const std::string name = !opt->get_lnames().empty()   ? "--" + opt->get_lnames()[0]
                                 : !opt->get_snames().empty() ? "-" + opt->get_snames()[0]
                                                              : opt->get_single_name();
        const auto owned = std::find_if(o.owned.begin(), o.owned.end(), [&](const auto & p) { return p.first == opt; });
        if (owned != o.owned.end()) {
            if (owned->second.find(o.runtime) != std::string::npos) continue;
            const std::string owner = owned->second.substr(0, owned->second.find(' '));
            throw error(fmt::format("{} is a{} {} flag; add --runtime {}{}", name, owner == "ollama" ? "n" : "",
                                    runtime_word(owner), owner,
                                    o.runtime == "llama.cpp" ? "" : fmt::format(" (the runtime is {})", o.runtime)));
        }
        if (o.runtime == "llama.cpp" || std::find(common.begin(), common.end(), name) != common.end()) continue;
        throw error(llama_flag_hint(name, o.runtime));
    }
}

kvfit::vllm_settings vllm_from(const serving_options & o) {
    vllm_settings s;
    if (!o.vllm_rules.empty()) {
        if (o.vllm_rules != "2025" && o.vllm_rules != "2026") throw error("--vllm-rules: expected 2026 or 2025");
        s.rules = o.vllm_rules == "2025" ? vllm_rules::v2025 : vllm_rules::v2026;
    }
    if (!o.max_model_len.empty()) {
        s.max_model_len = o.max_model_len == "auto" ? -1 : human_int("--max-model-len", o.max_model_len, -1, 1ll << 32);
    }
    if (s.max_model_len == 0 && !o.max_model_len.empty()) throw error("--max-model-len 0: use -1 for auto-fit");
    if (!o.gpu_memory_utilization.empty()) s.gpu_memory_utilization = fraction("--gpu-memory-utilization", o.gpu_memory_utilization);
    if (!o.kv_cache_memory_bytes.empty()) {
        s.kv_cache_memory_bytes = parse_size(o.kv_cache_memory_bytes);
        if (s.kv_cache_memory_bytes == 0) throw error("--kv-cache-memory-bytes 0: must be positive");
    }
    if (!o.kv_cache_dtype.empty()) s.kv_cache_dtype = o.kv_cache_dtype;
    s.block_size = count("--block-size", o.block_size, 0, 1u << 20);
    s.max_num_seqs = count("--max-num-seqs", o.max_num_seqs, 0);
    s.max_num_batched_tokens = o.max_num_batched_tokens.empty()
                                   ? 0 : uint32_t(human_int("--max-num-batched-tokens", o.max_num_batched_tokens, 1, 1 << 30));
    s.enable_prefix_caching = o.prefix_caching && !o.no_prefix_caching;
    if (!o.mamba_cache_mode.empty()) {
        const std::string & m = o.mamba_cache_mode;
        if (m != "none" && m != "align" && m != "all") throw error("--mamba-cache-mode: expected none, align or all");
        s.mamba_mode = m == "none" ? mamba_cache_mode::none : m == "align" ? mamba_cache_mode::align : mamba_cache_mode::all;
    }
    if (!o.mamba_ssm_cache_dtype.empty()) s.mamba_ssm_cache_dtype = o.mamba_ssm_cache_dtype;
    if (!o.mamba_cache_dtype.empty()) s.mamba_cache_dtype = o.mamba_cache_dtype;
    s.mamba_block_size = count("--mamba-block-size", o.mamba_block_size, 0);
    s.enforce_eager = o.enforce_eager;
    s.tp = count("-tp", o.tp, 1, 1024);
    s.pp = count("-pp", o.pp, 1, 1024);
    s.dp = count("-dp", o.dp, 1, 1024);
    s.dcp = count("-dcp", o.dcp, 1, 1024);
    if (!o.activation.empty()) s.activation_bytes = parse_size(o.activation);
    if (!o.non_torch.empty()) s.non_torch_bytes = parse_size(o.non_torch);
    if (!o.cudagraph.empty()) s.cudagraph_bytes = parse_size(o.cudagraph);
    s.concurrency = count("--concurrency", o.concurrency, 1);
    return s;
}

void plan_vllm_into(serving_report & r, const serving_options & o, const device_spec & gpu) {
    vllm_settings s = vllm_from(o);
    const uint32_t per_node = uint32_t(r.gpus.size());
    const bool placed = !o.tp.empty() || !o.pp.empty() || !o.dp.empty();
    if (placed || per_node * r.nodes == 1) {
        const uint32_t world = s.tp * s.pp * s.dp;
        if (world > per_node * r.nodes) {
            throw error(fmt::format("-tp {} x -pp {} x -dp {} = {} GPUs, but --gpu{} gives {}", s.tp, s.pp, s.dp, world,
                                    r.nodes > 1 ? " x --nodes" : "", per_node * r.nodes));
        }
        r.vllm = plan_vllm(r.model, s, gpu, r.compute_capability);
        if (s.tp > per_node) r.vllm->warnings.push_back(fmt::format("-tp {} spans nodes of {} GPUs: TP across nodes is slow", s.tp, per_node));
        return;
    }
    r.placements = vllm_placements(r.model, s, gpu, r.compute_capability, per_node, r.nodes);
    if (r.placements.empty()) throw error(fmt::format("no TP size up to {} divides the model's attention heads", per_node));
    const vllm_placement * best = &r.placements[0];
    for (const auto & p : r.placements) {
        const bool better = p.fits ? (!best->fits || p.total_concurrency > best->total_concurrency)
                                   : (!best->fits && p.plan.max_model_len_fit > best->plan.max_model_len_fit);
        if (better) best = &p;
    }
    r.vllm = best->plan;
}

sglang_settings sglang_from(const serving_options & o) {
    sglang_settings s;
    if (!o.mem_fraction_static.empty()) s.mem_fraction_static = fraction("--mem-fraction-static", o.mem_fraction_static);
    s.tp = count("--tp", o.sglang_tp, 1, 1024);
    if (!o.context_length.empty()) s.context_length = number<uint64_t>("--context-length", o.context_length, 1, 1ull << 32);
    s.max_running_requests = count("--max-running-requests", o.max_running_requests, 0);
    if (!o.kv_cache_dtype.empty()) s.kv_cache_dtype = o.kv_cache_dtype;
    s.page_size = count("--page-size", o.page_size, 1, 1u << 20);
    s.max_mamba_cache_size = count("--max-mamba-cache-size", o.max_mamba_cache_size, 0);
    if (!o.mamba_full_memory_ratio.empty()) s.mamba_full_memory_ratio = number<double>("--mamba-full-memory-ratio", o.mamba_full_memory_ratio, 0.01, 100.0);
    s.disable_radix_cache = o.disable_radix_cache;
    return s;
}

ollama_settings ollama_from(const serving_options & o) {
    ollama_settings s;
    if (!o.num_ctx.empty()) s.num_ctx = number<uint64_t>("--num-ctx", o.num_ctx, 1, 1ull << 32);
    if (!o.ollama_context_length.empty()) s.context_length_env = number<uint64_t>("--ollama-context-length", o.ollama_context_length, 1, 1ull << 32);
    s.num_parallel = count("--num-parallel", o.num_parallel, 0, 256);
    s.kv_cache_type = o.ollama_kv_cache_type;
    s.flash_attention = o.ollama_flash_attention;
    if (!o.ollama_gpu_overhead.empty()) s.gpu_overhead_bytes = parse_size(o.ollama_gpu_overhead);
    if (!o.mmproj_size.empty()) s.mmproj_bytes = parse_size(o.mmproj_size);
    if (!o.fit_target.empty()) s.fit_target_bytes = parse_size(o.fit_target);
    s.embedding = o.embedding;
    return s;
}

// Weights for a config.json model: the given format or size, else the checkpoint's dtype (vLLM, SGLang) or
// Ollama's default Q4_K_M tag.
void apply_weights(model_desc & m, const common_inputs & in, const std::string & runtime, warnings & warn) {
    if (!in.weights_size.empty()) return apply_weight_size(m, parse_size(in.weights_size));
    if (!in.weights.empty()) return apply_weight_format(m, in.weights, true);
    if (m.weights.exact) return;
    const std::string fmt_name = runtime == "ollama" ? "q4_k_m" : m.dtype == "float16" ? "f16" : "bf16";
    apply_weight_format(m, fmt_name, true);
    warn.push_back(fmt::format("weights sized as {} ({}); --weights or --weights-size for a quantized checkpoint",
                               fmt_name, runtime == "ollama" ? "Ollama's default tag" : "the config's dtype"));
}

} // namespace

void add_serving_flags(CLI::App & app, serving_options & o) {
    app.add_option("--runtime", o.runtime, "llama.cpp (default), vllm, sglang or ollama")
        ->check(CLI::IsMember({"llama.cpp", "vllm", "sglang", "ollama"}));
    auto own = [&](CLI::Option * opt, const char * who) { o.owned.emplace_back(opt, who); };
    own(app.add_option("--nodes", o.nodes, "nodes of --gpu each (TP within a node, PP or DP across)"), "vllm");
    own(app.add_option("--vllm-rules", o.vllm_rules, "vLLM release rules: 2026 (default, v0.24+) or 2025 (<= v0.20)"), "vllm");
    own(app.add_option("--max-model-len", o.max_model_len, "vLLM: tokens per request, 131072, 128K (x 1024) or 128k (x 1000); -1 or auto = auto-fit"), "vllm");
    own(app.add_option("--gpu-memory-utilization", o.gpu_memory_utilization, "vLLM: fraction (default 0.92; 0.9 for 2025 rules)"), "vllm");
    own(app.add_option("--kv-cache-memory-bytes", o.kv_cache_memory_bytes, "vLLM: KV pool per GPU, replaces the budget"), "vllm");
    own(app.add_option("--kv-cache-dtype", o.kv_cache_dtype, "vLLM: auto fp8 fp8_e4m3 fp8_e5m2 fp8_ds_mla fp8_per_token_head "
                                                              "int8_per_token_head nvfp4; SGLang: auto fp8_e4m3 fp8_e5m2"), "vllm sglang");
    own(app.add_option("--block-size", o.block_size, "vLLM: tokens per block (default 16; hybrids re-aligned)"), "vllm");
    own(app.add_option("--max-num-seqs", o.max_num_seqs, "vLLM: running requests (default 256, or 1024 on >= 70 GiB)"), "vllm");
    own(app.add_option("--max-num-batched-tokens", o.max_num_batched_tokens, "vLLM: tokens per step (default 2048 / 8192), 8K or 8k as --max-model-len"), "vllm");
    own(app.add_flag("--enable-prefix-caching", o.prefix_caching, "vLLM: prefix caching (hybrids: mamba mode align)"), "vllm");
    own(app.add_flag("--no-enable-prefix-caching", o.no_prefix_caching, "vLLM: prefix caching off"), "vllm");
    own(app.add_option("--mamba-cache-mode", o.mamba_cache_mode, "vLLM: none, align or all"), "vllm");
    own(app.add_option("--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype, "vLLM: SSM state dtype (auto = config)"), "vllm");
    own(app.add_option("--mamba-cache-dtype", o.mamba_cache_dtype, "vLLM: conv state dtype (auto = model dtype)"), "vllm");
    own(app.add_option("--mamba-block-size", o.mamba_block_size, "vLLM: mamba block for --mamba-cache-mode all"), "vllm");
    own(app.add_flag("--enforce-eager", o.enforce_eager, "vLLM: no CUDA graphs"), "vllm");
    own(app.add_option("--tensor-parallel-size", o.tp, "-tp: vLLM tensor parallel size"), "vllm");
    own(app.add_option("--pipeline-parallel-size", o.pp, "-pp: vLLM pipeline parallel size"), "vllm");
    own(app.add_option("--data-parallel-size", o.dp, "-dp: vLLM data parallel size"), "vllm");
    own(app.add_option("--decode-context-parallel-size", o.dcp, "-dcp: vLLM decode context parallel size"), "vllm");
    own(app.add_option("--activation-memory", o.activation, "vLLM input: activation peak per GPU (default: estimate)"), "vllm");
    own(app.add_option("--non-torch-memory", o.non_torch, "vLLM input: non-torch memory per GPU (default 0.35/0.5 GiB)"), "vllm");
    own(app.add_option("--cudagraph-memory", o.cudagraph, "vLLM input: CUDA-graph estimate per GPU (default 0.5/1 GiB)"), "vllm");
    own(app.add_option("--concurrency", o.concurrency, "vLLM: full-length requests that must fit at once (default 1)"), "vllm");
    own(app.add_option("--mem-fraction-static", o.mem_fraction_static, "SGLang: static pool fraction (default 0.85 assumed)"), "sglang");
    own(app.add_option("--tp", o.sglang_tp, "SGLang: tensor parallel size"), "sglang");
    own(app.add_option("--context-length", o.context_length, "SGLang: tokens per request"), "sglang");
    own(app.add_option("--max-running-requests", o.max_running_requests, "SGLang: running requests"), "sglang");
    own(app.add_option("--page-size", o.page_size, "SGLang: tokens per page (default 1)"), "sglang");
    own(app.add_option("--max-mamba-cache-size", o.max_mamba_cache_size, "SGLang: mamba slots"), "sglang");
    own(app.add_option("--mamba-full-memory-ratio", o.mamba_full_memory_ratio, "SGLang: mamba / KV ratio (0.9)"), "sglang");
    own(app.add_flag("--disable-radix-cache", o.disable_radix_cache, "SGLang: radix cache off"), "sglang");
    own(app.add_option("--num-ctx", o.num_ctx, "Ollama: PARAMETER num_ctx (default by VRAM tier)"), "ollama");
    own(app.add_option("--num-parallel", o.num_parallel, "Ollama: OLLAMA_NUM_PARALLEL"), "ollama");
    own(app.add_option("--ollama-kv-cache-type", o.ollama_kv_cache_type, "Ollama: OLLAMA_KV_CACHE_TYPE f16 q8_0 q4_0"), "ollama");
    own(app.add_option("--ollama-flash-attention", o.ollama_flash_attention, "Ollama: OLLAMA_FLASH_ATTENTION 1 or 0"), "ollama");
    own(app.add_option("--ollama-context-length", o.ollama_context_length, "Ollama: OLLAMA_CONTEXT_LENGTH"), "ollama");
    own(app.add_option("--ollama-gpu-overhead", o.ollama_gpu_overhead, "Ollama: OLLAMA_GPU_OVERHEAD"), "ollama");
    own(app.add_option("--mmproj-size", o.mmproj_size, "Ollama: projector size (vision models)"), "ollama");
    own(app.add_option("--fit-target", o.fit_target, "Ollama: LLAMA_ARG_FIT_TARGET in extraEnvs"), "ollama");
    own(app.add_flag("--embedding", o.embedding, "Ollama: an embedding model (one slot)"), "ollama");
}

int run_serving_if_selected(const CLI::App & app, const serving_options & o, const common_inputs & in) {
    check_owners(app, o);
    if (o.runtime == "llama.cpp" || in.list_or_inspect) return -1;
    serving_report r;
    const std::string spec = in.model.empty() ? std::string(default_model_name()) : in.model;
    const catalog_entry * e = find_catalog(spec);
    r.model_ref = e ? std::string(e->hf_id) : spec;
    r.model = load_model(spec, r.warn);
    apply_weights(r.model, in, o.runtime, r.warn);
    if (!in.gpu.empty()) r.gpus = parse_gpu_list(in.gpu);
    if (r.gpus.empty() && o.runtime != "ollama") throw error(fmt::format("--runtime {} needs --gpu (the devices it runs on)", o.runtime));
    r.nodes = count("--nodes", o.nodes, 1, 1024);
    device_spec gpu = r.gpus.empty() ? device_spec{} : r.gpus[0];
    for (const auto & g : r.gpus) gpu = g.memory_bytes < gpu.memory_bytes ? g : gpu; // every rank planned alike: the smallest
    if (const gpu_info * info = find_gpu(gpu.name)) r.compute_capability = info->compute_capability;

    if (o.runtime == "vllm") plan_vllm_into(r, o, gpu);
    if (o.runtime == "sglang") r.sglang = plan_sglang(r.model, sglang_from(o), gpu);
    if (o.runtime == "ollama") r.ollama = plan_ollama(r.model, ollama_from(o), r.gpus);
    fmt::print("{}", in.json ? render_serving_json(r) : render_serving_text(r));
    return r.fits() ? 0 : 3;
}

} // namespace kvfit::cli
