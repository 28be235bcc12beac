#pragma once
// Files under data/ embedded into the library at build time (cmake/embed.cmake).
#include <string_view>
#include <vector>

namespace kvfit::detail {

/// One embedded file: its path relative to data/ (e.g. "catalog/Qwen3.5-9B.json") and its bytes.
struct embedded_file {
    std::string_view path;
    std::string_view bytes;
};

/// Every file under data/ (*.json, *.csv), sorted by path as the build globbed them.
const std::vector<embedded_file> & embedded_files();

/// The bytes of the embedded file at `path` (relative to data/); empty view when absent.
std::string_view embedded(std::string_view path);

} // namespace kvfit::detail
