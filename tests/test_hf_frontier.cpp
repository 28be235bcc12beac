// The 2026 frontier configs of ../shared/configs against EXPECTED.md's second table (llama.cpp v0.5.0 rules as read
// from its source, not yet measured): layer layout, the cache list of each layer, KV bytes per token, KV at 131072
// tokens, state per sequence and parameters. f16 K/V, n_seq 1, n_ubatch 512.
// kv@131072 and state/seq are the llama.cpp runtime's own figures (llamacpp_kv_caches, llamacpp_recurrent). Every row
// was confirmed by measuring the real llama.cpp v0.5.0 at 4K-32K with the same rules (docs/rules/llamacpp-*.md,
// tests/conformance/measured/): EXPECTED.md's figures stand as written; its DeepSeek-V4 note's ceil(n_ctx / ratio) cell
// rule is right at 131072 only (the measured rule pads to 256: pad256(ceil(n_ctx_seq / ratio))).
#include "kvfit/error.h"
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"

#include "support/files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace {

using kvfit::cache_kind;
using kvfit::layer_kind;
using kvfit::test::shared_config;

struct frontier_row {
    const char * file;
    const char * gguf_arch;   // llama.cpp v0.5.0 arch the converter writes
    uint32_t n_layer, n_full, n_window, n_mla, n_recurrent, n_none;
    uint64_t kv_per_token;    // growing caches of one cell per token (full, latent, indexer ratio 1)
    uint64_t kv_at_131072;
    uint64_t state_per_seq;
    double params_b;          // EXPECTED.md "parameters", billions
    uint64_t params;          // what kvfit computes (pins the rules; update with a reason)
};

// ../shared/configs/EXPECTED.md, 2026 frontier batch. DeepSeek-V4-Flash's state/seq is the compressor state beside its
// compressed caches (llama_dsv4_comp_state), derived by the llama.cpp runtime from the caches.
const frontier_row k_frontier[] = {
    // file                                                 arch              layers full win mla rec none  kv/token  kv@131072        state      params(B) params
    {"deepseek-ai__DeepSeek-V3.2.json",                     "deepseek32",      61,  0,   0, 61,  0,  0,    85888, 11257511936ull,          0, 671.9,  671877944064ull},
    {"zai-org__GLM-5.json",                                 "glm-dsa",         78,  0,   0, 78,  0,  0,   109824, 14394851328ull,          0, 743.9,  743911218432ull},
    {"moonshotai__Kimi-K2.5.json",                          "deepseek2",       61,  0,   0, 61,  0,  0,    70272,  9210691584ull,          0, 1026.4, 1026408232448ull},
    {"deepseek-ai__DeepSeek-V4-Flash.json",                 "deepseek4",       43,  0,  43,  0,  0,  0,        0,   935591936ull,   12206080, 284.0,  282535167063ull},
    {"MiniMaxAI__MiniMax-M2.5.json",                        "minimax-m2",      62, 62,   0,  0,  0,  0,   253952, 33285996544ull,          0, 228.7,  228689764864ull},
    {"google__gemma-4-26B-A4B.json",                        "gemma4",          30,  5,  25,  0,  0,  0,    20480,  2998927360ull,          0, 25.2,   25233141760ull},
    {"XiaomiMiMo__MiMo-V2-Flash.json",                      "mimo2",           48,  9,  39,  0,  0,  0,    23040,  3173253120ull,          0, 308.8,  308778780864ull},
    {"stepfun-ai__Step-3.7-Flash.json",                     "step35",          45, 12,  33,  0,  0,  0,    49152,  6580862976ull,          0, 195.8,  195844508736ull},
    {"nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json",  "nemotron_h_moe",  88,  8,   0,  0, 40, 40,     8192,  1073741824ull,  172687360, 120.7,  120668687360ull},
    {"Qwen__Qwen3-VL-30B-A3B-Instruct.json",                "qwen3vlmoe",      48, 48,   0,  0,  0,  0,    98304, 12884901888ull,          0, 30.5,   30532122624ull},
    {"Qwen__Qwen3.5-35B-A3B.json",                          "qwen35moe",       40, 10,   0,  0, 30,  0,    20480,  2684354560ull,   65863680, 34.7,   34660610688ull},
    {"openai__gpt-oss-120b.json",                           "gpt-oss",         36, 18,  18,  0,  0,  0,    36864,  4860149760ull,          0, 116.8,  116829156672ull},
};

