// Writes the fuzz seed corpus into argv[1]: small GGUF headers made by kvfit's writer, one per architecture
// layout plus files using every value type, so the fuzzer starts from well-formed input.
#include "kvfit/gguf_writer.h"

#include <fstream>
#include <string>

namespace {

using kvfit::gguf_wvalue;

void save(const std::string & dir, const std::string & name, const kvfit::gguf_writer & w) {
    std::ofstream(dir + "/" + name, std::ios::binary) << w.header();
}

kvfit::gguf_writer model(const std::string & arch, uint32_t n_block) {
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string(arch));
    w.add("general.alignment", gguf_wvalue::u32(32));
    w.add(arch + ".block_count", gguf_wvalue::u32(n_block));
    w.add(arch + ".embedding_length", gguf_wvalue::u32(64));
    w.add(arch + ".attention.head_count", gguf_wvalue::u32(4));
    w.add(arch + ".attention.head_count_kv", gguf_wvalue::array_u32(std::vector<uint32_t>(n_block, 2)));
    w.add(arch + ".attention.sliding_window", gguf_wvalue::u32(128));
    w.add(arch + ".ssm.conv_kernel", gguf_wvalue::u32(4));
    w.add(arch + ".ssm.inner_size", gguf_wvalue::u32(128));
    w.add(arch + ".ssm.state_size", gguf_wvalue::u32(16));
    w.add(arch + ".ssm.group_count", gguf_wvalue::u32(2));
    w.add(arch + ".shortconv.l_cache", gguf_wvalue::u32(3));
    w.add(arch + ".wkv.head_size", gguf_wvalue::u32(16));
    w.add("tokenizer.ggml.tokens", gguf_wvalue::array_string({"a", "bb", "ccc"}));
    w.add_tensor("token_embd.weight", kvfit::ggml_type::q8_0, {64, 3});
    for (uint32_t il = 0; il < n_block; ++il) {
        w.add_tensor("blk." + std::to_string(il) + ".attn_q.weight", kvfit::ggml_type::q4_k, {256, 4});
    }
    w.add_tensor("output.weight", kvfit::ggml_type::f16, {64, 3});
    return w;
}

} // namespace

int main(int argc, char ** argv) {
    if (argc < 2) return 2;
    const std::string dir = argv[1];
    for (const char * arch : {"llama", "qwen35", "gemma3", "deepseek2", "lfm2", "nemotron_h", "rwkv7", "llama4"}) {
        save(dir, std::string(arch) + ".gguf", model(arch, 4));
    }
    kvfit::gguf_writer w(2);
    w.add("u8", gguf_wvalue::u8(1));
    w.add("i16", gguf_wvalue::i16(-2));
    w.add("f64", gguf_wvalue::f64(0.5));
    w.add("b", gguf_wvalue::boolean(true));
    w.add("u64", gguf_wvalue::u64(7));
    w.add("nested", gguf_wvalue::array(kvfit::gguf_type::array, {gguf_wvalue::array_string({"x"}),
                                                                  gguf_wvalue::array_f32({1.0f})}));
    w.add_tensor("t", kvfit::ggml_type::mxfp4, {32});
    save(dir, "types_v2.gguf", w);
    return 0;
}
