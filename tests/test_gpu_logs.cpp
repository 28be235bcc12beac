// Public GPU startup logs of llama.cpp (tests/data/gpu_logs, INDEX.md: source, date, command and model of each) read
// with kvfit's own log reader (parse_llamacpp_log) and planned with kvfit: what the log states per device is checked
// against the plan. Issue 24 item 6: a checkpoint's NextN/MTP blocks count in the -ts split as llama.cpp's converter
// writes them into block_count, from a GGUF and from a config.json alike.
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"
#include "support/files.h"

#include <gtest/gtest.h>
#include <map>

namespace {

constexpr uint64_t MiB = 1ull << 20;

kvfit::llamacpp_log read_log(const std::string & name) {
    return kvfit::parse_llamacpp_log(kvfit::test::read_text(std::string(KVFIT_TEST_DATA) + "/gpu_logs/" + name));
}

/// The log's KV buffers of one cache (0: the first cache created), by device, in MiB as printed.
std::map<std::string, double> kv_by_device(const kvfit::llamacpp_log & log, int cache) {
    std::map<std::string, double> out;
    for (const auto & b : log.kv_buffers) {
        if (b.cache == cache) out[b.device] += b.mib;
    }
    return out;
}

/// The GLM-5.2 run's settings: the log's context (n_ctx 524,288, one sequence, flash attention) and the command in
/// its header: -ngl 999 --n-cpu-moe 54 -ts 54,9,8,8 on four GPUs.
kvfit::llamacpp_plan plan_glm52_run(const kvfit::model_desc & m, const kvfit::llamacpp_log & log) {
    const kvfit::log_settings ls = kvfit::settings_from_log(log, m);
    kvfit::placement_settings p = ls.placement;
    p.n_gpu_layers = 999;
    p.n_cpu_moe = 54;
    p.tensor_split = {54, 9, 8, 8};
    std::vector<kvfit::device_spec> gpus;
    for (int d = 0; d < 4; ++d) gpus.push_back({"CUDA" + std::to_string(d), 97288 * MiB});
    kvfit::llamacpp_settings s = ls.settings;
    s.backend = kvfit::gpu_backend::cuda;
    return kvfit::plan_llamacpp(m, s, p, gpus, 0);
}

} // namespace

// glm52-dsa_c524288_4gpu_ncmoe54.log: block_count 79 (78 layers + the NextN block), "offloaded 80/80 layers",
// MLA cache CUDA0-3 = 31,680 / 5,184 / 4,608 / 3,456 MiB (55 / 9 / 8 / 6 layers of 576 MiB) and the DSA indexer
// cache 2,048 / 256 / 256 / 128 MiB (16 / 2 / 2 / 1 of its 21 layers). The model: the conformance suite's GLM-5 with
// GLM-5.2's indexer_types (tests/data/gguf_synthetic/glm-5-idxtypes_v512.gguf: GLM-5.2's block_count, nextn block,
// MLA and indexer widths; the vocabulary sizes no KV).
TEST(gpu_logs, glm52_tensor_split_counts_the_nextn_block_kv_per_device_exact) {
    const kvfit::llamacpp_log log = read_log("glm52-dsa_c524288_4gpu_ncmoe54.log");
    ASSERT_TRUE(log.offloaded.has_value());
    EXPECT_EQ(*log.offloaded, 80u);
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::model_from_gguf(std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/glm-5-idxtypes_v512.gguf", warn);
    ASSERT_EQ(m.n_layer + m.n_layer_mtp, 79u);
    const kvfit::llamacpp_plan p = plan_glm52_run(m, log);
    EXPECT_EQ(p.n_gpu_layers, 80u);
    const auto mla = kv_by_device(log, 0), idx = kv_by_device(log, 1);
    ASSERT_EQ(mla.size(), 4u);
    ASSERT_EQ(idx.size(), 4u);
    const uint32_t layers[] = {55, 9, 8, 6};
    for (int d = 0; d < 4; ++d) {
        const std::string dev = "CUDA" + std::to_string(d);
        EXPECT_EQ(p.devices[size_t(d)].n_layers, layers[d]) << dev;
        // KV per device: both caches together, byte-exact against the log's two lines
        EXPECT_EQ(p.devices[size_t(d)].used.kv_bytes, uint64_t((mla.at(dev) + idx.at(dev)) * MiB)) << dev;
    }
    EXPECT_EQ(p.devices.back().used.kv_bytes, 0u);
}

// The same run planned from zai-org/GLM-5's config.json (78 layers, num_nextn_predict_layers 1; GLM-5.2's shape but for
// the indexer on every layer): llama.cpp's converter writes block_count 79 (conversion/glm.py GlmMoeDsaModel), so the
// split is the log's, 55 / 9 / 8 / 6 layers, with the log's MLA cache per device; it was 54 / 9 / 8 / 7, the NextN
// block left out. The plan says how it counted the block.
TEST(gpu_logs, glm5_config_splits_as_the_converter_writes_block_count) {
    const kvfit::llamacpp_log log = read_log("glm52-dsa_c524288_4gpu_ncmoe54.log");
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::model_from_hf_config(
        kvfit::test::read_text(std::string(KVFIT_SHARED_DIR) + "/configs/zai-org__GLM-5.json"), "GLM-5/config.json", warn);
    EXPECT_EQ(m.n_layer, 78u);
    EXPECT_EQ(m.n_layer_mtp, 1u);
    const kvfit::llamacpp_plan p = plan_glm52_run(m, log);
    const auto mla = kv_by_device(log, 0);
    for (int d = 0; d < 4; ++d) {
        const std::string dev = "CUDA" + std::to_string(d);
        const kvfit::device_usage & u = p.devices[size_t(d)];
        // each layer: the 576-wide f16 MLA row and GLM-5's 128-wide f16 indexer row, 524,288 cells
        EXPECT_EQ(uint64_t(mla.at(dev) * MiB), uint64_t(u.n_layers) * 576 * 2 * 524288) << dev;
        EXPECT_EQ(u.used.kv_bytes, uint64_t(u.n_layers) * (576 + 128) * 2 * 524288) << dev;
    }
    const kvfit::runtime_plan r = kvfit::llamacpp_runtime_plan(m, p);
    bool noted = false;
    for (const auto & n : r.notes) noted |= n.find("block_count 79 = 78 layers + 1 NextN/MTP block") != std::string::npos;
    EXPECT_TRUE(noted);
}
