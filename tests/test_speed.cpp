// Speed model (include/kvfit/speed.h): the published llama.cpp benchmarks of docs/speed.md as a table, the
// MoE active-bytes rule, and the spill cliff for Qwen3.5-9B Q4_K_M on an 8 GiB GPU (issue 8 "done when").
#include "kvfit/gpus.h"
#include "kvfit/sources.h"
#include "kvfit/report.h"
#include "kvfit/speed.h"
#include "support/run_cli.h"

#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>

namespace {

constexpr double gib = 1073741824.0;

kvfit::model_desc catalog_model(const char * name) {
    kvfit::warnings warn;
    return kvfit::load_model(name, warn);
}

// Bytes of a GGUF whose routed experts and other tensors have different precisions (gpt-oss: MXFP4 experts,
// 8-bit rest): bits per weight applied per group, expert part apart.
void set_split_weights(kvfit::model_desc & m, double rest_bpw, double expert_bpw) {
    auto fill = [&](kvfit::weight_group & w) {
        w.expert_bytes = uint64_t(double(w.expert_params) * expert_bpw / 8);
        w.bytes = w.expert_bytes + uint64_t(double(w.n_params - w.expert_params) * rest_bpw / 8);
    };
    fill(m.weights.token_embd);
    fill(m.weights.output);
    fill(m.weights.other);
    for (auto & w : m.weights.layers) fill(w);
    m.weights.format = "split";
}

// One published llama.cpp result. `depth` is the mean context depth of the measured tokens (tg128: 64;
// pp512 at micro-batch 1, i.e. 512 decode steps: 256; pp512@d32768 at micro-batch 1: 32768 + 256).
struct published {
    const char * gpu;
    const char * model;       // catalog name
    double size_gib;          // file size as llama-bench prints it; 0 = set by `split`
    double split_rest_bpw;    // for MoE files: bits per weight of non-expert tensors (0 = not split)
    double split_expert_bpw;
    int32_t ngl;              // -1 = all
    uint32_t n_cpu_moe;
    double cpu_bandwidth;     // host bandwidth for spilled rows (B/s)
    uint64_t depth;
    double measured_tps;
    const char * source;
};

const published benchmarks[] = {
    // dense, fully offloaded
    {"RTX 3080 10GB", "Meta-Llama-3.1-8B", 4.58, 0, 0, -1, 0, 60e9, 64, 111.95,
     "https://github.com/dmatora/LLM-inference-speed-benchmarks/issues/12 (llama-bench tg, build 93bc3839)"},
    {"RTX 3090", "Meta-Llama-3.1-8B", 4.33, 0, 0, -1, 0, 60e9, 256, 155.02,
     "https://github.com/ggml-org/llama.cpp/pull/15802 (llama 8B Q4_0, micro-batch 1, pp512, master)"},
    {"RTX 4090", "Meta-Llama-3.1-8B", 4.33, 0, 0, -1, 0, 60e9, 33024, 98.14,
     "https://github.com/ggml-org/llama.cpp/pull/17505 (llama 8B Q4_0, micro-batch 1, pp512@d32768, master)"},
    {"RTX 4090", "Meta-Llama-3.1-8B", 6.14, 0, 0, -1, 0, 60e9, 64, 93.0,
     "https://github.com/dmatora/LLM-inference-speed-benchmarks/issues/10 (llama3 8B Q6_K, llama-server)"},
    {"M2 Ultra 192GB", "Llama-2-7b-hf", 3.56, 0, 0, -1, 0, 60e9, 64, 88.54,
     "https://github.com/ggml-org/llama.cpp/pull/2917 (LLaMA 7B Q4_0, tg 128, master)"},
    {"M2 Ultra 192GB", "Llama-2-7b-hf", 6.67, 0, 0, -1, 0, 60e9, 64, 62.05,
     "https://github.com/ggml-org/llama.cpp/pull/2917 (LLaMA 7B Q8_0, tg 128, master)"},
    {"RX 7900 XTX", "Meta-Llama-3.1-8B", 4.58, 0, 0, -1, 0, 60e9, 32, 105.75,
     "https://github.com/ggml-org/llama.cpp/pull/26284 (llama 8B Q4_K_M, tg64, ROCm)"},
    {"RTX 2080", "Meta-Llama-3.1-8B", 4.58, 0, 0, -1, 0, 60e9, 128, 71.9,
     "https://github.com/AlexsJones/llmfit/pull/773 (Llama-3.1-8B Q4_K_M, -ngl 99, llmfit bench)"},
    // MoE with experts spilled to the CPU (i9-10900X: quad-channel DDR4, 70 GB/s assumed)
    {"RTX 2080", "gpt-oss-20b", 0, 8.5, 4.25, -1, 12, 70e9, 128, 36.4,
     "https://github.com/AlexsJones/llmfit/pull/775 (gpt-oss-20B MXFP4, --n-cpu-moe 12, llmfit bench)"},
};

struct outcome {
    double predicted = 0;
    double roofline = 0; // efficiency 1
};

outcome predict(const published & b, double efficiency) {
    kvfit::model_desc m = catalog_model(b.model);
    if (b.size_gib > 0) kvfit::apply_weight_size(m, uint64_t(b.size_gib * gib));
    else set_split_weights(m, b.split_rest_bpw, b.split_expert_bpw);
    kvfit::llamacpp_settings s;
    s.n_ctx = std::max<uint64_t>(4096, (b.depth + 512 + 255) / 256 * 256);
    kvfit::placement_settings p;
    p.n_gpu_layers = b.ngl;
    p.n_cpu_moe = b.n_cpu_moe;
    const auto gpus = kvfit::parse_gpu_list(b.gpu);
    const auto plan = kvfit::plan_llamacpp(m, s, p, gpus, 0);
    kvfit::speed_settings ss;
    ss.depth = b.depth;
    ss.cpu_bandwidth_bytes_per_s = b.cpu_bandwidth;
    ss.gpu_bandwidth_efficiency = efficiency;
    outcome o;
    o.predicted = kvfit::estimate_speed(m, plan, ss).decode_tokens_per_s;
    ss.gpu_bandwidth_efficiency = 1.0;
    o.roofline = kvfit::estimate_speed(m, plan, ss).decode_tokens_per_s;
    return o;
}

// The error table of docs/speed.md: dense NVIDIA rows within 25 % with the default efficiency, Apple and AMD
// rows within 60 % (one factor for all vendors); the MoE spill row is the known over-prediction (llama.cpp's
// MoE decode reaches less of the roofline), checked for direction only.
TEST(speed, published_llamacpp_benchmarks) {
    std::string table = "| GPU | model | measured t/s | roofline t/s | measured/roofline | kvfit t/s | error |\n";
    for (const auto & b : benchmarks) {
        const outcome o = predict(b, kvfit::default_gpu_bandwidth_efficiency);
        const double err = (o.predicted - b.measured_tps) / b.measured_tps;
        table += fmt::format("| {} | {} {:.2f} GiB | {:.2f} | {:.1f} | {:.2f} | {:.1f} | {:+.0f}% |\n", b.gpu, b.model,
                             b.size_gib, b.measured_tps, o.roofline, b.measured_tps / o.roofline, o.predicted, err * 100);
        const bool nvidia = kvfit::find_gpu(b.gpu)->vendor == "NVIDIA";
        if (b.n_cpu_moe == 0) {
            EXPECT_LT(std::abs(err), nvidia ? 0.25 : 0.60) << b.gpu << " " << b.model << ": measured " << b.measured_tps
                                                          << ", kvfit " << o.predicted << " (" << b.source << ")";
        } else {
            EXPECT_GT(o.predicted, b.measured_tps) << b.source;
        }
        EXPECT_LT(b.measured_tps, o.roofline * 1.02) << "a measurement above the roofline: " << b.source;
    }
    std::printf("%s", table.c_str());
}

// MoE: a token reads the non-expert bytes and n_expert_used / n_expert of the routed-expert bytes.
TEST(speed, moe_reads_only_the_routed_experts) {
    kvfit::model_desc m = catalog_model("gpt-oss-20b");
    set_split_weights(m, 8.5, 4.25);
    ASSERT_GT(m.n_expert, 0u);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const auto & w = m.weights.layers[il];
        EXPECT_EQ(kvfit::active_block_bytes(m, il, true), w.expert_bytes * m.n_expert_used / m.n_expert);
        EXPECT_EQ(kvfit::active_block_bytes(m, il, false), w.bytes - w.expert_bytes);
    }
}

