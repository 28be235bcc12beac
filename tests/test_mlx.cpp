// MLX (mlx-lm on Apple silicon): the rules of include/kvfit/mlx.h worked by hand from mlx-lm d78bf58 / mlx 846d176
// source, line numbers at those commits. No Mac measured these: every figure is derived, see docs/rules/mlx.md.
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/metal.h"
#include "kvfit/mlx.h"
#include "kvfit/sources.h"

#include "support/run_cli.h"

#include <gtest/gtest.h>

namespace {

using kvfit::mlx_settings;

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;

kvfit::model_desc catalog_model(const char * name) {
    kvfit::warnings w;
    return kvfit::load_model(name, w);
}

const kvfit::mlx_buffer * buffer(const kvfit::mlx_plan & p, const std::string & name) {
    for (const auto & b : p.devices.at(0).buffers) {
        if (b.name == name) return &b;
    }
    return nullptr;
}

uint64_t bytes(const kvfit::mlx_plan & p, const std::string & name) {
    const auto * b = buffer(p, name);
    return b ? b->bytes : 0;
}

bool contains(const std::vector<std::string> & lines, const std::string & text) {
    for (const auto & l : lines) {
        if (l.find(text) != std::string::npos) return true;
    }
    return false;
}

kvfit::mlx_plan plan(const kvfit::model_desc & m, const mlx_settings & s, const char * gpu = "M4 Max 64GB") {
    return kvfit::plan_mlx(m, s, kvfit::parse_gpu_list(gpu));
}

// Two full-attention layers of 8 KV heads x 64, for rules the real configs do not reach.
kvfit::model_desc small_model(kvfit::cache_kind kind = kvfit::cache_kind::full) {
    kvfit::model_desc m;
    m.name = "small";
    m.n_layer = 2;
    m.n_embd = 512;
    m.n_vocab = 1000;
    m.n_ctx_train = 32768;
    kvfit::resize_layers(m);
    for (uint32_t il = 0; il < 2; ++il) {
        m.n_head[il] = 8;
        m.n_head_kv[il] = 8;
        m.head_dim_k[il] = 64;
        m.head_dim_v[il] = 64;
        m.n_ff[il] = 1024;
        if (kind == kvfit::cache_kind::compressed) m.caches[il] = {kvfit::layer_cache::compressed(512, 4)};
        else m.caches[il] = {kvfit::layer_cache::attention(kind, 8, 64, 64)};
    }
    return m;
}

// --- the Metal working set ---------------------------------------------------------------------------------------

// MLX plans against Metal's working set, the rule it shares with llama.cpp and Ollama (metal.h; its logs are checked
// in tests/test_metal.cpp); --iogpu-wired-limit-mb sets it.
TEST(mlx_working_set, plans_at_the_shared_metal_rule) {
    // The GPU table's Apple rows hold the whole RAM; plan_mlx plans at the working set.
    const auto p = plan(catalog_model("Qwen3-8B"), {}, "M3 Ultra 512GB");
    EXPECT_EQ(p.devices[0].memory_bytes, 512 * GiB);
    EXPECT_EQ(p.devices[0].capacity_bytes, 384 * GiB);
    EXPECT_EQ(p.devices[0].capacity_bytes, kvfit::metal_working_set_bytes(512 * GiB));
}

// --- cache cells -------------------------------------------------------------------------------------------------

TEST(mlx_cells, kvcache_grows_in_256_steps) {
    // cache.py:326 step = 256; :338 n_steps = (self.step + keys.shape[2] - 1) // self.step. generate.py:421-444 feeds
    // the prompt in chunks of 2048 (multiples of 256) and the last token alone, so a fresh cache holds
    // ceil(tokens / 256) x 256 cells.
    EXPECT_EQ(kvfit::mlx_kvcache_cells(32768), 32768u); // 15 chunks of 2048, one of 2047 (+2048 cells), one token
    EXPECT_EQ(kvfit::mlx_kvcache_cells(32769), 33024u); // the first decoded token past 32768 adds a 256-cell step
    EXPECT_EQ(kvfit::mlx_kvcache_cells(5000), 5120u);   // 2048 + 2048 + (903 -> 1024 cells)
    EXPECT_EQ(kvfit::mlx_kvcache_cells(1), 256u);
    EXPECT_EQ(kvfit::mlx_kvcache_cells(0), 0u);
}

TEST(mlx_cells, rotating_window_peaks_during_the_prompt) {
    // cache.py:460-464 _update_concat keeps max_size - 1 cells and appends the chunk; :478 in-place growth adds
    // min(256, max_size - offset); :491 trims back to max_size. gpt-oss sliding layers: max_size = 128
    // (gpt_oss.py:342), chunks of 2048.
    EXPECT_EQ(kvfit::mlx_rotating_cells(32768, 128, 2048), 2175u); // 127 + 2048
    EXPECT_EQ(kvfit::mlx_rotating_cells(2000, 128, 2048), 2000u);  // a single chunk shorter than 127 + 2048
    EXPECT_EQ(kvfit::mlx_rotating_cells(129, 128, 2048), 129u);
    EXPECT_EQ(kvfit::mlx_rotating_cells(128, 128, 2048), 128u);
    EXPECT_EQ(kvfit::mlx_rotating_cells(100, 128, 2048), 128u);    // min(128, 100 + 255)
    EXPECT_EQ(kvfit::mlx_rotating_cells(100, 4096, 2048), 355u);   // upper bound: 100 + 255
    // --max-kv-size 4096 (RotatingKVCache(max_size=4096, keep=4), cache.py:37): 4095 + 2048
    EXPECT_EQ(kvfit::mlx_rotating_cells(32768, 4096, 2048), 6143u);
}

TEST(mlx_cells, chunked_keeps_one_chunk_plus_the_update) {
    // cache.py:746-755 maybe_trim_front keeps <= chunk_size valid cells (llama4.py:230 calls it first), then
    // :762 appends ceil(S / 256) x 256: Llama 4 chunk 8192, prompt chunk 2048 -> 8192 + 2048.
    EXPECT_EQ(kvfit::mlx_chunked_cells(32768, 8192, 2048), 10240u);
    EXPECT_EQ(kvfit::mlx_chunked_cells(4000, 8192, 2048), 4096u);
}

TEST(mlx_cells, prompt_cache_file_and_measured_working_set) {
    // A cache loaded from --prompt-cache-file holds exactly its offset (KVCache.state slices to it, cache.py
    // l.360-368) and grows by ceil(S / 256) x 256 from there: kvfit bounds it by tokens + 255.
    mlx_settings s;
    s.context_tokens = 1000;
    s.prompt_cache_file = "prompt.safetensors";
    s.memory_is_working_set = true; // the device figure is mx.device_info()["max_recommended_working_set_size"]
    const auto p = plan(catalog_model("Qwen3-8B"), s, "48GiB");
    EXPECT_EQ(bytes(p, "kv"), 36ull * 1255 * 4096); // 185,057,280
    EXPECT_EQ(p.devices[0].capacity_bytes, 48 * GiB);
    EXPECT_EQ(p.launch, "mlx_lm.generate --model Qwen/Qwen3-8B --prompt-cache-file prompt.safetensors");
}

// --- element rules -----------------------------------------------------------------------------------------------

TEST(mlx_bytes, quantized_rows_and_weights) {
    // QuantizedKVCache row (cache.py:248-256, mlx/ops.cpp affine_quantize: w.shape(-1) * bits / 32 uint32 words,
    // w.shape(-1) / group_size scales and biases in the input dtype).
    EXPECT_EQ(kvfit::mlx_quantized_row_bytes(128, 4, 64, 2), 72u);  // 64 + 2 groups x (scale + bias) x 2 B
    EXPECT_EQ(kvfit::mlx_quantized_row_bytes(128, 8, 64, 2), 136u); // 128 + 8
    EXPECT_EQ(kvfit::mlx_quantized_row_bytes(256, 4, 64, 2), 144u); // 128 + 4 x 4
    EXPECT_EQ(kvfit::mlx_quantized_row_bytes(128, 4, 32, 2), 80u);  // 64 + 4 x 4

    const uint64_t n = 4096ull * 4096; // one 4096 x 4096 projection
    kvfit::mlx_quantization q;
    EXPECT_EQ(kvfit::mlx_weight_bytes(n, q, 2), 2 * n); // not quantized: bf16
    q = kvfit::mlx_resolve_quantization({4, 0, "affine"});
    EXPECT_EQ(q.group_size, 64u); // utils.py quantize_model defaults_for_mode: affine (64, 4)
    EXPECT_EQ(kvfit::mlx_weight_bytes(n, q, 2), 9437184u);   // 8388608 + 262144 groups x 2 x 2 B (4.5 bits)
    q = kvfit::mlx_resolve_quantization({0, 0, "mxfp4"});
    EXPECT_EQ(kvfit::mlx_weight_bytes(n, q, 2), 8912896u);   // 8388608 + 524288 uint8 scales (4.25 bits)
    q = kvfit::mlx_resolve_quantization({0, 0, "nvfp4"});
    EXPECT_EQ(kvfit::mlx_weight_bytes(n, q, 2), 9437184u);   // 8388608 + 1048576 (group 16)
    q = kvfit::mlx_resolve_quantization({0, 0, "mxfp8"});
    EXPECT_EQ(kvfit::mlx_weight_bytes(n, q, 2), 17301504u);  // 16777216 + 524288
}

TEST(mlx_bytes, quantization_settings_mlx_rejects) {
    struct row { kvfit::mlx_quantization q; const char * message; };
    for (const row & r : {
             row{{7, 64, "affine"}, "mlx: [quantize] The requested number of bits 7 is not supported. The supported "
                                    "bits are 2, 3, 4, 5, 6 and 8."},
             row{{4, 16, "affine"}, "mlx: [quantize] The requested group size 16 is not supported. The supported "
                                    "group sizes are 32, 64, and 128."},
             row{{4, 64, "mxfp4"}, "mlx: [quantize] mxfp4 quantization requires group size 32 but got 64."},
             row{{8, 16, "nvfp4"}, "mlx: [quantize] nvfp4 quantization requires bits to be 4 but got 8."},
             row{{4, 64, "int4"}, "mlx: unknown --q-mode 'int4' (affine, mxfp4, nvfp4, mxfp8)"},
         }) {
        try {
            kvfit::mlx_resolve_quantization(r.q);
            ADD_FAILURE() << "no error for " << r.message;
        } catch (const kvfit::error & e) {
            EXPECT_STREQ(e.what(), r.message);
        }
    }
    mlx_settings s;
    s.kv_bits = 4;
    s.kv_group_size = 256;
    EXPECT_THROW(plan(small_model(), s), kvfit::error);
}

// --- Qwen3-8B at 32K: bf16, then --kv-bits 4 ------------------------------------------------------------------------

TEST(mlx_qwen3_8b, bf16_32k) {
    const auto m = catalog_model("Qwen3-8B");
    mlx_settings s;
    s.context_tokens = 32768;
    const auto p = plan(m, s);
    // No make_cache in qwen3.py: make_prompt_cache gives every layer a KVCache (cache.py:31-40).
    // 36 layers x 32768 cells x (8 KV heads x 128 x 2 B) x 2 (K, V) = 36 x 32768 x 4096 = 4,831,838,208 (4.50 GiB)
    EXPECT_EQ(bytes(p, "kv"), 4831838208u);
    EXPECT_EQ(p.kv_bytes_per_token, 147456u); // 36 x 4096
    // Weights from the config: 8,190,735,360 params x 2 B (bf16, torch_dtype); an estimate without the checkpoint.
    EXPECT_EQ(bytes(p, "weights"), 16381470720u);
    EXPECT_TRUE(buffer(p, "weights")->estimate);
    // Prefill transient (estimate): head dim 128 uses the fused kernel, so the FFN dominates:
    // 3 x 2048 x 12288 x 2 = 150,994,944, plus the residual 2 x 2048 x 4096 x 2 = 33,554,432 -> 184,549,376.
    EXPECT_EQ(bytes(p, "activation"), 184549376u);
    // Working set of a 64 GiB Mac: 48 GiB; the plan (19.93 GiB) fits, up to the trained 40960 tokens.
    EXPECT_TRUE(p.fits);
    EXPECT_EQ(p.max_context_fit, 40960u);
    EXPECT_EQ(p.launch, "mlx_lm.generate --model Qwen/Qwen3-8B");
}

// A config's weights at the model's dtype decide the verdict: said as an assumption in every output and refused by
// --strict; --weights (a GGUF or serving format: q4_0, fp8) is no format mlx-lm loads and was ignored, the bf16 bytes
// planned (a new-user trial: "--weights q4_0" still 15.26 GiB). --q-bits plans mlx_lm.convert -q's bytes.
TEST(mlx_qwen3_8b, default_dtype_is_an_assumption_and_weights_formats_are_refused) {
    mlx_settings s;
    s.context_tokens = 8192;
    const auto p = plan(catalog_model("Qwen3-8B"), s);
    ASSERT_EQ(p.assumptions.size(), 1u);
    EXPECT_EQ(p.assumptions[0].rfind("weights sized at the model's dtype, 2 B per parameter (the config's bfloat16)", 0), 0u)
        << p.assumptions[0];
    s.weights.bits = 4;
    EXPECT_TRUE(plan(catalog_model("Qwen3-8B"), s).assumptions.empty());
    const auto strict = kvfit::test::run_kvfit("Qwen3-8B --gpu 'M4 Pro 24GB' --runtime mlx --context-tokens 8192 --strict");
    EXPECT_EQ(strict.status, 2);
    EXPECT_EQ(strict.err.rfind("kvfit: strict: 1 assumption refused: weights sized at the model's dtype", 0), 0u) << strict.err;
    const auto text = kvfit::test::run_kvfit("Qwen3-8B --gpu 'M4 Pro 24GB' --runtime mlx --context-tokens 8192");
    EXPECT_NE(text.out.find("  assumed: weights sized at the model's dtype"), std::string::npos) << text.out;
    const auto q4 = kvfit::test::run_kvfit("Qwen3-8B --gpu 'M4 Pro 24GB' --runtime mlx --weights q4_0");
    EXPECT_EQ(q4.status, 2);
    EXPECT_EQ(q4.err.rfind("kvfit: --weights q4_0: not a format mlx-lm loads; give a config's MLX quantization with --q-bits", 0), 0u)
        << q4.err;
    EXPECT_EQ(kvfit::test::run_kvfit("Qwen3-8B --gpu 'M4 Pro 24GB' --runtime mlx --q-bits 4 --strict").status, 0);
}

TEST(mlx_qwen3_8b, kv_bits_4_after_quantized_kv_start) {
    const auto m = catalog_model("Qwen3-8B");
    mlx_settings s;
    s.context_tokens = 32768;
    s.kv_bits = 4;
    const auto p = plan(m, s);
    // generate.py:294 converts every KVCache once offset >= --quantized-kv-start (5000, generate.py:47).
    // QuantizedKVCache per head per cell: 128 x 4 / 8 = 64 B packed + 2 groups x (scale + bias) x 2 B = 72 B, for K
    // and V: 36 layers x 8 heads x 144 B = 41,472 B per token; 32768 cells -> 1,358,954,496 (1.27 GiB, 3.56x less).
    EXPECT_EQ(bytes(p, "kv"), 1358954496u);
    EXPECT_EQ(p.kv_bytes_per_token, 41472u);
    // The conversion at 6144 tokens (the first 2048-chunk boundary past 5000) briefly holds the bf16 cache and its
    // copy: 6144 x 147456 + 6144 x 41472 = 1,160,773,632 < the end state: the end is the peak.
    EXPECT_FALSE(buffer(p, "kv")->estimate);
    EXPECT_EQ(p.launch, "mlx_lm.generate --model Qwen/Qwen3-8B --kv-bits 4");

    // At 6144 tokens the conversion is the peak: 905,969,664 (bf16) + 254,803,968 (quantized) = 1,160,773,632.
    s.context_tokens = 6144;
    const auto q = plan(m, s);
    EXPECT_EQ(bytes(q, "kv"), 1160773632u);
    EXPECT_TRUE(buffer(q, "kv")->estimate);
    // Below 5000 tokens nothing is quantized: 4999 tokens -> 5120 cells x 147456 = 754,974,720.
    s.context_tokens = 4999;
    EXPECT_EQ(bytes(plan(m, s), "kv"), 754974720u);
}

TEST(mlx_qwen3_8b, max_kv_size_rotates_every_layer) {
    const auto m = catalog_model("Qwen3-8B");
    mlx_settings s;
    s.context_tokens = 32768;
    s.max_kv_size = 4096;
    const auto p = plan(m, s);
    // RotatingKVCache(max_size=4096, keep=4) on 36 layers: 4095 + 2048 = 6143 cells x 4096 B x 36 = 905,822,208.
    EXPECT_EQ(bytes(p, "kv"), 905822208u);
    EXPECT_EQ(p.kv_bytes_per_token, 0u); // nothing grows with the context any more
    EXPECT_EQ(p.launch, "mlx_lm.generate --model Qwen/Qwen3-8B --max-kv-size 4096");
}

// --- Qwen3.5-27B: 16 full-attention layers and 48 Gated DeltaNet layers ---------------------------------------------

TEST(mlx_qwen35_27b, hybrid_32k) {
    const auto m = catalog_model("Qwen3.5-27B");
    mlx_settings s;
    s.context_tokens = 32768;
    s.weights.bits = 4; // mlx_lm.convert -q --q-bits 4 (group 64)
    const auto p = plan(m, s);
    // qwen3_5.py:346 make_cache: ArraysCache(size=2) on linear layers, KVCache on the 16 full ones.
    // KV: 16 x 32768 cells x (4 heads x 256 x 2 B x 2) = 16 x 32768 x 4096 = 2,147,483,648 (2 GiB).
    EXPECT_EQ(bytes(p, "kv"), 2147483648u);
    // State per linear layer: conv (qwen3_5.py:152, input dtype) 3 x (2 x 16 x 128 + 48 x 128) = 30720 x 2 B = 61,440;
    // delta-rule state (gated_delta.py:240, float32) 48 x 128 x 128 = 786432 x 4 B = 3,145,728. x 48 = 153,944,064.
    EXPECT_EQ(bytes(p, "state"), 153944064u);
    EXPECT_EQ(p.state_bytes_per_sequence, 153944064u);
    // Weights 4-bit affine, estimate: 26,895,998,464 x 4 / 8 + 26,895,998,464 / 64 x 4 B = 15,128,999,136.
    EXPECT_EQ(bytes(p, "weights"), 15128999136u);
    // Head dim 256 has no fused prefill kernel (scaled_dot_product_attention.cpp:763): the 2048-token chunk
    // materializes one score matrix (mask and softmax write into it: donation), 24 heads x 2048 x 32768 x 2 B =
    // 3,221,225,472, and the bool causal mask 2048 x 32768 = 67,108,864, plus q / out / k / v
    // 2048 x (2 x 24 x 256 + 4 x 512) x 2 = 58,720,256 and the residual 41,943,040 -> 3,388,997,632 (estimate).
    EXPECT_EQ(bytes(p, "activation"), 3388997632u);
    EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string & n) {
        return n.find("prefill attention unfused (head dim 256") != std::string::npos;
    }));
    // Largest context on a 64 GiB Mac (48 GiB working set): 65536 x cells + (24 x 2048 x 2 + 2048) x T + 100,663,296
    // + 153,944,064 <= 51,539,607,552 - 15,128,999,136; T = 217856 (cells 217856) fits, T = 217857 (cells 218112)
    // does not.
    EXPECT_EQ(p.max_context_fit, 217856u);
    EXPECT_EQ(p.launch, "mlx_lm.convert --hf-path Qwen/Qwen3.5-27B -q --q-bits 4 --q-group-size 64 --mlx-path "
                        "Qwen3.5-27B-4bit && mlx_lm.generate --model Qwen3.5-27B-4bit");

    // --kv-bits 4 quantizes the 16 KVCache layers only (ArraysCache has no to_quantized): 16 x 4 heads x 288 B
    // (144 K + 144 V) = 18,432 B per token, 32768 cells -> 603,979,776; the states stay.
    s.kv_bits = 4;
    const auto q = plan(m, s);
    EXPECT_EQ(bytes(q, "kv"), 603979776u);
    EXPECT_EQ(bytes(q, "state"), 153944064u);
}

