// The HTTP/1.1 layer of `kvfit serve` (src/server/http.h). One thread polls the listening socket and every
// connection, reading requests and writing answers without blocking; a request goes to the workers only once it
// has arrived whole, so a client that stalls mid-request (or never sends one) holds no worker and is dropped at
// its deadline. Answers go back to the polling thread, which writes them as the client takes them.
#include "server/http.h"

#include "kvfit/error.h"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fmt/format.h>
#include <list>
#include <mutex>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace kvfit::detail {
namespace {

using clock = std::chrono::steady_clock;

std::string lower(std::string_view s) {
    std::string out(s);
    for (char & c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool is_token_char(unsigned char c) {
    return std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// Percent-decoding of a path; false for a malformed escape or a NUL.
bool percent_decode(std::string_view in, std::string & out) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        if (i + 2 >= in.size() || hex(in[i + 1]) < 0 || hex(in[i + 2]) < 0) return false;
        const char c = char(hex(in[i + 1]) * 16 + hex(in[i + 2]));
        if (c == '\0') return false;
        out += c;
        i += 2;
    }
    return true;
}

http_parse bad(int status, std::string message) {
    http_parse p;
    p.st = http_parse::state::bad;
    p.status = status;
    p.message = std::move(message);
    return p;
}

const char * reason(int status) {
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
    }
}

} // namespace

std::string_view http_request::header(std::string_view name) const {
    for (const auto & [k, v] : headers) {
        if (k == name) return v;
    }
    return {};
}

http_parse parse_http_request(std::string_view buf, size_t max_header_bytes, size_t max_body_bytes) {
    // Blank lines before a request are ignored (RFC 9112 2.2).
    size_t start = 0;
    while (start < buf.size() && (buf[start] == '\r' || buf[start] == '\n')) ++start;
    const size_t window = std::min(buf.size(), start + max_header_bytes + 4);
    size_t end = std::string_view::npos, body_at = 0;
    for (size_t i = start; i < window; ++i) { // the header section ends at the first empty line (CRLF or bare LF)
        if (buf[i] != '\n') continue;
        if (i + 1 < buf.size() && buf[i + 1] == '\n') { end = i + 1, body_at = i + 2; break; }
        if (i + 2 < buf.size() && buf[i + 1] == '\r' && buf[i + 2] == '\n') { end = i + 1, body_at = i + 3; break; }
    }
    if (end == std::string_view::npos) {
        if (buf.size() - start > max_header_bytes) {
            return bad(431, fmt::format("request: header section exceeds the limit of {} bytes", max_header_bytes));
        }
        return {};
    }
    if (end - start > max_header_bytes) {
        return bad(431, fmt::format("request: header section exceeds the limit of {} bytes", max_header_bytes));
    }
    http_parse p;
    http_request & r = p.req;
    std::vector<std::string_view> lines;
    for (size_t at = start; at < end;) {
        const size_t nl = buf.find('\n', at);
        std::string_view line = buf.substr(at, nl - at);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        at = nl + 1;
    }
    // request line: METHOD SP target SP HTTP/1.x
    const std::string_view rl = lines.front();
    const size_t sp1 = rl.find(' '), sp2 = sp1 == std::string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || rl.find(' ', sp2 + 1) != std::string_view::npos) {
        return bad(400, "request: malformed request line");
    }
    const std::string_view method = rl.substr(0, sp1), target = rl.substr(sp1 + 1, sp2 - sp1 - 1), version = rl.substr(sp2 + 1);
    if (method.empty() || !std::all_of(method.begin(), method.end(), [](unsigned char c) { return is_token_char(c); })) {
        return bad(400, "request: malformed method");
    }
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        return bad(version.starts_with("HTTP/") ? 505 : 400, "request: only HTTP/1.0 and HTTP/1.1 are served");
    }
    if (target.empty() || target.front() != '/' ||
        std::any_of(target.begin(), target.end(), [](unsigned char c) { return c <= 0x20 || c >= 0x7f; })) {
        return bad(400, "request: the target must be a path starting with '/'");
    }
    r.method = std::string(method);
    const size_t q = target.find('?');
    if (!percent_decode(target.substr(0, q), r.path)) return bad(400, "request: malformed percent escape in the path");
    if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
    // headers
    if (lines.size() > 101) return bad(431, "request: more than 100 header lines");
    for (size_t i = 1; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        const size_t colon = line.find(':');
        if (colon == 0 || colon == std::string_view::npos || line.front() == ' ' || line.front() == '\t') {
            return bad(400, "request: malformed header line");
        }
        const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
        if (!std::all_of(name.begin(), name.end(), [](unsigned char c) { return is_token_char(c); }) ||
            std::any_of(value.begin(), value.end(), [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; })) {
            return bad(400, "request: malformed header line");
        }
        r.headers.emplace_back(lower(name), std::string(value));
    }
    const std::string connection = lower(r.header("connection"));
    r.keep_alive = version == "HTTP/1.1" ? connection.find("close") == std::string::npos
                                         : connection.find("keep-alive") != std::string::npos;
    if (!r.header("transfer-encoding").empty()) {
        return bad(411, "request: chunked bodies are not read; send the body with a Content-Length (curl -d or --data-binary)");
    }
    uint64_t length = 0;
    bool have_length = false;
    for (const auto & [k, v] : r.headers) {
        if (k != "content-length") continue;
        uint64_t n = 0;
        const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || (have_length && n != length)) {
            return bad(400, "request: malformed Content-Length");
        }
        length = n, have_length = true;
    }
    if (length > max_body_bytes) {
        return bad(413, fmt::format("request: body exceeds the limit of {} bytes ({} bytes sent)", max_body_bytes, length));
    }
    if (buf.size() - body_at < length) {
        http_parse more;
        more.headers_done = true;
        more.expect_continue = lower(r.header("expect")) == "100-continue";
        return more;
    }
    r.body = std::string(buf.substr(body_at, length));
    p.st = http_parse::state::done;
    p.consumed = body_at + length;
    return p;
}

