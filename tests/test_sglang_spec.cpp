// SGLang with speculative decoding (kvfit issue 27; docs/rules/sglang-frontier.md §5.1): the cap on running requests
// by mamba state slots, the intermediate states each draft token keeps, the drafter's KV layers and weights, SGLang's
// defaults for the speculative flags, and the settings SGLang refuses. Real configs from ../shared/configs.
#include "kvfit/error.h"
#include "kvfit/plan.h"
#include "kvfit/sglang.h"
#include "kvfit/sources.h"
#include "support/files.h"
#include "support/run_cli.h"

#include <algorithm>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

constexpr uint64_t MiB = 1ull << 20;
const kvfit::device_spec h200{"H200", 143771 * MiB, 9.0};

kvfit::model_desc config(const char * file) {
    kvfit::warnings w;
    kvfit::model_desc m = kvfit::load_model(std::string(KVFIT_SHARED_DIR) + "/configs/" + file, w);
    kvfit::find_runtime("sglang").default_weights(m, w);
    return m;
}

std::string path(const char * file) { return std::string(KVFIT_SHARED_DIR) + "/configs/" + file; }

bool has(const std::vector<std::string> & v, const std::string & needle) {
    return std::any_of(v.begin(), v.end(), [&](const std::string & s) { return s.find(needle) != std::string::npos; });
}

// The cap the issue names ("8/6/4/1 in the log where kvfit says 8/8/8/4"): public runs of Qwen3.8-27B (the
// Qwen3.5-27B shape) on SGLang v0.5.19 with MTP and --max-running-requests 8 measured max_mamba_cache_size K = 55, 33,
// 21, 8 and max_running_requests 8, 6, 4, 1 (noonghunna/club-3090 #1319 / PR #1323). The rule: with speculative
// decoding the radix cache keeps extra_buffer, 3 + 2 = 5 slots per request (_calculate_mamba_ratio), so
//   min(8, 55 // 5 = 11) = 8, min(8, 33 // 5 = 6) = 6, min(8, 21 // 5 = 4) = 4, min(8, 8 // 5 = 1) = 1;
// without it no_buffer reserves 3: min(8, 18) = 8, min(8, 11) = 8, min(8, 7) = 7, min(8, 2) = 2.
TEST(sglang_spec, running_requests_capped_by_state_slots) {
    const kvfit::model_desc m = config("Qwen__Qwen3.5-27B.json");
    const uint64_t slots[] = {55, 33, 21, 8}, with_spec[] = {8, 6, 4, 1}, without[] = {8, 8, 7, 2};
    for (int i = 0; i < 4; ++i) {
        kvfit::sglang_settings s;
        s.mem_fraction_static = 0.9, s.context_length = 32768, s.max_running_requests = 8;
        s.max_mamba_cache_size = uint32_t(slots[i]);
        EXPECT_EQ(kvfit::plan_sglang(m, s, h200).max_running_requests, without[i]) << slots[i];
        s.speculative_algorithm = "NEXTN";
        const auto p = kvfit::plan_sglang(m, s, h200);
        EXPECT_EQ(p.max_running_requests, with_spec[i]) << slots[i];
        EXPECT_EQ(p.mamba_ratio, 5u);
        EXPECT_EQ(p.mamba_strategy, "extra_buffer");
        // the intermediate states: one mamba state per draft token (4: steps 3 + 1) per capped running request
        EXPECT_EQ(p.mamba_intermediate_bytes, p.mamba_bytes_per_request * 4 * with_spec[i]) << slots[i];
    }
}

