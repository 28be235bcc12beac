// GGUF reader on files made by kvfit's writer: every value type, versions 2 and 3, tensor sizes of every ggml
// type, header-only / zero-filled / sparse files, alignment, split models.
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/gguf_writer.h"
#include "support/gguf_fixture.h"

#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace {

using kvfit::gguf_type;
using kvfit::gguf_wvalue;

kvfit::gguf_writer all_types_writer(uint32_t version) {
    kvfit::gguf_writer w(version);
    w.add("u8", gguf_wvalue::u8(200));
    w.add("i8", gguf_wvalue::i8(-100));
    w.add("u16", gguf_wvalue::u16(60000));
    w.add("i16", gguf_wvalue::i16(-30000));
    w.add("u32", gguf_wvalue::u32(4000000000u));
    w.add("i32", gguf_wvalue::i32(-2000000000));
    w.add("f32", gguf_wvalue::f32(0.5f));
    w.add("bool", gguf_wvalue::boolean(true));
    w.add("str", gguf_wvalue::string("héllo"));
    w.add("u64", gguf_wvalue::u64(18000000000000000000ull));
    w.add("i64", gguf_wvalue::i64(-9000000000000000000ll));
    w.add("f64", gguf_wvalue::f64(-1.25));
    w.add("arr_u32", gguf_wvalue::array_u32({0, 0, 8, 0}));
    w.add("arr_f32", gguf_wvalue::array_f32({1.5f, 2.5f}));
    w.add("arr_str", gguf_wvalue::array_string({"a", "", "ccc"}));
    w.add("arr_bool", gguf_wvalue::array(gguf_type::boolean, {gguf_wvalue::boolean(false), gguf_wvalue::boolean(true)}));
    w.add("arr_empty", gguf_wvalue::array(gguf_type::i64, {}));
    w.add("arr_nested", gguf_wvalue::array(gguf_type::array, {gguf_wvalue::array_string({"x", "yy"}),
                                                               gguf_wvalue::array_u32({7, 8, 9})}));
    w.add_tensor("t", kvfit::ggml_type::q8_0, {64, 3});
    return w;
}

class gguf_versions : public ::testing::TestWithParam<uint32_t> {};

TEST_P(gguf_versions, every_value_type_round_trips) {
    const std::string bytes = all_types_writer(GetParam()).header();
    const auto f = kvfit::gguf_file::parse(bytes, "all.gguf");
    EXPECT_EQ(f.version(), GetParam());
    ASSERT_EQ(f.kvs().size(), 18u);
    EXPECT_EQ(f.find("u8")->to_uint(), 200u);
    EXPECT_EQ(f.find("i8")->to_int(), -100);
    EXPECT_EQ(f.find("i8")->to_uint(), std::nullopt);
    EXPECT_EQ(f.find("u16")->to_uint(), 60000u);
    EXPECT_EQ(f.find("i16")->to_int(), -30000);
    EXPECT_EQ(f.find("u32")->to_uint(), 4000000000u);
    EXPECT_EQ(f.find("i32")->to_int(), -2000000000);
    EXPECT_EQ(f.find("f32")->to_float(), 0.5);
    EXPECT_EQ(f.find("bool")->to_uint(), 1u);
    EXPECT_EQ(f.find("str")->to_string(), "héllo");
    EXPECT_EQ(f.find("str")->to_uint(), std::nullopt);
    EXPECT_EQ(f.find("u64")->to_uint(), 18000000000000000000ull);
    EXPECT_EQ(f.find("u64")->to_int(), std::nullopt);
    EXPECT_EQ(f.find("i64")->to_int(), -9000000000000000000ll);
    EXPECT_EQ(f.find("f64")->to_float(), -1.25);
    const auto & a = *f.find("arr_u32");
    ASSERT_TRUE(a.is_array());
    EXPECT_EQ(a.elem_type, gguf_type::u32);
    EXPECT_EQ(a.n, 4u);
    EXPECT_EQ(a.at(2).to_uint(), 8u);
    EXPECT_EQ(f.find("arr_f32")->at(1).to_float(), 2.5);
    EXPECT_EQ(f.find("arr_str")->at(0).to_string(), "a");
    EXPECT_EQ(f.find("arr_str")->at(1).to_string(), "");
    EXPECT_EQ(f.find("arr_str")->at(2).to_string(), "ccc");
    EXPECT_EQ(f.find("arr_bool")->at(1).to_uint(), 1u);
    EXPECT_EQ(f.find("arr_empty")->n, 0u);
    const auto nested = f.find("arr_nested")->at(1);
    EXPECT_EQ(nested.elem_type, gguf_type::u32);
    EXPECT_EQ(nested.at(2).to_uint(), 9u);
    EXPECT_EQ(f.find("arr_nested")->at(0).at(1).to_string(), "yy");
    EXPECT_THROW(a.at(4), kvfit::error);
    EXPECT_EQ(f.find("missing"), nullptr);
    ASSERT_EQ(f.tensors().size(), 1u);
    EXPECT_EQ(f.tensors()[0].bytes, 2u * 34 * 3);
}

