// `kvfit serve` (include/kvfit/server.h) on GNU libmicrohttpd (Debian libmicrohttpd-dev): the routes, the embedded
// page, the worker threads and the bounds. HTTP itself (request line, headers, Content-Length and chunked bodies,
// 100-continue, keep-alive, pipelining, HEAD, malformed requests) is libmicrohttpd's. Ours:
// - the listening socket, bound here without SO_REUSEPORT so that a port in use is an error (libmicrohttpd is given
//   the socket: MHD_OPTION_LISTEN_SOCKET), with the reason in one line;
// - one polling thread (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL) answers GETs at once; a POST's complete
//   body goes to a worker and its connection is suspended (MHD_suspend_connection) until the answer is ready, so
//   a slow plan never holds the polling thread and a stalled client never holds a worker;
// - the deadlines: libmicrohttpd closes a connection idle for MHD_OPTION_CONNECTION_TIMEOUT seconds, which a client
//   sending one byte at a time never is; a watchdog thread shuts down (shutdown(2), libmicrohttpd then closes it)
//   a connection whose request has not arrived whole within request_timeout;
// - the limits on bodies (one request, all requests together) and on open connections (MHD_OPTION_CONNECTION_LIMIT).
#include "kvfit/server.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/sources.h"
#include "server/web_assets.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <strings.h>
#include <deque>
#include <fcntl.h>
#include <fmt/format.h>
#include <functional>
#include <microhttpd.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <set>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace kvfit {
namespace {

using clock_type = std::chrono::steady_clock;

// One connection, as the watchdog sees it (MHD_OPTION_NOTIFY_CONNECTION keeps it in the socket context).
struct connection_state {
    int fd = -1;
    clock_type::time_point deadline = clock_type::time_point::max(); ///< max: a request is being answered
    bool shut = false;
};

// One request (the access handler's *req_cls), from its headers to its answer.
struct request_state {
    connection_state * conn = nullptr;
    std::string body;
    bool too_large = false;   ///< over max_body_bytes: 413 once the body has been read
    size_t expected_bytes = 0; ///< Content-Length as announced (0: none); the body buffer is reserved once from it
    bool busy = false;        ///< over max_buffered_bytes: 503
    bool queued = false;      ///< handed to a worker, connection suspended
    bool answered = false;    ///< a response was queued
    api_response answer;      ///< the worker's answer (valid once the connection is resumed)
};

// A request that must be answered by a worker, and the connection to resume when it is.
struct job {
    MHD_Connection * connection = nullptr;
    request_state * req = nullptr;
    bool chart = false;
    bool list = false; // POST /v1/list (list_api.cpp)
};

std::string reason_of(int err) {
    if (err == EADDRINUSE) return "address already in use (another server on this port?)";
    if (err == EACCES) return "permission denied (ports below 1024 need privileges)";
    return std::strerror(err);
}

// Seconds for MHD_OPTION_CONNECTION_TIMEOUT: whole seconds, rounded up, at least 1.
unsigned int whole_seconds(std::chrono::milliseconds ms) {
    return unsigned(std::max<int64_t>(1, (ms.count() + 999) / 1000));
}

MHD_Result queue(MHD_Connection * c, const api_response & a, const char * cache_control = nullptr) {
    MHD_Response * r = MHD_create_response_from_buffer(a.body.size(), const_cast<char *>(a.body.data()), MHD_RESPMEM_MUST_COPY);
    if (r == nullptr) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a.content_type.c_str());
    if (cache_control) MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, cache_control);
    const MHD_Result ok = MHD_queue_response(c, unsigned(a.status), r);
    MHD_destroy_response(r);
    return ok;
}

} // namespace

struct server::impl {
    server_options opt;
    MHD_Daemon * daemon = nullptr;
    int listen_fd = -1;
    int wake[2] = {-1, -1}; // stop() writes a byte (async-signal-safe); run() reads it
    std::atomic<size_t> buffered{0};

