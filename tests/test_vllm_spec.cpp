// vLLM --speculative-config (docs/rules/vllm-speculative.md): two public vLLM 0.20.0 logs with MTP reproduced, then the
// drafter's KV layers on real configs (DeepSeek-V3, DeepSeek-V3.2, GLM-5, Llama-3.1-8B as a draft model), the
// model-less methods, and the JSON vLLM refuses.
#include "kvfit/error.h"
#include "kvfit/plan.h"
#include "kvfit/sources.h"
#include "kvfit/vllm.h"
#include "support/files.h"
#include "support/run_cli.h"

#include <algorithm>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>

namespace {

using kvfit::vllm_settings;

constexpr uint64_t GiB = 1ull << 30;

using kvfit::test::catalog_model;

// A model sized as vLLM sizes an unquantized checkpoint (the runtime's default_weights).
kvfit::model_desc sized(const char * name) {
    kvfit::model_desc m = catalog_model(name);
    kvfit::apply_weight_format(m, "bf16", true);
    return m;
}

// kvfit's catalog Qwen3.5-9B (reconstructed from the model card, data/catalog/README.md) with the one MTP layer the
// published notes below read in its text_config ("mtp_num_hidden_layers"; num_speculative_tokens 1 runs).
kvfit::model_desc qwen35_9b_mtp() {
    std::string text = kvfit::test::read_text(std::string(KVFIT_SOURCE_DIR) + "/data/catalog/Qwen3.5-9B.json");
    text.insert(text.find('{') + 1, "\n  \"mtp_num_hidden_layers\": 1,");
    kvfit::warnings w;
    kvfit::model_desc m = kvfit::model_from_hf_config(text, "Qwen3.5-9B.json", w);
    kvfit::apply_weight_format(m, "bf16", true);
    return m;
}

vllm_settings with_spec(const std::string & json) {
    vllm_settings s;
    s.speculative = kvfit::parse_speculative_config(json);
    return s;
}

bool has_note(const kvfit::vllm_plan & p, const std::string & text) {
    return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string & n) { return n.find(text) != std::string::npos; });
}

std::string gib2(double bytes) { return fmt::format("{:.2f}", bytes / double(GiB)); }

