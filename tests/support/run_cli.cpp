#include "support/run_cli.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace kvfit::test {
namespace {

std::string slurp(const std::string & path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::filesystem::path temp_dir() {
    auto dir = std::filesystem::temp_directory_path() / ("kvfit-tests-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return dir;
}

} // namespace

cli_result run_kvfit(const std::string & args) { return run_kvfit_env("", args); }

cli_result run_kvfit_env(const std::string & env, const std::string & args) {
    static int counter = 0;
    const auto dir = temp_dir();
    const std::string out = (dir / ("out" + std::to_string(counter))).string();
    const std::string err = (dir / ("err" + std::to_string(counter++))).string();
    const std::string cmd = env + (env.empty() ? "" : " ") + std::string(KVFIT_BINARY) + " " + args + " >" + out + " 2>" + err;
    const int rc = std::system(cmd.c_str());
    cli_result r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

std::string write_temp(const std::string & name, const std::string & text) {
    const auto path = temp_dir() / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

} // namespace kvfit::test
