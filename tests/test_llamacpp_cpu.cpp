// llama.cpp's AMX and CPU_REPACK weight buffers (include/kvfit/llamacpp_cpu.h), against the figures of
// docs/rules/llamacpp-cpu-repack.md: the 16 alloc rows that failed on an AMX host (Qwen3.5-9B v512 12,582,912 B above
// the file, Qwen3-Next-80B 9,437,184 B) and the CPU_REPACK probe measured on this project's AVX-512 host (LFM2 with
// two interior Q4_0 [2048, 8192] weights: 18,874,368 B in CPU_REPACK, the mmap total 18,874,368 B above no-mmap).
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/llamacpp_cpu.h"

#include "support/files.h"

#include <gtest/gtest.h>

namespace {

using kvfit::cpu_buffer;
using kvfit::ggml_type;

std::vector<kvfit::weight_tensor> tensors_of(const std::string & path) {
    const auto f = kvfit::gguf_file::open(path);
    std::vector<kvfit::weight_tensor> out;
    for (const auto & t : f.tensors()) {
        out.push_back({std::string(t.name), t.type, {t.ne[0], t.ne[1], t.ne[2], t.ne[3]}, t.offset, t.bytes, 0});
    }
    return out;
}

const kvfit::cpu_features amx = kvfit::parse_cpu_features("amx");
const kvfit::cpu_features zen4 = kvfit::parse_cpu_features("avx512");

TEST(llamacpp_cpu, variant_from_cpuinfo_flags) {
    const std::string haswell = "fpu sse4_2 avx f16c fma bmi2 avx2";
    const std::string avx512 = haswell + " avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi avx512_vnni avx512_bf16";
    EXPECT_EQ(kvfit::cpu_features_from_flags(haswell, false).variant, "haswell");
    EXPECT_EQ(kvfit::cpu_features_from_flags(avx512, false).variant, "zen4"); // this project's CI host (no amx flags)
    const auto spr = kvfit::cpu_features_from_flags(avx512 + " amx_bf16 amx_tile amx_int8", true);
    EXPECT_EQ(spr.variant, "sapphirerapids");
    EXPECT_TRUE(spr.amx);
    // CPUID shows AMX but the kernel does not grant the tile state: the variant loads, the AMX type is not registered
    EXPECT_FALSE(kvfit::cpu_features_from_flags(avx512 + " amx_tile amx_int8", false).amx);
    EXPECT_EQ(kvfit::cpu_features_from_flags("fpu sse4_2", false).variant, "sse42");
    EXPECT_FALSE(kvfit::cpu_features_from_flags("fpu sse4_2", false).avx2);
}

TEST(llamacpp_cpu, cpu_features_flag) {
    EXPECT_TRUE(amx.amx && amx.avx512 && amx.avx2);
    EXPECT_FALSE(kvfit::parse_cpu_features("none").avx2);
    try {
        kvfit::parse_cpu_features("avx3");
        ADD_FAILURE();
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "--cpu-features 'avx3': expected none, avx2, avx512 or amx");
    }
}

// Qwen3.5-9B: 24 Gated DeltaNet layers x {ssm_beta, ssm_alpha} F16 [4096, 32] go to AMX: 48 x 262,144 B.
TEST(llamacpp_cpu, qwen35_9b_deltanet_projections_go_to_amx) {
    const auto ts = tensors_of(std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/qwen35-9b_v512.gguf");
    const auto on_amx = kvfit::llamacpp_cpu_weight_buffers(ts, amx, true);
    const auto on_zen4 = kvfit::llamacpp_cpu_weight_buffers(ts, zen4, true);
    EXPECT_EQ(on_amx.amx_bytes, 12582912u);
    EXPECT_EQ(on_amx.repack_bytes, 0u);
    EXPECT_EQ(on_zen4.amx_bytes + on_zen4.repack_bytes, 0u);
    EXPECT_EQ(on_amx.total() - on_zen4.total(), 12582912u); // the measured excess of the alloc rows
    // without mmap the moved weights are counted once: the no_alloc / --no-mmap figure is the same on both hosts
    EXPECT_EQ(kvfit::llamacpp_cpu_weight_buffers(ts, amx, false).total(), kvfit::llamacpp_cpu_weight_buffers(ts, zen4, false).total());
    for (const auto & t : ts) {
        if (t.name == "blk.0.ssm_beta.weight") EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t, amx), cpu_buffer::amx);
        if (t.name == "blk.3.attn_q.weight") EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t, amx), cpu_buffer::cpu) << "iq1_s";
    }
}