// Qwen3.5-27B's state per request at TP 1 (configs/mamba_utils.py; mamba_ssm_dtype float32 in its config), 48 GDN layers:
// conv (2 x 16 x 128 + 48 x 128) x (4 - 1) x 2 B = 61,440 B, temporal 48 x 128 x 128 x 4 B = 3,145,728 B:
// 48 x 3,207,168 = 153,944,064 B; each draft token keeps one more (intermediate_ssm_state_cache,
// intermediate_conv_window_cache), 4 x 153,944,064 = 615,776,256 B per running request.
// The ratio split with speculative decoding (handle_max_mamba_cache): slots = mamba_budget // (per_req x (1 + D / 5)),
// running = min(48, slots // 5), KV = rest - slots x per_req - running x D x per_req.
TEST(sglang_spec, slot_size_and_split_with_draft_tokens) {
    const kvfit::model_desc m = config("Qwen__Qwen3.5-27B.json");
    kvfit::sglang_settings s;
    s.mem_fraction_static = 0.9, s.context_length = 32768, s.speculative_algorithm = "NEXTN";
    const auto p = kvfit::plan_sglang(m, s, h200);
    const uint64_t per = 48ull * (61440 + 3145728);
    ASSERT_EQ(p.mamba_bytes_per_request, per);
    EXPECT_EQ(p.spec_num_steps, 3u);
    EXPECT_EQ(p.spec_eagle_topk, 1u);
    EXPECT_EQ(p.spec_num_draft_tokens, 4u);
    EXPECT_EQ(p.settings.max_running_requests, 48u); // "Max running requests is reset to 48 for speculative decoding"
    const double budget = double(p.rest_bytes) * 0.9 / 1.9;
    const uint64_t slots = uint64_t(budget / (double(per) * (1 + 4.0 / 5)));
    EXPECT_EQ(p.mamba_slots, slots);
    const uint64_t running = std::min<uint64_t>(48, slots / 5);
    EXPECT_EQ(p.max_running_requests, running);
    EXPECT_EQ(p.mamba_intermediate_bytes, running * 4 * per);
    const uint64_t kv = uint64_t(p.rest_bytes) - slots * per - running * 4 * per;
    EXPECT_EQ(p.max_total_num_tokens, kv / p.cell_bytes);
    EXPECT_TRUE(has(p.notes, "Max running requests is reset to 48 for speculative decoding"));
    EXPECT_TRUE(has(p.notes, "_auto_choose_speculative_params"));

    // the same server without speculative decoding: 3 slots per request, the whole budget to slots, more requests
    kvfit::sglang_settings plain = s;
    plain.speculative_algorithm.clear();
    const auto q = kvfit::plan_sglang(m, plain, h200);
    EXPECT_EQ(q.mamba_slots, uint64_t(double(q.rest_bytes) * 0.9 / 1.9 / double(per)));
    EXPECT_EQ(q.rest_bytes - p.rest_bytes, int64_t(p.spec_draft_weights_bytes)); // the drafter's weights, loaded first
    EXPECT_GT(q.max_running_requests, p.max_running_requests);
    EXPECT_EQ(q.mamba_intermediate_bytes, 0u);
}

// The drafter's KV: Qwen3.5-27B's MTP layer (mtp_num_hidden_layers 1) is a full-attention layer of the target's shape;
// the target's cell (16 full layers x 4 KV heads x (256 + 256) x 2 B = 65,536 B) grows by 1/16 to 69,632 B, and the
// draft pool holds as many tokens (pool_configurator.py DefaultPoolConfigurator). Qwen3-Next-80B-A3B's config names no
// MTP layer; SGLang drafts with one (model_config.py): at TP 4, 12 full layers x max(1, 2 / 4) x 512 x 2 B = 12,288 B
// grow to 13,312 B.
TEST(sglang_spec, drafter_kv_layers) {
    kvfit::sglang_settings s;
    s.mem_fraction_static = 0.9, s.context_length = 32768, s.speculative_algorithm = "NEXTN";
    const auto p = kvfit::plan_sglang(config("Qwen__Qwen3.5-27B.json"), s, h200);
    EXPECT_EQ(p.spec_draft_layers, 1u);
    EXPECT_EQ(p.cell_bytes, 69632u);
    EXPECT_EQ(p.spec_draft_kv_bytes, p.max_total_num_tokens * 4096);
    EXPECT_GT(p.spec_draft_weights_bytes, 0u);

    s.tp = 4;
    const kvfit::device_spec h100{"H100", 81559 * MiB, 9.0};
    const auto n = kvfit::plan_sglang(config("Qwen__Qwen3-Next-80B-A3B-Thinking.json"), s, h100);
    EXPECT_EQ(n.spec_draft_layers, 1u);
    EXPECT_EQ(n.cell_bytes, 13312u);
    EXPECT_TRUE(has(n.notes, "num_nextn_predict_layers = 1"));
}