    // workers
    std::mutex jobs_mutex;
    std::condition_variable jobs_ready;
    std::deque<job> jobs;
    bool stopping = false;
    std::vector<std::thread> workers;

    // watchdog
    std::mutex conns_mutex;
    std::condition_variable watchdog_wake;
    std::set<connection_state *> conns;
    bool watchdog_stop = false;
    std::thread watchdog;

    void work() {
        for (;;) {
            job j;
            {
                std::unique_lock lock(jobs_mutex);
                jobs_ready.wait(lock, [&] { return !jobs.empty() || stopping; });
                if (jobs.empty()) return; // stopping and drained
                j = jobs.front();
                jobs.pop_front();
            }
            j.req->answer = j.list ? handle_list(j.req->body) : j.chart ? handle_chart(j.req->body, opt) : handle_plan(j.req->body, opt);
            MHD_resume_connection(j.connection);
        }
    }

    // Hand a request to a worker; false when the server is stopping (the caller answers 503 itself).
    bool enqueue(job j) {
        std::lock_guard lock(jobs_mutex);
        if (stopping) return false;
        jobs.push_back(j);
        jobs_ready.notify_one();
        return true;
    }

    void watch() {
        std::unique_lock lock(conns_mutex);
        while (!watchdog_stop) {
            watchdog_wake.wait_for(lock, std::chrono::milliseconds(50));
            const auto now = clock_type::now();
            for (connection_state * c : conns) {
                if (c->shut || c->deadline > now) continue;
                ::shutdown(c->fd, SHUT_RDWR); // libmicrohttpd sees the end of the stream and closes the connection
                c->shut = true;
            }
        }
    }

    void set_deadline(connection_state * c, clock_type::time_point t) {
        if (c == nullptr) return;
        std::lock_guard lock(conns_mutex);
        c->deadline = t;
    }

