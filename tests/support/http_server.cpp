#include "support/http_server.h"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cctype>
#include <netinet/in.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace kvfit::test {
namespace {

std::string decode(const std::string & s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
            out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

const char * reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 302: return "Found";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 416: return "Range Not Satisfiable";
    default: return "Status";
    }
}

int bind_loopback(int & port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
        throw std::runtime_error("http_server: cannot bind 127.0.0.1");
    }
    port = ntohs(a.sin_port);
    return fd;
}

} // namespace

http_server::http_server(handler h) : handler_(std::move(h)) {
    listen_fd_ = bind_loopback(port_);
    if (::listen(listen_fd_, 16) != 0) throw std::runtime_error("http_server: cannot listen");
    thread_ = std::thread([this] { serve(); });
}

http_server::~http_server() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
}

std::vector<http_request> http_server::requests() const {
    std::lock_guard lock(mutex_);
    return log_;
}

void http_server::clear() {
    std::lock_guard lock(mutex_);
    log_.clear();
}

void http_server::serve() {
    while (!stop_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::string in;
        char buf[4096];
        while (in.find("\r\n\r\n") == std::string::npos && in.size() < (1 << 20)) {
            pollfd q{fd, POLLIN, 0};
            if (::poll(&q, 1, 5000) <= 0) break;
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            in.append(buf, size_t(n));
        }
        http_request r;
        const size_t eol = in.find("\r\n");
        const std::string line = in.substr(0, eol);
        const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
        if (sp1 == std::string::npos || sp2 == sp1) {
            ::close(fd);
            continue;
        }
        r.method = line.substr(0, sp1);
        const std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
        r.path = decode(target.substr(0, target.find('?')));
        if (target.find('?') != std::string::npos) r.query = target.substr(target.find('?') + 1);
        for (size_t at = eol + 2; at < in.size();) {
            const size_t end = in.find("\r\n", at);
            if (end == std::string::npos || end == at) break;
            const std::string h = in.substr(at, end - at);
            const size_t colon = h.find(':');
            if (colon != std::string::npos) {
                std::string name = h.substr(0, colon);
                for (char & c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
                size_t v = colon + 1;
                while (v < h.size() && h[v] == ' ') ++v;
                r.headers[name] = h.substr(v);
            }
            at = end + 2;
        }
        const http_reply reply = handler_(r);
        r.status = reply.status;
        r.body_bytes_sent = reply.body.size();
        {
            // Logged before the reply goes out: once a client has its answer, the log already holds the request.
            std::lock_guard lock(mutex_);
            log_.push_back(r);
        }
        std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason(reply.status) + "\r\n";
        for (const auto & [k, v] : reply.headers) out += k + ": " + v + "\r\n";
        out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\nConnection: close\r\n\r\n";
        out += reply.body;
        size_t sent = 0;
        const size_t head = out.size() - reply.body.size();
        while (sent < out.size()) { // a client that stops reading (a capped body) ends the loop with an error
            if (sent > 0 && reply.chunk_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(reply.chunk_delay_ms));
            const size_t piece = reply.chunk_delay_ms <= 0 ? out.size() - sent
                               : sent < head ? head - sent : std::max<size_t>(1, reply.chunk_bytes);
            const ssize_t n = ::send(fd, out.data() + sent, std::min(piece, out.size() - sent), MSG_NOSIGNAL);
            if (n <= 0) break;
            sent += size_t(n);
        }
        ::close(fd);
    }
}

int closed_port() {
    int port = 0;
    const int fd = bind_loopback(port);
    ::close(fd);
    return port;
}

} // namespace kvfit::test
