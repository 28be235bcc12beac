// kvfit: does this model, at this context length, fit in my GPU — and if not, what do I change?
// Parses flags (spelled as llama.cpp spells them), calls the library, prints. No memory rule lives here.
// Exit status: 0 fits (or no --gpu given), 3 does not fit, 2 bad input.
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/gpus.h"
#include "kvfit/llamacpp_flags.h"
#include "kvfit/report.h"
#include "kvfit/sources.h"
#include "serving_cli.h"
#include "kvfit/speed.h"
#include "cli_exec.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <regex>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace {

constexpr int exit_fits = 0;
constexpr int exit_bad_input = 2;
constexpr int exit_does_not_fit = 3;

// llama.cpp spells several flags with one dash and several letters (-ctk, -ngl); CLI11 only takes one letter
// after a single dash, so those are rewritten to their long names first.
std::vector<std::string> normalise_args(int argc, char ** argv) {
    static const std::pair<std::string_view, std::string_view> aliases[] = {
        {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"}, {"-ub", "--ubatch-size"},
        {"-np", "--parallel"},      {"-fa", "--flash-attn"},    {"-ngl", "--n-gpu-layers"},
        {"-ts", "--tensor-split"},  {"-ot", "--override-tensor"}, {"-kvu", "--kv-unified"},
        {"-nkvo", "--no-kv-offload"}, {"-cmoe", "--cpu-moe"},   {"-ncmoe", "--n-cpu-moe"},
        {"-tp", "--tensor-parallel-size"}, {"-pp", "--pipeline-parallel-size"}, {"-dp", "--data-parallel-size"},
        {"-dcp", "--decode-context-parallel-size"}, // vLLM (app/serving_cli.cpp)
    };
    std::vector<std::string> out;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        for (const auto & [from, to] : aliases) {
            if (a == from) a = to;
        }
        out.push_back(a);
    }
    std::reverse(out.begin(), out.end()); // CLI11 parses a reversed vector
    return out;
}

// -c takes one value as in llama.cpp, or several (repeated or comma-separated) for the table.
std::vector<uint64_t> parse_contexts(const std::vector<std::string> & values) {
    std::vector<uint64_t> out;
    for (const auto & v : values) {
        size_t start = 0;
        while (start <= v.size()) {
            const size_t end = std::min(v.find(',', start), v.size());
            out.push_back(kvfit::parse_flag_count("-c", v.substr(start, end - start), 1, 1ull << 32));
            start = end + 1;
        }
    }
    return out;
}

void print_catalog() {
    fmt::print("{:<36} {}\n", "name", "Hugging Face id");
    for (const auto & e : kvfit::catalog()) fmt::print("{:<36} {}\n", e.name, e.hf_id);
}

struct options {
    std::string model;
    std::vector<std::string> ctx;
    std::string ctk = "f16", ctv = "f16", fa = "auto";
    std::string ub, b, np, ngl, n_cpu_moe;
    bool kv_unified = false, swa_full = false, mla_kv = false, no_kv_offload = false, cpu_moe = false;
    std::string gpu, margin, weights, weights_size, ts;
    std::vector<std::string> ot;
    bool json = false, list = false, inspect = false, check = false, speed = false;
    std::string cpu_bandwidth;
};

