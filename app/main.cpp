// kvfit: does this model, at this context length, fit in my GPU — and if not, what do I change?
// Parses flags (spelled as llama.cpp spells them), calls the library, prints. No memory rule lives here.
// Exit status: 0 fits (or no --gpu given), 3 does not fit, 2 bad input.
#include "cli_conventions.h"
#include "cli_flags.h"
#include "cli_fit_params.h"
#include "escaped_output.h"
#include "kvfit/chart.h"
#include "kvfit/error.h"
#include "kvfit/printable.h"
#include "kvfit/gguf.h"
#include "kvfit/gpus.h"
#include "kvfit/llamacpp.h"
#include "kvfit/model_set.h"
#include "kvfit/plan.h"
#include "kvfit/remote.h"
#include "kvfit/report.h"
#include "kvfit/sources.h"
#include "kvfit/speed.h"
#include "kvfit/version.h"
#include "cli_exec.h"
#include "cli_list.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr int exit_fits = 0;
constexpr int exit_bad_input = 2;
constexpr int exit_does_not_fit = 3;

// llama.cpp and vLLM spell several flags with one dash and several letters (-ctk, -ngl, -tp); CLI11 only takes one
// letter after a single dash, so those are rewritten to their long names first (the list comes from the registry).
std::string canonical_flag(const std::string & a, const std::vector<std::pair<std::string, std::string>> & aliases) {
    // --name=value: the name is rewritten and the value kept (--swa-checkpoints=4 is --ctx-checkpoints=4)
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        return canonical_flag(a.substr(0, eq), aliases) + a.substr(eq);
    }
    for (const char * hub : {"--hf-repo", "--hf-file"}) { // llama.cpp's Hub model: -hf, -hfr, -hff (llamacpp_command_flags)
        const kvfit::flag_spec * f = kvfit::find_flag_spelled(kvfit::llamacpp_command_flags(), hub);
        if (f && f->spelled(a)) return std::string(f->name);
    }
    for (const auto & [from, to] : aliases) {
        if (a == from) return std::string(to);
    }
    return a;
}

// The runtime the command line selects (--runtime R or --runtime=R; llama.cpp by default): its alternate spellings
// are the ones rewritten (cli::long_aliases).
std::string selected_runtime(int argc, char ** argv) {
    std::string runtime = "llama.cpp";
    for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
        const std::string a = argv[i];
        if (a == "--runtime" && i + 1 < argc) runtime = argv[i + 1];
        else if (a.rfind("--runtime=", 0) == 0) runtime = a.substr(10);
    }
    return runtime;
}

// An error names a flag by its main spelling (the runtime's table: --ctx-checkpoints, --tp); where the command line
// typed an alternate (--swa-checkpoints, SGLang's --tensor-parallel-size), the message names what was typed. Only a
// whole flag word is replaced (followed by a space, quote, colon, '=' or the end), the first time it appears.
std::string as_typed(std::string msg, int argc, char ** argv, const std::function<std::string(const std::string &)> & canon) {
    const auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
    for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
        std::string typed = argv[i];
        if (typed.rfind("--", 0) != 0) continue;
        typed = typed.substr(0, typed.find('='));
        const std::string main_name = canon(typed);
        if (main_name == typed) continue;
        for (size_t p = msg.find(main_name); p != std::string::npos; p = msg.find(main_name, p + 1)) {
            const size_t end = p + main_name.size();
            if ((p > 0 && name_char(msg[p - 1])) || (end < msg.size() && name_char(msg[end]))) continue;
            msg.replace(p, main_name.size(), typed);
            break;
        }
    }
    return msg;
}

std::vector<std::string> normalise_args(int argc, char ** argv, const std::function<std::string(const std::string &)> & canon) {
    std::vector<std::string> out;
    for (int i = 1; i < argc; ++i) out.push_back(canon(argv[i]));
    std::reverse(out.begin(), out.end()); // CLI11 parses a reversed vector
    return out;
}

