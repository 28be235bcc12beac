// Cases from public reports (../shared/cases/README.md), each with its right answer, through the GGUF source:
// the inputs are GGUF hyperparameters, written with kvfit's GGUF writer as header-only files.
#include "kvfit/error.h"
#include "kvfit/gguf_writer.h"
#include "kvfit/llamacpp.h"
#include "kvfit/units.h"
#include "kvfit/sources.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

namespace {

using kvfit::gguf_wvalue;
constexpr uint64_t MiB = 1ull << 20;

std::string temp_path(const std::string & name) {
    const auto dir = std::filesystem::temp_directory_path() / ("kvfit-cases-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

kvfit::model_desc load(kvfit::gguf_writer & w, const std::string & name) {
    w.add_spm_vocab(512);
    const std::string path = temp_path(name);
    w.write(path, kvfit::gguf_data::header_only);
    kvfit::warnings warn;
    return kvfit::model_from_gguf(path, warn);
}

uint64_t kv_total(const kvfit::model_desc & m, const kvfit::llamacpp_settings & s) {
    const auto c = kvfit::llamacpp_context_size(m, s);
    uint64_t bytes = 0;
    for (const auto & kv : kvfit::llamacpp_kv_caches(m, s, c)) bytes += kv.bytes();
    return bytes;
}

// K1: hybrid Gated DeltaNet model at 262,144 tokens, 4 sequences sharing one cache (--kv-unified).
// A planner that charges KV to all 64 layers predicts 65536 MiB: the bug reported.
TEST(cases, k1_hybrid_gdn_unified_four_sequences) {
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string("qwen35"));
    w.add("qwen35.block_count", gguf_wvalue::u32(64));
    w.add("qwen35.context_length", gguf_wvalue::u32(262144));
    w.add("qwen35.embedding_length", gguf_wvalue::u32(5120));
    w.add("qwen35.feed_forward_length", gguf_wvalue::u32(17408));
    w.add("qwen35.attention.head_count", gguf_wvalue::u32(24));
    w.add("qwen35.attention.head_count_kv", gguf_wvalue::u32(4));
    w.add("qwen35.attention.key_length", gguf_wvalue::u32(256));
    w.add("qwen35.attention.value_length", gguf_wvalue::u32(256));
    w.add("qwen35.full_attention_interval", gguf_wvalue::u32(4));
    w.add("qwen35.ssm.conv_kernel", gguf_wvalue::u32(4));
    w.add("qwen35.ssm.inner_size", gguf_wvalue::u32(6144));
    w.add("qwen35.ssm.group_count", gguf_wvalue::u32(16));
    w.add("qwen35.ssm.state_size", gguf_wvalue::u32(128));
    w.add("qwen35.ssm.time_step_rank", gguf_wvalue::u32(48));
    const auto m = load(w, "k1.gguf");
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 16u);
    EXPECT_EQ(m.count(kvfit::layer_kind::recurrent), 48u);
    kvfit::llamacpp_settings s;
    s.n_ctx = 262144;
    s.n_seq = 4;
    s.kv_unified = true;
    const auto c = kvfit::llamacpp_context_size(m, s);
    const auto kv = kvfit::llamacpp_kv_caches(m, s, c);
    ASSERT_EQ(kv.size(), 1u);
    EXPECT_EQ(kv[0].cells_per_stream, 262144u);
    EXPECT_EQ(kv[0].n_layer, 16u);
    EXPECT_EQ(kv[0].bytes(), 16384 * MiB);
    const auto rs = kvfit::llamacpp_recurrent(m, c);
    EXPECT_EQ(rs.bytes() * 1000 / MiB, 598500u);           // 598.50 MiB
    EXPECT_EQ(rs.bytes() / 4 * 1000 / MiB, 149625u);        // 4 x 149.625 MiB
    EXPECT_NE(kv[0].bytes(), 65536 * MiB);
}

// K3: per-layer head_count_kv with zeros; reading element [0] as "the" head count predicts 0 bytes.
TEST(cases, k3_per_layer_head_count_kv_with_zeros) {
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string("lfm2"));
    w.add("lfm2.block_count", gguf_wvalue::u32(16));
    w.add("lfm2.context_length", gguf_wvalue::u32(128000));
    w.add("lfm2.embedding_length", gguf_wvalue::u32(2048));
    w.add("lfm2.feed_forward_length", gguf_wvalue::u32(8192));
    w.add("lfm2.attention.head_count", gguf_wvalue::u32(32));
    w.add("lfm2.attention.head_count_kv",
          gguf_wvalue::array_u32({0, 0, 8, 0, 0, 8, 0, 0, 8, 0, 8, 0, 8, 0, 8, 0}));
    w.add("lfm2.shortconv.l_cache", gguf_wvalue::u32(3));
    const auto m = load(w, "k3.gguf");
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 6u);
    EXPECT_EQ(m.count(kvfit::layer_kind::recurrent), 10u);
    EXPECT_EQ(kvfit::kv_bytes_per_token(m, kvfit::ggml_type::f16, kvfit::ggml_type::f16), 12288u);
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    EXPECT_EQ(kv_total(m, s), 384 * MiB);
    const auto rs = kvfit::llamacpp_recurrent(m, kvfit::llamacpp_context_size(m, s));
    EXPECT_EQ(rs.bytes(), 163840u);
}

