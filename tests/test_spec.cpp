// Speculative decoding in llama.cpp (src/runtimes/llamacpp/spec.cpp, docs/rules/llamacpp-spec.md): the MTP context
// (--spec-type draft-mtp) and draft models (-md), against the bytes measured with llama.cpp v0.5.0 and 5b4ebc5
// (tests/conformance/measured/spec-{k6,mtp,draft}.<release>.jsonl, written by tests/conformance/measure_spec.mjs through
// the probe: node-llama-cpp cannot create an MTP context, so these rows are replayed here instead of being suite rows),
// case K6 of ../shared/cases/README.md, and `kvfit exec` on the K6 command.
#include "kvfit/error.h"
#include "kvfit/gguf_writer.h"
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/plan.h"
#include "kvfit/report.h"
#include "kvfit/runtime.h"
#include "kvfit/sources.h"
#include "support/run_cli.h"
#include "support/spec_rows.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace {

using kvfit::gguf_wvalue;
using json = nlohmann::json;
constexpr uint64_t MiB = 1ull << 20;

std::string temp_path(const std::string & name) {
    const auto dir = std::filesystem::temp_directory_path() / ("kvfit-spec-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

struct qwen35_shape {
    uint32_t n_layer, n_embd, n_ff, n_head, ssm_inner, dt_rank;
};
constexpr qwen35_shape q35_9b{32, 4096, 12288, 16, 4096, 32};
constexpr qwen35_shape q35_27b{64, 5120, 17408, 24, 6144, 48}; // = Qwen3.6-27B (K6)

// qwen35 keys (K1's, ../shared/cases) with `mtp` NextN blocks; `tensors`: K6's weights as logged (CUDA0 16,386.94 MiB
// with the NextN block, CPU_Mapped 682.03 MiB = token_embd q4_K), one tensor per block.
std::string write_qwen35(const std::string & name, const qwen35_shape & h, uint32_t n_vocab, uint32_t mtp, bool tensors) {
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string("qwen35"));
    w.add("general.name", gguf_wvalue::string(name));
    w.add("qwen35.block_count", gguf_wvalue::u32(h.n_layer + mtp));
    if (mtp) w.add("qwen35.nextn_predict_layers", gguf_wvalue::u32(mtp));
    w.add("qwen35.context_length", gguf_wvalue::u32(262144));
    w.add("qwen35.embedding_length", gguf_wvalue::u32(h.n_embd));
    w.add("qwen35.feed_forward_length", gguf_wvalue::u32(h.n_ff));
    w.add("qwen35.attention.head_count", gguf_wvalue::u32(h.n_head));
    w.add("qwen35.attention.head_count_kv", gguf_wvalue::u32(4));
    w.add("qwen35.attention.key_length", gguf_wvalue::u32(256));
    w.add("qwen35.attention.value_length", gguf_wvalue::u32(256));
    w.add("qwen35.full_attention_interval", gguf_wvalue::u32(4));
    w.add("qwen35.ssm.conv_kernel", gguf_wvalue::u32(4));
    w.add("qwen35.ssm.inner_size", gguf_wvalue::u32(h.ssm_inner));
    w.add("qwen35.ssm.group_count", gguf_wvalue::u32(16));
    w.add("qwen35.ssm.state_size", gguf_wvalue::u32(128));
    w.add("qwen35.ssm.time_step_rank", gguf_wvalue::u32(h.dt_rank));
    w.add("qwen35.rope.dimension_sections", gguf_wvalue::array_i32({11, 11, 10, 0})); // M-RoPE: 4 positions per token
    w.add_spm_vocab(n_vocab);
    if (tensors) {
        using kvfit::ggml_type;
        w.add_tensor("token_embd.weight", ggml_type::q4_k, {h.n_embd, n_vocab}); // 682.03 MiB
        w.add_tensor("output.weight", ggml_type::q6_k, {h.n_embd, n_vocab});     // 994.63 MiB
        const uint64_t gpu = uint64_t(16386.94 * double(MiB));                  // CUDA0 model buffer, K6 log
        const uint64_t out = uint64_t(h.n_embd) / 256 * 210 * n_vocab;
        const uint64_t per_block = (gpu - out) / (h.n_layer + mtp) / 4;          // f32 elements
        for (uint32_t il = 0; il < h.n_layer + mtp; ++il) {
            w.add_tensor("blk." + std::to_string(il) + ".ffn_gate.weight", ggml_type::f32, {per_block});
        }
    }
    const std::string path = temp_path(name + ".gguf");
    w.write(path, kvfit::gguf_data::header_only);
    return path;
}

kvfit::model_desc load(const std::string & path) {
    kvfit::warnings warn;
    return kvfit::model_from_gguf(path, warn);
}

// the probe's measured contexts and their breakdown bytes (support/spec_rows.h)
using kvfit::test::breakdown_bytes;
using kvfit::test::spec_contexts;

uint64_t kv_bytes_of(const json & row) {
    double mib = 0;
    for (const auto & c : row["parsed"]["kv_caches"]) mib += c["K_MiB"].get<double>() + c["V_MiB"].get<double>();
    return uint64_t(mib * double(MiB) + 0.5);
}

using kvfit::test::spec_settings;

const std::pair<const char *, kvfit::llamacpp_release> releases[] = {{"v0.5.0", kvfit::llamacpp_release::v0_5_0},
                                                                     {"5b4ebc5", kvfit::llamacpp_release::b5b4ebc5}};

// Target rows ("tgt_*": the target context llama-server makes with MTP) and MTP rows ("mtp_*": the draft context with
// ctx_other = target) of one model: target recurrent state x (1 + n_rs_seq), KV, compute with n_parallel x (1 + N)
// outputs; the MTP context's KV (exact) and compute (estimate, within `tol`).
void check_mtp_rows(const std::string & file, const std::string & gguf, const kvfit::model_desc & m,
                    kvfit::llamacpp_release rel, double tol, bool target_compute_exact) {
    const auto rows = spec_contexts(file);
    std::map<std::string, const json *> tgt;
    for (const auto & r : rows) {
        if (r["model"] == gguf && r["req"]["id"].get<std::string>().rfind("tgt", 0) == 0) tgt[r["req"]["id"].get<std::string>().substr(3)] = &r;
    }
    int n_mtp = 0;
    for (const auto & r : rows) {
        const std::string id = r["req"]["id"];
        if (r["model"] != gguf || id.rfind("mtp", 0) != 0) continue;
        const auto it = tgt.find(id.substr(3));
        ASSERT_NE(it, tgt.end()) << id;
        const json & t = *it->second;
        kvfit::llamacpp_settings s = spec_settings(t["req"], rel);
        s.spec.mtp = true;
        s.spec.n_max = t["req"]["n_rs_seq"];
        const auto c = kvfit::llamacpp_context_size(m, s);
        EXPECT_EQ(c.n_rs_seq, t["n_rs_seq_actual"].get<uint32_t>()) << file << " " << id;
        EXPECT_EQ(c.n_outputs_max, t["req"]["n_outputs_max"].get<uint32_t>()) << file << " " << id;
        // breakdown "context" = KV + recurrent state (exact bytes)
        uint64_t kv = 0;
        for (const auto & k : kvfit::llamacpp_kv_caches(m, s, c)) kv += k.bytes();
        EXPECT_EQ(kv + kvfit::llamacpp_recurrent(m, c).bytes(), breakdown_bytes(t, "context")) << file << " " << id;
        if (target_compute_exact) {
            EXPECT_EQ(kvfit::llamacpp_compute_bytes(m, s, c), breakdown_bytes(t, "compute")) << file << " " << id;
        }
        // the MTP context: f16 (-ctkd default) whatever -ctk is, the target's n_ctx, n_parallel outputs
        const kvfit::llamacpp_settings ds = kvfit::llamacpp_draft_settings(m, s, c);
        EXPECT_EQ(ds.type_k, kvfit::ggml_type::f16);
        const auto dc = kvfit::llamacpp_context_size(m, ds);
        EXPECT_EQ(dc.n_ctx_seq, r["n_ctx_seq"].get<uint64_t>()) << id;
        EXPECT_EQ(dc.n_outputs_max, r["req"]["n_outputs_max"].get<uint32_t>()) << id;
        EXPECT_EQ(dc.n_rs_seq, 0u);
        const auto b = kvfit::llamacpp_mtp_buffers(m, ds, dc);
        EXPECT_EQ(b.kv_bytes, breakdown_bytes(r, "context")) << file << " " << id;
        EXPECT_EQ(b.kv_bytes, kv_bytes_of(r)) << file << " " << id;
        const double got = double(b.compute_bytes), want = double(breakdown_bytes(r, "compute"));
        EXPECT_NEAR(got / want, 1.0, tol) << file << " " << id << ": MTP compute " << got << " vs measured " << want;
        ++n_mtp;
    }
    EXPECT_GE(n_mtp, 4) << file << " " << gguf;
}

TEST(spec, mtp_context_and_target_state_k6_rows_both_releases) {
    // Qwen3.6-27B (= Qwen3.5-27B shape + 1 NextN block), real vocabulary, -b 4096 -ub 1024, n_max 2: the four K6
    // contexts 4096 / 184,320 / 190,464 / 262,144. MTP compute exact (the fitted estimate), target compute exact.
    const auto m = load(write_qwen35("qwen35-27b-mtp-v248320", q35_27b, 248320, 1, false));
    ASSERT_EQ(m.n_layer_mtp, 1u);
    for (const auto & [rel_name, rel] : releases) {
        check_mtp_rows(std::string("spec-k6.") + rel_name + ".jsonl", "qwen35-27b-mtp-v248320.gguf", m, rel, 1e-9, true);
    }
}

TEST(spec, mtp_context_qwen35_rows_both_releases) {
    // 512-token vocabulary, -ub 512, 1 and 2 sequences, q8_0 target cache: KV and state exact, MTP compute within 8 %
    const auto m9 = load(write_qwen35("qwen35-9b-mtp", q35_9b, 512, 1, false));
    const auto m27 = load(write_qwen35("qwen35-27b-mtp", q35_27b, 512, 1, false));
    for (const auto & [rel_name, rel] : releases) {
        const std::string file = std::string("spec-mtp.") + rel_name + ".jsonl";
        check_mtp_rows(file, "qwen35-9b-mtp.gguf", m9, rel, 0.085, true);
        check_mtp_rows(file, "qwen35-27b-mtp.gguf", m27, rel, 0.085, true);
    }
}

TEST(spec, mtp_kv_and_state_of_other_families_from_their_configs) {
    // The measured GGUFs of tests/conformance/spec_models.mjs are built from these configs (../shared/configs): the MTP
    // context's KV (a plain cache of the NextN layers; one 576-wide latent without the indexer on MLA; three full layers
    // for Step-3.7-Flash) and the target's recurrent state x (1 + n_rs_seq), against the breakdown bytes
    struct row { const char * config, * gguf; };
    const row rows[] = {{"Qwen__Qwen3.5-35B-A3B.json", "qwen35moe-35b_v512.gguf"},
                        {"nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json", "nemotron3-super-120b_v512.gguf"},
                        {"deepseek-ai__DeepSeek-V3.2.json", "deepseek-v3.2_v512.gguf"},
                        {"zai-org__GLM-5.json", "glm-5_v512.gguf"},
                        {"stepfun-ai__Step-3.7-Flash.json", "step35-3.7-flash-mtp_v512.gguf"}};
    const auto lines = spec_contexts("spec-mtp.v0.5.0.jsonl");
    for (const auto & r : rows) {
        kvfit::warnings warn;
        const auto m = kvfit::load_model(std::string(KVFIT_SHARED_DIR) + "/configs/" + r.config, warn);
        int n = 0;
        for (const auto & l : lines) {
            if (l["model"] != r.gguf) continue;
            const std::string id = l["req"]["id"];
            kvfit::llamacpp_settings s = spec_settings(l["req"], kvfit::llamacpp_release::v0_5_0);
            if (id.rfind("mtp", 0) == 0) {
                s.type_k = s.type_v = kvfit::ggml_type::f16;
                const auto c = kvfit::llamacpp_context_size(m, s);
                EXPECT_EQ(kvfit::llamacpp_mtp_buffers(m, s, c).kv_bytes, breakdown_bytes(l, "context")) << r.config << " " << id;
                ++n;
            } else if (l["parsed"].contains("rs") && !l["parsed"]["rs"].is_null()) {
                s.spec.mtp = true;
                s.spec.n_max = l["req"]["n_rs_seq"];
                const auto c = kvfit::llamacpp_context_size(m, s);
                EXPECT_NEAR(double(kvfit::llamacpp_recurrent(m, c).bytes()) / MiB, l["parsed"]["rs"]["size_MiB"].get<double>(), 0.006)
                    << r.config << " " << id;
            }
        }
        EXPECT_GE(n, 4) << r.config;
    }
}

// The MTP rows of the files the suite measured (spec-mtp.<release>.jsonl), read from their headers
// (tests/data/gguf_synthetic: kvfit-gguf-write --data header_only of the same specs), found by the live llama_probe rows
// (tests/conformance/spec_conformance.mjs):
// - the model buffer with draft-mtp (load_mtp, no mmap): the trunk's weights + weights.mtp. Step-3.7-Flash loads the
//   NextN tensors created TENSOR_NOT_REQUIRED whatever load_mtp says (models/step35.cpp load_block_mtp): they are in
//   the trunk's weights and no longer counted twice (82,535,424 B too many before);
// - DeepSeek-V4-Flash: the target's compressor states grow with n_rs_seq (n_planes = n_stream x (1 + n_rs_seq),
//   llama-kv-cache-dsv4.cpp:964: 12,206,080 B per snapshot), and its MTP context is a plain llama_kv_cache_iswa with V
//   beside K (llama-model.cpp:2469-2489, llama-kv-cache.cpp:231: 1.50 MiB at 768 cells f16, not 0.75).
TEST(spec, mtp_rows_of_the_measured_headers_both_releases) {
    struct row { const char * gguf; bool weights; bool dsv4; };
    const row rows[] = {{"step35-3.7-flash-mtp_v512.gguf", true, false}, {"deepseek-v3.2_v512.gguf", true, false},
                        {"glm-5_v512.gguf", true, false}, {"deepseek-v4-flash-mtp_v512.gguf", true, true}};
    for (const auto & [rel_name, rel] : releases) {
        const auto lines = spec_contexts(std::string("spec-mtp.") + rel_name + ".jsonl");
        for (const auto & r : rows) {
            const auto m = load(std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/" + r.gguf);
            ASSERT_GT(m.n_layer_mtp, 0u) << r.gguf;
            int n = 0;
            for (const auto & l : lines) {
                if (l["model"] != r.gguf) continue;
                const std::string id = l["req"]["id"];
                const bool target = id.rfind("tgt", 0) == 0;
                kvfit::llamacpp_settings s = spec_settings(l["req"], rel);
                s.spec.mtp = true;
                s.spec.n_max = l["req"].value("n_rs_seq", 2u);
                if (r.weights) {
                    EXPECT_EQ(m.weights.total_bytes() + m.weights.mtp.bytes, breakdown_bytes(l, "model")) << rel_name << " " << r.gguf << " " << id;
                }
                if (!r.dsv4) continue;
                if (target) {
                    const auto c = kvfit::llamacpp_context_size(m, s);
                    uint64_t kv = 0;
                    for (const auto & k : kvfit::llamacpp_kv_caches(m, s, c)) kv += k.bytes();
                    EXPECT_EQ(kv + kvfit::llamacpp_recurrent(m, c).bytes(), breakdown_bytes(l, "context")) << rel_name << " " << id;
                } else {
                    // the MTP context: the target's n_ctx, -ctkd/-ctvd (f16)
                    s.type_k = s.type_v = kvfit::ggml_type::f16;
                    s.spec = {};
                    const auto c = kvfit::llamacpp_context_size(m, s);
                    EXPECT_EQ(kvfit::llamacpp_mtp_buffers(m, s, c).kv_bytes, breakdown_bytes(l, "context")) << rel_name << " " << id;
                }
                ++n;
            }
            if (r.dsv4) EXPECT_EQ(n, 8) << rel_name << " " << r.gguf;
        }
    }
}

// detail.spec.compute_rule says how the MTP compute buffer is estimated: the closed form fitted on the dense Qwen3.5
// rows, the target's compute as an upper bound, or the target's when that is not modelled either (no bound).
TEST(spec, mtp_compute_rule_in_the_json) {
    const std::string dense = write_qwen35("qwen35-9b-mtp-rule", q35_9b, 512, 1, false);
    const std::pair<std::string, const char *> cases[] = {
        {dense, "fitted"},
        {std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/glm-5_v512.gguf", "target_bound"},
        // DeepSeek-V4's graph is replayed (data/graphs) for f16 and quantized caches; a bf16 cache was not recorded: the
        // MTP context's own cache types (-ctkd/-ctvd, f16 by default) decide whether its bound is replayed
        {std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/deepseek-v4-flash-mtp_v512.gguf -ctkd bf16 -ctvd bf16", "target_estimate"},
        {std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/deepseek-v4-flash-mtp_v512.gguf -ctk bf16 -ctv bf16", "target_bound"},
        {std::string(KVFIT_TEST_DATA) + "/gguf_synthetic/deepseek-v4-flash-mtp_v512.gguf", "target_bound"}};
    for (const auto & [path, rule] : cases) {
        const auto r = kvfit::test::run_kvfit(path + " -c 4096 --spec-type draft-mtp --spec-draft-n-max 2 --json");
        ASSERT_EQ(r.status, 0) << path << r.err;
        const json j = json::parse(r.out);
        EXPECT_EQ(j["detail"]["spec"]["compute_rule"], rule) << path;
        EXPECT_EQ(j["detail"]["spec"]["compute_estimate"], true) << path;
    }
    const auto plain = kvfit::test::run_kvfit(dense + " -c 4096 --json");
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_FALSE(json::parse(plain.out)["detail"].contains("spec"));
}

TEST(spec, mtp_refused_without_nextn_layers) {
    const auto m = load(write_qwen35("qwen35-9b-nomtp", q35_9b, 512, 0, false));
    kvfit::llamacpp_settings s;
    s.n_ctx = 4096;
    s.spec.mtp = true;
    EXPECT_THROW(kvfit::plan_llamacpp(m, s, {}, {}), kvfit::error);
}

TEST(spec, draft_model_context_rows_both_releases) {
    // Qwen3.5-9B (real vocabulary) as the draft of a target at 32768: its context takes the target's n_ctx, n_seq and
    // batches, -ctkd/-ctvd, n_outputs_max = n_parallel (the "draft_*" rows), not the addon's n_batch ("dflt_*" rows)
    const auto dm = load(write_qwen35("qwen35-9b_v248320", q35_9b, 248320, 0, false));
    for (const auto & [rel_name, rel] : releases) {
        int n = 0;
        for (const auto & r : spec_contexts(std::string("spec-draft.") + rel_name + ".jsonl")) {
            const json & q = r["req"];
            const bool draft = q["id"].get<std::string>().rfind("draft", 0) == 0;
            kvfit::llamacpp_settings t = spec_settings(q, rel);
            t.type_k = t.type_v = kvfit::ggml_type::f16; // the target's own types do not matter to the draft
            t.spec.draft_path = "draft.gguf";
            t.spec.type_k = t.spec.type_v = kvfit::parse_cache_type_flag("-ctkd", q["type_k"].get<std::string>());
            const auto tc = kvfit::llamacpp_context_size(dm, t);
            kvfit::llamacpp_settings ds = kvfit::llamacpp_draft_settings(dm, t, tc);
            if (!draft) ds.n_outputs_max = 0; // the addon's default
            const auto dc = kvfit::llamacpp_context_size(dm, ds);
            uint64_t kv = 0;
            for (const auto & k : kvfit::llamacpp_kv_caches(dm, ds, dc)) kv += k.bytes();
            EXPECT_EQ(kv + kvfit::llamacpp_recurrent(dm, dc).bytes(), breakdown_bytes(r, "context")) << q["id"];
            EXPECT_EQ(kvfit::llamacpp_compute_bytes(dm, ds, dc), breakdown_bytes(r, "compute")) << q["id"];
            ++n;
        }
        EXPECT_EQ(n, 4) << rel_name;
    }
}

// K6's machine: an RTX 5090 with 31,153 MiB free when llama.cpp's fit measures it (../shared/cases/README.md K6),
// --fit-target 512.
const std::vector<kvfit::device_spec> k6_gpu = {{"RTX 5090", 31153 * MiB, 12.0}};
constexpr uint64_t k6_margin = 512 * MiB;

kvfit::llamacpp_settings k6_settings() {
    kvfit::llamacpp_settings s;
    s.n_batch = 4096;
    s.n_ubatch = 1024;
    s.spec.mtp = true;
    s.spec.n_max = 2;
    return s;
}

TEST(spec, k6_fitted_context_with_mtp) {
    // Figures estimated rather than measured: the target compute is the CPU build's (264.04 MiB + the f16 mask; CUDA
    // logged 244 + mask: 20 MiB of token embeddings run on the host under CUDA, w-cuda's term), the MTP compute the
    // fitted estimate (exact on the CPU build at these sizes).
    const auto m = load(write_qwen35("qwen36-27b-k6", q35_27b, 248320, 1, true));
    ASSERT_NEAR(double(m.weights.token_embd.bytes) / MiB, 682.03, 0.01);
    kvfit::placement_settings p;
    kvfit::llamacpp_settings s = k6_settings();
    // v0.5.0 and 5b4ebc5 size the MTP context at the n_ctx the fit tries (common_fit_extra_model, common/fit.cpp:216)
    for (const auto & [rel_name, rel] : releases) {
        s.release = rel;
        const uint64_t n = kvfit::max_fitting_n_ctx(m, s, p, k6_gpu, k6_margin);
        EXPECT_NEAR(double(n) / 190464.0, 1.0, 0.02) << rel_name << ": " << n;
        s.n_ctx = n;
        const auto plan = kvfit::plan_llamacpp(m, s, p, k6_gpu, k6_margin);
        EXPECT_TRUE(plan.fits());
        EXPECT_EQ(plan.spec.ctx.n_ctx_seq, n); // the draft context follows the target's
        EXPECT_EQ(plan.devices[0].spec.kv_bytes, n * 4096);
        s.n_ctx = 0;
    }
    // build 9893 sized it at n_ctx_train: 1024 MiB of MTP KV + 648.04 MiB of compute whatever the target's n_ctx
    s.release = kvfit::llamacpp_release::v0_5_0;
    s.spec.draft_ctx = kvfit::spec_draft_ctx::n_ctx_train;
    const uint64_t n9893 = kvfit::max_fitting_n_ctx(m, s, p, k6_gpu, k6_margin);
    EXPECT_NEAR(double(n9893) / 184320.0, 1.0, 0.02) << n9893;
    s.n_ctx = n9893;
    const auto plan = kvfit::plan_llamacpp(m, s, p, k6_gpu, k6_margin);
    EXPECT_EQ(plan.spec.bytes.kv_bytes, 1024 * MiB);
    EXPECT_EQ(plan.spec.bytes.compute_bytes, 679514144u); // measured mtp_262144
    // without MTP the same command plans 14.6 % longer (the case's 218,368; kvfit: the CPU build's compute)
    kvfit::llamacpp_settings plain = k6_settings();
    plain.spec = {};
    plain.n_outputs_max = 1; // llama-server without speculative decoding: n_parallel outputs
    const uint64_t n_plain = kvfit::max_fitting_n_ctx(m, plain, p, k6_gpu, k6_margin);
    EXPECT_NEAR(double(n_plain) / 218368.0, 1.0, 0.02) << n_plain;
}

TEST(spec, mtp_buffers_in_the_plan_text_and_json) {
    const std::string path = write_qwen35("qwen36-27b-k6", q35_27b, 248320, 1, true);
    kvfit::warnings warn;
    const kvfit::runtime_info & rt = kvfit::find_runtime("llama.cpp");
    kvfit::flag_values f;
    f.set("ctx_size", "131072");
    f.set("batch_size", "4096");
    f.set("ubatch_size", "1024");
    f.set("spec_type", "draft-mtp");
    f.set("spec_draft_n_max", "2");
    const auto r = kvfit::plan_model(rt, load(path), warn, f, kvfit::machine{k6_gpu});
    const auto & gpu = r.plan.devices.at(0);
    EXPECT_EQ(gpu.bytes_of("mtp_kv"), 131072u * 4096);
    EXPECT_GT(gpu.bytes_of("mtp_compute"), 0u);
    EXPECT_EQ(gpu.bytes_of("state"), 470679552u); // 3 x 149.625 MiB: n_rs_seq 2
    const std::string text = kvfit::render_text(r);
    EXPECT_NE(text.find("speculative decoding draft-mtp (n_max 2)"), std::string::npos) << text;
    EXPECT_NE(text.find("mtp_kv 512.00 MiB"), std::string::npos) << text;
    EXPECT_NE(r.plan.launch.find("--spec-type draft-mtp --spec-draft-n-max 2"), std::string::npos) << r.plan.launch;
    const json j = json::parse(kvfit::render_json(r));
    EXPECT_EQ(j["detail"]["spec"]["kv_bytes"], 131072u * 4096) << j["detail"].dump();
    EXPECT_EQ(j["detail"]["spec"]["n_rs_seq"], 2);
}

TEST(spec, draft_model_on_its_own_devices) {
    const std::string draft = write_qwen35("qwen35-9b-draft", q35_9b, 512, 0, true);
    const auto m = load(write_qwen35("qwen36-27b-k6", q35_27b, 248320, 1, true));
    const std::vector<kvfit::device_spec> two = {{"GPU0", 40960 * MiB, 0}, {"GPU1", 24576 * MiB, 0}};
    kvfit::llamacpp_settings s;
    s.n_ctx = 32768;
    s.spec.draft_path = draft;
    s.spec.draft = std::make_shared<const kvfit::model_desc>(load(draft));
    s.spec.draft_devices = {1};
    kvfit::placement_settings p;
    p.tensor_split = {1, 0};
    const auto plan = kvfit::plan_llamacpp(m, s, p, two);
    // the draft's 32 blocks' weights, KV (8 full layers x 32768 x 4096 B) and recurrent state on GPU1 only
    EXPECT_EQ(plan.devices[1].spec.kv_bytes, 8ull * 32768 * 4096);
    EXPECT_EQ(plan.devices[1].spec.state_bytes, 52690944u);
    EXPECT_GT(plan.devices[1].spec.weights_bytes, 0u);
    EXPECT_GT(plan.devices[1].spec.compute_bytes, 0u);
    EXPECT_EQ(plan.devices[0].spec.total(), 0u);
    // -ngld 0: the draft's blocks in host memory
    s.spec.draft_n_gpu_layers = 0;
    const auto host = kvfit::plan_llamacpp(m, s, p, two);
    EXPECT_EQ(host.devices[1].spec.weights_bytes, 0u);
    EXPECT_GT(host.devices.back().spec.weights_bytes, 0u);
    // -devd CUDA2 on two GPUs, -cd (in neither release's arg.cpp) are refused
    s.spec.draft_devices = {2};
    EXPECT_THROW(kvfit::plan_llamacpp(m, s, p, two), kvfit::error);
    kvfit::flag_values f;
    f.set("ctx_size_draft", "4096");
    EXPECT_THROW(kvfit::parse_llamacpp_flags(f), kvfit::error);
}

TEST(spec, exec_parses_the_spec_flags) {
    const auto c = kvfit::parse_launch_command({"llama-server", "-m", "x.gguf", "--spec-type", "draft-mtp",
                                                "--spec-draft-n-max", "2", "-md", "d.gguf", "-ngld", "10", "-ctkd", "q8_0",
                                                "-ctvd", "q8_0", "-devd", "CUDA1", "--fit-target", "512"});
    EXPECT_TRUE(c.settings.spec.mtp);
    EXPECT_EQ(c.settings.spec.n_max, 2u);
    EXPECT_EQ(c.settings.spec.draft_path, "d.gguf");
    EXPECT_EQ(c.settings.spec.draft_n_gpu_layers, 10);
    EXPECT_EQ(c.settings.spec.type_k, kvfit::ggml_type::q8_0);
    EXPECT_EQ(c.settings.spec.draft_devices, std::vector<int32_t>{1});
    EXPECT_EQ(c.fit_target_bytes, 512 * MiB);
    EXPECT_TRUE(c.not_modelled.empty());
    EXPECT_THROW(kvfit::parse_launch_command({"llama-server", "-m", "x.gguf", "-cd", "4096"}), kvfit::error);
    EXPECT_THROW(kvfit::parse_launch_command({"llama-server", "-m", "x.gguf", "--spec-type", "ngram-mod"}), kvfit::error);
}

TEST(spec, exec_refuses_the_k6_command_and_proposes_one_with_mtp) {
    const std::string model = write_qwen35("qwen36-27b-k6", q35_27b, 248320, 1, true);
    const auto r = kvfit::test::run_kvfit_env(
        "PATH=/usr/bin:/bin KVFIT_NO_NVML=1",
        "exec --gpu 31153MiB -- llama-server -m " + model +
            " --fit-target 512 -ngl 999 -b 4096 -ub 1024 -np 1 --spec-type draft-mtp --spec-draft-n-max 2");
    ASSERT_EQ(r.status, 3) << r.out << r.err; // no -c: n_ctx_train 262,144 does not fit with MTP
    EXPECT_EQ(r.err.find("not modelled"), std::string::npos) << r.err;
    // the proposed shorter context keeps the MTP flags and is the fit with MTP (within 2 % of K6's 190,464)
    std::string line;
    size_t start = 0;
    while (start < r.out.size() && line.empty()) {
        const size_t end = std::min(r.out.find('\n', start), r.out.size());
        const std::string l = r.out.substr(start, end - start);
        if (l.find("fits:") != std::string::npos && l.find(" tokens (") != std::string::npos) line = l;
        start = end + 1;
    }
    ASSERT_FALSE(line.empty()) << r.out;
    EXPECT_NE(line.find("--spec-type draft-mtp --spec-draft-n-max 2"), std::string::npos) << line;
    const size_t c = line.find(" -c ");
    ASSERT_NE(c, std::string::npos) << line;
    const uint64_t n = std::stoull(line.substr(c + 4));
    EXPECT_NEAR(double(n) / 190464.0, 1.0, 0.02) << line;
    // and the closest one keeps the MTP flags too (a q8_0 target cache at the same context: the MTP cache stays f16)
    EXPECT_NE(r.out.find("same context"), std::string::npos) << r.out;
}

TEST(spec, explain_reads_an_mtp_log) {
    // the probe's log lines of the K6 target and MTP contexts at 190,464 (spec-k6.v0.5.0.jsonl "raw"), as llama-server
    // prints them one after the other; the no_alloc probe's "KV buffer size = 0.00 MiB" lines are left out
    std::string text;
    for (const auto & r : spec_contexts("spec-k6.v0.5.0.jsonl")) {
        if (r["req"]["id"] != "tgt_190464" && r["req"]["id"] != "mtp_190464") continue;
        for (const auto & l : r["raw"]) {
            const std::string line = l;
            if (line.find("KV buffer size =     0.00") == std::string::npos) text += line + "\n";
        }
    }
    const auto log = kvfit::parse_llamacpp_log(text);
    EXPECT_GT(log.draft_context_line, 0u);
    const auto m = load(write_qwen35("qwen35-27b-mtp-v248320", q35_27b, 248320, 1, false));
    const auto ls = kvfit::settings_from_log(log, m);
    EXPECT_TRUE(ls.settings.spec.mtp);
    EXPECT_EQ(ls.settings.spec.n_max, 2u);
    const auto e = kvfit::explain_log(log, m);
    std::string rows;
    for (const auto & r : e.rows) rows += r.what + ": " + r.log + " | " + r.kvfit + (r.same ? "\n" : "  DIFFERS\n");
    EXPECT_EQ(e.differences, 0u) << rows;
    EXPECT_NE(rows.find("draft KV cache: 744.00 MiB (190464 cells, 1 layers)"), std::string::npos) << rows;
    EXPECT_NE(rows.find("draft compute buffer CPU: 508.04 MiB"), std::string::npos) << rows;
    EXPECT_NE(rows.find("recurrent state: 448.88 MiB"), std::string::npos) << rows;
}

} // namespace