struct options {
    kvfit::plan_request req; // the common flags (the runtime's own are in `flags`), shared with `kvfit serve`
    kvfit::cli::runtime_flags flags; // every runtime's flags, from the registry
    bool json = false, list = false, inspect = false, check = false, speed = false;
    std::string cpu_bandwidth;
    std::string chart, chart_compare; // --chart FILE.svg|.png, --chart-compare FILE.svg|.png
    bool offline = false, verbose = false; // hf: models
    std::string hf_repo, hf_file;          // -hf org/name[:QUANT], -hff FILE: llama.cpp's spelling of hf:org/name
    std::string model_flag;                // -m/--model FILE: llama.cpp's spelling of MODEL
    kvfit::cli::list_options list_opts; // --list: --local and the filters (app/cli_list.h)
    std::vector<std::string> models;    // MODEL...: one plans a model, several a set (include/kvfit/model_set.h)
    uint32_t max_loaded = 0;            // a set: llama.cpp --models-max, Ollama --max-loaded-models
};

// Flags of main that every runtime takes; main's others (--speed, --cpu-bandwidth) are llama.cpp's.
const std::vector<std::string> k_common_flags = {"model", "--model", "--gpu", "--weights", "--weights-size", "--json", "--check",
                                                 "--chart", "--chart-compare", "--list", "--inspect", "--offline",
                                                 "--verbose", "--strict", "--help", "--runtime", "--hf-repo",
                                                 "--hf-file", "--local", "--family",
                                                 "--min-params", "--max-params", "--min-context",
                                                 "--models-max", "--max-loaded-models"};

// hf:org/name[...]: read from the Hub (or the cache with --offline); --verbose reports what it cost, on stderr.
kvfit::model_desc load(const std::string & spec, const options & o, kvfit::warnings & warn) {
    if (!spec.starts_with("hf:")) return kvfit::load_model(spec, warn);
    kvfit::remote_options r = kvfit::remote_options_from_env();
    r.offline = o.offline;
    r.progress = kvfit::cli::stderr_progress();
    kvfit::remote_stats stats;
    auto report = [&] {
        if (!o.verbose) return;
        for (const auto & line : stats.log) fmt::print(stderr, "kvfit: {}\n", line);
        fmt::print(stderr, "kvfit: {}: {} requests, {} bytes fetched, {} files from the cache ({})\n", spec,
                   stats.requests, stats.bytes, stats.cache_hits, r.cache_dir.empty() ? "no cache" : r.cache_dir);
    };
    try {
        kvfit::model_desc m = kvfit::model_from_hf(spec, r, warn, &stats);
        report();
        return m;
    } catch (const kvfit::error &) {
        report();
        throw;
    }
}

// planning for this machine (--gpu auto): llama.cpp's CPU backend variant from /proc/cpuinfo. Without it the plan is
// for any machine (the same as `kvfit serve` gives): the CPU is assumed, and a note says so where it matters. And the
// host RAM verdict of this machine (MemTotal, /proc/meminfo) under --gpu auto (issue 14 item 4).
void plan_for_this_host(kvfit::plan_request & q) {
    if (q.runtime != "llama.cpp" || q.gpu != "auto") return;
    if (!q.flags.has("cpu_features")) q.flags.set("cpu_features", "auto");
    if (!q.flags.has("ram")) q.flags.set("ram", "auto");
}

// Several MODELs: a set sharing the GPUs (include/kvfit/model_set.h). MODEL@-c=32768,-np=2 gives one model its own
// flags over the command line's.
int run_set(options & o) {
    if (o.list || o.inspect || o.check || o.speed || !o.chart.empty() || !o.chart_compare.empty() || !o.model_flag.empty() ||
        !o.hf_repo.empty() || !o.hf_file.empty()) {
        throw kvfit::error("several MODELs plan a set: --list, --inspect, --check, --speed, --chart, --chart-compare, -m "
                           "and -hf take one model");
    }
    const kvfit::runtime_info & rt = kvfit::find_runtime(o.flags.runtime);
    const kvfit::flag_values common = kvfit::cli::values_of(o.flags);
    kvfit::set_request q;
    q.max_loaded = o.max_loaded;
    std::vector<std::string> specs;
    std::vector<uint32_t> weights;
    bool weighted = false;
    for (const auto & text : o.models) {
        uint32_t weight = 0; // MODEL@weight=W: the joint solve's proportion (docs/sets.md)
        auto [spec, own] = kvfit::parse_set_member(text, rt, &weight);
        weighted |= weight != 0;
        weights.push_back(weight ? weight : kvfit::set_weight_one);
        kvfit::plan_request r = o.req;
        r.runtime = o.flags.runtime;
        r.model = spec;
        r.flags = common;
        for (const auto & [name, values] : own.all()) { // the model's own value replaces the command line's
            r.flags.erase(name);
            for (const auto & v : values) r.flags.add(name, v);
        }
        plan_for_this_host(r);
        q.members.push_back(std::move(r));
        specs.push_back(spec);
    }
    if (weighted) q.weights = std::move(weights);
    const kvfit::set_result s = kvfit::plan_set(
        q, [&](size_t i, kvfit::warnings & warn) { return load(specs[i], o, warn); }, kvfit::cli::gpus_from_option);
    fmt::print("{}", o.json ? kvfit::render_set_json(s) : kvfit::render_set_text(s));
    return s.fits ? exit_fits : exit_does_not_fit;
}

