// `kvfit serve`: runs kvfit-serve (app/serve_main.cpp), installed beside kvfit (cmake/server.cmake), in place of this
// process: the HTTP server's libraries (libmicrohttpd and what it links) are then mapped only by the server.
#include "cli_fit_params.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace kvfit::cli {

int exec_serve(int argc, char ** argv) {
#ifndef KVFIT_WITH_SERVER
    (void)argc, (void)argv;
    fmt::print(stderr, "kvfit: serve: this kvfit was built with KVFIT_WITH_SERVER=OFF (no HTTP server)\n");
    return 2;
#else
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string helper = ((ec ? std::filesystem::path(".") : self.parent_path()) / "kvfit-serve").string();
    std::vector<char *> args(argv, argv + argc);
    args.push_back(nullptr);
    execv(helper.c_str(), args.data());
    fmt::print(stderr, "kvfit: serve: cannot run {}: {}\n", helper, std::strerror(errno));
    return 2;
#endif
}

} // namespace kvfit::cli
