// vLLM and SGLang on the 2026 frontier models and quantized checkpoints: the rows of docs/rules/vllm-frontier.md §9
// (V*, W*) and docs/rules/sglang-frontier.md §7 (S*), case K8 of ../shared/cases, SGLang's TP choice, Ollama without a
// GPU and the pasteable launch lines (issue 13 items 2-5).
#include "kvfit/error.h"
#include "kvfit/ollama.h"
#include "kvfit/plan.h"
#include "kvfit/report.h"
#include "kvfit/sglang.h"
#include "kvfit/sources.h"
#include "kvfit/vllm.h"
#include "runtimes/common/quant.h"
#include "runtimes/common/torch.h"

#include <algorithm>
#include <fmt/format.h>
#include "support/run_cli.h"
#include "support/files.h"
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

namespace {

using kvfit::vllm_settings;

constexpr uint64_t GiB = 1ull << 30;
constexpr uint64_t MiB = 1ull << 20;

kvfit::model_desc catalog_model(const char * name) {
    kvfit::warnings w;
    return kvfit::load_model(name, w);
}

// A catalog model with the weights vLLM / SGLang would load (the runtime's default_weights).
kvfit::model_desc served(const char * name, kvfit::warnings * out = nullptr) {
    kvfit::warnings w;
    kvfit::model_desc m = kvfit::load_model(name, w);
    kvfit::find_runtime("vllm").default_weights(m, w);
    if (out) *out = w;
    return m;
}

bool has(const std::vector<std::string> & v, const std::string & needle) {
    return std::any_of(v.begin(), v.end(), [&](const std::string & s) { return s.find(needle) != std::string::npos; });
}

kvfit::plan_result plan_cli(const char * runtime, const char * model, const char * gpu,
                            std::vector<std::pair<std::string, std::string>> flags = {}) {
    kvfit::plan_request q;
    q.runtime = runtime;
    q.model = model;
    q.gpu = gpu;
    for (auto & [k, v] : flags) q.flags.set(k, v);
    return kvfit::make_plan(q, [&](kvfit::warnings & w) { return kvfit::load_model(model, w); });
}

// --- item 2: weights from quantization_config ----------------------------------------------------------------------

TEST(serving_weights, quantization_config_is_read) {
    const kvfit::model_desc v3 = catalog_model("DeepSeek-V3");
    EXPECT_EQ(v3.quant.method, "fp8");
    EXPECT_EQ(v3.quant.block_n, 128u);
    EXPECT_EQ(v3.quant.block_k, 128u);
    EXPECT_TRUE(v3.parts.score_bias);
    const kvfit::model_desc oss = catalog_model("gpt-oss-120b");
    EXPECT_EQ(oss.quant.method, "mxfp4");
    EXPECT_TRUE(oss.quant.experts_only);
    ASSERT_EQ(oss.quant.ignore.size(), 4u);
    EXPECT_TRUE(oss.parts.sinks && oss.parts.router_bias && oss.parts.expert_bias && oss.parts.qkv_bias);
    EXPECT_TRUE(kvfit::detail::quant_ignored(oss.quant.ignore, "model.layers.7.self_attn.q_proj"));
    EXPECT_TRUE(kvfit::detail::quant_ignored(oss.quant.ignore, "lm_head"));
    EXPECT_FALSE(kvfit::detail::quant_ignored(oss.quant.ignore, "model.layers.7.mlp.experts"));
    EXPECT_TRUE(kvfit::detail::quant_ignored({"re:.*mlp\\.gate$"}, "model.layers.3.mlp.gate"));
}

// W1, W2 (vllm-frontier.md §8.2): DeepSeek-V3 fp8 block 128x128, per GPU as vLLM loads it.
TEST(serving_weights, deepseek_v3_fp8_block_per_gpu) {
    kvfit::warnings w;
    const kvfit::model_desc m = served("DeepSeek-V3", &w);
    EXPECT_TRUE(has(w, "fp8 (block 128x128)")) << w[0];
    EXPECT_TRUE(has(w, "the config's dtype is bfloat16"));
    vllm_settings s;
    s.tp = 8;
    s.max_model_len = 131072;
    const auto p = kvfit::plan_vllm(m, s, {"H200", 143771 * MiB}, 9.0);
    EXPECT_EQ(p.ranks[0].weights_bytes, 85140130848u); // 79.29 GiB (bf16 would be 157.92)
    EXPECT_TRUE(p.fits()) << (p.errors.empty() ? "" : p.errors[0]);
    s.tp = 1;
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"H200", 143771 * MiB}, 9.0).ranks[0].weights_bytes, 673150611808u);
}

