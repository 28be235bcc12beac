// Placement and fit search of the planner on hand-built models (include/kvfit/plan.h).
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/llamacpp.h"
#include "kvfit/units.h"

#include <gtest/gtest.h>

namespace {

// A dense 28-block model with 1 GiB per block, a 0.5 GiB embedding and a 0.5 GiB output head.
kvfit::model_desc dense28() {
    kvfit::model_desc m;
    m.name = "dense28";
    m.n_layer = 28;
    m.n_embd = 3584;
    m.n_vocab = 152064;
    m.n_ctx_train = 32768;
    kvfit::resize_layers(m);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        m.n_head[il] = 28;
        m.n_head_kv[il] = 4;
        m.head_dim_k[il] = m.head_dim_v[il] = 128;
        m.caches[il] = {kvfit::layer_cache::attention(kvfit::cache_kind::full, 4, 128, 128)};
        m.weights.layers[il].bytes = 1ull << 30;
    }
    m.weights.token_embd.bytes = 512ull << 20;
    m.weights.output.bytes = 512ull << 20;
    return m;
}

// Case K5 of ../shared/cases: -ngl counts the output layer and offloads it first.
TEST(plan, ngl_counts_the_output_layer_first) {
    const auto m = dense28();
    kvfit::llamacpp_settings s;
    s.n_ctx = 4096;
    kvfit::placement_settings p;
    const std::vector<kvfit::device_spec> gpu = {{"GPU0", 80ull << 30}};

    p.n_gpu_layers = 1; // "offloaded 1/29 layers": the output layer only
    auto plan = kvfit::plan_llamacpp(m, s, p, gpu);
    EXPECT_EQ(plan.n_gpu_layers, 1u);
    EXPECT_EQ(plan.devices[0].n_layers, 0u);
    EXPECT_TRUE(plan.devices[0].has_output);
    EXPECT_EQ(plan.devices[0].used.weights_bytes, 512ull << 20);
    EXPECT_EQ(plan.devices[0].used.kv_bytes, 0u);

    p.n_gpu_layers = 5; // output + blocks 24..27
    plan = kvfit::plan_llamacpp(m, s, p, gpu);
    EXPECT_EQ(plan.devices[0].n_layers, 4u);
    EXPECT_EQ(plan.devices[0].used.weights_bytes, (4ull << 30) + (512ull << 20));
    // KV follows its layer: 4 of 28 layers x 4096 cells x 4 x 128 x 2 x 2 B
    EXPECT_EQ(plan.devices[0].used.kv_bytes, 4ull * 4096 * 4 * 128 * 2 * 2);
    EXPECT_EQ(plan.devices.back().used.kv_bytes, 24ull * 4096 * 4 * 128 * 2 * 2);

    p.n_gpu_layers = -1; // all 29
    plan = kvfit::plan_llamacpp(m, s, p, gpu);
    EXPECT_EQ(plan.n_gpu_layers, 29u);
    EXPECT_EQ(plan.devices[0].n_layers, 28u);
    // the token embedding always stays in host memory (llama-model.cpp: dev_input = cpu)
    EXPECT_EQ(plan.devices.back().used.weights_bytes, 512ull << 20);
    EXPECT_EQ(plan.devices.back().used.output_bytes, 152064ull * 4);
}

TEST(plan, tensor_split_places_blocks_by_proportion) {
    const auto m = dense28();
    kvfit::llamacpp_settings s;
    s.n_ctx = 4096;
    kvfit::placement_settings p;
    p.tensor_split = {3, 1};
    const std::vector<kvfit::device_spec> gpus = {{"GPU0", 80ull << 30}, {"GPU1", 80ull << 30}};
    const auto plan = kvfit::plan_llamacpp(m, s, p, gpus);
    // 29 offloaded layers (28 blocks + output): x = il / 29 against cumulative 0.75, 1.0:
    // il 0..21 (x < 0.75) -> GPU0, 22..27 and the output -> GPU1
    EXPECT_EQ(plan.devices[0].n_layers, 22u);
    EXPECT_EQ(plan.devices[1].n_layers, 6u);
    EXPECT_TRUE(plan.devices[1].has_output);
    EXPECT_FALSE(plan.devices[0].has_output);
    p.tensor_split = {1, 1, 1};
    EXPECT_THROW(kvfit::plan_llamacpp(m, s, p, gpus), kvfit::error);
}

