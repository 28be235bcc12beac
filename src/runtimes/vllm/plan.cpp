// vLLM behind the runtime interface (include/kvfit/vllm.h, runtime.h): its flags, the choice among placements, the
// runtime_plan of the chosen replica (devices, refusals, detail) and the `vllm serve` command that realises it.
#include "kvfit/vllm.h"
#include "kvfit/printable.h"

#include "kvfit/error.h"
#include "kvfit/sources.h"
#include "kvfit/units.h"
#include "runtimes/common/launch.h"
#include "runtimes/common/model_warnings.h"
#include "runtimes/common/quant.h"
#include "runtimes/common/numbers.h"
#include "runtimes/vllm/layout.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace kvfit {

using detail::count;
using detail::fraction;
using detail::number;

namespace {

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

using njson = nlohmann::json;

njson json_object(const char * flag, const std::string & text) {
    njson j = njson::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw error(fmt::format("{} '{}': expected a JSON object", flag, text));
    return j;
}

// --limit-mm-per-prompt (vllm/config/multimodal.py limit_per_prompt): {"image": N, "video": M}, a count or
// {"count": N, ...} per modality. Returns the image count, 0 when every modality is 0 (text-only), -1 when images
// are not limited.
int32_t parse_limit_mm(const std::string & text) {
    const njson j = json_object("--limit-mm-per-prompt", text);
    int64_t images = -1, others = 0;
    for (const auto & [k, v] : j.items()) {
        const njson & c = v.is_object() && v.contains("count") ? v["count"] : v;
        if (!c.is_number_integer() || c.get<int64_t>() < 0 || c.get<int64_t>() > 1000000) {
            throw error(fmt::format("--limit-mm-per-prompt '{}': {} must be a count from 0 to 1000000", text, k));
        }
        if (k == "image") images = c.get<int64_t>();
        else others += c.get<int64_t>();
    }
    if (images < 0) return others == 0 && !j.empty() && !j.contains("image") ? -1 : -1;
    return images == 0 && others == 0 ? 0 : int32_t(std::max<int64_t>(images, 1));
}

// --mm-processor-kwargs: max_pixels, or size {"longest_edge": N} (Qwen2-VL / Qwen3-VL image processors), pixels.
uint64_t parse_mm_kwargs(const std::string & text) {
    const njson j = json_object("--mm-processor-kwargs", text);
    const njson * v = j.contains("max_pixels") ? &j["max_pixels"]
                    : j.contains("size") && j["size"].is_object() && j["size"].contains("longest_edge") ? &j["size"]["longest_edge"]
                                                                                                        : nullptr;
    if (v == nullptr) return 0; // kwargs that do not bound the image size
    if (!v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > (1ll << 34)) {
        throw error(fmt::format("--mm-processor-kwargs '{}': max_pixels must be a whole number of pixels", text));
    }
    return v->get<uint64_t>();
}

// --compilation-config (vllm/config/compilation.py CompilationConfig): cudagraph_mode, max_cudagraph_capture_size,
// cudagraph_capture_sizes; an integer alone is the old -O level (ignored: no memory rule).
void parse_compilation_config(const std::string & text, vllm_settings & s) {
    if (!text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
        s.compilation_notes.push_back(fmt::format("--compilation-config {}: an optimisation level (-O), which sets no "
                                                  "memory kvfit models; CUDA graphs are planned at vLLM's defaults", text));
        return;
    }
    const njson j = json_object("--compilation-config", text);
    std::string others;
    for (const auto & [key, value] : j.items()) {
        if (key != "cudagraph_mode" && key != "max_cudagraph_capture_size" && key != "cudagraph_capture_sizes") {
            others += fmt::format("{}{}", others.empty() ? "" : ", ", key);
        }
    }
    if (!others.empty()) {
        s.compilation_notes.push_back(fmt::format("--compilation-config {}: not modelled (kvfit reads cudagraph_mode, "
                                                  "max_cudagraph_capture_size and cudagraph_capture_sizes)", others));
    }
    if (j.contains("cudagraph_mode")) {
        static const std::vector<std::string> modes = {"NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"};
        const std::string m = j["cudagraph_mode"].is_string() ? j["cudagraph_mode"].get<std::string>() : "";
        if (std::find(modes.begin(), modes.end(), m) == modes.end()) {
            throw error(fmt::format("--compilation-config cudagraph_mode '{}': expected NONE, PIECEWISE, FULL, "
                                    "FULL_DECODE_ONLY or FULL_AND_PIECEWISE", m));
        }
        s.cudagraph_mode = m;
    }
    if (j.contains("max_cudagraph_capture_size")) {
        const njson & v = j["max_cudagraph_capture_size"];
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 65536) {
            throw error("--compilation-config max_cudagraph_capture_size: expected a whole number from 1 to 65536");
        }
        s.max_cudagraph_capture_size = v.get<uint32_t>();
    }
    if (j.contains("cudagraph_capture_sizes")) {
        const njson & v = j["cudagraph_capture_sizes"];
        if (!v.is_array() || v.size() > 4096) throw error("--compilation-config cudagraph_capture_sizes: expected a list of sizes");
        if (v.empty()) {
            throw error("--compilation-config cudagraph_capture_sizes: an empty list; give the sizes, or cudagraph_mode NONE "
                        "(or --enforce-eager) for no CUDA graphs");
        }
        for (const auto & x : v) {
            if (!x.is_number_integer() || x.get<int64_t>() < 1 || x.get<int64_t>() > 65536) {
                throw error("--compilation-config cudagraph_capture_sizes: expected whole numbers from 1 to 65536");
            }
            s.cudagraph_sizes.push_back(x.get<uint32_t>());
        }
        if (!s.cudagraph_sizes.empty() && s.max_cudagraph_capture_size == 0) {
            s.max_cudagraph_capture_size = *std::max_element(s.cudagraph_sizes.begin(), s.cudagraph_sizes.end());
        }
    }
}

} // namespace

