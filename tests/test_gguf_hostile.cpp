// Hostile GGUF input: each row patches a small valid file and checks that kvfit::error names the byte offset
// and the problem; the file truncated at every offset; fuzzer finds replayed from tests/data/gguf_crashes/.
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/gguf_writer.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>

namespace {

using kvfit::gguf_type;
using kvfit::gguf_wvalue;

// 2 tensors, 3 keys: "general.architecture" = "llama", general.alignment = 32, "arr" = [1, 2, 3].
kvfit::gguf_writer base_writer() {
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string("llama"));
    w.add("general.alignment", gguf_wvalue::u32(32));
    w.add("arr", gguf_wvalue::array_u32({1, 2, 3}));
    w.add_tensor("a", kvfit::ggml_type::f32, {8});
    w.add_tensor("b", kvfit::ggml_type::f16, {32, 2});
    return w;
}

template <class T> void poke(std::string & s, size_t at, T v) { std::memcpy(s.data() + at, &v, sizeof v); }

// Offset of the first occurrence of `what` in s, checked.
size_t find(const std::string & s, std::string_view what) {
    const size_t at = s.find(what);
    EXPECT_NE(at, std::string::npos) << what;
    return at;
}

// Offset of tensor info 'a' (its u64 name length 1, then "a").
size_t info(const std::string & s) { return find(s, std::string("\x01\0\0\0\0\0\0\0a", 9)); }

std::string message(const std::string & bytes) {
    try {
        kvfit::gguf_file::parse(bytes, "x.gguf");
    } catch (const kvfit::error & e) {
        return e.what();
    }
    return "no error";
}

struct hostile_case {
    const char * name;
    std::function<std::string()> bytes;
    const char * expected; // substring of the message
};

std::string nested(uint32_t depth) {
    gguf_wvalue v = gguf_wvalue::array_u32({1});
    for (uint32_t i = 1; i < depth; ++i) v = gguf_wvalue::array(gguf_type::array, {v});
    kvfit::gguf_writer w;
    w.add("deep", v);
    return w.header();
}

