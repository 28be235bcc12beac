// vLLM and SGLang rules read from their source in session 4 of issue 13 (docs/rules/vllm-frontier.md §6, §7.2;
// docs/rules/sglang-frontier.md §6): MiniMax-M3's MSA index keys, vLLM's Mamba check on the CUDA-graph profiling
// cache, SGLang's DeepSeek-V4 pool configurator, and the warning for index keys no source was found for.
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/plan.h"
#include "kvfit/sglang.h"
#include "kvfit/sources.h"
#include "kvfit/vllm.h"

#include <algorithm>
#include <gtest/gtest.h>

namespace {

constexpr uint64_t GiB = 1ull << 30;

bool has(const std::vector<std::string> & v, const std::string & needle) {
    return std::any_of(v.begin(), v.end(), [&](const std::string & s) { return s.find(needle) != std::string::npos; });
}

// MiniMax-M3's text shape (tests/conformance/models_dsa.mjs minimax_m3, the aiconfigurator copy of the HF config):
// 60 layers of 64 query / 4 KV heads x 128, the first 3 dense, an MSA indexer of 128 values on layers 3..59.
kvfit::model_desc minimax_m3() {
    kvfit::model_desc m;
    m.name = "MiniMax-M3 (text)";
    m.architecture = "minimax-m3";
    m.n_layer = 60;
    m.n_embd = 6144;
    m.n_vocab = 200064;
    m.n_ctx_train = 1048576;
    m.dtype = "bfloat16";
    kvfit::resize_layers(m);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        m.n_head[il] = 64, m.n_head_kv[il] = 4, m.head_dim_k[il] = 128, m.head_dim_v[il] = 128;
        m.caches[il].push_back(kvfit::layer_cache::attention(kvfit::cache_kind::full, 4, 128, 128));
        if (il >= 3) m.caches[il].push_back(kvfit::layer_cache::indexer(128));
    }
    m.indexer_n_head = 4;
    m.indexer_top_k = 16;
    return m;
}

// vllm/models/minimax_m3 (nvidia/model.py @90215894, common/indexer.py @545393a3): every layer a FullAttentionSpec
// of H_kv/tp x 128 K and V; each sparse layer also an MLAAttentionSpec of one 128-wide bf16 index key; one
// UniformType group at block 128 (the sparse backends' only size).
TEST(vllm_sources, minimax_m3_msa_index_keys) {
    const kvfit::model_desc m = minimax_m3();
    kvfit::vllm_settings s;
    s.kv_cache_memory_bytes = 40 * GiB;
    s.max_model_len = 131072;
    const auto p = kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0);
    EXPECT_EQ(p.block_size, 128u);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_EQ(p.block_bytes, 128u * (60 * 2048 + 57 * 256)); // 137,472 B per token: 17,596,416 B per block
    EXPECT_EQ(p.num_gpu_blocks, 2440u);                        // 42,949,672,960 // 17,596,416
    EXPECT_EQ(p.per_request_blocks, 1024u);                    // cdiv(131,072, 128)
    s.tp = 4; // 1 KV head per rank; the index key is replicated
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0).block_bytes, 128u * (60 * 512 + 57 * 256));
    s.tp = 8; // 4 KV heads over 8 ranks: replicated to 1, as at TP 4
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0).block_bytes, 5799936u);
    s.tp = 1;
    s.kv_cache_dtype = "fp8"; // the main K/V in fp8, the index keys stay bf16 (indexer_kv_dtype)
    EXPECT_EQ(kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0).block_bytes, 9732096u); // 128 x 76,032
    s.kv_cache_dtype = "nvfp4";
    EXPECT_THROW(kvfit::plan_vllm(m, s, {"B200", 180 * GiB}, 10.0), kvfit::error);
    s.kv_cache_dtype = "auto";
    s.block_size = 16;
    try {
        kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0);
        FAIL() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "vllm: --block-size 16: the MiniMax-M3 sparse attention backend supports block size 128 only");
    }
}

// pool_configurator.py is_minimax_sparse: the main cell plus one index head per sparse layer in the model dtype, K
// only on MiniMax-M3 (every sparse layer disables the index value).
TEST(sglang_sources, minimax_m3_msa_cell) {
    const kvfit::model_desc m = minimax_m3();
    kvfit::sglang_settings s;
    s.mem_fraction_static = 0.85;
    const auto p = kvfit::plan_sglang(m, s, {"H200", 141 * GiB, 9.0});
    EXPECT_EQ(p.cell_bytes, 137472u);
    s.kv_cache_dtype = "fp8_e4m3";
    EXPECT_EQ(kvfit::plan_sglang(m, s, {"H200", 141 * GiB, 9.0}).cell_bytes, 60u * 1024 + 57 * 256); // 76,032
}