// Public log (vLLM 0.20.0, RTX-class GPU, 2026-05-01): sakamakismile/Qwen3.6-27B-Text-NVFP4-MTP (the Qwen3.5-27B shape),
// --kv-cache-dtype fp8 --enable-prefix-caching --max-model-len 131072 --max-num-batched-tokens 16384 --max-num-seqs 2
// --speculative-config '{"method":"qwen3_5_mtp","num_speculative_tokens":3}'. Logged: "Setting attention block size to
// 1600 tokens", "Padding mamba page size by 0.25%", "Add 3 padding layers, may waste at most 6.25% KV cache memory",
// "Available KV cache memory: 6.56 GiB", "GPU KV cache size: 49,600 tokens", "Maximum concurrency for 131,072 tokens per
// request: 1.30x". Every figure after the Available line is reproduced from it.
TEST(vllm_spec, qwen36_27b_mtp3_fp8_log_v0_20) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    vllm_settings s = with_spec(R"({"method":"qwen3_5_mtp","num_speculative_tokens":3})");
    EXPECT_EQ(s.speculative.method, "mtp") << "qwen3_5_mtp is a deprecated name of mtp";
    s.kv_cache_dtype = "fp8";
    s.enable_prefix_caching = true;
    s.max_model_len = 131072;
    s.max_num_batched_tokens = 16384;
    s.max_num_seqs = 2;
    s.kv_cache_memory_bytes = uint64_t(6.56 * double(GiB));
    const auto p = kvfit::plan_vllm(m, s, {"RTX 5090", 32 * GiB}, 12.0);
    // conv (3 + 3 rows) x 10240 x 2 B + temporal 48 x 128 x 128 x 4 B
    EXPECT_EQ(p.mamba_conv_bytes, 6u * 10240 * 2);
    EXPECT_EQ(p.mamba_state_bytes, 3268608u);
    EXPECT_EQ(p.block_size, 1600u);
    EXPECT_TRUE(p.block_size_raised);
    EXPECT_EQ(fmt::format("{:.2f}", p.mamba_padding_pct), "0.25");
    EXPECT_EQ(p.speculative.draft_kv_layers, 1u);
    EXPECT_EQ(p.speculative.draft_kv_bytes_per_token, 2048u) << "4 KV heads x (256 + 256) x 1 B, as the model's layers";
    EXPECT_EQ(p.group_size, 17u) << "16 + 1 MTP attention layers against 48 GDN layers";
    ASSERT_EQ(p.groups.size(), 4u);
    const auto attn = std::find_if(p.groups.begin(), p.groups.end(), [](const kvfit::vllm_group & g) { return g.kind == "full_attention"; });
    ASSERT_NE(attn, p.groups.end());
    EXPECT_EQ(attn->n_layer, 17u);
    EXPECT_EQ(p.padding_layers, 3u);
    EXPECT_TRUE(has_note(p, "Add 3 padding layers, may waste at most 6.25% KV cache memory"));
    EXPECT_EQ(p.num_gpu_blocks, 126u);
    EXPECT_EQ(p.mamba_blocks_per_request, 15u) << "3 groups x (2 + 3 num_speculative_blocks), mode align";
    EXPECT_EQ(p.per_request_blocks, 97u);
    EXPECT_EQ(fmt::format("{:.2f}", p.max_concurrency), "1.30");
    EXPECT_EQ(p.kv_cache_tokens_v2025, 49600u) << "0.20.0 prints (126 // 4) x 1600";
    EXPECT_EQ(p.speculative.max_cudagraph_capture_size, 16u) << "logged 'max_cudagraph_capture_size': 16 = 2 x (1 + 3) x 2";
    // Without the speculative blocks the same pool would print 1.43x: the log shows they are held.
    EXPECT_EQ(fmt::format("{:.2f}", 126.0 / 88), "1.43");
}

// Public notes (vLLM 0.20.0, RTX 5090, `vllm bench latency` --max-model-len 4096 --gpu-memory-utilization 0.85):
// Qwen/Qwen3.5-9B without speculation logs "Model loading took 17.66 GiB", "Available KV cache memory: 6.56 GiB",
// "GPU KV cache size: 53,328 tokens", "Maximum concurrency ... 36.91x"; with '{"method":"mtp","num_speculative_tokens":1}'
// "Model loading took 18.12 GiB", "Add 3 padding layers, may waste at most 12.50% KV cache memory", "GPU KV cache size:
// 41,184 tokens" (no Available line quoted for that run).
TEST(vllm_spec, qwen35_9b_mtp1_log_v0_20) {
    const kvfit::model_desc m = qwen35_9b_mtp();
    vllm_settings base;
    base.max_model_len = 4096;
    base.max_num_seqs = 1; // bench latency --batch-size 1; the pool does not depend on it
    base.max_num_batched_tokens = 8192;
    const uint64_t block0 = 8ull * 528 * 4096; // 8 tensors of a 528-token page of 4,096 B per token
    base.kv_cache_memory_bytes = 406 * block0 + block0 * 9 / 10; // 6.5565 GiB; the logged 6.56 holds 406 or 407 blocks
    const auto p0 = kvfit::plan_vllm(m, base, {"RTX 5090", 32 * GiB}, 12.0);
    EXPECT_EQ(p0.block_size, 528u);
    EXPECT_EQ(p0.block_bytes, block0);
    EXPECT_EQ(p0.num_gpu_blocks, 406u);
    EXPECT_EQ(fmt::format("{:.2f}", p0.max_concurrency), "36.91");
    EXPECT_EQ(p0.kv_cache_tokens_v2025, 53328u);
    EXPECT_EQ(gib2(double(base.kv_cache_memory_bytes)), "6.56");

    vllm_settings s = base;
    s.speculative = kvfit::parse_speculative_config(R"({"method":"mtp","num_speculative_tokens":1})");
    const uint64_t block1 = 9ull * 528 * 4096; // one more attention layer: 9 tensors
    s.kv_cache_memory_bytes = 313 * block1;
    const auto p = kvfit::plan_vllm(m, s, {"RTX 5090", 32 * GiB}, 12.0);
    EXPECT_EQ(p.mamba_conv_bytes, 4u * 8192 * 2) << "(3 + 1) rows x 8192 x 2 B";
    EXPECT_EQ(p.block_size, 528u);
    EXPECT_EQ(p.mamba_padding_pct, 0.0) << "4 x 8192 x 2 + 32 x 128 x 128 x 4 = 528 x 4096 exactly";
    EXPECT_EQ(p.block_bytes, block1);
    EXPECT_EQ(p.group_size, 9u);
    EXPECT_TRUE(has_note(p, "Add 3 padding layers, may waste at most 12.50% KV cache memory"));
    // 41,184 = 78 x 528: the logged pool held 312 to 315 blocks of 9 x 2,162,688 B (5.66 to 5.71 GiB; not logged)
    EXPECT_EQ(p.kv_cache_tokens_v2025, 41184u);
    EXPECT_EQ(p.per_request_blocks, 8u + 3 * 2) << "cdiv(4096, 528) + 3 groups x (1 + 1)";
    // The drafter's weights: 18.12 - 17.66 = 0.46 GiB (+-0.01 from the rounding of both lines). An estimate.
    EXPECT_GE(p.speculative.draft_weights_bytes, uint64_t(0.45 * double(GiB)));
    EXPECT_LE(p.speculative.draft_weights_bytes, uint64_t(0.47 * double(GiB)));
    EXPECT_TRUE(p.speculative.weights_estimate);
    EXPECT_EQ(p.ranks[0].weights_bytes, p0.ranks[0].weights_bytes + p.speculative.draft_weights_bytes);
}

