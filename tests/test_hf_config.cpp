// config.json -> model description, checked against ../shared/configs/EXPECTED.md (every config there), plus
// the bad-input table. EXPECTED.md figures are llama.cpp's rules with f16 K/V, n_seq 1, n_ubatch 512.
#include "kvfit/error.h"
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"

#include "support/files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
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

INSTANTIATE_TEST_SUITE_P(shared_configs, expected_md, ::testing::ValuesIn(k_expected),
                         [](const auto & info) { return kvfit::test::test_name_of_file(info.param.file); });

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
    // the MTP block as llama.cpp's converter writes it (conversion/qwen.py _QwenMtpMixin: block_count 65, loaded
    // unused, counted by -ngl as the Qwen3.6-27B-MTP log's 66/66 layers show: tests/data/gpu_logs)
    EXPECT_EQ(m.n_layer_mtp, 1u);
    EXPECT_EQ(m.n_layer_mtp_apart, 1u);
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
    // llama.cpp's converter drops DeepSeek-V3's NextN block (conversion/deepseek.py DeepseekV2Model skip_mtp)
    EXPECT_EQ(m.n_layer_mtp, 0u);
    EXPECT_EQ(m.n_layer_mtp_apart, 1u);
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

// Qwen3-Next without full_attention_interval: Qwen3NextConfig's default 4 places the layers (as transformers and vLLM
// read the file), with a warning naming the key; never 48 full-attention layers.
TEST(hf_config, qwen3_next_interval_default_is_planned_and_warned) {
    std::string text = shared_config("Qwen__Qwen3-Next-80B-A3B-Thinking.json");
    const std::string key = "\"full_attention_interval\"";
    const size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos);
    const size_t end = text.find_first_of(",}", at);
    text.replace(at, end - at, "\"full_attention_interval_removed\": 0");
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(text, "qwen3-next.json", warn);
    const auto stated = load_shared("Qwen__Qwen3-Next-80B-A3B-Thinking.json");
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 12u);
    EXPECT_EQ(m.count(kvfit::layer_kind::recurrent), 36u);
    EXPECT_EQ(m.count(kvfit::layer_kind::full), stated.count(kvfit::layer_kind::full));
    bool named = false;
    for (const auto & w : warn) named |= w.find("full_attention_interval absent: the configuration's default 4") != std::string::npos;
    EXPECT_TRUE(named);
}

// Granite 3 and OLMo 2 are llama.cpp architectures (models/granite.cpp, models/olmo2.cpp): planned with no "unknown
// architecture" warning. ibm-granite/granite-3.1-8b-instruct: 40 layers x 8 KV heads x 128; allenai/OLMo-2-1124-7B:
// 32 layers x 32 KV heads x 128.
TEST(hf_config, granite_and_olmo2_are_known_architectures) {
    struct row { const char * text; const char * arch; uint64_t kv_per_token; };
    const row rows[] = {
        {R"({"architectures":["GraniteForCausalLM"],"model_type":"granite","hidden_size":4096,"intermediate_size":12800,
            "num_hidden_layers":40,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":49155,
            "max_position_embeddings":131072,"tie_word_embeddings":true,"attention_multiplier":0.0078125,
            "embedding_multiplier":12.0,"logits_scaling":16.0,"residual_multiplier":0.22})", "granite", 40ull * 8 * 128 * 4},
        {R"({"architectures":["Olmo2ForCausalLM"],"model_type":"olmo2","hidden_size":4096,"intermediate_size":11008,
            "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,"vocab_size":100352,
            "max_position_embeddings":4096,"rms_norm_eps":1e-06})", "olmo2", 32ull * 32 * 128 * 4},
    };
    for (const auto & r : rows) {
        kvfit::warnings warn;
        const auto m = kvfit::model_from_hf_config(r.text, "config.json", warn);
        EXPECT_EQ(m.gguf_architecture, r.arch);
        for (const auto & w : warn) EXPECT_EQ(w.find("unknown architecture"), std::string::npos) << w;
        uint64_t kv = 0;
        for (uint32_t il = 0; il < m.n_layer; ++il) kv += 2ull * m.n_embd_k_gqa(il) * 2; // f16 K and V, plain attention
        EXPECT_EQ(kv, r.kv_per_token) << r.arch;
    }
}

