#pragma once
// The `exec` and `explain` subcommands and the small hooks app/main.cpp calls (--gpu auto, --speed settings).
#include "kvfit/runtime.h"
#include "kvfit/serving_log.h"
#include "kvfit/speed.h"

#include <fstream>
#include <string>
#include <vector>

namespace kvfit::cli {

/// True for "exec" and "explain": main() hands such a command line to main_subcommand before its own parsing
/// (the command after `exec --` must reach the launched program untouched, so main's flag rewriting must not see it).
bool is_subcommand(const char * arg);

/// Run `kvfit exec ...` or `kvfit explain ...` (argv as main received it). Returns the exit status: exec's is the
/// launched command's (it replaces kvfit), 3 when the command does not fit, 2 on bad input; explain's is 0 when
/// every line matches, 1 when some differ, 2 on bad input.
int main_subcommand(int argc, char ** argv);

/// `path` opened for reading as explain reads a log: a regular file of at most 256 MiB; else kvfit::error ("no such
/// file", "not a regular file", "a log over 256 MiB is not read", "cannot open").
std::ifstream open_log_file(const std::string & path);

/// True when the file at `path` is a vLLM, SGLang, Ollama or mlx-lm log (detect_serving_engine over its first 4 MiB).
bool is_serving_log_file(const std::string & path);

/// `kvfit explain LOG` for a serving engine's log (app/cli_explain_serving.cpp): the model is `model_spec` or the one
/// the log names, `inputs` the --gpu and --assume values. Returns 0 when every row matches, 1 when some differ;
/// throws kvfit::error for bad input.
int run_explain_serving(const std::string & path, const std::string & model_spec, const serving_inputs & inputs);

/// `--gpu` for the main command: "auto" detects (printing what it found to stderr), anything else is
/// kvfit::parse_gpu_list.
std::vector<device_spec> gpus_from_option(const std::string & gpu);

/// Speed settings from `--cpu-bandwidth` (empty: the default).
speed_settings speed_settings_from(const std::string & cpu_bandwidth);

} // namespace kvfit::cli
