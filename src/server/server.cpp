// `kvfit serve` over cpp-httplib (include/kvfit/server.h): routes, the embedded page, and the bounds.
#include "kvfit/server.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/sources.h"
#include "server/web_assets.h"

#include <condition_variable>
#include <deque>
#include <fmt/format.h>
#include <httplib.h>
#include <mutex>
#include <thread>

namespace kvfit {
namespace {

// httplib's ThreadPool queues without limit; this one makes the accept loop wait when `max_queued`
// connections are already waiting, so a flood costs a bounded amount of memory (the kernel's backlog
// holds the rest, and refuses beyond it).
class bounded_pool : public httplib::TaskQueue {
public:
    bounded_pool(size_t n_threads, size_t max_queued) : max_queued_(max_queued) {
        for (size_t i = 0; i < n_threads; ++i) threads_.emplace_back([this] { work(); });
    }
    void enqueue(std::function<void()> fn) override {
        std::unique_lock lock(mutex_);
        space_.wait(lock, [&] { return jobs_.size() < max_queued_ || shutdown_; });
        jobs_.push_back(std::move(fn));
        ready_.notify_one();
    }
    void shutdown() override {
        {
            std::lock_guard lock(mutex_);
            shutdown_ = true;
        }
        ready_.notify_all();
        space_.notify_all();
        for (auto & t : threads_) t.join();
    }

private:
    void work() {
        for (;;) {
            std::function<void()> fn;
            {
                std::unique_lock lock(mutex_);
                ready_.wait(lock, [&] { return !jobs_.empty() || shutdown_; });
                if (jobs_.empty()) return; // shut down and drained
                fn = std::move(jobs_.front());
                jobs_.pop_front();
                space_.notify_one();
            }
            fn();
        }
    }
    size_t max_queued_;
    bool shutdown_ = false;
    std::deque<std::function<void()>> jobs_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable ready_, space_;
};

void reply(httplib::Response & res, const api_response & a) {
    res.status = a.status;
    res.set_content(a.body, a.content_type.c_str());
}

} // namespace

struct server::impl {
    server_options opt;
    httplib::Server http;
};

server::server(server_options o) : impl_(std::make_unique<impl>()) {
    impl_->opt = std::move(o);
    const server_options & opt = impl_->opt;
    httplib::Server & h = impl_->http;
    (void)catalog(); // parse the embedded tables before the first request, on one thread
    (void)gpu_table();

    h.new_task_queue = [n = opt.n_threads, q = opt.max_queued] { return new bounded_pool(n, q); };
    h.set_payload_max_length(opt.max_body_bytes);
    h.set_read_timeout(5);
    h.set_write_timeout(5);
    h.set_keep_alive_timeout(2);
    h.set_keep_alive_max_count(100);

    h.Get("/v1/models", [](const httplib::Request &, httplib::Response & res) { reply(res, {200, "application/json", models_json()}); });
    h.Get("/v1/gpus", [](const httplib::Request &, httplib::Response & res) { reply(res, {200, "application/json", gpus_json()}); });
    h.Get("/v1/runtimes", [](const httplib::Request &, httplib::Response & res) { reply(res, {200, "application/json", runtimes_json()}); });
    h.Post("/v1/plan", [&opt](const httplib::Request & req, httplib::Response & res) { reply(res, handle_plan(req.body, opt)); });
    h.Post("/v1/chart", [&opt](const httplib::Request & req, httplib::Response & res) { reply(res, handle_chart(req.body, opt)); });
    h.Post("/v1/list", [](const httplib::Request & req, httplib::Response & res) { reply(res, handle_list(req.body)); }); // list_api.cpp
    h.Get(R"(/(.*))", [](const httplib::Request & req, httplib::Response & res) {
        const std::string path = req.matches[1].str().empty() ? "index.html" : req.matches[1].str();
        const detail::web_asset * a = detail::find_web_asset(path);
        if (!a) return reply(res, api_error(404, fmt::format("{}: no such page", req.path)));
        res.set_content(std::string(a->bytes), a->content_type.data());
        res.set_header("Cache-Control", "no-cache");
    });
    // Errors httplib raises itself (a body over the limit: 413; unknown method: 400/405) get a JSON message too.
    h.set_error_handler([&opt](const httplib::Request & req, httplib::Response & res) {
        if (!res.body.empty()) return;
        std::string msg = fmt::format("{} {}: HTTP {}", req.method, req.path, res.status);
        if (res.status == 413) {
            msg = fmt::format("request: body exceeds the limit of {} bytes (uploads: at most {} bytes, GGUF headers only)",
                              opt.max_body_bytes, opt.max_upload_bytes);
        }
        res.set_content(api_error(res.status, msg).body, "application/json");
    });
}

server::~server() { stop(); }

int server::bind() {
    const server_options & o = impl_->opt;
    const int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
    if (port < 0) throw error(fmt::format("serve: cannot listen on {}:{}", o.host, o.port));
    return port;
}

bool server::run() { return impl_->http.listen_after_bind(); }

void server::stop() {
    if (impl_->http.is_running()) impl_->http.stop();
}

} // namespace kvfit