// W3-W5 (§8.3): gpt-oss-120b, MXFP4 experts, the rest bf16 (the config states no dtype), sinks fp32.
TEST(serving_weights, gpt_oss_120b_mxfp4_per_gpu) {
    kvfit::warnings w;
    const kvfit::model_desc m = served("gpt-oss-120b", &w);
    EXPECT_TRUE(has(w, "states no torch_dtype or dtype; bfloat16 assumed"));
    EXPECT_TRUE(has(w, "not converted: model.layers.*.self_attn"));
    vllm_settings s;
    s.max_model_len = 131072;
    const auto p = kvfit::plan_vllm(m, s, {"H100 SXM", 81559 * MiB}, 9.0);
    EXPECT_EQ(p.ranks[0].weights_bytes, 65248820352u); // 60.77 GiB (bf16: 217.61)
    EXPECT_TRUE(p.fits()) << (p.errors.empty() ? "" : p.errors[0]);
    // vllm #23278 (v0.10, H100, defaults): "Model loading took 65.9651 GiB" (the Marlin MXFP4 path on Hopper loads
    // 5.2 GiB more than the checkpoint's layout; kvfit's 60.77 is the layout), then "Available KV cache memory:
    // -2.14 GiB": with the logged weights, kvfit's 2025 rules say it does not start either
    kvfit::model_desc logged = m;
    kvfit::apply_weight_size(logged, uint64_t(65.9651 * double(1ull << 30)));
    vllm_settings v10 = s;
    v10.rules = kvfit::vllm_rules::v2025;
    EXPECT_FALSE(kvfit::plan_vllm(logged, v10, {"H100 SXM", 81559 * MiB}, 9.0).fits());
    s.tp = 8;
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"H100 SXM", 81559 * MiB}, 9.0).ranks[0].weights_bytes, 8711168256u);
    s.tp = 1; // Blackwell: FlashInfer MXFP4 pads the intermediate and hidden widths to 256
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"B200", 183359 * MiB}, 10.0).ranks[0].weights_bytes, 73646734464u);
}

// The catalog models the issue names, through the CLI's path: they start.
TEST(serving_weights, catalog_models_start_under_vllm) {
    const auto v3 = plan_cli("vllm", "DeepSeek-V3", "8xH200", {{"max_model_len", "131072"}});
    EXPECT_TRUE(v3.plan.starts) << (v3.plan.refusals.empty() ? "" : v3.plan.refusals[0]);
    EXPECT_EQ(v3.plan.detail["per_rank"][0]["weights_bytes"].get<uint64_t>(), 85140130848u);
    const auto oss = plan_cli("vllm", "gpt-oss-120b", "H100", {{"max_model_len", "131072"}});
    EXPECT_TRUE(oss.plan.starts) << (oss.plan.refusals.empty() ? "" : oss.plan.refusals[0]);
    EXPECT_EQ(oss.plan.detail["per_rank"][0]["weights_bytes"].get<uint64_t>(), 65248820352u);
}

