// Configs kvfit refused or misread (issue 25 item 4), each planned from its real (or faithfully reconstructed) file
// in tests/data/configs (SOURCES.md there says where each comes from):
// - Kimi-K3: 96 heads do not divide hidden_size 7168 and there is no head_dim, but every layer is MLA or KDA, whose
//   widths the config states; planned as its GGUF plans (the measured llama.cpp v0.5.0 figures).
// - GLM-5.2-NVFP4: layer_types "deepseek_sparse_attention" is DSA (transformers' GlmMoeDsaConfig writes it); the same
//   caches as zai-org's GLM-5.2 file, which has no layer_types.
// - MiniMax-M1: attn_type_list places 70 lightning-attention layers (0) and 10 softmax layers (1); each runtime sizes
//   the lightning state by its own rule (llama.cpp minimax-01, vLLM MiniMaxText01) or refuses it by name.
// - Llama-4: llama.cpp hard-codes the chunk (8192); a config's other attention_chunk_size is named, vLLM keeps it.
#include "kvfit/error.h"
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"
#include "kvfit/vllm.h"

#include "support/files.h"
#include "support/run_cli.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

namespace {

using kvfit::cache_kind;
using kvfit::layer_kind;
using cache = kvfit::layer_cache;

std::string fixture_path(const std::string & file) { return std::string(KVFIT_TEST_DATA) + "/configs/" + file; }
std::string fixture(const std::string & file) { return kvfit::test::read_text(fixture_path(file)); }

kvfit::model_desc from_text(const std::string & text, const std::string & where, kvfit::warnings & warn) {
    return kvfit::model_from_hf_config(text, where, warn);
}

// KV bytes of every cache and the recurrent state of a llama.cpp context (f16, n_ubatch 512).
struct llamacpp_bytes {
    uint64_t kv = 0, state = 0;
};
llamacpp_bytes llamacpp_at(const kvfit::model_desc & m, uint64_t n_ctx, uint32_t n_seq) {
    kvfit::llamacpp_settings s;
    s.n_ctx = n_ctx;
    s.n_seq = n_seq;
    const auto c = kvfit::llamacpp_context_size(m, s);
    llamacpp_bytes b;
    for (const auto & kv : kvfit::llamacpp_kv_caches(m, s, c)) b.kv += kv.bytes();
    b.state = kvfit::llamacpp_recurrent(m, c).bytes();
    return b;
}

uint32_t count_caches(const kvfit::model_desc & m, cache_kind k) {
    uint32_t n = 0;
    for (const auto & layer : m.caches) n += uint32_t(std::count_if(layer.begin(), layer.end(), [&](const cache & c) { return c.kind == k; }));
    return n;
}

// --- Kimi-K3 ------------------------------------------------------------------------------------------------------

// Refused before: "key 'num_attention_heads': 96 does not divide hidden_size 7168 and head_dim is absent".
// Measured (tests/conformance/measured/kimi-k3.v0.5.0.jsonl, the shape-exact GGUF of this config, n_ctx 4096, 1 seq,
// f16): KV 108 MiB (24 MLA layers x 4096 cells x 576 x 2 B), recurrent state 443.11 MiB (69 KDA layers).
TEST(config_edges, kimi_k3_mla_and_kda_need_no_head_dim) {
    kvfit::warnings warn;
    const auto m = from_text(fixture("moonshotai__Kimi-K3.json"), "Kimi-K3/config.json", warn);
    EXPECT_EQ(m.gguf_architecture, "kimi-k3");
    EXPECT_EQ(m.count(layer_kind::mla), 24u);
    EXPECT_EQ(m.count(layer_kind::recurrent), 69u);
    EXPECT_EQ(m.count(layer_kind::full), 0u);
    EXPECT_EQ(m.caches[3], (std::vector<cache>{cache::latent(576)}));
    const auto b = llamacpp_at(m, 4096, 1);
    EXPECT_EQ(b.kv, 113246208u);   // 108.00 MiB, as measured
    EXPECT_EQ(b.state, 464633856u); // 443.11 MiB, as measured
    // the config plans what the GGUF of the same shape plans, layer by layer
    kvfit::warnings gw;
    const auto g = kvfit::model_from_gguf(std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/kimi-k3_v512.gguf", gw);
    ASSERT_EQ(g.n_layer, m.n_layer);
    for (uint32_t il = 0; il < m.n_layer; ++il) EXPECT_EQ(m.caches[il], g.caches[il]) << "layer " << il;
    // the warnings name what kvfit does not read; none is about the heads
    for (const auto & w : warn) EXPECT_EQ(w.find("num_attention_heads"), std::string::npos) << w;
}

// A trial planned Kimi-K3 under vLLM at 645 GiB per GPU on 8 x B300: its quantization_config names only
// {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized"}, and the weights were sized in bf16. The
// format is MXFP4 packed two values a byte with a uint8 E8M0 scale per 32 (vLLM compressed_tensors_w4a16_mxfp4.py;
// the MoE method compressed_tensors_moe_w4a4_mxfp4.py creates (E, 2I, H/2) + (E, 2I, H/32) and (E, H, I/2) +
// (E, H, I/32), unpadded), and Kimi-K3's experts run in routed_expert_hidden_size 3584 (the latent, not 7168). The
// routed experts of the 92 MoE layers (first_k_dense_replace 1) per TP-8 rank are exactly that; the rest of the
// weights (MLA, KDA, shared experts, embeddings: the parameters left) add at most their bf16 bytes.
TEST(config_edges, kimi_k3_mxfp4_pack_quantized_experts_under_vllm) {
    const auto r = kvfit::test::run_kvfit(fixture_path("moonshotai__Kimi-K3.json") + " --runtime vllm --gpu 8xB300 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const uint64_t E = 896, I = 3072 / 8, H = 3584, moe_layers = 92;
    const uint64_t per_expert = 2 * I * H / 2 + 2 * I * H / 32 + H * I / 2 + H * I / 32;
    const uint64_t experts = moe_layers * E * per_expert; // 169.6 GiB per rank
    const uint64_t expert_params = moe_layers * E * 3 * 3072 * H;
    const uint64_t rest_params = j["model"]["parameter_count"].get<uint64_t>() - expert_params;
    const uint64_t weights = j["detail"]["per_rank"][0]["weights_bytes"].get<uint64_t>();
    EXPECT_GT(weights, experts);
    EXPECT_LT(weights, experts + 2 * rest_params);
    EXPECT_EQ(j["model"]["weights_format"], "mxfp4-pack-quantized (experts)");
    // the config names no config_groups: the experts-only scope is an assumption, and a warning says so
    bool said = false;
    for (const auto & w : j["warnings"]) said |= w.get<std::string>().find("mxfp4-pack-quantized without config_groups") != std::string::npos;
    EXPECT_TRUE(said) << j["warnings"];
    // the launch line loads the folder of the config file, never the .json itself
    EXPECT_TRUE(j["launch"].get<std::string>().starts_with("vllm serve " + std::string(KVFIT_TEST_DATA) + "/configs ")) << j["launch"];
}

// The reason stands where it matters: a plain attention layer with no stated width is still refused.
TEST(config_edges, plain_attention_without_a_width_is_still_refused) {
    kvfit::warnings warn;
    std::string text = fixture("moonshotai__Kimi-K3.json");
    const size_t at = text.find("\"kv_lora_rank\": 512,");
    ASSERT_NE(at, std::string::npos);
    text.erase(at, std::string("\"kv_lora_rank\": 512,").size());
    for (const char * key : {"\"qk_nope_head_dim\": 128,", "\"qk_rope_head_dim\": 64,"}) text.erase(text.find(key), std::string(key).size());
    try {
        from_text(text, "k3.json", warn);
        FAIL() << "planned";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "k3.json: key 'text_config.num_attention_heads': 96 does not divide hidden_size 7168 and "
                               "head_dim is absent");
    }
}

// --- GLM-5.2 -------------------------------------------------------------------------------------------------------

// zai-org's file states indexer_types (full iff il < 3 or il % 4 == 2: 21 of 78 layers, llama.cpp glm-dsa.cpp
// GLM_5_2_DEFAULT_INDEXER_TYPES); the NVFP4 file as transformers saves it adds layer_types "deepseek_sparse_attention"
// (refused before: "a layer kind kvfit does not know"). Both: 78 MLA latents of 576, the same 21 indexers.
TEST(config_edges, glm52_nvfp4_deepseek_sparse_attention_is_dsa) {
    kvfit::warnings w1, w2;
    const auto zai = from_text(fixture("zai-org__GLM-5.2.json"), "GLM-5.2/config.json", w1);
    const auto nv = from_text(fixture("GLM-5.2-NVFP4.json"), "GLM-5.2-NVFP4/config.json", w2);
    EXPECT_EQ(zai.gguf_architecture, "glm-dsa");
    EXPECT_EQ(nv.gguf_architecture, "glm-dsa");
    EXPECT_EQ(zai.count(layer_kind::mla), 78u);
    EXPECT_EQ(count_caches(zai, cache_kind::indexer), 21u);
    EXPECT_EQ(zai.caches[2], (std::vector<cache>{cache::latent(576), cache::indexer(128)}));
    EXPECT_EQ(zai.caches[3], (std::vector<cache>{cache::latent(576)}));
    EXPECT_EQ(nv.caches, zai.caches);
    EXPECT_EQ(nv.quant.method, "nvfp4");
    EXPECT_EQ(llamacpp_at(nv, 131072, 1).kv, llamacpp_at(zai, 131072, 1).kv);
    EXPECT_TRUE(w1.empty()) << w1.front();
    EXPECT_TRUE(w2.empty()) << w2.front();
}

// Without indexer_types, index_topk_freq 4 / index_skip_topk_offset 3 give the same 21 (GlmMoeDsaConfig's rule).
TEST(config_edges, glm52_indexers_from_freq_and_offset) {
    auto j = nlohmann::json::parse(fixture("zai-org__GLM-5.2.json"));
    j.erase("indexer_types");
    kvfit::warnings warn;
    const auto derived = from_text(j.dump(), "derived.json", warn);
    kvfit::warnings w0;
    EXPECT_EQ(derived.caches, from_text(fixture("zai-org__GLM-5.2.json"), "GLM-5.2/config.json", w0).caches);
    j["index_topk_pattern"] = std::string(78, 'F');
    EXPECT_EQ(count_caches(from_text(j.dump(), "pattern.json", warn), cache_kind::indexer), 78u);
}

// DSA named without its keys is refused by name, never planned as plain attention.
TEST(config_edges, deepseek_sparse_attention_without_a_latent_is_refused) {
    auto j = nlohmann::json::parse(fixture("GLM-5.2-NVFP4.json"));
    j.erase("kv_lora_rank");
    kvfit::warnings warn;
    try {
        from_text(j.dump(), "nv.json", warn);
        FAIL() << "planned";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("layer_types[0] 'deepseek_sparse_attention': DeepSeek sparse attention (MLA "
                                             "with an indexer) needs kv_lora_rank"), std::string::npos) << e.what();
    }
}

// --- MiniMax-M1 ----------------------------------------------------------------------------------------------------

// attn_type_list: il 7, 15, ..., 79 softmax (8 KV heads x 128), the other 70 lightning, whose state is 128 x 128 per
// head of 64 (llama.cpp llama-hparams.cpp n_embd_s with n_embd_head_la: 1,048,576). Planned as 80 full layers before:
// 8x the KV.
TEST(config_edges, minimax_m1_attn_type_list_places_lightning_layers) {
    kvfit::warnings warn;
    const auto m = from_text(fixture("MiniMaxAI__MiniMax-M1.json"), "MiniMax-M1/config.json", warn);
    EXPECT_EQ(m.gguf_architecture, "minimax-01");
    EXPECT_EQ(m.rec_kind, kvfit::recurrent_kind::lightning);
    EXPECT_EQ(m.count(layer_kind::recurrent), 70u);
    EXPECT_EQ(m.count(layer_kind::full), 10u);
    EXPECT_EQ(m.caches[0], (std::vector<cache>{cache::state(cache_kind::ssm_state, 1048576)}));
    EXPECT_EQ(m.caches[7], (std::vector<cache>{cache::attention(cache_kind::full, 8, 128, 128)}));
    EXPECT_TRUE(warn.empty()) << warn.front();
    // llama.cpp v0.5.0 (models/minimax-01.cpp: hybrid memory, f32 states): 10 layers x 8 x 128 x 2 x 2 B per token,
    // and 70 x 1,048,576 x 4 B per sequence
    const auto b = llamacpp_at(m, 4096, 2);
    EXPECT_EQ(b.kv, 4096ull * 10 * 8 * 128 * 2 * 2);
    EXPECT_EQ(b.state, 2ull * 70 * 1048576 * 4);
    // vLLM up to v0.23.0 (MiniMaxText01LinearAttention: linear_attention_state_shape (64, 128, 128) in the model dtype,
    // no conv); later releases refuse the architecture by name (registry.py _PREVIOUSLY_SUPPORTED_MODELS "0.23.0")
    kvfit::vllm_settings s;
    s.max_model_len = 4096;
    s.rules = kvfit::vllm_rules::v2025;
    const auto p = kvfit::plan_vllm(m, s, {"GPU0", 640ull << 30});
    EXPECT_TRUE(p.hybrid);
    EXPECT_EQ(p.mamba_conv_bytes, 0u);
    EXPECT_EQ(p.mamba_ssm_bytes, 64ull * 128 * 128 * 2);
    s.rules = kvfit::vllm_rules::v2026;
    try {
        kvfit::plan_vllm(m, s, {"GPU0", 640ull << 30});
        ADD_FAILURE() << "planned by the 2026 rules";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("was supported in vLLM until v0.23.0, and is not supported anymore"),
                  std::string::npos) << e.what();
    }
}

