#pragma once
// The web page's files (web/dist, built by vite) embedded into the binary at build time by cmake/embed.cmake,
// so `kvfit serve` needs no file and no network at run time.
#include "core/embedded.h"

#include <string_view>
#include <vector>

namespace kvfit::detail {

/// Every file under web/dist, path relative to it ("index.html", "assets/index-1a2b3c.js").
const std::vector<embedded_file> & web_files();

/// One file to serve: its bytes and the Content-Type its extension calls for.
struct web_asset {
    std::string_view bytes;
    std::string_view content_type; ///< "text/html; charset=utf-8", "text/javascript", "text/css", ...
};

/// The file at `path` (relative to web/dist, no leading slash), or nullptr. Paths holding ".." never match.
const web_asset * find_web_asset(std::string_view path);

} // namespace kvfit::detail
