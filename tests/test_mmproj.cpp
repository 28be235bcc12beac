// Projectors (--mmproj) and LoRA adapters (--lora): bytes read from the headers against llama.cpp's own measurements
// (tests/conformance/measured/spec-{mmproj,lora}.{5b4ebc5,v0.5.0}.jsonl: clip_get_mem_usage and the LoRA buffer lines of
// the real release), case K9 (../shared/cases/README.md), and where the plan puts them.
#include "kvfit/error.h"
#include "kvfit/gguf.h"
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/sources.h"
#include "support/gguf_fixture.h"

#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

using json = nlohmann::json;
using kvfit::ggml_type;
using kvfit::gguf_wvalue;

std::vector<json> read_jsonl(const std::string & name) {
    std::ifstream in(std::string(KVFIT_SOURCE_DIR) + "/tests/conformance/measured/" + name);
    std::vector<json> out;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) out.push_back(json::parse(line));
    }
    return out;
}

// The projector GGUFs the measurements were made with (tests/conformance/spec_models.mjs qwenvlMmproj, gemma3Mmproj:
// tensor names and splits of conversion/qwenvl.py, qwen3vl.py, gemma.py; matrices f16, vectors f32).
kvfit::gguf_writer mmproj_writer(const json & h) {
    const std::string kind = h["kind"];
    const uint64_t E = h["n_embd"], F = h["n_ff"], p = h["patch"], proj = h["proj_dim"];
    const uint32_t n_layer = h["n_layer"];
    kvfit::gguf_writer w;
    const std::string ptype = kind == "qwen2vl" ? "qwen2vl_merger" : kind == "qwen25vl" ? "qwen2.5vl_merger"
                              : kind == "qwen3vl" ? "qwen3vl_merger" : "gemma3";
    w.add("general.architecture", gguf_wvalue::string("clip"));
    w.add("general.type", gguf_wvalue::string("mmproj"));
    w.add("clip.has_vision_encoder", gguf_wvalue::boolean(true));
    w.add("clip.projector_type", gguf_wvalue::string(ptype));
    w.add("clip.vision.image_size", gguf_wvalue::u32(h["image_size"]));
    w.add("clip.vision.patch_size", gguf_wvalue::u32(uint32_t(p)));
    w.add("clip.vision.embedding_length", gguf_wvalue::u32(uint32_t(E)));
    w.add("clip.vision.feed_forward_length", gguf_wvalue::u32(uint32_t(F)));
    w.add("clip.vision.projection_dim", gguf_wvalue::u32(uint32_t(proj)));
    w.add("clip.vision.block_count", gguf_wvalue::u32(n_layer));
    w.add("clip.vision.attention.head_count", gguf_wvalue::u32(h["n_head"]));
    auto V = [&](const std::string & name, std::vector<uint64_t> shape, bool f32 = false) {
        const ggml_type type = f32 || shape.size() == 1 ? ggml_type::f32 : ggml_type::f16; // before the move
        w.add_tensor(name, type, std::move(shape));
    };
    if (kind == "gemma3") {
        const uint64_t side = uint64_t(h["image_size"]) / p;
        V("v.patch_embd.weight", {p, p, 3, E}), V("v.patch_embd.bias", {E}), V("v.position_embd.weight", {E, side * side}, true);
        for (uint32_t il = 0; il < n_layer; ++il) {
            auto b = [&](const std::string & n, std::vector<uint64_t> s) { V(fmt::format("v.blk.{}.{}", il, n), std::move(s)); };
            for (const char * x : {"q", "k", "v"}) b(fmt::format("attn_{}.weight", x), {E, E}), b(fmt::format("attn_{}.bias", x), {E});
            b("attn_out.weight", {E, E}), b("attn_out.bias", {E});
            b("ln1.weight", {E}), b("ln1.bias", {E}), b("ln2.weight", {E}), b("ln2.bias", {E});
            b("ffn_up.weight", {E, F}), b("ffn_up.bias", {F}), b("ffn_down.weight", {F, E}), b("ffn_down.bias", {E});
        }
        V("v.post_ln.weight", {E}), V("v.post_ln.bias", {E}), V("mm.soft_emb_norm.weight", {E});
        V("mm.input_projection.weight", {proj, E});
        return w;
    }
    V("v.patch_embd.weight", {p, p, 3, E}), V("v.patch_embd.weight.1", {p, p, 3, E});
    if (kind == "qwen3vl") {
        w.add("clip.vision.spatial_merge_size", gguf_wvalue::u32(2));
        V("v.patch_embd.bias", {E}), V("v.position_embd.weight", {E, h["n_pos"].get<uint64_t>()}, true);
    }
    if (kind == "qwen25vl") w.add("clip.vision.n_wa_pattern", gguf_wvalue::u32(h["n_wa_pattern"]));
    const bool rms = kind == "qwen25vl";
    std::vector<uint32_t> deepstack;
    if (h.contains("deepstack")) deepstack = h["deepstack"].get<std::vector<uint32_t>>();
    for (uint32_t il = 0; il < n_layer; ++il) {
        auto b = [&](const std::string & n, std::vector<uint64_t> s) { V(fmt::format("v.blk.{}.{}", il, n), std::move(s)); };
        if (kind == "qwen3vl") b("attn_qkv.weight", {E, 3 * E}), b("attn_qkv.bias", {3 * E});
        else for (const char * x : {"q", "k", "v"}) b(fmt::format("attn_{}.weight", x), {E, E}), b(fmt::format("attn_{}.bias", x), {E});
        b("attn_out.weight", {E, E}), b("attn_out.bias", {E});
        b("ln1.weight", {E}), b("ln2.weight", {E});
        if (!rms) b("ln1.bias", {E}), b("ln2.bias", {E});
        if (kind == "qwen25vl") b("ffn_gate.weight", {E, F}), b("ffn_gate.bias", {F});
        b("ffn_up.weight", {E, F}), b("ffn_up.bias", {F});
        b("ffn_down.weight", {F, E}), b("ffn_down.bias", {E});
        if (kind == "qwen3vl" && std::find(deepstack.begin(), deepstack.end(), il) != deepstack.end()) {
            const uint64_t D = 4 * E;
            const std::string ds = fmt::format("v.deepstack.{}.", il);
            V(ds + "norm.weight", {D}), V(ds + "norm.bias", {D}), V(ds + "fc1.weight", {D, D}), V(ds + "fc1.bias", {D});
            V(ds + "fc2.weight", {D, proj}), V(ds + "fc2.bias", {proj});
        }
    }
    V("v.post_ln.weight", {E});
    if (!rms) V("v.post_ln.bias", {E});
    const uint64_t M = 4 * E;
    V("mm.0.weight", {M, M}), V("mm.0.bias", {M}), V("mm.2.weight", {M, proj}), V("mm.2.bias", {proj});
    return w;
}

