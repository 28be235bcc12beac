// Safetensors header reader (include/kvfit/safetensors.h). The checks are those of safetensors' Metadata::validate
// (huggingface/safetensors safetensors/src/tensor.rs): header length capped and inside the file, JSON object starting
// with '{', tensors sorted by offset tiling the data section with no gap or overlap, and each tensor's byte range
// equal to n_elements * bits / 8. Every count is checked for overflow before use; tensor data is never read.
#include "kvfit/safetensors.h"
#include "kvfit/error.h"
#include "sources/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace kvfit {
namespace {

struct dtype_row {
    st_dtype type;
    const char * name;
    uint32_t bits;
};

constexpr std::array<dtype_row, 20> k_dtypes = {{
    {st_dtype::boolean, "BOOL", 8},    {st_dtype::f4, "F4", 4},           {st_dtype::f6_e2m3, "F6_E2M3", 6},
    {st_dtype::f6_e3m2, "F6_E3M2", 6}, {st_dtype::u8, "U8", 8},           {st_dtype::i8, "I8", 8},
    {st_dtype::f8_e5m2, "F8_E5M2", 8}, {st_dtype::f8_e4m3, "F8_E4M3", 8}, {st_dtype::f8_e8m0, "F8_E8M0", 8},
    {st_dtype::i16, "I16", 16},        {st_dtype::u16, "U16", 16},        {st_dtype::f16, "F16", 16},
    {st_dtype::bf16, "BF16", 16},      {st_dtype::i32, "I32", 32},        {st_dtype::u32, "U32", 32},
    {st_dtype::f32, "F32", 32},        {st_dtype::c64, "C64", 64},        {st_dtype::f64, "F64", 64},
    {st_dtype::i64, "I64", 64},        {st_dtype::u64, "U64", 64},
}};

uint64_t read_u64_le(std::string_view b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | uint8_t(b[size_t(i)]);
    return v;
}

// A JSON value as a non-negative integer that fits in 63 bits (offsets and dimensions), or nullopt.
std::optional<uint64_t> as_count(const nlohmann::json & v) {
    if (v.is_number_unsigned()) {
        const uint64_t n = v.get<uint64_t>();
        if (n <= uint64_t(INT64_MAX)) return n;
    } else if (v.is_number_integer() && v.get<int64_t>() >= 0) {
        return uint64_t(v.get<int64_t>());
    }
    return std::nullopt;
}

st_tensor read_tensor(const std::string & name, const nlohmann::json & v, std::string_view where) {
    auto bad = [&](std::string_view what) { return error::at(where, fmt::format("tensor '{}': {}", name, what)); };
    if (!v.is_object()) throw bad(fmt::format("expected an object, got {}", v.type_name()));
    st_tensor t;
    t.name = name;
    const auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) throw bad("missing string 'dtype'");
    const auto type = st_dtype_from_name(dt->get_ref<const std::string &>());
    if (!type) throw bad(fmt::format("unknown dtype '{}'", dt->get_ref<const std::string &>()));
    t.dtype = *type;
    const auto shape = v.find("shape");
    if (shape == v.end() || !shape->is_array()) throw bad("missing array 'shape'");
    t.n_elements = 1;
    for (const auto & d : *shape) {
        const auto n = as_count(d);
        if (!n) throw bad(fmt::format("shape entry {} is not a non-negative integer", d.dump()));
        t.shape.push_back(*n);
        if (__builtin_mul_overflow(t.n_elements, *n, &t.n_elements)) throw bad("element count overflows 64 bits");
    }
    const auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2) throw bad("missing array 'data_offsets' of 2 integers");
    const auto b = as_count((*off)[0]), e = as_count((*off)[1]);
    if (!b || !e) throw bad(fmt::format("data_offsets {} are not non-negative integers", off->dump()));
    if (*e < *b) throw bad(fmt::format("data_offsets [{}, {}] end before they begin", *b, *e));
    t.begin = *b;
    t.end = *e;
    uint64_t bits = 0;
    if (__builtin_mul_overflow(t.n_elements, uint64_t(st_dtype_bits(t.dtype)), &bits)) throw bad("byte size overflows 64 bits");
    if (bits % 8 != 0) {
        throw bad(fmt::format("{} elements of {} fill {} bits, not whole bytes", t.n_elements, st_dtype_name(t.dtype), bits));
    }
    if (t.bytes() != bits / 8) {
        std::string dims;
        for (uint64_t d : t.shape) dims += fmt::format("{}{}", dims.empty() ? "" : ", ", d);
        throw bad(fmt::format("data_offsets [{}, {}] hold {} bytes but {} [{}] needs {}", t.begin, t.end, t.bytes(),
                              st_dtype_name(t.dtype), dims, bits / 8));
    }
    return t;
}

