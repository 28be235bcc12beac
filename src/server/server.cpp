// `kvfit serve` (include/kvfit/server.h): the routes and the embedded page on the HTTP layer of src/server/http.h.
#include "kvfit/server.h"

#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/sources.h"
#include "server/http.h"
#include "server/web_assets.h"

#include <fmt/format.h>

namespace kvfit {
namespace {

detail::http_reply reply(const api_response & a) { return {a.status, a.content_type, a.body, {}}; }

// The HTTP layer's own refusals (400, 408, 413, 431, 503, ...) carry the same {"error": ...} body as the API's.
detail::http_reply layer_error(int status, const std::string & message, const server_options & o) {
    std::string msg = message;
    if (status == 413) msg += fmt::format(" (uploads: at most {} bytes, GGUF headers only)", o.max_upload_bytes);
    return reply(api_error(status, msg));
}

detail::http_reply route(const detail::http_request & req, const server_options & opt) {
    const bool get = req.method == "GET" || req.method == "HEAD";
    if (req.path == "/v1/models" && get) return reply({200, "application/json", models_json()});
    if (req.path == "/v1/gpus" && get) return reply({200, "application/json", gpus_json()});
    if (req.path == "/v1/plan" || req.path == "/v1/chart") {
        if (req.method != "POST") return reply(api_error(405, fmt::format("{} {}: use POST", req.method, req.path)));
        if (auto refused = check_content_type(req.header("content-type"), req.body)) return reply(*refused);
        return reply(req.path == "/v1/plan" ? handle_plan(req.body, opt) : handle_chart(req.body, opt));
    }
    if (!get) return reply(api_error(405, fmt::format("{} {}: HTTP 405", req.method, req.path)));
    const std::string path = req.path == "/" ? "index.html" : req.path.substr(1);
    const detail::web_asset * a = detail::find_web_asset(path);
    if (!a) return reply(api_error(404, fmt::format("{}: no such page", req.path)));
    return {200, std::string(a->content_type), std::string(a->bytes), {{"Cache-Control", "no-cache"}}};
}

detail::http_limits limits_of(const server_options & o) {
    detail::http_limits l;
    l.n_threads = o.n_threads;
    l.max_connections = o.max_connections;
    l.max_body_bytes = o.max_body_bytes;
    l.idle_timeout = o.idle_timeout;
    l.request_timeout = o.request_timeout;
    l.write_timeout = o.write_timeout;
    return l;
}

} // namespace

struct server::impl {
    server_options opt;
    std::unique_ptr<detail::http_server> http;
};

server::server(server_options o) : impl_(std::make_unique<impl>()) {
    impl_->opt = std::move(o);
    const server_options & opt = impl_->opt;
    (void)catalog(); // parse the embedded tables before the first request, on one thread
    (void)gpu_table();
    impl_->http = std::make_unique<detail::http_server>(
        limits_of(opt), [&opt](const detail::http_request & req) { return route(req, opt); },
        [&opt](int status, const std::string & message) { return layer_error(status, message, opt); });
}

server::~server() { stop(); }

int server::bind() {
    const server_options & o = impl_->opt;
    return impl_->http->bind(o.host, o.port);
}

bool server::run() { return impl_->http->run(); }

void server::stop() { impl_->http->stop(); }

} // namespace kvfit