kvfit::mmproj_desc mmproj_of(const json & shape) {
    const std::string header = mmproj_writer(shape).header();
    return kvfit::mmproj_from_gguf(kvfit::gguf_file::parse(header, "mmproj"), "mmproj.gguf");
}

const json & row(const std::vector<json> & rows, const std::string & id, const std::string & fa) {
    for (const auto & r : rows) {
        if (r["id"] == id && r["fa"] == fa) return r;
    }
    throw kvfit::error("no row " + id);
}

double mib(uint64_t b) { return double(b) / 1048576.0; }

} // namespace

// Every measured projector (41 shapes x FA off/on per release): weights to the byte; the compute buffer to the byte
// where the rule is stated, and where it is not, marked an estimate (never silently exact).
TEST(mmproj, measured_weights_and_compute_per_release) {
    for (const char * release : {"v0.5.0", "5b4ebc5"}) {
        const auto rows = read_jsonl(fmt::format("spec-mmproj.{}.jsonl", release));
        ASSERT_EQ(rows.size(), 82u) << release;
        size_t exact = 0, estimates = 0;
        for (const auto & r : rows) {
            ASSERT_TRUE(r["ok"].get<bool>()) << r["id"];
            const kvfit::mmproj_desc p = mmproj_of(r["shape"]);
            const std::string what = fmt::format("{} {} fa {}", release, r["id"].get<std::string>(), r["fa"].get<std::string>());
            EXPECT_EQ(p.weights_bytes, r["weights_bytes"].get<uint64_t>()) << what;
            const kvfit::mmproj_compute c = kvfit::llamacpp_mmproj_compute(p, r["fa"] == "on");
            const uint64_t measured = r["compute_bytes"];
            if (c.modelled) {
                EXPECT_EQ(c.bytes, measured) << what;
                ++exact;
            } else {
                EXPECT_FALSE(c.why.empty()) << what;
                ++estimates;
            }
        }
        // 69 of 82 by a stated rule; the 13 others (Qwen3-VL FA on with wide projections or E 2304, Qwen2-VL FA on at
        // E 640 or patch 16, Qwen2.5-VL's 3F stage, Gemma 3 at 448 px) are estimates with the reason
        EXPECT_EQ(exact, 69u) << release;
        EXPECT_EQ(estimates, 13u) << release;
    }
}