// vllm-frontier.md §7.2: before PR #48483 the CUDA-graph profiling cache held max_cudagraph_capture_size =
// min(2 x max_num_seqs, 512, max_num_batched_tokens) blocks; where the Mamba check ran on it, H100-class defaults
// (1024 sequences) stop with the message vLLM PR #38270 quotes: "max_num_seqs (1024) exceeds available Mamba cache
// blocks (512)".
TEST(vllm_sources, mamba_check_on_the_profiling_cache) {
    kvfit::warnings w;
    const kvfit::model_desc m = kvfit::load_model("Qwen3.5-27B", w);
    kvfit::vllm_settings s;
    s.kv_cache_memory_bytes = 60 * GiB; // 3 x the 417 blocks of 20 GiB: above the 1024 sequences, so vLLM itself starts
    s.max_model_len = 32768;
    const auto p = kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0);
    EXPECT_EQ(p.settings.max_num_seqs, 1024u);
    EXPECT_TRUE(p.fits()) << p.num_gpu_blocks << " blocks: " << (p.errors.empty() ? "" : p.errors[0]);
    EXPECT_TRUE(has(p.warnings, "\"max_num_seqs (1024) exceeds available Mamba cache blocks (512). Each decode sequence "
                                "requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower "
                                "max_num_seqs to at most 512 or increase gpu_memory_utilization.\""));
    s.max_num_seqs = 256; // capture size 512 >= 256: no warning
    EXPECT_FALSE(has(kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0).warnings, "Mamba cache blocks"));
    s.max_num_seqs = 1024;
    s.enforce_eager = true; // no CUDA graphs, no profiling of them
    EXPECT_FALSE(has(kvfit::plan_vllm(m, s, {"H200", 141 * GiB}, 9.0).warnings, "Mamba cache blocks"));
}

// DSV4PoolConfigurator (sglang-frontier.md §6), DeepSeek-V4-Flash (43 layers: 2 SWA, 21 C4, 20 C128), page 256,
// ratio 0.8: bytes_per_full_token = 0.8 x 584 x 43 + 584 x 21/4 + 584 x 20/128 + 132 x 21/4 + 0.8 x 8/256 x 8192 x 21
// + 0.8 x 8/256 x 2048 x 21 = 29,315.85; with --max-running-requests 256 the C128 state is fixed at
// ceil((257 x 128 + 129) / 128) x 128 = 33,152 rows x 2 x 512 x 4 B x 20 layers = 2,715,811,840 B ("2.53 GB").
TEST(sglang_sources, dsv4_pool_configurator) {
    kvfit::warnings w;
    kvfit::model_desc m = kvfit::load_model("DeepSeek-V4-Flash", w);
    kvfit::find_runtime("sglang").default_weights(m, w);
    kvfit::sglang_settings s;
    s.tp = 4;
    s.max_running_requests = 256;
    const auto p = kvfit::plan_sglang(m, s, {"B200", 180 * GiB, 10.0});
    EXPECT_EQ(p.settings.page_size, 256u);
    EXPECT_EQ(p.cell_bytes, 29316u);
    EXPECT_TRUE(has(p.notes, "bytes_per_full_token=29315.85")) << (p.notes.empty() ? "" : p.notes[0]);
    EXPECT_TRUE(has(p.notes, "c128_state_fixed=2.53 GB"));
    ASSERT_GT(p.rest_bytes, 0);
    const uint64_t full = uint64_t(double(uint64_t(p.rest_bytes) - 2715811840ull) / 29315.85) / 256 * 256;
    EXPECT_EQ(p.max_total_num_tokens, full);
    s.page_size = 64;
    EXPECT_THROW(kvfit::plan_sglang(m, s, {"B200", 180 * GiB, 10.0}), kvfit::error);
}

