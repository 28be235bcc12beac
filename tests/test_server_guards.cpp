// `kvfit serve` against outside input (issue 15): a busy port, bodies of any Content-Type (curl -d sends form
// encoding), stalled and slow clients that must not starve others, protocol errors (libmicrohttpd's answers), and
// the limits on connections. Raw sockets on loopback where the test needs bytes a client library would not send.
#include "kvfit/error.h"
#include "kvfit/gguf_writer.h"
#include "kvfit/server.h"
#include "support/files.h"
#include "support/gguf_fixture.h"
#include "support/run_cli.h"

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <fstream>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

struct live_server {
    kvfit::server_options opt;
    std::unique_ptr<kvfit::server> srv;
    std::thread thread;
    int port = 0;
    explicit live_server(kvfit::server_options o = {}) : opt(std::move(o)) {
        if (opt.port == 8080) opt.port = 0;
        std::signal(SIGPIPE, SIG_IGN); // a client still sending when the server has answered (an early 413) and closed
        srv = std::make_unique<kvfit::server>(opt);
        port = srv->bind();
        thread = std::thread([this] { srv->run(); });
    }
    ~live_server() {
        srv->stop();
        thread.join();
    }
};

// A loopback TCP connection; fd < 0 when it could not connect.
struct conn {
    int fd = -1;
    explicit conn(int port) {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(uint16_t(port));
        if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
            ::close(fd);
            fd = -1;
        }
    }
    ~conn() {
        if (fd >= 0) ::close(fd);
    }
    void send(const std::string & s) const { EXPECT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size())); }
    // Everything until the server closes the connection or `ms` pass.
    // the default is a hang guard, not a timing: a sanitizer build under parallel tests plans in seconds
    std::string read_all(int ms = 60000) const {
        std::string out;
        const auto end = clock_type::now() + std::chrono::milliseconds(ms);
        char buf[65536];
        while (clock_type::now() < end) {
            pollfd p{fd, POLLIN, 0};
            const int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - clock_type::now()).count());
            if (::poll(&p, 1, std::max(1, left)) <= 0) break;
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            out.append(buf, size_t(n));
        }
        return out;
    }
    // Bytes until `marker` has arrived (or `ms` pass).
    std::string read_until(const std::string & marker, int ms = 5000) const {
        std::string out;
        const auto end = clock_type::now() + std::chrono::milliseconds(ms);
        char buf[4096];
        while (out.find(marker) == std::string::npos && clock_type::now() < end) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            out.append(buf, size_t(n));
        }
        return out;
    }
};

std::string post(const std::string & path, const std::string & body, const std::string & type, bool close = true) {
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + (type.empty() ? "" : "Content-Type: " + type + "\r\n") +
           "Content-Length: " + std::to_string(body.size()) + "\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n" + body;
}

int status_of(const std::string & response) {
    return response.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(response.c_str() + 9) : 0;
}

std::string body_of(const std::string & response) {
    const size_t at = response.find("\r\n\r\n");
    return at == std::string::npos ? "" : response.substr(at + 4);
}

std::string base64(const std::string & in) {
    static const char * t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i < in.size(); i += 3) {
        uint32_t v = uint32_t(uint8_t(in[i])) << 16;
        if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
        if (i + 2 < in.size()) v |= uint8_t(in[i + 2]);
        out += t[(v >> 18) & 63];
        out += t[(v >> 12) & 63];
        out += i + 1 < in.size() ? t[(v >> 6) & 63] : '=';
        out += i + 2 < in.size() ? t[v & 63] : '=';
    }
    return out;
}

// A second server on a port in use fails to bind (no SO_REUSEPORT: it used to listen too and take half of the
// requests), and `kvfit serve` says so and exits 2.
TEST(server_guards, busy_port_fails_with_exit_2) {
    live_server first;
    kvfit::server_options o;
    o.port = first.port;
    kvfit::server second(o);
    try {
        second.bind();
        ADD_FAILURE() << "bound a port in use";
    } catch (const kvfit::error & e) {
        EXPECT_EQ(std::string(e.what()), "serve: cannot listen on 127.0.0.1:" + std::to_string(first.port) +
                                             ": address already in use (another server on this port?)");
    }
    const auto r = kvfit::test::run_kvfit("serve --port " + std::to_string(first.port));
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "kvfit: serve: cannot listen on 127.0.0.1:" + std::to_string(first.port) +
                         ": address already in use (another server on this port?)\n");
    EXPECT_EQ(r.out, "");
}