// K9 (../shared/cases/README.md): the clip compute buffer FA off -> on, MiB: Qwen2.5-VL 4872 -> 705, Qwen3-VL 4728 -> 323,
// Qwen2-VL 4598 -> 267, gemma3 1132 -> 121 (the case's logs come from a CUDA build: 322.49 vs 323 is the one figure
// not equal after rounding, by 0.511 MiB: docs/rules/llamacpp-mmproj.md). Charging the file size alone under-counts Qwen3-VL by 4.4 GiB.
TEST(mmproj, k9_fa_off_and_on) {
    const auto rows = read_jsonl("spec-mmproj.v0.5.0.jsonl");
    struct k9 { const char * id; double off, on; };
    for (const k9 & k : {k9{"mmproj-qwen25vl-7b", 4872, 705}, k9{"mmproj-qwen3vl-4b", 4728, 323},
                         k9{"mmproj-qwen2vl-7b", 4598, 267}, k9{"mmproj-gemma3-12b", 1132, 121}}) {
        const kvfit::mmproj_desc p = mmproj_of(row(rows, k.id, "off")["shape"]);
        const kvfit::mmproj_compute off = kvfit::llamacpp_mmproj_compute(p, false), on = kvfit::llamacpp_mmproj_compute(p, true);
        EXPECT_TRUE(off.modelled && on.modelled) << k.id;
        EXPECT_LE(std::abs(mib(off.bytes) - k.off), 0.52) << k.id << " " << mib(off.bytes);
        EXPECT_LE(std::abs(mib(on.bytes) - k.on), 0.52) << k.id << " " << mib(on.bytes);
    }
    const kvfit::mmproj_desc q3 = mmproj_of(row(rows, "mmproj-qwen3vl-4b", "off")["shape"]);
    EXPECT_EQ(q3.n_deepstack, 3u);
    EXPECT_EQ(kvfit::llamacpp_mmproj_compute(q3, false).bytes, 4957737216u); // 4728.07 MiB besides 797.43 MiB of weights
}

