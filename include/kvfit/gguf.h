#pragma once
/// @file gguf.h
/// GGUF reader: header, metadata and tensor infos of a GGUF file (versions 2 and 3), without reading tensor data.
/// Only the header bytes are read; keys, strings and arrays are views into them, so parsing a 100 GB model
/// costs only its header, and memory is bounded by the header size.
/// Format: ggml/include/gguf.h and ggml/src/gguf.cpp in llama.cpp (layout comment at the top of
/// src/sources/gguf.cpp). Model mapping (GGUF keys -> model_desc) is model_from_gguf in sources.h.

#include "kvfit/ggml_type.h"
#include "kvfit/sources.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// Metadata value types as stored in a GGUF file (enum gguf_type, ggml/include/gguf.h).
enum class gguf_type : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
    u64 = 10, i64 = 11, f64 = 12,
};

/// Name of a value type as gguf_type_name() spells it in llama.cpp: "u8", "i32", "f32", "bool", "str", "arr".
const char * gguf_type_name(gguf_type t);

/// Default alignment of the tensor data section when general.alignment is absent (GGUF_DEFAULT_ALIGNMENT).
inline constexpr uint64_t gguf_default_alignment = 32;

/// Deepest array nesting the reader accepts (an array of arrays of ... u32 is depth 2 for two levels).
/// llama.cpp's own reader refuses any nesting; the format allows it, kvfit bounds it.
inline constexpr uint32_t gguf_max_array_depth = 8;

/// One metadata value, viewed in place. Scalars: `raw` holds the little-endian bytes. Strings: `raw` is the
/// text (no length prefix, no terminator). Arrays: `raw` holds the elements as stored (element type
/// `elem_type`, `n` of them), strings with their u64 length prefixes, nested arrays with their headers.
/// Valid while the gguf_file it came from lives.
struct gguf_value {
    gguf_type type = gguf_type::u8;
    gguf_type elem_type = gguf_type::u8; ///< arrays only
    uint64_t n = 1;                       ///< arrays: element count; scalars and strings: 1
    std::string_view raw;                 ///< see above
    uint64_t offset = 0;                  ///< file offset of raw[0] (for messages)

    bool is_array() const { return type == gguf_type::array; }
    /// Integer or bool scalar as unsigned; nullopt for negatives, floats, strings and arrays.
    std::optional<uint64_t> to_uint() const;
    /// Integer or bool scalar as signed; nullopt when it does not fit or is not an integer.
    std::optional<int64_t> to_int() const;
    /// Any numeric or bool scalar as double; nullopt for strings and arrays.
    std::optional<double> to_float() const;
    /// String value; nullopt for other types.
    std::optional<std::string_view> to_string() const;
    /// Element `i` of an array, O(1) for fixed-size elements, O(i) for strings and nested arrays.
    /// Throws kvfit::error "<where>: offset 0x..: index i out of range n" for i >= n or a non-array.
    gguf_value at(uint64_t i, std::string_view where = "gguf") const;
};

/// One key/value pair. `offset` is the file offset of the key's length prefix.
struct gguf_kv {
    std::string_view key;
    gguf_value value;
    uint64_t offset = 0;
};

/// One tensor info. Shape in ggml order: ne[0] is the row length (contiguous), unused dims are 1.
/// `bytes` = ggml_row_size(type, ne[0]) * ne[1] * ne[2] * ne[3], as ggml_nbytes() for a contiguous tensor.
struct gguf_tensor_info {
    std::string_view name;
    uint32_t n_dims = 0;
    std::array<uint64_t, 4> ne{1, 1, 1, 1};
    ggml_type type = ggml_type::f32;
    uint64_t offset = 0;       ///< data offset relative to the start of the data section, bytes
    uint64_t n_elements = 0;   ///< ne[0] * ne[1] * ne[2] * ne[3]
    uint64_t bytes = 0;        ///< data size without alignment padding
    uint64_t info_offset = 0;  ///< file offset of this tensor info (for messages)
};

namespace detail { struct gguf_buffer; }

