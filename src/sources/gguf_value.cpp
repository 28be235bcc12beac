// Typed access to GGUF metadata values viewed in place (gguf_value in include/kvfit/gguf.h). The bytes were
// bounds-checked when the file was parsed (src/sources/gguf.cpp), so the walks here only check indices.
#include "kvfit/gguf.h"
#include "kvfit/error.h"

#include <cstring>
#include <fmt/format.h>

namespace kvfit {
namespace {

template <class T> T load(const char * p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

uint64_t scalar_bytes(gguf_type t) {
    switch (t) {
    case gguf_type::u8: case gguf_type::i8: case gguf_type::boolean: return 1;
    case gguf_type::u16: case gguf_type::i16: return 2;
    case gguf_type::u32: case gguf_type::i32: case gguf_type::f32: return 4;
    case gguf_type::u64: case gguf_type::i64: case gguf_type::f64: return 8;
    default: return 0;
    }
}

// Bytes taken by one element of type t starting at p (already validated).
uint64_t element_bytes(gguf_type t, const char * p) {
    if (t == gguf_type::string) return 8 + load<uint64_t>(p);
    if (t != gguf_type::array) return scalar_bytes(t);
    const auto et = gguf_type(load<uint32_t>(p));
    const uint64_t n = load<uint64_t>(p + 4);
    uint64_t size = 12;
    if (et != gguf_type::string && et != gguf_type::array) return size + n * scalar_bytes(et);
    for (uint64_t i = 0; i < n; ++i) size += element_bytes(et, p + size);
    return size;
}

} // namespace

std::optional<int64_t> gguf_value::to_int() const {
    const char * p = raw.data();
    switch (type) {
    case gguf_type::u8: return load<uint8_t>(p);
    case gguf_type::i8: return load<int8_t>(p);
    case gguf_type::u16: return load<uint16_t>(p);
    case gguf_type::i16: return load<int16_t>(p);
    case gguf_type::u32: return load<uint32_t>(p);
    case gguf_type::i32: return load<int32_t>(p);
    case gguf_type::i64: return load<int64_t>(p);
    case gguf_type::boolean: return load<uint8_t>(p) != 0;
    case gguf_type::u64: {
        const uint64_t v = load<uint64_t>(p);
        if (v > uint64_t(INT64_MAX)) return std::nullopt;
        return int64_t(v);
    }
    default: return std::nullopt;
    }
}

std::optional<uint64_t> gguf_value::to_uint() const {
    if (type == gguf_type::u64) return load<uint64_t>(raw.data());
    const auto v = to_int();
    if (!v || *v < 0) return std::nullopt;
    return uint64_t(*v);
}

std::optional<double> gguf_value::to_float() const {
    if (type == gguf_type::f32) return load<float>(raw.data());
    if (type == gguf_type::f64) return load<double>(raw.data());
    if (type == gguf_type::u64) return double(load<uint64_t>(raw.data()));
    const auto v = to_int();
    if (!v) return std::nullopt;
    return double(*v);
}

std::optional<std::string_view> gguf_value::to_string() const {
    if (type != gguf_type::string) return std::nullopt;
    return raw;
}

gguf_value gguf_value::at(uint64_t i, std::string_view where) const {
    if (type != gguf_type::array || i >= n) {
        throw error::at_offset(where, offset, fmt::format("index {} out of range {}", i, is_array() ? n : 0));
    }
    gguf_value e;
    e.type = elem_type;
    const uint64_t fixed = scalar_bytes(elem_type);
    uint64_t p = 0;
    if (fixed > 0) {
        p = i * fixed;
    } else {
        for (uint64_t k = 0; k < i; ++k) p += element_bytes(elem_type, raw.data() + p);
    }
    const char * q = raw.data() + p;
    if (elem_type == gguf_type::string) {
        e.raw = std::string_view(q + 8, load<uint64_t>(q));
        e.offset = offset + p + 8;
    } else if (elem_type == gguf_type::array) {
        e.elem_type = gguf_type(load<uint32_t>(q));
        e.n = load<uint64_t>(q + 4);
        e.raw = std::string_view(q + 12, element_bytes(gguf_type::array, q) - 12);
        e.offset = offset + p + 12;
    } else {
        e.raw = std::string_view(q, fixed);
        e.offset = offset + p;
    }
    return e;
}

} // namespace kvfit