// The projector in a plan: weights + clip compute on the first GPU (server-context.cpp:1063-1089), on the host with
// --no-mmproj-offload; read through the --mmproj flag from a file.
TEST(mmproj, placed_on_the_first_gpu_or_the_host) {
    const auto rows = read_jsonl("spec-mmproj.v0.5.0.jsonl");
    kvfit::test::scratch_dir dir("mmproj_plan");
    const std::string file = dir.file("mmproj-qwen2vl.gguf");
    mmproj_writer(row(rows, "mmproj-qwen2vl-7b", "off")["shape"]).write(file, kvfit::gguf_data::header_only);
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::load_model("Qwen3.5-9B", warn);
    kvfit::flag_values f;
    f.set("ctx_size", "8192");
    f.set("mmproj", file);
    f.set("flash_attn", "off");
    const kvfit::llamacpp_inputs in = kvfit::parse_llamacpp_flags(f);
    ASSERT_TRUE(in.settings.mmproj.has_value());
    EXPECT_EQ(in.settings.mmproj->weights_bytes, 1352605696u);
    kvfit::llamacpp_settings s = in.settings;
    s.n_ctx = 8192;
    const std::vector<kvfit::device_spec> gpu = {{"RTX 4090", 24ull << 30}};
    const kvfit::llamacpp_plan on_gpu = kvfit::plan_llamacpp(m, s, in.placement, gpu);
    EXPECT_EQ(on_gpu.devices[0].used.projector_bytes, 1352605696u + 4821636096u); // 5888.22 MiB, mtmd_get_memory_usage
    EXPECT_EQ(on_gpu.devices[1].used.projector_bytes, 0u);
    s.mmproj_offload = false;
    const kvfit::llamacpp_plan on_host = kvfit::plan_llamacpp(m, s, in.placement, gpu);
    EXPECT_EQ(on_host.devices[0].used.projector_bytes, 0u);
    EXPECT_EQ(on_host.devices[1].used.projector_bytes, 1352605696u + 4821636096u);
    EXPECT_EQ(on_gpu.devices[0].used.total(), on_host.devices[0].used.total() + 1352605696u + 4821636096u);
    // the round trip kvfit exec plans through: the flag values name the file again
    const kvfit::flag_values back = kvfit::llamacpp_flag_values(s, in.placement, in.margin_bytes);
    EXPECT_EQ(back.text("mmproj"), file);
    EXPECT_TRUE(back.boolean("no_mmproj_offload"));
    // the runtime plan: a "projector" buffer, detail.projector, the launch line keeps --mmproj
    const kvfit::runtime_plan r = kvfit::llamacpp_runtime_plan(m, on_gpu);
    bool found = false;
    for (const auto & b : r.devices[0].buffers) found |= b.name == "projector" && b.bytes == 1352605696u + 4821636096u;
    EXPECT_TRUE(found);
    EXPECT_EQ(r.detail["projector"]["compute_bytes"].get<uint64_t>(), 4821636096u);
    EXPECT_EQ(r.detail["projector"]["device"].get<std::string>(), "RTX 4090");
    EXPECT_NE(kvfit::llama_server_command(m, s, in.placement, 8192).find("--mmproj " + file + " --no-mmproj-offload"),
              std::string::npos);
}

// An audio encoder or a projector type without a rule: weights counted, compute not modelled, said in a warning.
TEST(mmproj, unmodelled_compute_is_a_warning) {
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string("clip"));
    w.add("clip.has_audio_encoder", gguf_wvalue::boolean(true));
    w.add("clip.projector_type", gguf_wvalue::string("qwen2a"));
    w.add_tensor("a.conv1d.1.weight", ggml_type::f16, {3, 128, 1280});
    const std::string header = w.header();
    const kvfit::mmproj_desc p = kvfit::mmproj_from_gguf(kvfit::gguf_file::parse(header, "a"), "audio.gguf");
    EXPECT_EQ(p.weights_bytes, 3u * 128 * 1280 * 2);
    EXPECT_EQ(p.audio_projector, "qwen2a");
    const kvfit::mmproj_compute c = kvfit::llamacpp_mmproj_compute(p, true);
    EXPECT_FALSE(c.modelled);
    EXPECT_NE(c.why.find("audio encoder"), std::string::npos) << c.why;
    kvfit::gguf_writer not_clip;
    not_clip.add("general.architecture", gguf_wvalue::string("llama"));
    const std::string h2 = not_clip.header();
    try {
        (void)kvfit::mmproj_from_gguf(kvfit::gguf_file::parse(h2, "x"), "x.gguf");
        ADD_FAILURE();
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "--mmproj x.gguf: not a projector (no clip.has_vision_encoder or clip.has_audio_encoder)");
    }
}

