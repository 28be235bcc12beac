// The one monotone search (include/kvfit/search.h).
#include "kvfit/search.h"

#include <cassert>

namespace kvfit {

std::optional<uint64_t> largest_fitting(uint64_t lo, uint64_t hi, uint64_t step,
                                        const std::function<bool(uint64_t)> & fits) {
    assert(step > 0);
    if (hi < lo) return std::nullopt;
    hi = lo + (hi - lo) / step * step;
    if (fits(hi)) return hi; // the top fits: by monotonicity every value under it does too (one call)
    if (hi == lo || !fits(lo)) return std::nullopt;
    while (hi - lo > step) { // lo fits, hi does not
        const uint64_t mid = lo + (hi - lo) / step / 2 * step;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

std::optional<uint64_t> smallest_fitting(uint64_t lo, uint64_t hi, uint64_t step,
                                         const std::function<bool(uint64_t)> & fits) {
    assert(step > 0);
    if (hi < lo) return std::nullopt;
    hi = lo + (hi - lo) / step * step;
    if (!fits(hi)) return std::nullopt;
    if (fits(lo)) return lo;
    while (hi - lo > step) { // lo does not fit, hi does
        const uint64_t mid = lo + (hi - lo) / step / 2 * step;
        (fits(mid) ? hi : lo) = mid;
    }
    return hi;
}

} // namespace kvfit
