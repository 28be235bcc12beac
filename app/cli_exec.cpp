// `kvfit exec [--gpu auto|SPEC] [--fix] -- COMMAND...`: plan the exact launch on the GPUs present; run it when it
// fits, refuse (exit 3) with what overflows, the speed a spill costs and the closest command that fits.
// `kvfit explain LOG [-m MODEL]`: a llama.cpp log beside kvfit's plan, line by line.
#include "cli_exec.h"

#include "kvfit/detect.h"
#include "kvfit/error.h"
#include "kvfit/printable.h"
#include "kvfit/gpus.h"
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/report.h"
#include "kvfit/sources.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace kvfit::cli {
namespace {

// --lora a.gguf,b.gguf: llama.cpp reads a comma-separated list (common/arg.cpp parse_csv_row)
std::vector<std::string> split_commas(const std::string & v) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= v.size()) {
        const size_t end = std::min(v.find(',', start), v.size());
        if (end > start) out.push_back(v.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

constexpr int exit_bad_input = 2;
constexpr int exit_does_not_fit = 3;
constexpr int exit_cannot_run = 127;

struct exec_options {
    std::string gpu = "auto", margin, cpu_bandwidth;
    bool fix = false;
    std::vector<std::string> command;
};

// Replace this process with the command; only returns on failure.
int run_command(const std::vector<std::string> & argv) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::vector<char *> args;
    for (const auto & a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    fmt::print(stderr, "kvfit: exec: cannot run '{}': {}\n", argv[0], std::strerror(errno));
    return exit_cannot_run;
}

struct candidate {
    std::string why;
    std::vector<std::string> argv;
    double decode_tokens_per_s = 0;
};

// -md FILE: the draft model, read like -m (spec.cpp plans its weights, KV and compute); loaded once per command.
void attach_draft(launch_command & c) {
    if (c.settings.spec.draft_path.empty()) return;
    warnings warn;
    model_desc draft = load_model(c.settings.spec.draft_path, warn);
    llamacpp_adapt_model(draft, warn);
    c.settings.spec.draft = std::make_shared<const model_desc>(std::move(draft));
    for (const auto & w : warn) fmt::print(stderr, "kvfit: warning: -md {}: {}\n", c.settings.spec.draft_path, kvfit::printable(w, false));
}

// Plan a variant of the command through the runtime interface, as the CLI's --check plans that command line: the
// registry's llama.cpp entry for whether it fits (runtime_info::fits) and its speed model for the decode rate
// (find_speed_model). Fills the candidate's speed and returns whether it fits.
bool try_variant(const model_desc & m, const launch_command & base, const std::vector<device_spec> & gpus, uint64_t margin,
                 const speed_settings & ss, candidate & out) {
    launch_command v = parse_launch_command(out.argv);
    // the projector and adapters read once from their files (run_exec) stay with every variant; the draft model is
    // named by its path (-md) and read by the runtime's flags as the --check of the command reads it
    v.settings.mmproj = base.settings.mmproj;
    v.settings.mmproj_offload = base.settings.mmproj_offload;
    v.settings.lora = base.settings.lora;
    const runtime_info & rt = find_runtime("llama.cpp");
    const flag_values f = llamacpp_flag_values(v.settings, v.placement, margin);
    const machine mc{gpus};
    if (const speed_model * sm = find_speed_model(rt); sm != nullptr && sm->decode_speed != nullptr) {
        // no -c: llama.cpp's n_ctx_train (n_ctx 0), named so the speed model's depth is not clamped to 0
        const uint64_t n_ctx = v.settings.n_ctx != 0 ? v.settings.n_ctx : m.n_ctx_train;
        out.decode_tokens_per_s = sm->decode_speed(m, f, mc, n_ctx, ss).value_or(0.0);
    }
    return rt.fits != nullptr ? rt.fits(m, f, mc) : rt.plan(m, f, mc).fits;
}

// Every spelling of the llama.cpp flag `name` (llamacpp_flags(): "-ngl", "--n-gpu-layers", "--gpu-layers"), the one
// people type first: with_flag replaces any of them and appends the first.
std::vector<std::string> spellings_of(std::string_view name) {
    std::vector<std::string> out;
    if (const flag_spec * f = find_flag_spelled(llamacpp_flags(), name)) {
        for (const auto w : f->spellings()) out.emplace_back(w);
    }
    return out;
}

// The commands that fit, from the planner's one search (plan_model's alternatives: the rows the report's "what would
// fit" lines print), closest first: another cache type at the requested context, the fewest --n-cpu-moe blocks, the
// largest context, then the largest -ngl (the spill llama.cpp itself would make), each alternative's flags applied
// to the command. exec searches nothing itself; each command is planned once more
// for its speed, and to confirm it fits as the command spells it.
std::vector<candidate> fitting_variants(const plan_result & r, const model_desc & m, const launch_command & c,
                                        const std::vector<device_spec> & gpus, uint64_t margin, const speed_settings & ss) {
    std::vector<const alternative *> order;
    for (const alternative & alt : r.plan.alternatives) order.push_back(&alt);
    // closest first: the change that keeps every layer's weights on the GPU before a shorter context, the spill last
    const auto rank = [](const alternative * a) {
        return a->knob == "cache_type" ? 0 : a->knob == "n_cpu_moe" ? 1 : a->knob == "context" ? 2 : a->knob == "n_gpu_layers" ? 4 : 3;
    };
    std::stable_sort(order.begin(), order.end(), [&](const alternative * a, const alternative * b) { return rank(a) < rank(b); });
    const uint32_t n_total = m.n_layer + m.n_layer_mtp + 1;
    std::vector<candidate> out;
    for (const alternative * alt : order) {
        std::istringstream words(alt->flags); // "-c 43520", "-ngl 18", "-ctk q8_0 -ctv q8_0": flag value pairs
        std::vector<std::string> argv = c.argv;
        std::string flag, value;
        while (words >> flag >> value) argv = with_flag(argv, spellings_of(flag), value);
        candidate cand{alt->flags, argv};
        if (alt->knob == "cache_type") {
            cand.why = fmt::format("{} KV cache, same context", alt->cache_type);
            // a quantized V cache needs flash attention (llama-context.cpp refuses it without)
            if (c.settings.flash_attn == flash_attn_mode::off) cand.argv = with_flag(cand.argv, spellings_of("--flash-attn"), "on");
        } else if (alt->knob == "context") {
            cand.why = fmt::format("context {} tokens", with_commas(alt->value));
        } else if (alt->knob == "n_gpu_layers") {
            cand.why = fmt::format("{} of {} layers on the GPU (a spill)", alt->value, n_total);
        } else if (alt->knob == "n_cpu_moe") {
            cand.why = fmt::format("experts of the first {} layers on the CPU", alt->value);
        }
        if (try_variant(m, c, gpus, margin, ss, cand)) out.push_back(std::move(cand));
    }
    return out;
}

std::vector<device_spec> exec_gpus(const std::string & spec) {
    return spec == "auto" ? gpus_from_option("auto") : parse_gpu_list(spec);
}

int run_exec(const exec_options & o) {
    launch_command c = parse_launch_command(o.command);
    attach_draft(c);
    if (o.gpu == "auto") c.placement.cpu = detect_host_cpu(); // this machine: its libggml-cpu variant (llamacpp_cpu.h)
    if (o.gpu == "auto") c.settings.ram_bytes = detect_host_ram_bytes(); // and its RAM, for the host verdict
    if (c.runtime == launch_runtime::vllm) {
        fmt::print(stderr, "kvfit: vllm serve: not checked here (vllm plans: see kvfit --runtime vllm); running it\n");
        return run_command(c.argv);
    }
    if (c.runtime != launch_runtime::llamacpp) {
        throw error(fmt::format("exec: '{}' is not a llama.cpp program (llama-server, llama-cli) or 'vllm serve'", c.argv[0]));
    }
    if (c.model_path.empty()) {
        throw error(c.hf_repo.empty() ? "exec: no model (-m PATH) in the command"
                                      : fmt::format("exec: -hf {}: remote models not supported yet (download it and pass -m PATH)", c.hf_repo));
    }
    std::vector<device_spec> gpus = exec_gpus(o.gpu);
    // -dev/--device and -sm none choose the GPUs llama.cpp uses (launch.h): only those are planned
    if (c.devices) {
        std::vector<device_spec> chosen;
        for (const uint32_t d : *c.devices) {
            if (d >= gpus.size()) throw error(fmt::format("exec: --device: GPU {} of {} (--gpu gives {})", d, gpus.size(), gpus.size()));
            chosen.push_back(gpus[d]);
        }
        gpus = std::move(chosen);
    }
    if (c.split_none && !gpus.empty()) {
        if (c.main_gpu >= gpus.size()) throw error(fmt::format("exec: -mg {}: there are {} GPUs", c.main_gpu, gpus.size()));
        gpus = {gpus[c.main_gpu]};
        fmt::print(stderr, "kvfit: -sm none: the whole model on GPU {} ({}), as llama.cpp places it\n", c.main_gpu, gpus[0].name);
    }
    // --margin, else the command's own --fit-target (llama.cpp's --fit keeps that much free), else llama.cpp's default
    const uint64_t margin = !o.margin.empty() ? parse_size_flag("--margin", o.margin) : c.fit_target_bytes ? c.fit_target_bytes : default_margin_bytes;
    const speed_settings ss = speed_settings_from(o.cpu_bandwidth);
    warnings warn;
    model_desc loaded_model = load_model(c.model_path, warn);
    llamacpp_adapt_model(loaded_model, warn); // the model as llama.cpp builds it (a window it does not read is full)
    const model_desc & m = loaded_model;
    // llama-server loads a GGUF file: a config.json or a catalog name has no weights to run (and none to plan)
    if (m.weights.total_bytes() == 0) {
        throw error(fmt::format("exec: -m {}: not a GGUF file with weights, which llama.cpp loads; plan it with `kvfit {} "
                                "--weights FORMAT` instead", c.model_path, c.model_path));
    }
    for (const auto & w : warn) fmt::print(stderr, "kvfit: warning: {}\n", kvfit::printable(w, false));
    // --mmproj, --lora, --lora-scaled: read from their headers and planned (llamacpp_extras.h)
    if (!c.mmproj_path.empty()) {
        c.settings.mmproj = read_mmproj(c.mmproj_path);
        c.settings.mmproj_offload = c.mmproj_offload;
        const mmproj_compute mc = llamacpp_mmproj_compute(*c.settings.mmproj, c.settings.flash_attn != flash_attn_mode::off);
        fmt::print(stderr, "kvfit: --mmproj {}: weights {} + clip compute {}{} on {}\n", c.mmproj_path,
                   human_bytes(c.settings.mmproj->weights_bytes), human_bytes(mc.bytes), mc.modelled ? "" : " (estimate)",
                   c.mmproj_offload && !gpus.empty() ? gpus[0].name : "the host");
    }
    for (const auto & v : c.lora) {
        for (const auto & item : split_commas(v)) c.settings.lora.push_back(read_lora(item));
    }
    for (const auto & v : c.lora_scaled) {
        for (const auto & item : split_commas(v)) c.settings.lora.push_back(read_lora_scaled(item));
    }
    for (const auto & f : c.not_modelled) fmt::print(stderr, "kvfit: not modelled (passed through untouched): {}\n", f);
    if (c.no_mmap) fmt::print(stderr, "kvfit: --no-mmap: weights are read into RAM instead of mapped (no effect on GPU memory)\n");
    if (gpus.empty()) {
        fmt::print(stderr, "kvfit: no GPU: the command runs on the CPU; nothing to check\n");
        return run_command(c.argv);
    }
    // the command's flags through the registry, so the verdict is the CLI's --check for the same flags
    const plan_result r = plan_model(find_runtime("llama.cpp"), m, warn, llamacpp_flag_values(c.settings, c.placement, margin),
                                     machine{gpus});
    if (r.plan.fits) {
        fmt::print(stderr, "kvfit: {}", render_check(r));
        return run_command(c.argv);
    }
    std::string out = render_check(r);
    const spill_cliff cliff = make_spill_cliff(m, c.settings, c.placement, gpus, margin, ss);
    const speed_model * sm = find_speed_model(find_runtime("llama.cpp"));
    const double full = sm != nullptr && sm->decode_speed != nullptr
                            ? sm->decode_speed(m, llamacpp_flag_values(c.settings, c.placement, margin), machine{gpus},
                                               c.settings.n_ctx != 0 ? c.settings.n_ctx : m.n_ctx_train, ss).value_or(0.0)
                            : 0.0;
    if (cliff.fit_ngl >= 0) {
        // with --fit off llama.cpp does not spill: it fails to allocate (the spill is then a command to write, -ngl N)
        out += fmt::format("  Speed: on GPUs large enough this would decode at {:.1f} t/s; spilled to -ngl {} ({}) about "
                           "{:.1f} t/s, {:.1f}x slower (roofline, docs/speed.md).\n", full, cliff.fit_ngl,
                           c.fit == "off" ? "with --fit off llama.cpp fails to allocate instead; -ngl spills by hand"
                                          : "what llama.cpp's --fit would do",
                           cliff.fit_decode_tokens_per_s, full / std::max(1e-9, cliff.fit_decode_tokens_per_s));
    }
    if (c.fit != "off") {
        out += "  llama.cpp's --fit (on by default in current builds) would start it anyway with layers moved to the CPU.\n";
    }
    const auto variants = fitting_variants(r, m, c, gpus, margin, ss);
    for (size_t i = 0; i < variants.size(); ++i) {
        out += fmt::format("  {} {} ({:.1f} t/s): {}\n", i == 0 ? "closest that fits:" : "  also fits:       ",
                           variants[i].why, variants[i].decode_tokens_per_s, shell_join(variants[i].argv));
    }
    if (variants.empty()) out += "  nothing close fits on these GPUs\n";
    if (o.fix && !variants.empty()) {
        fmt::print(stderr, "{}kvfit: --fix: running the closest command that fits\n", out);
        return run_command(variants.front().argv);
    }
    fmt::print("{}", out);
    return exit_does_not_fit;
}

// The log's runs, read line by line (parse_llamacpp_runs: memory bounded by what kvfit keeps, not by the file).
std::vector<llamacpp_log> read_log_runs(const std::string & path) {
    std::ifstream in = open_log_file(path);
    return parse_llamacpp_runs(in);
}

// explain's --mmproj / --lora: the projector and adapters the logged run loaded (llamacpp_extras.h)
struct explain_files {
    std::string mmproj;
    std::vector<std::string> lora;
};

// The model of one run: -m MODEL, else the path the run's log names.
std::string run_model_spec(const std::string & log_path, const llamacpp_log & log, const std::string & model_spec) {
    if (!model_spec.empty()) return model_spec;
    if (log.model_path.empty()) throw error(fmt::format("{}: the log names no model file; pass -m MODEL", log_path));
    if (!std::filesystem::exists(log.model_path)) {
        throw error(fmt::format("{}: the log's model {} is not on this machine; pass -m MODEL", log_path, log.model_path));
    }
    return log.model_path;
}

// With -m, a run whose log loads another model than the one planned (its figures would be compared with the wrong
// model's plan): a GGUF given to -m whose file name differs from the run's model file, or, for a -m kvfit cannot
// compare by file (a catalog name, a config.json), a run that loads another file than the log's first run. "" when
// nothing says so.
std::string other_model_note(const std::vector<llamacpp_log> & runs, size_t i, const std::string & model_spec) {
    const std::string & path = runs[i].model_path;
    if (model_spec.empty() || path.empty()) return "";
    const auto file_name = [](const std::string & p) { return std::filesystem::path(p).filename().string(); };
    const bool gguf = model_spec.size() > 5 && model_spec.ends_with(".gguf");
    if (gguf && file_name(model_spec) != file_name(path)) {
        return fmt::format("the log{} loads {}, not -m {}: its lines are compared with the plan of -m's model",
                           runs.size() > 1 ? fmt::format("'s run {}", i + 1) : "", path, model_spec);
    }
    if (!gguf && i > 0 && !runs[0].model_path.empty() && path != runs[0].model_path) {
        return fmt::format("run {} loads {}, run 1 {}: -m {} is planned for both", i + 1, path, runs[0].model_path,
                           model_spec);
    }
    return "";
}

int run_explain(const std::string & log_path, const std::string & model_spec, const explain_files & files = {}) {
    const std::vector<llamacpp_log> runs = read_log_runs(log_path);
    llamacpp_settings extras;
    if (!files.mmproj.empty()) extras.mmproj = read_mmproj(files.mmproj);
    for (const auto & v : files.lora) {
        for (const auto & item : split_commas(v)) extras.lora.push_back(read_lora(item));
    }
    size_t differences = 0;
    std::string loaded_spec;
    model_desc loaded_model;
    for (size_t i = 0; i < runs.size(); ++i) {
        const llamacpp_log & log = runs[i];
        const std::string spec = run_model_spec(log_path, log, model_spec);
        if (runs.size() > 1) {
            fmt::print("{}run {} of {}: lines {}-{}, model {}\n", i == 0 ? "" : "\n", i + 1, runs.size(), log.first_line,
                       log.last_line, kvfit::printable(log.model_path.empty() ? spec : log.model_path, false));
        }
        if (const std::string other = other_model_note(runs, i, model_spec); !other.empty()) {
            fmt::print("note: {}\n", kvfit::printable(other, false));
        }
        if (i == 0 || spec != loaded_spec) { // the same model is loaded once for all its runs
            warnings warn;
            loaded_model = load_model(spec, warn);
            llamacpp_adapt_model(loaded_model, warn);
            for (const auto & w : warn) fmt::print(stderr, "kvfit: warning: {}\n", kvfit::printable(w, false));
            loaded_spec = spec;
        }
        const explanation e = explain_log(log, loaded_model, &extras);
        fmt::print("{}", render_explanation(loaded_model, e));
        differences += e.differences;
    }
    return differences == 0 ? 0 : 1;
}

} // namespace

bool is_subcommand(const char * arg) { return std::strcmp(arg, "exec") == 0 || std::strcmp(arg, "explain") == 0; }

int main_subcommand(int argc, char ** argv) {
    CLI::App app{"kvfit exec / explain"};
    app.require_subcommand(1);
    exec_options eo;
    auto * exec = app.add_subcommand("exec", "plan a llama-server / llama-cli command on this machine's GPUs; run it when "
                                             "it fits, else exit 3 with what overflows and the closest command that fits");
    exec->add_option("--gpu", eo.gpu, "GPUs: auto (detect: NVML, nvidia-smi, rocm-smi) or as kvfit --gpu (default auto)")
        ->type_name("auto|GPUS");
    exec->add_option("--margin", eo.margin, "memory kept free per GPU (default 1GiB)")->type_name("SIZE");
    exec->add_option("--cpu-bandwidth", eo.cpu_bandwidth, "host RAM bandwidth for the speed estimate (default 60GB/s)")
        ->type_name("GB/s");
    exec->add_flag("--fix", eo.fix, "run the closest command that fits instead of refusing");
    exec->add_option("command", eo.command, "-- then the command")->required()->type_name("COMMAND...");
    exec->positionals_at_end();
    std::string log_path, model;
    auto * explain = app.add_subcommand("explain", "a llama.cpp, vLLM, SGLang, Ollama or mlx-lm log beside kvfit's plan, line by line");
    explain->add_option("log", log_path, "llama.cpp, vLLM, SGLang, Ollama or mlx-lm log file")->required()->type_name("LOG");
    explain->add_option("-m,--model", model, "model (.gguf, config.json, catalog name); default: the log's model path")
        ->type_name("MODEL");
    explain_files files;
    explain->add_option("--mmproj", files.mmproj, "the projector the run loaded: its clip lines are compared")->type_name("FILE");
    explain->add_option("--lora", files.lora, "a LoRA adapter the run loaded (repeatable): its buffer lines are compared")
        ->type_name("FILE");
    std::string serving_gpu;
    std::vector<std::string> assumed;
    explain->add_option("--gpu", serving_gpu, "vLLM / SGLang / Ollama / mlx-lm logs: the GPU the run had (kvfit then derives the "
                                              "budget itself)")->type_name("GPUS");
    explain->add_option("--assume", assumed, "vLLM / SGLang / Ollama / mlx-lm logs: an engine argument the log does not print "
                                             "(repeatable): kv_cache_dtype=fp8")->type_name("KEY=VALUE");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &) {
        fmt::print("{}", app.help());
        return 0;
    } catch (const CLI::ParseError & e) {
        fmt::print(stderr, "kvfit: {}\n", kvfit::printable(e.what(), false)); // one line, whatever it quotes
        return exit_bad_input;
    }
    try {
        if (exec->parsed()) return run_exec(eo);
        if (is_serving_log_file(log_path)) {
            serving_inputs in;
            in.gpu = serving_gpu;
            for (const auto & a : assumed) {
                const size_t eq = a.find('=');
                if (eq == std::string::npos || eq == 0) throw error(fmt::format("--assume '{}': expected KEY=VALUE", a));
                const std::string key = a.substr(0, eq);
                for (const auto & [k, v] : in.assumed) { // one value per setting: the second is not silently the one used
                    if (k == key) throw error(fmt::format("--assume {}: given twice ({}, {}); give it once", key, v, a.substr(eq + 1)));
                }
                in.assumed.emplace_back(key, a.substr(eq + 1));
            }
            return run_explain_serving(log_path, model, in);
        }
        if (!serving_gpu.empty() || !assumed.empty()) {
            throw error("--gpu and --assume apply to vLLM, SGLang and mlx-lm logs (a llama.cpp log states its devices)");
        }
        return run_explain(log_path, model, files);
    } catch (const error & e) {
        fmt::print(stderr, "kvfit: {}\n", kvfit::printable(e.what(), false)); // one line, whatever it quotes
        return exit_bad_input;
    } catch (const std::exception & e) {
        fmt::print(stderr, "kvfit: internal error: {}\n", kvfit::printable(e.what(), false));
        return exit_bad_input;
    }
}

std::vector<device_spec> gpus_from_option(const std::string & gpu) {
    if (gpu != "auto") return parse_gpu_list(gpu);
    const gpu_detection d = detect_gpus();
    // A tool that hung, flooded or printed nonsense says nothing about the GPUs: refuse rather than plan for none.
    if (d.gpus.empty() && !d.refused.empty()) {
        throw error(fmt::format("--gpu auto: {}; name the GPUs instead (--gpu 'RTX 4090', --gpu 24GiB)", d.refused.front()));
    }
    fmt::print(stderr, "kvfit: {}", describe_detection(d));
    return devices_from_detection(d);
}

speed_settings speed_settings_from(const std::string & cpu_bandwidth) {
    speed_settings s;
    if (!cpu_bandwidth.empty()) s.cpu_bandwidth_bytes_per_s = parse_bandwidth(cpu_bandwidth);
    return s;
}

} // namespace kvfit::cli