// --- gpt-oss-20b: 12 sliding layers (window 128) and 12 full layers ----------------------------------------------

TEST(mlx_gpt_oss_20b, rotating_window) {
    const auto m = catalog_model("gpt-oss-20b");
    mlx_settings s;
    s.context_tokens = 32768;
    s.weights = {4, 32, "mxfp4", true}; // the HF MXFP4 checkpoint as mlx-lm loads it: experts only
    const auto p = plan(m, s);
    // gpt_oss.py:336-343: KVCache on full layers, RotatingKVCache(max_size=128) on sliding ones.
    // full: 12 x 32768 x (8 x 64 x 2 B x 2 = 2048) = 805,306,368; sliding: 12 x 2175 x 2048 = 53,452,800.
    EXPECT_EQ(bytes(p, "kv"), 858759168u);
    EXPECT_EQ(p.kv_bytes_per_token, 24576u);
    // Weights (estimate): 19,116,933,120 expert params x (0.5 + 1/32) B = 10,155,870,720, the other 1,797,824,064
    // params x 2 B = 3,595,648,128 -> 13,751,518,848 (12.81 GiB).
    EXPECT_EQ(bytes(p, "weights"), 13751518848u);
    EXPECT_TRUE(p.fits);
    EXPECT_TRUE(contains(p.notes, "bf16")); // the config names no dtype

    // --kv-bits: maybe_quantize_kv_cache reaches layer 0's RotatingKVCache first, whose to_quantized raises
    // (cache.py:551-552) once 5000 tokens are cached: the largest context that runs is 4999.
    s.kv_bits = 4;
    const auto q = plan(m, s);
    EXPECT_FALSE(q.starts);
    EXPECT_EQ(q.refusals, std::vector<std::string>{"NotImplementedError: RotatingKVCache Quantization NYI"});
    EXPECT_EQ(q.max_context_fit, 4999u);
}

