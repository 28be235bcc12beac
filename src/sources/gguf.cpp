// GGUF reader (include/kvfit/gguf.h). A GGUF file has the following structure (after ggml/include/gguf.h and
// ggml/src/gguf.cpp in llama.cpp):
//
// 1. File magic "GGUF" (4 bytes).
// 2. File version (u32): 2 or 3 here. Version 1 stored counts as u32 and is refused; 2 and 3 differ only in
//    that 3 allows big-endian files, which a little-endian reader sees as version 0x03000000 and refuses.
// 3. Number of tensors (i64).
// 4. Number of key/value pairs (i64).
// 5. For each key/value pair:
//    1. The key (string).
//    2. The value type (u32, enum gguf_type).
//    3a. Arrays: the element type (u32), the number of elements (u64), then each element in its binary form
//        (strings with their length prefix, nested arrays with their own type and count).
//    3b. Otherwise the binary form of the value.
// 6. For each tensor:
//    1. The tensor name (string).
//    2. The number of dimensions n_dims (u32, at most 4 = GGML_MAX_DIMS).
//    3. n_dims sizes (i64 each), ne[0] first (the contiguous row).
//    4. The ggml type (u32, enum ggml_type).
//    5. The data offset (u64) relative to the start of the data section; a multiple of the alignment.
// 7. Padding to general.alignment (u32, default 32), then the tensor data. Header-only files stop before 7.
//
// Strings: u64 length, then the bytes without terminator. bool: one byte. Numbers: little-endian.
//
// Every read is bounds-checked against the bytes left, and every count is checked against the least space its
// elements can take before anything is reserved, so memory stays bounded by the header size and a hostile
// file ends in kvfit::error "<file>: offset 0x..: <what>". Tensor data is never read.
#include "kvfit/gguf.h"
#include "kvfit/error.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <numeric>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>
#include "core/util.h"

static_assert(std::endian::native == std::endian::little, "kvfit's GGUF reader assumes a little-endian host");

namespace kvfit {

namespace detail {
/// The header bytes of a file, owned by every gguf_file that views them.
struct gguf_buffer {
    std::unique_ptr<char[]> bytes; ///< read bytes (a prefix, or a file that could not be mapped)
    uint64_t size = 0;
    void * mapped = nullptr;       ///< the file mapped read-only (gguf_file::open): only the header's pages are touched
    uint64_t mapped_size = 0;
    const char * data() const { return mapped ? static_cast<const char *>(mapped) : bytes.get(); }
    gguf_buffer() = default;
    gguf_buffer(const gguf_buffer &) = delete;
    gguf_buffer & operator=(const gguf_buffer &) = delete;
    ~gguf_buffer() {
        if (mapped) ::munmap(mapped, mapped_size);
    }
};
} // namespace detail

namespace {

constexpr uint64_t k_min_kv_bytes = 8 + 4 + 1;          // empty key, type, one-byte value
constexpr uint64_t k_min_tensor_info_bytes = 8 + 4 + 4 + 8; // empty name, n_dims 0, type, offset
constexpr uint64_t k_max_alignment = uint64_t(1) << 30;


} // namespace

/// Bounds-checked reads over the parsed bytes; fills a gguf_file.
struct gguf_parser {
    const char * base;
    uint64_t size;       // bytes in memory: the whole file, or a prefix of it while reading (gguf_file::open)
    uint64_t file_size;  // bytes in the file
    uint64_t pos = 0;
    const std::string & where;

    uint64_t n_tensors = 0; // from the header: sizes the estimate of how many bytes the tensor infos take

    /// Thrown instead of an error when the bytes run out before the end of the file: read more and retry.
    /// `want` estimates the prefix length that will be enough (gguf_file::parse_prefix).
    struct need_more { uint64_t want = 0; };

    // Bytes the tensor infos still to come will take, roughly: a 30-character name, 3 dimensions, type, offset.
    uint64_t infos_estimate(uint64_t n) const { return n * 100; }

