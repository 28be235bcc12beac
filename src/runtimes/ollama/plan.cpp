// Ollama behind the runtime interface (include/kvfit/ollama.h, runtime.h): its flags, the runtime_plan of the
// llama-server launch it makes (llama.cpp's devices and caches, Ollama's choices in detail) and its launch lines.
#include "kvfit/ollama.h"

#include "kvfit/metal.h"
#include "kvfit/sources.h"
#include "kvfit/units.h"
#include "runtimes/common/launch.h"
#include "runtimes/common/numbers.h"
#include "runtimes/common/sections.h"

#include <fmt/format.h>

namespace kvfit {

using detail::count;
using detail::number;

// Ollama is configured by environment variables (envconfig/config.go) and Modelfile / API options (api/types.go
// Options: num_ctx): the flags are kvfit's, each with the engine's own name (flag_spec::engine_name).
const std::vector<flag_spec> & ollama_flags() {
    using t = flag_type;
    using s = flag_setting;
    static const std::vector<flag_spec> v = {
        {"--num-ctx", "", "PARAMETER num_ctx (default by VRAM tier)", t::count, "", s::context, {}, "PARAMETER num_ctx"},
        {"--num-parallel", "", "OLLAMA_NUM_PARALLEL", t::count, "", s::concurrency, {}, "OLLAMA_NUM_PARALLEL"},
        {"--ollama-kv-cache-type", "", "OLLAMA_KV_CACHE_TYPE f16 q8_0 q4_0", t::text, "TYPE", s::cache_type, {},
         "OLLAMA_KV_CACHE_TYPE"},
        {"--ollama-flash-attention", "", "OLLAMA_FLASH_ATTENTION 1 or 0", t::text, "1|0", s::flash_attn, {},
         "OLLAMA_FLASH_ATTENTION"},
        // the server-wide default of num_ctx: the context setting is --num-ctx (the runtime's context knob)
        {"--ollama-context-length", "", "OLLAMA_CONTEXT_LENGTH", t::count, "", s::none, {}, "OLLAMA_CONTEXT_LENGTH"},
        {"--ollama-gpu-overhead", "", "OLLAMA_GPU_OVERHEAD: bytes, as Ollama reads it (or with a unit: 512MiB)", t::size, "",
         s::none, {}, "OLLAMA_GPU_OVERHEAD"}, // kept beside the runner's --fit-target, the margin llama.cpp reads
        {"--mmproj-size", "", "projector size (vision models), with a unit: 900MiB", t::size},
        {"--fit-target", "", "LLAMA_ARG_FIT_TARGET in extraEnvs: MiB, as llama.cpp reads it", t::size, "MiB[,MiB...]",
         s::memory_margin, {}, "LLAMA_ARG_FIT_TARGET"},
        {"--embedding", "", "an embedding model (one slot)", t::boolean},
        {"--iogpu-wired-limit-mb", "", "sudo sysctl iogpu.wired_limit_mb=N on a Mac: the Metal working set in MiB", t::count},
    };
    return v;
}

ollama_settings parse_ollama_flags(const flag_values & f) {
    ollama_settings s;
    const auto text = [&](const char * name) { return f.text(name); };
    if (!text("num_ctx").empty()) s.num_ctx = number<uint64_t>("--num-ctx", text("num_ctx"), 1, 1ull << 32);
    if (!text("ollama_context_length").empty()) {
        s.context_length_env = number<uint64_t>("--ollama-context-length", text("ollama_context_length"), 1, 1ull << 32);
    }
    s.num_parallel = count("--num-parallel", text("num_parallel"), 0, 256);
    s.kv_cache_type = text("ollama_kv_cache_type");
    s.flash_attention = text("ollama_flash_attention");
    // OLLAMA_GPU_OVERHEAD is a byte count (envconfig/config.go: Uint64), so a plain number is bytes as there
    if (!text("ollama_gpu_overhead").empty()) s.gpu_overhead_bytes = parse_size(text("ollama_gpu_overhead"));
    if (!text("mmproj_size").empty()) s.mmproj_bytes = parse_size_flag("--mmproj-size", text("mmproj_size"));
    if (!text("fit_target").empty()) { // llama.cpp's MiB per device (one margin on every GPU here: the largest)
        for (const uint64_t b : parse_fit_target_flag("--fit-target", text("fit_target"))) s.fit_target_bytes = std::max(s.fit_target_bytes, b);
    }
    s.embedding = f.boolean("embedding");
    if (!text("iogpu_wired_limit_mb").empty()) {
        s.iogpu_wired_limit_mb = number<uint64_t>("--iogpu-wired-limit-mb", text("iogpu_wired_limit_mb"), 0, 1ull << 32);
    }
    return s;
}

namespace {

using json = nlohmann::ordered_json;

// What a Modelfile's FROM takes (ollama docs/modelfile.md, docs/import.md): a GGUF file path, a Safetensors model
// folder, hf.co/<org>/<name>[:QUANT] for a GGUF repository on the Hub, or an Ollama library name. A catalog model or
// a config.json has no GGUF: the line names the GGUF the user converts or downloads, and a comment says so.
std::string modelfile_from(const model_desc & m) {
    const bool gguf = m.weights.format == "gguf";
    if (m.source.starts_with("hf:")) {
        std::string id = m.source.substr(3);
        std::string selector;
        if (const size_t colon = id.find(':'); colon != std::string::npos) selector = id.substr(colon + 1), id.resize(colon);
        if (const size_t at = id.find('@'); at != std::string::npos) id.resize(at);
        if (gguf) {
            const bool quant = !selector.empty() && !selector.ends_with(".gguf") && selector.find('/') == std::string::npos;
            return fmt::format("FROM hf.co/{}{}\n", id, quant ? ":" + selector : "");
        }
        return fmt::format("# a Safetensors folder: huggingface-cli download {0} --local-dir ./{1}\nFROM ./{1}\n", id,
                           id.substr(id.find('/') + 1));
    }
    if (gguf) return fmt::format("FROM {}\n", m.source);
    if (m.source != "catalog" && m.weights.exact) return fmt::format("FROM {}\n", detail::launch_model_ref(m)); // a folder
    const std::string hub = detail::launch_model_ref(m);
    return fmt::format("# a GGUF of {0} (convert it, or download one): Ollama's FROM takes a GGUF file, a Safetensors "
                       "folder or hf.co/<org>/<name>:QUANT\nFROM ./{1}.gguf\n", hub, m.name);
}

std::string ollama_command(const model_desc & m, const ollama_plan & p) {
    std::string env = fmt::format("OLLAMA_NUM_PARALLEL={} OLLAMA_KV_CACHE_TYPE={}", p.num_parallel,
                                  ggml_traits(p.cache_type).name);
    if (p.flash_attn != flash_attn_mode::automatic) {
        env += fmt::format(" OLLAMA_FLASH_ATTENTION={}", p.flash_attn == flash_attn_mode::on ? 1 : 0);
    }
    if (p.settings.gpu_overhead_bytes) env += fmt::format(" OLLAMA_GPU_OVERHEAD={}", p.settings.gpu_overhead_bytes);
    std::string out = fmt::format("# server environment\n{}{} ollama serve\n", iogpu_sysctl_prefix(p.settings.iogpu_wired_limit_mb), env);
    out += fmt::format("# Modelfile\n{}PARAMETER num_ctx {}\n", modelfile_from(m), p.num_ctx);
    out += fmt::format("# what Ollama starts underneath\nllama-server -c {} -np {} --flash-attn {}", p.llama.n_ctx,
                       p.num_parallel, flash_attn_name(p.flash_attn));
    if (p.cache_type != ggml_type::f16) {
        out += fmt::format(" --cache-type-k {0} --cache-type-v {0}", ggml_traits(p.cache_type).name);
    }
    if (!p.mmproj_offload && p.settings.mmproj_bytes) out += " --no-mmproj-offload";
    if (p.fit_target_bytes != (1024ull << 20)) out += fmt::format("  # LLAMA_ARG_FIT_TARGET={}", p.fit_target_bytes >> 20);
    return out + "\n";
}

// The report's sections of an Ollama plan (runtime_plan::sections): Ollama's own choices (num_ctx and where it came
// from, the slots, the cache type, flash attention, --fit's target), then the llama-server launch underneath as
// kvfit's llama.cpp rules plan it, from `devices` (the runtime_plan's, already built from the llama.cpp plan).
std::vector<plan_section> ollama_sections(const model_desc & m, const ollama_plan & p, const std::vector<device_plan> & devices) {
    constexpr const char * server_src = "ollama llm/server.go (the llama-server launch)";
    plan_section choices{"Ollama's choices", {}};
    detail::add_row(choices, fmt::format("num_ctx {} ({}) x parallel {}{}", with_commas(p.num_ctx), p.num_ctx_from,
                                         p.num_parallel, p.parallel_forced ? " (forced to 1 for this family by Ollama)" : ""),
                    {detail::count_figure("num_ctx", double(p.num_ctx), "tokens", p.num_ctx_from),
                     detail::count_figure("num_parallel", p.num_parallel, "sequences",
                                          p.parallel_forced ? "ollama server/sched.go (forced to 1)" : "OLLAMA_NUM_PARALLEL")});
    detail::add_row(choices, fmt::format("cache {}, flash attention {}, --fit target {} per GPU{}", ggml_traits(p.cache_type).name,
                                         flash_attn_name(p.flash_attn), human_bytes(p.fit_target_bytes),
                                         p.mmproj_offload ? " (projector + 1 GiB headroom)" : ""),
                    {detail::word_figure("cache_type", std::string(ggml_traits(p.cache_type).name), "OLLAMA_KV_CACHE_TYPE"),
                     detail::word_figure("flash_attention", flash_attn_name(p.flash_attn), server_src),
                     detail::size_figure("fit_target_bytes", p.fit_target_bytes, server_src)});
    plan_section under{fmt::format("llama.cpp underneath (kvfit's llama.cpp rules): -c {} -np {}, {} cells per sequence",
                                   with_commas(p.plan.ctx.n_ctx), p.plan.ctx.n_seq, with_commas(p.plan.ctx.n_ctx_seq)), {}};
    uint64_t weights = 0, kv = 0, state = 0, compute = 0, output = 0;
    for (const auto & dev : devices) {
        weights += dev.bytes_of("weights"), kv += dev.bytes_of("kv"), state += dev.bytes_of("state");
        compute += dev.bytes_of("compute"), output += dev.bytes_of("output");
    }
    constexpr const char * llama_src = "kvfit's llama.cpp rules (src/runtimes/llamacpp)";
    detail::add_row(under, fmt::format("weights {}, KV {}, recurrent state {}, compute {}, output {} (host)", human_bytes(weights),
                                       human_bytes(kv), human_bytes(state), human_bytes(compute), human_bytes(output)),
                    {detail::size_figure("weights", weights, llama_src), detail::size_figure("kv", kv, llama_src),
                     detail::size_figure("state", state, llama_src), detail::size_figure("compute", compute, llama_src),
                     detail::size_figure("output", output, llama_src)});
    detail::add_row(under, fmt::format("offloaded {}/{} layers", p.plan.n_gpu_layers, m.n_layer + m.n_layer_mtp + 1),
                    {detail::count_figure("n_gpu_layers", p.plan.n_gpu_layers, "layers", "llama-server --fit")});
    for (const auto & dev : devices) {
        if (dev.is_host) continue;
        detail::add_row(under, fmt::format("{}: {} used of {}, {} kept free, {} left", dev.name, human_bytes(dev.used_bytes()),
                                           human_bytes(dev.capacity_bytes), human_bytes(dev.reserved_bytes),
                                           dev.free_bytes() < 0 ? "-" + human_bytes(uint64_t(-dev.free_bytes()))
                                                                : human_bytes(uint64_t(dev.free_bytes()))),
                        {detail::size_figure("used", dev.used_bytes(), llama_src),
                         detail::size_figure("capacity", dev.capacity_bytes, "the GPU's memory as given"),
                         detail::size_figure("reserved", dev.reserved_bytes, server_src)});
    }
    return {choices, under};
}

runtime_plan plan(const model_desc & m, const flag_values & f, const machine & mc) {
    const ollama_plan p = plan_ollama(m, parse_ollama_flags(f), mc.gpus);
    runtime_plan r = llamacpp_runtime_plan(m, p.plan); // devices, caches and per-token bytes of llama-server's context
    r.runtime = "ollama";
    r.rules = "Ollama fb30760 (llama-server)";
    r.context_tokens = p.num_ctx;
    r.sequences = p.num_parallel;
    r.starts = true;
    r.fits = p.fits();
    r.warnings = p.warnings;
    r.notes = p.notes;
    r.launch = ollama_command(m, p);
    json d;
    d["num_ctx"] = p.num_ctx;
    d["num_ctx_from"] = p.num_ctx_from;
    d["num_parallel"] = p.num_parallel;
    d["parallel_forced"] = p.parallel_forced;
    d["cache_type"] = ggml_traits(p.cache_type).name;
    d["flash_attention"] = flash_attn_name(p.flash_attn);
    d["fit_target_bytes"] = p.fit_target_bytes;
    d["mmproj_offload"] = p.mmproj_offload;
    d["n_gpu_layers"] = p.plan.n_gpu_layers;
    d["all_on_gpu"] = p.all_on_gpu;
    d["cpu_only"] = p.cpu_only;
    d["llama_server"] = std::move(r.detail);
    r.detail = std::move(d);
    r.sections = ollama_sections(m, p, r.devices);
    return r;
}

void check_flags(const flag_values & f) { (void)parse_ollama_flags(f); }

void default_weights(model_desc & m, std::vector<std::string> & warn) {
    apply_weight_format(m, "q4_k_m", true);
    warn.push_back("weights sized as q4_k_m (Ollama's default tag); --weights or --weights-size for a quantized checkpoint");
}

knob_range num_ctx_range(const model_desc & m, const flag_values &) {
    return {1, m.n_ctx_train ? m.n_ctx_train : k_context_search_top, 1};
}

// OLLAMA_NUM_PARALLEL below the value given (default 1: nothing to lower). llama-server runs -c num_ctx x parallel
// -np parallel (rules.cpp), so the memory grows with it.
knob_range num_parallel_range(const model_desc &, const flag_values & f) {
    const uint64_t given = parse_ollama_flags(f).num_parallel;
    return {1, given, given > 1 ? 1u : 0u};
}

} // namespace

runtime_info ollama_runtime() {
    runtime_info r;
    r.name = "ollama";
    r.display = "Ollama";
    r.summary = "Ollama: its num_ctx, slots and cache type, llama-server's --fit, planned with the llama.cpp rules";
    r.flags = ollama_flags;
    r.check_flags = check_flags;
    r.default_weights = default_weights;
    r.adapt_model = llamacpp_adapt_model; // Ollama runs llama.cpp's architectures
    r.plan = plan;
    // Ollama (llama-server's --fit) moves layers itself, so the planner turns no placement knob: "fits" is every
    // layer on the GPU, and the knobs are the settings a person changes to get there
    r.context = {"context", "num_ctx", "--num-ctx", false, num_ctx_range, {}};
    r.knobs = {r.context, {"sequences", "num_parallel", "--num-parallel", false, num_parallel_range, {}}};
    // OLLAMA_KV_CACHE_TYPE (envconfig, read by llm/server.go; rules.cpp): a quantized type needs flash attention;
    // with it off Ollama keeps f16 and the row is f16's (the plan's warning says so)
    r.cache_types = {"f16", "q8_0", "q4_0"};
    r.cache_type_k = "ollama_kv_cache_type";
    return r;
}

} // namespace kvfit