    static void on_connection(void * cls, MHD_Connection * connection, void ** socket_context,
                              MHD_ConnectionNotificationCode code) {
        impl * self = static_cast<impl *>(cls);
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
            auto * c = new connection_state;
            const MHD_ConnectionInfo * info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
            c->fd = info ? info->connect_fd : -1;
            c->deadline = clock_type::now() + self->opt.request_timeout;
            *socket_context = c;
            std::lock_guard lock(self->conns_mutex);
            if (c->fd >= 0) self->conns.insert(c);
        } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) { // before libmicrohttpd closes the descriptor
            auto * c = static_cast<connection_state *>(*socket_context);
            {
                std::lock_guard lock(self->conns_mutex);
                self->conns.erase(c);
            }
            delete c;
            *socket_context = nullptr;
        }
    }

    static void on_completed(void * cls, MHD_Connection *, void ** req_cls, MHD_RequestTerminationCode) {
        impl * self = static_cast<impl *>(cls);
        auto * r = static_cast<request_state *>(*req_cls);
        if (r == nullptr) return;
        self->buffered -= r->body.size();
        self->set_deadline(r->conn, clock_type::now() + self->opt.request_timeout); // the next request's deadline
        delete r;
        *req_cls = nullptr;
    }

    static MHD_Result on_request(void * cls, MHD_Connection * connection, const char * url, const char * method,
                                 const char *, const char * upload_data, size_t * upload_data_size, void ** req_cls) {
        impl * self = static_cast<impl *>(cls);
        const server_options & o = self->opt;
        auto * r = static_cast<request_state *>(*req_cls);
        const std::string path = url ? url : "/";
        const std::string verb = method ? method : "";
        const bool api = path == "/v1/plan" || path == "/v1/chart" || path == "/v1/list";
        if (r == nullptr) { // the headers have arrived
            r = new request_state;
            const MHD_ConnectionInfo * info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
            r->conn = info ? static_cast<connection_state *>(info->socket_context) : nullptr;
            *req_cls = r;
            if (api && verb == "POST") {
                // A client waiting for 100 Continue (curl does for bodies over 1 MiB) is answered before it sends the
                // body: libmicrohttpd then sends no 100 and closes. Any other client has its body read and dropped
                // (bounded by the deadlines) before the 413, so that the answer is not lost to a reset connection.
                const char * length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                const char * expect = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
                if (length) r->expected_bytes = size_t(std::strtoull(length, nullptr, 10));
                if (length && expect && strcasecmp(expect, "100-continue") == 0 && std::strtoull(length, nullptr, 10) > o.max_body_bytes) {
                    r->answered = true;
                    return queue(connection, api_error(413, fmt::format(
                        "request: body exceeds the limit of {} bytes (Content-Length {}; uploads: at most {} bytes, GGUF "
                        "headers only)", o.max_body_bytes, length, o.max_upload_bytes)));
                }
            }
            return MHD_YES;
        }
        if (*upload_data_size != 0) { // a piece of the body
            const size_t n = *upload_data_size;
            *upload_data_size = 0;
            if (!api || verb != "POST" || r->too_large || r->busy) return MHD_YES; // read and dropped
            if (r->body.size() + n > o.max_body_bytes) {
                r->too_large = true;
            } else if (self->buffered.fetch_add(n) + n > o.max_buffered_bytes) {
                self->buffered -= n;
                r->busy = true;
            } else {
                // the body's own size once (Content-Length, within the limit): appending would double the buffer
                if (r->body.empty() && r->expected_bytes > 0) r->body.reserve(std::min(r->expected_bytes, o.max_body_bytes));
                r->body.append(upload_data, n);
                return MHD_YES;
            }
            self->buffered -= r->body.size();
            std::string().swap(r->body);
            return MHD_YES;
        }
        if (r->answered) return MHD_YES;
        if (r->queued) { // resumed: the worker's answer is ready
            r->answered = true;
            return queue(connection, r->answer);
        }
        // the whole request has arrived
        self->set_deadline(r->conn, clock_type::time_point::max());
        r->answered = true;
        const bool get = verb == MHD_HTTP_METHOD_GET || verb == MHD_HTTP_METHOD_HEAD;
        if (path == "/v1/models" && get) return queue(connection, {200, "application/json", models_json()});
        if (path == "/v1/gpus" && get) return queue(connection, {200, "application/json", gpus_json()});
        if (path == "/v1/runtimes" && get) return queue(connection, {200, "application/json", runtimes_json()});
        if (api) {
            if (verb != MHD_HTTP_METHOD_POST) return queue(connection, api_error(405, fmt::format("{} {}: use POST", verb, path)));
            if (r->too_large) {
                return queue(connection, api_error(413, fmt::format("request: body exceeds the limit of {} bytes (uploads: "
                                                                    "at most {} bytes, GGUF headers only)", o.max_body_bytes, o.max_upload_bytes)));
            }
            if (r->busy) return queue(connection, api_error(503, "request: the server holds too many request bodies; retry"));
            const char * type = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
            if (auto refused = check_content_type(type ? type : "", r->body)) return queue(connection, *refused);
            r->answered = false;
            r->queued = true;
            MHD_suspend_connection(connection);
            if (!self->enqueue({connection, r, path == "/v1/chart", path == "/v1/list"})) {
                MHD_resume_connection(connection);
                r->queued = false;
                r->answered = true;
                return queue(connection, api_error(503, "serve: shutting down"));
            }
            return MHD_YES;
        }
        if (!get) return queue(connection, api_error(405, fmt::format("{} {}: HTTP 405", verb, path)));
        const std::string name = path == "/" ? "index.html" : path.substr(1);
        const detail::web_asset * a = detail::find_web_asset(name);
        if (!a) return queue(connection, api_error(404, fmt::format("{}: no such page", path)));
        return queue(connection, {200, std::string(a->content_type), std::string(a->bytes)}, "no-cache");
    }

    void teardown() {
        if (daemon == nullptr) return;
        MHD_quiesce_daemon(daemon); // no new connection; the listening socket stays ours to close
        {
            std::lock_guard lock(jobs_mutex);
            stopping = true;
        }
        jobs_ready.notify_all();
        for (auto & t : workers) t.join(); // the queued plans are answered and their connections resumed
        workers.clear();
        MHD_stop_daemon(daemon);
        daemon = nullptr;
        {
            std::lock_guard lock(conns_mutex);
            watchdog_stop = true;
        }
        watchdog_wake.notify_all();
        if (watchdog.joinable()) watchdog.join();
        ::close(listen_fd);
        listen_fd = -1;
    }
};