TEST(plan, no_kv_offload_keeps_cache_in_host_memory) {
    const auto m = dense28();
    kvfit::llamacpp_settings s;
    s.n_ctx = 8192;
    kvfit::placement_settings p;
    p.no_kv_offload = true;
    const auto plan = kvfit::plan_llamacpp(m, s, p, {{"GPU0", 80ull << 30}});
    EXPECT_EQ(plan.devices[0].used.kv_bytes, 0u);
    EXPECT_EQ(plan.devices.back().used.kv_bytes, 28ull * 8192 * 4 * 128 * 2 * 2);
}

TEST(plan, moe_experts_on_cpu) {
    auto m = dense28();
    for (uint32_t il = 0; il < m.n_layer; ++il) m.weights.layers[il].expert_bytes = 768ull << 20;
    kvfit::llamacpp_settings s;
    s.n_ctx = 4096;
    kvfit::placement_settings p;
    p.n_cpu_moe = 10;
    const std::vector<kvfit::device_spec> gpu = {{"GPU0", 80ull << 30}};
    auto plan = kvfit::plan_llamacpp(m, s, p, gpu);
    EXPECT_EQ(plan.devices.back().used.weights_bytes, (512ull << 20) + 10 * (768ull << 20));
    p = {};
    p.cpu_moe = true;
    plan = kvfit::plan_llamacpp(m, s, p, gpu);
    EXPECT_EQ(plan.devices.back().used.weights_bytes, (512ull << 20) + 28 * (768ull << 20));
    p = {};
    p.override_tensor_cpu = {"blk\\.(1[0-9])\\.ffn_.*_exps"};
    plan = kvfit::plan_llamacpp(m, s, p, gpu);
    EXPECT_EQ(plan.devices.back().used.weights_bytes, (512ull << 20) + 10 * (768ull << 20));
}

TEST(plan, largest_fitting_context_is_a_multiple_of_256_and_monotone) {
    const auto m = dense28();
    kvfit::llamacpp_settings s;
    kvfit::placement_settings p;
    const std::vector<kvfit::device_spec> gpu = {{"GPU0", 32ull << 30}};
    const uint64_t n = kvfit::max_fitting_n_ctx(m, s, p, gpu, kvfit::default_margin_bytes);
    ASSERT_GT(n, 0u);
    EXPECT_EQ(n % 256, 0u);
    s.n_ctx = n;
    EXPECT_TRUE(kvfit::plan_llamacpp(m, s, p, gpu).fits());
    if (n < m.n_ctx_train) {
        s.n_ctx = n + 256;
        EXPECT_FALSE(kvfit::plan_llamacpp(m, s, p, gpu).fits());
    }
    // with 4 sequences the step is 256 x 4
    s.n_seq = 4;
    EXPECT_EQ(kvfit::max_fitting_n_ctx(m, s, p, gpu, kvfit::default_margin_bytes) % 1024, 0u);
}

TEST(plan, sizes_parse_exactly) {
    EXPECT_EQ(kvfit::parse_size("8GiB"), 8ull << 30);
    EXPECT_EQ(kvfit::parse_size("6.6GB"), 6600000000ull);
    EXPECT_EQ(kvfit::parse_size("512MiB"), 512ull << 20);
    EXPECT_EQ(kvfit::parse_size("1.5GiB"), 3ull << 29);
    EXPECT_EQ(kvfit::parse_size("24G"), 24ull << 30);
    EXPECT_EQ(kvfit::parse_size("1000"), 1000u);
    EXPECT_THROW(kvfit::parse_size("-1GiB"), kvfit::error);
    EXPECT_THROW(kvfit::parse_size("abc"), kvfit::error);
    EXPECT_THROW(kvfit::parse_size("8XB"), kvfit::error);
    EXPECT_THROW(kvfit::parse_size("99999999999TB"), kvfit::error);
    const auto g = kvfit::parse_gpu_list("2x24GiB,8GiB");
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(g[1].memory_bytes, 24ull << 30);
    EXPECT_EQ(g[2].memory_bytes, 8ull << 30);
    EXPECT_THROW(kvfit::parse_gpu_list("0x8GiB"), kvfit::error);
}

} // namespace