/// A parsed GGUF file. Move- and copy-able (copies share the header bytes). Everything is checked at parse time:
/// an object that exists is well-formed.
class gguf_file {
public:
    /// Read the header of the file at `path`. Throws kvfit::error "<path>: offset 0x..: <what>" for any malformed
    /// byte, "<path>: <what>" when it cannot be opened. Reads no tensor data.
    static gguf_file open(const std::string & path);
    /// Parse bytes held by the caller (which must outlive the result); `where` names them in messages.
    /// `bytes.size()` is the file size for the header-only and data-range checks.
    static gguf_file parse(std::string_view bytes, std::string where);
    /// Parse the first bytes of a file of `file_bytes` bytes (a download of a prefix; the result owns them).
    /// Returns nullopt when the prefix ends before the last tensor info, with `need_bytes` set to an estimate of
    /// the prefix length that will be enough (more than prefix.size(), at most file_bytes): the metadata still to
    /// come guessed from what was read (a string array's remaining strings as long as its first ones) plus about
    /// 100 bytes per tensor info. Throws what parse() throws for a malformed byte inside the prefix.
    static std::optional<gguf_file> parse_prefix(std::string prefix, uint64_t file_bytes, std::string where,
                                                 uint64_t & need_bytes);

    const std::string & path() const { return path_; }
    uint32_t version() const { return version_; }
    /// general.alignment, or 32; always a power of two.
    uint64_t alignment() const { return alignment_; }
    /// File offset just after the last tensor info, bytes.
    uint64_t header_bytes() const { return header_bytes_; }
    /// File offset where tensor data starts: header_bytes rounded up to the alignment.
    uint64_t data_offset() const { return data_offset_; }
    /// Size of the data section the tensor infos describe: max over tensors of offset + bytes, padded to the
    /// alignment (ggml's gguf_context::size for the usual contiguous layout). Bytes.
    uint64_t data_bytes() const { return data_bytes_; }
    /// Size of the file (or buffer) parsed, bytes.
    uint64_t file_bytes() const { return file_bytes_; }
    /// True when the file ends before the data section (a GGUF cut after its tensor infos).
    bool header_only() const { return header_only_; }

    const std::vector<gguf_kv> & kvs() const { return kvs_; }
    const std::vector<gguf_tensor_info> & tensors() const { return tensors_; }
    /// Value of `key`, or nullptr.
    const gguf_value * find(std::string_view key) const;
    /// The string value of `key`; "" when it is missing or not a string.
    std::string string_of(std::string_view key) const;
    /// Tensor named `name`, or nullptr.
    const gguf_tensor_info * find_tensor(std::string_view name) const;

private:
    std::shared_ptr<detail::gguf_buffer> map_;
    std::string path_;
    uint32_t version_ = 0;
    uint64_t alignment_ = gguf_default_alignment;
    uint64_t header_bytes_ = 0, data_offset_ = 0, data_bytes_ = 0, file_bytes_ = 0;
    bool header_only_ = false;
    std::vector<gguf_kv> kvs_;
    std::vector<gguf_tensor_info> tensors_;
    friend struct gguf_parser;
};

/// Split models: `name-00001-of-00003.gguf` ... (llama_split_path, "%s-%05d-of-%05d.gguf" in llama.cpp
/// src/llama.cpp). Given any shard, opens all of them in order and checks each one's split.no / split.count.
/// A path without the suffix is one file, returned alone (it must not carry split.count > 1).
/// Throws kvfit::error "<path>: missing shard 2 of 3 (<expected path>)" when a shard is absent, and for
/// shards whose split.count or split.no disagree with their names.
std::vector<gguf_file> gguf_open_shards(const std::string & path);

/// Model description from parsed shards (metadata from shard 0, tensors from all). See model_from_gguf in
/// sources.h for the mapping; this overload lets tests and benchmarks skip the file system.
model_desc model_from_gguf(const std::vector<gguf_file> & shards, warnings & warn);

/// Human-readable dump for `kvfit --inspect`: version, alignment, sizes, every key with its type and value
/// (arrays of more than 8 elements summarised as "[n x type: first, second, third, ...]"), a tensor summary
/// (count, bytes by ggml type), then the layer layout of the model description (one line per run of equal
/// layers: "il 0-2: recurrent", "il 3: full_attention kv_heads 4 x 256/256"). Warnings are appended to `warn`.
std::string gguf_inspect(const std::vector<gguf_file> & shards, warnings & warn);

/// Metadata part of gguf_inspect alone (no model mapping): header, keys, tensor summary of one file.
std::string gguf_inspect_metadata(const gguf_file & f);

} // namespace kvfit