// The CPU_REPACK probe (measured on an AVX-512 host, both releases): two interior Q4_0 [2048, 8192] weights.
TEST(llamacpp_cpu, repack_counts_interior_weights_twice_with_mmap) {
    const uint64_t q4 = 2048ull * 8192 / 32 * 18; // 9,437,184 B
    std::vector<kvfit::weight_tensor> ts = {
        {"token_embd.weight", ggml_type::f16, {2048, 512, 1, 1}, 0, 2097152, 0},
        {"blk.3.ffn_up.weight", ggml_type::q4_0, {2048, 8192, 1, 1}, 2097152, q4, 0},
        {"blk.3.ffn_norm.weight", ggml_type::f32, {2048, 1, 1, 1}, 2097152 + q4, 8192, 0},
        {"blk.4.ffn_up.weight", ggml_type::q4_0, {2048, 8192, 1, 1}, 2097152 + q4 + 8192, q4, 0},
        {"blk.4.ffn_norm.weight", ggml_type::f32, {2048, 1, 1, 1}, 2097152 + 2 * q4 + 8192, 8192, 0},
    };
    const auto mmap = kvfit::llamacpp_cpu_weight_buffers(ts, zen4, true);
    const auto nommap = kvfit::llamacpp_cpu_weight_buffers(ts, zen4, false);
    EXPECT_EQ(mmap.repack_bytes, 18874368u);
    EXPECT_EQ(mmap.total() - nommap.total(), 18874368u);
    // the last weight of the file moved too: the mapped range shrinks instead (exp_b of the probe)
    ts.push_back({"blk.15.shortconv.out_proj.weight", ggml_type::q4_0, {2048, 2048, 1, 1}, 2097152 + 2 * q4 + 16384, 2359296, 0});
    const auto mmap_b = kvfit::llamacpp_cpu_weight_buffers(ts, zen4, true);
    const auto nommap_b = kvfit::llamacpp_cpu_weight_buffers(ts, zen4, false);
    EXPECT_EQ(mmap_b.repack_bytes, 18874368u + 2359296u);
    EXPECT_EQ(mmap_b.total() - nommap_b.total(), 18874368u);
    // no AVX2: nothing is repacked
    EXPECT_EQ(kvfit::llamacpp_cpu_weight_buffers(ts, kvfit::parse_cpu_features("none"), true).repack_bytes, 0u);
}

TEST(llamacpp_cpu, ops_and_shapes_decide) {
    auto t = [](std::string name, ggml_type type, uint64_t ne0, uint64_t ne1, uint64_t ne2 = 1) {
        return kvfit::weight_tensor{std::move(name), type, {ne0, ne1, ne2, 1}, 0, 0, 0};
    };
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("token_embd.weight", ggml_type::q4_k, 4096, 128256), zen4), cpu_buffer::cpu); // GET_ROWS
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("output.weight", ggml_type::q4_k, 4096, 128256), zen4), cpu_buffer::repack);
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("blk.7.ffn_up_exps.weight", ggml_type::mxfp4, 2880, 2880, 32), zen4), cpu_buffer::repack);
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("blk.7.ffn_up_exps.weight", ggml_type::q4_0, 2880, 2880, 32), amx), cpu_buffer::repack); // AMX: no MUL_MAT_ID
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("blk.7.attn_q.weight", ggml_type::q4_k, 4096, 4100), zen4), cpu_buffer::cpu); // ne1 % 8
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("blk.7.attn_q.weight", ggml_type::q6_k, 4096, 4096), zen4), cpu_buffer::cpu); // x86 repacks no q6_k
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("blk.7.attn_q.weight", ggml_type::q6_k, 4096, 4096), amx), cpu_buffer::amx);
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("blk.7.attn_q.weight", ggml_type::q2_k, 4096, 4096), kvfit::parse_cpu_features("avx2")), cpu_buffer::cpu);
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_of(t("blk.7.attn_q.weight", ggml_type::q2_k, 4096, 4096), zen4), cpu_buffer::repack);
    // AMX packing of a quantized type: ne1 x (ne0 / 32) x (34 + 4) for q8_0
    EXPECT_EQ(kvfit::llamacpp_cpu_buffer_bytes(t("blk.0.attn_q.weight", ggml_type::q8_0, 4096, 4096), cpu_buffer::amx), 4096ull * 128 * 38);
}

} // namespace

namespace {
// This machine: a variant ggml ships, from the flags line (the conformance suite records the variant llama.cpp loaded).
TEST(llamacpp_cpu, detects_this_machine) {
    const auto c = kvfit::detect_host_cpu();
    const std::vector<std::string> known = {"x64", "sse42", "sandybridge", "ivybridge", "piledriver", "haswell", "skylakex",
                                            "cannonlake", "cascadelake", "icelake", "cooperlake", "zen4", "alderlake",
                                            "sapphirerapids"};
    EXPECT_NE(std::find(known.begin(), known.end(), c.variant), known.end()) << c.variant;
    EXPECT_FALSE(c.source.empty());
}
} // namespace