// Spelled as vllm/engine/arg_utils.py (EngineArgs.add_cli_args) spells them; --nodes, --vllm-rules, --concurrency and
// the "input:" figures are kvfit's.
const std::vector<flag_spec> & vllm_flags() {
    using t = flag_type;
    using s = flag_setting;
    static const std::vector<flag_spec> v = {
        {"--nodes", "", "nodes of --gpu each (TP within a node, PP or DP across)", t::count},
        {"--vllm-rules", "", "vLLM release rules: 2026 (default, v0.24+), 0.21 (v0.21-v0.23) or 2025 (<= v0.20); or a "
         "release: 0.19, 0.22, 0.26", t::text, "2026|0.21|2025|RELEASE"},
        {"--usage-context", "", "api (vllm serve, default) or llm (the offline LLM class: larger batch defaults)", t::text},
        {"--language-model-only", "", "text only: the vision tower is neither loaded nor profiled", t::boolean},
        {"--skip-mm-profiling", "", "the vision encoder is loaded but not profiled", t::boolean},
        {"--limit-mm-per-prompt", "", "JSON: {\"image\":1,\"video\":0}; all 0 = text only (no encoder profiling)", t::text,
         "JSON"},
        {"--mm-processor-kwargs", "", "JSON: {\"max_pixels\":1003520} (the largest image the processor makes)", t::text, "JSON"},
        {"--compilation-config", "-cc", "JSON: {\"cudagraph_mode\":\"PIECEWISE\",\"max_cudagraph_capture_size\":64}", t::text, "JSON"},
        {"--max-model-len", "", "tokens per request, 131072, 128K (x 1024) or 128k (x 1000); -1 or auto = auto-fit", t::text,
         "INT[k|K|m|M]|-1", s::context},
        {"--gpu-memory-utilization", "", "fraction of GPU memory (default 0.92; 0.9 for 2025 rules)", t::fraction,
         "", s::memory_margin},
        {"--kv-cache-memory-bytes", "", "KV pool per GPU, replaces the budget: bytes as vLLM reads them (8G = 8 x 2^30, "
                                        "8g = 8 x 10^9), or 8GiB", t::size},
        {"--kv-cache-dtype", "", "auto fp8 fp8_e4m3 fp8_e5m2 fp8_ds_mla fp8_per_token_head int8_per_token_head nvfp4",
         t::text, "DTYPE", s::cache_type},
        {"--quantization", "-q", "fp8 nvfp4 mxfp4 awq gptq (default: the checkpoint's quantization_config)", t::text},
        {"--disable-hybrid-kv-cache-manager", "", "one KV group: sliding layers kept at full length", t::boolean},
        {"--block-size", "", "tokens per block (default 16; hybrids re-aligned)", t::count},
        {"--max-num-seqs", "", "running requests (default 256, or 1024 on >= 70 GiB)", t::count, "",
         s::concurrency},
        {"--max-num-batched-tokens", "", "tokens per step (default 2048 / 8192), 8K or 8k as --max-model-len", t::text,
         "INT[k|K|m|M]"},
        {"--enable-prefix-caching", "", "prefix caching (hybrids: mamba mode align)", t::boolean},
        {"--no-enable-prefix-caching", "", "prefix caching off", t::boolean},
        {"--mamba-cache-mode", "", "none, align or all", t::text, "none|align|all"},
        {"--mamba-ssm-cache-dtype", "", "SSM state dtype (auto = config)", t::text, "DTYPE"},
        {"--mamba-cache-dtype", "", "conv state dtype (auto = model dtype)", t::text, "DTYPE"},
        {"--mamba-block-size", "", "mamba block for --mamba-cache-mode all", t::count},
        {"--enforce-eager", "", "no CUDA graphs", t::boolean},
        {"--tensor-parallel-size", "-tp", "tensor parallel size", t::count},
        {"--pipeline-parallel-size", "-pp", "pipeline parallel size", t::count},
        {"--data-parallel-size", "-dp", "data parallel size", t::count},
        {"--decode-context-parallel-size", "-dcp", "decode context parallel size", t::count},
        {"--activation-memory", "", "input: activation peak per GPU (default: estimate)", t::size},
        {"--non-torch-memory", "", "input: non-torch memory per GPU (default 0.35/0.5 GiB)", t::size},
        {"--cudagraph-memory", "", "input: CUDA-graph memory per GPU (default: estimated per captured graph; none under the 2025 rules)", t::size},
        {"--concurrency", "", "full-length requests that must fit at once (default 1)", t::count},
        {"--dtype", "", "weights and activations: auto (the config's; float32 loaded as bfloat16), half, float16, "
                        "bfloat16, float, float32", t::text, "DTYPE"},
        {"--cpu-offload-gb", "", "GiB of decoder-layer weights per GPU kept in host memory (UVA offload)", t::text,
         "GiB"},
        // accepted as vLLM spells them, named as not modelled (plan() warns): they change no GPU term kvfit plans
        {"--swap-space", "", "CPU swap space per GPU, GiB (host memory: not modelled)", t::text, "GiB"},
        {"--enable-chunked-prefill", "", "chunked prefill (not modelled: the token budget is --max-num-batched-tokens)",
         t::boolean},
        {"--speculative-config", "-sc", "JSON: {\"method\":\"mtp\",\"num_speculative_tokens\":2}, eagle/eagle3/draft_model with "
         "\"model\", ngram, suffix", t::text, "JSON"},
    };
    return v;
}