// K4: a quantized V cache needs flash attention; quantized K alone does not.
TEST(cases, k4_quantized_v_needs_flash_attention) {
    kvfit::model_desc m;
    m.name = "k4";
    m.n_layer = 2;
    m.n_embd = 256;
    m.n_vocab = 512;
    m.n_ctx_train = 4096;
    kvfit::resize_layers(m);
    for (uint32_t il = 0; il < 2; ++il) {
        m.n_head[il] = m.n_head_kv[il] = 4;
        m.head_dim_k[il] = m.head_dim_v[il] = 64;
        m.caches[il] = {kvfit::layer_cache::attention(kvfit::cache_kind::full, 4, 64, 64)};
    }
    kvfit::llamacpp_settings s;
    s.flash_attn = kvfit::flash_attn_mode::off;
    s.type_k = kvfit::ggml_type::q8_0;
    s.type_v = kvfit::ggml_type::q8_0;
    try {
        kvfit::llamacpp_context_size(m, s);
        ADD_FAILURE() << "expected an error";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "llama.cpp: type_v q8_0 needs flash attention (quantized V cache requires -fa on)");
    }
    s.type_v = kvfit::ggml_type::f16;
    EXPECT_NO_THROW(kvfit::llamacpp_context_size(m, s));
}

// K5: -ngl 1 on a 28-block model offloads only the output layer: "offloaded 1/29 layers".
TEST(cases, k5_ngl_one_offloads_only_the_output_layer) {
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string("qwen2"));
    w.add("qwen2.block_count", gguf_wvalue::u32(28));
    w.add("qwen2.context_length", gguf_wvalue::u32(32768));
    w.add("qwen2.embedding_length", gguf_wvalue::u32(3584));
    w.add("qwen2.feed_forward_length", gguf_wvalue::u32(18944));
    w.add("qwen2.attention.head_count", gguf_wvalue::u32(28));
    w.add("qwen2.attention.head_count_kv", gguf_wvalue::u32(4));
    w.add_tensor("output.weight", kvfit::ggml_type::q8_0, {3584, 512});
    for (int il = 0; il < 28; ++il) {
        w.add_tensor("blk." + std::to_string(il) + ".attn_q.weight", kvfit::ggml_type::q8_0, {3584, 3584});
    }
    const auto m = load(w, "k5.gguf");
    kvfit::llamacpp_settings s;
    s.n_ctx = 4096;
    kvfit::placement_settings p;
    p.n_gpu_layers = 1;
    const auto plan = kvfit::plan_llamacpp(m, s, p, {{"GPU0", 24ull << 30}});
    EXPECT_EQ(plan.n_gpu_layers, 1u);
    EXPECT_EQ(plan.devices[0].n_layers, 0u);
    EXPECT_TRUE(plan.devices[0].has_output);
    EXPECT_EQ(plan.devices[0].used.weights_bytes, m.weights.output.bytes);
    EXPECT_EQ(plan.devices[0].used.kv_bytes, 0u);
    p.n_gpu_layers = 2; // the output layer and block 27
    EXPECT_EQ(kvfit::plan_llamacpp(m, s, p, {{"GPU0", 24ull << 30}}).devices[0].n_layers, 1u);
}

} // namespace
