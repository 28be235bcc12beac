// HTTP GET over libcurl (loaded at the first request: src/sources/curl_api.h) for the remote source (src/sources/http.h). Redirects are followed here, not by libcurl,
// so each hop decides afresh whether the token may go: only to the endpoint's own origin (scheme, host, port).
// The Hub answers /resolve/ of a large file with a redirect to a CDN host; the signed CDN URL needs no token.
#include "sources/http.h"
#include "core/util.h"

#include "kvfit/error.h"
#include "sources/curl_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <mutex>

namespace kvfit::detail {
namespace {

constexpr int k_max_redirects = 10;
constexpr uint64_t k_redirect_body_cap = 64 << 10;


std::string trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
}

// The URL as logged: no query string (signed CDN URLs carry credentials there).
std::string without_query(const std::string & url) { return url.substr(0, url.find('?')); }

std::string host_of(const std::string & url) {
    const std::string o = url_origin(url);
    const size_t at = o.find("://");
    return at == std::string::npos ? url : o.substr(at + 3);
}

// `location` resolved against `base` (a Location header may be relative); "" when it cannot be parsed.
std::string resolve(const std::string & base, const std::string & location) {
    CURLU * u = curl_lib().url();
    std::string out;
    char * s = nullptr;
    if (curl_lib().url_set(u, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
        curl_lib().url_set(u, CURLUPART_URL, location.c_str(), 0) == CURLUE_OK &&
        curl_lib().url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK) {
        out = s;
    }
    curl_lib().free(s);
    curl_lib().url_cleanup(u);
    return out;
}

// One hop's response as it arrives: the status line and headers first, then the body, capped.
struct exchange {
    long status = 0;
    std::string location, content_range, link;
    std::string body;
    uint64_t cap = 0;            // most body bytes accepted
    uint64_t range_bytes = 0;    // bytes asked for by Range (0: no range)
    bool over_cap = false, ignored_range = false;
    std::chrono::steady_clock::time_point last_byte{}; // when the last body bytes came (a trickle or a silence)
};

size_t on_header(char * data, size_t size, size_t n, void * user) {
    auto & x = *static_cast<exchange *>(user);
    const std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {
        const size_t sp = line.find(' ');
        x.status = sp == std::string_view::npos ? 0 : std::atol(std::string(line.substr(sp + 1, 3)).c_str());
        x.location.clear(), x.content_range.clear(), x.link.clear();
        return size * n;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return size * n;
    const std::string name = detail::ascii_lower(std::string(line.substr(0, colon)));
    const std::string value = trim(line.substr(colon + 1));
    if (name == "location") x.location = value;
    else if (name == "content-range") x.content_range = value;
    else if (name == "link") x.link = value;
    return size * n;
}

size_t on_body(char * data, size_t size, size_t n, void * user) {
    auto & x = *static_cast<exchange *>(user);
    uint64_t limit = x.cap;
    if (x.status >= 300 && x.status < 400) limit = k_redirect_body_cap;
    // A 200 to a range request carries the whole file: take no more than was asked for.
    if (x.range_bytes > 0 && x.status == 200) limit = std::min(limit, x.range_bytes);
    if (x.body.size() + size * n > limit) {
        (x.range_bytes > 0 && x.status == 200 ? x.ignored_range : x.over_cap) = true;
        return 0; // aborts the transfer: CURLE_WRITE_ERROR
    }
    x.body.append(data, size * n);
    x.last_byte = std::chrono::steady_clock::now();
    return size * n;
}

// "bytes 0-7/12345" -> 12345; 0 when absent or "*".
uint64_t total_of(const std::string & content_range) {
    const size_t slash = content_range.rfind('/');
    if (slash == std::string::npos) return 0;
    return std::strtoull(content_range.c_str() + slash + 1, nullptr, 10);
}

// Link: <https://host/api/...?cursor=x>; rel="next" -> the URL.
std::string next_of(const std::string & link) {
    size_t at = 0;
    while ((at = link.find('<', at)) != std::string::npos) {
        const size_t close = link.find('>', at);
        if (close == std::string::npos) break;
        const size_t comma = link.find(',', close);
        const std::string params = link.substr(close, comma == std::string::npos ? std::string::npos : comma - close);
        if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos) {
            return link.substr(at + 1, close - at - 1);
        }
        at = close;
    }
    return "";
}

// Progress of one hop for remote_options::progress: silent for the first `after`, then at most 4 calls a second.
struct progress_state {
    const remote_options * o = nullptr;
    std::string_view what;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last;
    bool reported = false;
    uint64_t bytes = 0, total = 0;
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

int on_progress(void * user, curl_off_t dl_total, curl_off_t dl_now, curl_off_t, curl_off_t) {
    auto & p = *static_cast<progress_state *>(user);
    p.bytes = uint64_t(std::max<curl_off_t>(0, dl_now));
    p.total = uint64_t(std::max<curl_off_t>(0, dl_total));
    const auto now = std::chrono::steady_clock::now();
    if (now - p.start < p.o->progress_after || (p.reported && now - p.last < std::chrono::milliseconds(250))) return 0;
    p.reported = true;
    p.last = now;
    p.o->progress({p.what, p.bytes, p.total, p.seconds(), false});
    return 0;
}

[[noreturn]] void throw_status(long status, bool token_sent, std::string_view what) {
    switch (status) {
    case 401:
        throw error::at(what, token_sent ? "HTTP 401 unauthorized: HF_TOKEN was sent but was refused (expired or wrong?)"
                                         : "HTTP 401 unauthorized: the repository is gated or private; set HF_TOKEN to a "
                                           "token with access");
    case 403:
        throw error::at(what, "HTTP 403 forbidden: the token has no access (accept the model's terms on its Hub page, "
                              "or use a token with read access)");
    case 404: throw error::at(what, "HTTP 404 not found: no such repository, revision or file");
    case 416: throw error::at(what, "HTTP 416 range not satisfiable: the file is shorter than its listing says");
    case 429: throw error::at(what, "HTTP 429 too many requests: the Hub is rate-limiting; wait, or set HF_TOKEN");
    default: throw error::at(what, fmt::format("HTTP {} from the server", status));
    }
}

} // namespace

std::string url_origin(const std::string & url) {
    CURLU * u = curl_lib().url();
    std::string out;
    char *scheme = nullptr, *host = nullptr, *port = nullptr;
    if (curl_lib().url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
        curl_lib().url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_lib().url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_lib().url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        out = detail::ascii_lower(fmt::format("{}://{}:{}", scheme, host, port));
    }
    curl_lib().free(scheme), curl_lib().free(host), curl_lib().free(port);
    curl_lib().url_cleanup(u);
    return out;
}

struct http_client::impl {
    remote_options o;
    remote_stats * stats = nullptr;
    CURL * curl = nullptr;
    std::string origin;  // the endpoint's: the only origin the token goes to
};

http_client::http_client(const remote_options & o, remote_stats * stats) {
    // A line break in the token would smuggle headers into every request; say so without printing it.
    if (std::any_of(o.token.begin(), o.token.end(), [](unsigned char c) { return c < 0x20 && c != '\t'; })) {
        throw error("HF_TOKEN: holds control characters (a line break?)");
    }
    CURL * curl = curl_lib().easy_init();
    if (!curl) throw error("remote: cannot initialise libcurl");
    p_.reset(new impl{o, stats, curl, url_origin(o.endpoint)});
}

http_client::~http_client() {
    curl_lib().easy_cleanup(p_->curl);
}

http_response http_client::get(const std::string & start_url, std::optional<byte_range> range, uint64_t cap,
                               std::string_view what) {
    std::string url = start_url;
    for (int hop = 0; hop <= k_max_redirects; ++hop) {
        CURL * c = p_->curl;
        curl_lib().easy_reset(c);
        exchange x;
        x.cap = cap;
        x.range_bytes = range ? range->last - range->first + 1 : 0;
        const bool send_token = !p_->o.token.empty() && !p_->origin.empty() && url_origin(url) == p_->origin;
        curl_slist * headers = nullptr;
        const std::string auth = "Authorization: Bearer " + trim(p_->o.token);
        if (send_token) headers = curl_lib().slist_append(headers, auth.c_str());
        const std::string range_text = range ? fmt::format("{}-{}", range->first, range->last) : "";
        curl_lib().easy_setopt(c, CURLOPT_URL, url.c_str());
        curl_lib().easy_setopt(c, CURLOPT_HTTPGET, 1L);
        curl_lib().easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_lib().easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_lib().easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
        curl_lib().easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_lib().easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_lib().easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        // silence: no connection within silence_timeout_s, or under 1 byte/s for that long once connected (a Hub that
        // accepts and never answers), ends the request; bytes that keep coming may take up to timeout_s
        const long silence = std::max(1L, p_->o.silence_timeout_s);
        curl_lib().easy_setopt(c, CURLOPT_CONNECTTIMEOUT, silence);
        curl_lib().easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_lib().easy_setopt(c, CURLOPT_LOW_SPEED_TIME, silence);
        const long overall = std::max(p_->o.timeout_s, silence);
        curl_lib().easy_setopt(c, CURLOPT_TIMEOUT, overall);
        curl_lib().easy_setopt(c, CURLOPT_USERAGENT, "kvfit/0.1");
        curl_lib().easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        if (range) curl_lib().easy_setopt(c, CURLOPT_RANGE, range_text.c_str());
        curl_lib().easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_lib().easy_setopt(c, CURLOPT_HEADERDATA, &x);
        curl_lib().easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_lib().easy_setopt(c, CURLOPT_WRITEDATA, &x);
        progress_state prog{&p_->o, what};
        if (p_->o.progress) {
            curl_lib().easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
            curl_lib().easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
            curl_lib().easy_setopt(c, CURLOPT_XFERINFODATA, &prog);
        }
        const CURLcode rc = curl_lib().easy_perform(c);
        if (prog.reported) p_->o.progress({what, x.body.size(), prog.total, prog.seconds(), true});
        curl_lib().slist_free_all(headers);
        if (p_->stats) {
            ++p_->stats->requests;
            p_->stats->bytes += x.body.size();
            const std::string result = x.status > 0 ? fmt::format("{}, {} B", x.status, x.body.size())
                                                    : fmt::format("no response: {}", curl_lib().easy_strerror(rc));
            p_->stats->log.push_back(fmt::format("GET {}{} -> {}", without_query(url), range ? " range " + range_text : "", result));
        }
        if (x.ignored_range) {
            throw error::at(what, fmt::format("the server ignored the Range request (HTTP 200 with the whole file); "
                                              "stopped after {} bytes: kvfit reads headers only", x.body.size()));
        }
        if (x.over_cap) throw error::at(what, fmt::format("response exceeds the limit of {} bytes", cap));
        curl_off_t connected_us = 0, total_us = 0;
        curl_lib().easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connected_us);
        curl_lib().easy_getinfo(c, CURLINFO_TOTAL_TIME_T, &total_us);
        if (rc == CURLE_OPERATION_TIMEDOUT && connected_us > 0) {
            std::string why;
            if (x.status == 0) {
                why = fmt::format("{} accepted the connection but sent nothing for {} s (KVFIT_HTTP_TIMEOUT sets the limit)",
                                  host_of(url), silence);
            } else if (total_us >= curl_off_t(overall) * 1000000) {
                why = fmt::format("{}: the answer did not end within {} s ({} bytes so far)", host_of(url), overall,
                                  x.body.size());
            } else if (x.last_byte != std::chrono::steady_clock::time_point{} &&
                       std::chrono::steady_clock::now() - x.last_byte < std::chrono::seconds(silence)) {
                // bytes still came, under CURLOPT_LOW_SPEED_LIMIT (1 byte/s) averaged over `silence` seconds: a trickle
                why = fmt::format("{} is too slow: {} bytes in {:.0f} s, under the low-speed limit of 1 byte/s over {} s "
                                  "(KVFIT_HTTP_TIMEOUT sets the limit)", host_of(url), x.body.size(),
                                  double(total_us) / 1e6, silence);
            } else {
                why = fmt::format("{} stopped sending after {} bytes: nothing for {} s (KVFIT_HTTP_TIMEOUT sets the limit)",
                                  host_of(url), x.body.size(), silence);
            }
            throw unreachable_error(error::at(what, why).what());
        }
        if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT ||
            rc == CURLE_COULDNT_RESOLVE_PROXY) {
            throw unreachable_error(error::at(what, fmt::format("cannot reach {}: {} (no network? offline mode reads the cache)",
                                                                host_of(url), curl_lib().easy_strerror(rc))).what());
        }
        if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CONNECT_ERROR) {
            throw error::at(what, fmt::format("TLS with {} failed: {}", host_of(url), curl_lib().easy_strerror(rc)));
        }
        if (rc != CURLE_OK) throw error::at(what, fmt::format("{}: {}", host_of(url), curl_lib().easy_strerror(rc)));
        if (x.status >= 300 && x.status < 400 && x.status != 304) {
            const std::string next = x.location.empty() ? "" : resolve(url, x.location);
            if (next.empty()) throw error::at(what, fmt::format("HTTP {} redirect without a usable Location", x.status));
            url = next;
            continue;
        }
        if (x.status < 200 || x.status >= 300) throw_status(x.status, send_token, what);
        if (range && x.status == 206 && !x.content_range.starts_with(fmt::format("bytes {}-", range->first))) {
            throw error::at(what, fmt::format("asked for bytes {}, the server sent '{}'", range_text, x.content_range));
        }
        http_response r;
        r.status = x.status;
        r.body = std::move(x.body);
        r.total_bytes = x.status == 206 ? total_of(x.content_range) : r.body.size();
        r.next_url = x.link.empty() ? "" : next_of(x.link);
        if (!r.next_url.empty()) r.next_url = resolve(url, r.next_url);
        return r;
    }
    throw error::at(what, fmt::format("more than {} redirects", k_max_redirects));
}

} // namespace kvfit::detail
