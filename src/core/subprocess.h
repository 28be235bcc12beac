#pragma once
// Running a command-line tool whose output kvfit reads (nvidia-smi, rocm-smi, rsvg-convert) with a deadline and a
// cap on what it prints, so a tool that hangs or prints without end cannot hang kvfit or exhaust its memory.
// Not part of the public API.
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace kvfit::detail {

/// How a run ended.
enum class tool_outcome {
    exited,          ///< exited by itself; see exit_status
    not_found,       ///< no such program on PATH (or not executable)
    timed_out,       ///< still running at the deadline: killed
    too_much_output, ///< printed more than the cap: killed
    killed,          ///< ended by a signal it did not get from us
};

/// The result of run_tool.
struct tool_result {
    tool_outcome outcome = tool_outcome::exited;
    int exit_status = 0;   ///< exit code when outcome is exited
    std::string output;    ///< stdout, at most the cap (what arrived before a kill)
    bool ok() const { return outcome == tool_outcome::exited && exit_status == 0; }
};

/// Run argv[0] (searched on PATH, no shell) with stdin and stderr on /dev/null and stdout captured. The child runs
/// in a process group of its own; at `timeout` or when stdout passes `cap_bytes`, the whole group is killed
/// (SIGKILL) and reaped, so a script's children go too. Throws nothing: a failure to start is `not_found`.
tool_result run_tool(const std::vector<std::string> & argv, std::chrono::milliseconds timeout, size_t cap_bytes);

/// One line for people: "no answer within 10 s (killed)", "printed more than 1048576 bytes (killed)",
/// "not found", "exit status 9", "killed by signal 11"; "" for a run that succeeded.
std::string describe_tool_failure(const tool_result & r, std::chrono::milliseconds timeout, size_t cap_bytes);

/// The deadline for external tools: $KVFIT_TOOL_TIMEOUT in seconds (a decimal, 0.1-600), else `fallback`.
std::chrono::milliseconds tool_timeout(std::chrono::milliseconds fallback);

} // namespace kvfit::detail
