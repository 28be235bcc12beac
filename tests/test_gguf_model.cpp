// GGUF metadata -> model_desc for each architecture row: layer kinds as a string, one letter per layer
// (F full, S swa, C chunked, M mla, R recurrent, N none), plus the shape facts each pattern depends on.
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/llamacpp.h"
#include "support/gguf_fixture.h"

#include <functional>
#include <gtest/gtest.h>

namespace {

using kvfit::gguf_wvalue;
using kvfit::layer_kind;

std::string kinds(const kvfit::model_desc & m) {
    std::string s;
    for (uint32_t il = 0; il < m.n_layer; ++il) s += "FSCMRN"[int(m.kind_of(il))];
    return s;
}

struct arch_case {
    std::string arch;
    uint32_t n_block;
    std::function<void(kvfit::gguf_writer &, const std::string &)> keys;
    std::string expected_kinds;
};

void attn(kvfit::gguf_writer & w, const std::string & a, uint32_t heads, uint32_t kv) {
    w.add(a + ".attention.head_count", gguf_wvalue::u32(heads));
    w.add(a + ".attention.head_count_kv", gguf_wvalue::u32(kv));
}

void ssm(kvfit::gguf_writer & w, const std::string & a, uint32_t groups) {
    w.add(a + ".ssm.conv_kernel", gguf_wvalue::u32(4));
    w.add(a + ".ssm.inner_size", gguf_wvalue::u32(512));
    w.add(a + ".ssm.state_size", gguf_wvalue::u32(64));
    w.add(a + ".ssm.group_count", gguf_wvalue::u32(groups));
    w.add(a + ".ssm.time_step_rank", gguf_wvalue::u32(8));
}

kvfit::model_desc load(const arch_case & c, kvfit::warnings & warn) {
    kvfit::gguf_writer w = kvfit::test::model_writer(c.arch, c.n_block);
    c.keys(w, c.arch);
    const std::string bytes = w.header();
    return kvfit::model_from_gguf(std::vector{kvfit::gguf_file::parse(bytes, c.arch + ".gguf")}, warn);
}

const std::vector<arch_case> k_cases = {
    {"llama", 4, [](auto & w, auto & a) { attn(w, a, 8, 2); }, "FFFF"},
    {"qwen3moe", 2, [](auto & w, auto & a) { attn(w, a, 8, 4); }, "FF"},
    // qwen35 / qwen3next: (il + 1) % full_attention_interval == 0 is attention (case K1 shape)
    {"qwen35", 8, [](auto & w, auto & a) { attn(w, a, 16, 4); ssm(w, a, 16); w.add(a + ".full_attention_interval", gguf_wvalue::u32(4)); }, "RRRFRRRF"},
    {"qwen3next", 4, [](auto & w, auto & a) { attn(w, a, 16, 2); ssm(w, a, 16); }, "RRRF"},
    // gemma2: set_swa_pattern(2), window 4096 unless the key says otherwise
    {"gemma2", 4, [](auto & w, auto & a) { attn(w, a, 8, 4); }, "SFSF"},
    // gemma3: set_swa_pattern(6) with the window key; no window: every layer full
    {"gemma3", 12, [](auto & w, auto & a) { attn(w, a, 8, 4); w.add(a + ".attention.sliding_window", gguf_wvalue::u32(1024)); }, "SSSSSFSSSSSF"},
    {"gemma3", 3, [](auto & w, auto & a) { attn(w, a, 8, 4); }, "FFF"},
    // gemma3n: set_swa_pattern(5), layers >= 20 share KV
    {"gemma3n", 22, [](auto & w, auto & a) { attn(w, a, 8, 2); w.add(a + ".attention.sliding_window", gguf_wvalue::u32(512)); }, "SSSSFSSSSFSSSSFSSSSFNN"},
    {"gpt-oss", 4, [](auto & w, auto & a) { attn(w, a, 64, 8); w.add(a + ".attention.sliding_window", gguf_wvalue::u32(128)); }, "SFSF"},
    {"cohere2", 8, [](auto & w, auto & a) { attn(w, a, 8, 8); w.add(a + ".attention.sliding_window", gguf_wvalue::u32(4096)); }, "SSSFSSSF"},
    // the GGUF pattern array overrides the row's period
    {"cohere2", 4, [](auto & w, auto & a) {
         attn(w, a, 8, 8);
         w.add(a + ".attention.sliding_window", gguf_wvalue::u32(4096));
         w.add(a + ".attention.sliding_window_pattern", gguf_wvalue::array(kvfit::gguf_type::boolean,
               {gguf_wvalue::boolean(true), gguf_wvalue::boolean(false), gguf_wvalue::boolean(false), gguf_wvalue::boolean(true)}));
     }, "SFFS"},
    {"llama4", 8, [](auto & w, auto & a) { attn(w, a, 40, 8); }, "CCCFCCCF"},
    {"phi3", 2, [](auto & w, auto & a) { attn(w, a, 8, 8); w.add(a + ".attention.sliding_window", gguf_wvalue::u32(2048)); }, "FF"},
    {"mamba2", 3, [](auto & w, auto & a) { ssm(w, a, 1); }, "RRR"},
    {"rwkv7", 2, [](auto & w, auto & a) { w.add(a + ".wkv.head_size", gguf_wvalue::u32(64)); }, "RR"},
    // nemotron_h: KV heads -> attention; no KV and no FFN -> mamba2; FFN only -> none
    {"nemotron_h", 4, [](auto & w, auto & a) {
         w.add(a + ".attention.head_count", gguf_wvalue::u32(8));
         w.add(a + ".attention.head_count_kv", gguf_wvalue::array_u32({0, 0, 2, 0}));
         w.add(a + ".feed_forward_length", gguf_wvalue::array_u32({0, 1024, 0, 1024}));
         ssm(w, a, 8);
     }, "RNFN"},
    {"granitehybrid", 3, [](auto & w, auto & a) { w.add(a + ".attention.head_count", gguf_wvalue::u32(8)); w.add(a + ".attention.head_count_kv", gguf_wvalue::array_u32({0, 4, 0})); ssm(w, a, 1); }, "RFR"},
    {"jamba", 2, [](auto & w, auto & a) { w.add(a + ".attention.head_count", gguf_wvalue::u32(8)); w.add(a + ".attention.head_count_kv", gguf_wvalue::array_u32({0, 4})); ssm(w, a, 0); }, "RF"},
    {"falcon-h1", 2, [](auto & w, auto & a) { attn(w, a, 8, 2); ssm(w, a, 1); }, "FF"},
    // glm4moe: the NextN block is not counted
    {"glm4moe", 3, [](auto & w, auto & a) { attn(w, a, 8, 2); w.add(a + ".nextn_predict_layers", gguf_wvalue::u32(1)); }, "FF"},
    {"mistral3", 2, [](auto & w, auto & a) { attn(w, a, 8, 2); }, "FF"},
    {"qwen2", 2, [](auto & w, auto & a) { attn(w, a, 8, 2); }, "FF"},
    {"qwen3", 2, [](auto & w, auto & a) { attn(w, a, 8, 2); }, "FF"},
    {"qwen35moe", 4, [](auto & w, auto & a) { attn(w, a, 16, 2); ssm(w, a, 16); }, "RRRF"},
};

TEST(gguf_model, layer_kinds_per_architecture) {
    for (const auto & c : k_cases) {
        kvfit::warnings warn;
        const auto m = load(c, warn);
        EXPECT_EQ(kinds(m), c.expected_kinds) << c.arch;
        EXPECT_EQ(m.architecture, c.arch);
        if (c.arch != "falcon-h1") {
            EXPECT_TRUE(warn.empty()) << c.arch << ": " << (warn.empty() ? "" : warn[0]);
        }
    }
}

TEST(gguf_model, case_k3_lfm2_per_layer_kv_heads_with_zeros) {
    // ../shared/cases/README.md K3: only 6 layers hold KV: 12,288 B per token, 384 MiB at 32768 (f16);
    // 10 short-conv layers x 2048 x (3 - 1) f32 = 163,840 B of state per sequence.
    kvfit::gguf_writer w = kvfit::test::model_writer("lfm2", 16, 2048);
    w.add("lfm2.attention.head_count", gguf_wvalue::u32(32));
    w.add("lfm2.attention.head_count_kv", gguf_wvalue::array_u32({0, 0, 8, 0, 0, 8, 0, 0, 8, 0, 8, 0, 8, 0, 8, 0}));
    w.add("lfm2.shortconv.l_cache", gguf_wvalue::u32(3));
    const std::string bytes = w.header();
    kvfit::warnings warn;
    const auto m = kvfit::model_from_gguf(std::vector{kvfit::gguf_file::parse(bytes, "k3.gguf")}, warn);
    EXPECT_EQ(kinds(m), "RRFRRFRRFRFRFRFR");
    EXPECT_EQ(m.n_head_kv[2], 8u);
    EXPECT_EQ(m.n_head_kv[0], 0u);
    EXPECT_EQ(m.head_dim_k[2], 64u);
    EXPECT_EQ(kvfit::kv_bytes_per_token(m, kvfit::ggml_type::f16, kvfit::ggml_type::f16), 12288u);
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    const auto c = kvfit::llamacpp_context_size(m, s);
    EXPECT_EQ(kvfit::llamacpp_kv_caches(m, s, c).at(0).bytes(), 384u << 20);
    EXPECT_EQ(kvfit::llamacpp_recurrent(m, c).bytes(), 163840u);
}

TEST(gguf_model, deepseek2_mla_is_one_latent_head) {
    kvfit::warnings warn;
    const auto m = load({"deepseek2", 2, [](auto & w, auto & a) {
        attn(w, a, 16, 16);
        w.add(a + ".attention.key_length", gguf_wvalue::u32(576));
        w.add(a + ".attention.value_length", gguf_wvalue::u32(512));
        w.add(a + ".attention.key_length_mla", gguf_wvalue::u32(192));
        w.add(a + ".attention.value_length_mla", gguf_wvalue::u32(128));
        w.add(a + ".attention.kv_lora_rank", gguf_wvalue::u32(512));
        w.add(a + ".rope.dimension_count", gguf_wvalue::u32(64));
    }, ""}, warn);
    EXPECT_EQ(kinds(m), "MM");
    EXPECT_EQ(m.n_head_kv[0], 1u);
    EXPECT_EQ(m.head_dim_k[0], 576u);
    EXPECT_EQ(m.head_dim_v[0], 512u);
    EXPECT_EQ(m.head_dim_qk_nope, 128u);
    EXPECT_EQ(m.head_dim_v_mla, 128u);
}

TEST(gguf_model, weights_by_placement_with_experts_nextn_and_tied_output) {
    kvfit::gguf_writer w = kvfit::test::model_writer("qwen3moe", 3);
    attn(w, "qwen3moe", 8, 2);
    w.add("qwen3moe.nextn_predict_layers", gguf_wvalue::u32(1));
    w.add_tensor("token_embd_norm.weight", kvfit::ggml_type::f32, {256});
    w.add_tensor("blk.0.attn_q.weight", kvfit::ggml_type::q4_k, {256, 256});
    w.add_tensor("blk.1.ffn_gate_exps.weight", kvfit::ggml_type::q4_k, {256, 64, 8});
    w.add_tensor("blk.1.ffn_gate_inp.weight", kvfit::ggml_type::f32, {256, 8});
    w.add_tensor("blk.2.nextn.eh_proj.weight", kvfit::ggml_type::f16, {512, 256});
    w.add_tensor("rope_freqs.weight", kvfit::ggml_type::f32, {64});
    w.add_tensor("output_norm.weight", kvfit::ggml_type::f32, {256});
    const std::string bytes = w.header();
    kvfit::warnings warn;
    const auto m = kvfit::model_from_gguf(std::vector{kvfit::gguf_file::parse(bytes, "moe.gguf")}, warn);
    EXPECT_EQ(m.n_layer, 2u);
    EXPECT_EQ(m.n_layer_mtp, 1u);
    EXPECT_TRUE(m.tied_embeddings);
    // token_embd_norm is LFM2's output norm (LLM_TENSOR_OUTPUT_NORM_LFM2): an output-layer tensor, with output_norm
    EXPECT_EQ(m.weights.token_embd.n_params, 256u * 512);
    EXPECT_EQ(m.weights.output.bytes, 2048u);
    // rope_freqs is created for block 0 (LLM_TENSOR_LAYER_REPEATING without a block number): in its group
    EXPECT_EQ(m.weights.layers[0].bytes, 144u * 256 + 256);
    EXPECT_EQ(m.weights.layers[1].expert_params, 256u * 64 * 8);
    EXPECT_EQ(m.weights.layers[1].expert_bytes, 144u * 64 * 8);
    EXPECT_EQ(m.weights.layers[1].n_params, 256u * 64 * 8 + 256 * 8);
    EXPECT_EQ(m.is_moe, (std::vector<uint8_t>{0, 1}));
    EXPECT_EQ(m.weights.other.n_params, 0u);
    EXPECT_EQ(m.weights.mtp.n_params, 512u * 256);     // blk.2 (NextN), reported apart
    EXPECT_EQ(m.weights.total_params(), m.n_params());
}

TEST(gguf_model, unknown_architecture_reads_generic_keys_with_a_warning) {
    kvfit::warnings warn;
    const auto m = load({"futurenet", 2, [](auto & w, auto & a) { attn(w, a, 4, 4); }, ""}, warn);
    EXPECT_EQ(kinds(m), "FF");
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_NE(warn[0].find("unknown architecture 'futurenet'"), std::string::npos);
}

// An unknown architecture whose keys name state or window layers (a renamed qwen35 GGUF: ssm.* keys, 24 of 32 layers
// recurrent) was planned as 32 dense attention layers, 4x the KV: refused by name instead.
TEST(gguf_model, unknown_architecture_with_non_attention_keys_is_refused) {
    kvfit::warnings warn;
    const auto message = [&](const arch_case & c) {
        try { load(c, warn); } catch (const kvfit::error & e) { return std::string(e.what()); }
        return std::string("no error");
    };
    EXPECT_NE(message({"zzzzzz", 4, [](auto & w, auto & a) { attn(w, a, 4, 4); ssm(w, a, 1); }, ""})
                  .find("unknown architecture 'zzzzzz' with key 'zzzzzz.ssm.conv_kernel': its layers are not all attention"),
              std::string::npos);
    EXPECT_NE(message({"zzzzzz", 4, [](auto & w, auto & a) {
                           attn(w, a, 4, 4);
                           w.add(a + ".attention.sliding_window", gguf_wvalue::u32(512));
                       }, ""}).find("with key 'zzzzzz.attention.sliding_window'"),
              std::string::npos);
}

TEST(gguf_model, bad_keys_name_file_key_and_offset) {
    kvfit::warnings warn;
    auto message = [&](const arch_case & c) {
        try { load(c, warn); } catch (const kvfit::error & e) { return std::string(e.what()); }
        return std::string("no error");
    };
    EXPECT_NE(message({"llama", 2, [](auto & w, auto & a) { w.add(a + ".attention.head_count", gguf_wvalue::string("x")); }, ""})
                  .find("key 'llama.attention.head_count': expected an unsigned integer, got str"), std::string::npos);
    EXPECT_NE(message({"llama", 3, [](auto & w, auto & a) { w.add(a + ".attention.head_count", gguf_wvalue::array_u32({1, 2})); }, ""})
                  .find("array length 2 differs from block_count 3"), std::string::npos);
    EXPECT_NE(message({"qwen35", 2, [](auto & w, auto & a) { attn(w, a, 4, 4); w.add(a + ".nextn_predict_layers", gguf_wvalue::u32(2)); }, ""})
                  .find("nextn_predict_layers"), std::string::npos);
}

// --- llama.cpp v0.5.0 families (as read from src/models/<arch>.cpp; the conformance suite measures them) ---------

using cache = kvfit::layer_cache;
using kvfit::cache_kind;

void mla_keys(kvfit::gguf_writer & w, const std::string & a) {
    attn(w, a, 16, 1);
    w.add(a + ".attention.key_length", gguf_wvalue::u32(576));
    w.add(a + ".attention.value_length", gguf_wvalue::u32(512));
    w.add(a + ".attention.key_length_mla", gguf_wvalue::u32(192));
    w.add(a + ".attention.value_length_mla", gguf_wvalue::u32(128));
    w.add(a + ".attention.kv_lora_rank", gguf_wvalue::u32(512));
    w.add(a + ".rope.dimension_count", gguf_wvalue::u32(64));
    w.add(a + ".attention.indexer.head_count", gguf_wvalue::u32(64));
    w.add(a + ".attention.indexer.key_length", gguf_wvalue::u32(128));
}

// deepseek32 (models/deepseek32.cpp, llama-kv-cache-dsa.cpp): the MLA latent and 128 indexer values per layer.
TEST(gguf_model, deepseek32_latent_and_indexer) {
    kvfit::warnings warn;
    const auto m = load({"deepseek32", 2, mla_keys, ""}, warn);
    EXPECT_EQ(kinds(m), "MM");
    EXPECT_EQ(m.caches[1], (std::vector<cache>{cache::latent(576), cache::indexer(128)}));
    EXPECT_EQ(kvfit::kv_bytes_per_token(m, kvfit::ggml_type::f16, kvfit::ggml_type::f16), 2u * (576 + 128) * 2);
}

// glm-dsa: the indexer only on the layers attention.indexer.types marks full (PR #26474).
TEST(gguf_model, glm_dsa_indexer_types) {
    kvfit::warnings warn;
    const auto m = load({"glm-dsa", 3, [](auto & w, auto & a) {
        mla_keys(w, a);
        w.add(a + ".attention.indexer.types", gguf_wvalue::array(kvfit::gguf_type::boolean,
              {gguf_wvalue::boolean(true), gguf_wvalue::boolean(false), gguf_wvalue::boolean(true)}));
    }, ""}, warn);
    EXPECT_EQ(m.caches[0], (std::vector<cache>{cache::latent(576), cache::indexer(128)}));
    EXPECT_EQ(m.caches[1], (std::vector<cache>{cache::latent(576)}));
    EXPECT_TRUE(warn.empty());
}

// deepseek4 (models/deepseek4.cpp): set_swa_pattern(0), one K-only head of key_length, compressors by ratio.
TEST(gguf_model, deepseek4_window_and_compressed_caches) {
    kvfit::warnings warn;
    const auto m = load({"deepseek4", 3, [](auto & w, auto & a) {
        attn(w, a, 64, 1);
        w.add(a + ".attention.key_length", gguf_wvalue::u32(512));
        w.add(a + ".attention.value_length", gguf_wvalue::u32(512));
        w.add(a + ".attention.sliding_window", gguf_wvalue::u32(128));
        w.add(a + ".attention.indexer.key_length", gguf_wvalue::u32(128));
        w.add(a + ".attention.compress_ratios", gguf_wvalue::array_u32({0, 4, 128}));
    }, ""}, warn);
    EXPECT_EQ(kinds(m), "SSS");
    const cache window = cache::attention(cache_kind::window, 1, 512, 0, 128);
    EXPECT_EQ(m.caches[0], (std::vector<cache>{window}));
    EXPECT_EQ(m.caches[1], (std::vector<cache>{window, cache::compressed(512, 4), cache::indexer(128, 4)}));
    EXPECT_EQ(m.caches[2], (std::vector<cache>{window, cache::compressed(512, 128)}));
}

// gemma4 (models/gemma4.cpp): window layers from the pattern array with key_length_swa, per-layer KV heads, the
// last shared_kv_layers layers without a cache.
TEST(gguf_model, gemma4_heads_per_layer_type_and_shared_kv) {
    kvfit::warnings warn;
    const auto m = load({"gemma4", 4, [](auto & w, auto & a) {
        w.add(a + ".attention.head_count", gguf_wvalue::u32(16));
        w.add(a + ".attention.head_count_kv", gguf_wvalue::array_u32({8, 2, 8, 8}));
        w.add(a + ".attention.key_length", gguf_wvalue::u32(512));
        w.add(a + ".attention.value_length", gguf_wvalue::u32(512));
        w.add(a + ".attention.key_length_swa", gguf_wvalue::u32(256));
        w.add(a + ".attention.value_length_swa", gguf_wvalue::u32(256));
        w.add(a + ".attention.sliding_window", gguf_wvalue::u32(1024));
        w.add(a + ".attention.shared_kv_layers", gguf_wvalue::u32(1));
        w.add(a + ".attention.sliding_window_pattern", gguf_wvalue::array(kvfit::gguf_type::boolean,
              {gguf_wvalue::boolean(true), gguf_wvalue::boolean(false), gguf_wvalue::boolean(true), gguf_wvalue::boolean(true)}));
    }, ""}, warn);
    EXPECT_EQ(kinds(m), "SFSN");
    EXPECT_EQ(m.caches[0], (std::vector<cache>{cache::attention(cache_kind::window, 8, 256, 256, 1024)}));
    EXPECT_EQ(m.caches[1], (std::vector<cache>{cache::attention(cache_kind::full, 2, 512, 512)}));
    EXPECT_TRUE(m.caches[3].empty());
    EXPECT_EQ(m.n_head[3], 16u); // a shape without a cache
}

// An attention architecture with 0 heads on every layer is refused (it was planned as layers without cache).
TEST(gguf_model, zero_heads_are_refused) {
    kvfit::warnings warn;
    try {
        load({"llama", 2, [](auto & w, auto & a) { attn(w, a, 0, 0); }, ""}, warn);
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("key 'llama.attention.head_count': 0 on every layer: no attention layer in "
                                             "an attention architecture"), std::string::npos) << e.what();
    }
    try {
        load({"llama", 2, [](auto &, auto &) {}, ""}, warn);
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("missing required key 'llama.attention.head_count'"), std::string::npos) << e.what();
    }
}

} // namespace
