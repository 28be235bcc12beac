// A sliding window the config.json states but llama.cpp's architecture does not read (llamacpp_adapt_model): the
// llama.cpp plan of the config must equal the plan of the GGUF llama.cpp's converter writes from it. Mistral-7B-v0.1
// (mistralai/Mistral-7B-v0.1 config.json: MistralForCausalLM, 32 layers, 32 heads, 8 KV heads, hidden 4096,
// sliding_window 4096): conversion/llama.py registers MistralForCausalLM as LlamaModel and writes no
// sliding_window; models/llama.cpp loads none, so llama.cpp allocates 32 full layers.
#include "kvfit/gguf_writer.h"
#include "kvfit/error.h"
#include "kvfit/llamacpp.h"
#include "kvfit/plan.h"
#include "kvfit/runtime.h"
#include "kvfit/sources.h"
#include "support/gguf_fixture.h"

#include <gtest/gtest.h>

namespace {

constexpr const char * k_mistral_v01 = R"({"architectures":["MistralForCausalLM"],"model_type":"mistral",
  "hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,
  "num_key_value_heads":8,"vocab_size":32000,"max_position_embeddings":32768,"sliding_window":4096,
  "rms_norm_eps":1e-05,"rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"bfloat16"})";

uint64_t total_kv(const kvfit::model_desc & m, uint64_t n_ctx) {
    kvfit::llamacpp_settings s;
    s.n_ctx = n_ctx;
    const auto c = kvfit::llamacpp_context_size(m, s);
    uint64_t total = 0;
    for (const auto & kv : kvfit::llamacpp_kv_caches(m, s, c)) total += kv.bytes();
    return total;
}

// The header `w` writes, read back as a model (header only, in a scratch directory removed after).
kvfit::model_desc load_written(const kvfit::gguf_writer & w, const std::string & name) {
    const kvfit::test::scratch_dir dir("windows");
    w.write(dir.file(name), kvfit::gguf_data::header_only);
    kvfit::warnings warn;
    return kvfit::model_from_gguf(dir.file(name), warn);
}

// The GGUF conversion/llama.py writes for the same config: the llama architecture's keys, no sliding_window.
kvfit::model_desc mistral_gguf() {
    using kvfit::gguf_wvalue;
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string("llama"));
    w.add("llama.block_count", gguf_wvalue::u32(32));
    w.add("llama.context_length", gguf_wvalue::u32(32768));
    w.add("llama.embedding_length", gguf_wvalue::u32(4096));
    w.add("llama.feed_forward_length", gguf_wvalue::u32(14336));
    w.add("llama.attention.head_count", gguf_wvalue::u32(32));
    w.add("llama.attention.head_count_kv", gguf_wvalue::u32(8));
    w.add("llama.vocab_size", gguf_wvalue::u32(32000));
    return load_written(w, "mistral-7b-v0.1.gguf");
}

TEST(llamacpp_windows, mistral_config_window_is_full_attention_as_its_gguf) {
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::model_from_hf_config(k_mistral_v01, "mistral-7b-v0.1.json", warn);
    ASSERT_EQ(m.count(kvfit::layer_kind::swa), 32u); // Hugging Face's (and vLLM's) reading: every layer slides
    EXPECT_EQ(m.n_swa, 4096u);
    const uint64_t window_kv = total_kv(m, 32768);
    warn.clear();
    kvfit::llamacpp_adapt_model(m, warn);
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 32u);
    EXPECT_EQ(m.n_swa, 0u);
    ASSERT_EQ(warn.size(), 1u);
    EXPECT_NE(warn[0].find("llama.cpp's llama architecture uses no sliding window (models/llama.cpp)"), std::string::npos)
        << warn[0];
    EXPECT_NE(warn[0].find("32 window layers"), std::string::npos) << warn[0];
    // 32 layers x 8 KV heads x 128 x (K + V) x 2 B x 32,768 cells = 4 GiB, as the GGUF plans; the window gave 0.56 GiB
    EXPECT_EQ(total_kv(m, 32768), 4294967296ull);
    EXPECT_EQ(total_kv(mistral_gguf(), 32768), 4294967296ull);
    EXPECT_LT(window_kv, 4294967296ull / 7);
}