kvfit::llamacpp_settings settings_at(uint64_t n_ctx) {
    kvfit::llamacpp_settings s; // f16/f16, n_seq 1, n_ubatch 512
    s.n_ctx = n_ctx;
    return s;
}

class frontier : public ::testing::TestWithParam<frontier_row> {};

TEST_P(frontier, layout_kv_state_and_parameters) {
    const frontier_row & r = GetParam();
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(shared_config(r.file), r.file, warn);
    EXPECT_TRUE(warn.empty()) << r.file << ": " << (warn.empty() ? "" : warn.front());
    EXPECT_EQ(m.gguf_architecture, r.gguf_arch) << r.file;
    EXPECT_EQ(m.n_layer, r.n_layer) << r.file;
    EXPECT_EQ(m.count(layer_kind::full), r.n_full) << r.file;
    EXPECT_EQ(m.count(layer_kind::swa) + m.count(layer_kind::chunked), r.n_window) << r.file;
    EXPECT_EQ(m.count(layer_kind::mla), r.n_mla) << r.file;
    EXPECT_EQ(m.count(layer_kind::recurrent), r.n_recurrent) << r.file;
    EXPECT_EQ(m.count(layer_kind::none), r.n_none) << r.file;
    EXPECT_EQ(kvfit::kv_bytes_per_token(m, kvfit::ggml_type::f16, kvfit::ggml_type::f16), r.kv_per_token) << r.file;
    const auto s = settings_at(131072);
    const auto c = kvfit::llamacpp_context_size(m, s);
    uint64_t runtime = 0;
    for (const auto & kv : kvfit::llamacpp_kv_caches(m, s, c)) runtime += kv.bytes();
    EXPECT_EQ(runtime, r.kv_at_131072) << r.file;
    EXPECT_EQ(kvfit::llamacpp_recurrent(m, c).bytes(), r.state_per_seq) << r.file;
    const double got_b = double(m.n_params()) / 1e9;
    EXPECT_LT(std::fabs(got_b - r.params_b) / r.params_b, 0.01) << r.file << ": expected " << r.params_b << " B, got " << got_b;
    EXPECT_EQ(m.n_params(), r.params) << r.file;
}

INSTANTIATE_TEST_SUITE_P(shared_configs, frontier, ::testing::ValuesIn(k_frontier),
                         [](const auto & info) { return kvfit::test::test_name_of_file(info.param.file); });

kvfit::model_desc load(const char * file) {
    kvfit::warnings warn;
    return kvfit::model_from_hf_config(shared_config(file), file, warn);
}

using cache = kvfit::layer_cache;

// caches[il] of a few layers, as the brief's per-family layout states them.
TEST(frontier_caches, deepseek_v32_latent_and_indexer) {
    const auto m = load("deepseek-ai__DeepSeek-V3.2.json");
    const std::vector<cache> want = {cache::latent(576), cache::indexer(128)};
    for (uint32_t il : {0u, 3u, 60u}) EXPECT_EQ(m.caches[il], want) << il;
    EXPECT_EQ(m.n_head[0], 128u);
    EXPECT_EQ(m.n_layer_mtp_apart, 1u);
    EXPECT_NEAR(double(m.weights.mtp.n_params) / 1e9, 13.5, 0.05); // EXPECTED.md "+13.5 B MTP apart"
}

TEST(frontier_caches, deepseek_v4_window_compressed_indexer) {
    const auto m = load("deepseek-ai__DeepSeek-V4-Flash.json");
    const cache window = cache::attention(cache_kind::window, 1, 512, 0, 128);
    EXPECT_EQ(m.caches[0], (std::vector<cache>{window}));                                                        // ratio 0
    EXPECT_EQ(m.caches[2], (std::vector<cache>{window, cache::compressed(512, 4), cache::indexer(128, 4)}));    // ratio 4
    EXPECT_EQ(m.caches[3], (std::vector<cache>{window, cache::compressed(512, 128)}));                          // ratio 128
    EXPECT_EQ(m.caches[42], (std::vector<cache>{window, cache::compressed(512, 4), cache::indexer(128, 4)}));
    EXPECT_EQ(m.n_swa, 128u);
}

