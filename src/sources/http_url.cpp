// url_path_escape (src/sources/http.h): needs no HTTP library, so it is built with or without KVFIT_WITH_CURL.
#include "sources/http.h"

#include <cctype>
#include <fmt/format.h>

namespace kvfit::detail {

std::string url_path_escape(std::string_view path) {
    std::string out;
    for (unsigned char c : path) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') out += char(c);
        else out += fmt::format("%{:02X}", c);
    }
    return out;
}

} // namespace kvfit::detail