// A runtime without a lightning-attention layer says so by name: SGLang (no rule read) and mlx-lm (its minimax
// model is MiniMax-M2's). Never planned as full attention.
TEST(config_edges, minimax_m1_refused_by_name_where_no_rule_exists) {
    const std::string cfg = fixture_path("MiniMaxAI__MiniMax-M1.json");
    const auto sg = kvfit::test::run_kvfit(cfg + " --runtime sglang --gpu 8x80GiB --tp 8 --context-length 8192");
    EXPECT_EQ(sg.status, 2) << sg.out << sg.err;
    EXPECT_NE(sg.err.find("sglang: MiniMax lightning-attention layers"), std::string::npos) << sg.err;
    const auto mlx = kvfit::test::run_kvfit(cfg + " --runtime mlx --gpu 512GiB --context-tokens 8192");
    EXPECT_NE(mlx.out.find("mlx-lm has no lightning-attention"), std::string::npos) << mlx.out << mlx.err;
}

// A list llama.cpp would not follow (its loader places softmax every 8th layer) is named in a warning.
TEST(config_edges, minimax_attn_type_list_unlike_llamacpp_is_named) {
    auto j = nlohmann::json::parse(fixture("MiniMaxAI__MiniMax-M1.json"));
    for (size_t il = 0; il < 80; ++il) j["attn_type_list"][il] = (il + 1) % 4 == 0 ? 1 : 0;
    kvfit::warnings warn;
    const auto m = from_text(j.dump(), "m1-every-4.json", warn);
    EXPECT_EQ(m.count(layer_kind::full), 20u);
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_EQ(warn[0], "m1-every-4.json: attn_type_list differs from llama.cpp's minimax-01 layout on 10 layers (il 3, 11, "
                       "19, 27, 35, 43, 51, 59, ...): its loader makes every 8th layer softmax attention and the others "
                       "lightning (models/minimax-01.cpp; the converter writes no layer list), so a GGUF of this checkpoint "
                       "keeps other caches than planned here");
}

