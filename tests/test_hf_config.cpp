// config.json -> model description, checked against ../shared/configs/EXPECTED.md (every config there), plus
// the bad-input table. EXPECTED.md figures are llama.cpp's rules with f16 K/V, n_seq 1, n_ubatch 512.
#include "kvfit/error.h"
#include "kvfit/runtime.h"
#include "kvfit/sources.h"

#include "support/files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace {

using kvfit::test::shared_config;

struct expected_row {
    const char * file;
    const char * model_type;
    uint32_t n_layer;
    uint32_t n_full;       // full attention (MLA counted separately)
    uint32_t n_window;     // sliding or chunked
    uint32_t n_mla;
    uint32_t n_recurrent;
    uint32_t n_none;
    uint64_t kv_per_token;
    uint64_t kv_at_32768;
    uint64_t all_full_per_token;
    uint64_t state_per_seq;
};

// ../shared/configs/EXPECTED.md, one row per file.
const expected_row k_expected[] = {
    // file                                               model_type      n_layer full win mla rec none  kv/token   kv@32768        all-full  state/seq
    {"Qwen__Qwen2.5-7B.json",                              "qwen2",        28,  28,  0,  0,  0,  0,   57344,  1879048192ull,   57344,          0},
    {"Qwen__Qwen3-8B.json",                                "qwen3",        36,  36,  0,  0,  0,  0,  147456,  4831838208ull,  147456,          0},
    {"Qwen__Qwen3-Next-80B-A3B-Thinking.json",             "qwen3_next",   48,  12,  0,  0, 36,  0,   24576,   805306368ull,   98304,   79036416},
    {"Qwen__Qwen3.5-27B.json",                             "qwen3_5_text", 64,  16,  0,  0, 48,  0,   65536,  2147483648ull,  262144,  156893184},
    {"deepseek-ai__DeepSeek-V3.json",                      "deepseek_v3",  61,   0,  0, 61,  0,  0,   70272,  2302672896ull,   70272,          0},
    {"meta-llama__Llama-2-7b-hf.json",                     "llama",        32,  32,  0,  0,  0,  0,  524288, 17179869184ull,  524288,          0},
    {"meta-llama__Llama-4-Scout-17B-16E-Instruct.json",    "llama4_text",  48,  12, 36,  0,  0,  0,   49152,  2894069760ull,  196608,          0},
    {"meta-llama__Meta-Llama-3.1-8B.json",                 "llama",        32,  32,  0,  0,  0,  0,  131072,  4294967296ull,  131072,          0},
    {"mistralai__Mixtral-8x7B-v0.1.json",                  "mixtral",      32,  32,  0,  0,  0,  0,  131072,  4294967296ull,  131072,          0},
    {"nvidia__Llama-3_3-Nemotron-Super-49B-v1.json",       "nemotron-nas", 80,  49,  0,  0,  0, 31,  200704,  6576668672ull,  327680,          0},
    {"nvidia__Nemotron-H-56B-Base-8K.json",                "nemotron_h",  118,  10,  0,  0, 54, 54,   40960,  1342177280ull,  483328,  919240704},
    {"openai__gpt-oss-20b.json",                           "gpt_oss",      24,  12, 12,  0,  0,  0,   24576,   824180736ull,   49152,          0},
};

uint64_t kv_bytes_at(const kvfit::model_desc & m, uint64_t n_ctx) {
    kvfit::llamacpp_settings s; // f16/f16, n_seq 1, n_ubatch 512
    s.n_ctx = n_ctx;
    const auto c = kvfit::llamacpp_context_size(m, s);
    uint64_t total = 0;
    for (const auto & kv : kvfit::llamacpp_kv_caches(m, s, c)) total += kv.bytes();
    return total;
}

uint64_t state_bytes(const kvfit::model_desc & m) {
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    return kvfit::llamacpp_recurrent(m, kvfit::llamacpp_context_size(m, s)).bytes();
}

class expected_md : public ::testing::TestWithParam<expected_row> {};

