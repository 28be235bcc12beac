// The scheduler replay (src/runtimes/llamacpp/compute_sched.cpp) against llama.cpp's own scheduler on a simulated CUDA
// device (tools/simcuda, tests/conformance/cuda_conformance.mjs): every committed row of a family with a format-2
// graph template (data/graphs, tools/graph_template/graph2.py) must give each device's compute buffer to the byte, on
// the suite's own models (the shape the template's context design was recorded on) and on the held-out sibling
// shapes no template was fitted on (tests/conformance/shapes.mjs `check`: other layer counts, widths, head counts,
// head widths, expert counts and widths, vocabularies). The rows were measured with the release's shipped libllama in no_alloc mode (the prompt
// graph, ggml_backend_sched_reserve_size: the figure node-llama-cpp and llama.cpp's --fit read).
// Models: header-only GGUFs at the small vocabulary (tests/data/gguf_shapes, shapes.mjs --headers); the row's
// vocabulary is set on the model: the logits' width and the rows of token_embd and output.weight (checked against the
// real-vocabulary header of llama-s16: the same figures).
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

namespace {

using json = nlohmann::json;

struct rel_files {
    const char * name;
    kvfit::llamacpp_release rel;
};
const rel_files releases[] = {{"v0.5.0", kvfit::llamacpp_release::v0_5_0}, {"5b4ebc5", kvfit::llamacpp_release::b5b4ebc5}};

std::vector<json> rows_of(const std::string & file) {
    std::vector<json> out;
    std::ifstream in(std::string(KVFIT_SOURCE_DIR) + "/tests/conformance/measured/" + file);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) out.push_back(json::parse(line));
    }
    return out;
}

/// The plan cuda_conformance.mjs asks kvfit for (kvfitArgv): --no-mmap, --n-outputs-max batch, --backend cuda,
/// 24,080 MiB GPUs, the row's -c / -fa / -ub / -b / -ngl / -ts / --n-cpu-moe / -ctk / -ctv / -np / --no-kv-offload.
kvfit::llamacpp_plan plan_of(const kvfit::model_desc & m, const json & r, kvfit::llamacpp_release rel) {
    const json & c = r["ctx"];
    const json & mo = r["mopts"];
    kvfit::llamacpp_settings s;
    s.release = rel;
    s.n_ctx = c["n_ctx"].get<uint64_t>();
    s.flash_attn = c["fa"] == "on" ? kvfit::flash_attn_mode::on : kvfit::flash_attn_mode::off;
    s.n_ubatch = c["n_ubatch"].get<uint32_t>();
    s.n_batch = c["n_batch"].get<uint32_t>();
    s.n_seq = c.value("n_seq", 1u);
    if (c.contains("type_k")) s.type_k = kvfit::ggml_type_from_name(c["type_k"].get<std::string>());
    if (c.contains("type_v")) s.type_v = kvfit::ggml_type_from_name(c["type_v"].get<std::string>());
    s.server_outputs = false; // libllama's n_outputs_max = n_batch
    const uint32_t n_gpu = r["n_gpu"].get<uint32_t>();
    kvfit::placement_settings p;
    p.mmap = false;
    p.no_kv_offload = c.value("kqv_offload", 1) == 0;
    std::vector<kvfit::device_spec> gpus;
    if (n_gpu > 0) {
        s.backend = kvfit::gpu_backend::cuda;
        p.n_gpu_layers = mo["ngl"].get<int32_t>();
        if (mo.contains("ts")) {
            std::string ts = mo["ts"];
            for (size_t a = 0; a <= ts.size();) {
                const size_t b = std::min(ts.find(',', a), ts.size());
                p.tensor_split.push_back(std::stod(ts.substr(a, b - a)));
                a = b + 1;
            }
        }
        const uint32_t cm = mo.value("n_cpu_moe", 0u);
        if (cm == 999) p.cpu_moe = true;
        else p.n_cpu_moe = cm;
        for (uint32_t d = 0; d < n_gpu; ++d) gpus.push_back({"GPU" + std::to_string(d), 24080ull << 20});
    }
    return kvfit::plan_llamacpp(m, s, p, gpus, 0);
}

/// llama.cpp's compute buffers by kvfit's device order: CUDA<i>, then every host buffer type together.
std::vector<uint64_t> measured_compute(const json & r, size_t n_devices) {
    std::vector<uint64_t> out(n_devices, 0);
    for (const json & b : r["breakdown"]) {
        const std::string buft = b["buft"];
        // the CPU build's buffer ("CPU", not flagged host without a GPU) and every host buffer type: the last device
        const bool host = b["host"].get<bool>() || buft.rfind("CUDA", 0) != 0;
        const size_t d = host ? n_devices - 1 : size_t(std::stoul(buft.substr(4)));
        out.at(d) += b["compute"].get<uint64_t>();
    }
    return out;
}

} // namespace