// --- Llama-4 -------------------------------------------------------------------------------------------------------

// llama.cpp's llama4 loader sets n_swa = 8192 (models/llama4.cpp, both releases) and the converter writes no chunk:
// Scout's own 8192 plans silently; a sibling's 16384 is planned by llama.cpp at 8192 with the config's value named,
// while the model (vLLM's, SGLang's) keeps 16384.
TEST(config_edges, llama4_chunk_is_llamacpps_8192) {
    const std::string scout = kvfit::test::shared_config("meta-llama__Llama-4-Scout-17B-16E-Instruct.json");
    kvfit::warnings warn;
    auto m = from_text(scout, "scout.json", warn);
    warn.clear();
    kvfit::llamacpp_adapt_model(m, warn);
    EXPECT_TRUE(warn.empty()) << warn.front();
    EXPECT_EQ(m.n_chunk, 8192u);

    std::string sibling = scout;
    const size_t at = sibling.find("\"attention_chunk_size\": 8192");
    ASSERT_NE(at, std::string::npos);
    sibling.replace(at, std::string("\"attention_chunk_size\": 8192").size(), "\"attention_chunk_size\": 16384");
    auto s = from_text(sibling, "sibling.json", warn);
    ASSERT_EQ(s.n_chunk, 16384u);
    const cache * chunked = s.attention_cache(0);
    ASSERT_NE(chunked, nullptr);
    EXPECT_EQ(chunked->kind, cache_kind::chunked);
    EXPECT_EQ(chunked->window, 16384u);
    warn.clear();
    kvfit::llamacpp_adapt_model(s, warn);
    EXPECT_EQ(s.n_chunk, 8192u);
    EXPECT_EQ(s.attention_cache(0)->window, 8192u);
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_EQ(warn[0], "attention_chunk_size: llama.cpp's llama4 uses chunks of 8192 tokens (models/llama4.cpp hard-codes "
                       "n_swa = 8192); the config's 16384 is planned by vLLM and SGLang only");
}