// SAX handler collecting the keys of the top-level object; a malformed text is left to the DOM parse to report.
struct top_keys : nlohmann::json_sax<nlohmann::json> {
    std::vector<std::string> keys;
    int depth = 0;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t &) override { return true; }
    bool string(string_t &) override { return true; }
    bool binary(binary_t &) override { return true; }
    bool start_object(std::size_t) override { return ++depth, true; }
    bool end_object() override { return --depth, true; }
    bool start_array(std::size_t) override { return ++depth, true; }
    bool end_array() override { return --depth, true; }
    bool key(string_t & k) override {
        if (depth == 1) keys.push_back(k);
        return true;
    }
    bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &) override { return false; }
};

std::string slurp(const std::filesystem::path & path, uint64_t limit) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw error::at(path.string(), "cannot read: " + ec.message());
    if (size > limit) throw error::at(path.string(), fmt::format("{} bytes exceeds the limit of {} bytes", size, limit));
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

nlohmann::json parse_json(std::string_view text, std::string_view where) {
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception & e) {
        std::string what = e.what();
        if (const auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
        throw error::at(where, "not valid JSON: " + what);
    }
}

} // namespace

const char * st_dtype_name(st_dtype t) { return k_dtypes[size_t(t)].name; }
uint32_t st_dtype_bits(st_dtype t) { return k_dtypes[size_t(t)].bits; }

bool st_dtype_is_integer(st_dtype t) {
    switch (t) {
    case st_dtype::u8: case st_dtype::i8: case st_dtype::i16: case st_dtype::u16: case st_dtype::i32:
    case st_dtype::u32: case st_dtype::i64: case st_dtype::u64: return true;
    default: return false;
    }
}

std::optional<st_dtype> st_dtype_from_name(std::string_view name) {
    for (const auto & r : k_dtypes) {
        if (name == r.name) return r.type;
    }
    return std::nullopt;
}

uint64_t safetensors_file::prefix_bytes(std::string_view first8, uint64_t file_bytes, std::string_view where) {
    if (first8.size() < 8) {
        throw error::at_offset(where, 0, fmt::format("truncated: the header length needs 8 bytes, {} remain", first8.size()));
    }
    const uint64_t n = read_u64_le(first8);
    if (n > safetensors_max_header_bytes) {
        throw error::at_offset(where, 0, fmt::format("header length {} exceeds the limit {}", n, safetensors_max_header_bytes));
    }
    if (n + 8 > file_bytes) {
        throw error::at_offset(where, 0, fmt::format("header length {} exceeds the file's {} bytes", n, file_bytes));
    }
    return n + 8;
}

