#pragma once
// Flag values as vLLM, SGLang and Ollama check them (Python's argparse and pydantic fields): numbers in a range, with
// the message "--block-size 'x': expected a number from 1 to 1048576". Shared by their flag parsers; not public API.
#include "kvfit/error.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <type_traits>

namespace kvfit::detail {

/// `text` as a T in [lo, hi]; throws kvfit::error "<flag> '<text>': expected a number from <lo> to <hi>".
/// std::from_chars reads "nan", "inf" and "infinity" into a floating T, and NaN compares false with both bounds:
/// only finite values pass (Python's float() takes "nan" too, but no vLLM or SGLang size or ratio means anything
/// with it).
template <class T>
T number(const std::string & flag, const std::string & text, T lo, T hi) {
    T v{};
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    bool finite = true;
    if constexpr (std::is_floating_point_v<T>) finite = std::isfinite(v);
    if (ec != std::errc() || p != text.data() + text.size() || !finite || v < lo || v > hi) {
        throw error(fmt::format("{} '{}': expected a number from {} to {}", flag, text, lo, hi));
    }
    return v;
}

/// A fraction in (0, 1], as vLLM's Field(gt=0, le=1) and SGLang's mem_fraction_static take it.
/// One message for every value outside it (1.5, nan, 0, -1): "'x': expected a number greater than 0 and at most 1";
/// `below_one`: (0, 1), "... greater than 0 and below 1" (SGLang's --mem-fraction-static).
inline double fraction(const std::string & flag, const std::string & text, bool below_one = false) {
    double v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v) || !(v > 0) || v > 1 || (below_one && v >= 1)) {
        throw error(fmt::format("{} '{}': expected a number greater than 0 and {}", flag, text, below_one ? "below 1" : "at most 1"));
    }
    return v;
}

/// A count in [1, hi], or `def` when not given (empty).
inline uint32_t count(const std::string & flag, const std::string & text, uint32_t def, uint32_t hi = 1u << 30) {
    return text.empty() ? def : number<uint32_t>(flag, text, 1, hi);
}

} // namespace kvfit::detail