int run(const options & o) {
    if (o.list) {
        print_catalog();
        return exit_fits;
    }
    const std::string spec = o.model.empty() ? std::string(kvfit::default_model_name()) : o.model;
    if (o.inspect) {
        kvfit::warnings warn;
        const std::string text = kvfit::gguf_inspect(kvfit::gguf_open_shards(spec), warn);
        for (const auto & w : warn) fmt::print(stderr, "warning: {}\n", w);
        fmt::print("{}", text);
        return exit_fits;
    }
    kvfit::llamacpp_settings s;
    s.type_k = kvfit::parse_cache_type_flag("-ctk", o.ctk);
    s.type_v = kvfit::parse_cache_type_flag("-ctv", o.ctv);
    if (o.fa == "on") s.flash_attn = kvfit::flash_attn_mode::on;
    else if (o.fa == "off") s.flash_attn = kvfit::flash_attn_mode::off;
    else if (o.fa == "auto") s.flash_attn = kvfit::flash_attn_mode::automatic;
    else throw kvfit::error(fmt::format("-fa '{}': expected on, off or auto", o.fa));
    if (!o.ub.empty()) s.n_ubatch = uint32_t(kvfit::parse_flag_count("-ub", o.ub, 1, 1u << 20));
    if (!o.b.empty()) s.n_batch = uint32_t(kvfit::parse_flag_count("-b", o.b, 1, 1u << 20));
    if (!o.np.empty()) s.n_seq = uint32_t(kvfit::parse_flag_count("-np", o.np, 1, 256));
    s.kv_unified = o.kv_unified;
    s.swa_full = o.swa_full;
    s.mla = o.mla_kv ? kvfit::mla_layout::k_and_v : kvfit::mla_layout::k_only;
    const std::vector<uint64_t> contexts = parse_contexts(o.ctx);

    kvfit::placement_settings p;
    if (!o.ngl.empty() && o.ngl != "all" && o.ngl != "auto") {
        p.n_gpu_layers = int32_t(kvfit::parse_flag_count("-ngl", o.ngl, 0, 100000));
    }
    p.no_kv_offload = o.no_kv_offload;
    p.cpu_moe = o.cpu_moe;
    if (!o.n_cpu_moe.empty()) p.n_cpu_moe = uint32_t(kvfit::parse_flag_count("--n-cpu-moe", o.n_cpu_moe, 0, 100000));
    if (!o.ts.empty()) p.tensor_split = kvfit::parse_tensor_split(o.ts);
    for (const auto & rule : o.ot) {
        const auto pattern = kvfit::parse_override_rule(rule);
        if (!pattern) throw kvfit::error(fmt::format("-ot '{}': only the CPU target is modelled", rule));
        p.override_tensor_cpu.push_back(*pattern);
    }

    const std::vector<kvfit::device_spec> gpus = o.gpu.empty() ? std::vector<kvfit::device_spec>{} : kvfit::cli::gpus_from_option(o.gpu);
    const uint64_t margin = o.margin.empty() ? kvfit::default_margin_bytes : kvfit::parse_size(o.margin);

    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::load_model(spec, warn);
    if (!o.weights_size.empty()) kvfit::apply_weight_size(m, kvfit::parse_size(o.weights_size));
    else if (!o.weights.empty()) kvfit::apply_weight_format(m, o.weights, true);
    else if (!m.weights.exact) {
        // A config.json gives no bytes: plan with the format most people run in llama.cpp, and say so.
        kvfit::apply_weight_format(m, kvfit::default_weight_format);
        warn.push_back(fmt::format("weights assumed {} (no --weights or --weights-size given; the file holds no "
                                   "weight bytes)", kvfit::default_weight_format));
    }

    if (o.check && gpus.empty()) throw kvfit::error("--check needs --gpu (the devices to check against)");
    const kvfit::report r = kvfit::make_report(m, warn, s, p, contexts, gpus, margin);
    fmt::print("{}", o.json ? kvfit::render_json(r) : o.check ? kvfit::render_check(r) : kvfit::render_text(r));
    if (o.speed) fmt::print("{}", kvfit::render_speed_section(r, gpus, margin, kvfit::cli::speed_settings_from(o.cpu_bandwidth)));
    return r.fit && !r.plan.fits() ? exit_does_not_fit : exit_fits;
}

} // namespace