    uint64_t left() const { return size - pos; }
    [[noreturn]] void fail(uint64_t off, const std::string & what) const { throw error::at_offset(where, off, what); }

    // A size check failed: an error when the whole file is in memory, else a request for more bytes
    // (at least `want`, and the tensor infos after the metadata while those are still to come).
    [[noreturn]] void short_of(uint64_t off, const std::string & what, uint64_t want = 0) const {
        if (size < file_size) throw need_more{std::max(want, pos + 1) + (in_kvs ? infos_estimate(n_tensors) : 0)};
        fail(off, what);
    }
    bool in_kvs = true;

    // pos + n, saturating: a hostile count must not wrap the estimate.
    uint64_t after(uint64_t n) const { return n > UINT64_MAX - pos ? UINT64_MAX : pos + n; }

    void need(uint64_t n, std::string_view what) const {
        if (n > left()) short_of(pos, fmt::format("truncated: {} needs {} bytes, {} remain", what, n, left()), after(n));
    }
    template <class T> T read(std::string_view what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, base + pos, sizeof v);
        pos += sizeof v;
        return v;
    }
    std::string_view str(std::string_view what) {
        const uint64_t at = pos;
        const uint64_t n = read<uint64_t>(what);
        if (n > left()) short_of(at, fmt::format("{} length {} exceeds remaining {} bytes", what, n, left()), after(n));
        std::string_view s(base + pos, n);
        pos += n;
        return s;
    }
    gguf_type value_type(std::string_view what) {
        const uint64_t at = pos;
        const uint32_t t = read<uint32_t>(what);
        if (t > uint32_t(gguf_type::f64)) fail(at, fmt::format("unknown value type {}", t));
        return gguf_type(t);
    }

    static uint64_t scalar_bytes(gguf_type t) {
        switch (t) {
        case gguf_type::u8: case gguf_type::i8: case gguf_type::boolean: return 1;
        case gguf_type::u16: case gguf_type::i16: return 2;
        case gguf_type::u32: case gguf_type::i32: case gguf_type::f32: return 4;
        case gguf_type::u64: case gguf_type::i64: case gguf_type::f64: return 8;
        case gguf_type::string: case gguf_type::array: return 0;
        }
        return 0;
    }

    gguf_value value(gguf_type t, uint32_t depth) {
        gguf_value v;
        v.type = t;
        if (t == gguf_type::string) {
            v.raw = str("string");
            v.offset = pos - v.raw.size();
            return v;
        }
        if (t != gguf_type::array) {
            const uint64_t n = scalar_bytes(t);
            need(n, gguf_type_name(t));
            v.offset = pos;
            v.raw = std::string_view(base + pos, n);
            pos += n;
            return v;
        }
        if (depth >= gguf_max_array_depth) {
            fail(pos, fmt::format("arrays nested deeper than {} levels", gguf_max_array_depth));
        }
        v.elem_type = value_type("array type");
        const uint64_t at = pos;
        v.n = read<uint64_t>("array length");
        const uint64_t elem = v.elem_type == gguf_type::string ? 8 : v.elem_type == gguf_type::array ? 12
                                                                    : scalar_bytes(v.elem_type);
        const uint64_t in_file = file_size - pos; // an array longer than the rest of the file is an error in any prefix
        if (v.n > in_file / elem) {
            fail(at, fmt::format("array length {} of {} exceeds remaining {} bytes", v.n, gguf_type_name(v.elem_type), in_file));
        }
        // In a prefix, string arrays go on to the loop below, which estimates the rest from the strings read so far.
        if (v.n > left() / elem && !(v.elem_type == gguf_type::string && size < file_size)) {
            short_of(at, fmt::format("array length {} of {} exceeds remaining {} bytes", v.n,
                                 gguf_type_name(v.elem_type), left()), after(v.n * elem));
        }
        v.offset = pos;
        if (v.elem_type == gguf_type::string) {
            // Out of bytes inside the array (a prefix): the strings to come are guessed as long as those read so far.
            const auto rest = [&](uint64_t i) {
                const uint64_t avg = i > 0 ? (pos - v.offset) / i * 9 / 8 + 1 : 16;
                return v.n - i > UINT64_MAX / avg ? UINT64_MAX : (v.n - i) * avg;
            };
            for (uint64_t i = 0; i < v.n; ++i) { // the hot loop of a 250k-token vocabulary: no allocation, no division
                if (size - pos < 8) short_of(pos, fmt::format("truncated: string needs 8 bytes, {} remain", left()), after(rest(i)));
                uint64_t len;
                std::memcpy(&len, base + pos, sizeof len);
                if (len > size - pos - 8) {
                    const uint64_t want = std::max(rest(i), len);
                    short_of(pos, fmt::format("string length {} exceeds remaining {} bytes", len, size - pos - 8),
                             after(want > UINT64_MAX - 8 ? want : want + 8));
                }
                pos += 8 + len;
            }
        } else if (v.elem_type == gguf_type::array) {
            for (uint64_t i = 0; i < v.n; ++i) value(gguf_type::array, depth + 1);
        } else {
            pos += v.n * elem;
        }
        v.raw = std::string_view(base + v.offset, pos - v.offset);
        return v;
    }

