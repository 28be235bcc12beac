#pragma once
/// @file error.h
/// The one exception type kvfit throws for bad input, with helpers that keep the wording uniform.
/// Messages are a single lower-case line, "where: what", with the value and the limit stated.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kvfit {

/// Bad input: a file that cannot be read, a config with a missing or absurd field, a flag out of range.
/// The CLI catches it once (app/main.cpp), prints "kvfit: <what()>" and exits with status 2.
/// Never thrown for a plan that does not fit: that is a result, not an error.
class error : public std::runtime_error {
public:
    explicit error(const std::string & msg) : std::runtime_error(msg) {}

    /// "<where>: missing required key '<key>'"
    static error missing_key(std::string_view where, std::string_view key);
    /// "<where>: key '<key>': <what>" — a key that is present but unusable (wrong type, absurd value).
    static error bad_key(std::string_view where, std::string_view key, std::string_view what);
    /// "<where>: offset 0x<hex>: <what>" — for binary formats (GGUF, safetensors).
    static error at_offset(std::string_view where, uint64_t offset, std::string_view what);
    /// "<where>: <what>"
    static error at(std::string_view where, std::string_view what);
};

} // namespace kvfit