TEST(frontier_caches, mimo_v2_heads_per_layer_type) {
    const auto m = load("XiaomiMiMo__MiMo-V2-Flash.json");
    EXPECT_EQ(m.caches[0], (std::vector<cache>{cache::attention(cache_kind::full, 4, 192, 128)}));
    EXPECT_EQ(m.caches[1], (std::vector<cache>{cache::attention(cache_kind::window, 8, 192, 128, 128)}));
    EXPECT_EQ(m.caches[5], (std::vector<cache>{cache::attention(cache_kind::full, 4, 192, 128)}));
    EXPECT_EQ(m.is_moe[0], 0u); // moe_layer_freq[0] == 0
    EXPECT_EQ(m.n_ff[0], 16384u);
    EXPECT_EQ(m.is_moe[1], 1u);
}

TEST(frontier_caches, gemma4_global_heads_and_window) {
    const auto m = load("google__gemma-4-26B-A4B.json");
    // global layers: num_global_key_value_heads x global_head_dim, a V of that width although attention_k_eq_v
    EXPECT_EQ(m.caches[5], (std::vector<cache>{cache::attention(cache_kind::full, 2, 512, 512)}));
    EXPECT_EQ(m.caches[0], (std::vector<cache>{cache::attention(cache_kind::window, 8, 256, 256, 1024)}));
    EXPECT_EQ(m.n_head[5], 16u);
    EXPECT_TRUE(m.tied_embeddings);
}

TEST(frontier_caches, gemma4_kv_shared_layers_keep_no_cache) {
    auto j = nlohmann::json::parse(shared_config("google__gemma-4-26B-A4B.json"));
    j["text_config"]["num_kv_shared_layers"] = 10;
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(j.dump(), "gemma4-shared.json", warn);
    for (uint32_t il = 0; il < 20; ++il) EXPECT_FALSE(m.caches[il].empty()) << il;
    for (uint32_t il = 20; il < 30; ++il) {
        EXPECT_TRUE(m.caches[il].empty()) << il;
        EXPECT_GT(m.n_head[il], 0u) << il; // the attention still computes: a shape, no cache
    }
    EXPECT_EQ(m.count(layer_kind::none), 10u);
}

TEST(frontier_caches, nemotron3_latent_experts_and_mamba_state) {
    const auto m = load("nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json");
    EXPECT_EQ(m.caches[7], (std::vector<cache>{cache::attention(cache_kind::full, 2, 128, 128)}));
    EXPECT_EQ(m.kind_of(0), layer_kind::recurrent);
    EXPECT_EQ(m.is_moe[1], 1u);
    EXPECT_EQ(m.n_expert, 512u);
    EXPECT_EQ(m.n_expert_used, 22u);
    EXPECT_EQ(m.n_ff_shexp, 5376u);
    // experts at the 1,024-wide latent: 512 x (up + down) x 1024 x 2688
    EXPECT_EQ(m.weights.layers[1].expert_params, 512ull * 2 * 1024 * 2688);
}

TEST(frontier_caches, kimi_k25_reads_the_wrapped_text_config) {
    const auto m = load("moonshotai__Kimi-K2.5.json");
    EXPECT_EQ(m.architecture, "kimi_k2");
    EXPECT_EQ(m.caches[0], (std::vector<cache>{cache::latent(576)}));
    EXPECT_EQ(m.n_expert, 384u);
    EXPECT_EQ(m.is_moe[0], 0u); // first_k_dense_replace 1
    EXPECT_EQ(m.is_moe[1], 1u);
}