    void header(gguf_file & f, uint64_t & n_tensors, uint64_t & n_kv) {
        need(4, "magic");
        if (std::memcmp(base, "GGUF", 4) != 0) {
            fail(0, fmt::format("bad magic {:02x} {:02x} {:02x} {:02x}, expected 'GGUF'", uint8_t(base[0]),
                                uint8_t(base[1]), uint8_t(base[2]), uint8_t(base[3])));
        }
        pos = 4;
        f.version_ = read<uint32_t>("version");
        if (f.version_ == 1) fail(4, "version 1 is not supported (kvfit reads versions 2 and 3)");
        if (f.version_ != 2 && f.version_ != 3) {
            const bool swapped = (f.version_ & 0xffff) == 0;
            fail(4, fmt::format("unsupported version {}{} (kvfit reads versions 2 and 3)", f.version_,
                                swapped ? ", a big-endian file?" : ""));
        }
        uint64_t at = pos;
        n_tensors = read<uint64_t>("tensor count");
        if (n_tensors > uint64_t(INT64_MAX)) {
            fail(at, fmt::format("tensor count {} exceeds what the remaining {} bytes can hold", n_tensors, left()));
        }
        if (n_tensors > left() / k_min_tensor_info_bytes) {
            short_of(at, fmt::format("tensor count {} exceeds what the remaining {} bytes can hold", n_tensors, left()));
        }
        this->n_tensors = n_tensors;
        at = pos;
        n_kv = read<uint64_t>("key/value count");
        if (n_kv > uint64_t(INT64_MAX) || n_kv > left() / k_min_kv_bytes) {
            short_of(at, fmt::format("key/value count {} exceeds what the remaining {} bytes can hold", n_kv, left()));
        }
    }

    void kvs(gguf_file & f, uint64_t n_kv) {
        f.kvs_.reserve(n_kv);
        std::unordered_set<std::string_view> seen;
        seen.reserve(n_kv);
        for (uint64_t i = 0; i < n_kv; ++i) {
            gguf_kv kv;
            kv.offset = pos;
            kv.key = str("key");
            if (!seen.insert(kv.key).second) fail(kv.offset, fmt::format("duplicate key '{}'", kv.key));
            kv.value = value(value_type("value type"), 0);
            f.kvs_.push_back(kv);
        }
        if (const gguf_value * a = f.find("general.alignment")) {
            const auto n = a->to_uint();
            if (!n || a->is_array()) fail(a->offset, "key 'general.alignment': expected an unsigned integer");
            if (*n == 0 || (*n & (*n - 1)) != 0) {
                fail(a->offset, fmt::format("key 'general.alignment': alignment {} is not a power of two", *n));
            }
            if (*n > k_max_alignment) {
                fail(a->offset, fmt::format("key 'general.alignment': alignment {} exceeds {}", *n, k_max_alignment));
            }
            f.alignment_ = *n;
        }
    }

