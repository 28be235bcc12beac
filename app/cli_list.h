#pragma once
// `kvfit --list`: the catalog (or the models on disk, --local) ranked for --gpu (include/kvfit/ranking.h), or the
// plain catalog / store listing without GPUs. No memory rule lives here.
#include "kvfit/plan.h"

#include <CLI/CLI.hpp>
#include <string>

namespace kvfit::cli {

/// The --list filters and --local, as typed.
struct list_options {
    bool local = false;                  ///< --local: the models on disk (local.h) instead of the catalog
    std::string family, min_params, max_params, min_context;
};

/// Register --local, --family, --min-params, --max-params and --min-context on `app`.
void add_list_flags(CLI::App & app, list_options & o);

/// Run `kvfit --list [FRAGMENT] ...`: `q` holds the common flags and the runtime's (its model is the name
/// fragment). Prints the table or the JSON; returns the exit status (0). Throws kvfit::error for bad input.
int run_list(const plan_request & q, const list_options & o, bool json, const std::string & cpu_bandwidth);

} // namespace kvfit::cli
