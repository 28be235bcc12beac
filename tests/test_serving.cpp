// Ollama and SGLang policies (RULES §6, §5), multi-GPU placements (§3), and the serving CLI's bad input.
#include "kvfit/error.h"
#include "kvfit/ollama.h"
#include "kvfit/sglang.h"
#include "kvfit/vllm.h"
#include "kvfit/sources.h"
#include "support/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

constexpr uint64_t GiB = 1ull << 30;

kvfit::model_desc load(const char * name, const char * format) {
    kvfit::warnings w;
    kvfit::model_desc m = kvfit::load_model(name, w);
    kvfit::apply_weight_format(m, format, true);
    return m;
}

// Hybrid (GGUF architecture qwen35): Ollama forces one slot whatever OLLAMA_NUM_PARALLEL says; num_ctx by tier.
TEST(ollama, hybrid_runs_one_slot_with_the_tier_context) {
    const kvfit::model_desc m = load("Qwen3.5-9B", "q4_k_m");
    kvfit::ollama_settings s;
    s.num_parallel = 4;
    const auto p = kvfit::plan_ollama(m, s, {{"RTX 4090", 24 * GiB}});
    EXPECT_EQ(p.num_parallel, 1u);
    EXPECT_TRUE(p.parallel_forced);
    EXPECT_EQ(p.num_ctx, 32768u);               // >= 23 GiB tier
    EXPECT_EQ(p.llama.n_ctx, 32768u);           // -c num_ctx x 1
    EXPECT_EQ(p.plan.kv[0].bytes(), 32768ull * 32768); // 8 full layers x 4 x 256 x 2 x 2 B per token
    EXPECT_EQ(p.plan.rs.bytes(), 52690944u);    // one state slot
    EXPECT_EQ(p.fit_target_bytes, 1024ull << 20);
    EXPECT_TRUE(p.fits());
    // >= 47 GiB of VRAM: 262144; below 23 GiB: 4096; OLLAMA_GPU_OVERHEAD counts against the tier.
    EXPECT_EQ(kvfit::plan_ollama(m, s, {{"A", 48 * GiB}}).num_ctx, 262144u);
    s.gpu_overhead_bytes = 2 * GiB;
    EXPECT_EQ(kvfit::plan_ollama(m, s, {{"RTX 4090", 24 * GiB}}).num_ctx, 4096u);
}

// gpt-oss (GGUF architecture gpt-oss) is not in Ollama's single-slot list: -c num_ctx x 4 -np 4.
TEST(ollama, gpt_oss_multiplies_context_by_parallel_slots) {
    const kvfit::model_desc m = load("gpt-oss-20b", "mxfp4");
    kvfit::ollama_settings s;
    s.num_parallel = 4;
    s.kv_cache_type = "q8_0";
    const auto p = kvfit::plan_ollama(m, s, {{"RTX 4090", 24 * GiB}});
    EXPECT_EQ(p.num_parallel, 4u);
    EXPECT_FALSE(p.parallel_forced);
    EXPECT_EQ(p.llama.n_ctx, 4u * 32768);
    EXPECT_EQ(p.plan.ctx.n_ctx_seq, 32768u);
    EXPECT_EQ(p.plan.kv.size(), 2u);            // base (12 full layers) and swa (12 window layers)
    EXPECT_EQ(p.llama.type_k, kvfit::ggml_type::q8_0);
    // flash attention off: Ollama cannot quantize the cache, it stays f16
    s.flash_attention = "0";
    EXPECT_EQ(kvfit::plan_ollama(m, s, {{"RTX 4090", 24 * GiB}}).cache_type, kvfit::ggml_type::f16);
    s.kv_cache_type = "q5_1";
    EXPECT_THROW(kvfit::plan_ollama(m, s, {{"RTX 4090", 24 * GiB}}), kvfit::error);
}