TEST(serving_weights, vllm_quantization_spellings) {
    // --weights accepts vLLM's names
    kvfit::model_desc m = catalog_model("Meta-Llama-3.1-8B");
    for (const char * name : {"fp8", "nvfp4", "mxfp4", "awq", "gptq", "int4"}) {
        kvfit::model_desc c = m;
        EXPECT_NO_THROW(kvfit::apply_weight_format(c, name, true)) << name;
        EXPECT_FALSE(c.quant.method.empty()) << name;
    }
    // fp8 per-tensor on Llama-3.1-8B at TP 1: every linear fp8 + one fp32 scale per shard, embed/head/norms bf16
    const auto fp8 = plan_cli("vllm", "Meta-Llama-3.1-8B", "H100", {{"quantization", "fp8"}, {"max_model_len", "8192"}});
    const uint64_t linears = 32ull * (4096ull * (4096 + 2 * 1024) + 4096ull * 4096 + 3ull * 4096 * 14336);
    const uint64_t scales = 32ull * (3 + 1 + 2 + 1) * 4;
    const uint64_t rest = 2ull * 128256 * 4096 * 2 + (32ull * 2 + 1) * 4096 * 2;
    EXPECT_EQ(fp8.plan.detail["per_rank"][0]["weights_bytes"].get<uint64_t>(), linears + scales + rest);
    EXPECT_TRUE(has(fp8.plan.warnings, "vLLM quantizes the weights to fp8 when it loads them"));
    EXPECT_NE(fp8.plan.launch.find("--quantization fp8"), std::string::npos);
    // the checkpoint's method against another: vLLM's ValueError
    try {
        plan_cli("vllm", "DeepSeek-V3", "8xH200", {{"quantization", "awq"}});
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "Quantization method specified in the model config (fp8) does not match the quantization "
                               "method specified in the `quantization` argument (awq).");
    }
    EXPECT_THROW(plan_cli("vllm", "DeepSeek-V3", "8xH200", {{"quantization", "int3"}}), kvfit::error);
}

TEST(serving_weights, group_quantized_layouts) {
    // GPTQ int4 g128 of one 4096 x 4096 linear: qweight 8 MiB, qzeros 32 x 512 x 4, scales 32 x 4096 x 2, g_idx 4096 x 4
    kvfit::model_desc m = catalog_model("Meta-Llama-3.1-8B");
    m.quant = kvfit::weight_quant_from_name("gptq");
    kvfit::apply_weight_format(m, "gptq", true);
    const auto r = kvfit::detail::quant_rank_weights(m, 1, 0, 1, false, false, false, {});
    const auto lin = [](uint64_t n, uint64_t k) { return n * k / 2 + k / 128 * n / 2 + k / 128 * n * 2 + k * 4; };
    EXPECT_EQ(r.attention, lin(4096 + 2 * 1024, 4096) + lin(4096, 4096));
    EXPECT_EQ(r.dense, lin(2 * 14336, 4096) + lin(4096, 14336));
}

// --- item 3: vLLM KV rules -------------------------------------------------------------------------------------------

// V1, V2, V4 (§2.2): DeepSeek-V3.2, one UniformType group of MLA + indexer, block 64.
TEST(vllm_frontier, dsa_indexer_pages) {
    const kvfit::model_desc m = catalog_model("DeepSeek-V3.2");
    vllm_settings s;
    s.kv_cache_dtype = "fp8";
    s.max_model_len = 163840;
    s.kv_cache_memory_bytes = 40 * GiB;
    const auto p = kvfit::plan_vllm(m, s, {"H200", 143771 * MiB}, 9.0);
    EXPECT_EQ(p.settings.kv_cache_dtype, "fp8_ds_mla");
    EXPECT_EQ(p.block_size, 64u);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_EQ(p.attn_bytes_per_token, 656u + 132u);
    EXPECT_EQ(p.block_bytes, 3076352u);
    EXPECT_EQ(p.block_bytes / 64, 48068u);
    EXPECT_EQ(p.num_gpu_blocks, 13961u);
    EXPECT_EQ(p.per_request_blocks, 2560u);
    EXPECT_EQ(fmt::format("{:.2f}", p.max_concurrency), "5.45");
    EXPECT_EQ(p.kv_cache_tokens, 893504u);
    s.kv_cache_dtype = "fp8_e4m3";
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"H200", 143771 * MiB}, 9.0).block_bytes, 3076352u);
    s.kv_cache_dtype = "auto";
    const auto b = kvfit::plan_vllm(m, s, {"H200", 143771 * MiB}, 9.0);
    EXPECT_EQ(b.block_bytes / 64, 78324u);
    EXPECT_EQ(b.block_bytes, 5012736u);
}