// curl -d sends application/x-www-form-urlencoded: a body of any size and any label is read as JSON. The GGUF
// upload here is 115 KiB (the old server refused form bodies over 8 KiB with a 413 that blamed the size limit).
TEST(server_guards, json_bodies_whatever_the_content_type) {
    kvfit::gguf_writer w = kvfit::test::model_writer("llama", 4, 256, 12000);
    w.add("llama.attention.head_count", kvfit::gguf_wvalue::u32(8));
    w.add("llama.attention.head_count_kv", kvfit::gguf_wvalue::u32(2));
    const std::string body = json{{"gguf_base64", base64(w.header())}, {"gpu", "24GiB"}}.dump();
    ASSERT_GT(body.size(), 100u << 10);
    live_server s;
    const std::string expected = kvfit::handle_plan(body, s.opt).body;
    ASSERT_NE(expected.find("\"schema_version\""), std::string::npos) << expected.substr(0, 200);
    for (const char * type : {"application/json", "application/x-www-form-urlencoded", "text/plain;charset=UTF-8", "",
                              "application/octet-stream", "APPLICATION/JSON; charset=utf-8"}) {
        conn c(s.port);
        c.send(post("/v1/plan", body, type));
        const std::string r = c.read_all();
        EXPECT_EQ(status_of(r), 200) << type << ": " << r.substr(0, 300);
        EXPECT_EQ(body_of(r), expected) << type;
    }
    // what is not a JSON document gets 415 saying how to send one
    const std::pair<const char *, std::string> refused[] = {
        {"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nQwen3.5-9B\r\n--x--\r\n"},
        {"application/x-www-form-urlencoded", "model=Qwen3.5-9B&gpu=8GiB"},
    };
    for (const auto & [type, text] : refused) {
        conn c(s.port);
        c.send(post("/v1/plan", text, type));
        const std::string r = c.read_all();
        EXPECT_EQ(status_of(r), 415) << type;
        const std::string message = json::parse(body_of(r))["error"];
        EXPECT_NE(message.find("send the JSON document itself as the body, e.g. curl -d '{\"model\": \"Qwen3.5-9B\"}'"),
                  std::string::npos) << message;
    }
}

// curl itself, as docs/api.md uses it: -d with a body over 8 KiB (here 115 KiB), and --data-binary with a JSON label.
TEST(server_guards, curl_with_a_large_form_encoded_body) {
    kvfit::test::scratch_dir dir("curl_large");
    kvfit::gguf_writer w = kvfit::test::model_writer("llama", 4, 256, 12000);
    w.add("llama.attention.head_count", kvfit::gguf_wvalue::u32(8));
    w.add("llama.attention.head_count_kv", kvfit::gguf_wvalue::u32(2));
    const std::string body = json{{"gguf_base64", base64(w.header())}, {"gpu", "24GiB"}}.dump();
    std::ofstream(dir.file("body.json")) << body;
    live_server s;
    const std::string url = "http://127.0.0.1:" + std::to_string(s.port) + "/v1/plan";
    for (const std::string flags : {"-d @body.json", "-H 'Content-Type: application/json' --data-binary @body.json"}) {
        const std::string out = dir.file("out.json");
        const int rc = std::system(("cd " + dir.path.string() + " && curl -s -X POST " + url + " " + flags + " -o out.json -w '%{http_code}' > code").c_str());
        EXPECT_EQ(rc, 0) << flags;
        EXPECT_EQ(kvfit::test::read_text(dir.file("code")), "200") << flags;
        EXPECT_EQ(kvfit::test::read_text(out), kvfit::handle_plan(body, s.opt).body) << flags;
    }
}

