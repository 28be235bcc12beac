// Hostile safetensors headers: each row builds a file from a JSON text and a data size and checks that
// kvfit::error names the file, the tensor where there is one, and the problem; a valid file cut at every length;
// fuzzer finds replayed from tests/data/safetensors_crashes/.
#include "kvfit/error.h"
#include "kvfit/safetensors.h"

#include "support/st_fixture.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace {

// 8-byte little-endian length, the JSON as given, `data` zero bytes.
std::string file_of(const std::string & json, uint64_t data) {
    std::string out(8, '\0');
    uint64_t n = json.size();
    for (int i = 0; i < 8; ++i, n >>= 8) out[size_t(i)] = char(n & 0xff);
    return out + json + std::string(data, '\0');
}

std::string with_length(uint64_t n, const std::string & rest) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i, n >>= 8) out[size_t(i)] = char(n & 0xff);
    return out + rest;
}

std::string message(const std::string & bytes) {
    try {
        kvfit::safetensors_file::parse(bytes, bytes.size(), "x.safetensors");
    } catch (const kvfit::error & e) {
        return e.what();
    }
    return "no error";
}

struct hostile_case {
    const char * name;
    std::string bytes;
    const char * expected; // substring of the message
};

const std::string k_a = R"("a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]})";

const hostile_case k_cases[] = {
    {"shorter than the length", "abc", "x.safetensors: offset 0x0: truncated: the header length needs 8 bytes, 3 remain"},
    {"header over 100 MB", with_length(100000001, "{}"), "x.safetensors: offset 0x0: header length 100000001 exceeds the limit 100000000"},
    {"header length 2^64 - 1", with_length(UINT64_MAX, "{}"), "offset 0x0: header length 18446744073709551615 exceeds the limit"},
    {"header longer than the file", with_length(500, "{}"), "x.safetensors: offset 0x0: header length 500 exceeds the file's 10 bytes"},
    {"not starting with {", file_of(R"( {"a": 1})", 0), "x.safetensors: offset 0x8: header does not start with '{'"},
    {"a JSON array", file_of("[1, 2]", 0), "offset 0x8: header does not start with '{'"},
    {"invalid JSON", file_of(R"({"a": )", 0), "x.safetensors: offset 0x8: header is not valid JSON: "},
    {"invalid UTF-8", file_of("{\"\xff\": 1}", 0), "offset 0x8: header is not valid JSON"},
    {"metadata not an object", file_of(R"({"__metadata__": 3})", 0), "offset 0x8: header __metadata__ is not an object"},
    {"metadata value not a string", file_of(R"({"__metadata__": {"k": 1}})", 0), "header __metadata__ 'k' is not a string"},
    {"tensor not an object", file_of(R"({"a": 1})", 0), "x.safetensors: tensor 'a': expected an object, got number"},
    {"missing dtype", file_of(R"({"a": {"shape": [], "data_offsets": [0, 0]}})", 0), "tensor 'a': missing string 'dtype'"},
    {"unknown dtype", file_of(R"({"a": {"dtype": "F12", "shape": [1], "data_offsets": [0, 2]}})", 2), "x.safetensors: tensor 'a': unknown dtype 'F12'"},
    {"missing shape", file_of(R"({"a": {"dtype": "F32", "data_offsets": [0, 4]}})", 4), "tensor 'a': missing array 'shape'"},
    {"negative dimension", file_of(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4), "tensor 'a': shape entry -1 is not a non-negative integer"},
    {"fractional dimension", file_of(R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4), "tensor 'a': shape entry 1.5 is not"},
    {"element count overflow", file_of(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4), "tensor 'a': element count overflows 64 bits"},
    {"byte size overflow", file_of(R"({"a": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 4]}})", 4), "tensor 'a': byte size overflows 64 bits"},
    {"data_offsets of 3", file_of(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}})", 8), "tensor 'a': missing array 'data_offsets' of 2 integers"},
    {"negative offset", file_of(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4), "tensor 'a': data_offsets [-4,0] are not non-negative integers"},
    {"end before begin", file_of(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})", 8), "tensor 'a': data_offsets [8, 4] end before they begin"},
    {"size differs from the shape", file_of(R"({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 10]}})", 10),
     "x.safetensors: tensor 'a': data_offsets [0, 10] hold 10 bytes but F32 [2, 2] needs 16"},
    {"sub-byte tensor not filling bytes", file_of(R"({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}})", 2),
     "tensor 'a': 3 elements of F4 fill 12 bits, not whole bytes"},
    {"beyond the end of the file", file_of("{" + k_a + "}", 8), "x.safetensors: tensor 'a': data [0, 16) ends beyond the file's data section of 8 bytes"},
    {"first tensor not at 0", file_of(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
     "tensor 'a': data [4, 8) leaves a gap of 4 bytes after the start of the data section"},
    {"gap between tensors", file_of("{" + k_a + R"(, "b": {"dtype": "F32", "shape": [1], "data_offsets": [20, 24]}})", 24),
     "x.safetensors: tensor 'b': data [20, 24) leaves a gap of 4 bytes after tensor 'a' ending at 16"},
    {"overlapping tensors", file_of("{" + k_a + R"(, "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}})", 20),
     "x.safetensors: tensor 'b': data [12, 20) overlaps tensor 'a' ending at 16"},
    {"same range twice", file_of("{" + k_a + R"(, "b": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}})", 16),
     "tensor 'b': data [0, 16) overlaps tensor 'a' ending at 16"},
    {"trailing bytes", file_of("{" + k_a + "}", 20), "x.safetensors: data section holds 20 bytes but the tensors end at 16"},
    {"duplicate tensor", file_of("{" + k_a + ", " + k_a + "}", 16), "x.safetensors: tensor 'a': listed twice in the header"},
};