std::string http_serialize(const http_reply & r, bool keep_alive, bool head_only) {
    std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n", r.status, reason(r.status),
                                  r.content_type, r.body.size());
    for (const auto & [k, v] : r.headers) out += fmt::format("{}: {}\r\n", k, v);
    out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    if (!head_only) out += r.body;
    return out;
}

// --- the server ------------------------------------------------------------------------------------------------

namespace {

struct connection {
    int fd = -1;
    enum class phase { reading, computing, writing, draining } ph = phase::reading;
    std::string in;                 // bytes received, not yet consumed by a request
    std::string out;                // answer bytes not yet written
    size_t out_at = 0;
    clock::time_point deadline;     // of the current phase (none while computing)
    bool receiving = false;         // reading: a byte of the next request has arrived
    bool continue_sent = false;     // "100 Continue" written for this request
    bool close_after = false;       // close once `out` is written
    size_t served = 0;              // requests answered on this connection
};

struct job {
    connection * c;
    http_request req;
};

struct done {
    connection * c;
    std::string bytes;
    bool close_after;
};

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

} // namespace

struct http_server::impl {
    http_limits lim;
    handler h;
    std::function<http_reply(int, const std::string &)> on_error;
    int listen_fd = -1;
    int wake_fd = -1;              // eventfd: workers and stop() wake the polling thread
    std::atomic<bool> stopping{false}, is_running{false};
    std::list<connection> conns;
    std::mutex m;
    std::condition_variable ready;
    std::deque<job> jobs;
    std::vector<done> finished;
    std::vector<std::thread> workers;

    void wake() {
        const uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
    }

    void work() {
        for (;;) {
            job j;
            {
                std::unique_lock lock(m);
                ready.wait(lock, [&] { return !jobs.empty() || stopping; });
                if (stopping) return;
                j = std::move(jobs.front());
                jobs.pop_front();
            }
            http_reply reply;
            try {
                reply = h(j.req);
            } catch (const std::exception & e) {
                reply = on_error(500, fmt::format("internal error: {}", e.what()));
            }
            const bool keep = j.req.keep_alive && j.c->served + 1 < lim.max_requests_per_connection;
            std::string bytes = http_serialize(reply, keep, j.req.method == "HEAD");
            {
                std::lock_guard lock(m);
                finished.push_back({j.c, std::move(bytes), !keep});
            }
            wake();
        }
    }

    // An answer of the layer itself (400, 408, 413, ...); the connection closes after it.
    void answer_error(connection & c, int status, const std::string & message) {
        c.out = http_serialize(on_error(status, message), false);
        c.out_at = 0;
        c.close_after = true;
        c.ph = connection::phase::writing;
        c.deadline = clock::now() + lim.write_timeout;
    }

    void start_reading(connection & c) {
        c.ph = connection::phase::reading;
        c.receiving = !c.in.empty();
        c.continue_sent = false;
        c.deadline = clock::now() + (c.receiving ? lim.request_timeout : lim.idle_timeout);
        parse(c);
    }

