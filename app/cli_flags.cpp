// The runtimes' flags on the command line (app/cli_flags.h): registered from the registry, with their owners.
#include "cli_flags.h"

#include "kvfit/error.h"
#include "kvfit/llamacpp.h"
#include "kvfit/printable.h"
#include "kvfit/sources.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace kvfit::cli {
namespace {

// What a llama.cpp flag is called in the selected runtime, for the error message: the runtime's flag that sets what
// the llama.cpp flag sets (flag_spec::setting, flag_for_setting), with the engine's own name when kvfit's flag stands
// for one ("--num-parallel (OLLAMA_NUM_PARALLEL)").
std::string llama_flag_hint(const std::string & name, const std::string & runtime) {
    const flag_spec * llama = find_flag_spelled(llamacpp_flags(), name);
    if (!llama || llama->setting == flag_setting::none) {
        return fmt::format("{} is a llama.cpp flag, not used with --runtime {}", name, runtime);
    }
    const std::string shown = llama->alias.empty() ? name : fmt::format("{}/{}", llama->alias, llama->name);
    const flag_spec * alt = flag_for_setting(find_runtime(runtime), llama->setting);
    if (!alt) return fmt::format("{} is a llama.cpp flag, not used with --runtime {}", shown, runtime);
    const std::string use = alt->engine_name.empty() ? std::string(alt->name) : fmt::format("{} ({})", alt->name, alt->engine_name);
    return fmt::format("{} is a llama.cpp flag; with --runtime {} use {}", shown, runtime, use);
}

bool is_long_alias(std::string_view alias) { return alias.size() > 2; }

// "an Ollama", "an MLX", "an SGLang" (a vowel, or an acronym whose first letter is read with one), "a vLLM".
const char * article(std::string_view word) {
    const bool vowel = std::string_view("AEIOUaeiou").find(word.front()) != std::string_view::npos;
    const bool acronym = word.size() > 1 && std::isupper(static_cast<unsigned char>(word[1])) &&
                         std::string_view("FHLMNRSX").find(word.front()) != std::string_view::npos;
    return vowel || acronym ? "an" : "a";
}

// "--max-model-len", or "-c,--ctx-size" when the alias is one letter (CLI11 takes those itself).
std::string cli_names(const flag_spec & s) {
    return !s.alias.empty() && !is_long_alias(s.alias) ? fmt::format("{},{}", s.alias, s.name) : std::string(s.name);
}

std::string help_of(const runtime_flags::entry & e) {
    std::string out;
    for (const runtime_info * rt : e.owners) {
        for (const auto & s : rt->flags()) {
            if (s.name != e.spec.name) continue;
            out += fmt::format("{}{}{}{}", out.empty() ? "" : "; ", rt->name == "llama.cpp" ? "" : std::string(rt->display) + ": ",
                               is_long_alias(s.alias) ? std::string(s.alias) + ": " : "", s.help);
        }
    }
    return out;
}

std::string option_name(const CLI::Option & opt) {
    return !opt.get_lnames().empty() ? "--" + opt.get_lnames()[0]
           : !opt.get_snames().empty() ? "-" + opt.get_snames()[0]
                                       : opt.get_single_name();
}

bool owns(const runtime_flags::entry & e, std::string_view runtime) {
    return std::any_of(e.owners.begin(), e.owners.end(), [&](const runtime_info * r) { return r->name == runtime; });
}

} // namespace

void add_runtime_flags(CLI::App & app, runtime_flags & f, const std::vector<std::string> * words) {
    std::vector<std::string> names;
    for (const auto & rt : runtimes()) names.emplace_back(rt.name);
    app.add_option("--runtime", f.runtime, fmt::format("runtime whose rules apply: {} (default {})",
                                                       fmt::join(names, ", "), names.front()))
        ->transform(CLI::IsMember(names, CLI::ignore_case)); // --runtime vLLM: the registry's spelling
    for (const auto & rt : runtimes()) {
        for (const auto & s : rt.flags()) {
            auto it = std::find_if(f.entries.begin(), f.entries.end(), [&](const auto & e) { return e.spec.name == s.name; });
            if (it == f.entries.end()) it = f.entries.insert(f.entries.end(), runtime_flags::entry{s, {}, nullptr, "", {}, false});
            it->owners.push_back(&rt);
        }
    }
    const auto named = [&](const flag_spec & spec) {
        if (!words) return true;
        return std::any_of(words->begin(), words->end(), [&](const std::string & w) {
            return w == spec.name || (!spec.alias.empty() && w == spec.alias);
        });
    };
    for (auto & e : f.entries) {
        if (!named(e.spec)) continue; // not on this command line: CLI11 would only check its name against the others'
        const std::string names_of = cli_names(e.spec), help = help_of(e);
        switch (e.spec.type) {
        case flag_type::boolean: e.option = app.add_flag(names_of, e.on, help); break;
        case flag_type::list: e.option = app.add_option(names_of, e.list, help)->take_all()->allow_extra_args(false); break;
        default: e.option = app.add_option(names_of, e.text, help); break;
        }
        // the value's name in --help: the table's metavar, else its type's (flag_spec::value_name)
        if (e.spec.type != flag_type::boolean) e.option->type_name(std::string(e.spec.value_name()));
    }
}