// --- DeepSeek-V3: MLA caches the latent ----------------------------------------------------------------------------

TEST(mlx_deepseek_v3, latent_is_cached_not_full_kv) {
    const auto m = catalog_model("DeepSeek-V3");
    mlx_settings s;
    s.context_tokens = 32768;
    const auto p = plan(m, s, "M3 Ultra 512GB");
    // deepseek_v3.py:145 cache.update_and_fetch(kv_latent, k_pe): keys (1, 1, T, 512), values (1, 1, T, 64).
    // 61 layers x 32768 x 576 x 2 B = 2,302,672,896; full K/V would be 128 heads x (192 + 128) x 2 B = 81,920 B per
    // layer per token, 71x more.
    EXPECT_EQ(bytes(p, "kv"), 2302672896u);
    EXPECT_EQ(p.kv_bytes_per_token, 70272u); // 61 x 1152
    // --kv-bits: the KVCache converts, then deepseek_v3.py:147 calls k_pe.swapaxes on the (packed, scales, biases)
    // tuple.
    s.kv_bits = 4;
    const auto q = plan(m, s, "M3 Ultra 512GB");
    ASSERT_EQ(q.refusals.size(), 1u);
    EXPECT_TRUE(q.refusals[0].starts_with("AttributeError: 'tuple' object has no attribute 'swapaxes'"));
}