TEST(cuda_sched, recorded_families_byte_exact_on_suite_and_held_out_shapes) {
    const std::string dir = std::string(KVFIT_TEST_DATA) + "/gguf_shapes/";
    for (const auto & [rel_name, rel] : releases) {
        std::map<std::string, kvfit::model_desc> models;
        size_t checked = 0, held_out = 0;
        std::map<std::string, size_t> per_family; // rows by family (the id's prefix)
        for (const std::string file : {std::string("cuda-") + rel_name + ".jsonl", std::string("cuda-shapes-") + rel_name + ".jsonl"}) {
            for (const json & r : rows_of(file)) {
                if (!r.value("ok", false)) continue;
                std::smatch mm;
                const std::string model = r["model"];
                ASSERT_TRUE(std::regex_match(model, mm, std::regex("(.+)_v(\\d+)"))) << model;
                const std::string id = mm[1];
                if (!std::filesystem::exists(dir + id + ".gguf")) continue; // a family without a template
                if (!models.count(id)) {
                    kvfit::warnings warn;
                    models[id] = kvfit::model_from_gguf(dir + id + ".gguf", warn);
                }
                kvfit::model_desc m = models[id];
                // the row's vocabulary: the logits' width, and the rows of token_embd and output.weight (a GPU's
                // compute buffer holds the offloaded output weight's copy at -ngl 0: op offload)
                const uint32_t n_vocab = uint32_t(std::stoul(mm[2]));
                for (kvfit::weight_tensor & w : m.weights.tensors) {
                    if ((w.name == "token_embd.weight" || w.name == "output.weight") && w.ne[1] == m.n_vocab) {
                        w.bytes = w.bytes / w.ne[1] * n_vocab;
                        w.ne[1] = n_vocab;
                    }
                }
                m.n_vocab = n_vocab;
                const kvfit::llamacpp_plan p = plan_of(m, r, rel);
                const std::string where = std::string(rel_name) + " " + model + " " + r["cls"].get<std::string>() + " " +
                                          r["mopts"].dump() + " x" + std::to_string(r["n_gpu"].get<int>()) + " " + r["ctx"].dump();
                const std::vector<uint64_t> want = measured_compute(r, p.devices.size());
                if (p.devices.size() > 1) {
                    ASSERT_TRUE(p.gpu_compute.replayed) << where << ": " << p.gpu_compute.why;
                    for (size_t d = 0; d < want.size(); ++d) EXPECT_EQ(p.gpu_compute.prompt_bytes.at(d), want[d]) << where << " device " << d;
                } else {
                    EXPECT_EQ(p.devices[0].used.compute_bytes, want[0]) << where;
                    EXPECT_EQ(kvfit::llamacpp_compute_unmodelled(m, p.settings, &p.ctx), "") << where;
                }
                ++checked;
                // the families' suite models (the shape each template's context design was recorded on:
                // tests/conformance/shapes.mjs FAMILIES base) are not held out
                held_out += id != "llama31-8b" && id != "qwen35-9b" && id != "qwen35moe-35b";
                ++per_family[id.rfind("qwen35moe", 0) == 0 ? "qwen35moe" : id.rfind("qwen35", 0) == 0 ? "qwen35" : "llama"];
            }
        }
        std::printf("[cuda_sched] %s: %zu rows byte-exact, %zu of them on held-out shapes\n", rel_name, checked, held_out);
        EXPECT_GE(checked, 100u) << rel_name;
        EXPECT_GE(held_out, 80u) << rel_name;
        // every family with a template has rows here, the MoE one on its suite model and both held-out shapes
        // (qwen35moe-s48, qwen35moe-s24: 29 placements each)
        for (const char * f : {"llama", "qwen35", "qwen35moe"}) EXPECT_GE(per_family[f], 50u) << rel_name << " " << f;
    }
}

// A qwen35moe model that lists no tensors (Qwen3.5-35B-A3B's config.json, ../shared/configs) is replayed through the
// family's template (data/graphs/qwen35moe.*: recorded on the suite's 35B-A3B and four synthetic siblings) with every
// layer on the GPU, not estimated; its compute buffers are the ones llama.cpp's scheduler gave the suite's GGUF of
// the same shape at the real vocabulary (measured/cuda-<release>.jsonl, qwen35moe-35b_v248320, full offload).
TEST(cuda_sched, qwen35moe_config_json_replayed_as_measured) {
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::load_model(std::string(KVFIT_SHARED_DIR) + "/configs/Qwen__Qwen3.5-35B-A3B.json", warn);
    for (const auto & [rel_name, rel] : releases) {
        size_t n = 0;
        for (const json & r : rows_of(std::string("cuda-") + rel_name + ".jsonl")) {
            if (r["model"] != "qwen35moe-35b_v248320" || r["cls"] != "full" || !r.value("ok", false)) continue;
            const kvfit::llamacpp_plan p = plan_of(m, r, rel);
            const std::string where = std::string(rel_name) + " " + r["ctx"].dump();
            ASSERT_TRUE(p.gpu_compute.replayed) << where << ": " << p.gpu_compute.why;
            const std::vector<uint64_t> want = measured_compute(r, p.devices.size());
            for (size_t d = 0; d < want.size(); ++d) EXPECT_EQ(p.gpu_compute.prompt_bytes.at(d), want[d]) << where << " device " << d;
            ++n;
        }
        EXPECT_GE(n, 2u) << rel_name; // flash attention on and off
    }
}
