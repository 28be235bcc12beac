// Every runtime's knobs through the planner's one search (include/kvfit/plan.h, runtime.h: runtime_info::knobs,
// cache_types): max_context rows per cache type and alternatives for vLLM, SGLang, Ollama and MLX, each figure
// checked against the runtime's own rule by planning again at the value found and one step past it; and --list trying
// the alternatives before it files a model under "does not fit" (ranking.h).
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/plan.h"
#include "kvfit/ranking.h"
#include "kvfit/report.h"
#include "kvfit/sources.h"
#include "support/files.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace {

// The plan of a catalog model or a ../shared/configs file, through make_plan as the CLI makes it.
kvfit::plan_result plan(const std::string & runtime, const std::string & model, const std::string & gpu,
                        const std::vector<std::pair<std::string, std::string>> & flags = {}) {
    kvfit::plan_request q;
    q.runtime = runtime;
    q.model = model;
    q.gpu = gpu;
    for (const auto & [k, v] : flags) q.flags.set(k, v);
    return kvfit::make_plan(q, [&](kvfit::warnings & w) { return kvfit::load_model(model, w); });
}

std::string shared(const char * file) { return (std::filesystem::path(KVFIT_SHARED_DIR) / "configs" / file).string(); }

// The runtime's verdict with `f` plus one flag changed: what every figure below is checked against.
bool fits_with(const kvfit::plan_result & r, kvfit::flag_values f, const std::string & flag, const std::string & value) {
    f.set(flag, value);
    return r.runtime->plan(r.model, f, r.target).fits;
}

const kvfit::context_limit * row_of(const kvfit::runtime_plan & p, const std::string & type) {
    for (const auto & c : p.max_context) {
        if (!c.all_full_attention && c.cache_type == type) return &c;
    }
    return nullptr;
}

const kvfit::alternative * alt_of(const kvfit::runtime_plan & p, const std::string & knob) {
    for (const auto & a : p.alternatives) {
        if (a.knob == knob) return &a;
    }
    return nullptr;
}

// Each max_context row that found a context: the runtime's plan fits at it and not one token past it (unless the
// search stopped at the top of its range).
void expect_rows_are_the_runtimes_limits(const kvfit::plan_result & r) {
    const kvfit::runtime_info & rt = *r.runtime;
    for (const auto & c : r.plan.max_context) {
        if (c.all_full_attention || !c.allowed || c.context_tokens == 0) continue;
        const kvfit::flag_values f = kvfit::with_cache_type(rt, r.flags, c.cache_type);
        const std::string flag(rt.context.flag);
        EXPECT_TRUE(fits_with(r, f, flag, std::to_string(c.context_tokens))) << rt.name << " " << c.cache_type;
        if (!c.capped) EXPECT_FALSE(fits_with(r, f, flag, std::to_string(c.context_tokens + 1))) << rt.name << " " << c.cache_type;
    }
}

TEST(knobs, every_runtime_registers_context_concurrency_and_cache_types) {
    for (const auto & rt : kvfit::runtimes()) {
        EXPECT_FALSE(rt.cache_types.empty()) << rt.name;
        EXPECT_FALSE(rt.cache_type_k.empty()) << rt.name;
        ASSERT_FALSE(rt.knobs.empty()) << rt.name;
        EXPECT_EQ(rt.knobs[0].flag, rt.context.flag) << rt.name << ": the context first (its command is the launch)";
        bool sequences = false;
        for (const auto & k : rt.knobs) sequences |= k.name == "sequences";
        // llama.cpp's -np is not a knob (docs/json.md): its alternatives are the spill (-ngl, --n-cpu-moe)
        EXPECT_EQ(sequences, rt.name != "llama.cpp") << rt.name;
    }
}