// --- mlx_lm.server ---------------------------------------------------------------------------------------------------

TEST(mlx_server, batch_and_prompt_cache_bound) {
    const auto m = catalog_model("Qwen3-8B");
    mlx_settings s;
    s.command = kvfit::mlx_command::server;
    s.context_tokens = 8192;
    s.n_seq = 4;
    const auto p = plan(m, s);
    // BatchKVCache (cache.py:921-975): 4 sequences x 36 x 8192 cells x 4096 B = 4,831,838,208.
    EXPECT_EQ(bytes(p, "kv"), 4831838208u);
    // LRUPromptCache(--prompt-cache-size 10) and no byte limit: 10 entries x 1,207,959,552 = 12,079,595,520 (bound).
    EXPECT_EQ(bytes(p, "prompt_cache"), 12079595520u);
    EXPECT_TRUE(buffer(p, "prompt_cache")->estimate);
    // Prompts prefilled 4 at a time (--prompt-concurrency 8 > 4): 4 x 184,549,376.
    EXPECT_EQ(bytes(p, "activation"), 4 * 184549376ull);
    // --prompt-cache-bytes 8 GiB: server.py:731-734 trims the LRU to 8 GiB minus the active caches.
    s.prompt_cache_bytes = 8 * GiB;
    const auto q = plan(m, s);
    EXPECT_EQ(bytes(q, "prompt_cache"), 8 * GiB - 4831838208ull);
    EXPECT_EQ(q.launch, "mlx_lm.server --model Qwen/Qwen3-8B --prompt-cache-bytes 8589934592");
    // The server has no KV quantization or rotation flags: argparse refuses them.
    s.kv_bits = 4;
    s.max_kv_size = 4096;
    const auto r = plan(m, s);
    EXPECT_EQ(r.refusals, std::vector<std::string>{"mlx_lm.server: error: unrecognized arguments: --max-kv-size 4096 "
                                                   "--kv-bits 4"});
    EXPECT_EQ(r.max_context_fit, 0u);
}

