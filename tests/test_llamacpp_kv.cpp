// KV-cache rules of the llama.cpp policy on hand-built model descriptions (K2 of ../shared/cases).
#include "kvfit/llamacpp.h"

#include <gtest/gtest.h>

namespace {

// gemma3-shaped toy of case K2: 18 layers, every 6th global, 1 KV head x 256, window 512.
kvfit::model_desc k2_gemma3() {
    kvfit::model_desc m;
    m.name = "k2-gemma3";
    m.n_layer = 18;
    m.n_embd = 1152;
    m.n_vocab = 512;
    m.n_swa = 512;
    kvfit::resize_layers(m);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        m.n_head[il] = 4;
        m.n_head_kv[il] = 1;
        m.head_dim_k[il] = m.head_dim_v[il] = 256;
        const bool full = (il + 1) % 6 == 0;
        m.caches[il] = {kvfit::layer_cache::attention(full ? kvfit::cache_kind::full : kvfit::cache_kind::window, 1, 256,
                                                      256, full ? 0 : m.n_swa)};
    }
    return m;
}

uint64_t total_kv_mib(const kvfit::model_desc & m, uint64_t n_ctx, uint32_t n_seq) {
    kvfit::llamacpp_settings s;
    s.n_ctx = n_ctx;
    s.n_seq = n_seq;
    const auto c = kvfit::llamacpp_context_size(m, s);
    uint64_t total = 0;
    for (const auto & kv : kvfit::llamacpp_kv_caches(m, s, c)) total += kv.bytes();
    return total / (1024 * 1024);
}

TEST(llamacpp_kv, case_k2_sliding_window_per_stream_padding) {
    const auto m = k2_gemma3();
    EXPECT_EQ(total_kv_mib(m, 4096, 1), 27u);
    EXPECT_EQ(total_kv_mib(m, 4096, 2), 42u);
    EXPECT_EQ(total_kv_mib(m, 4096, 4), 72u);
    EXPECT_EQ(total_kv_mib(m, 4096, 8), 72u);
    EXPECT_EQ(total_kv_mib(m, 8192, 1), 39u);
    EXPECT_EQ(total_kv_mib(m, 8192, 2), 54u);
    EXPECT_EQ(total_kv_mib(m, 1024, 3), 27u);
    EXPECT_EQ(total_kv_mib(m, 1024, 4), 18u);
}

} // namespace

// llama.cpp flag values shared by the CLI, exec and the HTTP API (include/kvfit/llamacpp.h).
#include "kvfit/error.h"
#include "kvfit/llamacpp.h"

namespace {

TEST(llamacpp_flags, values_parse_as_llama_cpp_spells_them) {
    EXPECT_EQ(kvfit::parse_flag_count("-c", "8192", 1, 1ull << 32), 8192u);
    EXPECT_EQ(kvfit::parse_cache_type_flag("-ctk", "q8_0"), kvfit::ggml_type::q8_0);
    EXPECT_EQ(kvfit::parse_tensor_split("3,1"), (std::vector<double>{3, 1}));
    EXPECT_EQ(kvfit::parse_tensor_split("1/1/2"), (std::vector<double>{1, 1, 2}));
    EXPECT_EQ(kvfit::parse_override_rule("blk\\.[0-9]\\.ffn_.*_exps=CPU").value(), "blk\\.[0-9]\\.ffn_.*_exps");
    EXPECT_FALSE(kvfit::parse_override_rule("exps=CUDA1").has_value());
    auto message = [](auto f) {
        try { f(); } catch (const kvfit::error & e) { return std::string(e.what()); }
        return std::string("no error");
    };
    EXPECT_EQ(message([] { kvfit::parse_flag_count("-c", "0", 1, 100); }), "-c 0: must be at least 1");
    EXPECT_EQ(message([] { kvfit::parse_flag_count("-c", "-1", 1, 100); }), "-c '-1': expected a positive integer");
    EXPECT_EQ(message([] { kvfit::parse_flag_count("-ub", "4096", 1, 2048); }), "-ub 4096: too large (at most 2048)");
    EXPECT_EQ(message([] { kvfit::parse_tensor_split("3,,1"); }), "-ts '3,,1': expected non-negative proportions like 3,1");
    EXPECT_EQ(message([] { kvfit::parse_override_rule("exps"); }), "-ot 'exps': expected PATTERN=BUFFER");
    EXPECT_NE(message([] { kvfit::parse_override_rule("blk[=CPU"); }).find("invalid regular expression"), std::string::npos);
    EXPECT_NE(message([] { kvfit::parse_cache_type_flag("-ctv", "q9"); }).find("-ctv 'q9': unknown cache type"),
              std::string::npos);
}

} // namespace