TEST(hf_config, unknown_model_type_falls_back_with_warning) {
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(
        R"({"model_type":"brand_new","num_hidden_layers":4,"hidden_size":256,"num_attention_heads":8,
            "vocab_size":1000,"intermediate_size":512,"max_position_embeddings":4096})", "new.json", warn);
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_EQ(warn[0], "new.json: unknown architecture ('brand_new'): planned from its keys alone; no llama.cpp "
                       "architecture is known for it");
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
    {"absurd_layers",         "num_hidden_layers", "200000",         "bad.json: key 'num_hidden_layers': too large (at most 4096), got 200000"},
    {"absurd_hidden_size",    "hidden_size", "1000000000000",        "bad.json: key 'hidden_size': too large (at most 16777216), got 1000000000000"},
    // a training context beyond the -c limit was searched as a -c the user never gave ("-c 4294967552: exceeds the limit")
    {"absurd_training_context", "max_position_embeddings", "4294967552",
     "bad.json: key 'max_position_embeddings': too large (at most 4294967296), got 4294967552"},
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
     "bad.json: model_type 'gpt_oss': layer_types[0] 'magic_attention': a layer kind kvfit does not know"},
    {"gdn_key_missing",       nullptr,
     R"({"model_type":"qwen3_5_text","num_hidden_layers":4,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"full_attention_interval":4})",
     "bad.json: missing required key 'linear_num_key_heads'"},
    {"hybrid_bad_block",      nullptr,
     R"({"model_type":"nemotron_h","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"hybrid_override_pattern":"M?"})",
     "bad.json: model_type 'nemotron_h': hybrid_override_pattern[1] '?': a layer kind kvfit does not know"},
    {"block_configs_null_group", nullptr,
     R"({"model_type":"nemotron-nas","num_hidden_layers":1,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "block_configs":[{"attention":{"no_op":false,"n_heads_in_group":null},"ffn":{"ffn_mult":1.0}}]})",
     "bad.json: key 'block_configs[0].attention.n_heads_in_group': expected integer, got null"},
    // 2026 refusals: each names the real cause (issue 12). Small configs in the families' own keys.
    {"glm5_2_sparse_attention", nullptr,
     R"({"architectures":["Glm5_2ForCausalLM"],"model_type":"glm5_2","num_hidden_layers":4,"hidden_size":64,
        "num_attention_heads":4,"num_key_value_heads":4,"vocab_size":10,"intermediate_size":8,"kv_lora_rank":16,
        "qk_rope_head_dim":8,"qk_nope_head_dim":8,"v_head_dim":8,"q_lora_rank":16,
        "layer_types":["full_attention","full_attention","full_attention","deepseek_sparse_attention"]})",
     "bad.json: model_type 'glm5_2': layer_types[3] 'deepseek_sparse_attention': DeepSeek sparse attention (MLA with an "
     "indexer) needs kv_lora_rank, index_head_dim and index_n_heads"},
    {"nemotron3_ultra_block_type", nullptr,
     R"({"architectures":["NemotronHForCausalLM"],"model_type":"nemotron_h","hidden_size":64,"num_attention_heads":4,
        "num_key_value_heads":2,"head_dim":16,"vocab_size":10,"intermediate_size":8,"mamba_num_heads":4,
        "mamba_head_dim":16,"ssm_state_size":8,"n_groups":1,"conv_kernel":4,
        "layers_block_type":["mamba","moe","attention","gated_delta_net"]})",
     "bad.json: model_type 'nemotron_h': layers_block_type[3] 'gated_delta_net': a layer kind kvfit does not know"},
    {"deepseek_v4_ratio", nullptr,
     R"({"architectures":["DeepseekV4ForCausalLM"],"model_type":"deepseek_v4","num_hidden_layers":2,"hidden_size":64,
        "num_attention_heads":4,"num_key_value_heads":1,"head_dim":32,"vocab_size":10,"sliding_window":128,
        "index_head_dim":16,"index_n_heads":2,"compress_ratios":[4,16,0]})",
     "bad.json: model_type 'deepseek_v4': compress_ratios[1] 16: llama.cpp's DeepSeek-V4 loader supports the ratios 0, 4 and 128 only"},
    {"deepseek_v4_ratios_short", nullptr,
     R"({"model_type":"deepseek_v4","num_hidden_layers":3,"hidden_size":64,"num_attention_heads":4,
        "num_key_value_heads":1,"head_dim":32,"vocab_size":10,"sliding_window":128,"compress_ratios":[4,128]})",
     "bad.json: key 'compress_ratios': has 2 entries for num_hidden_layers 3"},
    // the MLA-looking head keys of DeepSeek-V4 (qk_rope_head_dim, o_lora_rank) used to be refused as "MLA without
    // kv_lora_rank", naming a key the model never has
    {"deepseek_v4_no_ratios", nullptr,
     R"({"architectures":["DeepseekV4ForCausalLM"],"model_type":"deepseek_v4","num_hidden_layers":2,"hidden_size":64,
        "num_attention_heads":4,"num_key_value_heads":1,"head_dim":32,"vocab_size":10,"sliding_window":128,
        "qk_rope_head_dim":8,"o_lora_rank":16,"index_head_dim":16,"index_n_heads":2})",
     "bad.json: model_type 'deepseek_v4': compress_ratios is missing: deepseek4 keeps a sliding window on every layer "
     "plus compressed caches placed by compress_ratios (one ratio per layer), so its caches cannot be planned without it"},
    {"kimi_k3_kda_heads", nullptr,
     R"({"architectures":["KimiK3ForConditionalGeneration"],"model_type":"kimi_k3","num_hidden_layers":4,
        "hidden_size":64,"num_attention_heads":4,"num_key_value_heads":4,"vocab_size":10,"intermediate_size":8,
        "kv_lora_rank":16,"qk_rope_head_dim":8,"qk_nope_head_dim":8,"v_head_dim":8,
        "linear_attn_config":{"full_attn_layers":[4],"kda_layers":[1,2,3],"head_dim":16,"short_conv_kernel_size":4}})",
     "bad.json: missing required key 'linear_attn_config.num_heads'"},
    {"unknown_sliding_window", nullptr,
     R"({"model_type":"brand_new","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"sliding_window":4096})",
     "bad.json: model_type 'brand_new': sliding_window 4096 without layer_types, use_sliding_window or "
     "sliding_window_pattern: which layers slide is not stated"},
    {"unknown_chunked", nullptr,
     R"({"model_type":"brand_new","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"attention_chunk_size":8192})",
     "bad.json: model_type 'brand_new': attention_chunk_size 8192 without no_rope_layers: which layers are chunked is not stated"},
    {"mimo_pattern_value", nullptr,
     R"({"model_type":"mimo_v2_flash","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"sliding_window":128,"hybrid_layer_pattern":[0,2]})",
     "bad.json: model_type 'mimo_v2_flash': hybrid_layer_pattern[1] '2': a layer kind kvfit does not know"},
    {"indexer_types_value", nullptr,
     R"({"model_type":"glm_moe_dsa","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"kv_lora_rank":16,"qk_rope_head_dim":8,"qk_nope_head_dim":8,"v_head_dim":8,
        "q_lora_rank":16,"index_head_dim":8,"index_n_heads":2,"indexer_types":["full","sometimes"]})",
     "bad.json: model_type 'glm_moe_dsa': indexer_types[1] 'sometimes': a layer kind kvfit does not know"},
    // keys that change memory with nothing that places them: refused by name, never planned as plain attention
    {"mla_without_latent", nullptr,
     R"({"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","num_hidden_layers":2,"hidden_size":64,
        "num_attention_heads":4,"num_key_value_heads":4,"vocab_size":10,"intermediate_size":8,"qk_rope_head_dim":8,
        "qk_nope_head_dim":8,"v_head_dim":8,"q_lora_rank":16})",
     "bad.json: model_type 'deepseek_v3': qk_rope_head_dim / qk_nope_head_dim (MLA) without kv_lora_rank: the latent "
     "width of the cache is not stated"},
    {"linear_keys_unplaced", nullptr,
     R"({"model_type":"brand_new","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"linear_num_value_heads":4,"linear_num_key_heads":2,"linear_key_head_dim":16,
        "linear_value_head_dim":16,"linear_conv_kernel_dim":4})",
     "bad.json: model_type 'brand_new': linear_num_value_heads / linear_conv_kernel_dim without layer_types or "
     "full_attention_interval: which layers are linear attention is not stated"},
    {"falcon_h1_parallel_mamba", nullptr,
     R"({"architectures":["FalconH1ForCausalLM"],"model_type":"falcon_h1","num_hidden_layers":2,"hidden_size":64,
        "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":10,"intermediate_size":8,"mamba_d_ssm":128,
        "mamba_d_state":16,"mamba_n_heads":8,"mamba_d_conv":4,"mamba_n_groups":1})",
     "bad.json: model_type 'falcon_h1': mamba_d_ssm (a Mamba state) but no layer is placed as Mamba: kvfit does not "
     "model this layout from config.json (plan the model's GGUF)"},
    {"layer_types_long",      nullptr,
     R"({"model_type":"qwen3_5_text","num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":10,
        "intermediate_size":8,"layer_types":["full_attention","full_attention","full_attention"]})",
     "bad.json: key 'layer_types': has 3 entries for num_hidden_layers 2"},
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