// SGLang, Qwen3.5-9B on an RTX 4090 at its default --context-length (262,144): the pool holds fewer tokens, so the
// plan "does not meet the request". The largest --context-length is the pool itself (scheduler.py: max_req_len =
// min(context_len - 1, pool - 1), rules.cpp; the pool does not depend on the length); fp8 doubles it.
TEST(knobs, sglang_largest_context_length_is_its_pool) {
    const kvfit::plan_result r = plan("sglang", "Qwen3.5-9B", "RTX 4090");
    ASSERT_FALSE(r.plan.fits);
    const uint64_t pool = r.plan.detail["kv_cache_tokens"].get<uint64_t>(); // "max_total_num_tokens"
    ASSERT_GT(pool, 0u);
    ASSERT_LT(pool, r.plan.context_tokens);
    const auto * row = row_of(r.plan, "auto");
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->context_tokens, pool);
    const auto * fp8 = row_of(r.plan, "fp8_e4m3");
    ASSERT_NE(fp8, nullptr);
    EXPECT_GT(fp8->context_tokens, pool * 19 / 10); // 1 B per element instead of bf16's 2, the same budget
    expect_rows_are_the_runtimes_limits(r);
    const auto * a = alt_of(r.plan, "context");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->value, pool);
    EXPECT_EQ(a->flags, "--context-length " + std::to_string(pool));
    EXPECT_NE(r.plan.launch.find("--context-length " + std::to_string(pool)), std::string::npos) << r.plan.launch;
    // with the radix cache on, fewer --max-running-requests frees nothing: no such alternative
    EXPECT_EQ(alt_of(r.plan, "sequences"), nullptr);
    const std::string text = kvfit::render_text(r);
    EXPECT_NE(text.find("Largest --context-length that fits, by KV cache type (--kv-cache-dtype):"), std::string::npos) << text;
    EXPECT_NE(text.find("  --context-length " + std::to_string(pool) + "\n"), std::string::npos) << text;
    const auto j = nlohmann::json::parse(kvfit::render_json(r));
    EXPECT_EQ(j["alternatives"][0]["knob"], "context");
    EXPECT_EQ(j["max_context"][0]["context_tokens"], pool);
}

// vLLM, Qwen3.5-9B on an RTX 4090 at --max-model-len 4096: the default --max-num-seqs 256 exceeds the Mamba blocks
// and vLLM refuses ("Please lower max_num_seqs to at most B", compilation.py, B counted at 256 sequences). Fewer
// sequences also shrink the sampler's logits and the CUDA graphs, so more than B fit: the alternative S is the most
// that fit, and the plan at S starts while S + 1 does not (the runtime's own check, planned again).
TEST(knobs, vllm_fewer_sequences_than_the_mamba_check_asks) {
    const kvfit::plan_result r = plan("vllm", "Qwen3.5-9B", "RTX 4090", {{"max_model_len", "4096"}});
    ASSERT_FALSE(r.plan.fits);
    ASSERT_FALSE(r.plan.refusals.empty());
    const uint64_t blocks = r.plan.detail["num_gpu_blocks"].get<uint64_t>();
    EXPECT_NE(r.plan.refusals[0].find("lower max_num_seqs to at most " + std::to_string(blocks)), std::string::npos)
        << r.plan.refusals[0];
    const auto * a = alt_of(r.plan, "sequences");
    ASSERT_NE(a, nullptr);
    EXPECT_GT(a->value, blocks);
    EXPECT_LT(a->value, 256u);
    EXPECT_EQ(a->flags, "--max-num-seqs " + std::to_string(a->value));
    EXPECT_TRUE(fits_with(r, r.flags, "max_num_seqs", std::to_string(a->value)));
    EXPECT_FALSE(fits_with(r, r.flags, "max_num_seqs", std::to_string(a->value + 1)));
    // no length helps at 256 sequences: every row is 0, the launch is the fewer-sequences command
    EXPECT_EQ(alt_of(r.plan, "context"), nullptr);
    for (const auto & c : r.plan.max_context) {
        if (!c.all_full_attention) EXPECT_EQ(c.context_tokens, 0u) << c.cache_type;
    }
    EXPECT_NE(r.plan.launch.find("--max-num-seqs " + std::to_string(a->value) + " "), std::string::npos) << r.plan.launch;
}