// 80 connections that send nothing and 80 that stop halfway through a request hold no worker: a new request is
// answered at once (the cpp-httplib server made it wait over 20 s), and the stalled ones are closed at their
// deadlines without an answer (libmicrohttpd closes a timed-out connection; it sends no 408).
TEST(server_guards, stalled_clients_do_not_starve_others) {
    kvfit::server_options o;
    o.idle_timeout = std::chrono::milliseconds(600);
    o.request_timeout = std::chrono::milliseconds(900);
    live_server s(o);
    std::vector<std::unique_ptr<conn>> silent, halfway;
    for (int i = 0; i < 80; ++i) {
        silent.push_back(std::make_unique<conn>(s.port));
        halfway.push_back(std::make_unique<conn>(s.port));
        halfway.back()->send("POST /v1/plan HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"model\"");
    }
    const auto start = clock_type::now();
    conn c(s.port);
    c.send("GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n");
    const std::string r = c.read_all();
    const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    EXPECT_EQ(status_of(r), 200);
    EXPECT_LT(seconds, 0.5) << "a request behind 160 stalled connections";
    std::printf("a request behind 160 stalled connections: %.3f s\n", seconds);
    const auto wait = clock_type::now();
    EXPECT_EQ(silent[0]->read_all(3000), "");  // closed at the deadline, no answer
    EXPECT_EQ(halfway[0]->read_all(3000), ""); // closed at the deadline, no answer
    EXPECT_LT(std::chrono::duration<double>(clock_type::now() - wait).count(), 2.5) << "closed at the deadlines";
    EXPECT_EQ(silent[79]->read_all(500), "");
    EXPECT_EQ(halfway[79]->read_all(500), "");
}

// A client that trickles its request a byte at a time (slowloris) is cut off at the request deadline, however
// often it sends (libmicrohttpd's own timeout is one of inactivity, which this client never reaches).
TEST(server_guards, a_trickling_client_is_cut_off) {
    kvfit::server_options o;
    o.request_timeout = std::chrono::milliseconds(500);
    live_server s(o);
    conn slow(s.port);
    const std::string request = "GET /v1/models HTTP/1.1\r\nX-Padding: " + std::string(200, 'a') + "\r\n\r\n";
    const auto start = clock_type::now();
    bool cut = false;
    for (size_t i = 0; i < request.size() && !cut; ++i) {
        cut = ::send(slow.fd, &request[i], 1, MSG_NOSIGNAL) != 1;
        pollfd p{slow.fd, POLLIN, 0};
        cut = cut || ::poll(&p, 1, 20) > 0;
    }
    const std::string r = slow.read_all(2000);
    EXPECT_EQ(r, "") << "no answer to a request that never arrived whole";
    EXPECT_TRUE(cut) << "the connection was closed while the client was still sending";
    EXPECT_LT(std::chrono::duration<double>(clock_type::now() - start).count(), 2.5);
}