// --- unknown names: the keys alone give the same model, or kvfit refuses ---------------------------------------

// Every shared config with model_type and architectures (top level and text_config) renamed to names no row knows.
// The description is the same (caches exact, heads exact, parameters within 1 %) or loading is refused; a different
// description with only a warning is the failure this test exists for.
class renamed : public ::testing::TestWithParam<const char *> {};

TEST_P(renamed, same_model_or_refused) {
    const std::string file = GetParam();
    const std::string text = shared_config(file);
    kvfit::warnings warn;
    const auto want = kvfit::model_from_hf_config(text, file, warn);
    std::string plain = text; // Python's bare Infinity (Nemotron's time_step_limit): a number kvfit never reads
    for (size_t at = plain.find("Infinity"); at != std::string::npos; at = plain.find("Infinity")) plain.replace(at, 8, "1e308");
    auto j = nlohmann::json::parse(plain);
    for (auto * obj : {&j, j.contains("text_config") ? &j["text_config"] : nullptr}) {
        if (obj == nullptr || !obj->is_object()) continue;
        if (obj->contains("model_type")) (*obj)["model_type"] = "zz_renamed";
        if (obj->contains("architectures")) (*obj)["architectures"] = {"ZzRenamedForCausalLM"};
    }
    kvfit::warnings warn2;
    try {
        const auto got = kvfit::model_from_hf_config(j.dump(), file, warn2);
        EXPECT_FALSE(warn2.empty()) << file << ": an unknown name must be named in a warning";
        EXPECT_EQ(got.n_layer, want.n_layer) << file;
        EXPECT_EQ(got.caches, want.caches) << file;
        EXPECT_EQ(got.n_head, want.n_head) << file;
        EXPECT_EQ(got.n_head_kv, want.n_head_kv) << file;
        EXPECT_EQ(got.is_moe, want.is_moe) << file;
        const double diff = std::fabs(double(got.n_params()) - double(want.n_params())) / double(want.n_params());
        EXPECT_LT(diff, 0.01) << file << ": " << want.n_params() << " -> " << got.n_params();
    } catch (const kvfit::error & e) {
        SUCCEED() << file << " refused: " << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(shared_configs, renamed, ::testing::ValuesIn(kvfit::test::k_shared_configs),
                         [](const auto & info) { return kvfit::test::test_name_of_file(info.param); });

// Which of them the keys alone determine (pinned: a change here is a change of detection).
TEST(renamed, refused_ones_name_the_reason) {
    auto refused = [](const char * file, const char * key) {
        auto j = nlohmann::json::parse(shared_config(file));
        auto & cfg = j.contains("text_config") ? j["text_config"] : j;
        cfg["model_type"] = "zz_renamed";
        j.erase("architectures");
        j.erase("model_type");
        kvfit::warnings warn;
        try {
            kvfit::model_from_hf_config(j.dump(), file, warn);
            return std::string("no refusal");
        } catch (const kvfit::error & e) {
            return std::string(e.what()).find(key) != std::string::npos ? std::string("ok") : std::string(e.what());
        }
    };
    EXPECT_EQ(refused("meta-llama__Llama-4-Scout-17B-16E-Instruct.json", "attention_chunk_size 8192 without no_rope_layers"), "ok");
}

} // namespace

// A fine-tune that renamed model_type but kept the architectures class is planned by the class, as llama.cpp's
// converter (ModelBase.from_model_architecture) and vLLM's registry choose the model, and the conflict is said; a
// model_type naming another architecture than the class does too. Qwen/Qwen3-8B's config.json, renamed.
TEST(hf_config, renamed_model_type_is_planned_by_the_class_and_said) {
    const std::string text = shared_config("Qwen__Qwen3-8B.json");
    kvfit::warnings plain;
    const kvfit::model_desc base = kvfit::model_from_hf_config(text, "Qwen3-8B/config.json", plain);
    for (const auto & w : plain) EXPECT_EQ(w.find("model_type"), std::string::npos) << w;
    for (const auto & [type, says] : std::vector<std::pair<std::string, std::string>>{
             {"qwen3_custom", "model_type 'qwen3_custom' is not one kvfit knows; planned as qwen3 by its architectures "
                              "class 'Qwen3ForCausalLM'"},
             {"llama", "model_type 'llama' is llama but the architectures class 'Qwen3ForCausalLM' is qwen3; planned as qwen3"}}) {
        nlohmann::json j = nlohmann::json::parse(text);
        j["model_type"] = type;
        kvfit::warnings warn;
        const kvfit::model_desc m = kvfit::model_from_hf_config(j.dump(), "renamed/config.json", warn);
        EXPECT_EQ(m.gguf_architecture, "qwen3");
        EXPECT_EQ(m.n_layer, base.n_layer);
        EXPECT_EQ(kvfit::kv_bytes_per_token(m, kvfit::ggml_type::f16, kvfit::ggml_type::f16), 147456u); // 36 x 2 x 8 x 128 x 2
        bool said = false;
        for (const auto & w : warn) said |= w.find(says) != std::string::npos;
        EXPECT_TRUE(said) << type;
    }
}
