// The Vulkan device of the scheduler replay (src/runtimes/llamacpp/backend_vulkan.cpp), rule by rule against
// ggml-vulkan v0.5.0's source: graph_optimize's reorder on small graphs, offload_op's batch rule, the assumed limits,
// and the plans that are refused by name (5b4ebc5's ggml-vulkan).
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"
#include "runtimes/llamacpp/backend_vulkan.h"

#include <gtest/gtest.h>

namespace {

using kvfit::ggml_type;
using kvfit::detail::ggraph;
using kvfit::detail::gop;
using kvfit::detail::gtensor;

constexpr uint8_t k_compute = 16; // GGML_TENSOR_FLAG_COMPUTE

/// A graph of f32 tensors [4096, 512]: `ops[i]` with sources `srcs[i]` (indices of earlier tensors; -1 the weight
/// leaf 0, -2 the input leaf 1). Returns the graph with nodes 2.. in order.
ggraph make_graph(const std::vector<gop> & ops, const std::vector<std::vector<int32_t>> & srcs) {
    ggraph g;
    auto leaf = [&](const char * name) {
        gtensor t;
        t.ne = {4096, 512, 1, 1};
        t.nb = kvfit::detail::contiguous_nb(ggml_type::f32, t.ne);
        t.name = name;
        g.t.push_back(t);
        g.leafs.push_back(int32_t(g.t.size() - 1));
    };
    leaf("w");
    leaf("x");
    for (size_t i = 0; i < ops.size(); ++i) {
        gtensor t;
        t.op = ops[i];
        t.ne = {4096, 512, 1, 1};
        t.nb = kvfit::detail::contiguous_nb(ggml_type::f32, t.ne);
        t.flags = k_compute;
        t.name = "n" + std::to_string(i);
        for (const int32_t s : srcs[i]) t.src.push_back(s == -1 ? 0 : s == -2 ? 1 : s + 2);
        g.t.push_back(t);
        g.nodes.push_back(int32_t(g.t.size() - 1));
    }
    g.use_count.assign(g.t.size(), 0);
    for (const int32_t n : g.nodes) {
        for (const int32_t s : g.t[size_t(n)].src) g.use_count[size_t(s)] += 1;
    }
    return g;
}

std::vector<int32_t> reordered(const ggraph & g, std::vector<std::pair<int32_t, int32_t>> * deps = nullptr) {
    kvfit::detail::vulkan_device d;
    std::vector<int32_t> nodes = g.nodes;
    d.graph_optimize(g, nodes, [&](int32_t t, int32_t until) {
        if (deps) deps->emplace_back(t, until);
    });
    for (int32_t & n : nodes) n -= 2; // back to node numbers
    return nodes;
}

} // namespace

// ggml_vk_graph_optimize (ggml-vulkan.cpp:14393-14762 v0.5.0): an independent MUL_MAT moves ahead of a node that waits
// for the first one; the UNARY then takes its MUL along (the UNARY+MUL exception: every node between them scheduled).
TEST(vulkan_sched, graph_optimize_moves_independent_nodes_forward) {
    // n0 = mul_mat(w, x); n1 = silu(n0); n2 = mul_mat(w, x); n3 = mul(n1, n2)
    ggraph g = make_graph({gop::mul_mat, gop::unary, gop::mul_mat, gop::mul}, {{-1, -2}, {0}, {-1, -2}, {1, 2}});
    g.t[size_t(g.nodes[1])].params[0] = 10; // GGML_UNARY_OP_SILU
    EXPECT_EQ(reordered(g), (std::vector<int32_t>{0, 2, 1, 3}));
}

// A chain keeps its order, and every node is placed exactly once.
TEST(vulkan_sched, graph_optimize_keeps_a_chain) {
    ggraph g = make_graph({gop::mul_mat, gop::add, gop::scale, gop::soft_max}, {{-1, -2}, {0, -2}, {1}, {2}});
    EXPECT_EQ(reordered(g), (std::vector<int32_t>{0, 1, 2, 3}));
}