int run(options & o) {
    if (o.models.size() > 1) return run_set(o);
    if (o.max_loaded) throw kvfit::error("--models-max and --max-loaded-models apply to a set (several MODELs)");
    if (o.list) { // app/cli_list.cpp: the catalog or the local stores, ranked for --gpu
        o.req.runtime = o.flags.runtime;
        o.req.flags = kvfit::cli::values_of(o.flags);
        return kvfit::cli::run_list(o.req, o.list_opts, o.json, o.cpu_bandwidth);
    }
    const std::string spec = o.req.model.empty() ? std::string(kvfit::default_model_name()) : o.req.model;
    if (o.inspect) {
        kvfit::cli::refuse_inspect_of_non_gguf(spec);
        kvfit::warnings warn;
        const std::string text = kvfit::gguf_inspect(kvfit::gguf_open_shards(spec), warn);
        for (const auto & w : warn) fmt::print(stderr, "warning: {}\n", kvfit::printable(w, false));
        fmt::print("{}", text);
        return exit_fits;
    }
    // --speed prints a text section after the plan: after --json's document it would make stdout invalid JSON
    if (o.speed && o.json) throw kvfit::error("--speed prints a text section and cannot be combined with --json");
    o.req.runtime = o.flags.runtime;
    o.req.flags = kvfit::cli::values_of(o.flags);
    // a CPU-only llama.cpp plan checks against the host's RAM (--ram): that is a check too
    if (o.check && o.req.gpu.empty() && !(o.req.runtime == "llama.cpp" && o.req.flags.has("ram"))) {
        throw kvfit::error("--check needs --gpu (the devices to check against), or --ram for a CPU-only llama.cpp plan");
    }
    plan_for_this_host(o.req);
    const kvfit::plan_result r = kvfit::make_plan(
        o.req, [&](kvfit::warnings & warn) { return load(spec, o, warn); }, kvfit::cli::gpus_from_option);
    if (!o.chart.empty()) {
        kvfit::write_chart_file(o.chart, kvfit::make_chart_series(r));
        fmt::print(stderr, "kvfit: wrote {}\n", o.chart);
    }
    if (!o.chart_compare.empty()) {
        kvfit::write_chart_file(o.chart_compare, kvfit::make_compare_series(r));
        fmt::print(stderr, "kvfit: wrote {}\n", o.chart_compare);
    }
    fmt::print("{}", o.json ? kvfit::render_json(r) : o.check ? kvfit::render_check(r) : kvfit::render_text(r));
    if (o.speed) fmt::print("{}", kvfit::render_speed_section(r, kvfit::cli::speed_settings_from(o.cpu_bandwidth)));
    return r.plan.fits ? exit_fits : exit_does_not_fit;
}

} // namespace