    // Look at the buffered bytes: dispatch a complete request, answer a bad one, or wait for more.
    void parse(connection & c) {
        if (c.in.empty()) return;
        http_parse p = parse_http_request(c.in, lim.max_header_bytes, lim.max_body_bytes);
        if (p.st == http_parse::state::bad) return answer_error(c, p.status, p.message);
        if (p.st == http_parse::state::need_more) {
            if (p.expect_continue && !c.continue_sent) {
                c.continue_sent = true;
                static const char k_continue[] = "HTTP/1.1 100 Continue\r\n\r\n";
                [[maybe_unused]] const ssize_t n = ::send(c.fd, k_continue, sizeof k_continue - 1, MSG_NOSIGNAL);
            }
            return;
        }
        c.in.erase(0, p.consumed);
        c.ph = connection::phase::computing;
        {
            std::lock_guard lock(m);
            jobs.push_back({&c, std::move(p.req)});
        }
        ready.notify_one();
    }

    void on_readable(connection & c) {
        char buf[65536];
        bool eof = false;
        for (;;) {
            const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
            if (n > 0) {
                if (!c.receiving) {
                    c.receiving = true;
                    c.deadline = clock::now() + lim.request_timeout;
                }
                c.in.append(buf, size_t(n));
                if (c.in.size() > lim.max_header_bytes + lim.max_body_bytes + 8) break; // parse answers 413/431
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            if (n < 0 && errno == EINTR) continue;
            eof = true; // end of stream or an error: nothing more will come
            break;
        }
        parse(c);
        // A client that sent its request and shut down its side still gets the answer, then the connection closes.
        if (eof) c.close_after = true;
        if (eof && c.ph == connection::phase::reading) c.out.clear();
    }

    void on_writable(connection & c) {
        while (c.out_at < c.out.size()) {
            const ssize_t n = ::send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_NOSIGNAL);
            if (n > 0) {
                c.out_at += size_t(n);
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
            if (n < 0 && errno == EINTR) continue;
            c.close_after = true;
            c.out.clear();
            c.out_at = 0;
            return;
        }
        c.out.clear();
        c.out_at = 0;
        if (!c.close_after) start_reading(c);
    }

    static bool is_polled(const connection & c) { return c.ph != connection::phase::computing; }

    void accept_all() {
        for (;;) {
            const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) return; // EAGAIN, or out of descriptors: the kernel's backlog holds the rest
            if (conns.size() >= lim.max_connections) {
                const std::string busy = http_serialize(on_error(503, "serve: too many open connections; retry"), false);
                [[maybe_unused]] const ssize_t n = ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
                ::close(fd);
                continue;
            }
            connection & c = conns.emplace_back();
            c.fd = fd;
            start_reading(c);
        }
    }

    void collect_finished() {
        std::vector<done> ready_now;
        {
            std::lock_guard lock(m);
            ready_now.swap(finished);
        }
        for (auto & d : ready_now) {
            connection & c = *d.c;
            ++c.served;
            c.out = std::move(d.bytes);
            c.out_at = 0;
            c.close_after = c.close_after || d.close_after;
            c.ph = connection::phase::writing;
            c.deadline = clock::now() + lim.write_timeout;
            on_writable(c);
        }
    }

    void expire(clock::time_point now) {
        for (connection & c : conns) {
            if (c.ph == connection::phase::computing || now < c.deadline) continue;
            if (c.ph == connection::phase::reading && c.receiving && !c.close_after) {
                answer_error(c, 408, fmt::format("request: not received whole within {} s", lim.request_timeout.count() / 1000.0));
                on_writable(c);
                continue;
            }
            // idle, or a client that does not take its answer, or done draining: close now
            c.ph = connection::phase::draining;
            c.close_after = true;
        }
    }

    // Connections to close: after their answer, the write side is shut and what the client still sends (the body
    // of a request refused with 413) is read and dropped for a moment, so that the kernel does not reset the
    // connection and destroy the answer before the client has read it.
    void close_finished() {
        for (auto it = conns.begin(); it != conns.end();) {
            connection & c = *it;
            const bool done_writing = c.out_at >= c.out.size();
            if (c.close_after && c.ph == connection::phase::writing && done_writing) {
                ::shutdown(c.fd, SHUT_WR);
                c.ph = connection::phase::draining;
                c.deadline = clock::now() + std::chrono::seconds(2);
                c.close_after = false;
            }
            if (c.close_after && (c.ph == connection::phase::reading || c.ph == connection::phase::draining)) {
                ::close(c.fd);
                it = conns.erase(it);
            } else {
                ++it;
            }
        }
    }

