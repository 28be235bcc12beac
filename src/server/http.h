#pragma once
// The HTTP/1.1 layer of `kvfit serve` (src/server/http.cpp): one thread reads every connection without blocking,
// workers compute answers to complete requests only, and every connection has deadlines, so clients that stall
// cost a file descriptor, never a worker. Not part of the public API; server.cpp puts the routes on it.
//
// Bounds (http_limits): a request's header section, its body, the time to send a whole request once its first
// byte arrived, the idle time of a kept-alive connection, the time a client may take to read an answer, and the
// number of open connections (beyond it a new connection is answered 503 and closed).
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvfit::detail {

/// A complete request.
struct http_request {
    std::string method;   ///< "GET", "POST", ...
    std::string path;     ///< percent-decoded, without the query: "/v1/plan"
    std::string query;    ///< after '?', as sent
    std::vector<std::pair<std::string, std::string>> headers; ///< names in lower case, values trimmed
    std::string body;
    bool keep_alive = true; ///< HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "Connection: keep-alive"
    /// The value of header `name` (lower case); "" when absent.
    std::string_view header(std::string_view name) const;
};

/// An answer. Content-Length and Connection are added when it is written.
struct http_reply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers; ///< extra headers ("Cache-Control")
};

/// What parse_http_request made of the bytes received so far on a connection.
struct http_parse {
    enum class state { need_more, done, bad };
    state st = state::need_more;
    size_t consumed = 0;          ///< done: bytes of the buffer this request took (the rest is the next request)
    bool headers_done = false;    ///< need_more: the header section is complete, the body is still coming
    bool expect_continue = false; ///< the client sent "Expect: 100-continue" and waits for a 100 before the body
    int status = 0;               ///< bad: the status to answer (400, 411, 413, 431, 501, 505)
    std::string message;          ///< bad: one line for {"error": ...}
    http_request req;             ///< done: the request
};

/// Parse one request from the start of `buf` (origin-form target, Content-Length bodies; chunked bodies are
/// refused with 411 and a hint). Never throws; any byte sequence gives need_more, done or bad.
http_parse parse_http_request(std::string_view buf, size_t max_header_bytes, size_t max_body_bytes);

/// The bytes of an answer: status line, Content-Type, Content-Length, extra headers, Connection, body (none for
/// HEAD requests when `head_only`).
std::string http_serialize(const http_reply & r, bool keep_alive, bool head_only = false);

/// The bounds of http_server.
struct http_limits {
    size_t n_threads = 4;                                ///< workers computing answers
    size_t max_connections = 256;                        ///< open connections; more are answered 503 and closed
    size_t max_header_bytes = 16u << 10;                 ///< request line and headers (431 beyond)
    size_t max_body_bytes = 24u << 20;                   ///< body (413 beyond)
    std::chrono::milliseconds idle_timeout{5000};        ///< no byte of a (next) request yet: closed
    std::chrono::milliseconds request_timeout{10000};    ///< first byte to last byte of a request (408 beyond)
    std::chrono::milliseconds write_timeout{10000};      ///< to take the whole answer (closed beyond)
    size_t max_requests_per_connection = 100;            ///< keep-alive requests, then the connection is closed
    size_t max_buffered_bytes = 256u << 20;              ///< request bytes held over all connections; beyond, no
                                                         ///< connection is read until answers drain (back-pressure)
};

/// A small HTTP/1.1 server. bind, then run (blocks) until stop.
class http_server {
public:
    using handler = std::function<http_reply(const http_request &)>;
    /// `on_error` makes the body of the layer's own errors (400, 408, 413, ...): (status, message) -> reply.
    http_server(http_limits limits, handler h, std::function<http_reply(int, const std::string &)> on_error);
    ~http_server();
    http_server(const http_server &) = delete;
    http_server & operator=(const http_server &) = delete;

    /// Listen on host:port (port 0: any free one). Returns the port. No SO_REUSEPORT: a second server on a port in
    /// use fails here instead of sharing it. Throws kvfit::error "serve: cannot listen on <host>:<port>: <reason>".
    int bind(const std::string & host, int port);
    /// Serve until stop(). Returns false when the listening socket failed.
    bool run();
    /// Stop serving (thread-safe, also from a signal handler); run() returns.
    void stop();
    /// Whether run() is serving.
    bool running() const;

private:
    struct impl;
    std::unique_ptr<impl> p_;
};

} // namespace kvfit::detail