// vLLM, Qwen3.5-9B on an RTX 4090 at its default length (262,144) and 256 sequences: the sampler and the CUDA graphs
// of 256 sequences leave 0.36 GiB, too little for any length, and no --max-num-seqs serves 262,144 tokens. The one
// alternative changes both: the largest length at one sequence, then the most sequences at that length.
TEST(knobs, vllm_length_and_sequences_together_when_neither_alone_fits) {
    const kvfit::plan_result r = plan("vllm", "Qwen3.5-9B", "RTX 4090");
    ASSERT_FALSE(r.plan.starts);
    EXPECT_EQ(alt_of(r.plan, "context"), nullptr);
    EXPECT_EQ(alt_of(r.plan, "sequences"), nullptr);
    const auto * a = alt_of(r.plan, "context+sequences");
    ASSERT_NE(a, nullptr);
    const uint64_t len = a->value;
    const std::string prefix = "--max-model-len " + std::to_string(len) + " --max-num-seqs ";
    ASSERT_EQ(a->flags.rfind(prefix, 0), 0u) << a->flags;
    const uint64_t seqs = std::stoull(a->flags.substr(prefix.size()));
    kvfit::flag_values at = r.flags;
    at.set("max_model_len", std::to_string(len));
    EXPECT_TRUE(fits_with(r, at, "max_num_seqs", std::to_string(seqs)));
    EXPECT_FALSE(fits_with(r, at, "max_num_seqs", std::to_string(seqs + 1)));
    at.set("max_model_len", std::to_string(len + 1));
    EXPECT_FALSE(fits_with(r, at, "max_num_seqs", "1")); // the longest length any --max-num-seqs serves
    EXPECT_NE(r.plan.launch.find("--max-model-len " + std::to_string(len) + " "), std::string::npos) << r.plan.launch;
    EXPECT_NE(r.plan.launch.find("--max-num-seqs " + std::to_string(seqs) + " "), std::string::npos) << r.plan.launch;
}

// vLLM at --max-num-seqs the blocks allow, Meta-Llama-3.1-8B's shared config on an RTX 4090: the largest
// --max-model-len per --kv-cache-dtype is where one request's KV meets the pool (vLLM's _check_enough_kv_cache_memory),
// equal to vLLM's own bisection (detail.max_model_len_fit) for concurrency 1; fp8 holds about twice as many tokens.
TEST(knobs, vllm_largest_max_model_len_per_kv_cache_dtype) {
    const kvfit::plan_result r = plan("vllm", shared("meta-llama__Meta-Llama-3.1-8B.json"), "RTX 4090");
    ASSERT_FALSE(r.plan.fits); // 131,072 tokens of bf16 KV do not fit beside 15 GiB of weights
    const auto * row = row_of(r.plan, "auto");
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->context_tokens, r.plan.detail["max_model_len_fit"].get<uint64_t>());
    const auto * fp8 = row_of(r.plan, "fp8");
    ASSERT_NE(fp8, nullptr);
    EXPECT_GT(fp8->context_tokens, row->context_tokens * 19 / 10);
    expect_rows_are_the_runtimes_limits(r);
    const auto * ctx = alt_of(r.plan, "context");
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(ctx->value, row->context_tokens);
    // 131,072 tokens: no other one setting serves them (the utilization stops at kvfit's 0.95)
    EXPECT_EQ(r.plan.alternatives.size(), 1u);
    // 40,000 tokens, just above the row: each knob alone fits, each checked against vLLM's verdict one step past it
    const kvfit::plan_result near = plan("vllm", shared("meta-llama__Meta-Llama-3.1-8B.json"), "RTX 4090",
                                         {{"max_model_len", "40000"}});
    ASSERT_FALSE(near.plan.fits);
    const auto * u = alt_of(near.plan, "gpu_memory_utilization");
    ASSERT_NE(u, nullptr);
    EXPECT_GT(u->value, 92u); // above v2026's default 0.92
    EXPECT_LE(u->value, 95u);
    EXPECT_EQ(u->flags, fmt::format("--gpu-memory-utilization {:.2f}", u->value / 100.0));
    EXPECT_TRUE(fits_with(near, near.flags, "gpu_memory_utilization", fmt::format("{:.2f}", u->value / 100.0)));
    EXPECT_FALSE(fits_with(near, near.flags, "gpu_memory_utilization", fmt::format("{:.2f}", (u->value - 1) / 100.0)));
    const auto * n = alt_of(near.plan, "sequences");
    ASSERT_NE(n, nullptr);
    EXPECT_TRUE(fits_with(near, near.flags, "max_num_seqs", std::to_string(n->value)));
    EXPECT_FALSE(fits_with(near, near.flags, "max_num_seqs", std::to_string(n->value + 1)));
    const auto * t = alt_of(near.plan, "cache_type");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->flags, "--kv-cache-dtype fp8");
    EXPECT_EQ(near.plan.alternatives[0].knob, "context"); // the launch: the largest length as asked otherwise
    EXPECT_NE(near.plan.launch.find("--max-model-len " + std::to_string(row->context_tokens) + " "), std::string::npos);
}