// SGLang's default --mem-fraction-static reserves 2048 MiB more for an EAGLE-family drafter and 6144 MiB for STANDALONE,
// after the 10 GiB floor: H100 (81,559 MiB) TP 1: (81,559 - 13,440 - 2,048) / 81,559 = 0.810; - 6,144: 0.760.
TEST(sglang_spec, default_fraction_reserves_the_drafter) {
    EXPECT_EQ(fmt::format("{:.3f}", kvfit::sglang_default_fraction(81559 * MiB, 1, 1, false, "EAGLE")), "0.810");
    EXPECT_EQ(fmt::format("{:.3f}", kvfit::sglang_default_fraction(81559 * MiB, 1, 1, false, "STANDALONE")), "0.760");
    EXPECT_EQ(fmt::format("{:.3f}", kvfit::sglang_default_fraction(81559 * MiB, 1, 1, false)), "0.835");
}

// A dense model: no mamba state, but the running requests still default to 48, and a drafter kvfit cannot read (EAGLE3
// needs --speculative-draft-model-path) is said by name. Llama gets SGLang's wider tree: 5 steps, topk 4, 8 tokens.
TEST(sglang_spec, dense_model_defaults_and_unread_drafter) {
    kvfit::sglang_settings s;
    s.mem_fraction_static = 0.85, s.context_length = 8192, s.speculative_algorithm = "eagle3";
    const auto p = kvfit::plan_sglang(config("meta-llama__Meta-Llama-3.1-8B.json"), s, h200);
    EXPECT_EQ(p.spec_algorithm, "EAGLE3");
    EXPECT_EQ(p.max_running_requests, 48u);
    EXPECT_EQ(p.spec_num_steps, 5u);
    EXPECT_EQ(p.spec_eagle_topk, 4u);
    EXPECT_EQ(p.spec_num_draft_tokens, 8u);
    EXPECT_EQ(p.spec_draft_layers, 0u);
    EXPECT_TRUE(has(p.warnings, "its KV cache and weights are not counted"));
}

