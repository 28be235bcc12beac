// The one monotone search (include/kvfit/search.h): answers on a table of thresholds, the probe sequence of the
// documented example, empty ranges, and agreement with a linear scan on every threshold of a small grid.
#include "kvfit/search.h"

#include <gtest/gtest.h>
#include <vector>

namespace {

struct row { uint64_t lo, hi, step, threshold; std::optional<uint64_t> largest, smallest; };

TEST(search, tables_of_thresholds) {
    // largest: fits(v) = v <= threshold; smallest: fits(v) = v >= threshold
    const row rows[] = {
        {256, 262144, 256, 32768, 32768, 32768},
        {256, 262144, 256, 33000, 32768, 33024},   // between grid points
        {256, 262144, 256, 100, std::nullopt, 256}, // nothing fits / everything fits
        {256, 262144, 256, 1u << 30, 262144, std::nullopt},
        {256, 262000, 256, 1u << 30, 261888, std::nullopt}, // hi rounded down to the grid
        {0, 33, 1, 13, 13, 13},
        {0, 33, 1, 0, 0, 0},
        {1, 131072, 1, 23648, 23648, 23648},
        {5, 4, 1, 10, std::nullopt, std::nullopt},  // empty grid
    };
    for (const auto & r : rows) {
        EXPECT_EQ(kvfit::largest_fitting(r.lo, r.hi, r.step, [&](uint64_t v) { return v <= r.threshold; }), r.largest)
            << r.lo << ".." << r.hi << " step " << r.step << " threshold " << r.threshold;
        EXPECT_EQ(kvfit::smallest_fitting(r.lo, r.hi, r.step, [&](uint64_t v) { return v >= r.threshold; }), r.smallest)
            << r.lo << ".." << r.hi << " step " << r.step << " threshold " << r.threshold;
    }
}

// The example of search.h, probe by probe: the top first (issue 28: a whole plan whose training context fits probes each
// cache type once), then lo, then the bisection llama.cpp's n_ctx search has made since issue 2.
TEST(search, probes_as_documented) {
    std::vector<uint64_t> probes;
    const auto v = kvfit::largest_fitting(256, 262144, 256, [&](uint64_t n) { probes.push_back(n); return n <= 32768; });
    EXPECT_EQ(v, 32768u);
    const std::vector<uint64_t> expected = {262144, 256, 131072, 65536, 32768, 49152, 40960, 36864, 34816, 33792, 33280, 33024};
    EXPECT_EQ(probes, expected);
    probes.clear();
    EXPECT_EQ(kvfit::largest_fitting(256, 262144, 256, [&](uint64_t n) { probes.push_back(n); return true; }), 262144u);
    EXPECT_EQ(probes, std::vector<uint64_t>{262144});
}

TEST(search, agrees_with_a_linear_scan) {
    for (uint64_t step : {1u, 3u, 256u}) {
        for (uint64_t t = 0; t < 60 * step; t += step / 2 + 1) {
            const uint64_t lo = step, hi = 50 * step + 7;
            std::optional<uint64_t> largest, smallest;
            for (uint64_t v = lo; v <= hi; v += step) {
                if (v <= t) largest = v;
                if (v >= t && !smallest) smallest = v;
            }
            EXPECT_EQ(kvfit::largest_fitting(lo, hi, step, [&](uint64_t v) { return v <= t; }), largest) << step << " " << t;
            EXPECT_EQ(kvfit::smallest_fitting(lo, hi, step, [&](uint64_t v) { return v >= t; }), smallest) << step << " " << t;
        }
    }
}

} // namespace
