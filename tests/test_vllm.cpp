// vLLM policy: every worked example of ../shared/reference/vllm/RULES.md §7 recomputed from the same inputs,
// then pages, alignment, groups and bad input (include/kvfit/vllm.h).
#include "kvfit/error.h"
#include "kvfit/vllm.h"
#include "runtimes/common/model_warnings.h"
#include "kvfit/sources.h"
#include "support/files.h"
#include "runtimes/vllm/layout.h"

#include <algorithm>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using kvfit::vllm_settings;

constexpr uint64_t GiB = 1ull << 30;

using kvfit::test::catalog_model;

kvfit::model_desc fixture(const char * file) {
    kvfit::warnings w;
    return kvfit::model_from_hf_config(kvfit::test::read_text(std::string(KVFIT_TEST_DATA "/configs/") + file), file, w);
}

std::string gib2(double bytes) { return fmt::format("{:.2f}", bytes / double(GiB)); }

// §7.1 vllm #10517: Llama-3.1-8B on an RTX 3090, V0 (same shape as v1 without the graph term).
TEST(vllm_rules_7, dense_llama_3090_budget_blocks_tokens) {
    kvfit::model_desc m = catalog_model("Meta-Llama-3.1-8B");
    // Budget: 23.58 x 0.90 - 17.06 (peak torch, weights included) - 0.35 = 3.81 GiB at 20k, 2.89 GiB at 29k.
    struct row { double peak_gib; const char * logged_kv; uint64_t logged_blocks; };
    for (const row & r : {row{17.06, "3.81", 1952}, row{17.98, "2.89", 1478}}) {
        kvfit::apply_weight_size(m, uint64_t(r.peak_gib * double(GiB)));
        vllm_settings s;
        s.rules = kvfit::vllm_rules::v2025;
        s.gpu_memory_utilization = 0.90;
        s.activation_bytes = 0;
        s.non_torch_bytes = uint64_t(0.35 * double(GiB));
        s.max_model_len = 20480;
        const auto p = kvfit::plan_vllm(m, s, {"RTX 3090", uint64_t(23.58 * double(GiB))}, 8.6);
        EXPECT_EQ(gib2(double(p.available_kv_bytes)), r.logged_kv);
        EXPECT_EQ(p.page_bytes * p.group_size, 2ull << 20) << "16 tok x 32 layers x 8 heads x 128 x 2 x 2 B";
        // The log rounds to 0.01 GiB (+-2.56 blocks of 2 MiB); the blocks agree within that window.
        EXPECT_LE(std::llabs(int64_t(p.num_gpu_blocks) - int64_t(r.logged_blocks)), 3) << r.logged_kv;
    }
    // Exact from the logged pool: 1478 blocks hold 23,648 tokens and 29k does not fit.
    vllm_settings s;
    s.rules = kvfit::vllm_rules::v2025;
    s.kv_cache_memory_bytes = 1478ull * (2ull << 20) + (1ull << 20);
    s.max_model_len = 29000;
    const auto p = kvfit::plan_vllm(m, s, {"RTX 3090", uint64_t(23.58 * double(GiB))}, 8.6);
    EXPECT_EQ(p.num_gpu_blocks, 1478u);
    EXPECT_EQ(p.kv_cache_tokens_v2025, 23648u);
    EXPECT_EQ(gib2(double(p.num_gpu_blocks * p.block_bytes)), "2.89");
    EXPECT_FALSE(p.fits());
    EXPECT_EQ(p.max_model_len_fit, 23648u);
}

// §7.2 vllm #15871: DeepSeek-V2-Lite-Chat, MLA, max_model_len 32768, 0.93 GiB available.
TEST(vllm_rules_7, mla_deepseek_v2_lite_needs_0_95_gib) {
    const kvfit::model_desc m = fixture("DeepSeek-V2-Lite-Chat.json");
    vllm_settings s;
    s.max_model_len = 32768;
    s.kv_cache_memory_bytes = uint64_t(0.93 * double(GiB));
    const auto p = kvfit::plan_vllm(m, s, {"GPU0", 80 * GiB});
    EXPECT_EQ(p.attn_bytes_per_token, 576u * 2) << "kv_lora_rank 512 + rope 64, bf16, no x2";
    EXPECT_EQ(p.n_head_kv_rank, 1u);
    EXPECT_EQ(p.per_request_blocks, 2048u);
    EXPECT_EQ(p.need_bytes, 1019215872u); // 2048 x 16 x 27 x 1,152
    ASSERT_EQ(p.errors.size(), 1u);
    EXPECT_NE(p.errors[0].find("max seq len (32768), (0.95 GiB KV cache is needed, which is larger than the available "
                               "KV cache memory (0.93 GiB)"), std::string::npos) << p.errors[0];
    EXPECT_EQ(p.max_model_len_fit, 32096u); // 2006 blocks of 16 x 31,104 B
}

