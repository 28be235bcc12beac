#pragma once
/// @file safetensors_writer.h
/// A safetensors writer for fixtures: tensors laid out contiguously in the order added, the header padded with
/// spaces to a multiple of 8 bytes (as huggingface/safetensors writes it), and the data section written as a
/// sparse hole (ftruncate), so a fixture of a 70B model takes no disk. Used by the tests, the fuzz seeds and the
/// loopback Hub of the remote tests. Layout: include/kvfit/safetensors.h.

#include "kvfit/safetensors.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvfit {

/// Writes safetensors files for tests and fuzz seeds: an 8-byte little-endian header length, the JSON header
/// (tensors in the order added, contiguous data offsets, optional __metadata__), then the data section as a
/// sparse hole. The format's rules are those huggingface/safetensors documents; the reader checks them.
class safetensors_writer {
public:
    /// Append a tensor of `dtype` and `shape` at the end of the data section. Its size is
    /// n_elements * st_dtype_bits(dtype) / 8 bytes (rounded up for a sub-byte type that does not fill a byte).
    void add(std::string name, st_dtype dtype, std::vector<uint64_t> shape);
    /// Append a __metadata__ string pair.
    void add_metadata(std::string key, std::string value);

    /// The first 8 + N bytes of the file: the length and the JSON header.
    std::string header() const;
    /// Size of the data section, bytes.
    uint64_t data_bytes() const { return next_; }
    /// Size of the whole file: header().size() + data_bytes().
    uint64_t file_bytes() const { return header().size() + next_; }
    /// Write the file, the data section as a hole. Throws kvfit::error "<path>: cannot write: <reason>".
    void write(const std::string & path) const;

private:
    struct tensor { std::string name; st_dtype dtype; std::vector<uint64_t> shape; uint64_t begin, end; };
    std::vector<tensor> tensors_;
    std::vector<std::pair<std::string, std::string>> metadata_;
    uint64_t next_ = 0;
};

} // namespace kvfit