// --- refusals, warnings and launch lines ------------------------------------------------------------------------------

TEST(mlx_refusals, generate_one_sequence_and_unknown_caches) {
    mlx_settings s;
    s.n_seq = 2;
    EXPECT_TRUE(contains(plan(small_model(), s).refusals, "mlx_lm.generate decodes one sequence, not 2"));
    s.n_seq = 1;
    s.prompt_cache_size = 3;
    EXPECT_EQ(plan(small_model(), s).refusals,
              std::vector<std::string>{"mlx_lm.generate: error: unrecognized arguments: --prompt-cache-size 3"});
    EXPECT_EQ(plan(small_model(kvfit::cache_kind::compressed), {}).refusals,
              std::vector<std::string>{"mlx: no mlx-lm rule for compressed caches of ratio 4 (layer 0)"});
    EXPECT_THROW(kvfit::plan_mlx(small_model(), {}, {}), kvfit::error);
    // an NVIDIA GPU is no device for MLX (Apple silicon's unified memory); a size stands for a Mac's memory
    try {
        kvfit::plan_mlx(small_model(), {}, kvfit::parse_gpu_list("H100"));
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "mlx: H100 SXM is an NVIDIA GPU; MLX runs on Apple silicon (give a Mac, e.g. --gpu \"M3 "
                               "Max 64GB\", or a memory size)");
    }
    EXPECT_NO_THROW(kvfit::plan_mlx(small_model(), {}, kvfit::parse_gpu_list("64GiB")));
}