// §7.3 vllm #40691: Qwen3.5-27B, TP=1, vLLM 0.19 (old token formula), prefix caching off -> mode none.
TEST(vllm_rules_7, hybrid_qwen35_27b_tp1_old_token_formula) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    vllm_settings s;
    s.rules = kvfit::vllm_rules::v2025;
    s.max_model_len = 32768;
    s.max_num_seqs = 16;
    s.max_num_batched_tokens = 16384;
    s.kv_cache_memory_bytes = uint64_t(71.18 * double(GiB)); // inferred: [1487, 1488) blocks
    const auto p = kvfit::plan_vllm(m, s, {"H20", 141 * GiB});
    EXPECT_EQ(p.mamba_conv_bytes, 61440u);
    EXPECT_EQ(p.mamba_ssm_bytes, 3145728u);
    EXPECT_EQ(p.attn_bytes_per_token, 4096u);
    EXPECT_EQ(p.block_size, 784u);
    EXPECT_EQ(fmt::format("{:.2f}", p.mamba_padding_pct), "0.13");
    EXPECT_EQ(p.page_bytes, 3211264u);
    EXPECT_EQ(p.group_size, 16u);
    EXPECT_EQ(p.groups.size(), 4u);
    EXPECT_EQ(p.per_request_blocks, 45u);
    EXPECT_EQ(p.num_gpu_blocks, 1487u);
    EXPECT_EQ(fmt::format("{:.2f}", p.max_concurrency), "33.04");
    EXPECT_EQ(p.kv_cache_tokens_v2025, 290864u);
    // RULES §7.3 says 1,082,801 from the rounded 33.044; Python's float gives 1487 / 45 x 32768 = 1,082,800.36.
    EXPECT_EQ(p.kv_cache_tokens, 1082800u);
    EXPECT_TRUE(p.fits());
}

// §7.5 mitchross/talos-argocd-proxmox PR #1995: Qwen3.8-27B-FP8 (Qwen3.5-27B shape) on 2 x RTX 3090, TP=2,
// util 0.92, fp8_e4m3 KV, prefix caching on (mode align), MNBT 8192, max_model_len 131072, 4.99 GiB pool per rank.
TEST(vllm_rules_7, hybrid_qwen38_27b_tp2_fp8_new_token_formula) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    vllm_settings s;
    s.tp = 2;
    s.gpu_memory_utilization = 0.92;
    s.kv_cache_dtype = "fp8_e4m3";
    s.enable_prefix_caching = true;
    s.max_num_batched_tokens = 8192;
    s.max_num_seqs = 8;
    s.max_model_len = 131072;
    s.kv_cache_memory_bytes = uint64_t(4.99 * double(GiB));
    const auto p = kvfit::plan_vllm(m, s, {"RTX 3090", 24 * GiB}, 8.6);
    EXPECT_EQ(p.n_head_kv_rank, 2u);
    EXPECT_EQ(p.attn_bytes_per_token, 1024u);
    EXPECT_EQ(p.mamba_conv_bytes, 30720u);
    EXPECT_EQ(p.mamba_ssm_bytes, 1572864u);
    EXPECT_EQ(p.block_size, 1568u);
    EXPECT_EQ(fmt::format("{:.2f}", p.mamba_padding_pct), "0.13");
    EXPECT_EQ(p.page_bytes, 1605632u);
    EXPECT_EQ(p.block_bytes, 25690112u);
    EXPECT_EQ(p.settings.mamba_mode, kvfit::mamba_cache_mode::align);
    EXPECT_EQ(p.per_request_blocks, 90u);
    EXPECT_EQ(p.num_gpu_blocks, 208u);
    EXPECT_EQ(fmt::format("{:.2f}", p.max_concurrency), "2.31");
    EXPECT_EQ(p.kv_cache_tokens, 302921u);
    EXPECT_EQ(gib2(double(p.num_gpu_blocks * p.block_bytes)), "4.98"); // 4.977 GiB
    ASSERT_FALSE(p.warnings.empty()); // fp8 e4m3 on sm86: the Triton path refuses it
    EXPECT_NE(p.warnings[0].find("fp8e4nv not supported"), std::string::npos);
    // Mode none prints 2.31x only with 201 blocks, and then 302,821 tokens, not the logged 302,921.
    s.enable_prefix_caching = false;
    s.kv_cache_memory_bytes = 201ull * 25690112;
    const auto q = kvfit::plan_vllm(m, s, {"RTX 3090", 24 * GiB}, 8.6);
    EXPECT_EQ(q.per_request_blocks, 87u);
    EXPECT_EQ(fmt::format("{:.2f}", q.max_concurrency), "2.31");
    EXPECT_EQ(q.kv_cache_tokens, 302821u);
}