int main(int argc, char ** argv) {
    kvfit::cli::escape_standard_streams(); // names and values from files never reach the terminal raw
    if (argc > 1 && kvfit::cli::is_subcommand(argv[1])) return kvfit::cli::main_subcommand(argc, argv); // exec, explain
    const bool own_parser = argc > 1 && (std::string_view(argv[1]) == "serve" || std::string_view(argv[1]) == "fit-params" ||
                                         std::string_view(argv[1]) == "help");
    if (!own_parser) { // before the option tables below are built: `kvfit --version` is a process start and a print
        if (const auto done = kvfit::cli::handle_version(argc, argv)) return *done;
    }
    CLI::App app{"kvfit: does this model, at this context length, fit in my GPU? KV cache, recurrent state and "
                 "weights under llama.cpp's allocation rules. Exit status: 0 fits, 3 does not fit, 2 bad input.", "kvfit"};
    app.footer("Subcommands:\n  kvfit exec [--gpu auto|GPUS] [--fix] -- llama-server ...   check a launch command, run it if it fits\n"
               "  kvfit explain LOG [-m MODEL]                                compare a llama.cpp log with kvfit's plan\n"
               "  kvfit serve [--port N] [--host ADDR]                        web page and JSON API on loopback\n"
               "  kvfit fit-params -m MODEL [-c N] [--fit-print on] [--gpu G] llama-fit-params' output from kvfit's plan\n"
               "  kvfit help [exec|explain|serve|fit-params]                  this help, or a subcommand's\n"
               "  kvfit --version                                             version and the llama.cpp releases it models\n");
    if (argc > 1 && std::string_view(argv[1]) == "serve") return kvfit::cli::exec_serve(argc - 1, argv + 1);
    if (argc > 1 && std::string_view(argv[1]) == "fit-params") return kvfit::cli::run_fit_params(argc - 1, argv + 1);
    options o;
    app.add_option("model", o.models, "catalog name, config.json, model directory, .gguf, or "
                                      "hf:org/name[@rev][:file.gguf|:QUANT] (default: Qwen3.5-9B); several: a set sharing "
                                      "--gpu, each MODEL@-c=32768,-np=2 with its own flags, MODEL@weight=2 its share of "
                                      "the joint context solve (docs/sets.md)");
    app.add_option("--models-max", o.max_loaded, "a set under llama.cpp: llama-server's router --models-max (loaded at once)");
    app.add_option("--max-loaded-models", o.max_loaded, "a set under Ollama: OLLAMA_MAX_LOADED_MODELS (default 3 x GPUs)");
    app.add_option("-m,--model", o.model_flag, "MODEL as llama.cpp spells it (-m FILE.gguf); give MODEL or -m, not both");
    app.add_option("--hf-repo", o.hf_repo, "-hf, -hfr: a Hub model as llama.cpp names it: org/name[:QUANT] = hf:org/name[:QUANT]");
    app.add_option("--hf-file", o.hf_file, "-hff: the GGUF file of the -hf repository (overrides :QUANT)");
    app.add_option("--gpu", o.req.gpu, "GPUs by name or memory: \"RTX 4060\", 2xH100, 8GiB, 24GiB,24GiB; answers whether it fits");
    app.add_option("--weights", o.req.weights, "weight format for config.json models: f16 bf16 q8_0 q6_k q5_k_m q4_k_m ...");
    app.add_option("--weights-size", o.req.weights_size, "total weight size, e.g. 6.6GB (10^9 B) or 6.2GiB; G alone is GiB, as llama.cpp reads it (overrides --weights)");
    app.add_flag("--json", o.json, "print the plan as JSON");
    app.add_flag("--check", o.check, "check your own flags against --gpu: exit 3 naming the buffer that overflows");
    app.add_option("--chart", o.chart, "write the memory-vs-context chart: FILE.svg or FILE.png (needs rsvg-convert)");
    app.add_option("--chart-compare", o.chart_compare, "write the chart of the model vs its all-full-attention variant");
    app.add_flag("--list", o.list, "list the catalog [matching MODEL]; with --gpu ranked by what fits (best weights, KV type, "
                                    "largest context, speed); --local: the models on disk");
    kvfit::cli::add_list_flags(app, o.list_opts);
    app.add_flag("--speed", o.speed, "decode/prefill tokens/s and the spill cliff (roofline; docs/speed.md)");
    app.add_option("--cpu-bandwidth", o.cpu_bandwidth, "host RAM bandwidth for spilled layers (default 60GB/s)");
    app.add_flag("--inspect", o.inspect, "show a GGUF file's metadata and layer layout");
    app.add_flag("--offline", o.offline, "hf: models: read only the cache ($KVFIT_CACHE, $XDG_CACHE_HOME/kvfit, ~/.cache/kvfit)");
    app.add_flag("--verbose", o.verbose, "hf: models: print each request and the bytes fetched (stderr)");
    app.add_flag("--strict", o.req.strict, "refuse to guess: any warning (an assumption) is exit 2, warnings printed");
    // Only the runtime flags this command line names are registered, unless it asks for help (which lists them all).
    const auto aliases = kvfit::cli::long_aliases(selected_runtime(argc, argv));
    const std::function<std::string(const std::string &)> canonical = [&](const std::string & a) { return canonical_flag(a, aliases); };
    std::vector<std::string> words;
    bool help = argc > 1 && std::string_view(argv[1]) == "help";
    for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i) {
        const std::string a = canonical(argv[i]);
        if (a == "-h" || a == "--help") help = true;
        if (a.size() < 2 || a[0] != '-') continue;
        if (a[1] == '-') words.push_back(a.substr(0, a.find('=')));
        else words.push_back(a.substr(0, 2)); // -c8192, -c=8192: CLI11 reads one letter after a single dash
    }
    kvfit::cli::add_runtime_flags(app, o.flags, help ? nullptr : &words);
    if (help) kvfit::cli::name_value_types(app); // the typed names are help's only
    if (const auto done = kvfit::cli::handle_help_and_version(argc, argv, [&] { fmt::print("{}", app.help()); })) return *done;
    try {
        kvfit::cli::refuse_repeated_options(app, argc, argv, canonical);
        app.parse(normalise_args(argc, argv, canonical));
    } catch (const CLI::CallForHelp &) {
        fmt::print("{}", app.help());
        return exit_fits;
    } catch (const CLI::ExtrasError &) { // CLI11 lists them reversed (normalise_args): name the first one instead
        fmt::print(stderr, "kvfit: {}\n", kvfit::printable(kvfit::cli::unexpected_argument(app, argc, argv, canonical), false));
        return exit_bad_input;
    } catch (const CLI::ParseError & e) {
        fmt::print(stderr, "kvfit: {}\n", kvfit::printable(e.what(), false)); // one line, whatever it quotes
        return exit_bad_input;
    } catch (const kvfit::error & e) {
        fmt::print(stderr, "kvfit: {}\n", kvfit::printable(as_typed(e.what(), argc, argv, canonical), false)); // one line
        return exit_bad_input;
    }
    try {
        for (const auto & m : o.models) {
            if (m.empty()) throw kvfit::error("model: empty value");
        }
        if (o.models.size() == 1) {
            // MODEL@-c=8192 is a set member's spelling: one model takes its flags directly (a path that exists, or a
            // Hub revision hf:org/name@rev, is no such spelling: parse_set_member leaves it whole)
            const auto [spec, own] = kvfit::parse_set_member(o.models[0], kvfit::find_runtime(o.flags.runtime));
            if (spec != o.models[0]) {
                throw kvfit::error(fmt::format("{}: MODEL@settings is for a set of models (kvfit A B ...); for one model "
                                               "give the flags themselves (docs/sets.md)", o.models[0]));
            }
            o.req.model = o.models[0];
        }
        if (!o.model_flag.empty()) {
            if (!o.req.model.empty()) throw kvfit::error(fmt::format("MODEL {} and -m {}: give one model", o.req.model, o.model_flag));
            o.req.model = o.model_flag;
        }
        if (const std::string hf = kvfit::cli::hf_model_from_flags(o.hf_repo, o.hf_file); !hf.empty() && o.models.size() < 2) {
            if (!o.req.model.empty()) throw kvfit::error(fmt::format("-hf {} and MODEL {}: give one model", o.hf_repo, o.req.model));
            o.req.model = hf;
        }
        // An option given with an empty value is a mistake, not "use the default".
        for (const char * name : {"--model", "--hf-repo", "--hf-file", "--gpu", "--chart", "--chart-compare", "--margin", "--weights", "--weights-size"}) {
            const CLI::Option * opt = app.get_option_no_throw(name); // a runtime flag not on the command line is not registered
            if (opt && opt->count() > 0 && opt->as<std::string>().empty()) {
                throw kvfit::error(fmt::format("{}: empty value", name));
            }
        }
        if (!o.cpu_bandwidth.empty()) kvfit::cli::speed_settings_from(o.cpu_bandwidth); // validate before printing
        kvfit::cli::check_owners(app, o.flags, k_common_flags);
        return run(o);
    } catch (const kvfit::error & e) {
        fmt::print(stderr, "kvfit: {}\n", kvfit::printable(as_typed(e.what(), argc, argv, canonical), false)); // one line
        return exit_bad_input;
    } catch (const std::exception & e) {
        fmt::print(stderr, "kvfit: internal error: {}\n", kvfit::printable(e.what(), false));
        return exit_bad_input;
    }
}