// V3: GLM-5, 78 layers.
TEST(vllm_frontier, glm5_indexer_pages) {
    const kvfit::model_desc m = catalog_model("GLM-5");
    vllm_settings s;
    s.kv_cache_dtype = "fp8";
    s.max_model_len = 131072;
    s.kv_cache_memory_bytes = 40 * GiB;
    const auto p = kvfit::plan_vllm(m, s, {"H200", 143771 * MiB}, 9.0);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_EQ(p.groups[0].n_layer, 78u);
    EXPECT_EQ(p.block_bytes, 3933696u);
    EXPECT_EQ(p.block_bytes / 64, 61464u);
}

// V5, V6 (§3): DeepSeek-V4-Flash, five groups sharing one pool of layer tuples; vllm #44376's log reproduced.
TEST(vllm_frontier, dsv4_groups_and_issue_44376) {
    const kvfit::model_desc m = catalog_model("DeepSeek-V4-Flash");
    vllm_settings s;
    s.tp = 2;
    s.kv_cache_dtype = "fp8";
    s.block_size = 256;
    s.max_num_batched_tokens = 16384;
    s.max_model_len = 30000;
    s.kv_cache_memory_bytes = uint64_t(5.441 * double(GiB));
    const auto p = kvfit::plan_vllm(m, s, {"GH200", 96 * GiB}, 9.0);
    ASSERT_EQ(p.groups.size(), 5u);
    EXPECT_EQ(p.group_size, 22u);
    EXPECT_EQ(p.block_bytes, 1051776u);
    EXPECT_EQ(p.per_request_blocks, 6800u);
    ASSERT_FALSE(p.fits());
    EXPECT_NE(p.errors[0].find("(6.66 GiB KV cache is needed, which is larger than the available KV cache memory (5.44 "
                               "GiB). Based on the available memory, the estimated maximum model length is 13528."),
              std::string::npos) << p.errors[0];
    s.kv_cache_dtype = "auto";
    try {
        kvfit::plan_vllm(m, s, {"GH200", 96 * GiB}, 9.0);
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "vllm: AssertionError: DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got auto");
    }
}

// V7, V9 (§4): gemma-4-26B-A4B, 25 SWA + 5 full layers (global heads x global_head_dim).
TEST(vllm_frontier, gemma4_groups_and_hybrid_manager_off) {
    const kvfit::model_desc m = catalog_model("gemma-4-26B-A4B");
    vllm_settings s;
    s.max_model_len = 262144;
    s.max_num_batched_tokens = 8192;
    s.kv_cache_memory_bytes = 20 * GiB;
    const auto p = kvfit::plan_vllm(m, s, {"H100 SXM", 81559 * MiB}, 9.0);
    EXPECT_EQ(p.groups.size(), 6u);
    EXPECT_EQ(p.group_size, 5u);
    EXPECT_EQ(p.page_bytes, 131072u);
    EXPECT_EQ(p.block_bytes, 655360u);
    EXPECT_EQ(p.per_request_blocks, 11077u);
    s.tp = 8; // V8: 8 SWA heads over 8 ranks, 2 global heads replicated: page 32,768, SWA block 32, full 16
    const auto tp8 = kvfit::plan_vllm(m, s, {"H100 SXM", 81559 * MiB}, 9.0);
    EXPECT_EQ(tp8.page_bytes, 32768u);
    EXPECT_EQ(tp8.block_bytes, 163840u);
    EXPECT_EQ(tp8.groups.front().block_size, 32u);
    EXPECT_EQ(tp8.groups.back().block_size, 16u);
    EXPECT_EQ(tp8.per_request_blocks, 17829u);
    s.tp = 1;
    s.disable_hybrid_kv_cache_manager = true;
    const auto off = kvfit::plan_vllm(m, s, {"H100 SXM", 81559 * MiB}, 9.0);
    ASSERT_EQ(off.groups.size(), 1u);
    EXPECT_EQ(off.block_bytes / off.block_size, 225280u);
    EXPECT_TRUE(has(off.notes, "Hybrid KV cache manager is disabled"));
}