// google/gemma-2-9b's config.json states sliding_window but no layer_types (transformers' Gemma2Config makes every
// other layer slide); llama.cpp's gemma2 does the same (set_swa_pattern(2)): the config plans as the GGUF does.
constexpr const char * k_gemma2_9b = R"({"architectures":["Gemma2ForCausalLM"],"attn_logit_softcapping":50.0,
  "final_logit_softcapping":30.0,"head_dim":256,"hidden_act":"gelu_pytorch_tanh","hidden_size":3584,
  "intermediate_size":14336,"max_position_embeddings":8192,"model_type":"gemma2","num_attention_heads":16,
  "num_hidden_layers":42,"num_key_value_heads":8,"query_pre_attn_scalar":256,"rms_norm_eps":1e-06,
  "rope_theta":10000.0,"sliding_window":4096,"sliding_window_size":4096,"torch_dtype":"float32","vocab_size":256000})";

TEST(llamacpp_windows, gemma2_config_slides_every_other_layer_as_its_gguf) {
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::model_from_hf_config(k_gemma2_9b, "gemma-2-9b.json", warn);
    EXPECT_EQ(m.count(kvfit::layer_kind::swa), 21u);
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 21u);
    EXPECT_EQ(m.n_swa, 4096u);
    bool named = false;
    for (const auto & w : warn) named |= w.find("sliding_window_pattern absent: Gemma2Config") != std::string::npos;
    EXPECT_TRUE(named);
    using kvfit::gguf_wvalue;
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string("gemma2"));
    w.add("gemma2.block_count", gguf_wvalue::u32(42));
    w.add("gemma2.context_length", gguf_wvalue::u32(8192));
    w.add("gemma2.embedding_length", gguf_wvalue::u32(3584));
    w.add("gemma2.feed_forward_length", gguf_wvalue::u32(14336));
    w.add("gemma2.attention.head_count", gguf_wvalue::u32(16));
    w.add("gemma2.attention.head_count_kv", gguf_wvalue::u32(8));
    w.add("gemma2.attention.key_length", gguf_wvalue::u32(256));
    w.add("gemma2.attention.value_length", gguf_wvalue::u32(256));
    w.add("gemma2.attention.sliding_window", gguf_wvalue::u32(4096));
    w.add("gemma2.vocab_size", gguf_wvalue::u32(256000));
    const kvfit::model_desc g = load_written(w, "gemma-2-9b.gguf");
    // 21 full layers x 8,192 cells + 21 window layers x pad256(4,096 + 512) cells, 8,192 B per cell per layer
    EXPECT_EQ(total_kv(m, 8192), 21ull * 8192 * 8192 + 21ull * 4608 * 8192);
    EXPECT_EQ(total_kv(m, 8192), total_kv(g, 8192));
}

// google/gemma-3-27b-it's text_config states neither vocab_size, sliding_window_pattern, max_position_embeddings nor
// tie_word_embeddings: Gemma3TextConfig's defaults (262,208; 6; 131,072; true) are planned, each named.
TEST(llamacpp_windows, gemma3_text_config_defaults_are_planned_and_named) {
    constexpr const char * cfg = R"({"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3",
      "text_config":{"head_dim":128,"hidden_size":5376,"intermediate_size":21504,"model_type":"gemma3_text",
        "num_attention_heads":32,"num_hidden_layers":62,"num_key_value_heads":16,"query_pre_attn_scalar":168,
        "sliding_window":1024,"rope_scaling":{"factor":8.0,"rope_type":"linear"}}})";
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::model_from_hf_config(cfg, "gemma-3-27b-it.json", warn);
    EXPECT_EQ(m.n_vocab, 262208u);
    EXPECT_EQ(m.n_ctx_train, 131072u);
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 10u); // il 5, 11, ..., 59
    EXPECT_EQ(m.count(kvfit::layer_kind::swa), 52u);
    size_t named = 0;
    for (const auto & w : warn) named += w.find("absent: Gemma3TextConfig's default") != std::string::npos;
    EXPECT_EQ(named, 4u); // and tie_word_embeddings (true): no lm_head, llama.cpp reads token_embd as the output
    EXPECT_TRUE(m.tied_embeddings);
}