TEST(mlx_refusals, head_dim_not_divisible_by_kv_group_size) {
    // mx.quantize (mlx/ops.cpp quantize) on keys of shape (1, 8, 6144, 64) with group 128: MLX's message.
    mlx_settings s;
    s.context_tokens = 8192;
    s.kv_bits = 4;
    s.kv_group_size = 128;
    const auto p = plan(small_model(), s);
    EXPECT_EQ(p.refusals, std::vector<std::string>{
                              "ValueError: [quantize] The last dimension of the matrix needs to be divisible by the "
                              "quantization group size 128. However the provided  matrix has shape (1,8,6144,64)"});
}

TEST(mlx_warnings, near_working_set_and_ignored_max_kv_size) {
    // generate.py:239-247: weights above 0.9 x the working set. Qwen3.5-27B bf16 (53.79 GB) on a 64 GiB Mac.
    mlx_settings s;
    s.context_tokens = 4096;
    auto p = plan(catalog_model("Qwen3.5-27B"), s);
    EXPECT_TRUE(contains(p.warnings, "[WARNING] Generating with a model that requires 51300 MB which is close to the "
                                     "maximum recommended size of 49152 MB."));
    EXPECT_FALSE(p.fits);
    EXPECT_EQ(p.max_context_fit, 0u);
    // make_cache models never read max_kv_size (cache.py:31-32).
    s.max_kv_size = 1024;
    p = plan(catalog_model("Qwen3.5-27B"), s);
    EXPECT_TRUE(contains(p.warnings, "--max-kv-size is ignored"));
    EXPECT_EQ(bytes(p, "kv"), 16ull * 4096 * 4096); // still KVCache: 16 layers x 4096 cells x 4096 B
}