// Kimi-K3 (conversion/kimi_k3.py): linear_attn_config.full_attn_layers (1-based) are MLA, the others Kimi Delta
// Attention with a conv of 3 x (kernel - 1) x heads x head_dim and a head_dim^2 x heads state (llama-hparams.cpp,
// n_embd_head_kda branch). Experts in a routed_expert_hidden_size latent. Planned, with its one unread key warned.
TEST(frontier_configs, kimi_k3_mla_and_kda) {
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(R"({"architectures":["KimiK3ForConditionalGeneration"],
      "model_type":"kimi_k3","num_hidden_layers":8,"hidden_size":256,"num_attention_heads":8,"num_key_value_heads":8,
      "kv_lora_rank":64,"qk_rope_head_dim":16,"qk_nope_head_dim":32,"v_head_dim":32,"q_lora_rank":96,"mla_use_nope":true,
      "vocab_size":1000,"intermediate_size":512,"moe_intermediate_size":64,"num_experts":16,"num_experts_per_tok":2,
      "num_shared_experts":1,"first_k_dense_replace":1,"routed_expert_hidden_size":128,"attn_res_block_size":2,
      "max_position_embeddings":4096,"linear_attn_config":{"full_attn_layers":[4,8],"kda_layers":[1,2,3,5,6,7],
      "num_heads":8,"head_dim":32,"short_conv_kernel_size":4}})", "kimi-k3.json", warn);
    EXPECT_EQ(m.gguf_architecture, "kimi-k3");
    EXPECT_EQ(m.rec_kind, kvfit::recurrent_kind::kda);
    EXPECT_EQ(m.count(layer_kind::mla), 2u);
    EXPECT_EQ(m.count(layer_kind::recurrent), 6u);
    EXPECT_EQ(m.caches[3], (std::vector<cache>{cache::latent(80)}));
    EXPECT_EQ(m.caches[0], (std::vector<cache>{cache::state(cache_kind::conv_state, 3 * 3 * 8 * 32),
                                               cache::state(cache_kind::ssm_state, 32 * 32 * 8)}));
    EXPECT_EQ(m.n_ff_shexp, 64u); // num_shared_experts x moe_intermediate_size
    EXPECT_EQ(m.weights.layers[1].expert_params, 16ull * 3 * 128 * 64); // at the 128-wide latent
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_EQ(warn[0], "kimi-k3.json: key 'attn_res_block_size' may change memory and kvfit does not read it (value 2)");
}

// Nemotron-3-Ultra style: layers_block_type instead of num_hidden_layers + hybrid_override_pattern
// (conversion/nemotron.py: num_hidden_layers = len(layers_block_type)). Planned, not refused.
TEST(frontier_configs, nemotron3_layers_block_type) {
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(R"({"architectures":["NemotronHForCausalLM"],"model_type":"nemotron_h",
      "hidden_size":256,"num_attention_heads":8,"num_key_value_heads":2,"head_dim":32,"vocab_size":1000,
      "intermediate_size":512,"mamba_num_heads":8,"mamba_head_dim":32,"ssm_state_size":16,"n_groups":2,"conv_kernel":4,
      "n_routed_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":64,"moe_shared_expert_intermediate_size":128,
      "n_shared_experts":1,"moe_latent_size":64,"mlp_hidden_act":"relu2","max_position_embeddings":4096,
      "layers_block_type":["mamba","moe","mamba","attention","moe","mamba"]})", "nemotron3-ultra.json", warn);
    EXPECT_TRUE(warn.empty()) << (warn.empty() ? "" : warn[0]);
    EXPECT_EQ(m.n_layer, 6u);
    EXPECT_EQ(m.gguf_architecture, "nemotron_h_moe");
    EXPECT_EQ(m.count(layer_kind::recurrent), 3u);
    EXPECT_EQ(m.count(layer_kind::full), 1u);
    EXPECT_EQ(m.count(layer_kind::none), 2u);
    EXPECT_EQ(m.is_moe, (std::vector<uint8_t>{0, 1, 0, 0, 1, 0}));
    EXPECT_EQ(m.caches[3], (std::vector<cache>{cache::attention(cache_kind::full, 2, 32, 32)}));
    EXPECT_EQ(m.weights.layers[1].expert_params, 8ull * 2 * 64 * 64); // up + down at the 64-wide latent
}