// Settings SGLang refuses, or kvfit cannot plan: one line, exit 2.
TEST(sglang_spec, impossible_settings_exit_2) {
    const std::string base = path("Qwen__Qwen3.5-27B.json") + " --runtime sglang --gpu H200 --context-length 32768 ";
    const struct { std::string args, says; } cases[] = {
        {base + "--speculative-algorithm MEDUSA", "Unknown speculative algorithm name: MEDUSA"},
        {base + "--speculative-algorithm NGRAM", "not modelled"},
        {base + "--speculative-num-steps 3", "need --speculative-algorithm"},
        {base + "--speculative-algorithm EAGLE --speculative-eagle-topk 1", "give all three, or none"},
        {base + "--speculative-algorithm EAGLE --mamba-radix-cache-strategy no_buffer", "not compatible with radix cache"},
        {base + "--mamba-radix-cache-strategy ping_pong", "expected auto, no_buffer, extra_buffer or extra_buffer_lazy"},
        {path("Qwen__Qwen3.5-27B.json") + std::string(" --runtime sglang --gpu 2xH200 --tp 2 --dp 2 --enable-dp-attention "
                                                    "--speculative-algorithm STANDALONE"),
         "standalone speculative decoding does not support dp attention"},
        {path("meta-llama__Meta-Llama-3.1-8B.json") +
             " --runtime sglang --gpu H200 --speculative-algorithm NEXTN", "this config has none"},
        {path("nvidia__Nemotron-H-56B-Base-8K.json") +
             " --runtime sglang --gpu H200 --tp 1 --speculative-algorithm EAGLE", "give --disable-radix-cache"},
    };
    for (const auto & c : cases) {
        const auto r = kvfit::test::run_kvfit(c.args);
        EXPECT_EQ(r.status, 2) << c.args << "\n" << r.out << r.err;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
}

// The launch line carries what the plan resolved, and the text report names the drafter and the intermediate states.
TEST(sglang_spec, launch_line_and_report) {
    const std::string q35 = path("Qwen__Qwen3.5-27B.json");
    const auto r = kvfit::test::run_kvfit(q35 + " --runtime sglang --gpu H200 --mem-fraction-static 0.9 "
                                                "--context-length 32768 --speculative-algorithm NEXTN");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("--speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 "
                         "--speculative-num-draft-tokens 4"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("speculative EAGLE: 3 steps, topk 1, 4 draft tokens"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("5 slots per running request (extra_buffer)"), std::string::npos) << r.out;
}

} // namespace

namespace {

// The default "auto" strategy differs by SGLang release: 0.5.x resolves it to no_buffer (3 slots per request), SGLang
// main of late 2026 to extra_buffer under the overlap schedule for gated-DeltaNet hybrids (5). kvfit plans the former
// and says what the latter gives: Qwen3.5-27B on an H200 at --max-mamba-cache-size 55 and --max-running-requests 64:
// 55 // 3 = 18 requests, and the note's 55 // 5 = 11, which --mamba-radix-cache-strategy extra_buffer plans.
TEST(sglang_spec, default_strategy_names_the_newer_release) {
    const kvfit::model_desc m = config("Qwen__Qwen3.5-27B.json");
    kvfit::sglang_settings s;
    s.mem_fraction_static = 0.9, s.context_length = 32768, s.max_running_requests = 64, s.max_mamba_cache_size = 55;
    const auto p = kvfit::plan_sglang(m, s, h200);
    EXPECT_EQ(p.max_running_requests, 18u);
    EXPECT_TRUE(has(p.notes, "55 // 5 = 11 requests, planned with --mamba-radix-cache-strategy extra_buffer"));
    s.mamba_radix_cache_strategy = "extra_buffer";
    EXPECT_EQ(kvfit::plan_sglang(m, s, h200).max_running_requests, 11u);
    s.mamba_radix_cache_strategy = "auto";
    s.disable_radix_cache = true; // one slot per request: no strategy, nothing to say
    EXPECT_FALSE(has(kvfit::plan_sglang(m, s, h200).notes, "// 5 ="));
}

} // namespace

namespace {

// configs/model_config.py _derive_context_length: a --context-length above the derived length (262,144 for
// Qwen3.5-27B) raises unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1; kvfit refuses it (exit 2) with that message.
TEST(sglang_spec, context_length_above_the_derived_one_is_refused) {
    using kvfit::test::run_kvfit;
    const auto r = run_kvfit(path("Qwen__Qwen3.5-27B.json") + std::string(" --runtime sglang --gpu H200 --context-length 300000"));
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.err.find("User-specified context_length (300000) is greater than the derived context_length (262144)"),
              std::string::npos) << r.err;
    EXPECT_NE(r.err.find("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"), std::string::npos) << r.err;
}

// A --max-running-requests the mamba slots cap (8 // 5 = 1 with NEXTN) starts but does not meet the request: a warning
// names both numbers and the plan does not fit (exit 3), where it said "meets the requested concurrency".
TEST(sglang_spec, capped_running_requests_do_not_meet_the_request) {
    const kvfit::model_desc m = config("Qwen__Qwen3.5-27B.json");
    kvfit::sglang_settings s;
    s.mem_fraction_static = 0.9, s.context_length = 32768, s.max_running_requests = 8, s.max_mamba_cache_size = 8;
    s.speculative_algorithm = "NEXTN";
    const auto p = kvfit::plan_sglang(m, s, h200);
    EXPECT_EQ(p.max_running_requests, 1u);
    EXPECT_TRUE(has(p.warnings, "starts, but runs at most 1 request at once, not the 8 --max-running-requests asks: "
                                "8 mamba slots // 5 per request"));
    const auto r = kvfit::test::run_kvfit(path("Qwen__Qwen3.5-27B.json") + std::string(
        " --runtime sglang --gpu H200 --mem-fraction-static 0.9 --context-length 32768 --max-running-requests 8 "
        "--max-mamba-cache-size 8 --speculative-algorithm NEXTN"));
    EXPECT_EQ(r.status, 3) << r.out << r.err;
    s.max_mamba_cache_size = 55; // 55 // 5 = 11 >= 8: met
    EXPECT_FALSE(has(kvfit::plan_sglang(m, s, h200).warnings, "starts, but runs at most"));
}

} // namespace

