// Safetensors: every dtype's size, exact weights of model directories (plain, sharded, GPTQ, fp8 block-wise,
// MXFP4) and the parameter rule of each quantization scheme. Bad headers: test_safetensors_hostile.cpp.
#include "kvfit/error.h"
#include "kvfit/safetensors.h"
#include "kvfit/sources.h"

#include "support/files.h"
#include "support/gguf_fixture.h"
#include "support/run_cli.h"
#include "support/st_fixture.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace {

using kvfit::st_dtype;
using kvfit::test::scratch_dir;
using kvfit::test::st_entry;
using kvfit::test::st_linear;

void write_text(const std::string & path, const std::string & text) { std::ofstream(path, std::ios::binary) << text; }

// A model directory: config.json and one model.safetensors.
kvfit::model_desc load_dir(const scratch_dir & d, const std::string & config, const std::vector<st_entry> & entries,
                           kvfit::warnings & warn) {
    write_text(d.file("config.json"), config);
    kvfit::test::st_writer(entries).write(d.file("model.safetensors"));
    return kvfit::load_model(d.path.string(), warn);
}

struct dtype_row {
    const char * name;
    uint32_t bits;
    uint64_t bytes_2x8; // bytes of a [2, 8] tensor
};

const dtype_row k_dtypes[] = {
    {"BOOL", 8, 16},    {"F4", 4, 8},        {"F6_E2M3", 6, 12}, {"F6_E3M2", 6, 12}, {"U8", 8, 16},
    {"I8", 8, 16},      {"F8_E5M2", 8, 16},  {"F8_E4M3", 8, 16}, {"F8_E8M0", 8, 16}, {"I16", 16, 32},
    {"U16", 16, 32},    {"F16", 16, 32},     {"BF16", 16, 32},   {"I32", 32, 64},    {"U32", 32, 64},
    {"F32", 32, 64},    {"C64", 64, 128},    {"F64", 64, 128},   {"I64", 64, 128},   {"U64", 64, 128},
};

TEST(safetensors, every_dtype_has_its_size) {
    kvfit::safetensors_writer w;
    w.add_metadata("format", "pt");
    uint64_t total = 0;
    for (const auto & r : k_dtypes) {
        const auto t = kvfit::st_dtype_from_name(r.name);
        ASSERT_TRUE(t) << r.name;
        EXPECT_STREQ(kvfit::st_dtype_name(*t), r.name);
        EXPECT_EQ(kvfit::st_dtype_bits(*t), r.bits) << r.name;
        w.add(std::string("t_") + r.name, *t, {2, 8});
        total += r.bytes_2x8;
    }
    std::string file = w.header();
    file.resize(file.size() + total, '\0');
    const auto f = kvfit::safetensors_file::parse(file, file.size(), "all.safetensors");
    ASSERT_EQ(f.tensors().size(), std::size(k_dtypes));
    for (const auto & r : k_dtypes) {
        const auto * t = f.find(std::string("t_") + r.name);
        ASSERT_NE(t, nullptr) << r.name;
        EXPECT_EQ(t->bytes(), r.bytes_2x8) << r.name;
        EXPECT_EQ(t->n_elements, 16u);
    }
    EXPECT_EQ(f.metadata().size(), 1u);
    EXPECT_FALSE(kvfit::st_dtype_from_name("bf16")); // the format is case-sensitive
    EXPECT_FALSE(kvfit::st_dtype_from_name("F12"));
}

TEST(safetensors, open_reads_the_header_of_a_sparse_file) {
    scratch_dir d("st_open");
    const auto entries = kvfit::test::llama_entries({}, st_linear::bf16);
    const auto w = kvfit::test::st_writer(entries);
    w.write(d.file("model.safetensors"));
    const auto f = kvfit::safetensors_file::open(d.file("model.safetensors"));
    EXPECT_EQ(f.file_bytes(), w.file_bytes());
    EXPECT_EQ(f.data_offset() % 8, 0u); // the writer pads the JSON with spaces, as safetensors does
    EXPECT_EQ(f.tensors().size(), entries.size());
    uint64_t sum = 0;
    for (const auto & t : f.tensors()) sum += t.bytes();
    EXPECT_EQ(sum, kvfit::test::st_bytes(entries));
}

