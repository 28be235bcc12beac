// Recorded reserve graphs (src/runtimes/llamacpp/graph_replay.h, data/graphs, tools/graph_template): every measured
// context of a model with a recorded graph replays to llama.cpp's own compute buffer, byte for byte, in both releases.
// The measurements are the conformance suite's (tests/conformance/measured/<id>.<release>.jsonl: llama.cpp's
// no_alloc contexts of the shape-exact GGUFs, measure_dsv4.mjs / measure_dsa.mjs), taken by earlier sessions with
// the shipped node-llama-cpp builds, not with the tracing build the templates were recorded with.
#include "kvfit/gguf.h"
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"
#include "runtimes/llamacpp/graph_replay.h"
#include "support/files.h"
#include "support/spec_rows.h"
#include "kvfit/error.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

namespace {

using json = nlohmann::json;

const std::pair<const char *, kvfit::llamacpp_release> releases[] = {{"v0.5.0", kvfit::llamacpp_release::v0_5_0},
                                                                     {"5b4ebc5", kvfit::llamacpp_release::b5b4ebc5}};

/// The model of a measured file: the header-only GGUF the suite wrote for it (tests/data/gguf_synthetic).
kvfit::model_desc header_model(const std::string & id) {
    kvfit::warnings warn;
    return kvfit::model_from_gguf(std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/" + id + "_v512.gguf", warn);
}

/// Context lines of tests/conformance/measured/<file>, with the file's vocabulary size in "n_vocab".
std::vector<json> measured_contexts(const std::string & file) {
    std::vector<json> out;
    std::ifstream in(std::string(KVFIT_SOURCE_DIR) + "/tests/conformance/measured/" + file);
    std::string line;
    uint32_t n_vocab = 0;
    while (std::getline(in, line)) {
        json j = json::parse(line);
        if (j.value("kind", "") == "model") n_vocab = j.value("n_vocab", 0u);
        if (j.value("kind", "") != "context" || !j.value("ok", false)) continue;
        if (j.contains("n_vocab_file")) n_vocab = j["n_vocab_file"].get<uint32_t>();
        j["n_vocab"] = n_vocab;
        out.push_back(std::move(j));
    }
    return out;
}

/// The settings measure.mjs gave llama.cpp: n_batch = n_ubatch (the addon's batchSize), libllama's n_outputs_max =
/// n_batch.
kvfit::llamacpp_settings settings_of(const json & q, kvfit::llamacpp_release rel) {
    kvfit::llamacpp_settings s;
    s.n_ctx = q["n_ctx"].get<uint64_t>();
    s.n_seq = q["n_seq"].get<uint32_t>();
    s.flash_attn = q["flash_attn"].get<bool>() ? kvfit::flash_attn_mode::on : kvfit::flash_attn_mode::off;
    s.type_k = kvfit::ggml_type_from_name(q["type_k"].get<std::string>());
    s.type_v = kvfit::ggml_type_from_name(q["type_v"].get<std::string>());
    s.n_ubatch = s.n_batch = q["n_ubatch"].get<uint32_t>();
    s.swa_full = q.value("swa_full", false);
    s.server_outputs = false;
    s.release = rel;
    return s;
}

// Default settings of release rel at context n_ctx.
kvfit::llamacpp_settings at_release(kvfit::llamacpp_release rel, uint64_t n_ctx) {
    kvfit::llamacpp_settings s;
    s.release = rel;
    s.n_ctx = n_ctx;
    return s;
}

} // namespace

// Every measured context of each recorded model, both releases: compute = the context's memory (KV + state + compute,
// exact in the breakdown) minus kvfit's KV and state (exact: test_llamacpp_kv.cpp, the conformance suite).
TEST(graph_replay, measured_contexts_replay_byte_exact) {
    struct recorded {
        const char * id;
        size_t min_rows; // per release
    };
    const recorded models[] = {{"deepseek-v4-flash", 40}, {"qwen38-flash-next", 37}, {"glm-5", 27}, {"deepseek-v3.2", 27}, {"deepseek-v3.2-nomtp", 27}, {"minimax-m3", 29}, {"glm-5-idxtypes", 27}};
    for (const auto & [rel_name, rel] : releases) {
        for (const recorded & r : models) {
            kvfit::model_desc m = header_model(r.id);
            size_t n = 0;
            for (const json & row : measured_contexts(std::string(r.id) + "." + rel_name + ".jsonl")) {
                m.n_vocab = row["n_vocab"].get<uint32_t>();
                const kvfit::llamacpp_settings s = settings_of(row["req"], rel);
                const kvfit::llamacpp_context c = kvfit::llamacpp_context_size(m, s);
                uint64_t kv = 0;
                for (const auto & k : kvfit::llamacpp_kv_caches(m, s, c)) kv += k.bytes();
                const uint64_t want = row["ctx_cpuRam_bytes"].get<uint64_t>() - kv - kvfit::llamacpp_recurrent(m, c).bytes();
                const auto got = kvfit::detail::replay_compute(m, s, c);
                ASSERT_TRUE(got.has_value()) << rel_name << " " << r.id << " " << row["req"].dump();
                EXPECT_EQ(got->bytes, want) << rel_name << " " << r.id << " " << row["req"].dump();
                EXPECT_EQ(kvfit::llamacpp_compute_bytes(m, s, c), want) << rel_name << " " << r.id << " " << row["req"].dump();
                EXPECT_EQ(kvfit::llamacpp_compute_unmodelled(m, s, &c), "") << rel_name << " " << r.id;
                ++n;
            }
            EXPECT_GE(n, r.min_rows) << rel_name << " " << r.id;
            std::printf("[graph_replay] %s %s: %zu measured contexts byte-exact\n", rel_name, r.id, n);
        }
    }
}

// The probe's contexts (tests/conformance/measured/spec-{outputs,mtp}.<release>.jsonl: llama_probe, the C API with
// llama-server's n_outputs_max and MTP targets' recurrent-state snapshots, n_rs_seq): llama-server's few outputs, and
// the target context of an MTP command, whose compressor states keep n_rs_seq snapshots (DeepSeek-V4 rolls back).
TEST(graph_replay, probe_contexts_replay_byte_exact) {
    for (const auto & [rel_name, rel] : releases) {
        size_t n = 0;
        std::map<std::string, size_t> per_model;
        for (const char * group : {"outputs", "mtp"}) {
            for (const json & row : kvfit::test::spec_contexts(std::string("spec-") + group + "." + rel_name + ".jsonl")) {
                // every row of a model with a recorded graph (the header-only GGUF of <id>_v<n_vocab>.gguf)
                const std::string model = row.value("model", "");
                const size_t v = model.rfind("_v");
                if (v == std::string::npos || row["req"].value("ctx_type", "") == "mtp") continue;
                const std::string id = model.substr(0, v);
                if (!std::filesystem::exists(std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/" + id + "_v512.gguf")) continue;
                kvfit::model_desc m = header_model(id);
                m.n_vocab = uint32_t(std::stoul(model.substr(v + 2)));
                const json & q = row["req"];
                kvfit::llamacpp_settings s = kvfit::test::spec_settings(q, rel);
                if (!kvfit::detail::replay_covers(m, s)) continue;
                kvfit::llamacpp_context c = kvfit::llamacpp_context_size(m, s);
                // the probe's own request: llama-server's outputs and the snapshots llama.cpp kept (n_rs_seq_actual)
                if (q.contains("n_outputs_max")) c.n_outputs_max = q["n_outputs_max"].get<uint32_t>();
                c.n_rs_seq = row.value("n_rs_seq_actual", 0u);
                const auto got = kvfit::detail::replay_compute(m, s, c);
                ASSERT_TRUE(got.has_value()) << rel_name << " " << model << " " << q.dump();
                EXPECT_EQ(got->bytes, kvfit::test::breakdown_bytes(row, "compute")) << rel_name << " " << model << " " << q.dump();
                ++per_model[id];
                ++n;
            }
        }
        // DeepSeek-V4-Flash: 5 llama-server output rows + 4 MTP-target rows (its -mtp sibling); a model recorded later
        // joins this loop by its template alone
        EXPECT_GE(per_model["deepseek-v4-flash"] + per_model["deepseek-v4-flash-mtp"], 9u) << rel_name;
        for (const auto & [id, k] : per_model) std::printf("[graph_replay] %s %s: %zu probe contexts byte-exact\n", rel_name, id.c_str(), k);
        EXPECT_GE(n, 9u) << rel_name;
    }
}

// The catalog's config.json and the GGUF the converter writes describe the same graph: one key, so the catalog model
// is replayed too (the key covers the graph's own dimensions: model_desc::graph_dims).
TEST(graph_replay, catalog_config_and_gguf_share_the_graph_key) {
    kvfit::warnings warn;
    const kvfit::model_desc gguf = header_model("deepseek-v4-flash");
    const kvfit::catalog_entry * e = kvfit::find_catalog("DeepSeek-V4-Flash");
    ASSERT_NE(e, nullptr);
    const kvfit::model_desc cfg = kvfit::model_from_catalog(*e, warn);
    EXPECT_EQ(kvfit::detail::llamacpp_graph_key(gguf), kvfit::detail::llamacpp_graph_key(cfg));
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    EXPECT_TRUE(kvfit::detail::replay_covers(cfg, s));
    EXPECT_EQ(kvfit::llamacpp_compute_unmodelled(cfg, s), "");
}

// A sibling whose graph was not recorded is never replayed with another shape's graph: one dimension the graph
// depends on (here the grouped output LoRA rank, a graph_dims entry; then the expert count) changes the key, and the
// plan falls back to the estimate, warned with the reason.
TEST(graph_replay, another_shape_of_the_family_is_not_replayed) {
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    kvfit::model_desc m = header_model("deepseek-v4-flash");
    ASSERT_TRUE(kvfit::detail::replay_covers(m, s));
    kvfit::model_desc o = m;
    o.graph_dims["attention.output_lora_rank"] = 2048;
    std::string why;
    EXPECT_FALSE(kvfit::detail::replay_covers(o, s, &why));
    EXPECT_NE(why.find("no graph recorded for this model shape"), std::string::npos) << why;
    const std::string warn = kvfit::llamacpp_compute_unmodelled(o, s);
    EXPECT_NE(warn.find("hyper-connections"), std::string::npos) << warn;
    EXPECT_NE(warn.find("no graph recorded for this model shape"), std::string::npos) << warn;
    kvfit::model_desc e = m;
    e.n_expert = 384;
    EXPECT_FALSE(kvfit::detail::replay_covers(e, s));
}

// Settings outside the recorded variants fall back to the estimate with the reason: a bf16 cache was not recorded.
TEST(graph_replay, unrecorded_cache_types_fall_back_with_the_reason) {
    const kvfit::model_desc m = header_model("deepseek-v4-flash");
    kvfit::llamacpp_settings s;
    s.n_ctx = 8192;
    s.type_k = s.type_v = kvfit::ggml_type::bf16;
    std::string why;
    EXPECT_FALSE(kvfit::detail::replay_covers(m, s, &why));
    EXPECT_NE(why.find("bf16/bf16"), std::string::npos) << why;
    EXPECT_NE(kvfit::llamacpp_compute_unmodelled(m, s), "");
}

// Recurrent-state snapshots (n_rs_seq: an MTP target's rollback copies) are a variant key by count. DeepSeek-V4's
// compressor states gave one graph at 2 and 3 snapshots (rs=2+ in its templates): 5 is replayed with it; 1 was not
// recorded and falls back to the estimate, with the recorded counts named.
TEST(graph_replay, snapshot_counts_are_variants) {
    const kvfit::model_desc m = header_model("deepseek-v4-flash");
    for (const auto & [rel_name, rel] : releases) {
        const kvfit::llamacpp_settings s = at_release(rel, 8192);
        kvfit::llamacpp_context c = kvfit::llamacpp_context_size(m, s);
        c.n_rs_seq = 3;
        const auto three = kvfit::detail::replay_compute(m, s, c);
        ASSERT_TRUE(three.has_value()) << rel_name;
        EXPECT_NE(three->variant.find(" rs=2+"), std::string::npos) << three->variant;
        c.n_rs_seq = 5;
        const auto five = kvfit::detail::replay_compute(m, s, c);
        ASSERT_TRUE(five.has_value()) << rel_name;
        EXPECT_GT(five->bytes, three->bytes) << rel_name; // two more compressor-state copies in the graph's inputs
        c.n_rs_seq = 1;
        std::string why;
        EXPECT_FALSE(kvfit::detail::replay_compute(m, s, c, &why).has_value()) << rel_name;
        EXPECT_NE(why.find("1 recurrent-state snapshots (recorded: 2 or more)"), std::string::npos) << why;
    }
}

// The stream layout is a variant key where it changes the graph: MiniMax-M3's MSA with flash attention loops over the
// streams, so one sequence, 3 and 4 streams and one unified stream over several sequences are four graphs (st=1, 3, 4,
// 1u); 2 streams were not recorded and fall back to the stage estimate, with the recorded layouts named. Without flash
// attention one graph serves every layout (no st=).
TEST(graph_replay, stream_layouts_are_variants_where_they_change_the_graph) {
    const kvfit::model_desc m = header_model("minimax-m3");
    for (const auto & [rel_name, rel] : releases) {
        kvfit::llamacpp_settings s = at_release(rel, 16384);
        s.n_seq = 4;
        s.kv_unified = true;
        auto r = kvfit::detail::replay_compute(m, s, kvfit::llamacpp_context_size(m, s));
        ASSERT_TRUE(r.has_value()) << rel_name;
        EXPECT_NE(r->variant.find(" st=1u"), std::string::npos) << r->variant;
        s.kv_unified = false;
        r = kvfit::detail::replay_compute(m, s, kvfit::llamacpp_context_size(m, s));
        ASSERT_TRUE(r.has_value()) << rel_name;
        EXPECT_NE(r->variant.find(" st=4"), std::string::npos) << r->variant;
        s.n_seq = 2;
        std::string why;
        EXPECT_FALSE(kvfit::detail::replay_covers(m, s, &why)) << rel_name;
        EXPECT_NE(why.find("with 2 streams (the stream layout changes this graph; recorded: one sequence; a unified stream "
                           "over several sequences; 3 streams; 4 streams)"), std::string::npos) << why;
        s.flash_attn = kvfit::flash_attn_mode::off;
        r = kvfit::detail::replay_compute(m, s, kvfit::llamacpp_context_size(m, s));
        ASSERT_TRUE(r.has_value()) << rel_name;
        EXPECT_EQ(r->variant.find(" st="), std::string::npos) << r->variant;
    }
}

// Found by a new-user trial: where a family's graph is recorded, its stage set is known to be inexact (GLM-5 with flash
// attention at 202,752 cells: 25.2 % under the recorded graph), so a figure that falls back to it -- a bf16 cache, a
// sibling with another expert count, MiniMax-M3 with 2 streams -- is warned, never passed as modelled.
TEST(graph_replay, a_recorded_family_outside_its_recordings_is_warned) {
    kvfit::llamacpp_settings s;
    s.n_ctx = 202752;
    const kvfit::model_desc glm = header_model("glm-5");
    EXPECT_EQ(kvfit::llamacpp_compute_unmodelled(glm, s), "");
    s.type_k = s.type_v = kvfit::ggml_type::bf16;
    std::string w = kvfit::llamacpp_compute_unmodelled(glm, s);
    EXPECT_NE(w.find("the reserve graph of glm-dsa was recorded for other shapes or settings only"), std::string::npos) << w;
    EXPECT_NE(w.find("bf16/bf16"), std::string::npos) << w;
    s.type_k = s.type_v = kvfit::ggml_type::f16;
    kvfit::model_desc sibling = glm;
    sibling.n_expert = 128;
    w = kvfit::llamacpp_compute_unmodelled(sibling, s);
    EXPECT_NE(w.find("no graph recorded for this model shape"), std::string::npos) << w;
    s.n_ctx = 16384;
    s.n_seq = 2;
    w = kvfit::llamacpp_compute_unmodelled(header_model("minimax-m3"), s);
    EXPECT_NE(w.find("with 2 streams"), std::string::npos) << w;
}

// Found by a new-user trial: absurd settings wrapped the stage arithmetic past 2^64 (a figure 512x too small, no error);
// a graph whose attention scores alone pass 1 EiB is refused with one line instead.
TEST(graph_replay, absurd_contexts_are_refused_not_wrapped) {
    const kvfit::model_desc m = header_model("glm-5");
    kvfit::llamacpp_settings s;
    s.n_ctx = 8192;
    kvfit::llamacpp_context c = kvfit::llamacpp_context_size(m, s);
    EXPECT_GT(kvfit::llamacpp_compute_bytes(m, s, c), 0u);
    c.n_ctx = c.n_ctx_seq = 1ull << 32;
    c.n_ubatch = c.n_batch = 1u << 22;
    try {
        (void)kvfit::llamacpp_compute_bytes(m, s, c);
        ADD_FAILURE() << "no error";
    } catch (const kvfit::error & e) {
        EXPECT_NE(std::string(e.what()).find("would pass 1 EiB"), std::string::npos) << e.what();
    }
}

// Found by a new-user trial: a DeepSeek-V4 sibling with fewer than two residual copies (hc_mult 1, or absent) had no
// template and no hyper-connections either, and its stage-set figure passed as modelled (38 % under the replayed
// one). Compressed caches alone now mark the graph as not modelled.
TEST(graph_replay, compressed_caches_without_a_recording_are_named_estimates) {
    kvfit::model_desc m = header_model("deepseek-v4-flash");
    m.n_hc = 1;
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    const std::string warn = kvfit::llamacpp_compute_unmodelled(m, s);
    EXPECT_NE(warn.find("compressed attention caches"), std::string::npos) << warn;
    EXPECT_NE(warn.find("no graph recorded for this model shape"), std::string::npos) << warn;
}

// A config.json renamed to names kvfit cannot know plans from its keys the same layout: with every dimension of the
// recorded model it is replayed (the rename test's rule: the plan stays the same), the key taken with the
// template's architecture.
TEST(graph_replay, a_renamed_config_with_the_recorded_shape_is_replayed) {
    auto cfg = nlohmann::json::parse(kvfit::test::shared_config("deepseek-ai__DeepSeek-V4-Flash.json"));
    kvfit::warnings warn;
    const kvfit::model_desc named = kvfit::model_from_hf_config(cfg.dump(), "v4.json", warn);
    cfg["model_type"] = "zz_unknown";
    cfg["architectures"] = {"ZzUnknownForCausalLM"};
    const kvfit::model_desc renamed = kvfit::model_from_hf_config(cfg.dump(), "zz.json", warn);
    ASSERT_TRUE(renamed.gguf_architecture.empty());
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    ASSERT_TRUE(kvfit::detail::replay_covers(named, s));
    std::string why;
    EXPECT_TRUE(kvfit::detail::replay_covers(renamed, s, &why)) << why;
    const auto c = kvfit::llamacpp_context_size(named, s);
    EXPECT_EQ(kvfit::llamacpp_compute_bytes(renamed, s, kvfit::llamacpp_context_size(renamed, s)),
              kvfit::llamacpp_compute_bytes(named, s, c));
}

// Issue 24 item 3: a graph that several releases record identically is kept once (tools/graph_template/
// share_releases.py), its `release` line naming them; the shared file serves each release (the replay tests above
// run both releases over it), and no two files of one model hold the same graph.
TEST(graph_replay, one_copy_of_a_graph_the_releases_share) {
    namespace fs = std::filesystem;
    // each file's graph without its release line and recording comments, by model name
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_name;
    size_t shared = 0;
    for (const auto & e : fs::directory_iterator(std::string(KVFIT_SOURCE_DIR) + "/data/graphs")) {
        const std::string file = e.path().filename().string();
        std::ifstream in(e.path());
        std::string line, body, releases;
        while (std::getline(in, line)) {
            if (line.rfind("release ", 0) == 0) releases = line.substr(8);
            else if (line.rfind("# ", 0) != 0) body += line + "\n";
        }
        ASSERT_FALSE(releases.empty()) << file << ": no release line";
        std::string stem = file.substr(0, file.size() - 4);
        for (const char * r : {".v0.5.0", ".5b4ebc5"}) {
            if (stem.size() > std::strlen(r) && stem.compare(stem.size() - std::strlen(r), std::strlen(r), r) == 0) {
                EXPECT_EQ(releases, std::string(r + 1)) << file << ": its name and its release line disagree";
                stem.resize(stem.size() - std::strlen(r));
            }
        }
        if (releases.find(' ') != std::string::npos) ++shared;
        by_name[stem].emplace_back(file, body);
    }
    for (const auto & [name, files] : by_name) {
        for (size_t i = 0; i < files.size(); ++i) {
            for (size_t j = i + 1; j < files.size(); ++j) {
                EXPECT_NE(files[i].second, files[j].second)
                    << files[i].first << " and " << files[j].first << " hold one graph: run tools/graph_template/share_releases.py";
            }
        }
    }
    EXPECT_GE(shared, 5u); // DeepSeek-V3.2, DeepSeek-V4, GLM-5 (both indexer layouts), MiniMax-M3
    // the shared files replay in both releases, named by the release asked for
    const kvfit::model_desc m = header_model("deepseek-v4-flash");
    for (const auto & [rel_name, rel] : releases) {
        kvfit::llamacpp_settings s;
        s.release = rel;
        s.n_ctx = 8192;
        s.flash_attn = kvfit::flash_attn_mode::on;
        std::string why;
        const auto r = kvfit::detail::replay_compute(m, s, kvfit::llamacpp_context_size(m, s), &why);
        ASSERT_TRUE(r.has_value()) << rel_name << ": " << why;
        EXPECT_NE(r->variant.find(std::string(" ") + rel_name + " "), std::string::npos) << r->variant;
    }
}

namespace {

/// Every field of two scheduler graphs equal (the instance as instantiate_graph returns it).
void expect_same_graph(const kvfit::detail::graph_instance & a, const kvfit::detail::graph_instance & b, const std::string & what) {
    ASSERT_EQ(a.g.t.size(), b.g.t.size()) << what;
    for (size_t i = 0; i < a.g.t.size(); ++i) {
        const kvfit::detail::gtensor & x = a.g.t[i];
        const kvfit::detail::gtensor & y = b.g.t[i];
        const bool same = x.op == y.op && x.type == y.type && x.ne == y.ne && x.nb == y.nb && x.flags == y.flags &&
                          x.view_src == y.view_src && x.view_offs == y.view_offs && x.src == y.src && x.params == y.params &&
                          x.name == y.name;
        ASSERT_TRUE(same) << what << ": tensor " << i << " (" << x.name << " / " << y.name << ")";
    }
    EXPECT_EQ(a.g.leafs, b.g.leafs) << what;
    EXPECT_EQ(a.g.nodes, b.g.nodes) << what;
    EXPECT_EQ(a.layer, b.layer) << what;
    EXPECT_EQ(a.weight, b.weight) << what;
    EXPECT_EQ(a.cache, b.cache) << what;
    EXPECT_EQ(a.variant, b.variant) << what;
}

} // namespace

// instantiate_graph keeps, per thread, the skeleton of a model's graph under its settings (what the context does not
// change) and evaluates only the shapes per probe. A graph built after other contexts and after another model of the
// same shape (one weight of another type) equals the one a fresh thread builds with no skeleton kept, for the prompt
// and the token graph; the other model's graph carries its own weight type.
TEST(graph_replay, a_graph_from_the_kept_skeleton_equals_a_fresh_build) {
    const kvfit::model_desc m = header_model("qwen35moe-35b");
    kvfit::model_desc other = m;
    size_t changed = other.weights.tensors.size();
    for (size_t i = 0; i < other.weights.tensors.size() && changed == other.weights.tensors.size(); ++i) {
        kvfit::weight_tensor & w = other.weights.tensors[i];
        if (w.name.rfind("blk.0.", 0) == 0) {
            w.type = w.type == kvfit::ggml_type::q8_0 ? kvfit::ggml_type::q4_0 : kvfit::ggml_type::q8_0;
            changed = i;
        }
    }
    ASSERT_LT(changed, other.weights.tensors.size());
    const std::string changed_name = other.weights.tensors[changed].name;
    for (const auto & [rel_name, rel] : releases) {
        for (const bool tg : {false, true}) {
            const std::string what = std::string(rel_name) + (tg ? " token graph" : " prompt graph");
            const kvfit::llamacpp_settings small = at_release(rel, 4096), big = at_release(rel, 65536);
            auto build = [&](const kvfit::model_desc & mm, const kvfit::llamacpp_settings & s) {
                return kvfit::detail::instantiate_graph(mm, s, kvfit::llamacpp_context_size(mm, s), tg);
            };
            // this thread: a small context of m, the other model, then a big context of each
            ASSERT_TRUE(build(m, small).has_value()) << what;
            ASSERT_TRUE(build(other, small).has_value()) << what;
            const auto warm = build(m, big);
            const auto warm_other = build(other, big);
            std::optional<kvfit::detail::graph_instance> fresh, fresh_other;
            std::thread([&] { fresh = build(m, big); }).join();
            std::thread([&] { fresh_other = build(other, big); }).join();
            ASSERT_TRUE(warm && warm_other && fresh && fresh_other) << what;
            expect_same_graph(*warm, *fresh, what);
            expect_same_graph(*warm_other, *fresh_other, what + " (other weight type)");
            bool found = false;
            for (size_t i = 0; i < warm_other->g.t.size(); ++i) {
                if (!warm_other->weight[i] || warm_other->g.t[i].name != changed_name) continue;
                found = true;
                EXPECT_EQ(warm_other->g.t[i].type, other.weights.tensors[changed].type) << what;
                EXPECT_NE(warm->g.t[i].type, warm_other->g.t[i].type) << what;
            }
            EXPECT_TRUE(found) << what << ": " << changed_name;
        }
    }
}

namespace {

// Issue 26 item 5: a corrupt embedded graph template fails loudly. Every embedded template parses (a failure is listed
// with its file and error), and a corrupted copy of a real one does not parse: a plan that needs such a template says
// "the recorded graph ... does not parse" (graph_replay.cpp), never "no graph recorded".
TEST(graph_replay, every_embedded_template_parses_and_a_corrupt_one_fails) {
    const std::vector<std::string> errors = kvfit::detail::graph_template_errors();
    EXPECT_TRUE(errors.empty()) << (errors.empty() ? std::string() : errors.front());
    for (const char * file : {"llama.v0.5.0.txt", "deepseek32.txt"}) {
        const std::string text = kvfit::test::read_text(std::string(KVFIT_SOURCE_DIR) + "/data/graphs/" + file);
        ASSERT_FALSE(text.empty()) << file;
        EXPECT_EQ(kvfit::detail::graph_template_parse_error(text), "") << file;
        std::string cut = text.substr(0, text.size() / 2); // a truncated file: half of it, ending mid-line
        cut += "\nt garbage\n";
        EXPECT_NE(kvfit::detail::graph_template_parse_error(cut), "") << file;
    }
}

} // namespace