// microsoft/Phi-3-mini-128k-instruct: sliding_window 262144 on every layer in Hugging Face's terms; llama.cpp's phi3
// turns it off ("Phi SWA is currently disabled", models/phi3.cpp): 32 full layers, 393,216 B per token in f16.
TEST(llamacpp_windows, phi3_window_is_off_in_llama_cpp) {
    constexpr const char * cfg = R"({"architectures":["Phi3ForCausalLM"],"model_type":"phi3","hidden_size":3072,
      "intermediate_size":8192,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":32,
      "vocab_size":32064,"max_position_embeddings":131072,"original_max_position_embeddings":4096,
      "sliding_window":262144,"rms_norm_eps":1e-05,"tie_word_embeddings":false})";
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::model_from_hf_config(cfg, "phi-3-mini-128k.json", warn);
    EXPECT_EQ(m.count(kvfit::layer_kind::swa), 32u);
    kvfit::llamacpp_adapt_model(m, warn);
    EXPECT_EQ(m.count(kvfit::layer_kind::full), 32u);
    EXPECT_EQ(total_kv(m, 4096), 393216ull * 4096);
}

TEST(llamacpp_windows, architectures_that_read_a_window_keep_it) {
    // gpt-oss (openai-moe in llama.cpp reads LLM_KV_ATTENTION_SLIDING_WINDOW): its 12 window layers stay windows
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::load_model(std::string(KVFIT_SHARED_DIR) + "/configs/openai__gpt-oss-20b.json", warn);
    const uint32_t swa = m.count(kvfit::layer_kind::swa);
    ASSERT_GT(swa, 0u);
    warn.clear();
    kvfit::llamacpp_adapt_model(m, warn);
    EXPECT_EQ(m.count(kvfit::layer_kind::swa), swa);
    EXPECT_TRUE(warn.empty());
}

TEST(llamacpp_windows, every_llama_cpp_plan_adapts_the_model) {
    // the runtimes that plan llama.cpp's architectures build the model as llama.cpp does; vLLM keeps the window
    EXPECT_NE(kvfit::find_runtime("llama.cpp").adapt_model, nullptr);
    EXPECT_NE(kvfit::find_runtime("ollama").adapt_model, nullptr);
    EXPECT_EQ(kvfit::find_runtime("vllm").adapt_model, nullptr);
}

// A model whose source states neither a parameter count nor weight bytes gets no verdict for GPUs (exit 2 in the
// CLI): a "fits" that counts no weights would start a launch that cannot fit. Without GPUs the KV figures stay.
TEST(llamacpp_windows, no_verdict_without_weights) {
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::model_from_hf_config(k_mistral_v01, "mistral-7b-v0.1.json", warn);
    // no parameter count, no bytes (as a catalog entry without either)
    for (auto & l : m.weights.layers) l = {};
    m.weights.token_embd = m.weights.output = m.weights.other = {};
    m.weights.tensors.clear();
    m.weights.exact = false;
    m.name = "no-weights";
    kvfit::plan_request q;
    q.gpu = "8GiB";
    try {
        (void)kvfit::make_plan(q, [&](kvfit::warnings &) { return m; });
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "no-weights: no parameter count and no weight bytes in its source, so no verdict for the "
                               "GPUs (plan its GGUF or safetensors)");
    }
    q.gpu.clear();
    EXPECT_NO_THROW((void)kvfit::make_plan(q, [&](kvfit::warnings &) { return m; }));
}

} // namespace