// Done-when: a model directory's weights equal the sum of its safetensors tensor bytes.
TEST(safetensors, model_directory_weights_are_the_tensor_bytes) {
    scratch_dir d("st_dir");
    const kvfit::test::llama_shape s;
    const auto entries = kvfit::test::llama_entries(s, st_linear::bf16);
    kvfit::warnings warn;
    const auto m = load_dir(d, kvfit::test::llama_config(s), entries, warn);
    EXPECT_TRUE(warn.empty()) << warn[0];
    EXPECT_TRUE(m.weights.exact);
    EXPECT_EQ(m.weights.format, "bf16");
    EXPECT_EQ(m.weights.total_bytes(), kvfit::test::st_bytes(entries));
    EXPECT_EQ(m.weights.token_embd.bytes, 2ull * s.n_vocab * s.n_embd);
    EXPECT_EQ(m.weights.output.bytes, 2ull * s.n_vocab * s.n_embd + 2 * s.n_embd); // lm_head + final norm
    // The parameters counted from the tensors equal those counted from config.json's shapes.
    kvfit::warnings w2;
    const auto shapes = kvfit::model_from_hf_config(kvfit::test::llama_config(s), "config.json", w2);
    EXPECT_EQ(m.weights.total_params(), shapes.weights.total_params());
    for (uint32_t il = 0; il < s.n_layer; ++il) EXPECT_EQ(m.weights.layers[il].n_params, shapes.weights.layers[il].n_params);
}

// Llama-3.1-8B at full size, written sparse (16 GB of holes): two shards and an index, as on the Hub.
// The tensors give 8,030,261,248 parameters (the published count) and 2 bytes each.
TEST(safetensors, sharded_llama_3_1_8b_matches_the_published_count) {
    scratch_dir d("st_shards");
    const kvfit::test::llama_shape s{32, 4096, 32, 8, 14336, 128256};
    const auto entries = kvfit::test::llama_entries(s, st_linear::bf16);
    const size_t half = entries.size() / 2;
    const std::vector<st_entry> a(entries.begin(), entries.begin() + long(half)), b(entries.begin() + long(half), entries.end());
    kvfit::test::st_writer(a).write(d.file("model-00001-of-00002.safetensors"));
    kvfit::test::st_writer(b).write(d.file("model-00002-of-00002.safetensors"));
    write_text(d.file("model.safetensors.index.json"),
               kvfit::test::st_index({{"model-00001-of-00002.safetensors", a}, {"model-00002-of-00002.safetensors", b}}));
    write_text(d.file("config.json"), kvfit::test::shared_config("meta-llama__Meta-Llama-3.1-8B.json"));
    kvfit::warnings warn;
    const auto m = kvfit::load_model(d.path.string(), warn);
    EXPECT_EQ(m.weights.total_params(), 8030261248ull);
    EXPECT_EQ(m.weights.total_bytes(), 2 * 8030261248ull);
    EXPECT_EQ(m.weights.layers[31].bytes, 2 * (2ull * 4096 * 4096 + 2ull * 4096 * 1024 + 3ull * 4096 * 14336 + 2 * 4096));
}

TEST(safetensors, index_naming_a_tensor_its_shard_lacks_is_an_error) {
    scratch_dir d("st_badindex");
    const auto entries = kvfit::test::llama_entries({}, st_linear::bf16);
    kvfit::test::st_writer(entries).write(d.file("model-00001-of-00001.safetensors"));
    auto listed = entries;
    listed.push_back({"model.ghost.weight", st_dtype::f32, {1}});
    write_text(d.file("model.safetensors.index.json"), kvfit::test::st_index({{"model-00001-of-00001.safetensors", listed}}));
    write_text(d.file("config.json"), kvfit::test::llama_config({}));
    kvfit::warnings warn;
    try {
        kvfit::load_model(d.path.string(), warn);
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("tensor 'model.ghost.weight' is listed in model-00001-of-00001.safetensors "
                                             "but that file does not hold it"), std::string::npos) << e.what();
    }
}