    gguf_tensor_info tensor(const gguf_file & f) {
        gguf_tensor_info t;
        t.info_offset = pos;
        t.name = str("tensor name");
        const uint64_t at_dims = pos;
        t.n_dims = read<uint32_t>("tensor n_dims");
        if (t.n_dims > 4) fail(at_dims, fmt::format("tensor '{}': n_dims {} exceeds GGML_MAX_DIMS 4", t.name, t.n_dims));
        t.n_elements = 1;
        bool overflow = false;
        for (uint32_t j = 0; j < t.n_dims; ++j) {
            const uint64_t at = pos;
            const int64_t ne = read<int64_t>("tensor dimension");
            if (ne < 0) fail(at, fmt::format("tensor '{}': dimension {} is negative ({})", t.name, j, ne));
            t.ne[j] = uint64_t(ne);
            overflow |= __builtin_mul_overflow(t.n_elements, t.ne[j], &t.n_elements);
        }
        if (overflow || t.n_elements > uint64_t(INT64_MAX)) {
            fail(at_dims, fmt::format("tensor '{}': element count overflows int64", t.name));
        }
        const uint64_t at_type = pos;
        const uint32_t type_id = read<uint32_t>("tensor type");
        const auto traits = ggml_traits(type_id);
        if (!traits) fail(at_type, fmt::format("tensor '{}': unknown ggml type {}", t.name, type_id));
        t.type = traits->type;
        if (t.ne[0] % traits->block_size != 0) {
            fail(at_type, fmt::format("tensor '{}': row length {} is not a multiple of the {} block size {}", t.name,
                                      t.ne[0], traits->name, traits->block_size));
        }
        t.bytes = t.ne[0] / traits->block_size * traits->type_size;
        for (uint32_t j = 1; j < 4; ++j) overflow |= __builtin_mul_overflow(t.bytes, t.ne[j], &t.bytes);
        if (overflow || t.bytes > uint64_t(INT64_MAX)) fail(at_type, fmt::format("tensor '{}': byte size overflows int64", t.name));
        const uint64_t at_off = pos;
        t.offset = read<uint64_t>("tensor offset");
        if (t.offset % f.alignment_ != 0) {
            fail(at_off, fmt::format("tensor '{}': data offset {} is not a multiple of the alignment {}", t.name,
                                     t.offset, f.alignment_));
        }
        if (t.offset > uint64_t(INT64_MAX) - t.bytes) {
            fail(at_off, fmt::format("tensor '{}': data offset {} + size {} overflows int64", t.name, t.offset, t.bytes));
        }
        return t;
    }

    void tensors(gguf_file & f, uint64_t n_tensors) {
        in_kvs = false;
        if (n_tensors > left() / k_min_tensor_info_bytes) {
            short_of(pos, fmt::format("tensor count {} exceeds what the remaining {} bytes can hold", n_tensors, left()),
                     after(infos_estimate(n_tensors)));
        }
        f.tensors_.reserve(n_tensors);
        std::unordered_set<std::string_view> seen;
        seen.reserve(n_tensors);
        for (uint64_t i = 0; i < n_tensors; ++i) {
            if (size < file_size && left() < infos_estimate(1)) { // a prefix: fetch the rest of the infos at once
                const uint64_t start = pos;
                try {
                    f.tensors_.push_back(tensor(f));
                } catch (const need_more &) {
                    throw need_more{start + infos_estimate(n_tensors - i)};
                }
            } else {
                f.tensors_.push_back(tensor(f));
            }
            const auto & t = f.tensors_.back();
            if (!seen.insert(t.name).second) fail(t.info_offset, fmt::format("duplicate tensor '{}'", t.name));
        }
    }