TEST(ollama, projector_headroom_and_spill) {
    const kvfit::model_desc m = load("Qwen3.5-27B", "q4_k_m");
    kvfit::ollama_settings s;
    s.mmproj_bytes = 900ull << 20;
    auto p = kvfit::plan_ollama(m, s, {{"GPU0", 48 * GiB}});
    EXPECT_TRUE(p.mmproj_offload);
    EXPECT_EQ(p.fit_target_bytes, (900ull << 20) + GiB); // ceil((mmproj + 1 GiB) / MiB) MiB
    s.fit_target_bytes = 512ull << 20;                    // LLAMA_ARG_FIT_TARGET in extraEnvs: the pad adds to it
    EXPECT_EQ(kvfit::plan_ollama(m, s, {{"GPU0", 48 * GiB}}).fit_target_bytes, (1412ull << 20) + GiB);
    p = kvfit::plan_ollama(m, {}, {{"GPU0", 12 * GiB}}); // 16 GB of weights on 12 GiB: --fit spills layers
    EXPECT_FALSE(p.all_on_gpu);
    EXPECT_FALSE(p.fits());
}

TEST(sglang, hybrid_mamba_split_and_token_pool) {
    const kvfit::model_desc m = load("Qwen3.5-27B", "bf16");
    kvfit::sglang_settings s;
    s.mem_fraction_static = 0.9;
    s.context_length = 32768;
    const auto p = kvfit::plan_sglang(m, s, {"H200", 141 * GiB});
    EXPECT_EQ(p.cell_bytes, 16u * 4 * 512 * 2);                  // 16 full layers x 4 heads x (256 + 256) x 2 B
    EXPECT_EQ(p.mamba_bytes_per_request, 48u * 3207168);         // every GDN layer, f32 temporal state
    const double rest = double(p.rest_bytes);
    EXPECT_EQ(p.mamba_slots, uint64_t(rest * 0.9 / 1.9 / double(p.mamba_bytes_per_request)));
    EXPECT_EQ(p.max_total_num_tokens, uint64_t(rest - rest * 0.9 / 1.9) / p.cell_bytes);
    EXPECT_TRUE(p.fits());
}

TEST(vllm_placement, two_nodes_pp_or_dp) {
    const kvfit::model_desc m = load("Qwen3.5-27B", "bf16");
    kvfit::vllm_settings s;
    s.max_model_len = 262144;
    s.max_num_seqs = 64;
    const auto v = kvfit::vllm_placements(m, s, {"H100 SXM", 80 * GiB}, 9.0, 8, 2);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].pp, 2u);
    EXPECT_EQ(v[1].dp, 2u);
    EXPECT_EQ(v[0].plan.ranks.size(), 2u); // 32 + 32 layers
    EXPECT_EQ(v[0].plan.ranks[1].first_layer, 32u);
    EXPECT_DOUBLE_EQ(v[1].total_concurrency, 2 * v[1].plan.max_concurrency);
}

struct bad_row { const char * args; const char * message; };

TEST(serving_cli, flags_of_the_wrong_runtime_and_bad_parallelism) {
    const bad_row rows[] = {
        {"Qwen3.5-27B --max-model-len 8192", "--max-model-len is a vLLM flag; add --runtime vllm"},
        {"Qwen3.5-27B --runtime vllm --gpu H100 -ctk q8_0", "-ctk/--cache-type-k is a llama.cpp flag; with --runtime vllm use --kv-cache-dtype"},
        {"Qwen3.5-27B --runtime vllm --gpu H100 -c 8192", "-c/--ctx-size is a llama.cpp flag; with --runtime vllm use --max-model-len"},
        {"Qwen3.5-27B --runtime ollama --max-model-len 8192", "--max-model-len is a vLLM flag; Ollama spells it --num-ctx (or use --runtime vllm)"},
        // a trial: another runtime's context flag under an explicit --runtime names this runtime's spelling
        {"Qwen3.5-27B --runtime vllm --gpu H100 --context-length 8192", "--context-length is an SGLang flag; vLLM spells it --max-model-len (or use --runtime sglang)"},
        {"Qwen3.5-27B --runtime vLLM --gpu H100 --context-length 8192", "vLLM spells it --max-model-len"}, // names in any case
        {"Qwen3.5-27B --runtime vllm --gpu 8xH100 -tp 5", "Total number of attention heads (24) must be divisible by tensor parallel size (5)."},
        {"Qwen3.5-27B --runtime vllm --gpu 2xH100 -tp 4", "-tp 4 x -pp 1 x -dp 1 = 4 GPUs, but 2 are given"},
        {"Qwen3.5-27B --runtime vllm --gpu H100 --kv-cache-dtype fp4", "--kv-cache-dtype 'fp4': invalid choice"},
        {"Qwen3.5-27B --runtime vllm", "vllm: no GPUs given"},
        {"Qwen3.5-27B --runtime sglang --gpu H100 --mem-fraction-static 1.5", "--mem-fraction-static '1.5'"},
    };
    for (const auto & r : rows) {
        const auto out = kvfit::test::run_kvfit(r.args);
        EXPECT_EQ(out.status, 2) << r.args;
        EXPECT_NE(out.err.find(r.message), std::string::npos) << r.args << "\n" << out.err;
    }
}