// Quantized checkpoints store the quantized tensors: the bytes are the file's, the parameters the dequantized count.
struct quant_row {
    const char * name;
    st_linear linear;
    const char * quantization_config;
    const char * format;
    uint64_t bytes_per_linear_256x256; // one 256 x 256 linear, scales included
};

const quant_row k_quant[] = {
    // GPTQ 4-bit, group 128: qweight 32*256*4 + qzeros 2*32*4 + scales 2*256*2 + g_idx 256*4
    {"gptq", st_linear::gptq4, R"({"quant_method": "gptq", "bits": 4, "group_size": 128})", "gptq-int4",
     32768 + 256 + 1024 + 1024},
    // fp8 block-wise (DeepSeek-V3): 256*256 bytes + a 2 x 2 F32 weight_scale_inv
    {"fp8", st_linear::fp8_block, R"({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})", "fp8",
     65536 + 16},
};

TEST(safetensors, quantized_checkpoints_give_the_file_bytes_and_the_dequantized_params) {
    for (const auto & r : k_quant) {
        scratch_dir d(std::string("st_q_") + r.name);
        const kvfit::test::llama_shape s;
        const auto entries = kvfit::test::llama_entries(s, r.linear);
        kvfit::warnings warn;
        const auto m = load_dir(d, kvfit::test::llama_config(s, r.quantization_config), entries, warn);
        kvfit::warnings w2;
        const auto shapes = kvfit::model_from_hf_config(kvfit::test::llama_config(s), "config.json", w2);
        EXPECT_EQ(m.weights.format, r.format) << r.name;
        EXPECT_EQ(m.weights.total_bytes(), kvfit::test::st_bytes(entries)) << r.name;
        EXPECT_EQ(m.weights.total_params(), shapes.weights.total_params()) << r.name;
        // q and o are 256 x 256 in this shape: the rest of the layer is k, v (128 x 256), the MLP and two norms.
        std::vector<st_entry> q_proj;
        kvfit::test::add_linear(q_proj, "q", 256, 256, r.linear);
        EXPECT_EQ(kvfit::test::st_bytes(q_proj), r.bytes_per_linear_256x256) << r.name;
    }
}

TEST(safetensors, mxfp4_experts_as_in_gpt_oss) {
    scratch_dir d("st_mxfp4");
    const auto entries = kvfit::test::gpt_oss_entries();
    kvfit::warnings warn;
    const auto m = load_dir(d, kvfit::test::gpt_oss_config(), entries, warn);
    EXPECT_EQ(m.weights.format, "mxfp4");
    EXPECT_EQ(m.weights.total_bytes(), kvfit::test::st_bytes(entries));
    // Per layer, 4 experts: gate_up blocks 4*512*8*16 + scales 4*512*8 + bias 4*512*2, down blocks 4*256*8*16 +
    // scales 4*256*8 + bias 4*256*2.
    const uint64_t expert_bytes = 262144 + 16384 + 4096 + 131072 + 8192 + 2048;
    EXPECT_EQ(m.weights.layers[0].expert_bytes, expert_bytes);
    // Dequantized: 4 experts x (3 x 256 x 256 + biases 2*256 + 256): two 4-bit values per byte of *_blocks.
    EXPECT_EQ(m.weights.layers[0].expert_params, 4ull * (3 * 256 * 256 + 3 * 256));
    kvfit::warnings w2;
    auto plain = kvfit::test::gpt_oss_config();
    const auto shapes = kvfit::model_from_hf_config(plain, "config.json", w2);
    EXPECT_EQ(m.weights.total_params(), shapes.weights.total_params());
    EXPECT_EQ(m.weights.layers[1].expert_params, shapes.weights.layers[1].expert_params);
}

struct param_row {
    const char * what;
    st_entry tensor;
    kvfit::st_quant quant;
    uint64_t params;
};

