#pragma once
// `kvfit serve`: the subcommand's flags and main loop (app/cli_serve.cpp); main.cpp hands over argv.

namespace kvfit::app {

/// Run `kvfit serve [--port N] [--host ADDR] [--threads N]`; argv[0] is "serve". Prints the address it
/// serves on, then serves until killed. Returns the exit status (2 for bad flags or an address in use).
int run_serve(int argc, char ** argv);

} // namespace kvfit::app
