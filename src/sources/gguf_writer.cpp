// GGUF writer (src/kvfit/gguf_writer.h): the layout of src/sources/gguf.cpp, written little-endian.
#include "kvfit/gguf_writer.h"
#include "kvfit/error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include "core/util.h"

namespace kvfit {
namespace {

template <class T> void put(std::string & out, T v) { out.append(reinterpret_cast<const char *>(&v), sizeof v); }

void put_str(std::string & out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.append(s);
}

template <class T> gguf_wvalue numbers(gguf_wvalue (*make)(T), gguf_type t, const std::vector<T> & v) {
    std::vector<gguf_wvalue> e;
    e.reserve(v.size());
    for (T x : v) e.push_back(make(x));
    return gguf_wvalue::array(t, e);
}


} // namespace

#define KVFIT_SCALAR(NAME, T, TAG)                 \
    gguf_wvalue gguf_wvalue::NAME(T v) {           \
        gguf_wvalue w;                             \
        w.type_ = gguf_type::TAG;                  \
        put(w.bytes_, v);                          \
        return w;                                  \
    }
KVFIT_SCALAR(u8, uint8_t, u8)
KVFIT_SCALAR(i8, int8_t, i8)
KVFIT_SCALAR(u16, uint16_t, u16)
KVFIT_SCALAR(i16, int16_t, i16)
KVFIT_SCALAR(u32, uint32_t, u32)
KVFIT_SCALAR(i32, int32_t, i32)
KVFIT_SCALAR(f32, float, f32)
KVFIT_SCALAR(u64, uint64_t, u64)
KVFIT_SCALAR(i64, int64_t, i64)
KVFIT_SCALAR(f64, double, f64)
#undef KVFIT_SCALAR

gguf_wvalue gguf_wvalue::boolean(bool v) {
    gguf_wvalue w;
    w.type_ = gguf_type::boolean;
    put<uint8_t>(w.bytes_, v ? 1 : 0);
    return w;
}

gguf_wvalue gguf_wvalue::string(std::string_view v) {
    gguf_wvalue w;
    w.type_ = gguf_type::string;
    put_str(w.bytes_, v);
    return w;
}

gguf_wvalue gguf_wvalue::array(gguf_type elem, const std::vector<gguf_wvalue> & elems) {
    gguf_wvalue w;
    w.type_ = gguf_type::array;
    w.elem_ = elem;
    put<uint32_t>(w.bytes_, uint32_t(elem));
    put<uint64_t>(w.bytes_, elems.size());
    for (size_t i = 0; i < elems.size(); ++i) {
        if (elems[i].type_ != elem) {
            throw error(fmt::format("gguf writer: array element {} has type {}, expected {}", i,
                                    gguf_type_name(elems[i].type_), gguf_type_name(elem)));
        }
        w.bytes_.append(elems[i].bytes_); // a nested array's bytes start with its own type and count
    }
    return w;
}

gguf_wvalue gguf_wvalue::array_u32(const std::vector<uint32_t> & v) { return numbers(&gguf_wvalue::u32, gguf_type::u32, v); }
gguf_wvalue gguf_wvalue::array_i32(const std::vector<int32_t> & v) { return numbers(&gguf_wvalue::i32, gguf_type::i32, v); }
gguf_wvalue gguf_wvalue::array_f32(const std::vector<float> & v) { return numbers(&gguf_wvalue::f32, gguf_type::f32, v); }

gguf_wvalue gguf_wvalue::array_string(const std::vector<std::string> & v) {
    gguf_wvalue w;
    w.type_ = gguf_type::array;
    w.elem_ = gguf_type::string;
    put<uint32_t>(w.bytes_, uint32_t(gguf_type::string));
    put<uint64_t>(w.bytes_, v.size());
    for (const auto & s : v) put_str(w.bytes_, s);
    return w;
}

void gguf_writer::add(std::string key, gguf_wvalue value) {
    if (key == "general.alignment" && value.type() == gguf_type::u32) {
        uint32_t a = 0;
        std::memcpy(&a, value.bytes().data(), 4);
        if (a != 0 && (a & (a - 1)) == 0) alignment_ = a;
    }
    kvs_.emplace_back(std::move(key), std::move(value));
}

void gguf_writer::add_tensor(std::string name, ggml_type type, std::vector<uint64_t> shape) {
    const uint64_t offset = detail::round_up(next_offset_, alignment_);
    add_tensor_at(std::move(name), type, std::move(shape), offset);
}

void gguf_writer::add_tensor_at(std::string name, ggml_type type, std::vector<uint64_t> shape, uint64_t offset) {
    if (shape.empty() || shape.size() > 4) throw error(fmt::format("gguf writer: tensor '{}': {} dims, expected 1-4", name, shape.size()));
    uint64_t bytes = ggml_row_size(type, shape[0]);
    for (size_t j = 1; j < shape.size(); ++j) bytes *= shape[j];
    next_offset_ = std::max(next_offset_, offset + bytes);
    tensors_.push_back({std::move(name), type, std::move(shape), offset, bytes});
}

void gguf_writer::add_spm_vocab(uint32_t n_vocab) {
    if (n_vocab < 259) throw error(fmt::format("gguf writer: vocabulary of {} tokens, need at least 259", n_vocab));
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3}; // unknown, control, control (llama_token_attr in llama-vocab.h)
    tokens.reserve(n_vocab);
    types.reserve(n_vocab);
    for (int b = 0; b < 256; ++b) tokens.push_back(fmt::format("<0x{:02X}>", b)), types.push_back(6); // byte
    for (uint32_t i = 0; tokens.size() < n_vocab; ++i) tokens.push_back(fmt::format("\u2581t{}", i)), types.push_back(1);
    add("tokenizer.ggml.model", gguf_wvalue::string("llama"));
    add("tokenizer.ggml.tokens", gguf_wvalue::array_string(tokens));
    add("tokenizer.ggml.scores", gguf_wvalue::array_f32(std::vector<float>(n_vocab, 0.0f)));
    add("tokenizer.ggml.token_type", gguf_wvalue::array_i32(types));
    add("tokenizer.ggml.bos_token_id", gguf_wvalue::u32(1));
    add("tokenizer.ggml.eos_token_id", gguf_wvalue::u32(2));
    add("tokenizer.ggml.unknown_token_id", gguf_wvalue::u32(0));
}