namespace {

// The adapters of tests/conformance/spec_models.mjs loraOf on Llama-3.1-8B (n_embd 4096, 8 KV heads x 128, FFN 14336):
// rank r on q/k/v/o (and gate/up/down), lora_a [n_in, r], lora_b [r, n_out].
kvfit::gguf_writer lora_writer(uint64_t r, bool ffn, ggml_type type, uint32_t n_layer = 32, uint64_t E = 4096,
                               uint64_t kv = 1024, uint64_t F = 14336, const std::string & arch = "llama") {
    kvfit::gguf_writer w;
    w.add("general.architecture", gguf_wvalue::string(arch));
    w.add("general.type", gguf_wvalue::string("adapter"));
    w.add("adapter.type", gguf_wvalue::string("lora"));
    w.add("adapter.lora.alpha", gguf_wvalue::f32(32));
    for (uint32_t il = 0; il < n_layer; ++il) {
        auto pair = [&](const char * name, uint64_t n_in, uint64_t n_out) {
            w.add_tensor(fmt::format("blk.{}.{}.weight.lora_a", il, name), type, {n_in, r});
            w.add_tensor(fmt::format("blk.{}.{}.weight.lora_b", il, name), type, {r, n_out});
        };
        pair("attn_q", E, E), pair("attn_k", E, kv), pair("attn_v", E, kv), pair("attn_output", E, E);
        if (ffn) pair("ffn_gate", E, F), pair("ffn_up", E, F), pair("ffn_down", F, E);
    }
    return w;
}

} // namespace

// The LoRA buffers llama.cpp logged ("CPU_Mapped LoRA buffer size = 26.00 MiB"; spec-lora jsonl, both releases).
TEST(lora, measured_buffer_sizes) {
    for (const char * release : {"v0.5.0", "5b4ebc5"}) {
        const auto rows = read_jsonl(fmt::format("spec-lora.{}.jsonl", release));
        size_t checked = 0;
        for (const auto & r : rows) {
            if (r["kind"] != "lora") continue;
            const std::string name = r["lora"];
            const kvfit::gguf_writer w = name == "llama31-8b-lora-r16.gguf"       ? lora_writer(16, false, ggml_type::f16)
                                         : name == "llama31-8b-lora-r64-ffn.gguf" ? lora_writer(64, true, ggml_type::f16)
                                                                                  : lora_writer(32, false, ggml_type::q8_0);
            const std::string header = w.header();
            const kvfit::lora_adapter a = kvfit::lora_from_gguf(kvfit::gguf_file::parse(header, name), name);
            EXPECT_EQ(a.n_tensors, r["n_tensors"].get<uint32_t>()) << name;
            EXPECT_NEAR(mib(a.bytes()), r["lora_buffers_MiB"]["CPU_Mapped"].get<double>(), 0.005) << release << " " << name;
            ++checked;
        }
        EXPECT_GE(checked, 3u) << release;
    }
    const std::string h = lora_writer(16, false, ggml_type::f16).header();
    EXPECT_EQ(kvfit::lora_from_gguf(kvfit::gguf_file::parse(h, "r16"), "r16").bytes(), 27262976u); // 26.00 MiB
}