safetensors_file safetensors_file::parse(std::string_view prefix, uint64_t file_bytes, std::string where) {
    safetensors_file f;
    f.path_ = std::move(where);
    f.file_bytes_ = file_bytes;
    const uint64_t need = prefix_bytes(prefix, file_bytes, f.path_);
    if (prefix.size() < need) {
        throw error::at_offset(f.path_, 8, fmt::format("truncated: the header needs {} bytes, {} remain", need - 8, prefix.size() - 8));
    }
    f.header_bytes_ = need - 8;
    const std::string_view text = prefix.substr(8, f.header_bytes_);
    if (text.empty() || text[0] != '{') throw error::at_offset(f.path_, 8, "header does not start with '{'");
    nlohmann::json j;
    top_keys keys;
    // nlohmann keeps the last of two equal keys; the format has one entry per tensor, so a repeat is an error.
    // A SAX pass collects the top-level keys (nlohmann's callback parser is quadratic-slow on large headers).
    nlohmann::json::sax_parse(text, &keys);
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception & e) {
        std::string what = e.what();
        if (const auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
        throw error::at_offset(f.path_, 8, "header is not valid JSON: " + what);
    }
    if (!j.is_object()) throw error::at_offset(f.path_, 8, "header is not a JSON object");
    std::sort(keys.keys.begin(), keys.keys.end());
    if (const auto dup = std::adjacent_find(keys.keys.begin(), keys.keys.end()); dup != keys.keys.end()) {
        throw error::at(f.path_, fmt::format("tensor '{}': listed twice in the header", *dup));
    }
    for (const auto & [key, value] : j.items()) {
        if (key != "__metadata__") {
            f.tensors_.push_back(read_tensor(key, value, f.path_));
            continue;
        }
        if (!value.is_object()) throw error::at_offset(f.path_, 8, "header __metadata__ is not an object");
        for (const auto & [k, v] : value.items()) {
            if (!v.is_string()) throw error::at_offset(f.path_, 8, fmt::format("header __metadata__ '{}' is not a string", k));
            f.metadata_.emplace_back(k, v.get<std::string>());
        }
    }
    std::stable_sort(f.tensors_.begin(), f.tensors_.end(), [](const st_tensor & a, const st_tensor & b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const uint64_t data = file_bytes - need;
    uint64_t end = 0;
    const st_tensor * prev = nullptr;
    for (const auto & t : f.tensors_) {
        const std::string after = prev ? fmt::format("tensor '{}' ending at {}", prev->name, end) : "the start of the data section";
        if (t.end > data) {
            throw error::at(f.path_, fmt::format("tensor '{}': data [{}, {}) ends beyond the file's data section of {} bytes",
                                                 t.name, t.begin, t.end, data));
        }
        if (t.begin < end) {
            throw error::at(f.path_, fmt::format("tensor '{}': data [{}, {}) overlaps {}", t.name, t.begin, t.end, after));
        }
        if (t.begin > end) {
            throw error::at(f.path_, fmt::format("tensor '{}': data [{}, {}) leaves a gap of {} bytes after {}", t.name,
                                                 t.begin, t.end, t.begin - end, after));
        }
        end = t.end;
        prev = &t;
    }
    if (end != data) throw error::at(f.path_, fmt::format("data section holds {} bytes but the tensors end at {}", data, end));
    return f;
}

// Two reads: the 8-byte length, then the header. Tensor data is never touched.
safetensors_file safetensors_file::open(const std::string & path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw error::at(path, fmt::format("cannot open: {}", std::strerror(errno)));
    struct closer { int fd; ~closer() { ::close(fd); } } guard{fd};
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw error::at(path, "not a regular file");
    const uint64_t file_bytes = uint64_t(st.st_size);
    auto read_at = [&](uint64_t off, uint64_t n) {
        std::string buf(n, '\0');
        uint64_t have = 0;
        while (have < n) {
            const ssize_t r = ::pread(fd, buf.data() + have, n - have, off_t(off + have));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            have += uint64_t(r);
        }
        buf.resize(have);
        return buf;
    };
    std::string prefix = read_at(0, std::min<uint64_t>(8, file_bytes));
    const uint64_t need = prefix_bytes(prefix, file_bytes, path);
    prefix += read_at(8, need - 8);
    return parse(prefix, file_bytes, path);
}

const st_tensor * safetensors_file::find(std::string_view name) const {
    for (const auto & t : tensors_) {
        if (t.name == name) return &t;
    }
    return nullptr;
}

std::vector<std::string> safetensors_index_shards(std::string_view index_json, std::string_view where) {
    const nlohmann::json j = parse_json(index_json, where);
    if (!j.is_object()) throw error::at(where, "expected a JSON object");
    const auto map = j.find("weight_map");
    if (map == j.end()) throw error::missing_key(where, "weight_map");
    if (!map->is_object()) throw error::bad_key(where, "weight_map", "expected an object");
    std::vector<std::string> files;
    for (const auto & [tensor, file] : map->items()) {
        if (!file.is_string()) throw error::bad_key(where, "weight_map." + tensor, "expected a file name");
        const std::string & name = file.get_ref<const std::string &>();
        if (name.find_first_of("/\\") != std::string::npos || name.find("..") != std::string::npos ||
            !detail::iends_with(name, ".safetensors")) {
            throw error::bad_key(where, "weight_map." + tensor, fmt::format("'{}' is not a .safetensors file name", name));
        }
        files.push_back(name);
    }
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());
    return files;
}

void safetensors_check_index(std::string_view index_json, std::string_view where,
                             const std::vector<safetensors_file> & shards) {
    const nlohmann::json j = parse_json(index_json, where);
    for (const auto & [tensor, file] : j.at("weight_map").items()) {
        const std::string & name = file.get_ref<const std::string &>();
        const auto it = std::find_if(shards.begin(), shards.end(), [&](const safetensors_file & s) {
            return detail::iequals(std::filesystem::path(s.path()).filename().string(), name);
        });
        if (it == shards.end() || !it->find(tensor)) {
            throw error::at(where, fmt::format("tensor '{}' is listed in {} but that file does not hold it", tensor, name));
        }
    }
}

std::vector<safetensors_file> safetensors_open_dir(const std::string & dir) {
    namespace fs = std::filesystem;
    const fs::path index = detail::find_entry_icase(dir, "model.safetensors.index.json");
    std::error_code ec;
    std::vector<safetensors_file> out;
    if (fs::exists(index, ec)) {
        const std::string text = slurp(index, 64ull << 20);
        for (const auto & name : safetensors_index_shards(text, index.string())) {
            const fs::path shard = detail::find_entry_icase(dir, name);
            if (!fs::exists(shard, ec)) throw error::at(index.string(), fmt::format("shard {} is missing", shard.string()));
            out.push_back(safetensors_file::open(shard.string()));
        }
        safetensors_check_index(text, index.string(), out);
        return out;
    }
    const fs::path single = detail::find_entry_icase(dir, "model.safetensors");
    if (fs::exists(single, ec)) out.push_back(safetensors_file::open(single.string()));
    return out;
}

} // namespace kvfit