// V10 (§5): MiMo-V2-Flash, full and SWA pools of their own heads and widths.
TEST(vllm_frontier, mimo_v2_groups) {
    const kvfit::model_desc m = catalog_model("MiMo-V2-Flash");
    vllm_settings s;
    s.max_model_len = 65536;
    s.kv_cache_memory_bytes = 20 * GiB;
    const auto p = kvfit::plan_vllm(m, s, {"H100 SXM", 81559 * MiB}, 9.0);
    EXPECT_EQ(p.groups.size(), 6u);
    EXPECT_EQ(p.group_size, 9u);
    EXPECT_EQ(p.block_bytes, 737280u);
    EXPECT_TRUE(has(p.notes, "Add 6 padding layers, may waste at most 15.38% KV cache memory"));
    s.tp = 8; // 4 full KV heads replicated to 1 per rank: both pages 640 B per token, block 16
    const auto tp8 = kvfit::plan_vllm(m, s, {"H100 SXM", 81559 * MiB}, 9.0);
    EXPECT_EQ(tp8.page_bytes, 10240u);
    EXPECT_EQ(tp8.block_bytes, 92160u);
}

// V11, V12 (§7.2): max_num_seqs against the pool's blocks, vLLM's text, not under --enforce-eager.
TEST(vllm_frontier, mamba_blocks_check_as_vllm) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    vllm_settings s;
    s.tp = 2;
    s.kv_cache_dtype = "fp8_e5m2";
    s.enable_prefix_caching = true;
    s.max_num_batched_tokens = 8192;
    s.max_model_len = 131072;
    s.kv_cache_memory_bytes = 208ull * 25690112;
    s.max_num_seqs = 208;
    const auto ok = kvfit::plan_vllm(m, s, {"RTX 3090", 24 * GiB}, 8.6);
    EXPECT_EQ(ok.num_gpu_blocks, 208u);
    EXPECT_TRUE(ok.fits()) << (ok.errors.empty() ? "" : ok.errors[0]);
    s.max_num_seqs = 209;
    const auto over = kvfit::plan_vllm(m, s, {"RTX 3090", 24 * GiB}, 8.6);
    ASSERT_EQ(over.errors.size(), 1u);
    EXPECT_EQ(over.errors[0], "max_num_seqs (209) exceeds available Mamba cache blocks (208). Each decode sequence "
                              "requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower "
                              "max_num_seqs to at most 208 or increase gpu_memory_utilization.");
    s.enforce_eager = true;
    s.max_num_seqs = 1024;
    EXPECT_TRUE(kvfit::plan_vllm(m, s, {"RTX 3090", 24 * GiB}, 8.6).fits());
}

// KDA state (RULES §1.2): Kimi-Linear-48B-A3B shapes, 32 heads of 128, kernel 4: conv bf16, temporal always fp32.
TEST(vllm_frontier, kda_state_shapes) {
    kvfit::model_desc m;
    m.rec_kind = kvfit::recurrent_kind::kda;
    m.ssm_d_conv = 4;
    m.ssm_n_head = 32;
    m.ssm_head_dim = 128;
    uint64_t conv = 0, ssm = 0;
    kvfit::detail::recurrent_state_bytes(m, 1, 2, 2, conv, ssm);
    EXPECT_EQ(conv, 3u * 3 * 32 * 128 * 2); // 73,728
    EXPECT_EQ(ssm, 32u * 128 * 128 * 4);    // 2,097,152 (fp32 whatever the SSM dtype)
    kvfit::detail::recurrent_state_bytes(m, 4, 2, 2, conv, ssm);
    EXPECT_EQ(conv, 3u * 3 * 8 * 128 * 2);
    EXPECT_EQ(ssm, 8u * 128 * 128 * 4);
}