// Each pair in the buffer type of its base weight (llama-adapter.cpp:330-357): offloaded blocks' adapters on the GPU,
// the rest in host RAM; a LoRA for another architecture is refused as llama.cpp refuses it.
TEST(lora, follows_its_base_weights) {
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::load_model("Meta-Llama-3.1-8B", warn);
    const std::string header = lora_writer(16, false, ggml_type::f16).header();
    kvfit::llamacpp_settings s;
    s.n_ctx = 8192;
    s.lora.push_back(kvfit::lora_from_gguf(kvfit::gguf_file::parse(header, "r16"), "r16.gguf"));
    if (m.gguf_architecture != "llama") GTEST_SKIP() << m.gguf_architecture;
    const std::vector<kvfit::device_spec> gpu = {{"RTX 4090", 24ull << 30}};
    kvfit::placement_settings p;
    const kvfit::llamacpp_plan all = kvfit::plan_llamacpp(m, s, p, gpu);
    EXPECT_EQ(all.devices[0].used.adapter_bytes, 27262976u);
    EXPECT_EQ(all.devices[1].used.adapter_bytes, 0u);
    p.n_gpu_layers = 17; // the output layer and the last 16 blocks on the GPU
    const kvfit::llamacpp_plan half = kvfit::plan_llamacpp(m, s, p, gpu);
    EXPECT_EQ(half.devices[0].used.adapter_bytes, 27262976u / 2);
    EXPECT_EQ(half.devices[1].used.adapter_bytes, 27262976u / 2);
    const std::string other = lora_writer(16, false, ggml_type::f16, 32, 4096, 1024, 14336, "qwen2").header();
    s.lora = {kvfit::lora_from_gguf(kvfit::gguf_file::parse(other, "q"), "q.gguf")};
    EXPECT_THROW(kvfit::plan_llamacpp(m, s, p, gpu), kvfit::error);
    // --lora-scaled FILE:S keeps the scale; a missing scale is one line
    try {
        (void)kvfit::read_lora_scaled("adapter.gguf");
        ADD_FAILURE();
    } catch (const kvfit::error & e) {
        EXPECT_STREQ(e.what(), "--lora-scaled 'adapter.gguf': expected FILE:SCALE");
    }
}

// A config.json's vision_config gives the same projector as the GGUF the converter writes from it: the measured
// shapes written as HF configs (Qwen2-VL embed_dim/mlp_ratio, Qwen2.5-VL fullatt_block_indexes, Qwen3-VL deepstack,
// Gemma 3 mm_tokens_per_image) give the measured weights and compute; the real Qwen3-VL-30B-A3B config reads too.
TEST(mmproj, from_a_config_json_vision_config) {
    const auto rows = read_jsonl("spec-mmproj.v0.5.0.jsonl");
    size_t n = 0;
    for (const auto & r : rows) {
        const json & h = r["shape"];
        const std::string kind = h["kind"];
        json cfg;
        json & v = cfg["vision_config"];
        if (kind == "qwen2vl") {
            v = {{"embed_dim", h["n_embd"]}, {"mlp_ratio", double(h["n_ff"]) / double(h["n_embd"])}, {"depth", h["n_layer"]},
                 {"num_heads", h["n_head"]}, {"patch_size", h["patch"]}, {"hidden_size", h["proj_dim"]}};
        } else if (kind == "qwen25vl") {
            v = {{"hidden_size", h["n_embd"]}, {"intermediate_size", h["n_ff"]}, {"depth", h["n_layer"]}, {"num_heads", h["n_head"]},
                 {"patch_size", h["patch"]}, {"out_hidden_size", h["proj_dim"]}, {"fullatt_block_indexes", {7, 15, 23, 31}}};
        } else if (kind == "qwen3vl") {
            v = {{"hidden_size", h["n_embd"]}, {"intermediate_size", h["n_ff"]}, {"depth", h["n_layer"]}, {"num_heads", h["n_head"]},
                 {"patch_size", h["patch"]}, {"out_hidden_size", h["proj_dim"]}, {"num_position_embeddings", h["n_pos"]},
                 {"deepstack_visual_indexes", h["deepstack"]}};
        } else {
            cfg["mm_tokens_per_image"] = 256;
            cfg["text_config"] = {{"hidden_size", h["proj_dim"]}};
            v = {{"hidden_size", h["n_embd"]}, {"intermediate_size", h["n_ff"]}, {"num_hidden_layers", h["n_layer"]},
                 {"num_attention_heads", h["n_head"]}, {"patch_size", h["patch"]}, {"image_size", h["image_size"]}};
        }
        const kvfit::mmproj_desc p = kvfit::mmproj_from_hf_config(cfg.dump(), "config.json");
        EXPECT_TRUE(p.from_config);
        EXPECT_EQ(p.weights_bytes, r["weights_bytes"].get<uint64_t>()) << r["id"];
        const kvfit::mmproj_compute c = kvfit::llamacpp_mmproj_compute(p, r["fa"] == "on");
        if (c.modelled) {
            EXPECT_EQ(c.bytes, r["compute_bytes"].get<uint64_t>()) << r["id"] << " " << r["fa"];
        }
        ++n;
    }
    EXPECT_EQ(n, 82u);
    const kvfit::mmproj_desc real = kvfit::read_mmproj(std::string(KVFIT_SHARED_DIR) + "/configs/Qwen__Qwen3-VL-30B-A3B-Instruct.json");
    EXPECT_EQ(real.vision_projector, "qwen3vl_merger");
    EXPECT_EQ(real.n_deepstack, 3u);
    EXPECT_EQ(real.projection_dim, 2048u);
    // projection 2048 <= 2.5 x 1152: the FA-on rule is claimed (measured exact on the same tower, mmvar-qwen3vl-27)
    EXPECT_EQ(kvfit::llamacpp_mmproj_compute(real, true).bytes, 377155840u);
    EXPECT_THROW(kvfit::mmproj_from_hf_config(R"({"hidden_size": 4096})", "c.json"), kvfit::error);
}