// A trial: only the query heads were checked against TP. vLLM's and SGLang's QKVParallelLinear (layers/linear.py)
// replicate KV heads when tp >= n_head_kv (tp % n_head_kv must be 0) and split them otherwise (n_head_kv % tp);
// Gated DeltaNet key and value heads are split by tp (vLLM gdn_linear_attn.py, SGLang qwen3_next.py).
TEST(serving_cli, tp_must_divide_or_replicate_kv_heads_and_gdn_heads) {
    const bad_row rows[] = {
        // Qwen2.5-7B: 28 query heads (7 divides them), 4 KV heads (7 neither divides nor is a multiple of 4)
        {"/work/shared/configs/Qwen__Qwen2.5-7B.json --runtime vllm --gpu 7xH100 -tp 7",
         "vllm: -tp 7 does not divide the 4 KV heads of layer 0 and is not a multiple of them (QKVParallelLinear: "
         "AssertionError: 7 is not divisible by 4)"},
        {"/work/shared/configs/Qwen__Qwen2.5-7B.json --runtime sglang --gpu 7xH100 --tp 7",
         "sglang: --tp 7 does not divide the 4 KV heads"},
        // Qwen3.5-27B: 24 query heads and 4 KV heads take tp 12; its 16 linear-attention key heads do not
        {"/work/shared/configs/Qwen__Qwen3.5-27B.json --runtime vllm --gpu 12xH100 -tp 12",
         "vllm: -tp 12 does not divide the 16 Gated DeltaNet (linear attention) key heads: AssertionError: 16 is not "
         "divisible by 12"},
        {"/work/shared/configs/Qwen__Qwen3.5-27B.json --runtime sglang --gpu 12xH100 --tp 12",
         "sglang: --tp 12 does not divide the 16 Gated DeltaNet (linear attention) key heads"},
    };
    for (const auto & r : rows) {
        const auto out = kvfit::test::run_kvfit(r.args);
        EXPECT_EQ(out.status, 2) << r.args;
        EXPECT_NE(out.err.find(r.message), std::string::npos) << r.args << "\n" << out.err;
    }
    // KV heads replicated: tp 8 over Qwen3.5-27B's 4 KV heads (8 % 4 == 0; 24, 16, 48 heads split) is accepted by both
    for (const char * rt : {"vllm -tp 8", "sglang --tp 8"}) {
        const auto ok = kvfit::test::run_kvfit(std::string("/work/shared/configs/Qwen__Qwen3.5-27B.json --runtime ") + rt +
                                               " --gpu 8xH100 --json");
        EXPECT_EQ(ok.status, 0) << rt << "\n" << ok.err;
    }
}

