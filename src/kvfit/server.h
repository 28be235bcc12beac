#pragma once
/// @file server.h
/// `kvfit serve`: the web page and a JSON API over HTTP/1.1 (GNU libmicrohttpd, Debian libmicrohttpd-dev).
///
///   GET  /                 the page (web/, built with vite and embedded into the binary)
///   GET  /v1/models        the catalog: [{"name", "hf_id"}]
///   GET  /v1/gpus          the GPU table: [{"name", "vendor", "memory_bytes", ...}]
///   GET  /v1/runtimes      the registry: [{"name", "display", "summary", "context_flag", "flags": [...]}]
///   POST /v1/plan          the CLI's --json document for the same flags (include/kvfit/plan.h; "runtime" picks one)
///   POST /v1/chart         {"chart": ..., "compare": ...}: the chart data (include/kvfit/chart.h)
///   POST /v1/list          the catalog ranked for "gpu": the CLI's `--list --gpu ... --json` (include/kvfit/ranking.h)
///
/// A plan body names its model one of three ways: "model" (a catalog name; never a path on the server),
/// "config" (the text of a config.json, or the object itself), or "gguf_base64" (the first bytes of a
/// GGUF file, base64, at most max_upload_bytes once decoded: the header is enough, tensor data is not read).
/// Bad input gives 4xx with {"error": "<the CLI's one-line message>"}; the server keeps serving.
/// Bodies are read as JSON whatever their Content-Type (curl -d sends application/x-www-form-urlencoded), except
/// multipart/form-data and form fields that are not JSON, which get 415 saying how to send the document.
/// One thread polls every connection (libmicrohttpd, epoll) and workers see only complete requests, so clients
/// that stall hold a descriptor, never a worker; each connection has deadlines (server_options).
/// Docs with curl examples: docs/api.md.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kvfit {

/// How `kvfit serve` listens and what it accepts.
struct server_options {
    std::string host = "127.0.0.1";         ///< loopback unless --host says otherwise
    int port = 8080;                        ///< 0 = any free port (server::bind returns it)
    size_t n_threads = 4;                   ///< requests handled at once
    size_t max_connections = 256;           ///< open connections; beyond, new ones wait in the backlog
    size_t max_upload_bytes = 16u << 20;    ///< decoded "config" / "gguf_base64", bytes (16 MiB)
    size_t max_body_bytes = 24u << 20;      ///< request body, bytes: a 16 MiB upload as base64 plus the fields (413)
    size_t max_buffered_bytes = 256u << 20; ///< request bodies held over all connections; beyond, 503
    /// A connection on which no byte moves either way for this long is closed (libmicrohttpd's connection
    /// timeout, whole seconds: rounded up): one that sends nothing, one that stops halfway, one that reads no answer.
    std::chrono::milliseconds idle_timeout{5000};
    /// A request must have arrived whole within this time of the connection opening, or of the previous answer on
    /// a kept-alive connection; beyond, the connection is closed (a client trickling a byte at a time is cut off).
    std::chrono::milliseconds request_timeout{10000};
};

/// One HTTP answer, independent of the socket library (the handlers are tested without a socket).
struct api_response {
    int status = 200;                       ///< HTTP status
    std::string content_type = "application/json";
    std::string body;                       ///< the document, or {"error": "..."} for 4xx
};

/// A 4xx/5xx answer: {"error": "<message>"} (the message cut at 2,000 characters: it may quote a value).
api_response api_error(int status, std::string message);

/// POST /v1/plan: body -> render_json(make_plan(...)). 400 for bad input, 413 for an upload over
/// the limit. The body of a 200 is byte for byte what `kvfit <same flags> --json` prints. A body with "models" (an
/// array of 2..16 names or objects whose fields replace the body's for that model; "max_loaded" as --models-max)
/// plans a set: render_set_json(plan_set(...)), as `kvfit MODEL MODEL ... --json` prints it (docs/sets.md).
api_response handle_plan(std::string_view body, const server_options & o);

/// The Content-Type check of POST /v1/plan and /v1/chart: std::nullopt when the body is to be read as JSON (any
/// type, absent included), else a 415 saying how to send it: multipart/form-data (curl -F), or a form-encoded
/// body that is not JSON ("model=Qwen3.5-9B&gpu=8GiB").
std::optional<api_response> check_content_type(std::string_view content_type, std::string_view body);

/// POST /v1/chart: the same body -> {"chart": render_chart_json(make_chart_series), "compare": ...}.
api_response handle_chart(std::string_view body, const server_options & o);

/// POST /v1/list: {"gpu", "runtime", "weights", the runtime's flags, and the filters "name", "family", "min_params",
/// "max_params", "min_context"} -> ranking_json, byte for byte `kvfit --list --gpu ... --json` (src/server/list_api.cpp).
api_response handle_list(std::string_view body);

/// GET /v1/models: [{"name": "Qwen3.5-9B", "hf_id": "Qwen/Qwen3.5-9B"}, ...] in catalog order.
std::string models_json();

/// GET /v1/runtimes: every runtime of the registry (runtime.h) with its flags, by JSON name: [{"name": "vllm",
/// "display": "vLLM", "summary", "context_flag": "max_model_len", "flags": [{"name": "max_model_len", "flag":
/// "--max-model-len", "alias": "", "help", "type": "text", "metavar", "alternates": [...], "setting": "context",
/// "engine_name": ""}, ...]}, ...], llama.cpp first: every field of the runtime's flag table (runtime.h flag_spec). The page builds its
/// runtime selector and settings from it.
std::string runtimes_json();

/// GET /v1/gpus: every row of the GPU table: name, vendor, arch, memory_bytes, bandwidth_bytes_per_s, source.
std::string gpus_json();

/// The HTTP server. Construct, bind, run (blocks until stop from another thread or a signal).
class server {
public:
    /// Configure routes and limits and parse the embedded catalog and GPU table; nothing is bound until run.
    /// Throws kvfit::error only if an embedded table is malformed (a build defect, caught by the tests).
    explicit server(server_options o);
    ~server();
    server(const server &) = delete;
    server & operator=(const server &) = delete;

    /// Bind host:port. Returns the port (the chosen one when port is 0). The port is not shared (no SO_REUSEPORT).
    /// Throws kvfit::error "serve: cannot listen on <host>:<port>: address already in use (...)" when another
    /// server has it, or with the reason when the address is invalid.
    int bind();
    /// Serve until stop(). Returns false when the listening socket failed.
    bool run();
    /// Stop serving (thread-safe); run() returns.
    void stop();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace kvfit