// DeepSeek-V3 (num_nextn_predict_layers 1): the MTP layer is one more MLA layer of 576 x 2 B in the one group.
// Derived from vLLM's code path (deepseek_mtp: a DeepseekV2DecoderLayer per n_predict); no public log checks it.
TEST(vllm_spec, deepseek_v3_mtp_adds_one_latent_layer) {
    const kvfit::model_desc m = catalog_model("DeepSeek-V3");
    vllm_settings s = with_spec(R"({"method":"deepseek_mtp","num_speculative_tokens":2})");
    s.tp = 8;
    s.max_model_len = 32768;
    s.kv_cache_memory_bytes = 20 * GiB;
    s.block_size = 64;
    const auto p = kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0);
    EXPECT_EQ(p.speculative.method, "mtp");
    EXPECT_EQ(p.speculative.draft_kv_layers, 1u);
    EXPECT_EQ(p.speculative.draft_kv_bytes_per_token, 1152u);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_EQ(p.groups[0].n_layer, 62u);
    EXPECT_EQ(p.block_bytes, 62ull * 64 * 1152);
    EXPECT_TRUE(has_note(p, "multiple times of forward on same MTP layer")) << "2 tokens from 1 layer";
    EXPECT_GT(p.speculative.draft_weights_bytes, 0u);
}

// DSA models (DeepSeek-V3.2, GLM-5): the MTP layer carries the indexer keys too, so its page equals the model's layers'.
TEST(vllm_spec, dsa_mtp_layer_keeps_the_indexer) {
    for (const char * name : {"DeepSeek-V3.2", "GLM-5"}) {
        const kvfit::model_desc m = catalog_model(name);
        vllm_settings s = with_spec(R"({"method":"mtp","num_speculative_tokens":1})");
        s.tp = 8;
        s.max_model_len = 65536;
        s.kv_cache_dtype = "fp8";
        s.kv_cache_memory_bytes = 20 * GiB;
        const auto p = kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0);
        EXPECT_EQ(p.speculative.draft_kv_layers, 1u) << name;
        EXPECT_EQ(p.speculative.draft_kv_bytes_per_token, p.attn_bytes_per_token) << name;
        EXPECT_EQ(p.attn_bytes_per_token, 656u + 132u) << name << ": fp8_ds_mla 656 B + indexer 128 + 4 B";
        EXPECT_EQ(p.groups[0].n_layer, m.n_layer + 1) << name;
    }
}