TEST(mlx_launch, wired_limit_and_flags) {
    mlx_settings s;
    s.model = "mlx-community/Qwen3-8B-4bit";
    s.iogpu_wired_limit_mb = 57344;
    s.kv_bits = 8;
    s.kv_group_size = 32;
    s.quantized_kv_start = 0;
    s.max_tokens = 2000;
    EXPECT_EQ(kvfit::mlx_launch_line(s, s.model, false),
              "sudo sysctl iogpu.wired_limit_mb=57344 && mlx_lm.generate --model mlx-community/Qwen3-8B-4bit "
              "--max-tokens 2000 --kv-bits 8 --kv-group-size 32 --quantized-kv-start 0");
    // 56 GiB of a 64 GiB Mac planned instead of 48.
    const auto p = plan(catalog_model("Qwen3-8B"), s);
    EXPECT_EQ(p.devices[0].capacity_bytes, 56 * GiB);
    EXPECT_EQ(p.devices[0].capacity_bytes / MiB, 57344u);
}

} // namespace

// mlx-lm #1781 (tests/data/serving_logs/mlx-1781-*): Qwen3.8-27B 4-bit (Qwen3.5-27B's layout) on an M5 Max, one prompt
// at prefill_step_size 256 / 512 / 1024 / 2048, peaks 26.52 / 28.54 / 32.26 / 39.78 GB. The peak grows 7.34 MB per
// chunk token: with one bf16 score matrix of 24 heads and the bool mask (49 B per key and chunk token, MLX's unfused
// attention, docs/rules/mlx.md §6) that is about 150,000 keys, where the rows' header infers 131,072 from "full 128K
// context". Planned at 150,001 tokens (the prompt and one generated token), every row is within 2 %: the slope and the
// intercept agree with one length. The length is fitted on these four rows; the one-matrix rule is checked on another
// model and other lengths by mlx-lm #1480's rows (test_serving_explain.cpp, issue27_added_logs).
TEST(mlx_qwen35_27b, mlx_lm_1781_step_ladder_at_150k) {
    const auto m = catalog_model("Qwen3.5-27B");
    const std::pair<uint32_t, double> rows[] = {{256, 26.52e9}, {512, 28.54e9}, {1024, 32.26e9}, {2048, 39.78e9}};
    for (const auto & [step, peak] : rows) {
        mlx_settings s;
        s.context_tokens = 150001;
        s.prefill_step_size = step;
        s.weights.bits = 4;
        const auto p = plan(m, s, "M5 Max 128GB");
        const double used = double(p.devices.at(0).used_bytes());
        EXPECT_NEAR(used / peak, 1.0, 0.02) << "step " << step << ": " << used;
    }
}

// A plan that fits within kvfit's measured error of MLX's peak (1.0-6.7 % under mx.get_peak_memory on the corpus's
// mlx-lm logs) says so: Qwen3.5-27B 4-bit at its largest fitting context on a 64 GiB Mac (217,856 tokens, above) uses
// nearly all of the 48 GiB working set; at 32,768 tokens it uses about 20 GiB and does not warn.
TEST(mlx_qwen35_27b, fit_within_measured_error_warns) {
    const auto m = catalog_model("Qwen3.5-27B");
    mlx_settings s;
    s.weights.bits = 4;
    s.context_tokens = 217856;
    const auto full = plan(m, s);
    EXPECT_TRUE(full.fits);
    EXPECT_TRUE(contains(full.warnings, "within kvfit's measured error")) << full.warnings.size();
    s.context_tokens = 32768;
    const auto small = plan(m, s);
    EXPECT_TRUE(small.fits);
    EXPECT_FALSE(contains(small.warnings, "within kvfit's measured error"));
}