namespace {

// A mamba pool larger than what the weights leave names itself (it said "Memory pool size is too small (the pool
// holds 0 tokens)"), and one request whose draft-token states alone overflow says fewer draft tokens, not more slots.
TEST(sglang_spec, mamba_overflow_names_its_cause) {
    const kvfit::model_desc m = config("Qwen__Qwen3.5-27B.json");
    kvfit::sglang_settings s;
    s.max_mamba_cache_size = 1000000000;
    const auto p = kvfit::plan_sglang(m, s, h200);
    ASSERT_EQ(p.errors.size(), 1u);
    // 10^9 slots x 153,944,064 B = 143,371,582.03 GiB
    EXPECT_NE(p.errors[0].find("the mamba state takes 143371582.03 GiB (1000000000 slots (--max-mamba-cache-size) x "
                               "146.81 MiB)"), std::string::npos) << p.errors[0];
    kvfit::sglang_settings d;
    d.speculative_algorithm = "EAGLE", d.speculative_num_steps = 64, d.speculative_eagle_topk = 64;
    d.speculative_num_draft_tokens = 1024;
    const auto q = kvfit::plan_sglang(m, d, h200);
    ASSERT_EQ(q.errors.size(), 1u);
    // (5 slots + 1024 draft tokens) x 153,944,064 B = 147.53 GiB
    EXPECT_NE(q.errors[0].find("one running request needs 5 mamba slots and 1024 draft-token states of 146.81 MiB, "
                               "147.53 GiB"), std::string::npos) << q.errors[0];
    EXPECT_NE(q.errors[0].find("give fewer --speculative-num-draft-tokens"), std::string::npos);
}

} // namespace

// SGLang picks the speculative defaults by the model class, hf_config.architectures[0]
// (_auto_choose_speculative_params, speculative/spec_info.py): (5, 4, 8) for LlamaForCausalLM and Grok1(V)ForCausalLM,
// (3, 1, 4) for every other class and for STANDALONE. A renamed model_type keeps its class: a Llama-3.1-8B config whose
// model_type is not "llama" still gets (5, 4, 8); a Mistral-shaped config (MistralForCausalLM) gets (3, 1, 4).
TEST(sglang_spec, defaults_follow_the_model_class_not_model_type) {
    const std::string text = kvfit::test::read_text(path("meta-llama__Meta-Llama-3.1-8B.json"));
    nlohmann::json j = nlohmann::json::parse(text);
    auto plan_of = [](const nlohmann::json & cfg, const char * algorithm) {
        kvfit::warnings w;
        kvfit::model_desc m = kvfit::model_from_hf_config(cfg.dump(), "config.json", w);
        kvfit::find_runtime("sglang").default_weights(m, w);
        kvfit::sglang_settings s;
        s.mem_fraction_static = 0.9, s.context_length = 8192, s.speculative_algorithm = algorithm;
        return kvfit::plan_sglang(m, s, h200);
    };
    const auto llama = plan_of(j, "EAGLE");
    EXPECT_EQ(llama.spec_num_steps, 5u);
    EXPECT_EQ(llama.spec_eagle_topk, 4u);
    EXPECT_EQ(llama.spec_num_draft_tokens, 8u);
    EXPECT_TRUE(has(llama.notes, "SGLang's choice for LlamaForCausalLM"));
    nlohmann::json renamed = j;
    renamed["model_type"] = "llama_finetune";
    const auto r = plan_of(renamed, "EAGLE");
    EXPECT_EQ(r.spec_num_steps, 5u);
    EXPECT_EQ(r.spec_eagle_topk, 4u);
    const auto standalone = plan_of(j, "STANDALONE");
    EXPECT_EQ(standalone.spec_num_steps, 3u);
    EXPECT_EQ(standalone.spec_eagle_topk, 1u);
    nlohmann::json mistral = j;
    mistral["model_type"] = "mistral";
    mistral["architectures"] = {"MistralForCausalLM"};
    const auto other = plan_of(mistral, "EAGLE");
    EXPECT_EQ(other.spec_num_steps, 3u);
    EXPECT_EQ(other.spec_eagle_topk, 1u);
    EXPECT_EQ(other.spec_num_draft_tokens, 4u);
}