// The TP auto-choice skips sizes the heads do not divide: over 3 GPUs Qwen3.5-27B (24 query heads, 4 KV heads,
// 16 linear key heads) cannot take --tp 3 (4 % 3 != 0), so SGLang plans --tp 1 --dp 3 and vLLM TP 1 x DP 3.
TEST(serving_cli, tp_auto_choice_skips_sizes_the_kv_heads_do_not_divide) {
    const auto sg = kvfit::test::run_kvfit("/work/shared/configs/Qwen__Qwen3.5-27B.json --runtime sglang "
                                           "--gpu '3xRTX 4090' --weights fp8 --json");
    ASSERT_NE(sg.status, 2) << sg.err; // planned (27.4 GiB of fp8 weights on one 24 GiB rank: it does not start, exit 3)
    const auto j = nlohmann::json::parse(sg.out);
    EXPECT_EQ(j["detail"]["settings"]["tp"], 1) << j["detail"]["settings"];
    EXPECT_EQ(j["detail"]["settings"]["dp"], 3);
    bool chosen = false;
    for (const auto & n : j["notes"]) {
        const std::string t = n.get<std::string>();
        if (t.find("chosen over the 3 GPUs") == std::string::npos) continue;
        chosen = true;
        EXPECT_EQ(t.find("--tp 3 --dp 1"), std::string::npos) << t; // never considered
        EXPECT_NE(t.find("--tp 1 --dp 3"), std::string::npos) << t;
    }
    EXPECT_TRUE(chosen) << j["notes"];
    const kvfit::model_desc m = [] {
        kvfit::warnings w;
        kvfit::model_desc d = kvfit::load_model("/work/shared/configs/Qwen__Qwen3.5-27B.json", w);
        kvfit::apply_weight_format(d, "fp8", true);
        return d;
    }();
    const auto v = kvfit::vllm_placements(m, kvfit::vllm_settings{}, {"RTX 4090", 24 * GiB}, 8.9, 3, 1);
    for (const auto & pl : v) EXPECT_NE(pl.tp, 3u) << pl.why;
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].dp, 3u);
}

// A trial: 2 mamba slots under the radix cache (3 slots per request, _calculate_mamba_ratio) leave 0 running
// requests; the error names that cause and the fix, and no launch line is printed for a server that does not start.
TEST(serving_cli, sglang_too_few_mamba_slots_names_the_ratio) {
    const std::string base = "/work/shared/configs/Qwen__Qwen3.5-27B.json --runtime sglang --gpu H100 "
                             "--context-length 8192 --max-mamba-cache-size ";
    const auto out = kvfit::test::run_kvfit(base + "2 --json");
    const auto j = nlohmann::json::parse(out.out);
    ASSERT_EQ(j["refusals"].size(), 1u) << j["refusals"];
    EXPECT_EQ(j["refusals"][0], "2 mamba cache slots (--max-mamba-cache-size) // 3 per request (the radix cache on; "
                                "_calculate_mamba_ratio) = 0 running requests: give --max-mamba-cache-size 3 or more, "
                                "or --disable-radix-cache (1 slot per request)");
    EXPECT_EQ(j["launch"], "");
    const auto text = kvfit::test::run_kvfit(base + "2");
    EXPECT_EQ(text.out.find("sglang.launch_server"), std::string::npos) << text.out;
    // either fix starts it: 3 slots (1 request) or the radix cache off (2 requests)
    for (const char * fix : {"3 --json", "2 --disable-radix-cache --json"}) {
        const auto f = nlohmann::json::parse(kvfit::test::run_kvfit(base + fix).out);
        EXPECT_TRUE(f["refusals"].empty()) << fix << f["refusals"];
        EXPECT_NE(f["launch"].get<std::string>().find("--max-mamba-cache-size"), std::string::npos) << fix;
    }
}

TEST(serving_cli, fp8_e4m3_on_ampere_warns_as_triton_fails) {
    const auto out = kvfit::test::run_kvfit("Qwen3.5-27B --runtime vllm --gpu '2xRTX 3090' -tp 2 --kv-cache-dtype fp8 "
                                            "--max-model-len 8192 --max-num-seqs 8 --json");
    const auto j = nlohmann::json::parse(out.out);
    bool triton = false;
    for (const auto & w : j["warnings"]) triton |= w.get<std::string>().find("fp8e4nv not supported") != std::string::npos;
    EXPECT_TRUE(triton) << j["warnings"];
    EXPECT_DOUBLE_EQ(j["gpus"][0]["compute_capability"].get<double>(), 8.6);
    EXPECT_EQ(j["runtime"], "vllm");
    EXPECT_EQ(j["rules"], "vLLM 2026 rules (v0.24+)");
    for (const char * key : {"block_size", "page_bytes", "num_gpu_blocks", "per_request_blocks", "max_concurrency",
                             "kv_cache_tokens", "available_kv_bytes", "max_model_len_fit", "per_rank"}) {
        EXPECT_TRUE(j["detail"].contains(key)) << key;
    }
    ASSERT_EQ(j["devices"].size(), 2u); // one per GPU of TP 2
    EXPECT_EQ(j["devices"][0]["buffers"].back()["name"], "kv_pool");
}

} // namespace