// §7.1: the KV-too-small message as v2026 vLLM prints it.
TEST(vllm_frontier, kv_too_small_message_verbatim) {
    const kvfit::model_desc m = catalog_model("Meta-Llama-3.1-8B");
    vllm_settings s;
    s.kv_cache_memory_bytes = 1000ull * (2ull << 20);
    s.max_model_len = 20000;
    const auto p = kvfit::plan_vllm(m, s, {"GPU0", 24 * GiB});
    ASSERT_FALSE(p.fits());
    EXPECT_EQ(p.errors[0], "To serve at least one request with the model's max seq len (20000), (2.44 GiB KV cache is "
                           "needed, which is larger than the available KV cache memory (1.95 GiB). Based on the "
                           "available memory, the estimated maximum model length is 16000. Try increasing "
                           "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing "
                           "`max_model_len` when initializing the engine. See "
                           "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.");
}

// --- item 4: SGLang -------------------------------------------------------------------------------------------------

// S1-S4 and K8: DeepSeek-V3.2 under SGLang.
TEST(sglang_frontier, dsa_cell_and_pool_k8) {
    const kvfit::model_desc m = served("DeepSeek-V3.2");
    kvfit::sglang_settings s;
    s.tp = 8;
    s.dp = 8;
    s.enable_dp_attention = true;
    s.mem_fraction_static = 0.5;
    s.pre_load_overhead_bytes = 0;
    s.context_length = 163840;
    const auto probe = kvfit::plan_sglang(m, s, {"B200", 183359 * MiB, 10.0});
    EXPECT_EQ(probe.kv_dtype, "fp8_e4m3");
    EXPECT_EQ(probe.cell_bytes, 43188u);
    EXPECT_EQ(probe.alloc_bytes_per_token, 48068u);
    EXPECT_EQ(probe.settings.page_size, 64u);
    // a budget that yields K8's 975,424 tokens: rest // 43,188 in [975,424, 975,488)
    const uint64_t rest = 975424ull * 43188 + 1000;
    const uint64_t mem = 2 * (rest + probe.weights_bytes);
    const auto k8 = kvfit::plan_sglang(m, s, {"B200", mem, 10.0});
    EXPECT_EQ(k8.max_total_num_tokens, 975424u);
    EXPECT_EQ(k8.kv_pool_bytes, 46889757184u);
    EXPECT_TRUE(has(k8.notes, "KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB"));
    // the pool SGLang allocates is larger than the budget it counted the tokens from: said, not silent
    EXPECT_TRUE(has(k8.warnings, "SGLang sizes this DSA pool by cell_size (43188 B per token) but allocates 48068 B per "
                                 "token (the indexer keys and scales) and 64 more rows: the pool takes 4.44 GiB more than "
                                 "the 39.23 GiB it was sized from"));
    const auto hopper = kvfit::plan_sglang(m, s, {"H200", 143771 * MiB, 9.0});
    EXPECT_EQ(hopper.kv_dtype, "bfloat16");
    EXPECT_EQ(hopper.cell_bytes, 78324u);
    EXPECT_EQ(hopper.alloc_bytes_per_token, 78324u);
    s.kv_cache_dtype = "fp8_e5m2";
    try {
        kvfit::plan_sglang(m, s, {"B200", 183359 * MiB, 10.0});
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "AssertionError: DeepSeek DSA only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype");
    }
}

// S5: SGLang's default mem_fraction_static.
TEST(sglang_frontier, default_fraction) {
    EXPECT_EQ(fmt::format("{:.3f}", kvfit::sglang_default_fraction(81559 * MiB, 1, 1, false)), "0.835");
    EXPECT_EQ(fmt::format("{:.3f}", kvfit::sglang_default_fraction(81559 * MiB, 8, 1, false)), "0.818");
    EXPECT_EQ(fmt::format("{:.3f}", kvfit::sglang_default_fraction(143771 * MiB, 1, 1, false)), "0.907");
    EXPECT_EQ(fmt::format("{:.3f}", kvfit::sglang_default_fraction(143771 * MiB, 8, 1, false)), "0.897");
    EXPECT_EQ(fmt::format("{:.3f}", kvfit::sglang_default_fraction(183359 * MiB, 8, 8, true)), "0.751");
}

