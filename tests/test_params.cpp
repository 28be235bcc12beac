// Parameter counts from config.json shapes against published totals (within 1%; all match exactly).
// Sources of the published totals: the HF model pages' safetensors parameter count (Llama-3.1-8B, Llama-2-7b,
// Qwen2.5-7B, Mixtral-8x7B) and transformers' num_parameters() of Qwen3-Next-80B-A3B, which does not build the
// MTP block: 79,674,391,296 is the count without it (with the MTP block: 81,324,862,720).
#include "kvfit/error.h"
#include "kvfit/sources.h"

#include "support/files.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

kvfit::model_desc load_shared(const std::string & file) {
    kvfit::warnings warn;
    return kvfit::model_from_hf_config(kvfit::test::shared_config(file), file, warn);
}

struct published_row {
    const char * file;
    uint64_t published;   // total parameters as published
    uint64_t computed;    // what kvfit computes today (pins the rules; update with a reason)
};

const published_row k_published[] = {
    {"meta-llama__Meta-Llama-3.1-8B.json",               8030261248ull,  8030261248ull},
    {"meta-llama__Llama-2-7b-hf.json",                   6738415616ull,  6738415616ull},
    {"Qwen__Qwen2.5-7B.json",                            7615616512ull,  7615616512ull},
    {"mistralai__Mixtral-8x7B-v0.1.json",                46702792704ull, 46702792704ull},
    {"Qwen__Qwen3-Next-80B-A3B-Thinking.json",           79674391296ull, 79674391296ull},
    // The rest: totals as usually quoted; kvfit counts the text model without MTP blocks or vision tower.
    {"Qwen__Qwen3-8B.json",                              8190735360ull,  8190735360ull},
    {"openai__gpt-oss-20b.json",                         20914757184ull, 20914757184ull},
    {"nvidia__Llama-3_3-Nemotron-Super-49B-v1.json",     49867145216ull, 49867145216ull},
    {"deepseek-ai__DeepSeek-V3.json",                    671026419200ull, 671026419200ull}, // 671B + 14B MTP = 685B
};

class published : public ::testing::TestWithParam<published_row> {};

TEST_P(published, total_within_one_percent) {
    const auto & r = GetParam();
    const auto m = load_shared(r.file);
    const double diff = std::fabs(double(m.n_params()) - double(r.published)) / double(r.published);
    EXPECT_LT(diff, 0.01) << r.file << ": published " << r.published << ", got " << m.n_params();
    EXPECT_EQ(m.n_params(), r.computed) << r.file;
}

INSTANTIATE_TEST_SUITE_P(shared_configs, published, ::testing::ValuesIn(k_published),
                         [](const auto & info) { return kvfit::test::test_name_of_file(info.param.file); });

TEST(params, groups_of_llama_3_1_8b) {
    const auto m = load_shared("meta-llama__Meta-Llama-3.1-8B.json");
    EXPECT_EQ(m.weights.token_embd.n_params, 128256ull * 4096);
    EXPECT_EQ(m.weights.output.n_params, 128256ull * 4096 + 4096); // head + final norm
    // q 4096^2, k/v 4096x1024, o 4096^2, MLP 3 x 4096 x 14336, 2 norms
    EXPECT_EQ(m.weights.layers[0].n_params, 2ull * 4096 * 4096 + 2ull * 4096 * 1024 + 3ull * 4096 * 14336 + 2 * 4096);
    EXPECT_EQ(m.weights.total_bytes(), 0u);
}

TEST(params, mixtral_experts_are_expert_params) {
    const auto m = load_shared("mistralai__Mixtral-8x7B-v0.1.json");
    EXPECT_EQ(m.weights.layers[0].expert_params, 8ull * 3 * 4096 * 14336);
    EXPECT_EQ(m.weights.expert_params(), 32ull * 8 * 3 * 4096 * 14336);
}

TEST(params, tied_embeddings_leave_output_empty) {
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(
        R"({"model_type":"llama","num_hidden_layers":1,"hidden_size":64,"num_attention_heads":4,"vocab_size":100,
            "intermediate_size":128,"tie_word_embeddings":true,"max_position_embeddings":2048})", "tied.json", warn);
    EXPECT_EQ(m.weights.output.n_params, 0u);
    EXPECT_EQ(m.weights.token_embd.n_params, 6400u);
    EXPECT_EQ(m.weights.other.n_params, 64u); // final norm
}

TEST(params, gated_deltanet_layer_of_qwen3_next) {
    const auto m = load_shared("Qwen__Qwen3-Next-80B-A3B-Thinking.json");
    const uint64_t moe = 2048ull * 512 + 512ull * 3 * 2048 * 512 + 3ull * 2048 * 512 + 2048;
    // in_proj_qkvz 2048 x 12288, in_proj_ba 2048 x 64, conv 8192 x 4, dt_bias + A_log 64, norm 128, out 4096 x 2048
    const uint64_t gdn = 2048ull * 12288 + 2048 * 64 + 8192 * 4 + 64 + 128 + 4096ull * 2048;
    EXPECT_EQ(m.weights.layers[0].n_params, gdn + moe + 2 * 2048);
}

TEST(params, weight_formats) {
    auto m = load_shared("meta-llama__Meta-Llama-3.1-8B.json");
    kvfit::apply_weight_format(m, "Q4_K_M");
    EXPECT_EQ(m.weights.format, "q4_k_m");
    // 4.58 GiB as llama-quantize reports for Llama-3-8B Q4_K_M
    EXPECT_NEAR(double(m.weights.total_bytes()) / (1ull << 30), 4.58, 0.001);
    kvfit::apply_weight_format(m, "f16");
    EXPECT_EQ(m.weights.total_bytes(), 2 * m.n_params());
    EXPECT_EQ(m.weights.layers[0].bytes, 2 * m.weights.layers[0].n_params);
    for (const auto & f : kvfit::weight_formats()) {
        EXPECT_GT(f.bits_per_weight, 1.0) << f.name;
        EXPECT_FALSE(f.source.empty()) << f.name;
    }
    try {
        kvfit::apply_weight_format(m, "q9_k");
        FAIL() << "no throw";
    } catch (const kvfit::error & e) {
        EXPECT_EQ(std::string(e.what()).substr(0, 55), "unknown weight format 'q9_k' (known: f32, f16, bf16, q8");
    }
}

TEST(params, exact_weights_kept_unless_forced) {
    auto m = load_shared("Qwen__Qwen3-8B.json");
    m.weights.exact = true;
    m.weights.layers[0].bytes = 7;
    kvfit::apply_weight_format(m, "q8_0");
    EXPECT_EQ(m.weights.layers[0].bytes, 7u);
    kvfit::apply_weight_format(m, "q8_0", true);
    EXPECT_NE(m.weights.layers[0].bytes, 7u);
    EXPECT_FALSE(m.weights.exact);
}

TEST(params, weight_size_spread_by_params) {
    auto m = load_shared("Qwen__Qwen3-Next-80B-A3B-Thinking.json");
    const uint64_t total = 48'000'000'000ull;
    kvfit::apply_weight_size(m, total);
    EXPECT_EQ(m.weights.total_bytes(), total);
    EXPECT_EQ(m.weights.format, "given");
    const double share = double(m.weights.layers[5].bytes) / double(total);
    EXPECT_NEAR(share, double(m.weights.layers[5].n_params) / double(m.n_params()), 1e-9);
    kvfit::model_desc empty;
    empty.name = "empty";
    try {
        kvfit::apply_weight_size(empty, total);
        FAIL() << "no throw";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "empty: no parameter count to spread a weight size over");
    }
}

} // namespace