int main(int argc, char ** argv) {
    if (argc > 1 && kvfit::cli::is_subcommand(argv[1])) return kvfit::cli::main_subcommand(argc, argv); // exec, explain
    CLI::App app{"kvfit: does this model, at this context length, fit in my GPU? KV cache, recurrent state and "
                 "weights under llama.cpp's allocation rules. Exit status: 0 fits, 3 does not fit, 2 bad input."};
    options o;
    app.add_option("model", o.model, "catalog name, config.json, model directory or .gguf (default: Qwen3.5-9B)");
    app.add_option("-c,--ctx-size", o.ctx, "context size(s) in tokens; several values (8192,32768) make the table")
        ->take_all()->allow_extra_args(false);
    app.add_option("--cache-type-k", o.ctk, "-ctk: K cache type: f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1");
    app.add_option("--cache-type-v", o.ctv, "-ctv: V cache type (quantized needs flash attention)");
    app.add_option("--flash-attn", o.fa, "-fa: on, off or auto (default auto = on where supported)");
    app.add_option("--ubatch-size", o.ub, "-ub: physical batch, tokens (default 512)");
    app.add_option("-b,--batch-size", o.b, "logical batch, tokens (default 2048)");
    app.add_option("--parallel", o.np, "-np: sequences / server slots (default 1)");
    app.add_flag("--kv-unified", o.kv_unified, "-kvu: one KV stream shared by all sequences");
    app.add_flag("--swa-full", o.swa_full, "full-size cache for sliding-window layers");
    app.add_flag("--mla-kv", o.mla_kv, "older llama.cpp MLA layout: K 576 plus V 512 per layer");
    app.add_option("--gpu", o.gpu, "GPUs by name or memory: \"RTX 4060\", 2xH100, 8GiB, 24GiB,24GiB; answers whether it fits");
    app.add_option("--margin", o.margin, "memory kept free per GPU (default 1GiB, as llama.cpp --fit)");
    app.add_option("--weights", o.weights, "weight format for config.json models: f16 bf16 q8_0 q6_k q5_k_m q4_k_m ...");
    app.add_option("--weights-size", o.weights_size, "total weight size, e.g. 6.6GB (overrides --weights)");
    app.add_option("--n-gpu-layers", o.ngl, "-ngl: layers on the GPU, counting the output layer (default all)");
    app.add_flag("--no-kv-offload", o.no_kv_offload, "-nkvo: keep KV cache and state in host memory");
    app.add_option("--tensor-split", o.ts, "-ts: split proportions across GPUs, e.g. 3,1");
    app.add_option("--override-tensor", o.ot, "-ot: PATTERN=CPU keeps matching tensors in host memory (repeatable)");
    app.add_flag("--cpu-moe", o.cpu_moe, "-cmoe: keep all MoE expert weights on the CPU");
    app.add_option("--n-cpu-moe", o.n_cpu_moe, "-ncmoe: keep the experts of the first N layers on the CPU");
    app.add_flag("--json", o.json, "print the plan as JSON");
    app.add_flag("--check", o.check, "check your own flags against --gpu: exit 3 naming the buffer that overflows");
    app.add_flag("--list", o.list, "list the built-in catalog");
    app.add_flag("--speed", o.speed, "decode/prefill tokens/s and the spill cliff (roofline; docs/speed.md)");
    app.add_option("--cpu-bandwidth", o.cpu_bandwidth, "host RAM bandwidth for spilled layers (default 60GB/s)");
    app.add_flag("--inspect", o.inspect, "show a GGUF file's metadata and layer layout");
    kvfit::cli::serving_options so;
    kvfit::cli::add_serving_flags(app, so);
    try {
        app.parse(normalise_args(argc, argv));
    } catch (const CLI::CallForHelp &) {
        fmt::print("{}", app.help());
        return exit_fits;
    } catch (const CLI::ParseError & e) {
        fmt::print(stderr, "kvfit: {}\n", e.what());
        return exit_bad_input;
    }
    try {
        const int served = kvfit::cli::run_serving_if_selected(
            app, so, {o.model, o.gpu, o.weights, o.weights_size, o.json, o.list || o.inspect});
        if (served >= 0) return served;
        return run(o);
    } catch (const kvfit::error & e) {
        fmt::print(stderr, "kvfit: {}\n", e.what());
        return exit_bad_input;
    } catch (const std::exception & e) {
        fmt::print(stderr, "kvfit: internal error: {}\n", e.what());
        return exit_bad_input;
    }
}