// §7.7 vllm #54458: the new token line is int(C x L) (group count not given, so blocks are not derived).
TEST(vllm_rules_7, token_line_is_concurrency_times_length) {
    EXPECT_EQ(fmt::format("{:.2f}", 260006.0 / 8192), "31.74");
    EXPECT_EQ(fmt::format("{:.2f}", 1077542.0 / 262144), "4.11");
}

TEST(vllm, tp8_replicates_kv_heads_and_divides_gdn_state) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    vllm_settings s;
    s.tp = 8;
    s.max_model_len = 32768;
    const auto p = kvfit::plan_vllm(m, s, {"H100 SXM", 80 * GiB}, 9.0);
    EXPECT_EQ(p.n_head_kv_rank, 1u); // 4 KV heads over 8 ranks: replicated, 1 per rank
    EXPECT_EQ(p.attn_bytes_per_token, 1u * 256 * 2 * 2);
    EXPECT_EQ(p.mamba_ssm_bytes, 6ull * 128 * 128 * 4);
}

TEST(vllm, mla_is_replicated_per_rank) {
    const kvfit::model_desc m = fixture("DeepSeek-V2-Lite-Chat.json");
    vllm_settings s;
    s.tp = 4;
    s.max_model_len = 32768;
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"GPU0", 80 * GiB}).attn_bytes_per_token, 1152u);
}

TEST(vllm, user_block_size_becomes_the_alignment_grain_in_2026) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    vllm_settings s;
    s.tp = 2;
    s.kv_cache_dtype = "fp8";
    s.block_size = 816;
    s.max_model_len = 32768;
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"GPU0", 80 * GiB}).block_size, 1632u); // 816 x cdiv(1,603,584, 816 x 1024)
    s.rules = kvfit::vllm_rules::v2025;
    // grain 16: the natural 16 x cdiv(1,603,584, 16 x 1024) = 1568 > 816 replaces the user's size
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"GPU0", 80 * GiB}).block_size, 1568u);
}

TEST(vllm, gpt_oss_swa_and_full_groups) {
    kvfit::model_desc m = catalog_model("gpt-oss-20b");
    vllm_settings s;
    s.max_model_len = 131072;
    s.max_num_batched_tokens = 8192;
    const auto p = kvfit::plan_vllm(m, s, {"H100 SXM", 80 * GiB}, 9.0);
    ASSERT_EQ(p.groups.size(), 2u);
    EXPECT_EQ(p.group_size, 12u);
    EXPECT_EQ(p.groups[0].kind, "sliding_window");
    EXPECT_EQ(p.groups[0].per_request_blocks, (128 - 1 + 8192 + 15) / 16 + 1); // 521
    EXPECT_EQ(p.groups[1].per_request_blocks, 8192u);
}

// Nemotron-H-56B: 10 attention and 54 Mamba2 layers -> group_size 10, 6 mamba groups of 9 (+1 padding each).
TEST(vllm, padding_layers_of_a_short_type) {
    const kvfit::model_desc m = catalog_model("Nemotron-H-56B-Base-8K");
    vllm_settings s;
    s.tp = 2;
    s.max_model_len = 8192;
    s.kv_cache_memory_bytes = 10 * GiB;
    const auto p = kvfit::plan_vllm(m, s, {"H100 SXM", 80 * GiB}, 9.0);
    EXPECT_EQ(p.group_size, 10u);
    EXPECT_EQ(p.groups.size(), 7u);
    EXPECT_EQ(p.padding_layers, 6u);
    EXPECT_EQ(p.mamba_conv_bytes, 3u * (16384 + 2 * 8 * 256) / 2 * 2); // Mamba2, 8 groups divide tp 2
    EXPECT_EQ(p.mamba_ssm_bytes, 128u * 64 * 256 * 2);                 // no mamba_ssm_dtype: bf16
    const auto note = std::find_if(p.notes.begin(), p.notes.end(), [](const std::string & n) { return n.starts_with("Add "); });
    ASSERT_NE(note, p.notes.end());
    EXPECT_EQ(*note, "Add 6 padding layers, may waste at most 11.11% KV cache memory");
}