// kvfit explain: clip's "model size" and "reserve_compute_meta ... compute buffer" lines and the "LoRA buffer" lines
// are the projector's and adapters' (never the text model's compute buffer); with --mmproj / --lora they are compared,
// without them they become notes. Lines as the real releases print them (spec-mmproj / spec-lora jsonl raw).
TEST(mmproj, explain_compares_clip_and_lora_lines) {
    std::ifstream in(std::string(KVFIT_TEST_DATA) + "/logs/llama31-8b_c4096.log");
    std::ostringstream base;
    base << in.rdbuf();
    const auto rows = read_jsonl("spec-mmproj.v0.5.0.jsonl");
    const json & qwen2vl = row(rows, "mmproj-qwen2vl-7b", "on");
    std::string text = base.str();
    for (const auto & line : qwen2vl["raw"]) text += line.get<std::string>() + "\n";
    text += "llama_adapter_lora_init_impl: CPU_Mapped LoRA buffer size =    26.00 MiB\n";
    kvfit::warnings warn;
    const kvfit::model_desc m = kvfit::load_model(std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/llama31-8b_v512.gguf", warn);
    const kvfit::llamacpp_log log = kvfit::parse_llamacpp_log(text);
    EXPECT_TRUE(log.mmproj_weights.has_value());
    EXPECT_EQ(log.clip_compute_buffers.size(), 1u);
    EXPECT_EQ(log.lora_buffers.size(), 1u);
    const kvfit::explanation plain = kvfit::explain_log(kvfit::parse_llamacpp_log(base.str()), m);
    const kvfit::explanation without = kvfit::explain_log(log, m);
    EXPECT_EQ(without.rows.size(), plain.rows.size()); // the clip compute line is not a text-model compute row
    EXPECT_EQ(without.notes.size(), plain.notes.size() + 2);
    kvfit::llamacpp_settings extras;
    extras.mmproj = mmproj_of(qwen2vl["shape"]);
    extras.flash_attn = kvfit::flash_attn_mode::on;
    const std::string lora = lora_writer(16, false, ggml_type::f16).header();
    extras.lora.push_back(kvfit::lora_from_gguf(kvfit::gguf_file::parse(lora, "r16"), "r16.gguf"));
    const kvfit::explanation with = kvfit::explain_log(log, m, &extras);
    size_t matched = 0;
    for (const auto & r : with.rows) {
        if (r.what.find("projector") == std::string::npos && r.what.find("LoRA") == std::string::npos) continue;
        EXPECT_TRUE(r.same) << r.what << ": log " << r.log << ", kvfit " << r.kvfit;
        ++matched;
    }
    EXPECT_EQ(matched, 3u); // 1289.95 MiB weights, 267.08 MiB compute (the log's flash attention), 26.00 MiB LoRA
}
