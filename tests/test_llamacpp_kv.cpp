// KV-cache rules of the llama.cpp policy on hand-built model descriptions (K2 of ../shared/cases).
#include "kvfit/runtime.h"

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
        m.kind[il] = (il + 1) % 6 == 0 ? kvfit::layer_kind::full : kvfit::layer_kind::swa;
        m.n_head[il] = 4;
        m.n_head_kv[il] = 1;
        m.head_dim_k[il] = m.head_dim_v[il] = 256;
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