const param_row k_params[] = {
    {"unquantized", {"a.weight", st_dtype::bf16, {4096, 4096}}, {}, 16777216},
    {"gptq qweight", {"a.qweight", st_dtype::i32, {512, 4096}}, {"gptq", 4, "gptq-int4"}, 16777216},
    {"gptq 8-bit qweight", {"a.qweight", st_dtype::i32, {1024, 4096}}, {"gptq", 8, "gptq-int8"}, 16777216},
    {"gptq scales", {"a.scales", st_dtype::f16, {32, 4096}}, {"gptq", 4, "gptq-int4"}, 0},
    {"gptq qzeros", {"a.qzeros", st_dtype::i32, {32, 512}}, {"gptq", 4, "gptq-int4"}, 0},
    {"gptq g_idx", {"a.g_idx", st_dtype::i32, {4096}}, {"gptq", 4, "gptq-int4"}, 0},
    {"awq qweight", {"a.qweight", st_dtype::i32, {4096, 512}}, {"awq", 4, "awq-int4"}, 16777216},
    {"fp8 weight", {"a.weight", st_dtype::f8_e4m3, {4096, 4096}}, {"fp8", 8, "fp8"}, 16777216},
    {"fp8 weight_scale_inv", {"a.weight_scale_inv", st_dtype::f32, {32, 32}}, {"fp8", 8, "fp8"}, 0},
    {"fp8 norm stays", {"a.norm.weight", st_dtype::bf16, {4096}}, {"fp8", 8, "fp8"}, 4096},
    {"compressed-tensors packed", {"a.weight_packed", st_dtype::i32, {4096, 512}}, {"compressed-tensors", 4, "compressed-tensors-w4"}, 16777216},
    {"compressed-tensors weight_shape", {"a.weight_shape", st_dtype::i64, {2}}, {"compressed-tensors", 4, "compressed-tensors-w4"}, 0},
    {"nvfp4 packed", {"a.weight_packed", st_dtype::u8, {4096, 2048}}, {"compressed-tensors", 4, "nvfp4"}, 16777216},
    {"nvfp4 global scale", {"a.weight_global_scale", st_dtype::f32, {1}}, {"compressed-tensors", 4, "nvfp4"}, 0},
    {"modelopt nvfp4 weight", {"a.weight", st_dtype::u8, {4096, 2048}}, {"modelopt", 4, "nvfp4"}, 16777216},
    {"modelopt weight_scale_2", {"a.weight_scale_2", st_dtype::f32, {}}, {"modelopt", 4, "nvfp4"}, 0},
    {"mxfp4 blocks", {"e.gate_up_proj_blocks", st_dtype::u8, {32, 5760, 90, 16}}, {"mxfp4", 4, "mxfp4"}, 32ull * 5760 * 2880},
    {"mxfp4 scales", {"e.gate_up_proj_scales", st_dtype::u8, {32, 5760, 90}}, {"mxfp4", 4, "mxfp4"}, 0},
    {"int8 weight", {"a.weight", st_dtype::i8, {4096, 4096}}, {"compressed-tensors", 8, "compressed-tensors-w8"}, 16777216},
};

TEST(safetensors, parameter_rule_per_scheme) {
    for (const auto & r : k_params) {
        kvfit::st_tensor t;
        t.name = r.tensor.name;
        t.dtype = r.tensor.dtype;
        t.shape = r.tensor.shape;
        t.n_elements = 1;
        for (uint64_t d : t.shape) t.n_elements *= d;
        EXPECT_EQ(kvfit::st_param_count(t, r.quant), r.params) << r.what;
    }
}

struct scheme_row {
    const char * config;
    const char * method;
    uint32_t bits;
    const char * format;
};

