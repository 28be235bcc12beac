#pragma once
// Small text helpers shared by the sources (catalog names, weight format names).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

namespace kvfit::detail {

/// ASCII case-insensitive equality: "Q4_K_M" == "q4_k_m", "qwen/qwen3.5-9b" == "Qwen/Qwen3.5-9B".
inline bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
               return std::tolower(x) == std::tolower(y);
           });
}

/// ASCII case-insensitive suffix test: iends_with("MODEL.GGUF", ".gguf").
inline bool iends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && iequals(s.substr(s.size() - suffix.size()), suffix);
}

/// The entry of `dir` called `name` in any case: `dir / name` when it exists (or nothing matches, so that the
/// caller's "missing" message names the usual spelling), else the first entry equal to it ignoring ASCII case:
/// "CONFIG.JSON", "Model.Safetensors" (Windows and macOS file systems keep whatever case a download used).
inline std::filesystem::path find_entry_icase(const std::filesystem::path & dir, std::string_view name) {
    std::error_code ec;
    const std::filesystem::path exact = dir / std::string(name);
    if (std::filesystem::exists(exact, ec)) return exact;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (iequals(it->path().filename().string(), name)) return it->path();
    }
    return exact;
}

} // namespace kvfit::detail
