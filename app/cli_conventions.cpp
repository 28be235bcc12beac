// Command-line conventions (app/cli_conventions.h).
#include "cli_conventions.h"

#include "cli_exec.h"
#include "cli_fit_params.h" // exec_serve: kvfit-serve runs the server
#include "kvfit/error.h"
#include "kvfit/printable.h"
#include "kvfit/report.h"
#include "kvfit/runtime.h"

#include <cstring>
#include <unistd.h>
#include <fmt/format.h>
#include <map>

#ifndef KVFIT_VERSION
#define KVFIT_VERSION "unknown"
#endif

namespace kvfit::cli {

std::string version_text() {
    std::string releases;
    for (const llamacpp_release r : {llamacpp_release::v0_5_0, llamacpp_release::b5b4ebc5}) {
        std::string name = llamacpp_release_name(r); // "llama.cpp v0.5.0 (node-llama-cpp 3.22.1)"
        name = name.substr(std::strlen("llama.cpp "));
        if (r == llamacpp_release_default) name.insert(name.size() - 1, ", the default");
        releases += (releases.empty() ? "" : ", ") + name;
    }
    return fmt::format("kvfit {}\nllama.cpp rules: {}; --llamacpp-version picks one\n", KVFIT_VERSION, releases);
}

std::optional<int> handle_help_and_version(int argc, char ** argv, const std::function<void()> & main_help) {
    if (argc > 1 && std::strcmp(argv[1], "help") == 0) {
        const std::string topic = argc > 2 ? argv[2] : "";
        if (topic == "exec" || topic == "explain") {
            char help[] = "--help";
            char * sub[] = {argv[0], argv[2], help, nullptr};
            return main_subcommand(3, sub);
        }
        if (topic == "fit-params") {
            fmt::print("{}", fit_params_help());
            return 0;
        }
        if (topic == "serve") {
            char help[] = "--help";
            char * sub[] = {argv[2], help, nullptr};
            return kvfit::cli::exec_serve(2, sub);
        }
        if (!topic.empty()) { // a topic kvfit has no help for is a mistake, not a request for the main help
            fmt::print(stderr, "kvfit: help {}: no such command (help topics: exec, explain, fit-params, serve; "
                               "kvfit --help for the flags)\n", kvfit::printable(topic, false));
            return 2;
        }
        main_help();
        return 0;
    }
    return handle_version(argc, argv);
}

std::optional<int> handle_version(int argc, char ** argv) {
    for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
        if (std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "-V") == 0) {
            fmt::print("{}", version_text());
            return 0;
        }
    }
    return std::nullopt;
}

std::string hf_model_from_flags(const std::string & repo, const std::string & file) {
    if (repo.empty()) {
        if (!file.empty()) throw error("-hff/--hf-file needs -hf org/name (the repository holding the file)");
        return "";
    }
    if (repo.starts_with("hf:")) throw error(fmt::format("-hf {}: give org/name without 'hf:'", repo));
    if (file.empty()) return "hf:" + repo;
    return "hf:" + repo.substr(0, repo.find(':')) + ":" + file; // -hff overrides the quantization (common/arg.cpp)
}

void refuse_repeated_options(const CLI::App & app, int argc, char ** argv,
                             const std::function<std::string(const std::string &)> & canonical) {
    std::map<const CLI::Option *, std::vector<std::pair<std::string, std::string>>> seen; // spelling, value
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--") break;
        if (a.size() < 2 || a[0] != '-' || std::isdigit(static_cast<unsigned char>(a[1]))) continue;
        const size_t eq = a.find('=');
        const std::string spelled = a.substr(0, eq);
        const std::string name = canonical(spelled);
        const CLI::Option * opt = nullptr;
        for (const CLI::Option * o : app.get_options()) {
            if (o->check_name(name)) opt = o;
        }
        if (opt == nullptr || opt->get_expected_min() == 0) continue; // unknown (CLI11 says so) or a flag
        if (opt->check_name("--ctx-size") || opt->check_name("--override-tensor") || opt->get_items_expected_max() > 1) {
            continue; // repeatable (list flags: -c 8192 -c 32768)
        }
        std::string value = eq != std::string::npos ? a.substr(eq + 1) : i + 1 < argc ? argv[i + 1] : "";
        if (eq == std::string::npos) ++i;
        seen[opt].emplace_back(spelled, value);
    }
    for (const auto & [opt, uses] : seen) {
        if (uses.size() < 2) continue;
        std::string values;
        for (const auto & u : uses) values += fmt::format("{}'{}'", values.empty() ? "" : ", ", u.second);
        throw error(fmt::format("{} given {} times ({}): give it once", uses.front().first, uses.size(), values));
    }
}

std::function<void(const transfer_progress &)> stderr_progress() {
    return [tty = ::isatty(STDERR_FILENO) == 1, announced = false](const transfer_progress & p) mutable {
        const std::string of = p.total_bytes ? " of " + human_bytes(p.total_bytes) : "";
        const std::string line = fmt::format("kvfit: {}: {}{}, {:.1f} s", printable(p.what, false), human_bytes(p.bytes), of, p.seconds);
        // Written to the descriptor, not through stderr's escaping: "\r" and "\x1b[K" redraw the line on purpose.
        std::string out;
        if (tty) out = "\r" + line + "\x1b[K" + (p.done ? "\n" : "");
        else if (p.done) out = line + "\n";
        else if (!announced) out = fmt::format("kvfit: {}: downloading, {}{} so far\n", printable(p.what, false), human_bytes(p.bytes), of);
        announced = !p.done;
        std::fflush(stderr);
        for (size_t at = 0; at < out.size();) {
            const ssize_t n = ::write(STDERR_FILENO, out.data() + at, out.size() - at);
            if (n <= 0) break;
            at += size_t(n);
        }
    };
}

void name_value_types(CLI::App & app) {
    // main's own options; every runtime flag's value name is its table's (flag_spec::value_name, cli_flags.cpp)
    static const std::pair<const char *, const char *> types[] = {
        {"--gpu", "GPUS"}, {"--weights", "FORMAT"}, {"--weights-size", "SIZE"}, {"--chart", "FILE"},
        {"--chart-compare", "FILE"}, {"--cpu-bandwidth", "GB/s"}, {"--hf-repo", "ORG/NAME[:QUANT]"}, {"--hf-file", "FILE"},
        {"--runtime", "RUNTIME"}, {"--model", "MODEL"},
    };
    for (const auto & [name, type] : types) {
        if (CLI::Option * o = app.get_option_no_throw(name)) o->type_name(type);
    }
    if (CLI::Option * o = app.get_option_no_throw("model")) o->type_name("MODEL");
}

} // namespace kvfit::cli
