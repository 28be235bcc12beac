// A loopback HTTP/1.1 server for the remote tests: binds 127.0.0.1 on a free port, answers each request with
// a handler on its own thread (one connection at a time, "Connection: close"), and logs every request and the
// body bytes of its reply, before sending it. Nothing leaves the machine.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kvfit::test {

struct http_request {
    std::string method;
    std::string path;                           ///< percent-decoded, without the query
    std::string query;                          ///< after '?', as sent
    std::map<std::string, std::string> headers; ///< names in lower case
    uint64_t body_bytes_sent = 0;               ///< body bytes of the reply (all sent unless the client hung up)
    int status = 0;                             ///< status of the reply
};

struct http_reply {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    int chunk_delay_ms = 0; ///< > 0: the body goes out in 64 KiB pieces, this long apart (a slow link)
    size_t chunk_bytes = 65536; ///< the pieces' size with chunk_delay_ms (1: a trickle); the headers go at once
};

class http_server {
public:
    using handler = std::function<http_reply(const http_request &)>;
    explicit http_server(handler h);
    ~http_server();
    http_server(const http_server &) = delete;
    http_server & operator=(const http_server &) = delete;

    int port() const { return port_; }
    /// "http://127.0.0.1:<port>"
    std::string origin() const { return "http://127.0.0.1:" + std::to_string(port_); }
    /// Requests served so far, in order.
    std::vector<http_request> requests() const;
    void clear();

private:
    void serve();
    handler handler_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    std::vector<http_request> log_;
    std::thread thread_;
};

/// A port on 127.0.0.1 that nothing listens on (bound, then closed): for "no network" tests.
int closed_port();

} // namespace kvfit::test
