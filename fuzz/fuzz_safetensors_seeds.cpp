// Writes the safetensors fuzz seed corpus into argv[1]: headers of small checkpoints made by kvfit's writer
// (plain, GPTQ, fp8 block-wise, MXFP4, every dtype), each prefixed with its data size as fuzz_safetensors.cpp reads it.
#include "support/st_fixture.h"

#include <fstream>
#include <string>

namespace {

void save(const std::string & dir, const std::string & name, const kvfit::safetensors_writer & w) {
    std::string size(8, '\0');
    uint64_t n = w.data_bytes();
    for (int i = 0; i < 8; ++i, n >>= 8) size[size_t(i)] = char(n & 0xff);
    std::ofstream(dir + "/" + name, std::ios::binary) << size << w.header();
}

} // namespace

int main(int argc, char ** argv) {
    if (argc != 2) return 2;
    const std::string dir = argv[1];
    using kvfit::test::st_linear;
    const kvfit::test::llama_shape s{1, 128, 2, 1, 128, 128};
    save(dir, "llama_bf16", kvfit::test::st_writer(kvfit::test::llama_entries(s, st_linear::bf16)));
    save(dir, "llama_gptq", kvfit::test::st_writer(kvfit::test::llama_entries(s, st_linear::gptq4)));
    save(dir, "llama_fp8", kvfit::test::st_writer(kvfit::test::llama_entries(s, st_linear::fp8_block)));
    save(dir, "gpt_oss_mxfp4", kvfit::test::st_writer(kvfit::test::gpt_oss_entries(), 0, 20));
    kvfit::safetensors_writer all;
    for (const char * t : {"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16",
                           "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"}) {
        all.add(std::string("t.") + t, *kvfit::st_dtype_from_name(t), {2, 4});
    }
    save(dir, "every_dtype", all);
    return 0;
}