// Beyond max_connections a new connection waits in the kernel's backlog (libmicrohttpd's MHD_OPTION_CONNECTION_LIMIT
// stops accepting), unanswered, while the open ones keep working; it is served once one of them closes.
TEST(server_guards, connection_limit) {
    kvfit::server_options o;
    o.max_connections = 4;
    live_server s(o);
    std::vector<std::unique_ptr<conn>> open;
    for (int i = 0; i < 4; ++i) open.push_back(std::make_unique<conn>(s.port));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    conn extra(s.port);
    extra.send("GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(extra.read_all(500), "") << "served beyond the limit";
    open[0]->send("GET /v1/gpus HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(open[0]->read_all()), 200);
    EXPECT_EQ(status_of(extra.read_all()), 200) << "served once a connection closed";
}

// Keep-alive and pipelining: two requests sent at once get two answers in order on the same connection.
// Expect: 100-continue gets its 100 before the body is sent.
TEST(server_guards, keep_alive_pipelining_and_100_continue) {
    live_server s;
    conn c(s.port);
    c.send("GET /v1/models HTTP/1.1\r\n\r\nGET /v1/gpus HTTP/1.1\r\nConnection: close\r\n\r\n");
    const std::string both = c.read_all();
    const size_t second = both.find("HTTP/1.1 200", 1);
    ASSERT_NE(second, std::string::npos) << both.substr(0, 300);
    EXPECT_EQ(status_of(both), 200);
    EXPECT_EQ(both.substr(0, second).find("Connection: close"), std::string::npos) << "the first answer keeps the connection";
    EXPECT_NE(both.find("\"hf_id\""), std::string::npos);
    EXPECT_NE(both.find("\"memory_bytes\"", second), std::string::npos);

    conn e(s.port);
    const std::string body = R"({"model":"Qwen3.5-9B","gpu":"8GiB","weights_size":"6.6GB"})";
    e.send("POST /v1/plan HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(e.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
    e.send(body);
    const std::string r = e.read_all();
    EXPECT_EQ(status_of(r), 200);
    EXPECT_EQ(body_of(r), kvfit::handle_plan(body, s.opt).body);
}

// Protocol errors. Chunked bodies are read (libmicrohttpd decodes them; the own HTTP layer refused them with 411);
// a body over the limit is 413 (before the body is sent when the client waits for 100 Continue); a method the
// API does not take is 405, both with kvfit's JSON body. Malformed requests, an unknown HTTP version and an
// oversized header section are libmicrohttpd's to answer (400, 505, 431; its own short HTML body); a request line
// that is not one at all is closed without an answer (status 0 here).
TEST(server_guards, protocol_errors) {
    kvfit::server_options o;
    o.max_body_bytes = 1024;
    live_server s(o);
    struct row {
        std::string request;
        int status;
        bool json_body; // kvfit's {"error": ...} (or the plan)
    };
    const row cases[] = {
        {"POST /v1/plan HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\n{}   \r\n0\r\n\r\n", 200, true},
        {"POST /v1/plan HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n400\r\n" + std::string(1024, ' ') +
             "\r\n400\r\n" + std::string(1024, ' ') + "\r\n0\r\n\r\n", 413, true},
        {"POST /v1/plan HTTP/1.1\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n", 413, true},  // at once
        {"POST /v1/plan HTTP/1.1\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n" + std::string(5000, ' '), 413, true},
        {"DELETE /v1/plan HTTP/1.1\r\nConnection: close\r\n\r\n", 405, true},
        {"PUT /index.html HTTP/1.1\r\nConnection: close\r\n\r\n", 405, true},
        {"GET /nowhere HTTP/1.1\r\nConnection: close\r\n\r\n", 404, true},
        {"GARBAGE\r\n\r\n", 0, false},
        {"GET / HTTP/2.0\r\n\r\n", 505, false},
        {"GET /v1/models HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, false},
        {"GET /v1/models HTTP/1.1\r\nBad Header\r\n\r\n", 400, false},
        {"GET /v1/models HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n", 431, false},
    };
    for (const auto & c : cases) {
        conn k(s.port);
        k.send(c.request);
        const std::string r = k.read_all(3000);
        EXPECT_EQ(status_of(r), c.status) << c.request.substr(0, 60) << "\n" << r.substr(0, 300);
        if (c.json_body) {
            EXPECT_TRUE(json::accept(body_of(r))) << r.substr(0, 300);
        }
        if (c.json_body && c.status != 200) {
            EXPECT_TRUE(json::parse(body_of(r)).contains("error")) << r.substr(0, 300);
        }
    }
}

// The server answers while a client is slow to take a large answer (the page's script), and gives up on one that
// never reads it at the write deadline.
TEST(server_guards, slow_readers_hold_no_worker) {
    kvfit::server_options o;
    o.n_threads = 1;
    o.idle_timeout = std::chrono::milliseconds(1000); // a client that reads nothing of its answers: closed after 1 s
    live_server s(o);
    std::vector<std::unique_ptr<conn>> lazy;
    for (int i = 0; i < 8; ++i) {
        lazy.push_back(std::make_unique<conn>(s.port));
        int small = 4096;
        ::setsockopt(lazy.back()->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        for (int k = 0; k < 50; ++k) lazy.back()->send("GET /v1/gpus HTTP/1.1\r\n\r\n"); // 50 answers asked for, none read
    }
    httplib::Client client("127.0.0.1", s.port);
    const auto start = clock_type::now();
    const auto res = client.Get("/v1/models");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200);
    EXPECT_LT(std::chrono::duration<double>(clock_type::now() - start).count(), 1.0);
}

} // namespace
