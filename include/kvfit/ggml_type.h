#pragma once
/// @file ggml_type.h
/// ggml tensor element types: ids as stored in GGUF, names, block sizes and bytes per block.
/// Source of every number: ggml/include/ggml.h (enum ggml_type) and ggml/src/ggml-common.h (block_* structs),
/// as tabulated in type_traits[] of ggml/src/ggml.c.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvfit {

/// GGUF/ggml type id (the u32 stored in a GGUF tensor info). Ids 4, 5, 31-33 and 36-38 were removed from ggml.
enum class ggml_type : uint32_t {
    f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8, q8_1 = 9,
    q2_k = 10, q3_k = 11, q4_k = 12, q5_k = 13, q6_k = 14, q8_k = 15,
    iq2_xxs = 16, iq2_xs = 17, iq3_xxs = 18, iq1_s = 19, iq4_nl = 20, iq3_s = 21, iq2_s = 22, iq4_xs = 23,
    i8 = 24, i16 = 25, i32 = 26, i64 = 27, f64 = 28, iq1_m = 29, bf16 = 30,
    tq1_0 = 34, tq2_0 = 35, mxfp4 = 39,
};

/// Block layout of one type: `block_size` elements are stored in `type_size` bytes.
/// Example: q8_0 stores 32 values in 34 bytes (one f16 scale + 32 int8).
struct ggml_type_traits {
    ggml_type type;
    std::string_view name;   ///< lower-case ggml name, e.g. "q4_K" is spelled "q4_k" here
    uint32_t block_size;     ///< elements per block
    uint32_t type_size;      ///< bytes per block
};

/// Traits of a known type id; std::nullopt for an id ggml does not define (or removed).
std::optional<ggml_type_traits> ggml_traits(uint32_t id);

/// Traits of a known type; never fails for a value of the enum.
const ggml_type_traits & ggml_traits(ggml_type t);

/// Parse a type name, case-insensitive ("f16", "Q8_0", "q4_K"). Throws kvfit::error naming the value
/// and the accepted names when unknown.
ggml_type ggml_type_from_name(std::string_view name);

/// Bytes of a row of `n` elements: n / block_size * type_size, as ggml_row_size().
/// Throws kvfit::error when n is not a multiple of the block size (ggml asserts the same).
uint64_t ggml_row_size(ggml_type t, uint64_t n);

/// True for the quantized types (block_size > 1 or a non-float storage), as ggml_is_quantized().
bool ggml_is_quantized(ggml_type t);

} // namespace kvfit
