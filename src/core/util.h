// Private helpers the library's files share (never installed): small pure functions that several sources and
// runtimes need, written once (a unity build compiles several files as one, so each exists once).
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace kvfit::detail {

inline constexpr uint64_t MiB = 1ull << 20; ///< bytes in a mebibyte
inline constexpr uint64_t GiB = 1ull << 30; ///< bytes in a gibibyte

/// n rounded up to a multiple of step (step > 0): ggml's GGML_PAD, llama.cpp's GGML_PAD(n, 256) cell counts.
constexpr uint64_t round_up(uint64_t n, uint64_t step) { return (n + step - 1) / step * step; }

/// The environment variable `name`, or "" when unset.
inline std::string env_str(const char * name) {
    const char * v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

/// v as uint32_t, truncating (a config value already range-checked by its reader)
constexpr uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }

/// s in ASCII lower case (file suffixes, key spellings; no locale).
inline std::string ascii_lower(std::string s) {
    for (char & c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

/// "12.50 MiB" / "1.25 GiB": bytes in binary units with two decimals, as kvfit's reports write them.
inline std::string mib_text(uint64_t bytes) { return fmt::format("{:.2f} MiB", double(bytes) / double(MiB)); }
inline std::string gib_text(uint64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(GiB)); }

} // namespace kvfit::detail
