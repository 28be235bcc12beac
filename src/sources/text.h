#pragma once
// Small text helpers shared by the sources (catalog names, weight format names).
#include <algorithm>
#include <cctype>
#include <string_view>

namespace kvfit::detail {

/// ASCII case-insensitive equality: "Q4_K_M" == "q4_k_m", "qwen/qwen3.5-9b" == "Qwen/Qwen3.5-9B".
inline bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
               return std::tolower(x) == std::tolower(y);
           });
}

} // namespace kvfit::detail
