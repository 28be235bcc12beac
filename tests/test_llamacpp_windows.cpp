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

#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

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
    const auto dir = std::filesystem::temp_directory_path() / ("kvfit-windows-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "mistral-7b-v0.1.gguf").string();
    w.write(path, kvfit::gguf_data::header_only);
    kvfit::warnings warn;
    kvfit::model_desc m = kvfit::model_from_gguf(path, warn);
    std::filesystem::remove_all(dir);
    return m;
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
    EXPECT_NE(warn[0].find("llama.cpp's llama architecture reads no sliding window (models/llama.cpp)"), std::string::npos)
        << warn[0];
    EXPECT_NE(warn[0].find("32 window layers"), std::string::npos) << warn[0];
    // 32 layers x 8 KV heads x 128 x (K + V) x 2 B x 32,768 cells = 4 GiB, as the GGUF plans; the window gave 0.56 GiB
    EXPECT_EQ(total_kv(m, 32768), 4294967296ull);
    EXPECT_EQ(total_kv(mistral_gguf(), 32768), 4294967296ull);
    EXPECT_LT(window_kv, 4294967296ull / 7);
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