server::server(server_options o) : impl_(std::make_unique<impl>()) {
    impl_->opt = std::move(o);
    (void)catalog(); // parse the embedded tables before the first request, on one thread
    (void)gpu_table();
    if (::pipe2(impl_->wake, O_CLOEXEC | O_NONBLOCK) != 0) throw error(fmt::format("serve: pipe: {}", std::strerror(errno)));
}

server::~server() {
    impl_->teardown();
    for (int fd : impl_->wake) ::close(fd);
}

int server::bind() {
    impl & p = *impl_;
    const server_options & o = p.opt;
    const std::string where = fmt::format("{}:{}", o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host, o.port);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo * found = nullptr;
    if (const int rc = ::getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &found); rc != 0) {
        throw error(fmt::format("serve: cannot listen on {}: {}", where, ::gai_strerror(rc)));
    }
    int err = 0, family = AF_INET;
    for (addrinfo * a = found; a != nullptr && p.listen_fd < 0; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        const int yes = 1; // SO_REUSEADDR only (a restart within TIME_WAIT); never SO_REUSEPORT
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
            p.listen_fd = fd;
            family = a->ai_family;
        } else {
            err = errno;
            ::close(fd);
        }
    }
    ::freeaddrinfo(found);
    if (p.listen_fd < 0) throw error(fmt::format("serve: cannot listen on {}: {}", where, reason_of(err)));
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(p.listen_fd, reinterpret_cast<sockaddr *>(&bound), &len);
    const int port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                                                       : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);

    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    p.daemon = MHD_start_daemon(
        flags, 0, nullptr, nullptr, &impl::on_request, &p,
        MHD_OPTION_LISTEN_SOCKET, MHD_socket(p.listen_fd),
        MHD_OPTION_CONNECTION_LIMIT, unsigned(o.max_connections),
        MHD_OPTION_CONNECTION_TIMEOUT, whole_seconds(o.idle_timeout),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, size_t(16u << 10), // request line and headers: 431 beyond
        MHD_OPTION_NOTIFY_CONNECTION, &impl::on_connection, &p,
        MHD_OPTION_NOTIFY_COMPLETED, &impl::on_completed, &p,
        MHD_OPTION_END);
    if (p.daemon == nullptr) {
        ::close(p.listen_fd);
        p.listen_fd = -1;
        throw error(fmt::format("serve: cannot listen on {}: libmicrohttpd did not start", where));
    }
    for (size_t i = 0; i < std::max<size_t>(1, o.n_threads); ++i) p.workers.emplace_back([&p] { p.work(); });
    p.watchdog = std::thread([&p] { p.watch(); });
    return port;
}

bool server::run() {
    if (impl_->daemon == nullptr) return false;
    for (;;) {
        char byte;
        const ssize_t n = ::read(impl_->wake[0], &byte, 1);
        if (n == 1) break;
        if (n < 0 && errno != EAGAIN && errno != EINTR) break;
        fd_set in; // a pipe: select is enough, and signal-interruptible
        FD_ZERO(&in);
        FD_SET(impl_->wake[0], &in);
        ::select(impl_->wake[0] + 1, &in, nullptr, nullptr, nullptr);
    }
    impl_->teardown();
    return true;
}

void server::stop() {
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(impl_->wake[1], &byte, 1); // async-signal-safe
}

} // namespace kvfit
