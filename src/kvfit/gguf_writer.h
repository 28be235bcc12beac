#pragma once
/// @file gguf_writer.h
/// A GGUF writer for fixtures: metadata of every value type, tensor infos, alignment, and tensor data written as
/// zeros, as a sparse hole (seek + ftruncate: a 13 GB model takes no disk), or left out (header-only file).
/// Used by kvfit's tests, the fuzz seed corpus, the `kvfit-gguf-write` tool and the conformance suite.
/// Layout written: ggml/include/gguf.h in llama.cpp (see src/sources/gguf.cpp).

#include "kvfit/ggml_type.h"
#include "kvfit/gguf.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit {

/// A metadata value to write, already encoded (the bytes after its type tag).
class gguf_wvalue {
public:
    /// Scalars, one per GGUF value type (gguf.h GGUF_TYPE_*): the value in little-endian, as ggml writes it;
    /// a string is a u64 length and its bytes, without a terminator.
    static gguf_wvalue u8(uint8_t v);
    static gguf_wvalue i8(int8_t v);
    static gguf_wvalue u16(uint16_t v);
    static gguf_wvalue i16(int16_t v);
    static gguf_wvalue u32(uint32_t v);
    static gguf_wvalue i32(int32_t v);
    static gguf_wvalue f32(float v);
    static gguf_wvalue boolean(bool v);
    static gguf_wvalue u64(uint64_t v);
    static gguf_wvalue i64(int64_t v);
    static gguf_wvalue f64(double v);
    static gguf_wvalue string(std::string_view v);
    /// Array of `elem` values; every element must have type `elem` (nested arrays: elem == array).
    /// Throws kvfit::error "gguf writer: array element i has type x, expected y" otherwise.
    static gguf_wvalue array(gguf_type elem, const std::vector<gguf_wvalue> & elems);
    /// Shorthands for arrays of one scalar type.
    static gguf_wvalue array_u32(const std::vector<uint32_t> & v);
    static gguf_wvalue array_i32(const std::vector<int32_t> & v);
    static gguf_wvalue array_f32(const std::vector<float> & v);
    static gguf_wvalue array_string(const std::vector<std::string> & v);

    /// The GGUF value type of this value (array for arrays).
    gguf_type type() const { return type_; }
    gguf_type elem_type() const { return elem_; }
    /// Encoded bytes after the type tag (arrays: element type, count, elements).
    const std::string & bytes() const { return bytes_; }

private:
    gguf_type type_ = gguf_type::u8;
    gguf_type elem_ = gguf_type::u8;
    std::string bytes_;
};

/// How write() stores the tensor data section.
enum class gguf_data : uint8_t {
    zeros,        ///< zero bytes written out (real disk use)
    sparse,       ///< the file extended with ftruncate: same size, no disk blocks (llama.cpp can map it)
    header_only,  ///< the file ends right after the tensor infos (no padding, no data)
};

/// Builds a GGUF file in memory (header) and on disk (header + data). Keys and tensors are written in the order
/// added. Tensor offsets are assigned contiguously with alignment padding, as gguf_add_tensor does, unless
/// given explicitly (for hostile fixtures).
class gguf_writer {
public:
    /// version: 2 or 3 (the layouts are the same). Anything else is written as given (for hostile fixtures).
    explicit gguf_writer(uint32_t version = 3) : version_(version) {}

    /// Append a key. "general.alignment" (u32) also sets the padding used for offsets and the data section.
    void add(std::string key, gguf_wvalue value);
    /// Append a tensor info of ggml `type` and `shape` (ne[0] first, 1-4 dims). Throws kvfit::error when the
    /// row length is not a multiple of the type's block size.
    void add_tensor(std::string name, ggml_type type, std::vector<uint64_t> shape);
    /// As add_tensor with an explicit data offset (may be unaligned or overlapping; the next automatic offset
    /// continues after the largest end so far).
    void add_tensor_at(std::string name, ggml_type type, std::vector<uint64_t> shape, uint64_t offset);
    /// A minimal SentencePiece vocabulary of n_vocab >= 259 tokens, as the reference files hold: tokenizer.ggml.model
    /// "llama", tokens "<unk>" "<s>" "</s>", 256 byte tokens "<0x00>".., fillers "\u2581t0".., scores 0, token types,
    /// bos 1, eos 2, unk 0. llama.cpp needs a real tokenizer type to load a model (MEASURING.md).
    void add_spm_vocab(uint32_t n_vocab);

    /// Magic through the last tensor info, no padding: the bytes of a header-only file.
    std::string header() const;
    /// Offset of the data section: header().size() rounded up to the alignment.
    uint64_t data_offset() const;
    /// Bytes of the data section: end of the last tensor padded to the alignment.
    uint64_t data_bytes() const;
    /// Write the file. Throws kvfit::error "<path>: cannot write: <reason>".
    void write(const std::string & path, gguf_data data = gguf_data::sparse) const;

private:
    struct tensor { std::string name; ggml_type type; std::vector<uint64_t> shape; uint64_t offset; uint64_t bytes; };
    uint32_t version_;
    uint64_t alignment_ = gguf_default_alignment;
    uint64_t next_offset_ = 0;
    std::vector<std::pair<std::string, gguf_wvalue>> kvs_;
    std::vector<tensor> tensors_;
};

} // namespace kvfit
