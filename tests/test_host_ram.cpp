// Host RAM (--ram, --cache-ram, --ctx-checkpoints, --no-mmap): checkpoint sizes against llama.cpp's own
// llama_state_seq_get_size_ext(..., PARTIAL_ONLY) (tests/conformance/measured/spec-ckpt.{5b4ebc5,v0.5.0}.jsonl), the
// host RAM lines and verdict, and their text and JSON (docs/rules/llamacpp-host-ram.md).
#include "kvfit/error.h"
#include "kvfit/llamacpp.h"
#include "kvfit/report.h"
#include "kvfit/sources.h"
#include "support/run_cli.h"

#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;

kvfit::model_desc model(const char * name) {
    kvfit::warnings warn;
    return kvfit::load_model(name, warn);
}

kvfit::llamacpp_plan plan(const kvfit::model_desc & m, kvfit::flag_values f, std::vector<kvfit::device_spec> gpus = {}) {
    if (!f.has("ctx_size")) f.set("ctx_size", "8192");
    const kvfit::llamacpp_inputs in = kvfit::parse_llamacpp_flags(f);
    kvfit::llamacpp_settings s = in.settings;
    s.n_ctx = in.contexts.front();
    return kvfit::plan_llamacpp(m, s, in.placement, gpus, in.margin_bytes);
}

const kvfit::host_ram_usage::line * line_of(const kvfit::host_ram_usage & h, const std::string & name) {
    for (const auto & l : h.lines) {
        if (l.name == name) return &l;
    }
    return nullptr;
}

} // namespace

// The measured partial states: the largest checkpoint of a hybrid (the recurrent part only, whatever the tokens, n_seq
// and n_rs_seq), of a sliding-window model (its window cells: 300 tokens decoded >= n_swa 128), none of a plain cache.
TEST(host_ram, checkpoint_bytes_as_measured) {
    std::map<std::string, uint64_t> largest;
    for (const char * release : {"v0.5.0", "5b4ebc5"}) {
        std::ifstream in(fmt::format("{}/tests/conformance/measured/spec-ckpt.{}.jsonl", KVFIT_SOURCE_DIR, release));
        for (std::string text; std::getline(in, text);) {
            const json j = json::parse(text);
            if (j["kind"] != "context") continue;
            uint64_t & v = largest[j["model"].get<std::string>()];
            v = std::max(v, j["state_seq_partial"].get<uint64_t>());
        }
    }
    ASSERT_EQ(largest.size(), 3u);
    EXPECT_EQ(kvfit::llamacpp_checkpoint_bytes(model("Qwen3.5-9B"), plan(model("Qwen3.5-9B"), {})),
              largest["qwen35-9b_v512.gguf"]); // 52,691,548
    EXPECT_EQ(kvfit::llamacpp_checkpoint_bytes(model("gpt-oss-20b"), plan(model("gpt-oss-20b"), {})),
              largest["gpt-oss-20b_v512.gguf"]); // 3,147,576
    // Llama-3.1-8B: a plain llama_kv_cache can roll back, the server makes no checkpoints (its partial state is the
    // whole sequence, 2,098,136 B at 16 tokens)
    EXPECT_EQ(kvfit::llamacpp_checkpoint_bytes(model("Meta-Llama-3.1-8B"), plan(model("Meta-Llama-3.1-8B"), {})), 0u);
    // --swa-full: the window cache can roll back too
    kvfit::flag_values full;
    full.set("swa_full", "true");
    EXPECT_EQ(kvfit::llamacpp_checkpoint_bytes(model("gpt-oss-20b"), plan(model("gpt-oss-20b"), full)), 0u);
    // Qwen3.5-27B, 48 GDN layers (docs/rules/llamacpp-spec.md section 6): 28 + 24 x 48 + 156,893,184
    EXPECT_EQ(kvfit::llamacpp_checkpoint_bytes(model("Qwen3.5-27B"), plan(model("Qwen3.5-27B"), {})), 156894364u);
}