// S7, S8: hybrid SWA cells.
TEST(sglang_frontier, swa_cells) {
    kvfit::sglang_settings s;
    s.context_length = 32768;
    EXPECT_EQ(kvfit::plan_sglang(served("gemma-4-26B-A4B"), s, {"H200", 143771 * MiB, 9.0}).cell_bytes, 184320u);
    EXPECT_EQ(kvfit::plan_sglang(served("MiMo-V2-Flash"), s, {"H200", 143771 * MiB, 9.0}).cell_bytes, 182784u);
}

// SGLang picks TP (and DP) over the GPUs as vLLM does; no fraction above 1, no --max-running-requests 0.
TEST(sglang_frontier, chooses_tp_over_the_gpus) {
    const auto r = plan_cli("sglang", "DeepSeek-V3", "8xH200", {{"context_length", "131072"}});
    EXPECT_EQ(r.plan.detail["settings"]["tp"].get<uint32_t>(), 8u);
    EXPECT_TRUE(r.plan.starts) << (r.plan.refusals.empty() ? "" : r.plan.refusals[0]);
    EXPECT_EQ(r.plan.devices.size(), 8u);
    EXPECT_NE(r.plan.launch.find("--tp 8"), std::string::npos) << r.plan.launch;
    const double frac = r.plan.detail["settings"]["mem_fraction_static"].get<double>();
    EXPECT_LT(frac, 1.0);
    EXPECT_EQ(r.plan.launch.find("--max-running-requests 0"), std::string::npos);
    // pinned to TP 1 the weights cannot fit one GPU: the message asks for GPUs, not a fraction above 1
    const auto one = plan_cli("sglang", "DeepSeek-V3", "8xH200", {{"tp", "1"}});
    ASSERT_FALSE(one.plan.refusals.empty());
    EXPECT_NE(one.plan.refusals[0].find("a larger --tp (more GPUs) is needed"), std::string::npos) << one.plan.refusals[0];
}

// One vLLM / SGLang process runs on one platform: GPUs of two vendors are refused by name; unlike GPUs of one vendor
// are planned at the smallest (the engine takes the minimum over workers) and the warning and the header say so.
TEST(serving_gpus, two_vendors_refused_unlike_gpus_named) {
    for (const char * rt : {"vllm", "sglang"}) {
        try {
            (void)plan_cli(rt, "Qwen3-8B", "RTX 4090,RX 7900 XTX");
            ADD_FAILURE() << rt << ": NVIDIA + AMD accepted";
        } catch (const kvfit::error & e) {
            EXPECT_NE(std::string(e.what()).find("RTX 4090 (NVIDIA) and RX 7900 XTX (AMD): one "), std::string::npos) << e.what();
        }
        const auto r = plan_cli(rt, "Qwen3-8B", "RTX 4090,RTX 3090");
        // RTX 4090 24,564 MiB < RTX 3090 24,576 MiB (data/gpus.csv): every rank planned on the 4090
        EXPECT_TRUE(std::any_of(r.plan.warnings.begin(), r.plan.warnings.end(), [](const std::string & w) {
            return w.starts_with("GPUs of unlike memory (RTX 4090 23.51 GiB, RTX 3090 23.55 GiB): every rank is planned on "
                                 "the smallest, RTX 4090");
        })) << rt;
        const std::string text = kvfit::render_text(r);
        EXPECT_NE(text.find(" + RTX 3090 ("), std::string::npos) << text.substr(0, 300);
    }
}