    // Data section: no overlaps, inside the file unless the file is header-only.
    void layout(gguf_file & f) {
        f.header_bytes_ = pos;
        f.data_offset_ = detail::round_up(pos, f.alignment_);
        const auto & ts = f.tensors_;
        std::vector<uint32_t> order(ts.size());
        std::iota(order.begin(), order.end(), 0u);
        auto by_offset = [&](uint32_t a, uint32_t b) { return ts[a].offset < ts[b].offset; };
        if (!std::is_sorted(order.begin(), order.end(), by_offset)) std::stable_sort(order.begin(), order.end(), by_offset);
        uint64_t end = 0;
        const gguf_tensor_info * prev = nullptr;
        for (uint32_t i : order) {
            const auto & t = ts[i];
            if (prev && t.offset < end) {
                fail(t.info_offset, fmt::format("tensor '{}' data [{}, {}) overlaps tensor '{}' ending at {}", t.name,
                                                t.offset, t.offset + t.bytes, prev->name, end));
            }
            if (t.bytes > 0 || !prev) { end = std::max(end, t.offset + t.bytes); prev = &t; }
        }
        f.data_bytes_ = detail::round_up(end, f.alignment_);
        f.header_only_ = end > 0 && f.file_bytes_ <= f.data_offset_;
        if (f.header_only_ || end == 0) return;
        const uint64_t room = f.file_bytes_ > f.data_offset_ ? f.file_bytes_ - f.data_offset_ : 0;
        for (const auto & t : ts) {
            if (t.offset + t.bytes > room) {
                fail(t.info_offset, fmt::format("tensor '{}' data ends at file offset 0x{:x}, beyond the end of the "
                                                "file ({} bytes)", t.name, f.data_offset_ + t.offset + t.bytes,
                                                f.file_bytes_));
            }
        }
    }
};

const char * gguf_type_name(gguf_type t) {
    switch (t) {
    case gguf_type::u8: return "u8";
    case gguf_type::i8: return "i8";
    case gguf_type::u16: return "u16";
    case gguf_type::i16: return "i16";
    case gguf_type::u32: return "u32";
    case gguf_type::i32: return "i32";
    case gguf_type::f32: return "f32";
    case gguf_type::boolean: return "bool";
    case gguf_type::string: return "str";
    case gguf_type::array: return "arr";
    case gguf_type::u64: return "u64";
    case gguf_type::i64: return "i64";
    case gguf_type::f64: return "f64";
    }
    return "?";
}

gguf_file gguf_file::parse(std::string_view bytes, std::string where) {
    gguf_file f;
    f.path_ = std::move(where);
    f.file_bytes_ = bytes.size();
    gguf_parser p{bytes.data(), bytes.size(), bytes.size(), 0, f.path_};
    uint64_t n_tensors = 0, n_kv = 0;
    p.header(f, n_tensors, n_kv);
    p.kvs(f, n_kv);
    p.tensors(f, n_tensors);
    p.layout(f);
    return f;
}

std::optional<gguf_file> gguf_file::parse_prefix(std::string prefix, uint64_t file_bytes, std::string where,
                                                 uint64_t & need_bytes) {
    if (prefix.size() > file_bytes) prefix.resize(file_bytes);
    if (prefix.empty() && file_bytes == 0) throw error::at_offset(where, 0, "truncated: the file is empty");
    auto buf = std::make_shared<detail::gguf_buffer>();
    buf->size = prefix.size();
    buf->bytes = std::make_unique_for_overwrite<char[]>(std::max<uint64_t>(buf->size, 1));
    std::memcpy(buf->bytes.get(), prefix.data(), prefix.size());
    gguf_file f;
    f.path_ = std::move(where);
    f.file_bytes_ = file_bytes;
    try {
        gguf_parser p{buf->bytes.get(), buf->size, file_bytes, 0, f.path_};
        uint64_t n_tensors = 0, n_kv = 0;
        p.header(f, n_tensors, n_kv);
        p.kvs(f, n_kv);
        p.tensors(f, n_tensors);
        p.layout(f);
    } catch (const gguf_parser::need_more & more) {
        need_bytes = std::clamp<uint64_t>(more.want, buf->size + 1, file_bytes);
        return std::nullopt;
    }
    need_bytes = 0;
    f.map_ = std::move(buf);
    return f;
}

