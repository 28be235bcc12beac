#pragma once
// Command-line conventions shared by kvfit's front end (app/main.cpp): `kvfit help`, `--version`, llama.cpp's
// -hf spelling of a Hub model, one message for an option given twice, and value types shown in --help.
#include "kvfit/remote.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace kvfit::cli {

/// `kvfit --version`: the version and the llama.cpp releases whose rules kvfit carries, e.g.
///   kvfit 0.1.0
///   llama.cpp rules: v0.5.0 (node-llama-cpp 3.22.1, the default), 5b4ebc5 (node-llama-cpp 3.21.1); --llamacpp-version picks
std::string version_text();

/// `kvfit help [exec|explain|serve]` and `kvfit --version` / `kvfit -V` anywhere before `--`: the exit status
/// (0) once printed, std::nullopt for any other command line. `main_help` prints the main command's help.
std::optional<int> handle_help_and_version(int argc, char ** argv, const std::function<void()> & main_help);

/// `kvfit --version` / `kvfit -V` anywhere before `--`: prints version_text() and returns 0; std::nullopt otherwise.
/// main() calls it before it builds its option tables, so a version query costs little more than a process start.
std::optional<int> handle_version(int argc, char ** argv);

/// The model llama.cpp's `-hf org/name[:QUANT]` (with `-hff FILE` overriding the quantization) names:
/// "hf:org/name[:QUANT]" (llama.cpp's default quantization, Q4_K_M, is also kvfit's when the repository holds
/// several GGUF files). "" when `repo` is empty. Throws kvfit::error for -hff without -hf.
std::string hf_model_from_flags(const std::string & repo, const std::string & file);

/// Throws kvfit::error "--gpu given 2 times ('8GiB', '24GiB'): give it once" when an option that takes one value
/// appears more than once in `args` (as typed, before any rewriting: the message names the spelling used).
/// Flags without a value and the repeatable -c and -ot are not counted. `canonical` maps a spelling to the
/// option's long name ("-fa" -> "--flash-attn").
void refuse_repeated_options(const CLI::App & app, int argc, char ** argv,
                             const std::function<std::string(const std::string &)> & canonical);

/// Give main's own options that take a value their type in --help ("--gpu GPUS", "--weights-size SIZE") instead of
/// CLI11's TEXT (the values are read as text and checked by kvfit). The runtimes' flags get theirs from their tables
/// when registered ("-c,--ctx-size INT[,INT...]", "--margin SIZE": flag_spec::value_name, add_runtime_flags).
void name_value_types(CLI::App & app);

/// remote_options::progress for the CLI, on stderr: on a terminal one line rewritten in place
/// ("kvfit: hf:org/name/model.gguf: 3.20 MiB of 6.40 MiB, 1.4 s"), elsewhere one line when a transfer turns slow
/// and one when it ends.
std::function<void(const transfer_progress &)> stderr_progress();

} // namespace kvfit::cli
