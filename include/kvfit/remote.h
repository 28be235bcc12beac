#pragma once
/// @file remote.h
/// Remote models on the Hugging Face Hub, read by HTTP Range requests: config.json, the safetensors headers and
/// the GGUF headers, never the tensor data. A 70B model costs a few hundred kB and a handful of requests.
///
/// Spellings (`kvfit hf:...`):
///   hf:org/name                  config.json + safetensors (or the repository's one GGUF, or its Q4_K_M)
///   hf:org/name@revision         the same at a branch, tag or commit
///   hf:org/name:file.gguf        that GGUF file (a path in the repository; any shard of a split model)
///   hf:org/name:Q4_K_M           the GGUF whose name holds that quantization, as llama.cpp's -hf picks it
///
/// Requests, for a repository at revision R of endpoint E (default https://huggingface.co, or $HF_ENDPOINT):
///   GET E/api/models/org/name/tree/R?recursive=true    the file listing (sizes, ids), following Link: rel="next"
///   GET E/org/name/resolve/R/<file>                    config.json and model.safetensors.index.json, whole
///   GET ... Range: bytes=0-65535                       a safetensors header; a second Range for the rest when the
///                                                      header is longer than 64 KiB: at most 2 requests per file
///   GET ... Range: bytes=0-2097151, then growing       a GGUF header, until the last tensor info has arrived
///                                                      (gguf_file::parse_prefix estimates how far that is; each
///                                                      further request asks 1/8 over the estimate and at least
///                                                      half again the bytes so far): one request for a header
///                                                      under 2 MiB; measured on the test Hub, 2 for 2.7 MB, 3 for
///                                                      a Qwen3-shaped 5.7 MB, 4 for 7.5 MB (tests/test_remote_guards.cpp)
/// Redirects (the Hub sends large files to a CDN) are followed by kvfit itself, at most 10, keeping the Range;
/// the Authorization header carries $HF_TOKEN only to the endpoint's own scheme, host and port, never to another.
/// TLS certificates and host names are verified. The token is never printed or logged.
///
/// Cache: every file fetched is stored under the cache directory, keyed by the listing's file id (git blob or LFS
/// sha256), so a later run fetches only the listing, and `--offline` (remote_options::offline) fetches nothing:
///   $KVFIT_CACHE, else $XDG_CACHE_HOME/kvfit, else ~/.cache/kvfit
///     hf/<org>/<name>/tree/<revision>.json     the listing
///     hf/<org>/<name>/files/<id>               the file (config.json, index) or its header bytes (safetensors, GGUF)
/// When the Hub cannot be reached (no network, DNS, refused, timed out) and the listing is in the cache, the cached
/// copy is used with a warning ("hf:org/name: the Hub cannot be reached (...): using the cached listing").

#include "kvfit/model.h"
#include "kvfit/sources.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// How far one transfer has got (remote_options::progress).
struct transfer_progress {
    std::string_view what;      ///< the file: "hf:org/name/model-Q4_K_M.gguf"
    uint64_t bytes = 0;         ///< body bytes received so far
    uint64_t total_bytes = 0;   ///< bytes this request will bring (the range asked for, or the size announced); 0 unknown
    double seconds = 0;         ///< since the request started
    bool done = false;          ///< the last call for this transfer
};

/// Where and how to fetch. remote_options_from_env() fills it from the environment.
struct remote_options {
    std::string endpoint = "https://huggingface.co"; ///< scheme://host[:port] of the Hub ($HF_ENDPOINT)
    std::string token;        ///< $HF_TOKEN; sent as "Authorization: Bearer" to the endpoint's origin only
    std::string cache_dir;    ///< see the file comment; "" disables the cache
    bool offline = false;     ///< read the cache only, make no request
    long timeout_s = 60;      ///< per request, seconds, while bytes keep coming
    /// Seconds a request may go without a byte either way before it is abandoned: to connect, and then for the answer
    /// (libcurl's low-speed limit of 1 byte/s over this time). A Hub that accepts the connection and never answers is
    /// left after this long with "... accepted the connection but sent nothing for 10 s". $KVFIT_HTTP_TIMEOUT, 1-600.
    long silence_timeout_s = 10;
    /// Called for a transfer still running after `progress_after`: about 4 times a second, then once with `done`.
    /// Empty: no progress. The CLI prints it on stderr (file and bytes).
    std::function<void(const transfer_progress &)> progress;
    std::chrono::milliseconds progress_after{1000};
    /// Hugging Face hub caches read before any request (local.h: huggingface_hub's and llama.cpp -hf's layout):
    /// a snapshot holding what the spelling asks for (config.json with all its safetensors, or the GGUF selected)
    /// is planned from disk and nothing is fetched. remote_options_from_env() fills it (local_roots_from_env).
    std::vector<std::string> hub_cache;
};

/// What a remote load cost. `bytes` counts response bodies, redirects and aborted bodies included.
struct remote_stats {
    uint64_t requests = 0;            ///< HTTP requests made (each redirect hop counts)
    uint64_t bytes = 0;               ///< body bytes received
    uint64_t cache_hits = 0;          ///< files read from the cache instead of the network
    std::vector<std::string> log;     ///< one line per request: "GET <url without query> [range a-b] -> 206, n B"
};

/// A parsed "hf:" spelling.
struct hf_spec {
    std::string repo;               ///< "org/name"
    std::string revision = "main";  ///< branch, tag or commit
    std::string selector;           ///< "" , a file path ending in .gguf, or a quantization name ("Q4_K_M")
};

/// Parse "hf:org/name[@revision][:selector]". Throws kvfit::error "<spec>: ..." when the repository is not
/// org/name of [A-Za-z0-9._-] (no "..") or the revision holds characters other than [A-Za-z0-9._/-].
hf_spec parse_hf_spec(std::string_view spec);

/// The cache directory the environment names: $KVFIT_CACHE, else $XDG_CACHE_HOME/kvfit, else $HOME/.cache/kvfit;
/// "" when none of them is set.
std::string default_cache_dir();

/// Options from $HF_ENDPOINT (trailing '/' removed), $HF_TOKEN, $KVFIT_HTTP_TIMEOUT (silence_timeout_s), default_cache_dir()
/// and the hub caches (local.h). Throws kvfit::error "KVFIT_HTTP_TIMEOUT 'x': expected whole seconds from 1 to 600".
remote_options remote_options_from_env();

/// Load a Hub repository (see the file comment for what is fetched). config.json + safetensors give the shape of
/// config.json and exact weights (apply_safetensors_weights), a GGUF gives model_from_gguf of its headers; the plan
/// is the one of the same files on disk. m.source is the spelling given.
/// Throws kvfit::error with one line naming the repository and file: HTTP 401 (gated or private: set HF_TOKEN),
/// 403 (the token has no access), 404 (no such repository, revision or file), a server that ignores Range (stopped
/// after the bytes asked for), no network ("cannot reach <host>"), TLS failures, a file missing from the cache with
/// `offline`, no config.json nor GGUF, an ambiguous or unknown GGUF selector, and every header error.
model_desc model_from_hf(std::string_view spec, const remote_options & o, warnings & warn, remote_stats * stats = nullptr);

} // namespace kvfit