    void drain(connection & c) {
        char buf[65536];
        for (;;) {
            const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
            if (n > 0) continue;
            if (n < 0 && errno == EINTR) continue;
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) c.close_after = true;
            return;
        }
    }

    bool loop() {
        for (size_t i = 0; i < std::max<size_t>(1, lim.n_threads); ++i) workers.emplace_back([this] { work(); });
        bool ok = true;
        std::vector<pollfd> fds;
        std::vector<connection *> polled;
        while (!stopping) {
            fds.clear(), polled.clear();
            fds.push_back({wake_fd, POLLIN, 0});
            fds.push_back({listen_fd, POLLIN, 0});
            clock::time_point next = clock::now() + std::chrono::seconds(1);
            size_t buffered = 0;
            for (const connection & c : conns) buffered += c.in.size();
            const bool may_read = buffered < lim.max_buffered_bytes; // 256 uploads of 24 MiB must not take 6 GiB
            for (connection & c : conns) {
                if (!is_polled(c)) continue;
                const short events = c.ph == connection::phase::writing ? POLLOUT
                                     : c.ph == connection::phase::reading && !may_read ? 0 : POLLIN;
                fds.push_back({c.fd, events, 0});
                polled.push_back(&c);
                next = std::min(next, c.deadline);
            }
            const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - clock::now()).count();
            const int n = ::poll(fds.data(), fds.size(), int(std::clamp<long long>(wait + 1, 0, 1000)));
            if (n < 0 && errno != EINTR) {
                ok = false;
                break;
            }
            if (fds[0].revents) {
                uint64_t v;
                [[maybe_unused]] const ssize_t r = ::read(wake_fd, &v, sizeof v);
            }
            if (stopping) break;
            collect_finished();
            for (size_t i = 0; i < polled.size(); ++i) {
                const short ev = fds[i + 2].revents;
                connection & c = *polled[i];
                if (!ev || !is_polled(c)) continue;
                if (c.ph == connection::phase::writing) {
                    if (ev & (POLLOUT | POLLERR | POLLHUP)) on_writable(c);
                } else if (c.ph == connection::phase::draining) {
                    drain(c);
                } else if (ev & (POLLIN | POLLERR | POLLHUP)) {
                    if (fds[i + 2].events) {
                        on_readable(c);
                    } else { // hung up while held back
                        c.close_after = true;
                        c.out.clear();
                    }
                }
            }
            if (fds[1].revents & POLLIN) accept_all();
            if (fds[1].revents & (POLLERR | POLLNVAL)) {
                ok = false;
                break;
            }
            expire(clock::now());
            close_finished();
        }
        stopping = true;
        ready.notify_all();
        for (auto & t : workers) t.join();
        workers.clear();
        for (connection & c : conns) ::close(c.fd);
        conns.clear();
        jobs.clear(), finished.clear();
        return ok;
    }
};

http_server::http_server(http_limits limits, handler h, std::function<http_reply(int, const std::string &)> on_error)
    : p_(std::make_unique<impl>()) {
    p_->lim = limits;
    p_->h = std::move(h);
    p_->on_error = std::move(on_error);
    p_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p_->wake_fd < 0) throw error(fmt::format("serve: eventfd: {}", std::strerror(errno)));
}

http_server::~http_server() {
    stop();
    if (p_->listen_fd >= 0) ::close(p_->listen_fd);
    ::close(p_->wake_fd);
}

int http_server::bind(const std::string & host, int port) {
    const std::string where = fmt::format("serve: cannot listen on {}:{}", host, port);
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
    const std::string service = std::to_string(port);
    int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
    // A name ("localhost") is looked up; something shaped like an address ("256.1.1.1") is refused at once.
    if (rc == EAI_NONAME && std::any_of(host.begin(), host.end(), [](unsigned char c) { return std::isalpha(c); })) {
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
    }
    if (rc != 0) throw error(fmt::format("{}: {}", where, ::gai_strerror(rc)));
    const int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    int yes = 1;
    // SO_REUSEADDR only (a restart binds while old connections linger in TIME_WAIT); never SO_REUSEPORT, which
    // would let a second `kvfit serve` listen on the same port and take half of the requests.
    if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (fd >= 0 && res->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &yes, sizeof yes);
    const bool ok = fd >= 0 && ::bind(fd, res->ai_addr, res->ai_addrlen) == 0 && ::listen(fd, 128) == 0;
    const int err = errno;
    ::freeaddrinfo(res);
    if (!ok) {
        if (fd >= 0) ::close(fd);
        throw error(fmt::format("{}: {}", where, err == EADDRINUSE ? "address already in use (another server on this port?)"
                                                                   : std::strerror(err)));
    }
    set_nonblocking(fd);
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    if (p_->listen_fd >= 0) ::close(p_->listen_fd);
    p_->listen_fd = fd;
    return a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 &>(a).sin6_port)
                                   : ntohs(reinterpret_cast<sockaddr_in &>(a).sin_port);
}

bool http_server::run() {
    if (p_->listen_fd < 0) return false;
    p_->is_running = true;
    const bool ok = p_->loop();
    p_->is_running = false;
    return ok;
}

void http_server::stop() {
    p_->stopping = true; // an atomic store and a write(2): safe in a signal handler
    p_->wake();
}

bool http_server::running() const { return p_->is_running; }

} // namespace kvfit::detail
