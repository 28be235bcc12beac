// Private helpers the library's files share (never installed): small pure functions that several sources and
// runtimes need, written once (a unity build compiles several files as one, so each exists once).
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

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

/// Why std::regex must not compile `pattern`, or "" when it may. libstdc++'s compiler recurses once per alternative
/// and reads a back-reference's number (\\N) or a quantifier's bound ({n,m}) into a long with no range check
/// (bits/regex_compiler.tcc _M_alternative, _M_cur_int_value: signed overflow past 18 digits). Refused: a pattern
/// over 1,024 characters, or a run of more than 9 digits (no tensor or module name holds such a number). Matching
/// backtracks: a repeated group that itself repeats ("(.*)*x", "(a+){1000}") takes exponential time on a name it
/// does not match, so nested repetition (a group holding *, + or {n} followed by *, + or {n}) is refused too.
inline std::string regex_unsafe(const std::string & pattern) {
    if (pattern.size() > 1024) return fmt::format("{} characters, more than the 1,024 kvfit compiles", pattern.size());
    size_t run = 0;
    for (const char c : pattern) {
        run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0;
        if (run > 9) return "a number of more than 9 digits, past what std::regex reads safely";
    }
    std::vector<bool> repeats_inside; // per open group: a quantifier met inside it
    bool last_group_repeats = false;  // the group just closed held a quantifier
    const auto quantifier = [](char c) { return c == '*' || c == '+' || c == '{'; };
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        const bool after_group = last_group_repeats;
        last_group_repeats = false;
        if (c == '\\') { ++i; continue; }
        if (c == '[') { // a bracket class: its characters are literal (a ']' first is one of them)
            size_t j = i + 1;
            if (j < pattern.size() && pattern[j] == '^') ++j;
            if (j < pattern.size() && pattern[j] == ']') ++j;
            while (j < pattern.size() && pattern[j] != ']') j += pattern[j] == '\\' ? 2 : 1;
            i = j;
            continue;
        }
        if (c == '(') repeats_inside.push_back(false);
        else if (c == ')' && !repeats_inside.empty()) {
            last_group_repeats = repeats_inside.back();
            repeats_inside.pop_back();
            if (last_group_repeats && !repeats_inside.empty()) repeats_inside.back() = true;
        } else if (quantifier(c)) {
            if (after_group) return "a repeated group that repeats inside (as (.*)*), which std::regex matches in exponential time";
            if (!repeats_inside.empty()) repeats_inside.back() = true;
        }
    }
    return "";
}

/// s in ASCII lower case (file suffixes, key spellings; no locale).
inline std::string ascii_lower(std::string s) {
    for (char & c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

/// "12.50 MiB" / "1.25 GiB": bytes in binary units with two decimals, as kvfit's reports write them.
inline std::string mib_text(uint64_t bytes) { return fmt::format("{:.2f} MiB", double(bytes) / double(MiB)); }
inline std::string gib_text(uint64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(GiB)); }
/// gib_text of a signed figure that may be under zero (a budget overdrawn: "-1.25 GiB").
inline std::string signed_gib_text(int64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(GiB)); }

} // namespace kvfit::detail