// Maps the file read-only and parses the header in place: the kernel maps the page cache's pages (fault-around,
// no copy, no zero-filled buffer), and only the header's pages are touched, so the resident memory stays the header
// size whatever the file holds. Measured on the 6.4 MB Qwen3.5-9B header: 129 page faults instead of 1,835 for a read
// into a fresh buffer, the whole plan's CPU time 11.3 -> see bench/startup.py. Where the file cannot be mapped, the
// header is read instead: a first read of up to 8 MiB (a 250k-token vocabulary takes about 6 MB), doubled while the
// header runs past it.
gguf_file gguf_file::open(const std::string & path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); // a FIFO must not block
    if (fd < 0) throw error::at(path, fmt::format("cannot open: {}", std::strerror(errno)));
    struct closer { int fd; ~closer() { ::close(fd); } } guard{fd};
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw error::at(path, "not a regular file");
    const uint64_t file_size = uint64_t(st.st_size);
    if (file_size == 0) throw error::at_offset(path, 0, "truncated: the file is empty");
    auto buf = std::make_shared<detail::gguf_buffer>();
    if (file_size <= uint64_t(SIZE_MAX)) {
        void * m = ::mmap(nullptr, size_t(file_size), PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            buf->mapped = m;
            buf->mapped_size = buf->size = file_size;
            gguf_file f;
            f.path_ = path;
            f.file_bytes_ = file_size;
            gguf_parser p{buf->data(), file_size, file_size, 0, f.path_};
            uint64_t n_tensors = 0, n_kv = 0;
            p.header(f, n_tensors, n_kv);
            p.kvs(f, n_kv);
            p.tensors(f, n_tensors);
            p.layout(f);
            f.map_ = std::move(buf);
            return f;
        }
    }
    uint64_t have = 0;
    for (uint64_t want = std::min<uint64_t>(file_size, 8u << 20);; want = std::min(file_size, want * 2)) {
        auto bigger = std::make_unique_for_overwrite<char[]>(want);
        if (have > 0) std::memcpy(bigger.get(), buf->bytes.get(), have);
        buf->bytes = std::move(bigger);
        buf->size = want;
        while (have < want) {
            const ssize_t n = ::pread(fd, buf->bytes.get() + have, want - have, off_t(have));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw error::at_offset(path, have, fmt::format("cannot read: {}", n < 0 ? std::strerror(errno) : "file shrank"));
            have += uint64_t(n);
        }
        gguf_file f;
        f.path_ = path;
        f.file_bytes_ = file_size;
        try {
            gguf_parser p{buf->bytes.get(), want, file_size, 0, f.path_};
            uint64_t n_tensors = 0, n_kv = 0;
            p.header(f, n_tensors, n_kv);
            p.kvs(f, n_kv);
            p.tensors(f, n_tensors);
            p.layout(f);
        } catch (const gguf_parser::need_more &) {
            continue; // f and its views into this buffer are dropped before the buffer grows
        }
        f.map_ = std::move(buf);
        return f;
    }
}

std::string gguf_file::string_of(std::string_view key) const {
    const gguf_value * v = find(key);
    const auto t = v ? v->to_string() : std::nullopt;
    return t ? std::string(*t) : std::string();
}

const gguf_value * gguf_file::find(std::string_view key) const {
    for (const auto & kv : kvs_) {
        if (kv.key == key) return &kv.value;
    }
    return nullptr;
}

const gguf_tensor_info * gguf_file::find_tensor(std::string_view name) const {
    for (const auto & t : tensors_) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

} // namespace kvfit