// Index keys beside full attention in a hybrid recurrent model (llama.cpp's hybrid-idx memory): no vLLM or SGLang
// source was found, so the plan says so in a source warning, which --strict refuses.
TEST(serving_sources, unsourced_index_keys_warn_and_strict_refuses) {
    kvfit::model_desc m = minimax_m3();
    m.rec_kind = kvfit::recurrent_kind::gated_deltanet;
    m.ssm_d_conv = 4, m.ssm_d_inner = 4096, m.ssm_d_state = 128, m.ssm_n_group = 16, m.ssm_n_head = 32, m.ssm_head_dim = 128;
    m.caches[0].clear();
    kvfit::add_recurrent_state(m, 0);
    m.n_head[0] = m.n_head_kv[0] = 0;
    for (uint32_t il = 1; il < 3; ++il) m.caches[il].push_back(kvfit::layer_cache::indexer(128)); // one attention page
    m.weights.token_embd.n_params = 1000000000; // something for --weights-size to spread over
    for (const char * rt : {"vllm", "sglang"}) {
        kvfit::plan_request q;
        q.runtime = rt;
        q.model = "x";
        q.gpu = "H200";
        q.weights_size = "100GB";
        const auto r = kvfit::make_plan(q, [&](kvfit::warnings &) { return m; });
        EXPECT_TRUE(has(r.plan.warnings, "hybrid-idx memory")) << rt;
        q.strict = true;
        try {
            kvfit::make_plan(q, [&](kvfit::warnings &) { return m; });
            ADD_FAILURE() << rt << ": --strict planned";
        } catch (const kvfit::error & e) {
            // this warning, and the H200's CUDA total being the GPU table's estimate (docs/gpus.md)
            EXPECT_NE(std::string(e.what()).find("strict: 2 warnings refused"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("hybrid-idx memory"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("H200: 139.72 GiB as CUDA reports it is an estimate"), std::string::npos)
                << e.what();
        }
    }
}

// Issue 13 item 7: the GPU rows users asked for, from the vendors' datasheets (data/gpus.csv source column), and a
// partial name suggesting the row it is part of.
TEST(serving_sources, gpu_rows_issue_13) {
    // the marketed size (GB); what the planner uses is the driver's figure, tests/test_gpus.cpp
    struct row { const char * name; const char * canonical; uint32_t gb; double cc; };
    for (const row & r : {row{"B300", "B300", 288, 10.3}, row{"GB200", "GB200", 186, 10.0}, row{"MI355X", "MI355X", 288, 0},
                          row{"V100 32GB", "V100 SXM2 32GB", 32, 7.0}, row{"V100 16GB", "V100 16GB", 16, 7.0},
                          row{"A40", "A40", 48, 8.6}, row{"RTX 3050 8GB", "RTX 3050 8GB", 8, 8.6},
                          row{"DGX Spark", "DGX Spark GB10", 128, 12.1}, row{"GB10", "DGX Spark GB10", 128, 12.1}}) {
        const kvfit::gpu_info * g = kvfit::find_gpu(r.name);
        ASSERT_NE(g, nullptr) << r.name;
        EXPECT_EQ(g->name, r.canonical);
        EXPECT_EQ(g->marketed_gb, r.gb) << r.name;
        EXPECT_DOUBLE_EQ(g->compute_capability, r.cc) << r.name;
    }
    EXPECT_EQ(kvfit::find_gpu("M3 Max"), nullptr);
    EXPECT_EQ(kvfit::closest_gpu_names("M3 Max", 1), (std::vector<std::string>{"M3 Max 36GB"}));
}

// vllm-frontier.md §8.1: no public log of an NVFP4 checkpoint's loaded size was found; the figure is labelled an
// estimate (a model warning, refused by --strict), under vLLM and SGLang alike.
TEST(serving_sources, nvfp4_weights_are_labelled_an_estimate) {
    kvfit::warnings w;
    kvfit::model_desc m = kvfit::load_model("Meta-Llama-3.1-8B", w);
    m.quant.method = "nvfp4", m.quant.label = "nvfp4", m.quant.bits = 4, m.quant.group_size = 16;
    for (const char * rt : {"vllm", "sglang"}) {
        kvfit::plan_request q;
        q.runtime = rt;
        q.model = "x";
        q.gpu = "B200";
        q.weights_size = "6GB";
        const auto r = kvfit::make_plan(q, [&](kvfit::warnings &) { return m; });
        EXPECT_TRUE(has(r.plan.warnings, "the NVFP4 layout (4.5 bits per weight plus fp32 globals per shard) is an "
                                         "estimate")) << rt;
    }
}

} // namespace
