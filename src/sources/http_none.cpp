// The HTTP client of a kvfit built with KVFIT_WITH_CURL=OFF (CMakeLists.txt compiles this file instead of
// http.cpp and curl_api.cpp): every hf: model, cached or not, fails with one message saying why.
#include "sources/http.h"

#include "kvfit/error.h"

namespace kvfit::detail {
namespace {
[[noreturn]] void no_http() {
    throw error("hf: models are not available: this kvfit was built with KVFIT_WITH_CURL=OFF (no HTTP client); "
                "give a local .gguf, config.json or model directory");
}
} // namespace

struct http_client::impl {};

http_client::http_client(const remote_options &, remote_stats *) { no_http(); }
http_client::~http_client() = default;

http_response http_client::get(const std::string &, std::optional<byte_range>, uint64_t, std::string_view) { no_http(); }

std::string url_origin(const std::string &) { no_http(); }

} // namespace kvfit::detail