// Full layers read more KV as the context fills; Qwen3.5-9B's 24 recurrent layers read a fixed state.
TEST(speed, kv_term_grows_with_depth_only_on_full_layers) {
    kvfit::model_desc m = catalog_model("Qwen3.5-9B");
    kvfit::apply_weight_format(m, "q4_k_m", true);
    kvfit::llamacpp_settings s;
    s.n_ctx = 131072;
    const auto plan = kvfit::plan_llamacpp(m, s, {}, kvfit::parse_gpu_list("RTX 4090"), 0);
    kvfit::speed_settings ss;
    ss.depth = 1024;
    const auto shallow = kvfit::estimate_speed(m, plan, ss);
    ss.depth = 131072;
    const auto deep = kvfit::estimate_speed(m, plan, ss);
    EXPECT_EQ(shallow.devices[0].kv_bytes, 1024ull * 32768);    // 8 full layers x 4 KiB per token
    EXPECT_EQ(deep.devices[0].kv_bytes, 131072ull * 32768);     // 4 GiB
    EXPECT_EQ(shallow.devices[0].state_bytes, deep.devices[0].state_bytes);
    EXPECT_EQ(deep.devices[0].state_bytes, 2ull * 52690944);    // read and written
    EXPECT_GT(shallow.decode_tokens_per_s, deep.decode_tokens_per_s);
}