// SGLang's SSM state is float32 unless the config says otherwise (configs/mamba_utils.py mamba2_state_dtype), the conv
// state bfloat16: Qwen3-Next-80B-A3B (no mamba_ssm_dtype in its config) holds 36 x (12,288 + 524,288) B per request.
TEST(sglang_frontier, mamba_ssm_state_float32_by_default) {
    const auto r = plan_cli("sglang", (std::string(KVFIT_SHARED_DIR) + "/configs/Qwen__Qwen3-Next-80B-A3B-Thinking.json").c_str(), "4xH100");
    const uint64_t per_request = 36ull * (12288 + 524288);
    EXPECT_EQ(r.plan.detail["mamba_bytes_per_request"].get<uint64_t>(), per_request) << r.plan.detail.dump().substr(0, 400);
    EXPECT_TRUE(has(r.plan.notes, "mamba SSM state float32: SGLang's default when the config states no mamba_ssm_dtype "
                                  "(configs/mamba_utils.py mamba2_state_dtype; SGLANG_MAMBA_SSM_DTYPE overrides it); conv "
                                  "state bfloat16 (SGLANG_MAMBA_CONV_DTYPE)"));
}

// --- items 4-5: Ollama and launch lines ----------------------------------------------------------------------------

TEST(ollama_frontier, without_gpu_plans_the_cpu) {
    const auto r = plan_cli("ollama", "Qwen3.5-9B", "");
    EXPECT_TRUE(r.plan.fits);
    EXPECT_TRUE(has(r.plan.notes, "no GPUs given: Ollama runs every layer on the CPU"));
    EXPECT_NE(r.plan.launch.find("FROM ./Qwen3.5-9B.gguf"), std::string::npos) << r.plan.launch;
    EXPECT_EQ(r.plan.launch.find("FROM Qwen/"), std::string::npos);
}

TEST(launch_frontier, serving_lines_name_the_hub_id) {
    const auto v = plan_cli("vllm", "Qwen3.5-9B", "H100", {{"max_model_len", "32768"}});
    EXPECT_TRUE(v.plan.launch.starts_with("vllm serve Qwen/Qwen3.5-9B ")) << v.plan.launch;
    const auto g = plan_cli("sglang", "Qwen3.5-9B", "H100", {{"context_length", "32768"}});
    EXPECT_NE(g.plan.launch.find("--model-path Qwen/Qwen3.5-9B "), std::string::npos) << g.plan.launch;
}

} // namespace

// SGLang's default context (hf_transformers_utils.py get_context_length): max_position_embeddings x rope_scaling's
// factor, unless rope_scaling names original_max_position_embeddings (Qwen's yarn does) or its type is llama3. Qwen3-8B's
// config (40,960) with a linear factor of 2 starts at 81,920 (it was planned at 40,960); with Qwen's documented yarn x4
// it stays 40,960, as does Llama-3.1-8B's llama3 scaling (131,072).
TEST(sglang_context, rope_scaling_factor_as_get_context_length) {
    const std::string qwen = kvfit::test::shared_config("Qwen__Qwen3-8B.json");
    const auto derived = [](const nlohmann::json & c) {
        kvfit::warnings w;
        return kvfit::sglang_derived_context_length(kvfit::model_from_hf_config(c.dump(), "edited/config.json", w));
    };
    nlohmann::json lin = nlohmann::json::parse(qwen);
    lin["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
    EXPECT_EQ(derived(lin), 81920u);
    {   // the plan says where its context came from
        kvfit::warnings w;
        const auto p = kvfit::plan_sglang(kvfit::model_from_hf_config(lin.dump(), "edited/config.json", w), kvfit::sglang_settings{},
                                          {"H200", 143771ull << 20, 9.0});
        EXPECT_EQ(p.context_length, 81920u);
        EXPECT_TRUE(std::find(p.notes.begin(), p.notes.end(), "context length 81920 = max_position_embeddings 40960 x the "
                              "config's rope_scaling factor (hf_transformers_utils.py get_context_length)") != p.notes.end());
    }
    nlohmann::json yarn = nlohmann::json::parse(qwen);
    yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
    EXPECT_EQ(derived(yarn), 40960u);
    EXPECT_EQ(derived(nlohmann::json::parse(kvfit::test::shared_config("meta-llama__Meta-Llama-3.1-8B.json"))), 131072u);
    EXPECT_EQ(derived(nlohmann::json::parse(qwen)), 40960u);
    nlohmann::json bad = lin;
    bad["rope_scaling"]["factor"] = nullptr;
    EXPECT_THROW((void)derived(bad), kvfit::error);
}
