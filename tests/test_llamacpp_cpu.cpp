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
        EXPECT_STREQ(e.what(), "--cpu-features 'avx3': expected auto, none, avx2, avx512, amx, a libggml-cpu variant "
                               "(haswell, zen4, sapphirerapids, ...) or /proc/cpuinfo flags (fma,f16c,avx2,...)");
    }
    // a variant by name, and /proc/cpuinfo flags scored as ggml scores its variants
    EXPECT_EQ(kvfit::parse_cpu_features("icelake").variant, "icelake");
    EXPECT_TRUE(kvfit::parse_cpu_features("icelake").avx512);
    const auto listed = kvfit::parse_cpu_features("fma,sse4_2,avx,f16c,avx2,bmi2,avx512f,avx512dq,avx512cd,avx512bw,"
                                                  "avx512vl,avx_vnni,avx512_bf16,avx512vbmi,avx512_vnni");
    EXPECT_EQ(listed.variant, "zen4"); // this project's Intel Xeon host (no AMX)
    EXPECT_EQ(listed.source, "--cpu-features");
    EXPECT_EQ(kvfit::parse_cpu_features("fma f16c sse4_2 bmi2 avx avx2 avx_vnni").variant, "alderlake");
    EXPECT_EQ(kvfit::parse_cpu_features("sse4_2,").variant, "sse42");
    EXPECT_FALSE(kvfit::parse_cpu_features("x64").avx2);
    EXPECT_EQ(kvfit::parse_cpu_features("auto"), kvfit::detect_host_cpu());
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

// ---------------------------------------------------------------------------------------------------------------
// Replay of real measurements on simulated hosts: tests/data/cpu/measured.jsonl holds the model buffers llama.cpp
// (both releases) gave for tests/conformance/models_cpu.mjs's lfm2-1.2b-q4 (v512) with each libggml-cpu variant
// that ggml loaded (zen4 on this project's Intel Xeon without AMX; haswell and x64 alone in the binaries directory:
// tests/conformance/cpu_variant.mjs), with mmap, without it, and in no_alloc mode. The file is rebuilt here from its
// spec (tests/data/cpu/lfm2-1.2b-q4_v512.json, written by tests/conformance/generate.mjs), and kvfit's plan must
// give the same model buffers from the variant alone, whatever CPU runs this test.
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"
#include "support/gguf_fixture.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

constexpr double k_mib = 1048576.0;

// llama.cpp logs "<buffer> model buffer size = %8.2f MiB" of (float)bytes / 1024 / 1024
bool same_mib(uint64_t bytes, double logged) { return std::fabs(float(float(bytes) / float(k_mib)) - logged) <= 0.005 + 1e-9; }

TEST(llamacpp_cpu, replays_measured_variants) {
    kvfit::test::scratch_dir dir("llamacpp_cpu_replay");
    const std::string data = std::string(KVFIT_TEST_DATA) + "/cpu/";
    const std::string gguf = dir.file("lfm2-1.2b-q4_v512.gguf");
    const std::string cmd = std::string(KVFIT_GGUF_WRITE) + " " + data + "lfm2-1.2b-q4_v512.json " + gguf + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::load_model(gguf, warn);
    std::ifstream in(data + "measured.jsonl");
    size_t rows = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        const auto row = nlohmann::json::parse(line);
        const auto & meas = row["m"];
        const std::string variant = meas["cpu_backend"].get<std::string>().substr(12); // libggml-cpu-<variant>.so
        kvfit::flag_values f;
        f.set("cpu_features", variant.substr(0, variant.size() - 3));
        if (row["mode"] != "mmap") f.set("no_mmap", "true"); // no_alloc counts each buffer type's tensors once
        if (row["release"] == "5b4ebc5") f.set("llamacpp_version", "5b4ebc5");
        const kvfit::llamacpp_inputs fl = kvfit::parse_llamacpp_flags(f);
        kvfit::llamacpp_settings s = fl.settings;
        s.n_ctx = 4096;
        const kvfit::llamacpp_plan p = kvfit::plan_llamacpp(m, s, fl.placement, {});
        const std::string what = line.substr(0, 80);
        const int64_t diff = int64_t(p.total.weights_bytes) - meas["model_bytes"].get<int64_t>();
        EXPECT_TRUE(diff > -32 && diff < 32) << what << ": weights " << p.total.weights_bytes << " vs " << meas["model_bytes"];
        const auto & b = meas["model_buffers"];
        EXPECT_EQ(p.host_weights.repack_tensors > 0, b.contains("CPU_REPACK")) << what; // logged (0.00 in no_alloc) when used
        if (row["mode"] != "--no-alloc") { // no_alloc logs 0.00 MiB per buffer (dummy buffers)
            EXPECT_TRUE(same_mib(p.host_weights.repack_bytes, b.value("CPU_REPACK", 0.0))) << what << ": CPU_REPACK " << p.host_weights.repack_bytes;
            const char * plain = row["mode"] == "mmap" ? "CPU_Mapped" : "CPU";
            EXPECT_TRUE(same_mib(p.host_weights.mapped_bytes, b.value(plain, 0.0))) << what << ": " << plain << " " << p.host_weights.mapped_bytes;
        }
        ++rows;
    }
    EXPECT_EQ(rows, 18u); // 2 releases x 3 variants x 3 modes
}