vllm_settings parse_vllm_flags(const flag_values & f) {
    vllm_settings s;
    const auto text = [&](const char * name) { return f.text(name); };
    if (!text("vllm_rules").empty()) s.rules = parse_vllm_rules(text("vllm_rules"));
    if (!text("usage_context").empty()) s.usage_context = text("usage_context");
    s.language_model_only = f.boolean("language_model_only");
    s.skip_mm_profiling = f.boolean("skip_mm_profiling");
    if (!text("limit_mm_per_prompt").empty()) s.limit_mm_images = parse_limit_mm(text("limit_mm_per_prompt"));
    if (!text("mm_processor_kwargs").empty()) s.mm_max_pixels = parse_mm_kwargs(text("mm_processor_kwargs"));
    if (!text("compilation_config").empty()) parse_compilation_config(text("compilation_config"), s);
    if (!text("max_model_len").empty()) {
        s.max_model_len = text("max_model_len") == "auto" ? -1 : human_int("--max-model-len", text("max_model_len"), -1, 1ll << 32);
    }
    if (s.max_model_len == 0 && !text("max_model_len").empty()) throw error("--max-model-len 0: use -1 for auto-fit");
    if (!text("gpu_memory_utilization").empty()) {
        s.gpu_memory_utilization = fraction("--gpu-memory-utilization", text("gpu_memory_utilization"));
    }
    if (!text("kv_cache_memory_bytes").empty()) {
        // vLLM reads it with human_readable_int (arg_utils.py _compute_kwargs): bytes, or a k/m/g/t (decimal) or
        // K/M/G/T (binary) suffix; kvfit's own units (8GiB, 8GB) are taken too
        const std::string v = text("kv_cache_memory_bytes");
        const bool vllm_spelling = !v.empty() && std::string_view("0123456789kmgtKMGT").find(v.back()) != std::string_view::npos;
        s.kv_cache_memory_bytes = vllm_spelling ? uint64_t(human_int("--kv-cache-memory-bytes", v, 0, int64_t(1) << 60))
                                                : parse_size_flag("--kv-cache-memory-bytes", v);
        if (s.kv_cache_memory_bytes == 0) throw error("--kv-cache-memory-bytes 0: must be positive");
    }
    if (!text("kv_cache_dtype").empty()) s.kv_cache_dtype = text("kv_cache_dtype");
    if (const std::string q = text("quantization"); !q.empty()) {
        static const std::vector<std::string> known = {"fp8", "nvfp4", "mxfp4", "awq", "gptq", "awq_marlin", "gptq_marlin",
                                                       "modelopt", "modelopt_fp4", "compressed-tensors"};
        if (std::find(known.begin(), known.end(), q) == known.end()) {
            throw error(fmt::format("--quantization '{}': expected one of fp8, nvfp4, mxfp4, awq, gptq, awq_marlin, "
                                    "gptq_marlin, modelopt, modelopt_fp4, compressed-tensors", q));
        }
        s.quantization = q;
    }
    s.disable_hybrid_kv_cache_manager = f.boolean("disable_hybrid_kv_cache_manager");
    s.block_size = count("--block-size", text("block_size"), 0, 1u << 20);
    s.max_num_seqs = count("--max-num-seqs", text("max_num_seqs"), 0);
    s.max_num_batched_tokens = text("max_num_batched_tokens").empty()
                                   ? 0 : uint32_t(human_int("--max-num-batched-tokens", text("max_num_batched_tokens"), 1, 1 << 30));
    s.enable_prefix_caching = f.boolean("enable_prefix_caching") && !f.boolean("no_enable_prefix_caching");
    if (const std::string m = text("mamba_cache_mode"); !m.empty()) {
        if (m != "none" && m != "align" && m != "all") throw error("--mamba-cache-mode: expected none, align or all");
        s.mamba_mode = m == "none" ? mamba_cache_mode::none : m == "align" ? mamba_cache_mode::align : mamba_cache_mode::all;
    }
    if (!text("mamba_ssm_cache_dtype").empty()) s.mamba_ssm_cache_dtype = text("mamba_ssm_cache_dtype");
    if (!text("mamba_cache_dtype").empty()) s.mamba_cache_dtype = text("mamba_cache_dtype");
    s.mamba_block_size = count("--mamba-block-size", text("mamba_block_size"), 0);
    s.enforce_eager = f.boolean("enforce_eager");
    s.tp = count("-tp", text("tensor_parallel_size"), 1, 1024);
    s.pp = count("-pp", text("pipeline_parallel_size"), 1, 1024);
    s.dp = count("-dp", text("data_parallel_size"), 1, 1024);
    s.dcp = count("-dcp", text("decode_context_parallel_size"), 1, 1024);
    if (!text("activation_memory").empty()) s.activation_bytes = parse_size_flag("--activation-memory", text("activation_memory"));
    if (!text("non_torch_memory").empty()) s.non_torch_bytes = parse_size_flag("--non-torch-memory", text("non_torch_memory"));
    if (!text("cudagraph_memory").empty()) s.cudagraph_bytes = parse_size_flag("--cudagraph-memory", text("cudagraph_memory"));
    s.concurrency = count("--concurrency", text("concurrency"), 1);
    if (const std::string d = text("dtype"); !d.empty()) {
        static const char * const known[] = {"auto", "half", "float16", "bfloat16", "float", "float32"};
        if (std::find(std::begin(known), std::end(known), d) == std::end(known)) {
            throw error(fmt::format("--dtype '{}': expected auto, half, float16, bfloat16, float or float32", d));
        }
        s.dtype = d;
    }
    if (!text("cpu_offload_gb").empty()) s.cpu_offload_gb = number<double>("--cpu-offload-gb", text("cpu_offload_gb"), 0.0, 1e6);
    // --swap-space GiB (host memory, not planned: a warning names it) is still checked as vLLM's float >= 0
    if (!text("swap_space").empty()) (void)number<double>("--swap-space", text("swap_space"), 0.0, 1e6);
    if (f.has("speculative_config")) s.speculative = parse_speculative_config(text("speculative_config"));
    return s;
}