TEST_P(expected_md, layers_kv_and_state_match) {
    const expected_row & r = GetParam();
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(shared_config(r.file), r.file, warn);
    EXPECT_TRUE(warn.empty()) << r.file << ": " << (warn.empty() ? "" : warn.front());
    EXPECT_EQ(m.architecture, r.model_type) << r.file;
    EXPECT_EQ(m.n_layer, r.n_layer) << r.file;
    EXPECT_EQ(m.count(kvfit::layer_kind::full), r.n_full) << r.file;
    EXPECT_EQ(m.count(kvfit::layer_kind::swa) + m.count(kvfit::layer_kind::chunked), r.n_window) << r.file;
    EXPECT_EQ(m.count(kvfit::layer_kind::mla), r.n_mla) << r.file;
    EXPECT_EQ(m.count(kvfit::layer_kind::recurrent), r.n_recurrent) << r.file;
    EXPECT_EQ(m.count(kvfit::layer_kind::none), r.n_none) << r.file;
    using kvfit::ggml_type;
    EXPECT_EQ(kvfit::kv_bytes_per_token(m, ggml_type::f16, ggml_type::f16), r.kv_per_token) << r.file;
    EXPECT_EQ(kv_bytes_at(m, 32768), r.kv_at_32768) << r.file;
    EXPECT_EQ(kvfit::kv_bytes_per_token_if_all_full(m, ggml_type::f16, ggml_type::f16), r.all_full_per_token) << r.file;
    EXPECT_EQ(state_bytes(m), r.state_per_seq) << r.file;
}

INSTANTIATE_TEST_SUITE_P(shared_configs, expected_md, ::testing::ValuesIn(k_expected));

kvfit::model_desc load_shared(const char * file) {
    kvfit::warnings warn;
    return kvfit::model_from_hf_config(shared_config(file), file, warn);
}

TEST(hf_config, qwen3_next_gated_deltanet_dims_and_layout) {
    const auto m = load_shared("Qwen__Qwen3-Next-80B-A3B-Thinking.json");
    EXPECT_EQ(m.rec_kind, kvfit::recurrent_kind::gated_deltanet);
    EXPECT_EQ(m.ssm_d_inner, 32u * 128u);
    EXPECT_EQ(m.ssm_n_group, 16u);
    EXPECT_EQ(m.ssm_d_state, 128u);
    EXPECT_EQ(m.ssm_d_conv, 4u);
    EXPECT_EQ(m.ssm_n_head, 32u);
    EXPECT_EQ(m.ssm_head_dim, 128u);
    // il 0, 1, 2 recurrent, il 3 full, ...
    EXPECT_EQ(m.kind_of(2), kvfit::layer_kind::recurrent);
    EXPECT_EQ(m.kind_of(3), kvfit::layer_kind::full);
    EXPECT_EQ(m.kind_of(47), kvfit::layer_kind::full);
    EXPECT_EQ(m.n_expert, 512u);
    EXPECT_EQ(m.n_expert_used, 10u);
    EXPECT_EQ(m.n_ff_exp, 512u);
    EXPECT_EQ(m.n_ff_shexp, 512u);
    EXPECT_EQ(m.is_moe[0], 1u);
    EXPECT_EQ(m.n_ctx_train, 262144u);
    EXPECT_EQ(m.n_vocab, 151936u);
}

TEST(hf_config, text_config_wrapper_and_mtp) {
    const auto m = load_shared("Qwen__Qwen3.5-27B.json");
    EXPECT_EQ(m.n_embd, 5120u);
    EXPECT_EQ(m.n_layer_mtp, 1u);
    EXPECT_FALSE(m.tied_embeddings); // from the wrapper's top level
    EXPECT_EQ(m.n_head_kv[3], 4u);
    EXPECT_EQ(m.head_dim_k[3], 256u);
    EXPECT_EQ(m.n_head_kv[0], 0u);
    EXPECT_EQ(m.n_ff[0], 17408u);
}

TEST(hf_config, llama4_every_fourth_layer_global) {
    const auto m = load_shared("meta-llama__Llama-4-Scout-17B-16E-Instruct.json");
    EXPECT_EQ(m.n_chunk, 8192u);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        EXPECT_EQ(m.kind_of(il), (il + 1) % 4 == 0 ? kvfit::layer_kind::full : kvfit::layer_kind::chunked) << il;
    }
    EXPECT_EQ(m.n_ctx_train, 10485760u);
    EXPECT_EQ(m.n_expert, 16u);
    EXPECT_EQ(m.n_expert_used, 1u);
}

TEST(hf_config, deepseek_mla_shape_and_dense_prefix) {
    const auto m = load_shared("deepseek-ai__DeepSeek-V3.json");
    EXPECT_EQ(m.n_head_kv[0], 1u);
    EXPECT_EQ(m.head_dim_k[0], 576u);
    EXPECT_EQ(m.head_dim_v[0], 512u);
    EXPECT_EQ(m.n_layer_mtp, 1u);
    EXPECT_EQ(m.is_moe[2], 0u);
    EXPECT_EQ(m.n_ff[2], 18432u);
    EXPECT_EQ(m.is_moe[3], 1u);
    EXPECT_EQ(m.n_expert_shared, 1u);
}

