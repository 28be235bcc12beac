#pragma once
// A small HTTP GET client over libcurl for the remote source (src/sources/remote.cpp): byte ranges, redirects
// followed by hand so the token never leaves the endpoint's origin, a cap on every body, one-line errors.
// Not part of the public API.
#include "kvfit/error.h"
#include "kvfit/remote.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kvfit::detail {

/// A successful response (2xx after redirects).
struct http_response {
    long status = 0;           ///< 200 or 206
    std::string body;
    uint64_t total_bytes = 0;  ///< the file's size from Content-Range ("bytes 0-7/12345" -> 12345); 0 when absent
    std::string next_url;      ///< Link: <url>; rel="next" (the Hub's listing pages), resolved; "" when absent
};

/// Thrown when the server cannot be reached at all (the name does not resolve, the connection is refused or times
/// out): a caller with a cached copy may use it instead. Other failures are plain kvfit::error.
struct unreachable_error : error {
    using error::error;
};

/// Inclusive byte range [first, last], as the Range header spells it.
struct byte_range {
    uint64_t first = 0;
    uint64_t last = 0;
};

class http_client {
public:
    /// `stats` (may be null) receives the count of requests and bytes and a log line per request. Transfers slower
    /// than o.progress_after are reported to o.progress.
    http_client(const remote_options & o, remote_stats * stats);
    ~http_client();
    http_client(const http_client &) = delete;
    http_client & operator=(const http_client &) = delete;

    /// GET `url`, with `range` when given, accepting at most `cap` body bytes. `what` names the resource in
    /// messages ("hf:org/name: config.json"). Throws kvfit::error "<what>: HTTP 401 ...", 403, 404, other
    /// statuses, "cannot reach <host>: ..." (as unreachable_error), a TLS failure, a body over the cap, and a 200 answer to a range request
    /// whose body runs past the range ("the server ignored the Range request ...").
    http_response get(const std::string & url, std::optional<byte_range> range, uint64_t cap, std::string_view what);

private:
    struct impl;
    std::unique_ptr<impl> p_;
};

/// "scheme://host:port" of a URL, lower case, with the scheme's default port filled in; "" when it cannot be parsed.
std::string url_origin(const std::string & url);

/// Percent-encode a path (each segment; '/' kept): "Q4_K_M/a b.gguf" -> "Q4_K_M/a%20b.gguf".
std::string url_path_escape(std::string_view path);

} // namespace kvfit::detail