// Issue 8 "done when": the cliff for Qwen3.5-9B Q4_K_M on an 8 GiB GPU at 32K (fits) and 128K (spills).
TEST(speed, cliff_qwen35_9b_q4_k_m_on_8gib) {
    kvfit::model_desc m = catalog_model("Qwen3.5-9B");
    kvfit::apply_weight_format(m, "q4_k_m", true);
    const auto gpus = kvfit::parse_gpu_list("RTX 4060");
    // an 8 GB card as CUDA reports it: 7782 MiB (data/gpus.csv; the 8 GiB of the issue is the marketed size)
    ASSERT_EQ(gpus[0].memory_bytes, 7782ull << 20);
    kvfit::llamacpp_settings s;
    s.server_outputs = true; // as the CLI plans it (docs/speed.md's table): llama-server's n_outputs_max
    kvfit::speed_settings ss;
    s.n_ctx = 32768;
    const auto c32 = kvfit::make_spill_cliff(m, s, {}, gpus, kvfit::default_margin_bytes, ss);
    s.n_ctx = 131072;
    const auto c128 = kvfit::make_spill_cliff(m, s, {}, gpus, kvfit::default_margin_bytes, ss);
    ASSERT_GE(c32.rows.size(), 6u);
    EXPECT_TRUE(c32.rows.front().fits);
    EXPECT_EQ(c32.llamacpp_choice, -1);
    EXPECT_FALSE(c128.rows.front().fits);
    ASSERT_GE(c128.llamacpp_choice, 1);
    EXPECT_GE(c128.fit_ngl, 1);
    EXPECT_LT(c128.fit_ngl, 33);
    // the cliff: every layer moved costs speed, and the spilled plan is much slower than the full-GPU one
    for (size_t i = 1; i < c128.rows.size(); ++i) {
        EXPECT_LE(c128.rows[i].decode_tokens_per_s, c128.rows[i - 1].decode_tokens_per_s * 1.0001) << c128.rows[i].label;
    }
    EXPECT_LT(c128.fit_decode_tokens_per_s, 0.75 * c128.rows.front().decode_tokens_per_s);
    EXPECT_LT(c128.rows.back().decode_tokens_per_s, 0.4 * c128.rows.front().decode_tokens_per_s); // all on the CPU
    // the full-GPU plan on a 272 GB/s card: ~5.1 GiB of weights + KV read per token -> tens of tokens/s
    EXPECT_GT(c32.rows.front().decode_tokens_per_s, 25);
    EXPECT_LT(c32.rows.front().decode_tokens_per_s, 45);
    const std::string text = kvfit::render_spill_cliff(m, c128, kvfit::estimate_speed(m, kvfit::plan_llamacpp(m, s, {}, gpus), ss), ss);
    EXPECT_NE(text.find("what llama.cpp runs"), std::string::npos) << text;
    std::printf("%s\n", text.c_str());
    s.n_ctx = 32768;
    std::printf("%s\n", kvfit::render_spill_cliff(m, c32, kvfit::estimate_speed(m, kvfit::plan_llamacpp(m, s, {}, gpus), ss), ss).c_str());
}

TEST(speed, cli_prints_the_cliff) {
    const auto r = kvfit::test::run_kvfit("Qwen3.5-9B --weights q4_k_m --gpu 'RTX 4060' -c 131072 --speed");
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_NE(r.out.find("Spill cliff: Qwen3.5-9B at n_ctx 131,072"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("llama.cpp would spill to -ngl"), std::string::npos) << r.out;
    const auto ok = kvfit::test::run_kvfit("Qwen3.5-9B --weights q4_k_m --gpu 'RTX 4060' -c 32768 --speed");
    EXPECT_EQ(ok.status, 0) << ok.err;
    EXPECT_NE(ok.out.find("all on GPU"), std::string::npos) << ok.out;
}

} // namespace
