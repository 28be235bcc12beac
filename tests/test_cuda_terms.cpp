// The backend as an input and the CUDA compute terms (src/runtimes/llamacpp/compute_cuda.cpp,
// docs/rules/llamacpp-cuda.md): K7 and K10 of ../shared/cases/README.md, the pipeline-parallel input copies on two
// GPUs, the backend from GPU names, and CPU figures unchanged. The models are header-only GGUF files written with
// kvfit's writer from the cases' hyperparameters. No CUDA runtime runs here: the CUDA figures are the terms read
// from ggml's sources, checked against the cases' public logs.
#include "kvfit/error.h"
#include "kvfit/gguf_writer.h"
#include "kvfit/gpus.h"
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/plan.h"
#include "kvfit/sources.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

namespace {

using kvfit::gguf_wvalue;
using kvfit::ggml_type;
constexpr uint64_t MiB = 1ull << 20;
constexpr double GiB = double(1ull << 30);

std::string temp_path(const std::string & name) {
    const auto dir = std::filesystem::temp_directory_path() / ("kvfit-cuda-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

kvfit::model_desc load(const kvfit::gguf_writer & w, const std::string & name) {
    const std::string path = temp_path(name);
    w.write(path, kvfit::gguf_data::header_only);
    kvfit::warnings warn;
    return kvfit::model_from_gguf(path, warn);
}

// K7's model: Qwen3.5-4B (qwen35: 32 blocks, every 4th full attention with 4 KV heads x 256, Gated DeltaNet
// elsewhere; n_embd 2560, 16 query heads, vocabulary 248,320, 262,144-token context).
const kvfit::model_desc & qwen35_4b() {
    static const kvfit::model_desc m = [] {
        kvfit::gguf_writer w;
        w.add("general.architecture", gguf_wvalue::string("qwen35"));
        w.add("qwen35.block_count", gguf_wvalue::u32(32));
        w.add("qwen35.context_length", gguf_wvalue::u32(262144));
        w.add("qwen35.embedding_length", gguf_wvalue::u32(2560));
        w.add("qwen35.feed_forward_length", gguf_wvalue::u32(9216));
        w.add("qwen35.attention.head_count", gguf_wvalue::u32(16));
        w.add("qwen35.attention.head_count_kv", gguf_wvalue::u32(4));
        w.add("qwen35.attention.key_length", gguf_wvalue::u32(256));
        w.add("qwen35.attention.value_length", gguf_wvalue::u32(256));
        w.add("qwen35.full_attention_interval", gguf_wvalue::u32(4));
        w.add("qwen35.ssm.conv_kernel", gguf_wvalue::u32(4));
        w.add("qwen35.ssm.inner_size", gguf_wvalue::u32(4096));
        w.add("qwen35.ssm.group_count", gguf_wvalue::u32(16));
        w.add("qwen35.ssm.state_size", gguf_wvalue::u32(128));
        w.add("qwen35.ssm.time_step_rank", gguf_wvalue::u32(32));
        w.add("qwen35.vocab_size", gguf_wvalue::u32(248320));
        return load(w, "qwen35-4b.gguf");
    }();
    return m;
}

// K10's model: Nemotron-3-Ultra (nemotron_h_moe, 108 blocks = 48 Mamba2 + 12 attention + 48 MoE; 2 KV heads x 128;
// Mamba2 d_inner 16384 in 128 heads, 8 groups, d_state 128, conv 4; 512 experts, 22 used, expert FFN 5120 in a
// 2048 latent, up and down only). The case gives no tensor types: the experts are written as a Q4_K_M-style file
// stores them, ffn_up_exps q4_K and ffn_down_exps q6_K (5.53 bits per weight); n_embd 8192 and the 131,072-token
// vocabulary are this test's choice (they do not enter the staged bytes).
const kvfit::model_desc & nemotron3_ultra() {
    static const kvfit::model_desc m = [] {
        std::string pattern;
        for (int i = 0; i < 12; ++i) pattern += "MEMEMEM*E"; // 4 M + 4 E + 1 attention, 12 times: 108 blocks
        const uint32_t n_layer = uint32_t(pattern.size()), n_embd = 8192, latent = 2048, n_ff_exp = 5120, n_expert = 512;
        const uint32_t d_inner = 16384, n_group = 8, d_state = 128, n_ssm_head = 128, d_conv = 4, n_ff_shexp = 10240;
        kvfit::gguf_writer w;
        w.add("general.architecture", gguf_wvalue::string("nemotron_h_moe"));
        auto k = [&](const std::string & key, gguf_wvalue v) { w.add("nemotron_h_moe." + key, std::move(v)); };
        std::vector<uint32_t> ff, kv;
        for (char c : pattern) ff.push_back(c == 'E' ? n_ff_exp : 0), kv.push_back(c == '*' ? 2 : 0);
        k("block_count", gguf_wvalue::u32(n_layer));
        k("context_length", gguf_wvalue::u32(262144));
        k("embedding_length", gguf_wvalue::u32(n_embd));
        k("feed_forward_length", gguf_wvalue::array_u32(ff));
        k("attention.head_count", gguf_wvalue::u32(64));
        k("attention.head_count_kv", gguf_wvalue::array_u32(kv));
        k("attention.key_length", gguf_wvalue::u32(128));
        k("attention.value_length", gguf_wvalue::u32(128));
        k("ssm.conv_kernel", gguf_wvalue::u32(d_conv));
        k("ssm.state_size", gguf_wvalue::u32(d_state));
        k("ssm.group_count", gguf_wvalue::u32(n_group));
        k("ssm.inner_size", gguf_wvalue::u32(d_inner));
        k("ssm.time_step_rank", gguf_wvalue::u32(n_ssm_head));
        k("expert_count", gguf_wvalue::u32(n_expert));
        k("expert_used_count", gguf_wvalue::u32(22));
        k("expert_feed_forward_length", gguf_wvalue::u32(n_ff_exp));
        k("expert_shared_feed_forward_length", gguf_wvalue::u32(n_ff_shexp));
        k("expert_shared_count", gguf_wvalue::u32(1));
        k("moe_latent_size", gguf_wvalue::u32(latent));
        k("vocab_size", gguf_wvalue::u32(131072));
        w.add_tensor("token_embd.weight", ggml_type::q8_0, {n_embd, 131072});
        w.add_tensor("output_norm.weight", ggml_type::f32, {n_embd});
        w.add_tensor("output.weight", ggml_type::q8_0, {n_embd, 131072});
        const uint32_t conv_dim = d_inner + 2 * n_group * d_state;
        for (uint32_t il = 0; il < n_layer; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            w.add_tensor(b + "attn_norm.weight", ggml_type::f32, {n_embd});
            if (pattern[il] == 'M') {
                w.add_tensor(b + "ssm_in.weight", ggml_type::q8_0, {n_embd, 2 * d_inner + 2 * n_group * d_state + n_ssm_head});
                w.add_tensor(b + "ssm_conv1d.weight", ggml_type::f32, {d_conv, conv_dim});
                w.add_tensor(b + "ssm_conv1d.bias", ggml_type::f32, {conv_dim});
                w.add_tensor(b + "ssm_dt.bias", ggml_type::f32, {n_ssm_head});
                w.add_tensor(b + "ssm_a", ggml_type::f32, {1, n_ssm_head});
                w.add_tensor(b + "ssm_d", ggml_type::f32, {1, n_ssm_head});
                w.add_tensor(b + "ssm_norm.weight", ggml_type::f32, {d_inner / n_group, n_group});
                w.add_tensor(b + "ssm_out.weight", ggml_type::q8_0, {d_inner, n_embd});
            } else if (pattern[il] == '*') {
                w.add_tensor(b + "attn_q.weight", ggml_type::q8_0, {n_embd, 64 * 128});
                w.add_tensor(b + "attn_k.weight", ggml_type::q8_0, {n_embd, 2 * 128});
                w.add_tensor(b + "attn_v.weight", ggml_type::q8_0, {n_embd, 2 * 128});
                w.add_tensor(b + "attn_output.weight", ggml_type::q8_0, {64 * 128, n_embd});
            } else {
                w.add_tensor(b + "ffn_gate_inp.weight", ggml_type::f32, {n_embd, n_expert});
                w.add_tensor(b + "exp_probs_b.bias", ggml_type::f32, {n_expert});
                w.add_tensor(b + "ffn_latent_down.weight", ggml_type::q8_0, {n_embd, latent});
                w.add_tensor(b + "ffn_latent_up.weight", ggml_type::q8_0, {latent, n_embd});
                w.add_tensor(b + "ffn_down_exps.weight", ggml_type::q6_k, {n_ff_exp, latent, n_expert});
                w.add_tensor(b + "ffn_up_exps.weight", ggml_type::q4_k, {latent, n_ff_exp, n_expert});
                w.add_tensor(b + "ffn_down_shexp.weight", ggml_type::q8_0, {n_ff_shexp, n_embd});
                w.add_tensor(b + "ffn_up_shexp.weight", ggml_type::q8_0, {n_embd, n_ff_shexp});
            }
        }
        return load(w, "nemotron3-ultra.gguf");
    }();
    return m;
}

const std::vector<kvfit::device_spec> rtx5090 = {{"RTX 5090", 32ull << 30, 12.0}};

uint64_t term_bytes(const kvfit::llamacpp_plan & p, const std::string & name, uint32_t device = 0) {
    for (const auto & t : p.backend_terms) {
        if (t.name == name && t.device == device) return t.added_bytes;
    }
    return 0;
}

// K7: Qwen3.5-4B at 262,144 tokens, FA on, on CUDA: compute 0.31 GiB with an f16 cache, 1.30 GiB with q8_0. The
// difference is one attention layer's K and V converted to f16 for the kernel: 262,144 x 1024 x 2 x 2 B = 1 GiB.
TEST(cuda_terms, k7_quantized_kv_adds_the_f16_copy_to_the_cuda_compute_buffer) {
    const auto & m = qwen35_4b();
    ASSERT_EQ(m.count(kvfit::layer_kind::full), 8u);
    kvfit::llamacpp_settings s;
    s.n_ctx = 262144;
    s.flash_attn = kvfit::flash_attn_mode::on;
    const kvfit::placement_settings p;
    const auto f16 = kvfit::plan_llamacpp(m, s, p, rtx5090);
    EXPECT_EQ(f16.backend.backend, kvfit::gpu_backend::cuda);
    EXPECT_EQ(term_bytes(f16, "flash_attn_ext_f16_kv"), 0u); // f16 K and V: read as they are
    const uint64_t cpu_f16 = kvfit::llamacpp_compute_bytes(m, s, f16.ctx);
    // every layer on the GPU: the scheduler replay of the recorded qwen35 graph (compute_sched.cpp). Measured with the
    // v0.5.0 scheduler and its ggml-cuda host code on a simulated RTX 5090 (tools/simcuda, llama_probe no_alloc, this
    // shape written by tests/conformance/shapes.mjs' qwen35 builder at the 248,320 vocabulary, n_batch 2048):
    // CUDA0 519,045,120 B, CUDA_Host 278,941,728 B. The full-offload rule kvfit used before (the CPU graph without
    // inp_tokens and inp_embd: 782,256,160 B) was 263 MB over here.
    EXPECT_TRUE(f16.gpu_compute.replayed) << f16.gpu_compute.why;
    EXPECT_EQ(f16.devices[0].used.compute_bytes, 519045120u);
    EXPECT_EQ(f16.devices[1].used.compute_bytes, 278941728u);

    // the case's f16 figure is llama-server's: it reserves logits for n_parallel = 1 output (server_output_limits,
    // server-context.cpp:41-53; n_outputs_pp, llama-context.cpp:672), so the peak is the attention stage, not the
    // 485 MiB of logits for 512 rows that libllama's n_batch reserves (the figure above)
    kvfit::llamacpp_settings srv = s;
    srv.server_outputs = true;
    const auto f16_srv = kvfit::plan_llamacpp(m, srv, p, rtx5090);
    EXPECT_EQ(f16_srv.ctx.n_outputs_max, 1u);
    std::printf("K7 f16, llama-server outputs: CUDA0 compute %llu B = %.3f GiB (n_batch outputs: %.3f GiB)\n",
                (unsigned long long)f16_srv.devices[0].used.compute_bytes, double(f16_srv.devices[0].used.compute_bytes) / GiB,
                double(cpu_f16) / GiB);
    EXPECT_NEAR(double(f16_srv.devices[0].used.compute_bytes) / GiB, 0.31, 0.01); // the case's log, 2 decimals

    s.type_k = s.type_v = ggml_type::q8_0;
    srv.type_k = srv.type_v = ggml_type::q8_0;
    const auto q8_srv = kvfit::plan_llamacpp(m, srv, p, rtx5090);
    std::printf("K7 q8_0, llama-server outputs: CUDA0 compute %.3f GiB\n", double(q8_srv.devices[0].used.compute_bytes) / GiB);
    EXPECT_NEAR(double(q8_srv.devices[0].used.compute_bytes) / GiB, 1.30, 0.01);
    const auto q8 = kvfit::plan_llamacpp(m, s, p, rtx5090);
    EXPECT_EQ(kvfit::llamacpp_cuda_fa_f16_bytes(m, s, q8.ctx, 3), 1073741824u); // the first full layer: 1.00 GiB
    EXPECT_EQ(kvfit::llamacpp_cuda_fa_f16_bytes(m, s, q8.ctx, 0), 0u);          // a Gated DeltaNet layer: none
    const double q8_gib = double(q8.devices[0].used.compute_bytes) / GiB;
    EXPECT_NEAR(q8_gib, 1.30, 0.01) << q8.devices[0].used.compute_bytes; // the case's log, 2 decimals
    // the CPU backend reads the quantized cache directly: no such term there
    const auto cpu = kvfit::plan_llamacpp(m, s, p, {});
    EXPECT_EQ(cpu.backend.backend, kvfit::gpu_backend::cpu);
    EXPECT_TRUE(cpu.backend_terms.empty());
    EXPECT_EQ(cpu.devices.back().used.compute_bytes, kvfit::llamacpp_compute_bytes(m, s, cpu.ctx));
    // Vulkan: the scheduler replay over v0.5.0's ggml-vulkan (backend_vulkan.cpp), whose get_alloc_size is ggml_nbytes
    // (ggml-vulkan.cpp:12796-12800): no f16 copy of the q8_0 cache, no CUDA term, less than CUDA's buffer
    s.backend = kvfit::gpu_backend::vulkan;
    const auto vk = kvfit::plan_llamacpp(m, s, p, rtx5090);
    EXPECT_TRUE(vk.gpu_compute.replayed) << vk.gpu_compute.why;
    EXPECT_TRUE(vk.backend_terms.empty());
    EXPECT_LT(vk.devices[0].used.compute_bytes, q8.devices[0].used.compute_bytes);
}

// K10: Nemotron-3-Ultra with --cpu-moe on an RTX 5090, 4 slots with a unified cache, n_ctx 16,128: KV 189.00 MiB,
// recurrent 1576.50 MiB; CUDA compute 42 MB at -b 16 -ub 16, 7-7.5 GB at any batch of 32 or more (op offload stages
// one layer's CPU-resident experts); --no-op-offload avoids it.
TEST(cuda_terms, k10_op_offload_stages_cpu_experts_from_n_ubatch_32) {
    const auto & m = nemotron3_ultra();
    ASSERT_EQ(m.count(kvfit::layer_kind::recurrent), 48u);
    ASSERT_EQ(m.count(kvfit::layer_kind::full), 12u);
    kvfit::llamacpp_settings s;
    s.n_ctx = 16128;
    s.n_seq = 4;
    s.kv_unified = true;
    kvfit::placement_settings p;
    p.cpu_moe = true;
    s.n_batch = s.n_ubatch = 16;
    const auto small = kvfit::plan_llamacpp(m, s, p, rtx5090);
    EXPECT_EQ(small.total.kv_bytes, 189 * MiB);
    EXPECT_EQ(small.total.state_bytes * 100 / MiB, 157650u); // 1576.50 MiB
    EXPECT_EQ(term_bytes(small, "op_offload_staging"), 0u);
    EXPECT_EQ(small.devices[0].used.compute_bytes, kvfit::llamacpp_compute_bytes(m, s, small.ctx));
    EXPECT_NEAR(double(small.devices[0].used.compute_bytes) / 1e6, 42.0, 0.5); // the case's 42 MB (42,181,088 B)

    // llama-server's outputs (4 slots: n_outputs_max 4, server-context.cpp:41-53), as the case ran it
    s.server_outputs = true;
    for (uint32_t ub : {32u, 64u}) {
        s.n_batch = 2048;
        s.n_ubatch = ub;
        const auto big = kvfit::plan_llamacpp(m, s, p, rtx5090);
        const double gb = double(big.devices[0].used.compute_bytes) / 1e9;
        EXPECT_GE(gb, 7.0) << ub;
        EXPECT_LE(gb, 7.5) << ub;
        // the staged tensors: one block's ffn_up_exps (q4_K) + ffn_down_exps (q6_K), 512 x 2048 x 5120 each
        bool found = false;
        for (const auto & t : big.backend_terms) {
            if (t.name != "op_offload_staging") continue;
            found = true;
            EXPECT_EQ(t.tensor_bytes, 512ull * 2048 * 5120 / 256 * (144 + 210));
            EXPECT_EQ(t.device, 0u);
        }
        EXPECT_TRUE(found) << ub;
        s.op_offload = false; // --no-op-offload: the experts' ops stay on the CPU
        const auto off = kvfit::plan_llamacpp(m, s, p, rtx5090);
        EXPECT_EQ(term_bytes(off, "op_offload_staging"), 0u);
        EXPECT_EQ(off.devices[0].used.compute_bytes, kvfit::llamacpp_compute_bytes(m, s, off.ctx));
        s.op_offload = true;
    }
}

// C3: two GPUs with every layer offloaded keep 4 copies of each graph input they read (pipeline parallelism,
// GGML_SCHED_MAX_COPIES); a single GPU or a CPU layer (-ngl) turns it off. The scheduler replay (compute_sched.cpp)
// against the v0.5.0 scheduler with its ggml-cuda host code on two simulated RTX 4090s (tools/simcuda, llama_probe
// no_alloc, this shape from tests/conformance/shapes.mjs' qwen35 builder, n_ctx 131,072, n_batch 2048): the no_alloc
// fit's figures CUDA0 625,017,344, CUDA1 1,097,933,312, CUDA_Host 547,438,624 B.
TEST(cuda_terms, pipeline_parallel_keeps_four_copies_of_the_inputs_on_each_gpu) {
    const auto & m = qwen35_4b();
    kvfit::llamacpp_settings s;
    s.n_ctx = 131072;
    s.flash_attn = kvfit::flash_attn_mode::on;
    const kvfit::placement_settings p;
    const std::vector<kvfit::device_spec> two = {{"RTX 4090", 24ull << 30, 8.9}, {"RTX 4090", 24ull << 30, 8.9}};
    const auto plan = kvfit::plan_llamacpp(m, s, p, two);
    ASSERT_TRUE(plan.gpu_compute.replayed) << plan.gpu_compute.why;
    EXPECT_EQ(plan.gpu_compute.n_copies, 4);
    EXPECT_EQ(plan.gpu_compute.prompt_bytes, (std::vector<uint64_t>{625017344u, 1097933312u, 547438624u}));
    // the f16 KQ mask [131072, 512] is the largest input: each GPU's buffer holds its 4 copies, more than the CPU graph
    const uint64_t mask = 131072ull * 512 * 2;
    EXPECT_GT(plan.gpu_compute.prompt_bytes[1], 4 * mask);
    const auto one = kvfit::plan_llamacpp(m, s, p, {two[0]});
    EXPECT_EQ(one.gpu_compute.n_copies, 1);
    kvfit::placement_settings partial;
    partial.n_gpu_layers = 20;
    const auto part = kvfit::plan_llamacpp(m, s, partial, two);
    // a layer on the CPU: no pipeline parallelism (llama-context.cpp:429-456). This header lists no tensors, and with
    // weights in host memory the copies op offload makes depend on their types: an estimate, named
    EXPECT_FALSE(part.gpu_compute.replayed);
    EXPECT_NE(part.gpu_compute.why.find("lists no tensors"), std::string::npos) << part.gpu_compute.why;
}

// The backend from GPU names: NVIDIA -> cuda, AMD -> rocm, Apple -> metal, ggml device names from logs, sizes alone
// -> cuda assumed; --backend wins, and refuses what the GPU cannot run.
TEST(cuda_terms, backend_inferred_from_gpu_names) {
    using kvfit::gpu_backend;
    auto of = [](const std::string & gpu) { return kvfit::llamacpp_backend_of(kvfit::parse_gpu_list(gpu), std::nullopt); };
    EXPECT_EQ(of("RTX 4090").backend, gpu_backend::cuda);
    EXPECT_EQ(of("RTX 4090").source, "RTX 4090 is an NVIDIA GPU");
    EXPECT_EQ(of("2xH100").backend, gpu_backend::cuda);
    EXPECT_EQ(of("MI300X").backend, gpu_backend::rocm);
    const auto sized = of("24GiB");
    EXPECT_EQ(sized.backend, gpu_backend::cuda);
    EXPECT_TRUE(sized.assumed);
    EXPECT_EQ(sized.source, "assumed: --gpu gave sizes only (pass --backend to choose)");
    auto named = [](const std::string & name) {
        return kvfit::llamacpp_backend_of({{name, 8ull << 30, 0}}, std::nullopt).backend;
    };
    EXPECT_EQ(named("NVIDIA GeForce RTX 9999 Mobile"), gpu_backend::cuda); // a driver name the table lacks
    EXPECT_EQ(named("AMD Radeon RX 9070 XT"), gpu_backend::rocm);
    EXPECT_EQ(named("Apple M5 Max"), gpu_backend::metal);
    EXPECT_EQ(named("CUDA0"), gpu_backend::cuda);   // kvfit explain: the log's device names
    EXPECT_EQ(named("ROCm0"), gpu_backend::rocm);
    EXPECT_EQ(named("Vulkan0"), gpu_backend::vulkan);
    EXPECT_EQ(named("MTL0"), gpu_backend::metal);
    EXPECT_EQ(kvfit::llamacpp_backend_of({}, std::nullopt).backend, gpu_backend::cpu);
    const auto gpus = kvfit::parse_gpu_list("RTX 4090");
    EXPECT_EQ(kvfit::llamacpp_backend_of(gpus, gpu_backend::vulkan).backend, gpu_backend::vulkan);
    EXPECT_EQ(kvfit::llamacpp_backend_of(gpus, gpu_backend::vulkan).source, "--backend");
    auto message = [](auto && f) {
        try {
            f();
        } catch (const kvfit::error & e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message([&] { kvfit::llamacpp_backend_of(gpus, gpu_backend::metal); }),
              "--backend metal: RTX 4090 is an NVIDIA GPU (cuda or vulkan)");
    EXPECT_EQ(message([&] { kvfit::llamacpp_backend_of(gpus, gpu_backend::cpu); }),
              "--backend cpu: a CPU build offloads nothing; drop --gpu");
    EXPECT_EQ(message([&] { kvfit::llamacpp_backend_of({}, gpu_backend::cuda); }), "--backend cuda needs a GPU (--gpu)");
    EXPECT_EQ(message([&] { kvfit::parse_gpu_backend("opencl"); }),
              "--backend 'opencl': expected cuda, rocm, vulkan, metal or cpu");
    EXPECT_EQ(kvfit::parse_gpu_backend("HIP"), gpu_backend::rocm);
}

// The backend in the plan's output (JSON detail.backend and detail.gpu_compute), --no-op-offload in the launch
// command, and the CPU-only plan unchanged.
TEST(cuda_terms, backend_said_in_the_plan) {
    const auto & m = qwen35_4b();
    kvfit::flag_values f;
    f.set("ctx_size", "262144");
    f.set("cache_type_k", "q8_0");
    f.set("cache_type_v", "q8_0");
    f.set("flash_attn", "on");
    f.set("no_op_offload", "true");
    const auto & rt = kvfit::find_runtime("llama.cpp");
    const auto r = kvfit::plan_model(rt, m, {}, f, kvfit::machine{kvfit::parse_gpu_list("24GiB")});
    const auto & b = r.plan.detail["backend"];
    EXPECT_EQ(b["name"], "cuda");
    EXPECT_EQ(b["assumed"], true);
    // the recorded qwen35 graph through the scheduler replay: the f16 copies of the quantized K and V that the flash-
    // attention kernel needs are the release's get_alloc_size and supports_op (backend_cuda.cpp), no estimated term
    EXPECT_TRUE(b["terms"].empty()) << b.dump();
    EXPECT_EQ(r.plan.detail["gpu_compute"]["replayed"], true) << r.plan.detail["gpu_compute"].dump();
    const auto & compute = r.plan.devices[0].buffers.back();
    EXPECT_EQ(compute.name, "compute");
    EXPECT_FALSE(compute.estimate);
    EXPECT_NE(r.plan.launch.find("--no-op-offload"), std::string::npos) << r.plan.launch;
    EXPECT_EQ(r.plan.notes.front(), "backend cuda assumed: --gpu gave sizes only (pass --backend to choose)");
    // no GPU: the CPU graph, no backend term, no estimate
    const auto cpu = kvfit::plan_model(rt, m, {}, f, kvfit::machine{});
    EXPECT_EQ(cpu.plan.detail["backend"]["name"], "cpu");
    EXPECT_TRUE(cpu.plan.detail["backend"]["terms"].empty());
    EXPECT_FALSE(cpu.plan.devices.back().buffers.back().estimate);
}

// kvfit exec reads --no-op-offload (modelled) and -sm (layer and none are planned; row / tensor are listed as not
// modelled instead of passing silently).
TEST(cuda_terms, exec_reads_no_op_offload_and_split_mode) {
    const auto c = kvfit::parse_launch_command({"llama-server", "-m", "x.gguf", "--no-op-offload", "-sm", "row", "-ub", "512"});
    EXPECT_FALSE(c.settings.op_offload);
    ASSERT_EQ(c.not_modelled.size(), 1u);
    EXPECT_EQ(c.not_modelled[0], "-sm row (only -sm layer, the default, and none are modelled)");
    const auto d = kvfit::parse_launch_command({"llama-server", "-m", "x.gguf", "--split-mode", "layer"});
    EXPECT_TRUE(d.settings.op_offload);
    EXPECT_TRUE(d.not_modelled.empty());
    // through the registry (the flags exec plans with) and back
    const auto in = kvfit::parse_llamacpp_flags(kvfit::llamacpp_flag_values(c.settings, c.placement, 0));
    EXPECT_FALSE(in.settings.op_offload);
}

} // namespace
