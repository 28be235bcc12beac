// ggml type table. Block sizes and bytes per block from ggml/src/ggml-common.h (block_* structs) and the
// type_traits[] table in ggml/src/ggml.c; QK_K = 256, QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0 = QK8_1 = 32,
// QK4_NL = 32, QK_MXFP4 = 32.
#include "kvfit/ggml_type.h"
#include "kvfit/error.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <fmt/format.h>
#include "core/util.h"

namespace kvfit {
namespace {

constexpr std::array k_traits = {
    //                 type                 name       block  bytes   layout (ggml-common.h)
    ggml_type_traits{ggml_type::f32,     "f32",     1,   4},   // float
    ggml_type_traits{ggml_type::f16,     "f16",     1,   2},   // ggml_half
    ggml_type_traits{ggml_type::q4_0,    "q4_0",    32,  18},  // d f16 + 16 nibble bytes
    ggml_type_traits{ggml_type::q4_1,    "q4_1",    32,  20},  // d, m f16 + 16 bytes
    ggml_type_traits{ggml_type::q5_0,    "q5_0",    32,  22},  // d + qh[4] + 16 bytes
    ggml_type_traits{ggml_type::q5_1,    "q5_1",    32,  24},  // d, m + qh[4] + 16 bytes
    ggml_type_traits{ggml_type::q8_0,    "q8_0",    32,  34},  // d + 32 int8
    ggml_type_traits{ggml_type::q8_1,    "q8_1",    32,  36},  // d, s + 32 int8
    ggml_type_traits{ggml_type::q2_k,    "q2_k",    256, 84},  // scales[16] + qs[64] + d, dmin
    ggml_type_traits{ggml_type::q3_k,    "q3_k",    256, 110}, // hmask[32] + qs[64] + scales[12] + d
    ggml_type_traits{ggml_type::q4_k,    "q4_k",    256, 144}, // d, dmin + scales[12] + qs[128]
    ggml_type_traits{ggml_type::q5_k,    "q5_k",    256, 176}, // d, dmin + scales[12] + qh[32] + qs[128]
    ggml_type_traits{ggml_type::q6_k,    "q6_k",    256, 210}, // ql[128] + qh[64] + scales[16] + d
    ggml_type_traits{ggml_type::q8_k,    "q8_k",    256, 292}, // d f32 + qs[256] + bsums[16] int16
    ggml_type_traits{ggml_type::iq2_xxs, "iq2_xxs", 256, 66},  // d + qs[32] u16
    ggml_type_traits{ggml_type::iq2_xs,  "iq2_xs",  256, 74},  // d + qs[32] u16 + scales[8]
    ggml_type_traits{ggml_type::iq3_xxs, "iq3_xxs", 256, 98},  // d + qs[96]
    ggml_type_traits{ggml_type::iq1_s,   "iq1_s",   256, 50},  // d + qs[32] + qh[8] u16
    ggml_type_traits{ggml_type::iq4_nl,  "iq4_nl",  32,  18},  // d + qs[16]
    ggml_type_traits{ggml_type::iq3_s,   "iq3_s",   256, 110}, // d + qs[64] + qh[8] + signs[32] + scales[4]
    ggml_type_traits{ggml_type::iq2_s,   "iq2_s",   256, 82},  // d + qs[64] + qh[8] + scales[8]
    ggml_type_traits{ggml_type::iq4_xs,  "iq4_xs",  256, 136}, // d + scales_h u16 + scales_l[4] + qs[128]
    ggml_type_traits{ggml_type::i8,      "i8",      1,   1},
    ggml_type_traits{ggml_type::i16,     "i16",     1,   2},
    ggml_type_traits{ggml_type::i32,     "i32",     1,   4},
    ggml_type_traits{ggml_type::i64,     "i64",     1,   8},
    ggml_type_traits{ggml_type::f64,     "f64",     1,   8},
    ggml_type_traits{ggml_type::iq1_m,   "iq1_m",   256, 56},  // qs[32] + qh[16] + scales[8]
    ggml_type_traits{ggml_type::bf16,    "bf16",    1,   2},
    ggml_type_traits{ggml_type::tq1_0,   "tq1_0",   256, 54},  // qs[48] + qh[4] + d
    ggml_type_traits{ggml_type::tq2_0,   "tq2_0",   256, 66},  // qs[64] + d
    ggml_type_traits{ggml_type::mxfp4,   "mxfp4",   32,  17},  // e8m0 scale + qs[16]
};

// k_traits indexed by type id (ids 0..39; -1 where ggml has no type): ggml_traits() is asked once per layer and
// cache of every plan, so a lookup, not a scan.
constexpr uint32_t k_max_id = 40;
constexpr std::array<int8_t, k_max_id> k_index = [] {
    std::array<int8_t, k_max_id> a{};
    for (auto & v : a) v = -1;
    for (size_t i = 0; i < k_traits.size(); ++i) a[static_cast<uint32_t>(k_traits[i].type)] = static_cast<int8_t>(i);
    return a;
}();

} // namespace

std::optional<ggml_type_traits> ggml_traits(uint32_t id) {
    if (id >= k_max_id || k_index[id] < 0) return std::nullopt;
    return k_traits[static_cast<size_t>(k_index[id])];
}

const ggml_type_traits & ggml_traits(ggml_type type) {
    const auto id = static_cast<uint32_t>(type);
    if (id < k_max_id && k_index[id] >= 0) return k_traits[static_cast<size_t>(k_index[id])];
    throw error(fmt::format("ggml: type id {} has no traits", static_cast<uint32_t>(type))); // unreachable for enum values
}

ggml_type ggml_type_from_name(std::string_view name) {
    const std::string n = detail::ascii_lower(std::string(name));
    std::string names;
    for (const auto & t : k_traits) {
        if (t.name == n) return t.type;
        names += names.empty() ? "" : ", ";
        names += t.name;
    }
    throw error(fmt::format("unknown ggml type '{}' (known: {})", name, names));
}

uint64_t ggml_row_size(ggml_type type, uint64_t n) {
    const auto & t = ggml_traits(type);
    if (n % t.block_size != 0) {
        throw error(fmt::format("ggml: row of {} elements is not a multiple of the {} block size {}", n, t.name,
                                t.block_size));
    }
    return n / t.block_size * t.type_size;
}

bool ggml_is_quantized(ggml_type type) {
    switch (type) {
    case ggml_type::f32: case ggml_type::f16: case ggml_type::bf16: case ggml_type::f64:
    case ggml_type::i8: case ggml_type::i16: case ggml_type::i32: case ggml_type::i64:
        return false;
    default:
        return true;
    }
}

} // namespace kvfit