TEST(vllm, max_num_seqs_against_mamba_blocks) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    vllm_settings s;
    s.max_model_len = 32768;
    s.kv_cache_memory_bytes = 985ull * 16 * 3211264; // LMCache recipe: ~985 blocks, default max_num_seqs 1024
    const auto p = kvfit::plan_vllm(m, s, {"H100 SXM", 80 * GiB}, 9.0);
    EXPECT_EQ(p.settings.max_num_seqs, 1024u);
    ASSERT_FALSE(p.fits());
    EXPECT_NE(p.errors[0].find("max_num_seqs (1024) exceeds available Mamba cache blocks"), std::string::npos);
}

TEST(vllm, auto_fit_max_model_len) {
    const kvfit::model_desc m = catalog_model("Meta-Llama-3.1-8B");
    vllm_settings s;
    s.max_model_len = -1;
    s.kv_cache_memory_bytes = 1000ull * (2ull << 20);
    const auto p = kvfit::plan_vllm(m, s, {"GPU0", 24 * GiB});
    EXPECT_EQ(p.max_model_len, 16000u);
    EXPECT_TRUE(p.fits());
}

TEST(vllm, bad_input) {
    const kvfit::model_desc m = catalog_model("Qwen3.5-27B");
    vllm_settings s;
    s.tp = 5;
    EXPECT_THROW(
        {
            try {
                kvfit::plan_vllm(m, s, {"GPU0", 80 * GiB});
            } catch (const kvfit::error & e) {
                EXPECT_STREQ(e.what(), "Total number of attention heads (24) must be divisible by tensor parallel size (5).");
                throw;
            }
        },
        kvfit::error);
    s.tp = 1;
    s.kv_cache_dtype = "fp4";
    EXPECT_THROW(kvfit::plan_vllm(m, s, {"GPU0", 80 * GiB}), kvfit::error);
    s.kv_cache_dtype = "fp8_ds_mla";
    EXPECT_THROW(kvfit::plan_vllm(m, s, {"GPU0", 80 * GiB}), kvfit::error);
    s.kv_cache_dtype = "auto";
    s.max_model_len = 1 << 20;
    EXPECT_THROW(kvfit::plan_vllm(m, s, {"GPU0", 80 * GiB}), kvfit::error);
}

} // namespace