// The lines and the verdict: prompt cache at its --cache-ram limit, n_seq x --ctx-checkpoints checkpoints, the host's
// buffers, mapped weights as page cache (allocated with --no-mmap), against --ram.
TEST(host_ram, lines_and_verdict) {
    kvfit::model_desc m = model("Qwen3.5-9B");
    kvfit::apply_weight_format(m, "q4_k_m"); // CPU only: every weight in host RAM
    kvfit::flag_values f;
    f.set("ram", "16GiB");
    f.set("parallel", "2");
    const kvfit::llamacpp_plan p = plan(m, f);
    const kvfit::host_ram_usage h = kvfit::llamacpp_host_ram(m, p);
    EXPECT_TRUE(h.known);
    EXPECT_EQ(h.capacity_bytes, 16ull << 30);
    ASSERT_NE(line_of(h, "prompt_cache"), nullptr);
    EXPECT_EQ(line_of(h, "prompt_cache")->bytes, 8192ull << 20); // llama-server's default --cache-ram
    ASSERT_NE(line_of(h, "checkpoints"), nullptr);
    EXPECT_EQ(line_of(h, "checkpoints")->bytes, 2ull * 32 * 52691548); // 2 slots x 32 x the measured checkpoint
    ASSERT_NE(line_of(h, "page_cache"), nullptr);
    EXPECT_TRUE(line_of(h, "page_cache")->reclaimable);
    EXPECT_EQ(line_of(h, "page_cache")->bytes, p.devices.back().used.weights_bytes);
    uint64_t sum = 0;
    for (const auto & l : h.lines) sum += l.bytes;
    EXPECT_EQ(h.total_bytes, sum);
    // the prompt cache is a limit llama-server evicts within (server-task.cpp:1750): not needed, only warned about
    EXPECT_EQ(h.needed_bytes, sum - (8192ull << 20));
    EXPECT_EQ(h.fits, h.needed_bytes <= (16ull << 30));
    // less RAM: over; --cache-ram 0 and --ctx-checkpoints 0 drop their lines
    f.set("ram", "8GiB");
    EXPECT_FALSE(kvfit::llamacpp_host_ram(m, plan(m, f)).fits);
    f.set("cache_ram", "0");
    f.set("ctx_checkpoints", "0");
    const kvfit::host_ram_usage small = kvfit::llamacpp_host_ram(m, plan(m, f));
    EXPECT_EQ(line_of(small, "prompt_cache"), nullptr);
    EXPECT_EQ(line_of(small, "checkpoints"), nullptr);
    EXPECT_EQ(small.total_bytes + (8192ull << 20) + 2ull * 32 * 52691548, h.total_bytes);
    // --no-mmap: the weights are allocated (anonymous memory), not page cache
    f.set("no_mmap", "true");
    const kvfit::host_ram_usage nm = kvfit::llamacpp_host_ram(m, plan(m, f));
    EXPECT_EQ(line_of(nm, "page_cache"), nullptr);
    ASSERT_NE(line_of(nm, "weights"), nullptr);
    // -1: no limit, the verdict cannot be yes
    f.set("cache_ram", "-1");
    f.set("ram", "1TiB");
    const kvfit::host_ram_usage unb = kvfit::llamacpp_host_ram(m, plan(m, f));
    EXPECT_TRUE(unb.unbounded);
    EXPECT_FALSE(unb.fits);
    f.set("cache_ram", "-2");
    EXPECT_THROW(plan(m, f), kvfit::error);
}