const hostile_case k_cases[] = {
    {"bad magic", [] { auto s = base_writer().header(); s[0] = 'X'; return s; },
     "x.gguf: offset 0x0: bad magic 58 47 55 46, expected 'GGUF'"},
    {"version 1", [] { auto s = base_writer().header(); poke<uint32_t>(s, 4, 1); return s; },
     "offset 0x4: version 1 is not supported"},
    {"big-endian version", [] { auto s = base_writer().header(); poke<uint32_t>(s, 4, 0x03000000); return s; },
     "offset 0x4: unsupported version 50331648, a big-endian file?"},
    {"tensor count 2^63", [] { auto s = base_writer().header(); poke<uint64_t>(s, 8, uint64_t(1) << 63); return s; },
     "offset 0x8: tensor count 9223372036854775808 exceeds what the remaining"},
    {"key count larger than the file", [] { auto s = base_writer().header(); poke<uint64_t>(s, 16, 1000000); return s; },
     "offset 0x10: key/value count 1000000 exceeds what the remaining"},
    {"string length 2^63 - 1", [] { auto s = base_writer().header(); poke<int64_t>(s, find(s, "llama") - 8, INT64_MAX); return s; },
     "x.gguf: offset 0x38: string length 9223372036854775807 exceeds remaining"},
    {"key length larger than the file", [] { auto s = base_writer().header(); poke<uint64_t>(s, 24, 5000); return s; },
     "offset 0x18: key length 5000 exceeds remaining"},
    {"array length larger than the file", [] { auto s = base_writer().header(); poke<uint64_t>(s, find(s, "arr") + 3 + 8, uint64_t(1) << 62); return s; },
     "array length 4611686018427387904 of u32 exceeds remaining"},
    {"unknown value type", [] { auto s = base_writer().header(); poke<uint32_t>(s, find(s, "arr") + 3, 13); return s; },
     "unknown value type 13"},
    {"unknown array element type", [] { auto s = base_writer().header(); poke<uint32_t>(s, find(s, "arr") + 7, 99); return s; },
     "unknown value type 99"},
    {"arrays nested 100 deep", [] { return nested(100); }, "arrays nested deeper than 8 levels"},
    {"arrays nested 8 deep are fine", [] { return nested(8); }, "no error"},
    {"alignment 0", [] { auto s = base_writer().header(); poke<uint32_t>(s, find(s, "general.alignment") + 17 + 4, 0); return s; },
     "key 'general.alignment': alignment 0 is not a power of two"},
    {"alignment 48", [] { auto s = base_writer().header(); poke<uint32_t>(s, find(s, "general.alignment") + 17 + 4, 48); return s; },
     "alignment 48 is not a power of two"},
    {"alignment as a string", [] {
         kvfit::gguf_writer w;
         w.add("general.alignment", gguf_wvalue::string("32"));
         return w.header();
     }, "key 'general.alignment': expected an unsigned integer"},
    {"duplicate key", [] { kvfit::gguf_writer w = base_writer(); w.add("arr", gguf_wvalue::u8(1)); return w.header(); },
     "duplicate key 'arr'"},
    {"duplicate tensor", [] { kvfit::gguf_writer w = base_writer(); w.add_tensor("a", kvfit::ggml_type::f32, {8}); return w.header(); },
     "duplicate tensor 'a'"},
    {"n_dims 5", [] { auto s = base_writer().header(); poke<uint32_t>(s, info(s) + 9, 5); return s; },
     "tensor 'a': n_dims 5 exceeds GGML_MAX_DIMS 4"},
    {"negative dimension", [] { auto s = base_writer().header(); poke<int64_t>(s, info(s) + 13, -5); return s; },
     "tensor 'a': dimension 0 is negative (-5)"},
    {"unknown ggml type", [] { auto s = base_writer().header(); poke<uint32_t>(s, info(s) + 21, 4); return s; },
     "tensor 'a': unknown ggml type 4"},
    {"row not a multiple of the block", [] { auto s = base_writer().header(); poke<uint32_t>(s, info(s) + 21, 2); return s; },
     "tensor 'a': row length 8 is not a multiple of the q4_0 block size 32"},
    {"element count overflow", [] {
         kvfit::gguf_writer w;
         w.add_tensor_at("big", kvfit::ggml_type::i8, {1}, 0);
         auto s = w.header();
         poke<uint32_t>(s, find(s, "big") + 3, 4);
         s.insert(find(s, "big") + 3 + 4 + 8, std::string(24, '\x7f')); // ne[1..3] huge
         return s;
     }, "tensor 'big': element count overflows int64"},
    {"unaligned offset", [] { kvfit::gguf_writer w; w.add_tensor_at("u", kvfit::ggml_type::f32, {8}, 16); return w.header(); },
     "tensor 'u': data offset 16 is not a multiple of the alignment 32"},
    {"overlapping tensors", [] {
         kvfit::gguf_writer w;
         w.add_tensor("a", kvfit::ggml_type::f32, {64});
         w.add_tensor_at("b", kvfit::ggml_type::f32, {8}, 224);
         return w.header();
     }, "tensor 'b' data [224, 256) overlaps tensor 'a' ending at 256"},
    {"offset 2^63 overflows", [] { kvfit::gguf_writer w; w.add_tensor_at("o", kvfit::ggml_type::f32, {8}, uint64_t(1) << 63); return w.header(); },
     "tensor 'o': data offset 9223372036854775808 + size 32 overflows int64"},
    {"tensor data outside the file", [] {
         kvfit::gguf_writer w = base_writer();
         std::string s = w.header();
         s.resize(w.data_offset() + 40, '\0'); // data present but cut inside tensor 'b'
         return s;
     }, "tensor 'b' data ends at file offset"},
    {"header-only file is valid", [] { return base_writer().header(); }, "no error"},
};

TEST(gguf_hostile, every_case_is_a_clear_error) {
    for (const auto & c : k_cases) {
        const std::string got = message(c.bytes());
        EXPECT_NE(got.find(c.expected), std::string::npos) << c.name << ": got \"" << got << "\"";
        if (std::string(c.expected) != "no error") {
            EXPECT_EQ(got.rfind("x.gguf: offset 0x", 0), 0u) << c.name << ": " << got;
        }
    }
}

TEST(gguf_hostile, truncated_at_every_offset) {
    const std::string full = base_writer().header();
    for (size_t n = 0; n < full.size(); ++n) {
        const std::string got = message(full.substr(0, n));
        EXPECT_EQ(got.rfind("x.gguf: offset 0x", 0), 0u) << "cut at " << n << ": " << got;
    }
    EXPECT_EQ(message(full), "no error");
}

TEST(gguf_hostile, fuzzer_finds_replay_without_crashing) {
    const auto dir = std::filesystem::path(KVFIT_TEST_DATA) / "gguf_crashes";
    size_t n = 0;
    for (const auto & e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() == ".md") continue;
        std::ifstream in(e.path(), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const std::string got = message(bytes); // any outcome but a crash
        EXPECT_FALSE(got.empty()) << e.path();
        ++n;
    }
    EXPECT_GT(n, 0u);
}

} // namespace