TEST(safetensors_hostile, each_bad_header_is_a_one_line_error) {
    for (const auto & c : k_cases) {
        const std::string got = message(c.bytes);
        EXPECT_NE(got.find(c.expected), std::string::npos) << c.name << ": expected '" << c.expected << "', got '" << got << "'";
        EXPECT_EQ(got.find('\n'), std::string::npos) << c.name;
    }
}

TEST(safetensors_hostile, a_valid_file_is_accepted) {
    EXPECT_EQ(message(file_of("{" + k_a + R"(, "__metadata__": {"format": "pt"}, "e": {"dtype": "BOOL", "shape": [0], "data_offsets": [16, 16]}})", 16)), "no error");
    EXPECT_EQ(message(file_of("{}", 0)), "no error");                              // no tensors at all
    EXPECT_EQ(message(file_of("{" + k_a + "}   ", 16)), "no error");               // padded with spaces
}

// Every prefix length of a valid header, parsed as a whole file, ends in kvfit::error and never in a crash.
TEST(safetensors_hostile, truncation_at_every_length) {
    const std::string full = kvfit::test::st_writer(kvfit::test::llama_entries({}, kvfit::test::st_linear::gptq4)).header();
    for (size_t n = 0; n < full.size(); ++n) {
        EXPECT_THROW(kvfit::safetensors_file::parse(full.substr(0, n), n, "cut.safetensors"), kvfit::error) << n;
        // A download of the first n bytes of the real file: only the prefix is short.
        EXPECT_THROW(kvfit::safetensors_file::parse(full.substr(0, n), full.size() + 1000000, "cut.safetensors"), kvfit::error) << n;
    }
}

struct index_case {
    const char * name;
    const char * json;
    const char * expected;
};

const index_case k_index_cases[] = {
    {"not JSON", "{", "model.safetensors.index.json: not valid JSON"},
    {"no weight_map", R"({"metadata": {}})", "model.safetensors.index.json: missing required key 'weight_map'"},
    {"weight_map not an object", R"({"weight_map": []})", "key 'weight_map': expected an object"},
    {"file not a string", R"({"weight_map": {"a": 1}})", "key 'weight_map.a': expected a file name"},
    {"path traversal", R"({"weight_map": {"a": "../../etc/passwd.safetensors"}})", "key 'weight_map.a': '../../etc/passwd.safetensors' is not a .safetensors file name"},
    {"not a safetensors name", R"({"weight_map": {"a": "model.bin"}})", "'model.bin' is not a .safetensors file name"},
};

TEST(safetensors_hostile, bad_index_files) {
    for (const auto & c : k_index_cases) {
        std::string got = "no error";
        try {
            kvfit::safetensors_index_shards(c.json, "model.safetensors.index.json");
        } catch (const kvfit::error & e) {
            got = e.what();
        }
        EXPECT_NE(got.find(c.expected), std::string::npos) << c.name << ": got '" << got << "'";
    }
}

// Inputs the fuzzer (fuzz/fuzz_safetensors.cpp) found, kept as files: each must parse or end in kvfit::error.
TEST(safetensors_hostile, fuzzer_finds_replay) {
    const std::filesystem::path dir = std::filesystem::path(KVFIT_TEST_DATA) / "safetensors_crashes";
    for (const auto & e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".safetensors") continue;
        std::ifstream in(e.path(), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        try {
            kvfit::safetensors_file::parse(bytes, bytes.size(), e.path().filename().string());
        } catch (const kvfit::error &) {
        }
    }
}

} // namespace