// A whole draft model (Llama-3.1-8B drafting for itself, same vocabulary): its 32 layers join the one group.
TEST(vllm_spec, draft_model_layers_join_the_pool) {
    const kvfit::model_desc m = sized("Meta-Llama-3.1-8B");
    vllm_settings s = with_spec(R"({"model":"Meta-Llama-3.1-8B","method":"draft_model","num_speculative_tokens":5})");
    kvfit::model_desc d = m;
    s.speculative.draft = std::make_shared<const kvfit::model_desc>(d);
    s.max_model_len = 32768;
    s.kv_cache_memory_bytes = 8 * GiB;
    const auto p = kvfit::plan_vllm(m, s, {"H100", 80 * GiB}, 9.0);
    EXPECT_EQ(p.speculative.draft_kv_layers, 32u);
    EXPECT_EQ(p.speculative.draft_kv_bytes_per_token, 32u * 8 * 256 * 2);
    EXPECT_EQ(p.block_bytes, 2 * (2ull << 20)) << "64 layers x 16 tokens x 8 x 256 x 2 B";
    EXPECT_EQ(p.num_gpu_blocks, 2048u);
    EXPECT_EQ(p.speculative.draft_weights_bytes, p.ranks[0].weights_bytes / 2) << "the draft is the model again";
    // draft TP 1 beside TP 2: every draft head on each rank
    s.tp = 2;
    s.speculative.draft_tensor_parallel_size = 1;
    const auto q = kvfit::plan_vllm(m, s, {"H100", 80 * GiB}, 9.0);
    EXPECT_EQ(q.attn_bytes_per_token, 4u * 256 * 2);
    EXPECT_EQ(q.speculative.draft_kv_bytes_per_token, 32u * 8 * 256 * 2);
}

// ngram and suffix: no model, no weights, no KV layers; the mamba terms follow num_speculative_tokens all the same
// (MambaBase.get_kv_cache_spec reads vllm_config.num_speculative_tokens whatever the method).
TEST(vllm_spec, ngram_and_suffix_add_no_drafter) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    for (const char * json : {R"({"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4})", R"({"method":"suffix"})"}) {
        vllm_settings s = with_spec(json);
        s.max_model_len = 32768;
        s.kv_cache_memory_bytes = 20 * GiB;
        const auto p = kvfit::plan_vllm(m, s, {"H100", 80 * GiB}, 9.0);
        const uint32_t n = s.speculative.num_speculative_tokens;
        EXPECT_EQ(p.speculative.draft_kv_layers, 0u) << json;
        EXPECT_EQ(p.speculative.draft_weights_bytes, 0u) << json;
        EXPECT_EQ(p.group_size, 16u) << json;
        EXPECT_EQ(p.mamba_conv_bytes, (3u + n) * 10240 * 2) << json;
        EXPECT_EQ(p.mamba_blocks_per_request, 3u * (1 + n)) << json;
        EXPECT_TRUE(has_note(p, "no drafter model")) << json;
    }
    EXPECT_EQ(kvfit::parse_speculative_config(R"({"method":"suffix"})").num_speculative_tokens, 24u);
}