// Ollama, Meta-Llama-3.1-8B's shared config on an RTX 4060 (8 GiB) with OLLAMA_NUM_PARALLEL 4 and num_ctx 8192:
// llama-server runs -c num_ctx x 4 (rules.cpp), which spills (Qwen3.5 runs one slot in Ollama, server/sched.go). The most slots that keep every layer on the GPU, and the largest num_ctx per
// OLLAMA_KV_CACHE_TYPE, are the runtime's own verdicts at those values.
TEST(knobs, ollama_num_ctx_per_cache_type_and_fewer_slots) {
    const kvfit::plan_result r = plan("ollama", shared("meta-llama__Meta-Llama-3.1-8B.json"), "RTX 4060", {{"num_parallel", "4"}, {"num_ctx", "8192"}});
    ASSERT_FALSE(r.plan.fits);
    ASSERT_NE(row_of(r.plan, "f16"), nullptr);
    ASSERT_NE(row_of(r.plan, "q4_0"), nullptr);
    EXPECT_GT(row_of(r.plan, "q4_0")->context_tokens, row_of(r.plan, "f16")->context_tokens);
    expect_rows_are_the_runtimes_limits(r);
    const auto * a = alt_of(r.plan, "sequences");
    ASSERT_NE(a, nullptr);
    ASSERT_LT(a->value, 4u);
    EXPECT_EQ(a->flags, "--num-parallel " + std::to_string(a->value));
    EXPECT_TRUE(fits_with(r, r.flags, "num_parallel", std::to_string(a->value)));
    EXPECT_FALSE(fits_with(r, r.flags, "num_parallel", std::to_string(a->value + 1)));
    // another OLLAMA_KV_CACHE_TYPE at the requested num_ctx: the first of f16, q8_0, q4_0 whose row reaches 8192
    const auto * t = alt_of(r.plan, "cache_type");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->flags, "--ollama-kv-cache-type " + t->cache_type);
    EXPECT_GE(row_of(r.plan, t->cache_type)->context_tokens, 8192u);
    EXPECT_LT(row_of(r.plan, "f16")->context_tokens, 8192u);
    EXPECT_TRUE(fits_with(r, r.flags, "ollama_kv_cache_type", t->cache_type));
}

// MLX: the rows per --kv-bits (none = the model's dtype), the "none" row equal to plan_mlx's own search
// (detail.max_context_fit); under mlx_lm.server --kv-bits is refused with mlx-lm's argparse message.
TEST(knobs, mlx_rows_per_kv_bits) {
    const kvfit::plan_result r = plan("mlx", shared("Qwen__Qwen3-8B.json"), "M4 Pro 24GB", {{"q_bits", "4"}});
    const auto * none = row_of(r.plan, "none");
    ASSERT_NE(none, nullptr);
    EXPECT_EQ(none->context_tokens, r.plan.detail["max_context_fit"].get<uint64_t>());
    ASSERT_NE(row_of(r.plan, "4"), nullptr);
    EXPECT_GE(row_of(r.plan, "4")->context_tokens, none->context_tokens);
    expect_rows_are_the_runtimes_limits(r);
    const kvfit::plan_result s = plan("mlx", shared("Qwen__Qwen3-8B.json"), "M4 Pro 24GB",
                                      {{"q_bits", "4"}, {"mlx_command", "server"}});
    ASSERT_NE(row_of(s.plan, "8"), nullptr);
    EXPECT_FALSE(row_of(s.plan, "8")->allowed);
    EXPECT_NE(row_of(s.plan, "8")->refusal.find("unrecognized arguments: --kv-bits 8"), std::string::npos)
        << row_of(s.plan, "8")->refusal;
    EXPECT_TRUE(row_of(s.plan, "none")->allowed);
}

