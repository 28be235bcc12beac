#pragma once
// `kvfit fit-params` (app/cli_fit_params.cpp): llama.cpp's llama-fit-params answered from kvfit's plan; and
// `kvfit serve`, which runs the kvfit-serve helper (app/cli_serve_exec.cpp).
#include <string>

namespace kvfit::cli {

/// `kvfit fit-params -m MODEL [-c N] [-fa X] [-ctk T] [-ctv T] [-ngl N] [-ts A,B] [-ot P=CPU] [--fit-target MiB,...]
/// [--fit-ctx N] [--fit-print on|off] [--gpu GPUS]` (argv[0] is "fit-params"): what llama-fit-params prints to
/// stdout. Throws kvfit::error for bad arguments.
std::string fit_params_output(int argc, char ** argv);

/// `kvfit fit-params --help` and `kvfit help fit-params`: the usage line and every flag fit-params reads.
std::string fit_params_help();
/// Run it (-h/--help prints fit_params_help and returns 0): prints fit_params_output, returns 0; or prints a one-line message to stderr and returns 1 (as
/// llama-fit-params exits when it cannot fit or parse).
int run_fit_params(int argc, char ** argv);

/// `kvfit serve ...` (argv[0] "serve"): replaces this process with kvfit-serve from kvfit's own directory, so the
/// HTTP stack is never mapped by kvfit itself. Returns 2 with a message when it cannot (built without the server).
int exec_serve(int argc, char ** argv);

} // namespace kvfit::cli