const scheme_row k_schemes[] = {
    {R"({"quant_method": "gptq", "bits": 4, "group_size": 128})", "gptq", 4, "gptq-int4"},
    {R"({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"})", "awq", 4, "awq-int4"},
    {R"({"quant_method": "fp8", "weight_block_size": [128, 128]})", "fp8", 8, "fp8"},
    {R"({"quant_method": "mxfp4"})", "mxfp4", 4, "mxfp4"},
    {R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16})", "modelopt", 4, "nvfp4"},
    {R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0":
        {"weights": {"num_bits": 4, "type": "int", "group_size": 128}, "targets": ["Linear"]}}})",
     "compressed-tensors", 4, "compressed-tensors-w4"},
    {R"({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"group_0":
        {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}}})", "compressed-tensors", 4, "nvfp4"},
    {R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4"})", "bitsandbytes", 4, "bnb-nf4"},
};

TEST(safetensors, quantization_config_schemes) {
    for (const auto & r : k_schemes) {
        kvfit::warnings warn;
        const auto q = kvfit::st_quant_from_config(kvfit::test::llama_config({}, r.config), "config.json", warn);
        EXPECT_EQ(q.method, r.method) << r.config;
        EXPECT_EQ(q.bits, r.bits) << r.config;
        EXPECT_EQ(q.format, r.format) << r.config;
        EXPECT_TRUE(warn.empty()) << r.config;
    }
    kvfit::warnings warn;
    const auto q = kvfit::st_quant_from_config(kvfit::test::llama_config({}, R"({"quant_method": "hqq"})"), "config.json", warn);
    EXPECT_EQ(q.bits, 0u);
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_NE(warn[0].find("unknown quant_method 'hqq'"), std::string::npos);
}

// Vision towers are counted in `other` and reported apart; MTP blocks are reported apart and not counted.
TEST(safetensors, vision_tower_and_mtp_are_reported_apart) {
    scratch_dir d("st_apart");
    const kvfit::test::llama_shape s;
    auto entries = kvfit::test::llama_entries(s, st_linear::bf16);
    for (auto & e : entries) { // a multimodal wrapper's names, as Qwen3.5 and Gemma 3 checkpoints spell them
        if (e.name.starts_with("model.")) e.name = "model.language_model." + e.name.substr(6);
    }
    entries.push_back({"model.visual.blocks.0.attn.qkv.weight", st_dtype::bf16, {768, 256}});
    entries.push_back({"model.visual.merger.mlp.0.weight", st_dtype::bf16, {256, 256}});
    entries.push_back({"mtp.layers.0.mlp.up_proj.weight", st_dtype::bf16, {512, 256}});
    entries.push_back({"model.language_model.layers.2.self_attn.q_proj.weight", st_dtype::bf16, {256, 256}}); // il >= n_layer
    kvfit::warnings warn;
    const auto m = load_dir(d, kvfit::test::llama_config(s), entries, warn);
    EXPECT_EQ(m.weights.vision.n_params, 768ull * 256 + 256 * 256);
    EXPECT_EQ(m.weights.mtp.n_params, 512ull * 256 + 256 * 256);
    EXPECT_EQ(m.weights.other.bytes, m.weights.vision.bytes);
    EXPECT_EQ(m.weights.total_bytes() + m.weights.mtp.bytes, kvfit::test::st_bytes(entries)); // MTP: not loaded
    EXPECT_EQ(m.weights.token_embd.n_params, uint64_t(s.n_vocab) * s.n_embd);
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_NE(warn[0].find("reported apart from the text model: 2 vision/audio tensors (262144 params, 524288 bytes, "
                           "counted in 'other'), 2 MTP tensors (196608 params, 393216 bytes, not counted)"), std::string::npos) << warn[0];
}

TEST(safetensors, cli_plan_of_a_model_directory_has_exact_weights) {
    scratch_dir d("st_cli");
    const auto entries = kvfit::test::llama_entries({}, st_linear::bf16);
    write_text(d.file("config.json"), kvfit::test::llama_config({}));
    kvfit::test::st_writer(entries).write(d.file("model.safetensors"));
    const auto r = kvfit::test::run_kvfit(d.path.string() + " --json -c 4096");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["model"]["weights_exact"], true);
    EXPECT_EQ(j["model"]["weights_format"], "bf16");
}

} // namespace
