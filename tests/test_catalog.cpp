// The built-in catalog: order, lookup, byte-exact copies of ../shared/configs, and the default model's figures.
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"

#include "support/files.h"

#include <gtest/gtest.h>


namespace {

using kvfit::test::read_text;

kvfit::model_desc load(const kvfit::catalog_entry & e) {
    kvfit::warnings warn;
    auto m = kvfit::model_from_hf_config(e.config_json, e.name, warn);
    EXPECT_TRUE(warn.empty()) << e.name;
    return m;
}

TEST(catalog, default_is_first_and_qwen3_5_9b) {
    ASSERT_FALSE(kvfit::catalog().empty());
    EXPECT_EQ(kvfit::default_model_name(), "Qwen3.5-9B");
    EXPECT_EQ(kvfit::catalog().front().name, "Qwen3.5-9B");
    EXPECT_EQ(kvfit::catalog().front().hf_id, "Qwen/Qwen3.5-9B");
}

TEST(catalog, find_by_name_or_hf_id_case_insensitive) {
    ASSERT_NE(kvfit::find_catalog("qwen3.5-9b"), nullptr);
    EXPECT_EQ(kvfit::find_catalog("QWEN/QWEN3.5-9B"), kvfit::find_catalog("Qwen3.5-9B"));
    EXPECT_EQ(kvfit::find_catalog("openai/gpt-oss-20b")->name, "gpt-oss-20b");
    EXPECT_EQ(kvfit::find_catalog("no-such-model"), nullptr);
    EXPECT_EQ(kvfit::find_catalog(""), nullptr);
}

// Every shared config is in the catalog, byte for byte, under its HF id.
TEST(catalog, holds_every_shared_config_exactly) {
    const char * files[] = {
        "Qwen__Qwen2.5-7B.json", "Qwen__Qwen3-8B.json", "Qwen__Qwen3-Next-80B-A3B-Thinking.json",
        "Qwen__Qwen3.5-27B.json", "deepseek-ai__DeepSeek-V3.json", "meta-llama__Llama-2-7b-hf.json",
        "meta-llama__Llama-4-Scout-17B-16E-Instruct.json", "meta-llama__Meta-Llama-3.1-8B.json",
        "mistralai__Mixtral-8x7B-v0.1.json", "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json",
        "nvidia__Nemotron-H-56B-Base-8K.json", "openai__gpt-oss-20b.json"};
    for (const std::string file : files) {
        std::string hf_id = file.substr(0, file.size() - 5);
        hf_id.replace(hf_id.find("__"), 2, "/");
        const auto * e = kvfit::find_catalog(hf_id);
        ASSERT_NE(e, nullptr) << hf_id;
        EXPECT_EQ(e->config_json, read_text(std::string(KVFIT_SHARED_DIR) + "/configs/" + file)) << hf_id;
    }
    EXPECT_EQ(kvfit::catalog().size(), 13u);
}

TEST(catalog, every_entry_loads) {
    for (const auto & e : kvfit::catalog()) {
        const auto m = load(e);
        EXPECT_GT(m.n_params(), 0u) << e.name;
    }
}

// The seeds' numbers: 8 full layers x 4 KV heads x 256 x (K + V) x 2 B = 32,768 B/token;
// 24 Gated DeltaNet layers x (3 x (4096 + 2 x 16 x 128) + 128 x 4096) x 4 B = 52,690,944 B per sequence.
TEST(catalog, qwen3_5_9b_kv_and_state) {
    const auto m = load(*kvfit::find_catalog("Qwen3.5-9B"));
    EXPECT_EQ(m.architecture, "qwen3_5_text");
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 8u);
    EXPECT_EQ(m.count(kvfit::layer_kind::recurrent), 24u);
    EXPECT_EQ(kvfit::kv_bytes_per_token(m, kvfit::ggml_type::f16, kvfit::ggml_type::f16), 32768u);
    EXPECT_EQ(m.n_embd_r(), 24576u);
    EXPECT_EQ(m.n_embd_s(), 524288u);
    kvfit::llamacpp_settings s;
    s.n_ctx = 4096;
    EXPECT_EQ(kvfit::llamacpp_recurrent(m, kvfit::llamacpp_context_size(m, s)).bytes(), 52690944u);
    EXPECT_EQ(m.n_ctx_train, 262144u);
    EXPECT_EQ(m.n_vocab, 248320u);
    EXPECT_EQ(m.n_params(), 8953803264u); // text model, no MTP block, no vision tower
}

} // namespace

TEST(model_name_from_path, folder_of_a_config_or_file_stem) {
    EXPECT_EQ(kvfit::model_name_from_path("models/Qwen3-8B/config.json"), "Qwen3-8B");
    EXPECT_EQ(kvfit::model_name_from_path("config.json"), "config");
    EXPECT_EQ(kvfit::model_name_from_path("/x/llama31-8b.gguf"), "llama31-8b");
    EXPECT_EQ(kvfit::model_name_from_path("/x/Qwen__Qwen3-8B.json"), "Qwen__Qwen3-8B");
}
