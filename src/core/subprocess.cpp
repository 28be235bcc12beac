// External tools with a deadline and an output cap (src/core/subprocess.h): posix_spawnp into a process group of
// its own, stdout read through poll() against the deadline, the group killed when the tool overstays or overflows.
#include "core/subprocess.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char ** environ;

namespace kvfit::detail {
namespace {

using clock = std::chrono::steady_clock;

int remaining_ms(clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    return left <= 0 ? 0 : int(std::min<long long>(left, 60'000));
}

// Wait for `pid` until the deadline; kill its group when it is still there. Returns the wait status.
int reap(pid_t pid, clock::time_point deadline, bool & killed) {
    int status = 0;
    for (;;) {
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return 0;
        if (clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    killed = true;
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return status;
}

} // namespace

tool_result run_tool(const std::vector<std::string> & argv, std::chrono::milliseconds timeout, size_t cap_bytes) {
    tool_result out;
    int fds[2];
    if (argv.empty() || ::pipe2(fds, O_CLOEXEC) != 0) {
        out.outcome = tool_outcome::not_found;
        return out;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0); // a group of its own: kill(-pid) reaches the tool's children too
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char *> args;
    for (const auto & a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        out.outcome = tool_outcome::not_found;
        return out;
    }
    const clock::time_point deadline = clock::now() + timeout;
    bool stop = false;
    char buf[16384];
    while (!stop) {
        pollfd p{fds[0], POLLIN, 0};
        const int n = ::poll(&p, 1, remaining_ms(deadline));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            out.outcome = tool_outcome::timed_out;
            break;
        }
        const ssize_t got = ::read(fds[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; // end of output
        const size_t room = cap_bytes - out.output.size();
        out.output.append(buf, std::min<size_t>(size_t(got), room));
        if (size_t(got) > room) {
            out.outcome = tool_outcome::too_much_output;
            stop = true;
        }
    }
    ::close(fds[0]);
    bool killed = false;
    const int status = reap(pid, out.outcome == tool_outcome::exited ? deadline : clock::now(), killed);
    if (out.outcome != tool_outcome::exited) return out;
    if (killed) out.outcome = tool_outcome::timed_out; // closed its output, then stayed
    else if (WIFEXITED(status)) out.exit_status = WEXITSTATUS(status);
    else {
        out.outcome = tool_outcome::killed;
        out.exit_status = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    return out;
}

std::string describe_tool_failure(const tool_result & r, std::chrono::milliseconds timeout, size_t cap_bytes) {
    switch (r.outcome) {
    case tool_outcome::exited: return r.exit_status == 0 ? "" : fmt::format("exit status {}", r.exit_status);
    case tool_outcome::not_found: return "not found";
    case tool_outcome::timed_out: return fmt::format("no answer within {:g} s (killed)", double(timeout.count()) / 1000);
    case tool_outcome::too_much_output: return fmt::format("printed more than {} bytes (killed)", cap_bytes);
    case tool_outcome::killed: return fmt::format("killed by signal {}", r.exit_status);
    }
    return "";
}

std::chrono::milliseconds tool_timeout(std::chrono::milliseconds fallback) {
    const char * v = std::getenv("KVFIT_TOOL_TIMEOUT");
    if (!v || !*v) return fallback;
    char * end = nullptr;
    const double s = std::strtod(v, &end);
    if (*end != '\0' || !(s >= 0.1) || s > 600) return fallback;
    return std::chrono::milliseconds(long(s * 1000));
}

} // namespace kvfit::detail