TEST(hf_config, nemotron_h_mamba2_and_nas_heads) {
    const auto h = load_shared("nvidia__Nemotron-H-56B-Base-8K.json"); // has a bare Infinity
    EXPECT_EQ(h.rec_kind, kvfit::recurrent_kind::mamba2);
    EXPECT_EQ(h.ssm_d_inner, 256u * 64u);
    EXPECT_EQ(h.ssm_n_group, 8u);
    EXPECT_EQ(h.kind_of(0), kvfit::layer_kind::recurrent);
    EXPECT_EQ(h.kind_of(1), kvfit::layer_kind::none);
    EXPECT_EQ(h.kind_of(7), kvfit::layer_kind::full);
    const auto nas = load_shared("nvidia__Llama-3_3-Nemotron-Super-49B-v1.json");
    EXPECT_EQ(nas.n_head_kv[0], 8u);
    EXPECT_EQ(nas.n_ff[0], 14336u); // ffn_mult 2.625: _find_multiple(int(2*2.625*8192/3), 256)
    EXPECT_EQ(nas.n_ff[1], 28672u); // ffn_mult 5.25
}

TEST(hf_config, sliding_window_rules) {
    EXPECT_EQ(load_shared("openai__gpt-oss-20b.json").n_swa, 128u);
    EXPECT_EQ(load_shared("Qwen__Qwen2.5-7B.json").n_swa, 0u); // use_sliding_window false
    EXPECT_EQ(load_shared("mistralai__Mixtral-8x7B-v0.1.json").n_swa, 0u); // sliding_window null
    kvfit::warnings warn;
    const auto mistral = kvfit::model_from_hf_config(
        R"({"model_type":"mistral","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,
            "num_key_value_heads":2,"vocab_size":100,"intermediate_size":128,"sliding_window":4096,
            "max_position_embeddings":32768})", "mistral.json", warn);
    EXPECT_EQ(mistral.count(kvfit::layer_kind::swa), 2u);
    EXPECT_EQ(mistral.n_swa, 4096u);
}

TEST(hf_config, unknown_model_type_falls_back_with_warning) {
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(
        R"({"model_type":"brand_new","num_hidden_layers":4,"hidden_size":256,"num_attention_heads":8,
            "vocab_size":1000,"intermediate_size":512,"max_position_embeddings":4096})", "new.json", warn);
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_EQ(warn[0], "new.json: unknown model_type 'brand_new': assumed a dense decoder (layer_types if present, "
                       "else full attention on every layer; gated FFN of intermediate_size; untied unless "
                       "tie_word_embeddings)");
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 4u);
    EXPECT_EQ(m.n_head_kv[0], 8u); // MHA: num_key_value_heads absent
    EXPECT_EQ(m.head_dim_k[0], 32u); // 256 / 8
}


// --- bad inputs: each row must throw kvfit::error with exactly this message -----------------------------

constexpr const char * k_base = R"({"model_type":"llama","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,
  "num_key_value_heads":2,"vocab_size":100,"intermediate_size":128,"max_position_embeddings":2048})";

struct bad_row {
    const char * name;
    const char * key;    // key of k_base to change; nullptr: `value` is the whole text
    const char * value;  // JSON value for the key; "<erase>" removes it
    const char * message;
};