// The fusion pattern RMS_NORM, MUL, ADD (ggml-vulkan-types.h:546) at the head of the unscheduled nodes is kept as it
// is, even when a later independent node could run first; no allocation dependency is added for it.
TEST(vulkan_sched, graph_optimize_keeps_rms_norm_mul_add_together) {
    ggraph g = make_graph({gop::rms_norm, gop::mul, gop::add, gop::mul_mat}, {{-2}, {0, -1}, {1, -2}, {-1, -2}});
    std::vector<std::pair<int32_t, int32_t>> deps;
    EXPECT_EQ(reordered(g, &deps), (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_TRUE(deps.empty());
}

// The top-k MoE pattern SOFT_MAX, RESHAPE, ARGSORT, VIEW, GET_ROWS (topk_moe_early_softmax) keeps each outside source
// alive until its last node (add_pattern_alloc_deps, :14480-14493): here the router logits, leaf x.
TEST(vulkan_sched, graph_optimize_keeps_topk_moe_sources_until_the_pattern_ends) {
    ggraph g = make_graph({gop::soft_max, gop::reshape, gop::argsort, gop::view, gop::get_rows},
                          {{-2}, {0}, {0}, {2}, {1, 3}});
    std::vector<std::pair<int32_t, int32_t>> deps;
    EXPECT_EQ(reordered(g, &deps), (std::vector<int32_t>{0, 1, 2, 3, 4}));
    const int32_t last = g.nodes[4];
    // x (leaf 1) by SOFT_MAX; the pattern's own nodes are not kept
    EXPECT_EQ(deps, (std::vector<std::pair<int32_t, int32_t>>{{1, last}}));
}

// offload_op (:15693-15697, ggml-vulkan-debug.cpp:766-779): any op whose batch reaches 32, GET_ROWS never; MUL_MAT's
// batch is ne[1], MUL_MAT_ID's ne[2], the rest their rows.
TEST(vulkan_sched, offload_op_by_the_batch_of_any_op) {
    kvfit::detail::vulkan_device d;
    gtensor t;
    t.op = gop::mul_mat, t.ne = {4096, 32, 1, 1};
    EXPECT_TRUE(d.offload_op(t));
    t.ne = {4096, 31, 1, 1};
    EXPECT_FALSE(d.offload_op(t));
    t.op = gop::mul_mat_id, t.ne = {4096, 8, 32, 1};
    EXPECT_TRUE(d.offload_op(t));
    t.op = gop::add, t.ne = {4096, 16, 2, 1};
    EXPECT_TRUE(d.offload_op(t));
    t.op = gop::get_rows, t.ne = {4096, 2048, 1, 1};
    EXPECT_FALSE(d.offload_op(t));
}

// The driver limits are assumed per vendor, named, and the unknown vendor's are the largest Vulkan allows.
TEST(vulkan_sched, limits_per_vendor_are_named) {
    EXPECT_EQ(kvfit::detail::vulkan_limits_of("NVIDIA").storage_alignment, 16u);
    EXPECT_EQ(kvfit::detail::vulkan_limits_of("NVIDIA").host_alignment, 64u);
    EXPECT_EQ(kvfit::detail::vulkan_limits_of("AMD").storage_alignment, 4u);
    const auto u = kvfit::detail::vulkan_limits_of("");
    EXPECT_EQ(u.storage_alignment, 256u);
    EXPECT_EQ(u.host_alignment, 4096u);
    EXPECT_NE(u.assumed.find("unknown GPU vendor"), std::string::npos);
}

// A Vulkan plan of v0.5.0 is replayed and warns with its assumptions; 5b4ebc5's ggml-vulkan is refused by name.
TEST(vulkan_sched, plans_replay_v0_5_0_and_name_5b4ebc5) {
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::model_from_catalog(*kvfit::find_catalog("Qwen3.5-9B"), warn);
    kvfit::llamacpp_settings s;
    s.n_ctx = 8192;
    s.backend = kvfit::gpu_backend::vulkan;
    kvfit::device_spec gpu{"RTX 3080 Ti", 12ull << 30};
    gpu.vendor = "NVIDIA";
    const auto p = kvfit::plan_llamacpp(m, s, {}, {gpu});
    EXPECT_TRUE(p.gpu_compute.replayed) << p.gpu_compute.why;
    EXPECT_NE(p.gpu_compute.assumed.find("minStorageBufferOffsetAlignment 16 B"), std::string::npos);
    const kvfit::runtime_plan r = kvfit::llamacpp_runtime_plan(m, p);
    bool warned = false;
    for (const auto & w : r.warnings) warned |= w.find("compute buffers on Vulkan") != std::string::npos;
    EXPECT_TRUE(warned);
    s.release = kvfit::llamacpp_release::b5b4ebc5;
    const auto old = kvfit::plan_llamacpp(m, s, {}, {gpu});
    EXPECT_FALSE(old.gpu_compute.replayed);
    EXPECT_NE(old.gpu_compute.why.find("5b4ebc5"), std::string::npos);
}
