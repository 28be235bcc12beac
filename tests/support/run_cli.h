#pragma once
// Runs the kvfit binary (KVFIT_BINARY) with arguments and captures exit status, stdout and stderr.
#include <string>

namespace kvfit::test {

struct cli_result {
    int status = -1;     ///< exit status
    std::string out;     ///< stdout
    std::string err;     ///< stderr
};

/// Run `kvfit <args>` through /bin/sh (args are inserted verbatim: quote them).
cli_result run_kvfit(const std::string & args);

/// Run `<env> kvfit <args>` through /bin/sh: `env` is a list of NAME=value words placed before the binary.
cli_result run_kvfit_env(const std::string & env, const std::string & args);

/// Write `text` to a fresh file under the test temp dir and return its path.
std::string write_temp(const std::string & name, const std::string & text);

} // namespace kvfit::test