namespace {

using json = nlohmann::ordered_json;

// The chosen replica and what was compared to choose it.
struct vllm_choice {
    vllm_plan plan;
    std::vector<vllm_placement> placements; ///< candidates considered when no -tp, -pp or -dp was given
    uint32_t per_node = 1, nodes = 1;
    std::vector<std::string> gpu_warnings; ///< unlike GPUs planned at the smallest (detail::serving_rank_gpu)
};

vllm_choice choose(const model_desc & m, const flag_values & f, const machine & mc, const vllm_speculative & sp) {
    if (mc.gpus.empty()) throw error("vllm: no GPUs given (the devices it runs on)");
    vllm_choice c;
    c.per_node = uint32_t(mc.gpus.size());
    c.nodes = count("--nodes", f.text("nodes"), 1, 1024);
    const device_spec gpu = detail::serving_rank_gpu("vllm", "vLLM", mc.gpus, c.gpu_warnings); // every rank alike: the smallest
    vllm_settings s = parse_vllm_flags(f);
    if (!sp.method.empty() || !sp.model.empty()) s.speculative = sp;
    { // the speculative config's own refusals first: the placement search below drops candidates that throw
        vllm_settings probe = s;
        probe.speculative.draft_tensor_parallel_size = 0; // checked per placement (it depends on the TP)
        std::vector<std::string> ignored;
        detail::vllm_resolve_speculative(m, probe, ignored);
    }
    const bool placed = f.has("tensor_parallel_size") || f.has("pipeline_parallel_size") || f.has("data_parallel_size");
    if (placed || c.per_node * c.nodes == 1) {
        const uint32_t world = s.tp * s.pp * s.dp;
        if (world > c.per_node * c.nodes) {
            throw error(fmt::format("-tp {} x -pp {} x -dp {} = {} GPUs, but {} {} given", s.tp, s.pp, s.dp, world,
                                    c.per_node * c.nodes, c.nodes > 1 ? "are (GPUs per node x nodes)" : "are"));
        }
        c.plan = plan_vllm(m, s, gpu, gpu.compute_capability);
        if (s.tp > c.per_node) {
            c.plan.warnings.push_back(fmt::format("-tp {} spans nodes of {} GPUs: TP across nodes is slow", s.tp, c.per_node));
        }
        return c;
    }
    c.placements = vllm_placements(m, s, gpu, gpu.compute_capability, c.per_node, c.nodes);
    if (c.placements.empty()) {
        // every candidate refused: TP 1's refusal is the reason (DeepSeek-V4 needs an fp8 KV cache: it used to be
        // reported as heads no TP size divides)
        vllm_settings one = s;
        one.tp = one.pp = one.dp = 1;
        (void)plan_vllm(m, one, gpu, gpu.compute_capability);
        throw error(fmt::format("no TP size up to {} divides the model's attention heads", c.per_node));
    }
    const vllm_placement * best = &c.placements[0];
    for (const auto & p : c.placements) {
        const bool better = p.fits ? (!best->fits || p.total_concurrency > best->total_concurrency)
                                   : (!best->fits && p.plan.max_model_len_fit > best->plan.max_model_len_fit);
        if (better) best = &p;
    }
    c.plan = best->plan;
    return c;
}

// Starts, and meets the requested length and concurrency (over all replicas).
bool meets_request(const vllm_choice & c) {
    if (!c.placements.empty()) {
        for (const auto & p : c.placements) {
            if (p.fits) return true;
        }
        return false;
    }
    return c.plan.fits() && c.plan.max_concurrency * c.plan.settings.dp >= c.plan.settings.concurrency;
}

std::string vllm_command(const std::string & model_ref, const vllm_plan & p, const vllm_choice & c, uint64_t len,
                         uint32_t seqs) {
    const vllm_settings & s = p.settings;
    std::string cmd = fmt::format("vllm serve {} --max-model-len {}", shell_word(model_ref), len);
    if (s.kv_cache_memory_bytes) cmd += fmt::format(" --kv-cache-memory-bytes {}", s.kv_cache_memory_bytes);
    else cmd += fmt::format(" --gpu-memory-utilization {}", s.gpu_memory_utilization);
    cmd += fmt::format(" --max-num-seqs {} --max-num-batched-tokens {} --block-size {}", seqs, s.max_num_batched_tokens,
                       p.block_size);
    if (s.kv_cache_dtype != "auto") cmd += " --kv-cache-dtype " + s.kv_cache_dtype;
    if (!s.quantization.empty()) cmd += " --quantization " + s.quantization;
    if (s.disable_hybrid_kv_cache_manager) cmd += " --disable-hybrid-kv-cache-manager";
    cmd += s.enable_prefix_caching ? " --enable-prefix-caching" : " --no-enable-prefix-caching";
    if (s.usage_context == "llm") cmd = "# the offline LLM class (usage context llm), as its engine arguments:\n" + cmd;
    if (s.language_model_only) cmd += " --language-model-only";
    if (s.skip_mm_profiling) cmd += " --skip-mm-profiling";
    if (s.limit_mm_images >= 0) cmd += fmt::format(" --limit-mm-per-prompt '{{\"image\":{},\"video\":0}}'", s.limit_mm_images);
    if (p.hybrid && s.rules == vllm_rules::v2026) {
        cmd += fmt::format(" --mamba-cache-mode {}", mamba_cache_mode_name(s.mamba_mode));
        if (s.mamba_ssm_cache_dtype != "auto") cmd += " --mamba-ssm-cache-dtype " + s.mamba_ssm_cache_dtype;
        if (s.mamba_cache_dtype != "auto") cmd += " --mamba-cache-dtype " + s.mamba_cache_dtype;
    }
    if (s.enforce_eager) cmd += " --enforce-eager";
    if (s.dtype != "auto") cmd += " --dtype " + s.dtype;
    if (s.cpu_offload_gb > 0) cmd += fmt::format(" --cpu-offload-gb {}", s.cpu_offload_gb);
    if (!s.speculative.json.empty()) cmd += " --speculative-config " + shell_word(s.speculative.json);
    if (s.tp > 1) cmd += fmt::format(" -tp {}", s.tp);
    if (s.pp > 1) cmd += fmt::format(" -pp {}", s.pp);
    if (s.dcp > 1) cmd += fmt::format(" -dcp {}", s.dcp);
    if (s.dp > 1 && c.nodes > 1) { // one DP rank per node: head, then the others headless
        std::string out = fmt::format("# node 0 (head)\n{} -dp {} --data-parallel-size-local {} --data-parallel-address "
                                      "HEAD_IP --data-parallel-rpc-port 13345\n", cmd, s.dp, s.dp / c.nodes);
        for (uint32_t n = 1; n < c.nodes; ++n) {
            out += fmt::format("# node {}\n{} -dp {} --data-parallel-size-local {} --data-parallel-start-rank {} "
                               "--data-parallel-address HEAD_IP --data-parallel-rpc-port 13345 --headless\n",
                               n, cmd, s.dp, s.dp / c.nodes, n * (s.dp / c.nodes));
        }
        return out;
    }
    if (s.dp > 1) cmd += fmt::format(" -dp {}", s.dp);
    if (s.tp * s.pp > c.per_node) {
        return fmt::format("# start a Ray cluster over the {} nodes, then on the head node:\n{} "
                           "--distributed-executor-backend ray\n", c.nodes, cmd);
    }
    return cmd + "\n";
}

// The planned command; when it does not start and the plan names a remedy (a shorter max_model_len, fewer
// sequences for the mamba blocks), that variant follows.
std::string vllm_commands(const std::string & model_ref, const vllm_choice & c) {
    const vllm_plan & p = c.plan;
    const std::string planned = vllm_command(model_ref, p, c, p.max_model_len, p.settings.max_num_seqs);
    if (p.fits() || p.available_kv_bytes <= 0) return planned;
    uint64_t len = p.max_model_len;
    uint32_t seqs = p.settings.max_num_seqs;
    if (p.need_bytes > uint64_t(p.available_kv_bytes)) len = p.max_model_len_fit;
    else if (p.mamba_blocks_per_request) seqs = uint32_t(std::min<uint64_t>(p.num_gpu_blocks, seqs));
    if (len == 0 || seqs == 0) return planned;
    return "# as planned (does not start):\n" + planned + "# a variant that starts:\n" +
           vllm_command(model_ref, p, c, len, seqs);
}

json detail_json(const vllm_choice & c) {
    const vllm_plan & p = c.plan;
    const vllm_settings & s = p.settings;
    json j;
    j["settings"] = {{"vllm_rules", vllm_rules_key(s.rules)}, {"usage_context", s.usage_context},
                     {"language_model_only", s.language_model_only}, {"skip_mm_profiling", s.skip_mm_profiling},
                     {"limit_mm_images", s.limit_mm_images}, {"mm_max_pixels", s.mm_max_pixels},
                     {"cudagraph_mode", s.cudagraph_mode.empty() ? "FULL_AND_PIECEWISE" : s.cudagraph_mode},
                     {"max_model_len", s.max_model_len},
                     {"gpu_memory_utilization", s.gpu_memory_utilization}, {"kv_cache_memory_bytes", s.kv_cache_memory_bytes},
                     {"kv_cache_dtype", s.kv_cache_dtype}, {"quantization", s.quantization},
                     {"disable_hybrid_kv_cache_manager", s.disable_hybrid_kv_cache_manager}, {"block_size", s.block_size}, {"max_num_seqs", s.max_num_seqs},
                     {"max_num_batched_tokens", s.max_num_batched_tokens}, {"enable_prefix_caching", s.enable_prefix_caching},
                     {"mamba_cache_mode", mamba_cache_mode_name(s.mamba_mode)},
                     {"mamba_ssm_cache_dtype", s.mamba_ssm_cache_dtype}, {"mamba_cache_dtype", s.mamba_cache_dtype},
                     {"enforce_eager", s.enforce_eager}, {"tensor_parallel_size", s.tp}, {"pipeline_parallel_size", s.pp},
                     {"data_parallel_size", s.dp}, {"decode_context_parallel_size", s.dcp}, {"concurrency", s.concurrency},
                     {"dtype", s.dtype}, {"cpu_offload_gb", s.cpu_offload_gb}};
    j["nodes"] = c.nodes;
    j["device_name"] = p.device_name;
    j["compute_capability"] = p.compute_capability;
    j["hybrid"] = p.hybrid;
    j["block_size"] = p.block_size;
    j["block_size_raised"] = p.block_size_raised;
    j["page_bytes"] = p.page_bytes;
    j["num_gpu_blocks"] = p.num_gpu_blocks;
    j["per_request_blocks"] = p.per_request_blocks;
    j["mamba_blocks_per_request"] = p.mamba_blocks_per_request;
    j["max_concurrency"] = p.max_concurrency;
    j["kv_cache_tokens"] = p.kv_cache_tokens;
    j["kv_cache_tokens_v2025"] = p.kv_cache_tokens_v2025;
    j["available_kv_bytes"] = p.available_kv_bytes;
    j["max_model_len"] = p.max_model_len;
    j["max_model_len_fit"] = p.max_model_len_fit;
    j["need_bytes"] = p.need_bytes;
    j["n_head_kv_per_rank"] = p.n_head_kv_rank;
    j["attention_bytes_per_token"] = p.attn_bytes_per_token;
    j["mamba_conv_bytes"] = p.mamba_conv_bytes;
    j["mamba_ssm_bytes"] = p.mamba_ssm_bytes;
    j["mamba_state_bytes"] = p.mamba_state_bytes;
    j["mamba_padding_percent"] = p.mamba_padding_pct;
    j["group_size"] = p.group_size;
    j["padding_layers"] = p.padding_layers;
    j["block_bytes"] = p.block_bytes;
    j["groups"] = json::array();
    for (const auto & g : p.groups) {
        j["groups"].push_back({{"kind", g.kind}, {"n_layer", g.n_layer}, {"n_padding", g.n_padding},
                               {"block_size", g.block_size}, {"per_request_blocks", g.per_request_blocks}});
    }
    if (!p.speculative.method.empty()) {
        const vllm_spec_plan & sp = p.speculative;
        j["speculative"] = {{"method", sp.method}, {"model", s.speculative.model},
                            {"num_speculative_tokens", sp.num_speculative_tokens}, {"draft_layers", sp.draft_layers},
                            {"draft_kv_layers", sp.draft_kv_layers}, {"draft_kv_bytes_per_token", sp.draft_kv_bytes_per_token},
                            {"draft_kv_rule", "vllm"}, {"draft_weights_bytes", sp.draft_weights_bytes},
                            {"draft_weights_estimate", sp.weights_estimate},
                            {"mamba_conv_rows_added", sp.mamba_conv_rows_added},
                            {"mamba_blocks_added", sp.mamba_blocks_added},
                            {"max_cudagraph_capture_size", sp.max_cudagraph_capture_size}};
    }
    j["per_rank"] = json::array();
    for (const auto & k : p.ranks) {
        j["per_rank"].push_back({{"pp_rank", k.pp_rank}, {"first_layer", k.first_layer}, {"n_layer", k.n_layer},
                                 {"total_bytes", k.total_bytes}, {"requested_bytes", k.requested_bytes},
                                 {"weights_bytes", k.weights_bytes}, {"cpu_offload_bytes", k.cpu_offload_bytes},
                                 {"activation_bytes", k.activation_bytes},
                                 {"non_torch_bytes", k.non_torch_bytes}, {"cudagraph_bytes", k.cudagraph_bytes},
                                 {"available_kv_bytes", k.available_kv_bytes}, {"n_tensors", k.n_tensors},
                                 {"num_blocks", k.num_blocks}});
        if (!p.speculative.method.empty()) { // additive: only with --speculative-config
            j["per_rank"].back()["draft_weights_bytes"] = k.draft_weights_bytes;
            j["per_rank"].back()["n_draft_layers"] = k.n_draft_layers;
        }
    }
    // every term besides the weights and the pool, with its basis and source (docs/rules/vllm-overhead.md)
    j["constants"] = json::array();
    for (const vllm_term & t : p.terms) {
        j["constants"].push_back({{"name", t.name}, {"bytes", t.bytes}, {"basis", t.basis}, {"source", t.source},
                                  {"how", t.how}});
    }
    if (!p.ranks.empty()) j["vision_weights_bytes"] = p.ranks[0].vision_weights_bytes;
    j["cudagraph_sizes"] = vllm_cudagraph_sizes(s);
    j["placements"] = json::array();
    for (const auto & pl : c.placements) {
        j["placements"].push_back({{"tensor_parallel_size", pl.tp}, {"pipeline_parallel_size", pl.pp},
                                   {"data_parallel_size", pl.dp}, {"why", pl.why},
                                   {"num_gpu_blocks", pl.plan.num_gpu_blocks}, {"max_concurrency", pl.plan.max_concurrency},
                                   {"total_concurrency", pl.total_concurrency},
                                   {"max_model_len_fit", pl.plan.max_model_len_fit}, {"fits", pl.fits}});
    }
    return j;
}

// One device per GPU of the replicas, in rank order (rank = dp_rank x pp x tp + pp_rank x tp + tp_rank): each holds
// its PP stage's share, as vLLM's worker of that stage budgets it (determine_available_memory).
std::vector<device_plan> devices_of(const model_desc & m, const vllm_choice & c) {
    const vllm_plan & p = c.plan;
    const vllm_settings & s = p.settings;
    std::vector<device_plan> out;
    const uint32_t world = s.tp * s.pp * s.dp;
    for (uint32_t i = 0; i < world; ++i) {
        const vllm_rank & k = p.ranks[(i / s.tp) % s.pp];
        device_plan d;
        d.name = c.nodes > 1 ? fmt::format("node{} {}", i / c.per_node, p.device_name) : p.device_name;
        d.capacity_bytes = k.total_bytes;
        d.reserved_bytes = s.kv_cache_memory_bytes ? 0 : k.total_bytes - std::min(k.total_bytes, k.requested_bytes);
        d.n_layers = k.n_layer;
        const bool graphs = vllm_graph_estimate(s.rules) && !s.enforce_eager;
        d.buffers = {{"weights", k.weights_bytes, !m.weights.exact, "\"Model loading took\""},
                     {"activation", k.activation_bytes, !s.activation_bytes, "torch peak of the profile run"},
                     {"non_torch", k.non_torch_bytes, !s.non_torch_bytes, "NCCL, cuBLAS workspaces, CUDA context"},
                     {"cuda_graph", graphs ? k.cudagraph_bytes : 0, graphs && !s.cudagraph_bytes, "CUDA graphs"},
                     {"kv_pool", uint64_t(std::max<int64_t>(0, k.available_kv_bytes)), false,
                      "\"Available KV cache memory\""}};
        out.push_back(std::move(d));
    }
    return out;
}

// The method family of a vLLM --quantization name or a checkpoint's method (compatible names are one family).
std::string quant_family(const std::string & q) {
    if (q == "gptq_marlin") return "gptq";
    if (q == "awq_marlin") return "awq";
    if (q == "modelopt_fp4") return "nvfp4";
    if (q == "modelopt") return "fp8";
    return q;
}

// --quantization against the checkpoint (ModelConfig._verify_quantization, vllm/config/model.py): the same family is
// accepted, another raises vLLM's ValueError; on an unquantized checkpoint fp8 is vLLM's online dynamic fp8, and the
// other methods are taken as "the checkpoint is in this format" (sized so, with a warning).
model_desc with_quantization(const model_desc & m_in, const std::string & q, std::vector<std::string> & warn) {
    model_desc m = m_in;
    if (q.empty() || q == "compressed-tensors") return m;
    const std::string have = m.quant.method == "compressed-tensors" ? "compressed-tensors" : m.quant.method;
    if (!have.empty()) {
        if (quant_family(q) != quant_family(have)) {
            throw error(fmt::format("Quantization method specified in the model config ({}) does not match the "
                                    "quantization method specified in the `quantization` argument ({}).", have, q));
        }
        return m;
    }
    if (m.weights.exact) return m; // a checkpoint on disk: its tensors are what vLLM loads
    m.quant = weight_quant_from_name(quant_family(q));
    warn.push_back(q == "fp8" ? "--quantization fp8 on an unquantized checkpoint: vLLM quantizes the weights to fp8 when "
                                "it loads them (dynamic, one scale per tensor); sized so"
                              : fmt::format("--quantization {}: the config states no quantization_config; sized as a {} "
                                            "checkpoint (vLLM reads the format from the checkpoint)", q, m.quant.label));
    m.weights.format = m.quant.label;
    return m;
}

// --dtype (vllm/config/model.py): the torch dtype the model is loaded in. "auto" keeps the config's dtype except float32,
// which _resolve_auto_dtype downcasts to the platform's first supported dtype (bfloat16 on CUDA); float16 on a model
// type in _FLOAT16_NOT_SUPPORTED_MODELS is vLLM's ValueError. An unquantized checkpoint's weights are created in that
// dtype and the checkpoint's tensors copied in (set_default_torch_dtype in the model loader): n_params x its size. A
// quantized checkpoint keeps its packed weights; the dtype is then its unquantized layers' and activations'.
model_desc with_dtype(const model_desc & m_in, const std::string & flag, bool given_size, std::vector<std::string> & warn) {
    model_desc m = m_in;
    const std::string to = flag == "half" || flag == "float16" ? "float16"
                         : flag == "float" || flag == "float32" ? "float32"
                         : flag == "bfloat16" ? "bfloat16"
                         : m.dtype == "float32" ? "bfloat16" : "";
    if (to.empty() || to == m.dtype) return m; // auto on a float16 / bfloat16 (or unstated) config: unchanged
    static const char * const no_fp16[] = {"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"};
    if (to == "float16" && std::find(std::begin(no_fp16), std::end(no_fp16), m.architecture) != std::end(no_fp16)) {
        throw error(fmt::format("--dtype {}: The model type '{}' does not support float16. Reason: Numerical instability. "
                                "Please use bfloat16 or float32 instead.", flag, m.architecture));
    }
    const std::string from = m.dtype.empty() ? "bfloat16 (assumed)" : m.dtype;
    m.dtype = to;
    if (!m.quant.method.empty() || given_size) return m; // packed weights, or --weights-size: the bytes stay
    const uint64_t s = detail::torch_dtype_bytes(to, 2, "dtype");
    auto resize = [&](weight_group & g) {
        g.bytes = g.n_params * s;
        g.expert_bytes = g.expert_params * s;
    };
    resize(m.weights.token_embd);
    resize(m.weights.output);
    resize(m.weights.other);
    resize(m.weights.vision);
    resize(m.weights.mtp);
    for (auto & l : m.weights.layers) resize(l);
    m.weights.format = to == "float16" ? "f16" : to == "float32" ? "f32" : "bf16";
    const std::string gib = fmt::format("{:.2f} GiB", double(m.weights.total_bytes()) / double(1ull << 30));
    warn.push_back(flag.empty() || flag == "auto"
                       ? fmt::format("--dtype auto: vLLM loads a {} checkpoint as {} (_resolve_auto_dtype): its weights "
                                     "take {}", from, to, gib)
                       : fmt::format("--dtype {}: weights loaded as {} (the checkpoint's {}): {}", flag, to, from, gib));
    return m;
}

// The draft checkpoint of --speculative-config "model" (eagle, eagle3, draft_model, or a method left to detect), read
// through kvfit's model loading (a local config.json or folder, a catalog name, hf:org/name; offline: local only), in
// the target's dtype (vllm/config/speculative.py @f19b16d9: ModelConfig(dtype=target_model_config.dtype)).
std::shared_ptr<const model_desc> load_draft(const vllm_speculative & sp, const model_desc & m, std::vector<std::string> & warn) {
    if (sp.model.empty() || sp.method == "mtp" || sp.method == "ngram" || sp.method == "ngram_gpu" || sp.method == "suffix") {
        return nullptr;
    }
    warnings w;
    model_desc d;
    try {
        d = load_model(sp.model, w);
    } catch (const error & e) {
        throw error(fmt::format("--speculative-config model '{}': cannot read the draft model's config: {}", sp.model, e.what()));
    }
    d.dtype = m.dtype;
    if (!d.weights.exact) {
        std::vector<std::string> ignored;
        detail::serving_default_weights(d, ignored);
    }
    for (const auto & x : w) warn.push_back("--speculative-config draft model: " + x);
    return std::make_shared<const model_desc>(std::move(d));
}

// An EAGLE3 head's draft_vocab_size from a local config (the path itself when it is a .json, else its config.json).
uint32_t local_draft_vocab(const std::string & path) {
    for (const std::string & file : {path, path + "/config.json"}) {
        std::ifstream in(file);
        if (!in || std::filesystem::is_directory(file)) continue;
        const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
        if (j.is_object() && j.contains("draft_vocab_size") && j["draft_vocab_size"].is_number_unsigned()) {
            return uint32_t(std::min<uint64_t>(j["draft_vocab_size"].get<uint64_t>(), 1u << 24));
        }
        return 0;
    }
    return 0;
}

runtime_plan plan(const model_desc & m_in, const flag_values & f_given, const machine & mc) {
    // --weights fp8 on an unquantized checkpoint: vLLM's --quantization fp8 loads what was planned (launch.h)
    flag_values f = f_given;
    if (f.text("quantization").empty() && !detail::launch_quantization(m_in).empty()) {
        f.set("quantization", detail::launch_quantization(m_in));
    }
    std::vector<std::string> quant_warn;
    const model_desc m = with_dtype(with_quantization(m_in, f.text("quantization"), quant_warn), f.text("dtype"),
                                    m_in.weights.format.starts_with("given"), quant_warn);
    vllm_speculative sp;
    if (f.has("speculative_config")) {
        sp = parse_speculative_config(f.text("speculative_config"));
        sp.draft = load_draft(sp, m, quant_warn);
        if (sp.draft) sp.draft_vocab_size = local_draft_vocab(sp.model);
    }
    vllm_choice c = choose(m, f, mc, sp);
    c.plan.warnings.insert(c.plan.warnings.begin(), quant_warn.begin(), quant_warn.end());
    c.plan.warnings.insert(c.plan.warnings.end(), c.gpu_warnings.begin(), c.gpu_warnings.end());
    const vllm_plan & p = c.plan;
    runtime_plan r;
    r.runtime = "vllm";
    r.rules = vllm_rules_name(p.settings.rules);
    r.context_tokens = p.max_model_len;
    r.sequences = p.settings.max_num_seqs;
    r.devices = devices_of(m, c);
    r.starts = p.fits();
    r.fits = meets_request(c);
    r.refusals = p.errors;
    r.warnings = p.warnings;
    if (r.starts && !r.fits) { // starts, but the concurrency asked is not met: say by how much
        r.warnings.push_back(fmt::format("does not meet the request: {:.2f} full-length requests of {} tokens fit at once "
                                         "over {} replica{}, --concurrency asks {}", p.max_concurrency * p.settings.dp,
                                         p.max_model_len, p.settings.dp, p.settings.dp == 1 ? "" : "s",
                                         p.settings.concurrency));
    }
    r.notes = p.notes;
    // flags vLLM takes that change nothing kvfit plans on the GPU: accepted, and named
    if (f.has("swap_space")) {
        r.warnings.push_back(fmt::format("--swap-space {}: not modelled (CPU memory for swapped KV blocks; kvfit plans the "
                                         "GPUs)", f.text("swap_space")));
    }
    if (f.boolean("enable_chunked_prefill")) {
        r.warnings.push_back("--enable-chunked-prefill: not modelled (the activation estimate follows "
                             "--max-num-batched-tokens, the tokens per step)");
    }
    r.assumptions = p.assumptions;
    r.launch = vllm_commands(detail::launch_model_ref(m), c);
    r.detail = detail_json(c);
    r.nodes = c.nodes;
    r.sections = detail::vllm_sections(m, p, c.placements);
    return r;
}

void check_flags(const flag_values & f) {
    (void)parse_vllm_flags(f);
    (void)count("--nodes", f.text("nodes"), 1, 1024);
}

void default_weights(model_desc & m, std::vector<std::string> & warn) { detail::serving_default_weights(m, warn); }

knob_range length_range(const model_desc & m, const flag_values &) {
    const uint64_t derived = detail::vllm_derived_max_model_len(m);
    return {1, derived ? derived : k_context_search_top, 1};
}

// --max-num-seqs from the sequences --concurrency asks of one replica up to the value given, else 1024, the larger
// of EngineArgs.get_batch_defaults' defaults (256 below 70 GiB, 1024 above: resolve in pool.cpp); a plan at the
// default that does not fit has no larger value that does, so the top of the grid is never the answer above it.
// Memory is monotone in it: the sampler's logits (max_num_seqs x vocab) and the CUDA-graph capture size grow with
// it, the pool's blocks do not, and vLLM's Mamba check (compilation.py resolve_cudagraph_mode_and_sizes) and
// --concurrency fail above a bound only.
knob_range vllm_seqs_range(const model_desc &, const flag_values & f) {
    const vllm_settings s = parse_vllm_flags(f);
    const uint64_t lo = std::max<uint64_t>(1, (uint64_t(s.concurrency) + s.dp - 1) / s.dp);
    uint64_t hi = s.max_num_seqs ? s.max_num_seqs : 1024;
    // vLLM refuses max_num_seqs above max_num_batched_tokens (check_input in pool.cpp): a given MNBT bounds the grid
    if (s.max_num_batched_tokens) hi = std::min<uint64_t>(hi, s.max_num_batched_tokens);
    return {lo, hi, hi > lo ? 1u : 0u};
}

// kvfit's ceiling for --gpu-memory-utilization, in hundredths. vLLM refuses a utilization above the memory free at
// startup ("Free memory on device ... on startup is less than desired GPU memory utilization", vllm/v1/worker/utils.py
// request_memory), which the CUDA context and any other process take from the total; kvfit does not model that
// free figure, so it proposes no more than 0.95 (docs/json.md, alternatives).
constexpr uint64_t vllm_utilization_ceiling = 95;

// --gpu-memory-utilization in hundredths, above the one planned (0.92 under the v2026 rules, 0.9 before) up to
// the ceiling; none under --kv-cache-memory-bytes (it replaces the budget). More of it is more KV budget: the
// smallest value that fits is searched (knob::smallest).
knob_range vllm_utilization_range(const model_desc &, const flag_values & f) {
    const vllm_settings s = parse_vllm_flags(f);
    if (s.kv_cache_memory_bytes) return {};
    const double u = s.gpu_memory_utilization > 0 ? s.gpu_memory_utilization : s.rules == vllm_rules::v2026 ? 0.92 : 0.9;
    const uint64_t lo = uint64_t(std::floor(u * 100 + 1e-9)) + 1;
    return {lo, vllm_utilization_ceiling, lo <= vllm_utilization_ceiling ? 1u : 0u};
}

std::string vllm_utilization_text(uint64_t hundredths) { return fmt::format("{:.2f}", double(hundredths) / 100); }

} // namespace

