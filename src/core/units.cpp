// Sizes and counts for people (include/kvfit/units.h).
#include "kvfit/units.h"

#include "kvfit/error.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace kvfit {
namespace {

// The units parse_size reads, for its messages (K, M, G, T alone are the binary ones).
constexpr const char * k_units = "TiB, TB, GiB, GB, MiB, MB, KiB, KB or B; T, G, M, K = TiB, GiB, MiB, KiB";

} // namespace

uint64_t parse_size(std::string_view text) {
    const std::string where = fmt::format("size '{}'", text);
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    const std::string_view number = text.substr(0, i);
    const size_t unit_at = text.find_first_not_of(' ', i); // "24 GiB", as kvfit prints sizes
    const std::string_view typed = unit_at == std::string_view::npos ? std::string_view{} : text.substr(unit_at);
    std::string unit(typed);
    std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
    if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || (unit.empty() && i < text.size())) {
        throw error(fmt::format("{}: expected a number with an optional unit ({})", where, k_units));
    }
    // a lower-case b is a bit (Kb, Mb, Gb, kb: kilobit ...): no byte size is read from it
    if (!typed.empty() && typed.back() == 'b' && (typed.size() == 1 || std::string_view("kKmMgGtT").find(typed[0]) != std::string_view::npos)) {
        const char p = char(std::toupper(static_cast<unsigned char>(typed[0])));
        const int e = p == 'K' ? 1 : p == 'M' ? 2 : p == 'G' ? 3 : p == 'T' ? 4 : 0;
        throw error(e == 0 ? fmt::format("{}: a lower-case b is a bit; write {}B", where, number)
                           : fmt::format("{}: a lower-case b is a bit; write {}{}B (10^{} B) or {}{}iB (2^{} B)", where,
                                         number, p, 3 * e, number, p, 10 * e));
    }
    struct unit_row { std::string_view name; double factor; };
    static constexpr unit_row units[] = {
        {"", 1}, {"b", 1},
        {"k", 1024.0}, {"kib", 1024.0}, {"kb", 1e3},
        {"m", 1048576.0}, {"mib", 1048576.0}, {"mb", 1e6},
        {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9},
        {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12},
    };
    const unit_row * u = nullptr;
    for (const auto & row : units) {
        if (row.name == unit) u = &row;
    }
    if (!u) throw error(fmt::format("{}: unknown unit '{}' (use {})", where, typed, k_units));
    // Exact for integers and for decimals with up to 9 fraction digits: scale in integer arithmetic.
    const size_t dot = number.find('.');
    const std::string_view int_part = number.substr(0, dot);
    const std::string_view frac_part = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
    if (int_part.size() > 15 || frac_part.size() > 9) throw error(fmt::format("{}: too many digits", where));
    uint64_t ip = 0, fp = 0;
    if (!int_part.empty()) std::from_chars(int_part.data(), int_part.data() + int_part.size(), ip);
    if (!frac_part.empty()) std::from_chars(frac_part.data(), frac_part.data() + frac_part.size(), fp);
    const double scale = std::pow(10.0, double(frac_part.size()));
    const long double value = (static_cast<long double>(ip) * scale + fp) * u->factor / scale;
    if (value > static_cast<long double>(1ull << 60)) throw error(fmt::format("{}: exceeds 2^60 bytes", where));
    return static_cast<uint64_t>(value + 1e-6L);
}

uint64_t parse_size_flag(std::string_view flag, std::string_view text) {
    const bool bare = std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }) &&
                      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; }) &&
                      std::count(text.begin(), text.end(), '.') <= 1;
    if (bare && text.find_first_not_of("0.") != std::string_view::npos) {
        throw error(fmt::format("{} {}: no unit; write {}GiB (2^30 B) or {}GB (10^9 B)", flag, text, text, text));
    }
    try {
        return parse_size(text);
    } catch (const error & e) {
        throw error(fmt::format("{}: {}", flag, e.what()));
    }
}

std::string with_commas(uint64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string human_bytes(uint64_t bytes) {
    const double b = double(bytes);
    if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
    if (bytes >= (1ull << 20)) return fmt::format("{:.2f} MiB", b / double(1ull << 20));
    if (bytes >= (1ull << 10)) return fmt::format("{:.2f} KiB", b / 1024.0);
    return fmt::format("{} B", bytes);
}

} // namespace kvfit