INSTANTIATE_TEST_SUITE_P(v2_v3, gguf_versions, ::testing::Values(2u, 3u),
                         [](const auto & info) { return "gguf_v" + std::to_string(info.param); });

TEST(gguf_reader, tensor_bytes_for_every_ggml_type) {
    kvfit::gguf_writer w;
    std::vector<std::pair<std::string, uint64_t>> expected;
    for (uint32_t id = 0; id < 64; ++id) {
        const auto t = kvfit::ggml_traits(id);
        if (!t) continue;
        const std::string name = std::string(t->name) + ".weight";
        w.add_tensor(name, t->type, {uint64_t(t->block_size) * 4, 3, 2});
        expected.emplace_back(name, uint64_t(t->type_size) * 4 * 3 * 2);
    }
    ASSERT_EQ(expected.size(), 32u);
    const std::string bytes = w.header();
    const auto f = kvfit::gguf_file::parse(bytes, "types.gguf");
    for (const auto & [name, b] : expected) {
        const auto * t = f.find_tensor(name);
        ASSERT_NE(t, nullptr) << name;
        EXPECT_EQ(t->bytes, b) << name;
        EXPECT_EQ(t->offset % 32, 0u) << name;
    }
    EXPECT_EQ(f.find_tensor("q4_k.weight")->bytes, 144u * 24);
    EXPECT_EQ(f.find_tensor("mxfp4.weight")->bytes, 17u * 24);
    EXPECT_EQ(f.find_tensor("tq1_0.weight")->n_elements, 256u * 4 * 6);
}

TEST(gguf_reader, header_only_zeros_and_sparse_files_describe_the_same_data) {
    kvfit::test::scratch_dir dir("gguf_data");
    kvfit::gguf_writer w;
    w.add("general.alignment", gguf_wvalue::u32(64));
    w.add_tensor("a", kvfit::ggml_type::f32, {10});
    w.add_tensor("b", kvfit::ggml_type::f16, {256, 4});
    for (auto mode : {kvfit::gguf_data::header_only, kvfit::gguf_data::zeros, kvfit::gguf_data::sparse}) {
        const std::string path = dir.file("m.gguf");
        w.write(path, mode);
        const auto f = kvfit::gguf_file::open(path);
        EXPECT_EQ(f.alignment(), 64u);
        EXPECT_EQ(f.header_only(), mode == kvfit::gguf_data::header_only);
        EXPECT_EQ(f.data_offset() % 64, 0u);
        EXPECT_EQ(f.find_tensor("b")->offset, 64u);
        EXPECT_EQ(f.data_bytes(), 64u + 2048);
        EXPECT_EQ(f.file_bytes(), mode == kvfit::gguf_data::header_only ? f.header_bytes() : f.data_offset() + 2112);
    }
}

TEST(gguf_reader, split_model_adds_up_its_shards_from_any_shard) {
    kvfit::test::scratch_dir dir("gguf_split");
    for (uint16_t no = 0; no < 3; ++no) {
        kvfit::gguf_writer w = no == 0 ? kvfit::test::model_writer("llama", 2) : kvfit::gguf_writer();
        if (no == 0) {
            w.add("llama.attention.head_count", gguf_wvalue::u32(4));
            w.add("llama.attention.head_count_kv", gguf_wvalue::u32(2));
        }
        w.add("split.no", gguf_wvalue::u16(no));
        w.add("split.count", gguf_wvalue::u16(3));
        w.add("split.tensors.count", gguf_wvalue::i32(4));
        if (no == 1) w.add_tensor("blk.0.attn_q.weight", kvfit::ggml_type::q8_0, {256, 256});
        if (no == 2) w.add_tensor("blk.1.attn_q.weight", kvfit::ggml_type::q8_0, {256, 256});
        if (no == 2) w.add_tensor("output.weight", kvfit::ggml_type::q8_0, {256, 512});
        w.write(dir.file(fmt::format("m-{:05}-of-00003.gguf", no + 1)), kvfit::gguf_data::sparse);
    }
    for (int no = 1; no <= 3; ++no) {
        kvfit::warnings warn;
        const auto m = kvfit::model_from_gguf(dir.file(fmt::format("m-{:05}-of-00003.gguf", no)), warn);
        EXPECT_EQ(m.n_layer, 2u);
        EXPECT_EQ(m.weights.layers[1].bytes, 256u / 32 * 34 * 256);
        EXPECT_EQ(m.weights.output.bytes, 256u / 32 * 34 * 512);
        EXPECT_FALSE(m.tied_embeddings);
        EXPECT_EQ(m.n_params(), 256u * 512 * 2 + 256u * 256 * 2);
    }
    std::filesystem::remove(dir.file("m-00002-of-00003.gguf"));
    kvfit::warnings warn;
    try {
        kvfit::model_from_gguf(dir.file("m-00003-of-00003.gguf"), warn);
        FAIL() << "no error for a missing shard";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("missing shard 2 of 3"), std::string::npos) << e.what();
    }
}