// vLLM's derived max_model_len scales max_position_embeddings by rope_scaling (vllm/config/model.py
// _get_and_verify_max_len): Qwen3-8B's config (40,960) with the yarn scaling Qwen documents for 131,072 tokens
// (factor 4 of original_max_position_embeddings 32,768) accepts --max-model-len 100,000 and defaults to 131,072; it was
// refused against max_position_embeddings. llama3 (Llama-3.1) and gemma3 are not scaled; DeepSeek-V3's yarn (40 x 4,096)
// and gpt-oss's (32 x 4,096) derive their own max_position_embeddings.
TEST(vllm_max_model_len, rope_scaling_derives_the_longest_length) {
    nlohmann::json j = nlohmann::json::parse(kvfit::test::shared_config("Qwen__Qwen3-8B.json"));
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
    kvfit::warnings w;
    const kvfit::model_desc m = kvfit::model_from_hf_config(j.dump(), "Qwen3-8B-yarn/config.json", w);
    EXPECT_EQ(m.n_ctx_train, 40960u);
    vllm_settings s;
    const kvfit::device_spec h100{"H100", 80ull * GiB};
    EXPECT_EQ(kvfit::plan_vllm(m, s, h100).max_model_len, 131072u);
    s.max_model_len = 100000;
    EXPECT_EQ(kvfit::plan_vllm(m, s, h100).max_model_len, 100000u);
    s.max_model_len = 140000;
    try {
        (void)kvfit::plan_vllm(m, s, h100);
        ADD_FAILURE() << "140,000 > 131,072 accepted";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("(max_position_embeddings=40960, rope_scaling yarn factor 4: 131072)"),
                  std::string::npos) << e.what();
    }
    for (const char * file : {"meta-llama__Meta-Llama-3.1-8B.json", "deepseek-ai__DeepSeek-V3.json", "openai__gpt-oss-20b.json"}) {
        kvfit::warnings ww;
        const kvfit::model_desc x = kvfit::model_from_hf_config(kvfit::test::shared_config(file), file, ww);
        EXPECT_EQ(kvfit::detail::vllm_derived_max_model_len(x), x.n_ctx_train) << file;
    }
    const auto derived = [&](const nlohmann::json & c) {
        kvfit::warnings wx;
        return kvfit::detail::vllm_derived_max_model_len(kvfit::model_from_hf_config(c.dump(), "edited/config.json", wx));
    };
    // yarn whose original_max_position_embeddings is the config's top-level key (patch_rope_parameters copies it)
    nlohmann::json top = nlohmann::json::parse(kvfit::test::shared_config("Qwen__Qwen3-8B.json"));
    top["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    top["original_max_position_embeddings"] = 32768;
    EXPECT_EQ(derived(top), 131072u);
    // transformers v5's rope_parameters per layer type: the loop's last factor scales (x8)
    nlohmann::json nested = nlohmann::json::parse(kvfit::test::shared_config("Qwen__Qwen3-8B.json"));
    nested["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}}},
                                 {"sliding_attention", {{"rope_type", "default"}}}};
    EXPECT_EQ(derived(nested), 40960u * 8);
    // a factor that is not a number, or yarn without its original length: vLLM fails, kvfit refuses by name
    nlohmann::json bad = top;
    bad["rope_scaling"]["factor"] = nullptr;
    EXPECT_THROW((void)derived(bad), kvfit::error);
    bad["rope_scaling"]["factor"] = "4.0";
    EXPECT_THROW((void)derived(bad), kvfit::error);
    // longrope (Phi-3): the default length is the top-level original_max_position_embeddings, the longest unscaled
    nlohmann::json lr = nlohmann::json::parse(kvfit::test::shared_config("Qwen__Qwen3-8B.json"));
    lr["max_position_embeddings"] = 131072;
    lr["original_max_position_embeddings"] = 4096;
    lr["rope_scaling"] = {{"rope_type", "longrope"}, {"long_factor", {1.0}}, {"short_factor", {1.0}}};
    kvfit::warnings wl;
    const kvfit::model_desc lm = kvfit::model_from_hf_config(lr.dump(), "phi3-like/config.json", wl);
    EXPECT_EQ(kvfit::detail::vllm_derived_max_model_len(lm), 131072u);
    const auto lp = kvfit::plan_vllm(lm, vllm_settings{}, h100);
    EXPECT_EQ(lp.max_model_len, 4096u);
    // where the length came from is said: longrope's default, and a factor's derived length
    EXPECT_NE(std::find(lp.notes.begin(), lp.notes.end(), "default --max-model-len 4096: longrope's "
                        "original_max_position_embeddings (of 131072 derived; config.py _get_and_verify_max_len)"),
              lp.notes.end());
    {
        kvfit::warnings wn;
        const auto np = kvfit::plan_vllm(kvfit::model_from_hf_config(nested.dump(), "edited/config.json", wn), vllm_settings{}, h100);
        EXPECT_EQ(np.max_model_len, 327680u);
        EXPECT_NE(std::find(np.notes.begin(), np.notes.end(), "derived max_model_len 327680 = max_position_embeddings 40960 x the config's rope_scaling (linear factor 8, default; "
                            "config.py _get_and_verify_max_len)"), np.notes.end())
            << ::testing::PrintToString(np.notes);
    }

    {   // a rope_scaling type no rule names is said in the plan's warnings (its factor still derives the length)
        nlohmann::json weird = nlohmann::json::parse(kvfit::test::shared_config("Qwen__Qwen3-8B.json"));
        weird["rope_scaling"] = {{"rope_type", "weird"}, {"factor", 4.0}};
        kvfit::warnings ww;
        const kvfit::model_desc wm = kvfit::model_from_hf_config(weird.dump(), "edited/config.json", ww);
        EXPECT_EQ(kvfit::detail::vllm_derived_max_model_len(wm), 163840u);
        std::vector<std::string> warn;
        kvfit::detail::serving_model_warnings("vllm", wm, warn);
        EXPECT_TRUE(std::any_of(warn.begin(), warn.end(), [](const std::string & w) {
            return w.starts_with("rope_scaling type 'weird' is not one kvfit knows");
        })) << ::testing::PrintToString(warn);
        warn.clear();
        kvfit::detail::serving_model_warnings("vllm", lm, warn); // longrope: known, no warning
        EXPECT_TRUE(std::none_of(warn.begin(), warn.end(), [](const std::string & w) { return w.starts_with("rope_scaling"); }));
    }

    nlohmann::json g = j;
    g["model_type"] = "gemma3_text"; // the architectures class stays Qwen3's: only model_type is read for the rule
    kvfit::warnings wg;
    EXPECT_EQ(kvfit::detail::vllm_derived_max_model_len(kvfit::model_from_hf_config(g.dump(), "gemma3-like.json", wg)), 40960u);
}
