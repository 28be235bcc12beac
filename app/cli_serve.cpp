// `kvfit serve`: flags, bind, print the address, serve (src/kvfit/server.h has the routes).
#include "cli_serve.h"

#include "kvfit/error.h"
#include "kvfit/printable.h"
#include "kvfit/server.h"

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <fmt/format.h>

namespace kvfit::app {
namespace {

kvfit::server * g_server = nullptr; // for the signal handler: stop serving, let run_serve return

extern "C" void on_signal(int) {
    if (g_server) g_server->stop();
}

} // namespace

int run_serve(int argc, char ** argv) {
    CLI::App app{"kvfit serve: the web page and the JSON API (POST /v1/plan, GET /v1/models, GET /v1/gpus) over "
                 "HTTP. Listens on loopback unless --host says otherwise. See docs/api.md."};
    server_options o;
    app.add_option("--port", o.port, "TCP port (default 8080; 0 = any free port, printed)")->check(CLI::Range(0, 65535));
    app.add_option("--host", o.host, "address to listen on (default 127.0.0.1; 0.0.0.0 = every interface)")->type_name("ADDR");
    app.add_option("--threads", o.n_threads, "requests handled at once (default 4)")->check(CLI::Range(1, 64));
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &) {
        fmt::print("{}", app.help());
        return 0;
    } catch (const CLI::ParseError & e) {
        fmt::print(stderr, "kvfit serve: {}\n", kvfit::printable(e.what(), false));
        return 2;
    }
    try {
        kvfit::server s(o);
        const int port = s.bind();
        const std::string shown = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
        fmt::print("kvfit: serving on http://{}:{}/ (Ctrl-C stops)\n", shown, port);
        std::fflush(stdout);
        g_server = &s;
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        const bool ok = s.run();
        g_server = nullptr;
        return ok ? 0 : 2;
    } catch (const kvfit::error & e) {
        fmt::print(stderr, "kvfit: {}\n", kvfit::printable(e.what(), false)); // one line, whatever it quotes
        return 2;
    }
}

} // namespace kvfit::app
