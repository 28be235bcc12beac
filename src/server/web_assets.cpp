// Lookup of the embedded web page files (src/server/web_assets.h).
#include "server/web_assets.h"

#include <map>
#include <string>

namespace kvfit::detail {
namespace {

std::string_view content_type_of(std::string_view path) {
    static const std::pair<std::string_view, std::string_view> types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
        {".png", "image/png"},                 {".json", "application/json"},
        {".ico", "image/x-icon"},
    };
    for (const auto & [ext, type] : types) {
        if (path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext) return type;
    }
    return "application/octet-stream";
}

} // namespace

const web_asset * find_web_asset(std::string_view path) {
    static const std::map<std::string, web_asset, std::less<>> assets = [] {
        std::map<std::string, web_asset, std::less<>> m;
        for (const auto & f : web_files()) m[std::string(f.path)] = {f.bytes, content_type_of(f.path)};
        return m;
    }();
    if (path.find("..") != std::string_view::npos) return nullptr;
    const auto it = assets.find(path);
    return it == assets.end() ? nullptr : &it->second;
}

} // namespace kvfit::detail