// Trial defect: gpt-oss-20b's config with num_local_experts 0 was planned as a dense model (2.39 B parameters instead
// of 20.9 B) under llama.cpp and vLLM, --strict included. A class that routes each token to experts (a per-token
// count > 0) has them by construction (GptOssMLP, MixtralSparseMoeBlock, DeepseekV3MoE; llama.cpp's loaders throw
// "n_expert must be > 0"): a zero count is refused with the key named, under every runtime, for every spelling.
TEST(config_edges, zero_experts_in_a_routed_class_is_refused_by_name) {
    struct row {
        const char * file;
        const char * section; // "" or the nested config holding the keys
        const char * key;
        const char * per_token;
        const char * per_token_value;
    };
    const row rows[] = {
        {"openai__gpt-oss-20b.json", "", "num_local_experts", "num_experts_per_tok", "4"},
        {"mistralai__Mixtral-8x7B-v0.1.json", "", "num_local_experts", "num_experts_per_tok", "2"},
        {"deepseek-ai__DeepSeek-V3.json", "", "n_routed_experts", "num_experts_per_tok", "8"},
        {"Qwen__Qwen3-VL-30B-A3B-Instruct.json", "text_config", "num_experts", "num_experts_per_tok", "8"},
    };
    for (const auto & r : rows) {
        nlohmann::json j = nlohmann::json::parse(kvfit::test::shared_config(r.file));
        nlohmann::json & keys = *r.section ? j[r.section] : j;
        ASSERT_TRUE(keys.contains(r.key)) << r.file;
        keys[r.key] = 0;
        const std::string path = kvfit::test::write_temp(std::string("zero_experts_") + r.file, j.dump(2));
        const std::string prefix = *r.section ? std::string(r.section) + "." : "";
        const std::string want = fmt::format("kvfit: {}: key '{}{}': must be positive, got 0 ({}{} is {}: the model "
                                             "routes each token to experts)\n",
                                             path, prefix, r.key, prefix, r.per_token, r.per_token_value);
        for (const char * runtime : {"llama.cpp", "vllm"}) {
            const auto res = kvfit::test::run_kvfit(path + " --gpu 24GiB --strict --runtime " + runtime);
            EXPECT_EQ(res.status, 2) << r.file << " " << runtime << ": " << res.out;
            EXPECT_EQ(res.err, want) << runtime;
        }
    }
    // the per-token count 0 beside routed experts was, and is, refused as every other zero count
    nlohmann::json j = nlohmann::json::parse(kvfit::test::shared_config("openai__gpt-oss-20b.json"));
    j["num_experts_per_tok"] = 0;
    const std::string path = kvfit::test::write_temp("zero_per_token_gpt-oss-20b.json", j.dump(2));
    const auto res = kvfit::test::run_kvfit(path + " --gpu 24GiB");
    EXPECT_EQ(res.status, 2);
    EXPECT_EQ(res.err, "kvfit: " + path + ": key 'num_experts_per_tok': must be positive, got 0\n");
}