runtime_info vllm_runtime() {
    runtime_info r;
    r.name = "vllm";
    r.display = "vLLM";
    r.summary = "vLLM's paged KV-cache pool: budget per GPU, blocks, concurrency, TP/PP/DP placements";
    r.flags = vllm_flags;
    r.check_flags = check_flags;
    r.default_weights = default_weights;
    r.plan = plan;
    // the planner's search finds the largest --max-model-len per --kv-cache-dtype (max_context; vLLM's own bisection
    // for auto-fit and its error message stays in detail.max_model_len_fit, which ignores --concurrency and the
    // Mamba check), and turns the knobs below when the plan does not meet the request
    r.context = {"context", "max_model_len", "--max-model-len", false, length_range, {}};
    r.knobs = {
        r.context,
        {"sequences", "max_num_seqs", "--max-num-seqs", false, vllm_seqs_range, {}},
        {"gpu_memory_utilization", "gpu_memory_utilization", "--gpu-memory-utilization", true, vllm_utilization_range,
         {}, vllm_utilization_text},
    };
    // the KV dtypes of distinct size (vllm_kv_cache_dtypes(): fp8_e4m3 and fp8_e5m2 take fp8's bytes); an fp8 cache
    // vLLM refuses for a model or a GPU is a refused row
    r.cache_types = {"auto", "fp8"};
    r.cache_type_k = "kv_cache_dtype";
    return r;
}

} // namespace kvfit