// Laguna (conversion/laguna.py, models/laguna.cpp): query heads per layer, "dense"/"sparse" FFN per layer, a
// per-head output gate on every layer. The keys say it all: the layout is the same under an unknown name.
TEST(frontier_configs, laguna_per_layer_heads_gates_and_ffn_kinds) {
    const std::string text = R"({"architectures":["LagunaForCausalLM"],"model_type":"laguna","vocab_size":1000,
      "hidden_size":256,"intermediate_size":512,"num_hidden_layers":4,"num_attention_heads":8,"num_key_value_heads":2,
      "head_dim":32,"max_position_embeddings":4096,"num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":64,
      "shared_expert_intermediate_size":64,"sliding_window":512,
      "layer_types":["full_attention","sliding_attention","sliding_attention","sliding_attention"],
      "mlp_layer_types":["dense","sparse","sparse","sparse"],"gating_types":["per_head","per_head","per_head","per_head"],
      "num_attention_heads_per_layer":[8,12,12,12]})";
    kvfit::warnings warn;
    const auto m = kvfit::model_from_hf_config(text, "laguna.json", warn);
    EXPECT_TRUE(warn.empty()) << (warn.empty() ? "" : warn[0]);
    EXPECT_EQ(m.gguf_architecture, "laguna");
    EXPECT_EQ(m.n_head, (std::vector<uint32_t>{8, 12, 12, 12}));
    EXPECT_EQ(m.is_moe, (std::vector<uint8_t>{0, 1, 1, 1}));
    EXPECT_EQ(m.caches[1], (std::vector<cache>{cache::attention(cache_kind::window, 2, 32, 32, 512)}));
    // layer 0: q 256x256, k/v 256x64, o 256x256, q/k norms 2x32, gate 256x8, dense MLP 3x256x512, 2 norms
    EXPECT_EQ(m.weights.layers[0].n_params, 256ull * 256 * 2 + 2ull * 256 * 64 + 64 + 256 * 8 + 3ull * 256 * 512 + 2 * 256);
    kvfit::warnings warn2;
    const auto renamed = kvfit::model_from_hf_config(std::string(text).replace(text.find("laguna\""), 6, "zz_new"), "x.json", warn2);
    EXPECT_EQ(renamed.caches, m.caches);
}

} // namespace