// The tied output head: token_embd (GET_ROWS) stays in the plain buffer, its output-layer duplicate (MUL_MAT)
// goes to CPU_REPACK as a tensor of its own (measured: 589,824 B of the 36,765,696 B CPU_REPACK of lfm2-1.2b-q4 v512
// on zen4, in every mode); kept on the plain buffer it is the same tensor and adds nothing.
TEST(llamacpp_cpu, tied_output_duplicate) {
    const uint64_t emb = 2048ull * 512 / 32 * 18; // Q4_0 [2048, 512]: 589,824 B
    kvfit::weight_tensor t{"token_embd.weight", ggml_type::q4_0, {2048, 512, 1, 1}, 0, emb, 0};
    kvfit::weight_tensor o = t;
    o.name = "output.weight";
    o.layer = kvfit::weight_tensor::output;
    o.duplicate = true;
    kvfit::weight_tensor n{"blk.0.attn_norm.weight", ggml_type::f32, {2048, 1, 1, 1}, emb, 8192, 0};
    const auto on = kvfit::llamacpp_cpu_weight_buffers({t, n, o}, zen4, true);
    EXPECT_EQ(on.repack_bytes, emb);
    EXPECT_EQ(on.mapped_bytes, emb + 8192);
    const auto off = kvfit::llamacpp_cpu_weight_buffers({t, n, o}, kvfit::parse_cpu_features("none"), false);
    EXPECT_EQ(off.total(), emb + 8192);
}

} // namespace

namespace {

kvfit::llamacpp_plan plan_with(const kvfit::model_desc & m, std::vector<std::pair<std::string, std::string>> flags,
                               const std::vector<kvfit::device_spec> & gpus = {}) {
    kvfit::flag_values f;
    for (auto & [k, v] : flags) f.set(k, v);
    const kvfit::llamacpp_inputs in = kvfit::parse_llamacpp_flags(f);
    kvfit::llamacpp_settings s = in.settings;
    s.n_ctx = 4096;
    return kvfit::plan_llamacpp(m, s, in.placement, gpus);
}

// The Intel trial (a Xeon with AMX): every alloc row of Qwen3.5-9B v512 weighed 12,582,912 B more than planned and
// Qwen3-Next-80B v512 9,437,184 B more; the no_alloc rows did not move. The plan reproduces both, and the GPU /
// --no-host / --no-repack cases of make_cpu_buft_list.
TEST(llamacpp_cpu, plans_the_amx_host_of_the_intel_trial) {
    kvfit::warnings warn;
    const std::string dir = std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/";
    // (Qwen3-Next-80B's 9,437,184 B: tests/conformance, whose alloc rows are planned with the host's --cpu-features)
    for (const auto & [file, excess] : {std::pair{"qwen35-9b_v512.gguf", 12582912ull}}) {
        const kvfit::model_desc m = kvfit::load_model(dir + file, warn);
        const uint64_t here = plan_with(m, {{"cpu_features", "zen4"}}).total.weights_bytes;
        const auto amx = plan_with(m, {{"cpu_features", "amx"}});
        EXPECT_EQ(amx.total.weights_bytes - here, excess) << file;
        EXPECT_EQ(amx.host_weights.amx_bytes, excess) << file;
        EXPECT_EQ(plan_with(m, {{"cpu_features", "amx"}, {"no_mmap", "true"}}).total.weights_bytes,
                  plan_with(m, {{"cpu_features", "zen4"}, {"no_mmap", "true"}}).total.weights_bytes) << file;
        EXPECT_EQ(plan_with(m, {{"cpu_features", "amx"}, {"no_repack", "true"}}).total.weights_bytes, here) << file;
        // with a GPU the host buffer type comes first: the CPU layers' weights stay plain, unless --no-host
        const std::vector<kvfit::device_spec> gpu = {{"GPU0", 80ull << 30, 9.0}};
        const auto ngl0 = plan_with(m, {{"cpu_features", "amx"}, {"n_gpu_layers", "0"}}, gpu);
        EXPECT_FALSE(ngl0.extra_buffers_used);
        EXPECT_EQ(ngl0.host_weights.amx_bytes + ngl0.host_weights.repack_bytes, 0u);
        const auto no_host = plan_with(m, {{"cpu_features", "amx"}, {"n_gpu_layers", "0"}, {"no_host", "true"}}, gpu);
        EXPECT_EQ(no_host.host_weights.amx_bytes, excess) << file;
        // all layers on the GPU: only the input layer is on the host, and it has no AMX weight
        EXPECT_EQ(plan_with(m, {{"cpu_features", "amx"}, {"no_host", "true"}}, gpu).host_weights.amx_bytes, 0u) << file;
    }
}

TEST(llamacpp_cpu, flags) {
    const auto in = [](std::vector<std::pair<std::string, std::string>> flags) {
        kvfit::flag_values f;
        for (auto & [k, v] : flags) f.set(k, v);
        return kvfit::parse_llamacpp_flags(f).placement;
    };
    EXPECT_TRUE(in({}).mmap);
    EXPECT_EQ(in({}).cpu.source, "assumed");
    EXPECT_EQ(in({}).cpu.variant, "haswell");
    EXPECT_FALSE(in({{"no_mmap", "true"}}).mmap);
    EXPECT_FALSE(in({{"load_mode", "none"}}).mmap);
    EXPECT_FALSE(in({{"load_mode", "dio"}}).mmap);
    EXPECT_TRUE(in({{"load_mode", "mmap+mlock"}}).mmap);
    EXPECT_FALSE(in({{"no_repack", "true"}}).repack);
    EXPECT_TRUE(in({{"no_host", "true"}}).no_host);
    try {
        in({{"load_mode", "fast"}});
        ADD_FAILURE();
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "--load-mode 'fast': expected auto, none, mmap, mlock, mmap+mlock or dio");
    }
    try {
        in({{"mmap", "true"}, {"no_mmap", "true"}});
        ADD_FAILURE();
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "--mmap and --no-mmap: give one of them");
    }
}

} // namespace