// Trial defect: max_position_embeddings 9223372036854775808 (2^63, read by nlohmann as an unsigned integer) said
// "must be positive, got -9223372036854775808". Past 2^64 nlohmann reads a float: too large as well, as written.
TEST(config_edges, integers_past_int64_are_too_large_as_written) {
    const std::string qwen = kvfit::test::shared_config("Qwen__Qwen3-8B.json");
    const std::string key = "\"max_position_embeddings\": 40960";
    ASSERT_NE(qwen.find(key), std::string::npos);
    const std::pair<const char *, const char *> rows[] = {
        {"9223372036854775808", "9223372036854775808"},
        {"18446744073709551615", "18446744073709551615"},
        {"18446744073709551616", "1.8446744073709552e+19"}, // nlohmann's double, the value it read
        {"4294967297", "4294967297"},
    };
    for (const auto & [written, shown] : rows) {
        std::string text = qwen;
        text.replace(text.find(key), key.size(), std::string("\"max_position_embeddings\": ") + written);
        const std::string path = kvfit::test::write_temp(std::string("big_ctx_") + written + ".json", text);
        const auto res = kvfit::test::run_kvfit(path + " --gpu 24GiB");
        EXPECT_EQ(res.status, 2) << written;
        EXPECT_EQ(res.err, fmt::format("kvfit: {}: key 'max_position_embeddings': too large (at most 4294967296), got {}\n",
                                       path, shown));
    }
}

} // namespace