TEST(gguf_reader, header_larger_than_the_first_read) {
    // open() reads 8 MiB first and doubles while the header runs past it: a 12 MiB header takes two more reads.
    kvfit::test::scratch_dir dir("gguf_big");
    kvfit::gguf_writer w;
    w.add("big", gguf_wvalue::array_string(std::vector<std::string>(3072, std::string(4096, 'x'))));
    w.add("after", gguf_wvalue::u32(7));
    w.add_tensor("t", kvfit::ggml_type::f32, {8});
    w.write(dir.file("big.gguf"), kvfit::gguf_data::sparse);
    const auto f = kvfit::gguf_file::open(dir.file("big.gguf"));
    EXPECT_GT(f.header_bytes(), 12u << 20);
    EXPECT_EQ(f.find("after")->to_uint(), 7u);
    EXPECT_EQ(f.find("big")->at(3071).to_string()->size(), 4096u);
    EXPECT_FALSE(f.header_only());
    std::filesystem::resize_file(dir.file("big.gguf"), 10u << 20); // cut inside the array
    try {
        kvfit::gguf_file::open(dir.file("big.gguf"));
        FAIL();
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("string length 4096 exceeds remaining"), std::string::npos) << e.what();
    }
}

TEST(gguf_reader, open_errors_name_the_file) {
    kvfit::test::scratch_dir dir("gguf_open");
    EXPECT_THROW(kvfit::gguf_file::open(dir.file("absent.gguf")), kvfit::error);
    kvfit::gguf_writer().write(dir.file("empty.gguf"), kvfit::gguf_data::header_only);
    const auto f = kvfit::gguf_file::open(dir.file("empty.gguf"));
    EXPECT_EQ(f.tensors().size(), 0u);
    EXPECT_FALSE(f.header_only());
    std::FILE * z = std::fopen(dir.file("zero.gguf").c_str(), "wb");
    std::fclose(z);
    try {
        kvfit::gguf_file::open(dir.file("zero.gguf"));
        FAIL();
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("offset 0x0: truncated"), std::string::npos) << e.what();
    }
}

TEST(gguf_reader, inspect_summarises_long_arrays_and_lists_layers) {
    kvfit::gguf_writer w = kvfit::test::model_writer("lfm2", 4);
    w.add("lfm2.attention.head_count", gguf_wvalue::u32(4));
    w.add("lfm2.attention.head_count_kv", gguf_wvalue::array_u32({0, 0, 2, 0}));
    w.add("lfm2.shortconv.l_cache", gguf_wvalue::u32(3));
    const std::string bytes = w.header();
    const std::vector<kvfit::gguf_file> shards{kvfit::gguf_file::parse(bytes, "lfm2.gguf")};
    kvfit::warnings warn;
    const std::string out = kvfit::gguf_inspect(shards, warn);
    EXPECT_NE(out.find("tokenizer.ggml.tokens"), std::string::npos) << out;
    EXPECT_NE(out.find("[512 x str: \"t\", \"t\", \"t\", ...]"), std::string::npos) << out;
    EXPECT_NE(out.find("[4 x u32: 0, 0, 2, 0]"), std::string::npos) << out;
    EXPECT_NE(out.find("il 0-1       recurrent (short_conv)"), std::string::npos) << out;
    EXPECT_NE(out.find("il 2         full_attention 2 kv heads x 64/64"), std::string::npos) << out;
    EXPECT_NE(out.find("header-only"), std::string::npos) << out;
}

} // namespace