std::string gguf_writer::header() const {
    std::string out = "GGUF";
    put<uint32_t>(out, version_);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, kvs_.size());
    for (const auto & [key, value] : kvs_) {
        put_str(out, key);
        put<uint32_t>(out, uint32_t(value.type()));
        out.append(value.bytes());
    }
    for (const auto & t : tensors_) {
        put_str(out, t.name);
        put<uint32_t>(out, uint32_t(t.shape.size()));
        for (uint64_t ne : t.shape) put<uint64_t>(out, ne);
        put<uint32_t>(out, uint32_t(t.type));
        put<uint64_t>(out, t.offset);
    }
    return out;
}

uint64_t gguf_writer::data_offset() const { return detail::round_up(header().size(), alignment_); }

uint64_t gguf_writer::data_bytes() const { return detail::round_up(next_offset_, alignment_); }

void gguf_writer::write(const std::string & path, gguf_data data) const {
    const std::string head = header();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw error::at(path, fmt::format("cannot write: {}", std::strerror(errno)));
    auto fail = [&](const char * what) {
        const int e = errno;
        ::close(fd);
        throw error::at(path, fmt::format("cannot write: {}: {}", what, std::strerror(e)));
    };
    auto write_all = [&](const char * p, uint64_t n) {
        while (n > 0) {
            const ssize_t k = ::write(fd, p, n);
            if (k <= 0) fail("write");
            p += k;
            n -= uint64_t(k);
        }
    };
    write_all(head.data(), head.size());
    const uint64_t total = detail::round_up(head.size(), alignment_) + data_bytes();
    if (data == gguf_data::sparse) {
        if (::ftruncate(fd, off_t(total)) != 0) fail("ftruncate");
    } else if (data == gguf_data::zeros) {
        const std::string zeros(1 << 20, '\0');
        for (uint64_t left = total - head.size(); left > 0;) {
            const uint64_t n = std::min<uint64_t>(left, zeros.size());
            write_all(zeros.data(), n);
            left -= n;
        }
    }
    if (::close(fd) != 0) throw error::at(path, fmt::format("cannot write: close: {}", std::strerror(errno)));
}

} // namespace kvfit