// search.h assumes every knob's verdict is monotone. "Fits" for vLLM and SGLang is "starts and meets the request", so
// check it on a grid of each knob's range, real shapes, every runtime: past the first value that does not fit
// (that fits, for knob::smallest) the verdict never turns back.
TEST(knobs, verdicts_are_monotone_in_every_knob) {
    struct probe_case {
        const char * runtime;
        std::string model;
        const char * gpu;
        std::vector<std::pair<std::string, std::string>> flags;
    };
    const std::vector<probe_case> cases = {
        {"vllm", "Qwen3.5-9B", "RTX 4090", {{"max_model_len", "32768"}}},
        {"vllm", shared("meta-llama__Meta-Llama-3.1-8B.json"), "RTX 4090", {{"max_model_len", "40000"}}},
        {"sglang", "Qwen3.5-9B", "RTX 4090", {{"disable_radix_cache", "true"}, {"context_length", "32768"}}},
        {"ollama", shared("meta-llama__Meta-Llama-3.1-8B.json"), "RTX 4060", {{"num_parallel", "4"}, {"num_ctx", "8192"}}},
        {"mlx", shared("Qwen__Qwen3-8B.json"), "M4 Pro 24GB", {{"q_bits", "4"}, {"mlx_command", "server"}, {"num_sequences", "8"}}},
    };
    int turned = 0; // knobs whose verdict changes on the grid: the check must see both sides
    for (const auto & c : cases) {
        const kvfit::plan_result r = plan(c.runtime, c.model, c.gpu, c.flags);
        for (const auto & k : r.runtime->knobs) {
            const kvfit::knob_range range = k.range(r.model, r.flags);
            if (range.step == 0) continue;
            const uint64_t steps = (range.hi - range.lo) / range.step;
            int changes = 0;
            bool first = true, last = false;
            const uint64_t n = std::min<uint64_t>(steps, 32); // every value of a short range
            for (uint64_t i = 0; i <= n; ++i) {
                const uint64_t v = range.lo + (n ? steps * i / n : 0) * range.step;
                const bool fits = r.runtime->plan(r.model, kvfit::with_knob(r.flags, k, v), r.target).fits;
                if (!first && fits != last) {
                    ++changes;
                    EXPECT_EQ(fits, k.smallest) << c.runtime << " " << k.name << " turns at " << v;
                }
                first = false, last = fits;
            }
            EXPECT_LE(changes, 1) << c.runtime << " " << k.name;
            turned += changes;
        }
    }
    EXPECT_GE(turned, 8);
}

// --list --runtime vllm: Qwen3.5-9B on an RTX 4090 is filed under "fits" with the --max-num-seqs that vLLM's Mamba
// check allows (it was "does not fit" at the default 256), its launch carrying the change.
TEST(knobs, list_tries_the_alternatives_before_does_not_fit) {
    std::vector<kvfit::rank_candidate> cands;
    for (const auto & c : kvfit::catalog_candidates()) {
        if (c.name == "Qwen3.5-9B") cands.push_back(c);
    }
    ASSERT_EQ(cands.size(), 1u);
    kvfit::rank_settings s;
    s.runtime = "vllm";
    const auto rows = kvfit::rank_models(cands, {kvfit::parse_gpu_list("RTX 4090")}, s);
    ASSERT_EQ(rows.size(), 1u);
    ASSERT_TRUE(rows[0].fits) << rows[0].error;
    ASSERT_EQ(rows[0].changed.rfind("--max-num-seqs ", 0), 0u) << rows[0].changed;
    EXPECT_NE(rows[0].launch.find(rows[0].changed), std::string::npos) << rows[0].launch;
    const std::string text = kvfit::render_ranking_text(rows, {kvfit::parse_gpu_list("RTX 4090")}, s);
    EXPECT_NE(text.find("with " + rows[0].changed), std::string::npos) << text;
    // llama.cpp's offloading knobs are not tried: a row that fits there fits fully
    s.runtime = "llama.cpp";
    const auto ll = kvfit::rank_models(cands, {kvfit::parse_gpu_list("RTX 4090")}, s);
    EXPECT_EQ(ll[0].changed, "");
}

} // namespace