const bad_row k_bad[] = {
    {"not_json",              nullptr, "config, not json",
     "bad.json: not valid JSON: parse error at line 1, column 1: syntax error while parsing value - invalid literal; last read: 'c'"},
    {"truncated",             nullptr, R"({"num_hidden_layers": 2,)",
     "bad.json: not valid JSON: parse error at line 1, column 25: syntax error while parsing object key - unexpected end of input; expected string literal"},
    {"not_an_object",         nullptr, "[1, 2]",                     "bad.json: expected a JSON object, got array"},
    {"missing_layers",        "num_hidden_layers", "<erase>",        "bad.json: missing required key 'num_hidden_layers'"},
    {"missing_vocab",         "vocab_size", "<erase>",               "bad.json: missing required key 'vocab_size'"},
    {"null_hidden_size",      "hidden_size", "null",                 "bad.json: key 'hidden_size': expected integer, got null"},
    {"zero_heads",            "num_attention_heads", "0",            "bad.json: key 'num_attention_heads': must be positive, got 0"},
    {"negative_layers",       "num_hidden_layers", "-2",             "bad.json: key 'num_hidden_layers': must be positive, got -2"},
    {"negative_kv_heads",     "num_key_value_heads", "-8",           "bad.json: key 'num_key_value_heads': must be positive, got -8"},
    {"string_kv_heads",       "num_key_value_heads", "\"8\"",        "bad.json: key 'num_key_value_heads': expected integer, got string"},
    {"fractional_layers",     "num_hidden_layers", "4.5",            "bad.json: key 'num_hidden_layers': expected integer, got 4.5"},
    {"bool_hidden_size",      "hidden_size", "true",                 "bad.json: key 'hidden_size': expected integer, got boolean"},
    {"absurd_layers",         "num_hidden_layers", "200000",         "bad.json: key 'num_hidden_layers': 200000 exceeds the limit 4096"},
    {"absurd_hidden_size",    "hidden_size", "1000000000000",        "bad.json: key 'hidden_size': 1000000000000 exceeds the limit 16777216"},
    {"heads_not_dividing",    "num_attention_heads", "3",
     "bad.json: key 'num_key_value_heads': 2 does not divide num_attention_heads 3"},
    {"heads_not_dividing_embd", "hidden_size", "66",
     "bad.json: key 'num_attention_heads': 4 does not divide hidden_size 66 and head_dim is absent"},
    {"string_model_type",     "model_type", "7",                     "bad.json: key 'model_type': expected string, got 7"},
    {"text_config_missing",   nullptr, R"({"model_type":"llama4","text_config":{"hidden_size":64}})",
     "bad.json: missing required key 'text_config.num_hidden_layers'"},
    {"text_config_not_object", nullptr, R"({"text_config":[1]})",     "bad.json: key 'text_config': expected object, got array"},
    {"layer_types_short",     nullptr,
     R"({"model_type":"gpt_oss","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"layer_types":["full_attention"]})",
     "bad.json: key 'layer_types': has 1 entries for num_hidden_layers 2"},
    {"layer_types_unknown",   nullptr,
     R"({"model_type":"gpt_oss","num_hidden_layers":1,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"layer_types":["magic_attention"]})",
     "bad.json: key 'layer_types': entry 0: unknown layer type 'magic_attention'"},
    {"gdn_key_missing",       nullptr,
     R"({"model_type":"qwen3_5_text","num_hidden_layers":4,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"full_attention_interval":4})",
     "bad.json: missing required key 'linear_num_key_heads'"},
    {"hybrid_bad_block",      nullptr,
     R"({"model_type":"nemotron_h","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"hybrid_override_pattern":"M?"})",
     "bad.json: key 'hybrid_override_pattern': block 1: '?' is not one of M * - E"},
    {"block_configs_null_group", nullptr,
     R"({"model_type":"nemotron-nas","num_hidden_layers":1,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "block_configs":[{"attention":{"no_op":false,"n_heads_in_group":null},"ffn":{"ffn_mult":1.0}}]})",
     "bad.json: key 'block_configs[0].attention.n_heads_in_group': expected integer, got null"},
    {"experts_used_too_many", nullptr,
     R"({"model_type":"mixtral","num_hidden_layers":1,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"num_local_experts":8,"num_experts_per_tok":9})",
     "bad.json: key 'num_experts_per_tok': 9 exceeds the 8 routed experts"},
};

class bad_input : public ::testing::TestWithParam<bad_row> {};

TEST_P(bad_input, throws_one_line_message) {
    const bad_row & r = GetParam();
    std::string text = r.value;
    if (r.key != nullptr) {
        auto j = nlohmann::json::parse(k_base);
        if (std::string(r.value) == "<erase>") j.erase(r.key);
        else j[r.key] = nlohmann::json::parse(r.value);
        text = j.dump();
    }
    kvfit::warnings warn;
    try {
        kvfit::model_from_hf_config(text, "bad.json", warn);
        FAIL() << r.name << ": no exception";
    } catch (const kvfit::error & e) {
        EXPECT_EQ(std::string(e.what()), r.message) << r.name;
    }
}

INSTANTIATE_TEST_SUITE_P(table, bad_input, ::testing::ValuesIn(k_bad),
                         [](const auto & info) { return std::string(info.param.name); });

} // namespace