// With a GPU the CPU compute and output buffers are pinned (CUDA_Host); the text and JSON carry the host verdict.
TEST(host_ram, text_and_json) {
    const kvfit::model_desc m = model("Qwen3.5-9B");
    kvfit::flag_values f;
    f.set("ctx_size", "8192");
    f.set("ram", "4GiB");
    const std::vector<kvfit::device_spec> gpu = {{"RTX 4090", 24ull << 30}};
    const kvfit::llamacpp_plan p = plan(m, f, gpu);
    const kvfit::host_ram_usage h = kvfit::llamacpp_host_ram(m, p);
    EXPECT_EQ(h.pinned_bytes, p.devices.back().used.output_bytes + p.devices.back().used.compute_bytes);
    const kvfit::runtime_plan r = kvfit::llamacpp_runtime_plan(m, p);
    ASSERT_TRUE(r.detail.contains("host_ram"));
    EXPECT_EQ(r.detail["host_ram"]["total_bytes"].get<uint64_t>(), h.total_bytes);
    // 8 GiB of prompt cache in 4 GiB: a limit llama-server evicts within, so a warning; the checkpoints (32 x 50.25 MiB)
    // and the host buffers are what is needed, and they fit
    EXPECT_TRUE(r.detail["host_ram"]["fits"].get<bool>());
    EXPECT_EQ(r.detail["host_ram"]["needed_bytes"].get<uint64_t>(), h.total_bytes - (8192ull << 20));
    EXPECT_EQ(r.detail["host_ram"]["checkpoint_bytes"].get<uint64_t>(), 52691548u);
    bool warned = false;
    for (const auto & w : r.warnings) warned |= w.starts_with("host RAM: llama-server's prompt cache may grow to 8.00 GiB");
    EXPECT_TRUE(warned);
    // without any host flag the plan's detail stays as before (goldens)
    kvfit::flag_values plain;
    plain.set("ctx_size", "8192");
    EXPECT_FALSE(kvfit::llamacpp_runtime_plan(m, plan(m, plain, gpu)).detail.contains("host_ram"));
}