namespace {

// MiniMax-M3 from its config.json (sparse_attention_config, the MSA indexer; keys of MiniMaxAI/MiniMax-M3 as
// conversion/minimax.py MiniMaxM3Model reads them) against the GGUF the conformance suite builds from the same shape
// (tests/conformance/models_dsa.mjs minimax_m3, measured with both releases): the same caches on every layer, so
// the same KV and compute. Without the step the config was planned as plain attention (152,064 -> 122,880 B per
// token) with only an "unknown key" warning.
TEST(frontier_configs, minimax_m3_sparse_attention_config_plans_as_its_gguf) {
    nlohmann::json c = {{"architectures", {"MiniMaxM3SparseForCausalLM"}}, {"model_type", "minimax_m3"},
                        {"hidden_size", 6144}, {"num_hidden_layers", 60}, {"num_attention_heads", 64},
                        {"num_key_value_heads", 4}, {"head_dim", 128}, {"rotary_dim", 64}, {"intermediate_size", 3072},
                        {"num_local_experts", 128}, {"num_experts_per_tok", 4}, {"n_shared_experts", 1},
                        {"vocab_size", 512}, {"max_position_embeddings", 1048576}};
    std::vector<int> freq(60, 1);
    std::fill(freq.begin(), freq.begin() + 3, 0); // 3 leading dense blocks
    c["moe_layer_freq"] = freq;
    c["sparse_attention_config"] = {{"sparse_num_index_heads", 4}, {"sparse_index_dim", 128}, {"sparse_topk_blocks", 16},
                                    {"sparse_block_size", 128}, {"sparse_local_block", 1}};
    kvfit::warnings warn;
    const auto cfg = kvfit::model_from_hf_config(c.dump(), "MiniMax-M3/config.json", warn);
    for (const auto & w : warn) EXPECT_EQ(w.find("sparse_attention_config"), std::string::npos) << w;
    const auto gguf = kvfit::model_from_gguf(std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/minimax-m3_v512.gguf", warn);
    ASSERT_EQ(cfg.n_layer, gguf.n_layer);
    for (uint32_t il = 0; il < cfg.n_layer; ++il) EXPECT_EQ(cfg.caches[il], gguf.caches[il]) << il;
    EXPECT_EQ(cfg.caches[2], (std::vector<cache>{cache::attention(cache_kind::full, 4, 128, 128, 0)}));
    EXPECT_EQ(cfg.caches[3], (std::vector<cache>{cache::attention(cache_kind::full, 4, 128, 128, 0), cache::indexer(128)}));
    EXPECT_EQ(kvfit::kv_bytes_per_token(cfg, kvfit::ggml_type::f16, kvfit::ggml_type::f16), 152064u);
    EXPECT_EQ(cfg.indexer_n_head, gguf.indexer_n_head);
    EXPECT_EQ(cfg.indexer_top_k, gguf.indexer_top_k);
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    s.n_seq = 2;
    const auto cc = kvfit::llamacpp_context_size(cfg, s);
    EXPECT_EQ(kvfit::llamacpp_compute_bytes(cfg, s, cc), kvfit::llamacpp_compute_bytes(gguf, s, cc));
}

} // namespace

namespace {

nlohmann::json minimax_m3_config() {
    nlohmann::json c = {{"architectures", {"MiniMaxM3SparseForCausalLM"}}, {"model_type", "minimax_m3"},
                        {"hidden_size", 6144}, {"num_hidden_layers", 60}, {"num_attention_heads", 64},
                        {"num_key_value_heads", 4}, {"head_dim", 128}, {"intermediate_size", 3072},
                        {"num_local_experts", 128}, {"num_experts_per_tok", 4}, {"vocab_size", 512}};
    std::vector<int> freq(60, 1);
    std::fill(freq.begin(), freq.begin() + 3, 0);
    c["moe_layer_freq"] = freq;
    c["sparse_attention_config"] = {{"sparse_num_index_heads", 4}, {"sparse_index_dim", 128}, {"sparse_topk_blocks", 16}};
    return c;
}

std::string refusal_of(const nlohmann::json & c) {
    kvfit::warnings warn;
    try {
        kvfit::model_from_hf_config(c.dump(), "m.json", warn);
    } catch (const kvfit::error & e) {
        return e.what();
    }
    return "";
}

// Found by a new-user trial: what the MSA step must refuse (the converter fails on each) and where the key is not
// MiniMax-M3's (another architecture's converter ignores it: no indexer, a warning).
TEST(frontier_configs, minimax_m3_msa_keys_refused_or_ignored_by_name) {
    auto c = minimax_m3_config();
    c.erase("sparse_attention_config");
    EXPECT_NE(refusal_of(c).find("sparse_attention_config missing"), std::string::npos) << refusal_of(c);
    c = minimax_m3_config();
    c["sparse_attention_config"].erase("sparse_topk_blocks");
    EXPECT_NE(refusal_of(c).find("sparse_topk_blocks"), std::string::npos) << refusal_of(c);
    c = minimax_m3_config();
    c["moe_layer_freq"] = 1;
    EXPECT_NE(refusal_of(c).find("moe_layer_freq"), std::string::npos) << refusal_of(c);
    c = minimax_m3_config();
    c["moe_layer_freq"][0] = "0";
    EXPECT_NE(refusal_of(c).find("key 'moe_layer_freq': entry 0 is not an integer"), std::string::npos) << refusal_of(c);
    c = minimax_m3_config();
    c.erase("moe_layer_freq");
    EXPECT_NE(refusal_of(c).find("moe_layer_freq"), std::string::npos) << refusal_of(c);

    // a Llama config carrying the key: llama.cpp's llama GGUF has no indexer, and the warning says the key is ignored
    nlohmann::json llama = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", 4096},
                            {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
                            {"intermediate_size", 14336}, {"vocab_size", 128256}};
    kvfit::warnings warn;
    const auto plain = kvfit::model_from_hf_config(llama.dump(), "l.json", warn);
    llama["sparse_attention_config"] = minimax_m3_config()["sparse_attention_config"];
    warn.clear();
    const auto with_key = kvfit::model_from_hf_config(llama.dump(), "l.json", warn);
    EXPECT_EQ(with_key.caches, plain.caches);
    bool said = false;
    for (const auto & w : warn) said |= w.find("sparse_attention_config is ignored") != std::string::npos;
    EXPECT_TRUE(said);
}

} // namespace
