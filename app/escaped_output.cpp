// stdout and stderr through kvfit::printable (app/escaped_output.h), with glibc's fopencookie.
#include "escaped_output.h"

#include "kvfit/printable.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace kvfit::cli {
namespace {

struct sink {
    int fd;
    std::string carry; // the start of a UTF-8 character cut by the stream's buffer
};

bool write_all(int fd, const std::string & bytes) {
    for (size_t at = 0; at < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        at += size_t(n);
    }
    return true;
}

ssize_t on_write(void * cookie, const char * buf, size_t size) {
    sink & s = *static_cast<sink *>(cookie);
    std::string text = s.carry + std::string(buf, size);
    const size_t keep = utf8_incomplete_tail(text);
    s.carry = text.substr(text.size() - keep);
    text.resize(text.size() - keep);
    return write_all(s.fd, printable(text)) ? ssize_t(size) : -1;
}

int on_close(void * cookie) {
    sink * s = static_cast<sink *>(cookie);
    const bool ok = s->carry.empty() || write_all(s->fd, printable(s->carry));
    delete s;
    return ok ? 0 : -1;
}

sink * g_sinks[2] = {nullptr, nullptr};

// exit() flushes the streams (after the atexit functions) but never closes them: flush here, then write what a
// cut character left behind, escaped.
void flush_carries() {
    std::fflush(stdout);
    std::fflush(stderr);
    for (sink * s : g_sinks) {
        if (s && !s->carry.empty()) write_all(s->fd, printable(s->carry)), s->carry.clear();
    }
}

FILE * escaping_stream(int fd) {
    cookie_io_functions_t io{};
    io.write = on_write;
    io.close = on_close;
    sink * s = new sink{fd, {}};
    FILE * f = fopencookie(s, "w", io);
    if (!f) delete s;
    else g_sinks[fd == STDOUT_FILENO ? 0 : 1] = s;
    return f;
}

} // namespace

void escape_standard_streams() {
    std::atexit(flush_carries);
    std::fflush(stdout);
    std::fflush(stderr);
    if (FILE * out = escaping_stream(STDOUT_FILENO)) {
        if (::isatty(STDOUT_FILENO)) std::setvbuf(out, nullptr, _IOLBF, BUFSIZ);
        stdout = out;
    }
    if (FILE * err = escaping_stream(STDERR_FILENO)) {
        std::setvbuf(err, nullptr, _IONBF, 0);
        stderr = err;
    }
}

} // namespace kvfit::cli