// The text report: a "Host RAM" section with its lines and verdict beside the GPU fit; JSON detail.host_ram.
TEST(host_ram, cli_text_and_json) {
    const auto t = kvfit::test::run_kvfit("Qwen3.5-9B -c 8192 --gpu 24GiB --ram 512MiB --ctx-checkpoints 8");
    EXPECT_NE(t.out.find("Host RAM (512.00 MiB given): "), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("with the prompt cache at its limit"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find(": OVER"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("prompt_cache"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("1 slot x 8 context checkpoints x 52,691,548 B"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("warning: host RAM:"), std::string::npos) << t.out;
    const auto j = kvfit::test::run_kvfit("Qwen3.5-9B -c 8192 --ram 64GiB --json");
    ASSERT_EQ(j.status, 0) << j.err;
    const json d = json::parse(j.out);
    const json & h = d.contains("plans") ? d["plans"][0]["detail"]["host_ram"] : d["detail"]["host_ram"];
    EXPECT_TRUE(h["fits"].get<bool>()) << h;
    EXPECT_EQ(h["cache_ram_mib"].get<int64_t>(), 8192);
}

// A host flag given at llama-server's default value still asks for the host RAM section: `--ctx-checkpoints 32` (the
// checkpoint size the conformance suite's live llama_probe rows compare), `--cache-ram 8192`; and keeps asking for it
// through the flags written back (llamacpp_flag_values: kvfit exec, the HTTP API).
TEST(host_ram, flag_at_its_default_shows_the_section) {
    for (const char * flag : {"--ctx-checkpoints 32", "--cache-ram 8192"}) {
        const auto r = kvfit::test::run_kvfit(std::string("Qwen3.5-9B -c 8192 ") + flag + " --json");
        ASSERT_EQ(r.status, 0) << r.err;
        const json d = json::parse(r.out);
        ASSERT_TRUE(d["detail"].contains("host_ram")) << flag;
        EXPECT_EQ(d["detail"]["host_ram"]["checkpoint_bytes"].get<uint64_t>(), 52691548u) << flag;
        EXPECT_EQ(d["detail"]["host_ram"]["ctx_checkpoints"].get<uint32_t>(), 32u) << flag;
    }
    const auto none = kvfit::test::run_kvfit("Qwen3.5-9B -c 8192 --json");
    ASSERT_EQ(none.status, 0) << none.err;
    EXPECT_FALSE(json::parse(none.out)["detail"].contains("host_ram"));
    kvfit::flag_values f;
    f.set("ctx_size", "8192");
    f.set("ctx_checkpoints", "32");
    const kvfit::llamacpp_inputs in = kvfit::parse_llamacpp_flags(f);
    EXPECT_TRUE(in.settings.host_ram_asked);
    const kvfit::flag_values back = kvfit::llamacpp_flag_values(in.settings, in.placement, in.margin_bytes);
    EXPECT_EQ(back.text("ctx_checkpoints"), "32");
}

// The host buffers llama.cpp allocates at start (not the prompt cache or checkpoints, which grow to their limits, nor
// the page cache) decide the verdict: Llama-3.1-8B at 131,072 tokens on the CPU keeps 16 GiB of f16 KV (131,072 B
// per token x 131,072) on the host, which 8 GiB cannot hold: exit 3, and 64 GiB can: exit 0.
TEST(host_ram, allocated_host_buffers_decide_the_verdict) {
    const auto over = kvfit::test::run_kvfit("Meta-Llama-3.1-8B -c 131072 --ram 8GiB --json");
    EXPECT_EQ(over.status, 3) << over.err;
    const json d = json::parse(over.out);
    const json & h = d.contains("plans") ? d["plans"][0]["detail"]["host_ram"] : d["detail"]["host_ram"];
    EXPECT_FALSE(h["starts"].get<bool>()) << h;
    EXPECT_GE(h["allocated_bytes"].get<uint64_t>(), 131072ull * 131072ull) << h;
    EXPECT_NE(over.out.find("allocated when llama-server starts"), std::string::npos) << over.out;
    EXPECT_NE(over.out.find("16.24 GiB of KV cache, state and compute buffers stay on the host: a smaller -c"), std::string::npos) << over.out;
    const auto ok = kvfit::test::run_kvfit("Meta-Llama-3.1-8B -c 131072 --ram 64GiB");
    EXPECT_EQ(ok.status, 0) << ok.err << ok.out;
    // the prompt cache at its default 8 GiB limit over the RAM: llama-server evicts within --cache-ram
    // (tools/server/server-task.cpp:1750-1772), so it is a warning with the limit that would stay within the RAM,
    // not a failed verdict (a trial's "Qwen3-8B -c 8192 --ram 10GiB: DOES NOT FIT"); a model without checkpoints and
    // one slot is not told to lower --ctx-checkpoints or -np
    const auto limits = kvfit::test::run_kvfit("Meta-Llama-3.1-8B -c 8192 --gpu 24GiB --ram 8GiB");
    EXPECT_EQ(limits.status, 0) << limits.err;
    EXPECT_NE(limits.out.find("warning: host RAM: llama-server's prompt cache may grow to 8.00 GiB (--cache-ram 8192, the "
                              "default)"), std::string::npos) << limits.out;
    EXPECT_EQ(limits.out.find("--ctx-checkpoints"), std::string::npos) << limits.out;
    EXPECT_EQ(limits.out.find("-np"), std::string::npos) << limits.out;
    const auto trial = kvfit::test::run_kvfit("Qwen3-8B -c 8192 --ram 10GiB --weights q4_k_m --check");
    EXPECT_EQ(trial.status, 0) << trial.out;
    // the checkpoints at their limit are needed (a recurrent model's 32 per slot): over, with their advice
    const auto ckpt = kvfit::test::run_kvfit("Qwen3.5-9B -c 8192 --gpu 24GiB -np 2 --ram 3GiB");
    EXPECT_EQ(ckpt.status, 3) << ckpt.out;
    EXPECT_NE(ckpt.out.find("with the context checkpoints at their limit: lower --ctx-checkpoints or -np"), std::string::npos) << ckpt.out;
}

// --weights-size 0 is refused, and --weights beside --weights-size is named as ignored.
TEST(host_ram, weight_size_zero_is_refused) {
    const auto zero = kvfit::test::run_kvfit("Meta-Llama-3.1-8B --weights-size 0 --gpu 8GiB");
    EXPECT_EQ(zero.status, 2);
    EXPECT_NE(zero.err.find("weights size '0': must be more than 0 bytes"), std::string::npos) << zero.err;
    const auto both = kvfit::test::run_kvfit("Meta-Llama-3.1-8B --weights f16 --weights-size 5GB -c 8192 --gpu 24GiB");
    EXPECT_NE(both.out.find("weights f16 ignored: the weights size 5GB is planned"), std::string::npos) << both.out;
}
