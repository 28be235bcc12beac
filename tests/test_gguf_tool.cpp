// kvfit-gguf-write (tools/gguf_write.cpp): a JSON spec in, a GGUF the reader and model mapping accept out.
#include "kvfit/gguf.h"
#include "support/gguf_fixture.h"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>

namespace {

TEST(gguf_tool, writes_the_spec) {
    kvfit::test::scratch_dir dir("gguf_tool");
    std::ofstream(dir.file("spec.json")) << R"({
      "version": 2,
      "metadata": {
        "general.architecture": "lfm2",
        "lfm2.block_count": 4,
        "lfm2.embedding_length": 256,
        "lfm2.attention.head_count": {"type": "u32", "value": 4},
        "lfm2.attention.head_count_kv": {"type": "array", "elem": "u32", "value": [0, 0, 2, 0]},
        "lfm2.shortconv.l_cache": 3,
        "lfm2.rope.freq_base": 1000000.0,
        "small": {"type": "i8", "value": -3},
        "nested": {"type": "array", "elem": "array", "value": [{"elem": "str", "value": ["a", "b"]}]}
      },
      "vocab": {"spm": 300},
      "tensors": [
        {"name": "token_embd.weight", "type": "q4_K", "shape": [256, 300]},
        {"name": "blk.0.ffn_down.weight", "type": "f16", "shape": [256, 1024]}
      ]
    })";
    const std::string cmd = std::string(KVFIT_GGUF_WRITE) + " " + dir.file("spec.json") + " " + dir.file("m.gguf");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const auto f = kvfit::gguf_file::open(dir.file("m.gguf"));
    EXPECT_EQ(f.version(), 2u);
    EXPECT_FALSE(f.header_only()); // sparse data by default
    EXPECT_EQ(f.file_bytes(), f.data_offset() + f.data_bytes());
    EXPECT_EQ(f.find("lfm2.rope.freq_base")->type, kvfit::gguf_type::f32);
    EXPECT_EQ(f.find("small")->to_int(), -3);
    EXPECT_EQ(f.find("nested")->at(0).at(1).to_string(), "b");
    EXPECT_EQ(f.find("tokenizer.ggml.tokens")->n, 300u);
    EXPECT_EQ(f.find("tokenizer.ggml.tokens")->at(3).to_string(), "<0x00>");
    kvfit::warnings warn;
    const auto m = kvfit::model_from_gguf(dir.file("m.gguf"), warn);
    EXPECT_EQ(m.n_vocab, 300u);
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 1u);
    EXPECT_EQ(m.weights.token_embd.bytes, 144u * 300);

    const std::string header_only = cmd + " --data header_only";
    ASSERT_EQ(std::system(header_only.c_str()), 0);
    EXPECT_TRUE(kvfit::gguf_file::open(dir.file("m.gguf")).header_only());

    std::ofstream(dir.file("bad.json")) << R"({"metadata": {"x": {"type": "u128", "value": 1}}})";
    const std::string bad = std::string(KVFIT_GGUF_WRITE) + " " + dir.file("bad.json") + " " + dir.file("b.gguf") + " 2>/dev/null";
    EXPECT_NE(std::system(bad.c_str()), 0);
}

} // namespace
