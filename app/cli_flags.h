#pragma once
// Every runtime's flags on the command line, registered from the registry (include/kvfit/runtime.h: runtimes()),
// spelled as each runtime spells them, with their owners: a flag of another runtime is an error that names the
// right one ("--max-model-len is a vLLM flag; add --runtime vllm"). main.cpp registers them (add_runtime_flags),
// checks them after parsing (check_owners) and hands the selected runtime's values to the planner (values_of).
// No memory rule lives here.
#include "kvfit/runtime.h"

#include <CLI/CLI.hpp>

#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kvfit::cli {

/// The command line's runtime flags: --runtime and one entry per flag name of any runtime.
struct runtime_flags {
    /// One registered flag and the runtimes that accept it (two runtimes may share a name: --kv-cache-dtype).
    struct entry {
        flag_spec spec;                          ///< the first owner's spelling
        std::vector<const runtime_info *> owners;///< in registry order
        CLI::Option * option = nullptr;          ///< as registered
        std::string text;                        ///< the value (text, count, size, fraction)
        std::vector<std::string> list;           ///< the values (list)
        bool on = false;                         ///< given (boolean)
    };
    std::string runtime = "llama.cpp";           ///< --runtime
    std::deque<entry> entries;                   ///< stable addresses: CLI11 writes into them
};

/// Register --runtime (its choices from the registry) and every runtime's flags on `app`; with `words` (the command
/// line's option spellings, canonical: "--ctx-size", "-c") only the flags named there, since CLI11 checks each new
/// option's names against all before it (quadratic in the ~250 flags: most of a plan's start-up). Help needs all
/// (words = nullptr). A flag left out is unknown to the parser, as any misspelt flag is.
void add_runtime_flags(CLI::App & app, runtime_flags & f, const std::vector<std::string> * words = nullptr);

/// The runtimes' spellings CLI11 is not given, with their long names: single-dash aliases longer than one letter
/// ("-ctk", "-ngl", "-tp": CLI11 takes one letter after a single dash) and the alternates (flag_spec::alternates:
/// llama-server's "--gpu-layers" for --n-gpu-layers). main.cpp rewrites these before parsing, so --help lists each
/// flag once. The alternates are the selected runtime's only (`runtime`, a registry name; llama.cpp when none is
/// given): SGLang's --tensor-parallel-size is its --tp, while vLLM's --tensor-parallel-size is vLLM's own name.
std::vector<std::pair<std::string, std::string>> long_aliases(std::string_view runtime);

/// After parsing: throws kvfit::error for a given flag that the selected runtime does not accept. `common` names
/// main's flags every runtime takes ("--gpu", "--json", "model", ...); main's other flags are llama.cpp's (--speed).
void check_owners(const CLI::App & app, const runtime_flags & f, const std::vector<std::string> & common);

/// After CLI11 refused words it did not expect (CLI::ExtrasError): one line naming the first, read from argv in order
/// (CLI11's own message lists them reversed, as main.cpp hands it the arguments). An unknown flag: "unknown flag
/// --swap-spce (kvfit --help lists them; ...)", with one MODEL or a set's several (words that are no flag are MODELs or
/// values); else "unexpected argument (kvfit --help lists the usage)".
/// `canonical` rewrites llama.cpp's multi-letter single-dash flags (-ngl) to the names registered.
std::string unexpected_argument(const CLI::App & app, int argc, char ** argv,
                                const std::function<std::string(const std::string &)> & canonical);

/// --inspect reads a GGUF file's header. For anything else MODEL may be (a config.json, a model directory, a catalog
/// name, hf:org/name) throws kvfit::error saying what it is and what to run instead: "--inspect reads GGUF headers;
/// config.json is a config.json: run kvfit config.json for its layers and plan". A GGUF (or a path that does not
/// exist, which the GGUF reader reports) passes.
void refuse_inspect_of_non_gguf(const std::string & spec);

/// The selected runtime's flags as given, by JSON name (booleans "true", lists one value per occurrence).
flag_values values_of(const runtime_flags & f);

} // namespace kvfit::cli