std::vector<std::pair<std::string, std::string>> long_aliases(std::string_view runtime) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto & rt : runtimes()) { // the selected runtime's alternates first: they win over another's alias
        if (rt.name != runtime) continue;
        for (const auto & s : rt.flags()) {
            for (const auto & a : s.alternates) out.emplace_back(a, s.name);
        }
    }
    for (const auto & rt : runtimes()) {
        for (const auto & s : rt.flags()) {
            if (is_long_alias(s.alias)) out.emplace_back(s.alias, s.name);
        }
    }
    return out;
}

void check_owners(const CLI::App & app, const runtime_flags & f, const std::vector<std::string> & common) {
    for (const CLI::Option * opt : app.get_options()) {
        if (opt->count() == 0) continue;
        const std::string name = option_name(*opt);
        const auto e = std::find_if(f.entries.begin(), f.entries.end(), [&](const auto & x) { return x.option == opt; });
        if (e != f.entries.end()) {
            if (owns(*e, f.runtime)) continue;
            const runtime_info & owner = *e->owners.front();
            if (owner.name == "llama.cpp") throw error(llama_flag_hint(name, f.runtime));
            // another runtime's context flag: this runtime has its own spelling (--context-length under vLLM)
            const runtime_info & current = find_runtime(f.runtime);
            const CLI::Option * runtime_opt = app.get_option_no_throw("--runtime");
            const bool runtime_given = runtime_opt && runtime_opt->count() > 0;
            if (runtime_given && e->spec.json_name() == owner.context.flag && !current.context.spelled.empty()) {
                throw error(fmt::format("{} is {} {} flag; {} spells it {} (or use --runtime {})", name,
                                        article(owner.display), owner.display, current.display, current.context.spelled,
                                        owner.name));
            }
            throw error(fmt::format("{} is {} {} flag; add --runtime {}{}", name, article(owner.display), owner.display, owner.name,
                                    f.runtime == "llama.cpp" ? "" : fmt::format(" (the runtime is {})", f.runtime)));
        }
        if (f.runtime == "llama.cpp" || std::find(common.begin(), common.end(), name) != common.end()) continue;
        throw error(llama_flag_hint(name, f.runtime));
    }
}

flag_values values_of(const runtime_flags & f) {
    flag_values out;
    for (const auto & e : f.entries) {
        if (!e.option || e.option->count() == 0 || !owns(e, f.runtime)) continue;
        const std::string key = e.spec.json_name();
        if (e.spec.type == flag_type::boolean) out.set(key, e.on ? "true" : "false");
        else if (e.spec.type == flag_type::list) for (const auto & v : e.list) out.add(key, v);
        else if (e.text.empty()) throw error(fmt::format("{}: empty value", e.spec.name)); // --ram '': a mistake, not the default
        else out.set(key, e.text);
    }
    return out;
}

std::string unexpected_argument(const CLI::App & app, int argc, char ** argv,
                                const std::function<std::string(const std::string &)> & canonical) {
    // Every word that is not a flag is a MODEL (kvfit A B C plans a set, docs/sets.md) or the value of the flag
    // before it, so only a flag can be the extra: a second MODEL is not one ("one MODEL per run" was said of
    // kvfit Qwen3-8B Meta-Llama-3.1-8B --bogus, naming the model instead of --bogus).
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--") break;
        const bool negative_number = a.size() > 1 && a[0] == '-' && (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.');
        if (a.size() < 2 || a[0] != '-' || negative_number) continue; // a value of the flag before, or MODEL
        const size_t eq = a.find('=');
        std::string name = canonical(a.substr(0, eq));
        const bool attached = name.size() > 2 && name[1] != '-'; // -c8192: CLI11 reads one letter after one dash
        if (attached) name = name.substr(0, 2);
        const CLI::Option * opt = nullptr;
        for (const CLI::Option * o : app.get_options()) {
            if (o->check_name(name)) opt = o;
        }
        if (!opt) {
            return fmt::format("unknown flag {} (kvfit --help lists the flags it models; kvfit exec -- COMMAND checks a "
                               "whole llama-server command and passes the others through)", a.substr(0, eq));
        }
        if (eq == std::string::npos && !attached && opt->get_expected_min() > 0) ++i; // its value
    }
    return "unexpected argument (kvfit --help lists the usage)";
}

void refuse_inspect_of_non_gguf(const std::string & spec) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto refuse = [&](const std::string & what, const std::string & model = "") {
        throw error(fmt::format("--inspect reads GGUF headers; {} is {}: run kvfit {} for its layers and plan", spec, what,
                                shell_word(model.empty() ? spec : model)));
    };
    if (spec.starts_with("hf:")) refuse("a Hub model (--inspect reads a local .gguf)");
    if (fs::is_directory(spec, ec)) refuse("a model directory (its config.json and safetensors headers)");
    if (!fs::exists(spec, ec)) {
        if (find_catalog(spec)) refuse("a catalog model, not a file");
        return; // the GGUF reader says "no such file"
    }
    if (!fs::is_regular_file(spec, ec)) return; // a FIFO, a device: the GGUF reader refuses it
    std::ifstream in(spec, std::ios::binary);
    char head[4] = {};
    in.read(head, sizeof head);
    if (std::string_view(head, size_t(in.gcount())) == "GGUF") return;
    size_t i = 0;
    while (i < size_t(in.gcount()) && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
    if (i < size_t(in.gcount()) && head[i] == '{') refuse(spec.ends_with("config.json") ? "a config.json" : "JSON (a config.json?)");
    if (spec.ends_with(".safetensors")) {
        const std::string dir = fs::path(spec).parent_path().string();
        refuse("a safetensors file (kvfit reads its folder's config.json)", dir.empty() ? "." : dir);
    }
}

} // namespace kvfit::cli