namespace {

bool any_warning(const nlohmann::json & j, const std::string & part) {
    for (const auto & w : j["warnings"]) {
        if (w.get<std::string>().find(part) != std::string::npos) return true;
    }
    return false;
}

} // namespace

// A trial's "--weights fp8 plans fp8 weights but the launch line loads the bf16 checkpoint". vLLM and SGLang quantize
// an unquantized checkpoint to fp8 when asked (--quantization fp8: vLLM fp8.py Fp8Config, dynamic per-tensor), so the
// launch line asks; the other quantized formats are read from a quantized checkpoint, and GGUF formats are no
// checkpoint of theirs: a warning names what the launch line must load instead.
TEST(serving_cli, the_launch_line_loads_the_weights_planned) {
    const auto fp8 = kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu L4 --max-model-len 40960 --weights fp8 --json");
    ASSERT_EQ(fp8.status, 0) << fp8.err; // 8.2 GiB of fp8 weights leave room for 40960 tokens on the L4 (bf16 does not)
    const auto j = nlohmann::json::parse(fp8.out);
    EXPECT_NE(j["launch"].get<std::string>().find(" --quantization fp8"), std::string::npos) << j["launch"];
    EXPECT_EQ(j["detail"]["settings"]["quantization"], "fp8");
    const auto sg = nlohmann::json::parse(kvfit::test::run_kvfit("Qwen3-8B --runtime sglang --gpu L4 --weights fp8 --json").out);
    EXPECT_NE(sg["launch"].get<std::string>().find(" --quantization fp8"), std::string::npos) << sg["launch"];
    // the bf16 default plans the checkpoint as it is: no flag
    const auto plain = nlohmann::json::parse(kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu H100 --json").out);
    EXPECT_EQ(plain["launch"].get<std::string>().find("--quantization"), std::string::npos) << plain["launch"];
    // AWQ: a quantized checkpoint is needed, and the warning names it
    const auto awq = nlohmann::json::parse(kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu L4 --weights awq --json").out);
    EXPECT_EQ(awq["launch"].get<std::string>().find("--quantization"), std::string::npos) << awq["launch"];
    EXPECT_TRUE(any_warning(awq, "--weights awq: vLLM reads these weights (awq-int4 (group 128)) from a quantized "
                                 "checkpoint")) << awq["warnings"];
    // a GGUF format: sized as asked, and said to be no vLLM / SGLang checkpoint; --strict refuses the guess
    const auto gguf = nlohmann::json::parse(kvfit::test::run_kvfit("Qwen3-8B --runtime sglang --gpu L4 --weights q4_k_m --json").out);
    EXPECT_TRUE(any_warning(gguf, "--weights q4_k_m: a GGUF (llama.cpp) format, which SGLang does not load")) << gguf["warnings"];
    EXPECT_EQ(kvfit::test::run_kvfit("Qwen3-8B --runtime vllm --gpu H100 --weights q4_k_m --strict").status, 2);
}

// The serving model line counts every kind of layer: Llama-4's 36 chunked layers were missing ("48 layers (12 full,
// 0 sliding, 0 MLA, 0 recurrent)").
TEST(serving_cli, the_model_line_counts_chunked_layers) {
    const auto r = kvfit::test::run_kvfit("Llama-4-Scout-17B-16E-Instruct --runtime vllm --gpu 8xH100");
    EXPECT_NE(r.out.find("model: 48 layers (12 full, 0 sliding, 36 chunked, 0 MLA, 0 recurrent)"), std::string::npos) << r.out;
}
