// `kvfit --list` (app/cli_list.h): the ranking of include/kvfit/ranking.h over the catalog or the local stores.
#include "cli_list.h"

#include "cli_exec.h"
#include "kvfit/error.h"
#include "kvfit/local.h"
#include "kvfit/ranking.h"
#include "kvfit/sources.h"
#include "kvfit/units.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit::cli {
namespace {

std::vector<rank_candidate> local_candidates(const local_roots & roots) {
    std::vector<rank_candidate> out;
    for (const auto & l : find_local_models(roots)) {
        rank_candidate c;
        c.name = l.spec;
        c.source = l.path;
        try {
            c.model = load_local_model(l, roots, c.warn);
        } catch (const error & e) {
            c.error = e.what();
        }
        out.push_back(std::move(c));
    }
    return out;
}

void print_catalog(const rank_filter & f, bool json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    size_t w = 36;
    for (const auto & e : catalog()) w = std::max(w, e.name.size());
    std::string out = fmt::format("{:<{}} {}\n", "name", w, "Hugging Face id");
    for (const auto & c : catalog_candidates()) {
        if (!rank_filter_matches(f, c)) continue;
        out += fmt::format("{:<{}} {}\n", c.name, w, c.hf_id);
        j.push_back({{"name", c.name}, {"hf_id", c.hf_id}});
    }
    fmt::print("{}", json ? j.dump() + "\n" : out); // unfiltered: the document GET /v1/models serves
}

void print_local(const local_roots & roots, const rank_filter & f, bool json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    std::string out;
    for (const auto & l : find_local_models(roots)) {
        rank_candidate c;
        c.name = l.spec;
        if (!f.name.empty() && !rank_filter_matches(rank_filter{f.name, "", 0, 0, 0}, c)) continue;
        out += fmt::format("{:<10} {:>10}  {}\n", l.store, human_bytes(l.bytes), l.spec);
        j.push_back({{"spec", l.spec}, {"store", l.store}, {"path", l.path}, {"bytes", l.bytes}});
    }
    if (out.empty()) out = "no models found in the local stores (Ollama, the Hugging Face hub cache, llama.cpp's cache, LM Studio)\n";
    fmt::print("{}", json ? j.dump(2) + "\n" : out + "Add --gpu to plan each for your GPUs.\n");
}

} // namespace

void add_list_flags(CLI::App & app, list_options & o) {
    app.add_flag("--local", o.local, "--list: the models on disk (Ollama, the Hugging Face hub cache, llama.cpp's cache, LM Studio)");
    app.add_option("--family", o.family, "--list: only this architecture family (qwen35, llama, deepseek2, ...)")->type_name("FAMILY");
    app.add_option("--min-params", o.min_params, "--list: at least this many parameters: 7B, 500M")->type_name("COUNT");
    app.add_option("--max-params", o.max_params, "--list: at most this many parameters: 70B")->type_name("COUNT");
    app.add_option("--min-context", o.min_context, "--list: a training context of at least this many tokens")->type_name("N");
}

int run_list(const plan_request & q, const list_options & o, bool json, const std::string & cpu_bandwidth) {
    rank_filter f;
    f.name = q.model;
    f.family = o.family;
    if (!o.min_params.empty()) f.min_params = parse_param_count("--min-params", o.min_params);
    if (!o.max_params.empty()) f.max_params = parse_param_count("--max-params", o.max_params);
    if (!o.min_context.empty()) f.min_context = parse_flag_count("--min-context", o.min_context, 1, 1ull << 40);
    const local_roots roots = local_roots_from_env();
    if (q.gpu.empty()) {
        if (o.local) print_local(roots, f, json);
        else print_catalog(f, json);
        return 0;
    }
    rank_settings s;
    s.runtime = q.runtime;
    s.flags = q.flags;
    s.weights = q.weights;
    s.speed = speed_settings_from(cpu_bandwidth);
    find_runtime(s.runtime).check_flags(s.flags); // flag errors before the GPUs are detected
    machine mc{gpus_from_option(q.gpu)};
    const auto rows = rank_models(o.local ? local_candidates(roots) : catalog_candidates(), mc, s, f);
    fmt::print("{}", json ? ranking_json(rows, mc, s).dump(2) + "\n" : render_ranking_text(rows, mc, s));
    return 0;
}

} // namespace kvfit::cli
