// The runtimes' flags on the command line (app/cli_flags.h): registered from the registry, with their owners.
#include "cli_flags.h"

#include "kvfit/error.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit::cli {
namespace {

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
        const char * alt = runtime == "vllm" ? r.vllm : runtime == "sglang" ? r.sglang : runtime == "ollama" ? r.ollama : nullptr;
        std::string shown = r.shown == name ? name : fmt::format("{}/{}", r.shown, name);
        return alt ? fmt::format("{} is a llama.cpp flag; with --runtime {} use {}", shown, runtime, alt)
                   : fmt::format("{} is a llama.cpp flag, not used with --runtime {}", shown, runtime);
    }
    return fmt::format("{} is a llama.cpp flag, not used with --runtime {}", name, runtime);
}

bool is_long_alias(std::string_view alias) { return alias.size() > 2; }

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

void add_runtime_flags(CLI::App & app, runtime_flags & f) {
    std::vector<std::string> names;
    for (const auto & rt : runtimes()) names.emplace_back(rt.name);
    app.add_option("--runtime", f.runtime, fmt::format("runtime whose rules apply: {} (default {})",
                                                       fmt::join(names, ", "), names.front()))
        ->check(CLI::IsMember(names));
    for (const auto & rt : runtimes()) {
        for (const auto & s : rt.flags()) {
            auto it = std::find_if(f.entries.begin(), f.entries.end(), [&](const auto & e) { return e.spec.name == s.name; });
            if (it == f.entries.end()) it = f.entries.insert(f.entries.end(), runtime_flags::entry{s, {}, nullptr, "", {}, false});
            it->owners.push_back(&rt);
        }
    }
    for (auto & e : f.entries) {
        const std::string names_of = cli_names(e.spec), help = help_of(e);
        switch (e.spec.type) {
        case flag_type::boolean: e.option = app.add_flag(names_of, e.on, help); break;
        case flag_type::list: e.option = app.add_option(names_of, e.list, help)->take_all()->allow_extra_args(false); break;
        default: e.option = app.add_option(names_of, e.text, help); break;
        }
    }
}

const std::vector<std::pair<std::string, std::string>> & long_aliases() {
    static const std::vector<std::pair<std::string, std::string>> v = [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto & rt : runtimes()) {
            for (const auto & s : rt.flags()) {
                if (is_long_alias(s.alias)) out.emplace_back(s.alias, s.name);
            }
        }
        return out;
    }();
    return v;
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
            const bool vowel = std::string_view("AEIOU").find(owner.display.front()) != std::string_view::npos;
            throw error(fmt::format("{} is a{} {} flag; add --runtime {}{}", name, vowel ? "n" : "", owner.display, owner.name,
                                    f.runtime == "llama.cpp" ? "" : fmt::format(" (the runtime is {})", f.runtime)));
        }
        if (f.runtime == "llama.cpp" || std::find(common.begin(), common.end(), name) != common.end()) continue;
        throw error(llama_flag_hint(name, f.runtime));
    }
}

flag_values values_of(const runtime_flags & f) {
    flag_values out;
    for (const auto & e : f.entries) {
        if (e.option->count() == 0 || !owns(e, f.runtime)) continue;
        const std::string key = e.spec.json_name();
        if (e.spec.type == flag_type::boolean) out.set(key, e.on ? "true" : "false");
        else if (e.spec.type == flag_type::list) for (const auto & v : e.list) out.add(key, v);
        else out.set(key, e.text);
    }
    return out;
}

} // namespace kvfit::cli