// What vLLM refuses, and what kvfit names without modelling it.
TEST(vllm_spec, bad_config) {
    using kvfit::parse_speculative_config;
    auto message = [](const std::string & json) {
        try {
            (void)parse_speculative_config(json);
        } catch (const kvfit::error & e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(message("{method: mtp}").find("--speculative-config: not valid JSON"), std::string::npos);
    EXPECT_EQ(message("{method: mtp}").find('\n'), std::string::npos);
    EXPECT_NE(message("[1]").find("expected a JSON object"), std::string::npos);
    EXPECT_NE(message(R"({"method":"mtp","num_speculative_tokens":2,"tensor_parallel_size":2})").find("draft_tensor_parallel_size"),
              std::string::npos);
    EXPECT_NE(message(R"({"method":"mtp","num_speculative_tokens":0})").find("greater than zero"), std::string::npos);
    EXPECT_NE(message(R"({"method":"mtp"})").find("num_speculative_tokens must be provided"), std::string::npos);
    EXPECT_NE(message(R"({"method":"eagle","num_speculative_tokens":3})").find("without speculative model"), std::string::npos);
    EXPECT_NE(message(R"({"method":"mtp","num_speculative_tokens":"2"})").find("must be an integer"), std::string::npos);

    const auto w = parse_speculative_config(R"({"method":"mtp","num_speculative_tokens":1,"foo":1,"speculative_token_tree":"[(0,)]"})");
    ASSERT_EQ(w.warnings.size(), 2u);
    EXPECT_NE(w.warnings[0].find("\"foo\": not a field"), std::string::npos);
    EXPECT_NE(w.warnings[1].find("speculative_token_tree"), std::string::npos);
    const auto u = parse_speculative_config(R"({"method":"dflash","model":"z-lab/x","num_speculative_tokens":8})");
    ASSERT_EQ(u.warnings.size(), 1u);
    EXPECT_NE(u.warnings[0].find("method 'dflash': not a method kvfit models"), std::string::npos);
    EXPECT_EQ(parse_speculative_config(R"({"model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","num_speculative_tokens":3})").method,
              "eagle3") << "detected from the name, as vLLM does";

    // mtp on a model without MTP layers; a count MTP layers do not divide
    vllm_settings s = with_spec(R"({"method":"mtp","num_speculative_tokens":2})");
    s.kv_cache_memory_bytes = GiB;
    EXPECT_THROW((void)kvfit::plan_vllm(catalog_model("Meta-Llama-3.1-8B"), s, {"H100", 80 * GiB}), kvfit::error);
    const kvfit::model_desc q = catalog_model("Qwen3.5-27B");
    vllm_settings t = with_spec(R"({"method":"mtp","num_speculative_tokens":3})");
    t.kv_cache_memory_bytes = 10 * GiB;
    EXPECT_NO_THROW((void)kvfit::plan_vllm(q, t, {"H100", 80 * GiB})) << "3 tokens from 1 layer: 3 % 1 == 0";
    vllm_settings e = with_spec(R"({"method":"eagle3","model":"x","num_speculative_tokens":3})");
    e.speculative.draft = std::make_shared<const kvfit::model_desc>(catalog_model("Meta-Llama-3.1-8B"));
    e.kv_cache_memory_bytes = 10 * GiB;
    try {
        (void)kvfit::plan_vllm(catalog_model("DeepSeek-V3"), e, {"H100", 80 * GiB});
        ADD_FAILURE() << "eagle3 on deepseek_v3";
    } catch (const kvfit::error & x) {
        EXPECT_NE(std::string(x.what()).find("Eagle3 is only supported for"), std::string::npos) << x.what();
    }
    // MTP keys on a model type vLLM's hf_config_override does not map (MiniMax-M2.5: use_mtp, num_mtp_modules 3): planned,
    // with a named warning (--strict refuses it)
    vllm_settings mm = with_spec(R"({"method":"mtp","num_speculative_tokens":3})");
    mm.tp = 8;
    mm.kv_cache_memory_bytes = 10 * GiB;
    const auto pm = kvfit::plan_vllm(catalog_model("MiniMax-M2.5"), mm, {"H200", 141 * GiB});
    EXPECT_EQ(pm.speculative.draft_kv_layers, 3u);
    EXPECT_TRUE(std::any_of(pm.warnings.begin(), pm.warnings.end(), [](const std::string & x) {
        return x.find("is not among them") != std::string::npos;
    }));
    vllm_settings d = with_spec(R"({"method":"draft_model","model":"x","num_speculative_tokens":3})");
    d.kv_cache_memory_bytes = 10 * GiB;
    EXPECT_THROW((void)kvfit::plan_vllm(q, d, {"H100", 80 * GiB}), kvfit::error) << "no draft config read";
}

// The CLI: --speculative-config on --runtime vllm, the JSON plan's detail.speculative, a draft model read from a local
// config, and the one-line refusals (exit 2).
TEST(vllm_spec, cli) {
    using kvfit::test::run_kvfit;
    const auto bad = run_kvfit("Qwen3.5-27B --runtime vllm --gpu H100 --speculative-config '{method:mtp}'");
    EXPECT_EQ(bad.status, 2);
    EXPECT_EQ(bad.err.find("kvfit: --speculative-config: not valid JSON"), 0u) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;

    const auto j = run_kvfit("Qwen3.5-27B --runtime vllm --gpu H100 --max-num-seqs 64 --max-model-len 65536 --json --speculative-config "
                             "'{\"method\":\"mtp\",\"num_speculative_tokens\":2}'");
    ASSERT_EQ(j.status, 0) << j.err;
    const auto sp = nlohmann::json::parse(j.out)["detail"]["speculative"];
    EXPECT_EQ(sp["method"], "mtp");
    EXPECT_EQ(sp["draft_kv_layers"], 1);
    EXPECT_EQ(sp["draft_kv_bytes_per_token"], 4096);
    EXPECT_EQ(sp["mamba_blocks_added"], 2);
    EXPECT_EQ(sp["draft_weights_estimate"], true);
    EXPECT_NE(j.out.find("--speculative-config '{\\\"method\\\":\\\"mtp\\\""), std::string::npos) << "in the launch command";

    const auto strict = run_kvfit("Qwen3.5-27B --runtime vllm --gpu H100 --weights bf16 --strict --speculative-config "
                                  "'{\"method\":\"mtp\",\"num_speculative_tokens\":1,\"foo\":1}'");
    EXPECT_EQ(strict.status, 2);
    EXPECT_NE(strict.err.find("\"foo\": not a field of vLLM's SpeculativeConfig"), std::string::npos) << strict.err;

    const std::string llama = std::string(KVFIT_SHARED_DIR) + "/configs/meta-llama__Meta-Llama-3.1-8B.json";
    const auto d = run_kvfit("Meta-Llama-3.1-8B --runtime vllm --gpu H100 --max-model-len 8192 --json --speculative-config "
                             "'{\"method\":\"draft_model\",\"model\":\"" + llama + "\",\"num_speculative_tokens\":4}'");
    ASSERT_EQ(d.status, 0) << d.err;
    EXPECT_EQ(nlohmann::json::parse(d.out)["detail"]["speculative"]["draft_kv_layers"], 32);
    const auto missing = run_kvfit("Meta-Llama-3.1-8B --runtime vllm --gpu H100 --speculative-config "
                                   "'{\"method\":\"eagle\",\"model\":\"/nonexistent/eagle\",\"num_speculative_tokens\":4}'");
    EXPECT_EQ(missing.status, 2);
    EXPECT_NE(missing.err.find("cannot read the draft model's config"), std::string::npos) << missing.err;
}

// An EAGLE3 head for Llama-3.1-8B: tests/data/configs/EAGLE3-LLaMA3.1-Instruct-8B.json is SpecForge's
// configs/llama3-8B-eagle3.json (read at zhangnju/SpecForge @3cdf54d1, a fork of sgl-project/SpecForge), the shape of
// yuhuili/EAGLE3-LLaMA3.1-Instruct-8B: 1 layer of 32 heads / 8 KV heads x 128, draft_vocab_size 32000. Its one layer
// joins the pool (the vLLM rule); the weights are an estimate, and no vLLM log checks them: layer 218.1M + q/k/v over
// 2E 25.2M + fc 3E x E 50.3M + lm_head 32000 x 4096 131.1M = 424.7M parameters, 810 MiB in 2 B (a third-party write-up
// gives "~811MB" for the head's file; checked here to 800-820 MiB, not against vLLM).
TEST(vllm_spec, eagle3_head_from_a_local_config) {
    using kvfit::test::run_kvfit;
    const std::string head = std::string(KVFIT_TEST_DATA) + "/configs/EAGLE3-LLaMA3.1-Instruct-8B.json";
    const auto r = run_kvfit("Meta-Llama-3.1-8B --runtime vllm --gpu H100 --max-model-len 32768 --kv-cache-memory-bytes 8GiB "
                             "--json --speculative-config '{\"method\":\"eagle3\",\"model\":\"" + head +
                             "\",\"num_speculative_tokens\":3}'");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto d = nlohmann::json::parse(r.out)["detail"];
    EXPECT_EQ(d["speculative"]["draft_kv_layers"], 1);
    EXPECT_EQ(d["speculative"]["draft_kv_bytes_per_token"], 4096);
    EXPECT_EQ(d["block_bytes"], 33 * 16 * 4096) << "32 + 1 layers of 16 tokens x 4,096 B, one group";
    EXPECT_EQ(d["num_gpu_blocks"], 8 * GiB / (33 * 16 * 4096));
    const uint64_t w = d["speculative"]["draft_weights_bytes"];
    EXPECT_GE(w, 800ull << 20) << w;
    EXPECT_LE(w, 820ull << 20) << w;
    EXPECT_EQ(d["speculative"]["draft_weights_estimate"], true);
}

// POST /v1/plan: speculative_config as an object or its text; a draft "model" (a file or a download) is refused.
TEST(vllm_spec, request_body) {
    const auto q = kvfit::plan_request_from_json(nlohmann::json::parse(
        R"({"model":"Qwen3.5-27B","runtime":"vllm","speculative_config":{"method":"mtp","num_speculative_tokens":2}})"));
    EXPECT_EQ(kvfit::parse_speculative_config(q.flags.text("speculative_config")).num_speculative_tokens, 2u);
    try {
        (void)kvfit::plan_request_from_json(nlohmann::json::parse(
            R"({"model":"Meta-Llama-3.1-8B","runtime":"vllm","speculative_config":{"method":"eagle3","model":"/etc/x","num_speculative_tokens":2}})"));
        ADD_FAILURE() << "a draft path in a request";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("only the command line takes it"), std::string::npos) << e.what();
    }
}

// vLLM's own grouping example (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size: "gpt-oss +
// eagle, 12 SWA + 13 full" -> group size 13): gpt-oss-20b (12 sliding + 12 full layers of 8 KV heads x 64) with a
// one-layer EAGLE3 head of the model's full-attention shape (gpt-oss-20b's config cut to that layer: a derived draft,
// not a published head). The head's layer joins the full group: 13 + 13, one padding layer on the sliding side.
TEST(vllm_spec, gpt_oss_eagle_groups_as_vllm_comments) {
    const kvfit::model_desc m = catalog_model("gpt-oss-20b");
    std::string text = kvfit::test::read_text(std::string(KVFIT_SHARED_DIR) + "/configs/openai__gpt-oss-20b.json");
    nlohmann::json cfg = nlohmann::json::parse(text);
    cfg["num_hidden_layers"] = 1;
    cfg["layer_types"] = nlohmann::json::array({"full_attention"});
    kvfit::warnings w;
    auto head = std::make_shared<const kvfit::model_desc>(kvfit::model_from_hf_config(cfg.dump(), "eagle3-head.json", w));
    vllm_settings s = with_spec(R"({"method":"eagle3","model":"head","num_speculative_tokens":3})");
    s.speculative.draft = head;
    s.max_model_len = 32768;
    s.kv_cache_memory_bytes = 8 * GiB;
    const auto p = kvfit::plan_vllm(m, s, {"H100", 80 * GiB}, 9.0);
    EXPECT_EQ(p.speculative.draft_kv_layers, 1u);
    EXPECT_EQ(p.group_size, 13u);
    EXPECT_EQ(p.padding_layers, 1u);
    EXPECT_TRUE(has_note(p, "Add 1 padding layers, may waste at most 8.33% KV cache memory"));
}

} // namespace
