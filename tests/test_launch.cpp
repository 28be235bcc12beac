// kvfit exec and kvfit explain (include/kvfit/launch.h, app/cli_exec.cpp), GPU detection (detect.h).
// exec runs against a fake nvidia-smi and a fake llama-server on PATH; explain against real llama.cpp logs
// (tests/data/logs/README.md says how they were produced) and the excerpts of ../shared/cases.
#include "kvfit/detect.h"
#include <nlohmann/json.hpp>
#include "kvfit/error.h"
#include "kvfit/launch.h"
#include "kvfit/sources.h"
#include "support/files.h"
#include "support/gguf_fixture.h"
#include "support/run_cli.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/wait.h>

namespace {

namespace fs = std::filesystem;
using kvfit::test::cli_result;

const std::string gguf_dir = std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/";
const std::string logs_dir = std::string(KVFIT_TEST_DATA) + "/logs/";

// A directory of fake programs: nvidia-smi reporting one RTX 4060 (8188 MiB, 8000 MiB free), llama-server and
// vllm that print their arguments and exit 7 (so the test sees the command's own status).
std::string fake_bin(bool with_gpu) {
    const fs::path dir = fs::temp_directory_path() / ("kvfit-fake-bin-" + std::to_string(getpid()) + (with_gpu ? "-gpu" : "-nogpu"));
    fs::create_directories(dir);
    auto script = [&](const char * name, const std::string & body) {
        const fs::path p = dir / name;
        std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
        fs::permissions(p, fs::perms::owner_all);
    };
    script("nvidia-smi", with_gpu ? "echo 'NVIDIA GeForce RTX 4060, 8188, 8000'" : "exit 9");
    script("rocm-smi", "exit 9");
    script("llama-server", "echo \"fake llama-server $*\"; exit 7");
    script("vllm", "echo \"fake vllm $*\"; exit 7");
    return dir.string();
}

// kvfit with PATH = the fake programs first, NVML off (a real driver library must not answer in tests).
cli_result run_with_fakes(const std::string & args, bool with_gpu = true) {
    return kvfit::test::run_kvfit_env("PATH=" + fake_bin(with_gpu) + ":/usr/bin:/bin KVFIT_NO_NVML=1", args);
}

const std::string model = gguf_dir + "qwen35-9b_v248320.gguf"; // 5.74 GiB of weights, header only

TEST(exec, a_command_that_fits_runs_with_its_own_exit_status) {
    const auto r = run_with_fakes("exec -- llama-server -m " + model + " -c 8192 --port 8080");
    EXPECT_EQ(r.status, 7) << r.err;
    EXPECT_EQ(r.out, "fake llama-server -m " + model + " -c 8192 --port 8080\n");
    EXPECT_NE(r.err.find("GPU0: NVIDIA GeForce RTX 4060 (RTX 4060), 7.81 GiB free of 8.00 GiB, via nvidia-smi"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("OK: "), std::string::npos) << r.err;
}

TEST(exec, a_spilling_command_is_refused_with_exit_3) {
    const auto r = run_with_fakes("exec -- llama-server -m " + model + " -c 262144 -np 1");
    EXPECT_EQ(r.status, 3) << r.err;
    EXPECT_EQ(r.out.find("fake llama-server"), std::string::npos) << "the command must not run";
    EXPECT_NE(r.out.find("DOES NOT FIT"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("RTX 4060: the KV cache (8.00 GiB) overflows it"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Speed: on GPUs large enough this would decode at"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("closest that fits: context 50,176 tokens"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(a spill)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("llama-server -m " + model + " -c "), std::string::npos) << r.out;
}

// exec searches nothing itself: its commands are the planner's alternatives (the same search the report's "what
// would fit" lines come from), each applied to the command, closest first (another cache type at the requested
// context, then the context, then the spill).
TEST(exec, its_commands_are_the_planners_alternatives) {
    const auto plan = run_with_fakes(model + " --gpu \"RTX 4060\" -c 60000 --json");
    ASSERT_EQ(plan.status, 3) << plan.err;
    const auto alts = nlohmann::json::parse(plan.out)["alternatives"];
    ASSERT_GE(alts.size(), 3u) << plan.out;
    const auto r = run_with_fakes("exec --gpu \"RTX 4060\" -- llama-server -m " + model + " -c 60000 --port 8080");
    EXPECT_EQ(r.status, 3) << r.err;
    for (const auto & a : alts) {
        const std::string flags = a["flags"];
        std::string expect = "llama-server -m " + model;
        if (a["knob"] == "context") expect += " " + flags + " --port 8080";
        else expect += " -c 60000 --port 8080 " + flags;
        EXPECT_NE(r.out.find(expect + "\n"), std::string::npos) << expect << "\n" << r.out;
    }
    EXPECT_NE(r.out.find("closest that fits: q8_0 KV cache, same context"), std::string::npos) << r.out;
}

// The GPUs llama.cpp uses are the ones planned: -sm none keeps the whole model on the main GPU (-mg), -dev names
// them (a new user's trial: both were passed through and the model planned split over every GPU, "OK"). Two RTX
// 4060s hold Gemma-3-12B's 8,192 tokens split; one does not.
TEST(exec, split_mode_none_and_device_plan_the_gpus_llama_cpp_uses) {
    const std::string gemma = gguf_dir + "gemma3-12b_v262208.gguf";
    const auto split = run_with_fakes("exec --gpu 2x\"RTX 4060\" -- llama-server -m " + gemma + " -c 8192");
    EXPECT_EQ(split.status, 7) << split.out << split.err;
    for (const char * one : {"-sm none", "-sm none -mg 1", "--device CUDA0", "-dev CUDA1"}) {
        const auto r = run_with_fakes("exec --gpu 2x\"RTX 4060\" -- llama-server -m " + gemma + " -c 8192 " + one);
        EXPECT_EQ(r.status, 3) << one << "\n" << r.out << r.err;
        EXPECT_EQ(r.out.find("fake llama-server"), std::string::npos) << one;
        EXPECT_EQ(r.err.find("not modelled"), std::string::npos) << one << "\n" << r.err;
    }
    const auto both = run_with_fakes("exec --gpu 2x\"RTX 4060\" -- llama-server -m " + gemma + " -c 8192 -dev CUDA0,CUDA1");
    EXPECT_EQ(both.status, 7) << both.out << both.err;
    const auto bad = run_with_fakes("exec --gpu 2x\"RTX 4060\" -- llama-server -m " + gemma + " -c 8192 -dev CUDA2");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--device: GPU 2 of 2"), std::string::npos) << bad.err;
}

// llama-server loads a GGUF file: a config.json or a catalog name has no weights, and exec refuses it instead of
// planning it without them (a new user's trial: "OK" for Qwen3-8B at 32,768 tokens on 8 GiB, which does not fit).
TEST(exec, a_model_without_weights_is_refused) {
    for (const std::string m : {std::string(KVFIT_SHARED_DIR) + "/configs/Qwen__Qwen3-8B.json", std::string("Qwen3.5-9B")}) {
        const auto r = run_with_fakes("exec --gpu \"RTX 4060\" -- llama-server -m " + m + " -c 32768");
        EXPECT_EQ(r.status, 2) << m;
        EXPECT_EQ(r.out.find("fake llama-server"), std::string::npos) << m;
        EXPECT_NE(r.err.find("not a GGUF file with weights, which llama.cpp loads"), std::string::npos) << r.err;
    }
}

TEST(exec, fix_runs_the_closest_command_that_fits) {
    const auto r = run_with_fakes("exec --fix -- llama-server -m " + model + " -c 262144");
    EXPECT_EQ(r.status, 7) << r.err;
    EXPECT_NE(r.out.find("fake llama-server -m " + model + " -c "), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("--fix: running the closest command that fits"), std::string::npos) << r.err;
}

// --mmproj: the projector (weights from its header + the clip compute buffer of the warmup image) is loaded on the
// first GPU, so it counts against that GPU's memory; --no-mmproj-offload keeps it in host RAM. Qwen2-VL-7B's keys and
// its 1,352,605,696 B of weights (docs/rules/llamacpp-mmproj.md), -fa auto: 267.08 MiB of clip compute.
TEST(exec, mmproj_counts_against_the_gpu) {
    const fs::path mmproj = fs::temp_directory_path() / ("kvfit-mmproj-" + std::to_string(getpid()) + ".gguf");
    kvfit::gguf_writer w;
    using kvfit::gguf_wvalue;
    w.add("general.architecture", gguf_wvalue::string("clip"));
    w.add("clip.has_vision_encoder", gguf_wvalue::boolean(true));
    w.add("clip.projector_type", gguf_wvalue::string("qwen2vl_merger"));
    for (const auto & [k, v] : std::vector<std::pair<const char *, uint32_t>>{
             {"clip.vision.embedding_length", 1280}, {"clip.vision.feed_forward_length", 5120}, {"clip.vision.block_count", 32},
             {"clip.vision.attention.head_count", 16}, {"clip.vision.patch_size", 14}, {"clip.vision.image_size", 560},
             {"clip.vision.projection_dim", 3584}}) {
        w.add(k, gguf_wvalue::u32(v));
    }
    w.add_tensor("v.blk.0.ffn_up.weight", kvfit::ggml_type::f16, {4096, 165113}); // 1,352,605,696 B
    w.write(mmproj.string(), kvfit::gguf_data::header_only);
    const std::string cmd = "exec -- llama-server -m " + model + " -c 8192 --mmproj " + mmproj.string();
    const auto r = run_with_fakes(cmd);
    EXPECT_EQ(r.status, 3) << r.err << r.out;
    EXPECT_NE(r.err.find("clip compute 267.08 MiB on RTX 4060"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("not modelled"), std::string::npos) << r.err;
    EXPECT_EQ(run_with_fakes(cmd + " --no-mmproj-offload").status, 7);
    fs::remove(mmproj);
}

TEST(exec, unknown_flags_pass_through_and_are_listed) {
    const auto r = run_with_fakes("exec -- llama-server -m " + model + " -c 4096 --frobnicate 3 -fa on");
    EXPECT_EQ(r.status, 7) << r.err;
    EXPECT_NE(r.out.find("--frobnicate 3 -fa on"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("not modelled (passed through untouched): --frobnicate 3"), std::string::npos) << r.err;
}

TEST(exec, without_a_gpu_it_says_so_and_runs_on_the_cpu) {
    const auto r = run_with_fakes("exec -- llama-server -m " + model + " -c 262144", false);
    EXPECT_EQ(r.status, 7) << r.err;
    EXPECT_NE(r.err.find("no GPU found"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("planning for the CPU"), std::string::npos) << r.err;
}

TEST(exec, remote_models_and_vllm) {
    const auto hf = run_with_fakes("exec -- llama-server -hf Qwen/Qwen3-8B-GGUF");
    EXPECT_EQ(hf.status, 2);
    EXPECT_NE(hf.err.find("remote models not supported yet"), std::string::npos) << hf.err;
    const auto v = run_with_fakes("exec -- vllm serve Qwen/Qwen3-8B --max-model-len 32768");
    EXPECT_EQ(v.status, 7) << v.err;
    EXPECT_NE(v.err.find("vllm plans: see kvfit --runtime vllm"), std::string::npos) << v.err;
    EXPECT_EQ(v.out, "fake vllm serve Qwen/Qwen3-8B --max-model-len 32768\n");
    EXPECT_EQ(run_with_fakes("exec -- ls").status, 2);
}

TEST(exec, command_parsing) {
    const auto c = kvfit::parse_launch_command({"llama-server", "-m", "m.gguf", "-c", "0", "-np", "4", "-ngl", "20", "-ctk",
                                                "q8_0", "-ctv", "q8_0", "-fa", "on", "-ub", "1024", "-b", "4096", "-ts",
                                                "3,1", "-ot", "exps=CPU", "--n-cpu-moe", "5", "--kv-unified", "--swa-full",
                                                "--mmproj", "p.gguf", "--no-mmap", "--fit", "off", "--cpu-moe"});
    EXPECT_EQ(c.runtime, kvfit::launch_runtime::llamacpp);
    EXPECT_EQ(c.model_path, "m.gguf");
    EXPECT_EQ(c.settings.n_ctx, 0u); // -c 0: the model's n_ctx_train
    EXPECT_EQ(c.settings.n_seq, 4u);
    EXPECT_EQ(c.placement.n_gpu_layers, 20);
    EXPECT_EQ(c.settings.type_k, kvfit::ggml_type::q8_0);
    EXPECT_EQ(c.settings.flash_attn, kvfit::flash_attn_mode::on);
    EXPECT_EQ(c.settings.n_ubatch, 1024u);
    EXPECT_EQ(c.settings.n_batch, 4096u);
    EXPECT_EQ(c.placement.tensor_split, (std::vector<double>{3, 1}));
    EXPECT_EQ(c.placement.override_tensor_cpu, (std::vector<std::string>{"exps"}));
    EXPECT_EQ(c.placement.n_cpu_moe, 5u);
    EXPECT_TRUE(c.placement.cpu_moe && c.settings.kv_unified && c.settings.swa_full && c.no_mmap);
    EXPECT_EQ(c.mmproj_path, "p.gguf");
    EXPECT_EQ(c.fit, "off");
    EXPECT_TRUE(c.not_modelled.empty());
    EXPECT_EQ(kvfit::parse_launch_command({"llama-cli", "-m", "x"}).placement.n_gpu_layers, -1); // default: all
    EXPECT_EQ(kvfit::with_flag({"llama-server", "-m", "x", "-c", "131072"}, {"-c", "--ctx-size"}, "32768"),
              (std::vector<std::string>{"llama-server", "-m", "x", "-c", "32768"}));
    EXPECT_EQ(kvfit::with_flag({"llama-server", "-m", "x"}, {"-ngl"}, "20"),
              (std::vector<std::string>{"llama-server", "-m", "x", "-ngl", "20"}));
    EXPECT_EQ(kvfit::shell_join({"llama-server", "-ot", "blk\\.(1|2)\\.ffn=CPU"}), "llama-server -ot 'blk\\.(1|2)\\.ffn=CPU'");
    EXPECT_THROW(kvfit::parse_launch_command({"llama-server", "-c", "lots"}), kvfit::error);
    EXPECT_THROW(kvfit::parse_launch_command({"llama-server", "-ctk", "q9_9"}), kvfit::error);
}

TEST(detect, parses_nvidia_smi_and_rocm_smi) {
    const auto n = kvfit::parse_nvidia_smi_csv("NVIDIA H100 80GB HBM3, 81559, 80994\n\nNVIDIA GeForce RTX 4090, 24564, 23000\n");
    ASSERT_EQ(n.size(), 2u);
    EXPECT_EQ(n[0].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(n[0].total_bytes, 81559ull << 20);
    EXPECT_EQ(n[1].free_bytes, 23000ull << 20);
    EXPECT_THROW(kvfit::parse_nvidia_smi_csv("RTX, 12\n"), kvfit::error);
    EXPECT_THROW(kvfit::parse_nvidia_smi_csv("RTX, 12, lots\n"), kvfit::error);
    const auto r = kvfit::parse_rocm_smi_json(R"json({"card0": {"Card Series": "AMD Instinct MI300X",
        "VRAM Total Memory (B)": "206141652992", "VRAM Total Used Memory (B)": "299876352"}, "system": {}})json");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].name, "AMD Instinct MI300X");
    EXPECT_EQ(r[0].free_bytes, 206141652992ull - 299876352ull);
    kvfit::gpu_detection d;
    d.gpus = r;
    d.method = "rocm-smi";
    EXPECT_EQ(kvfit::devices_from_detection(d)[0].name, "MI300X"); // the table's name: its bandwidth is known
}

TEST(detect, gpu_auto_in_the_main_command) {
    const auto r = run_with_fakes("Qwen3.5-9B --weights q4_k_m --gpu auto -c 32768 --check");
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.err.find("via nvidia-smi"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("RTX 4060 uses"), std::string::npos) << r.out;
}

// --- explain -------------------------------------------------------------------------------------------------

struct log_case {
    const char * log;    // tests/data/logs/
    const char * model;  // ../shared/reference/llamacpp/gguf/
    size_t buffer_rows;  // size lines expected (model, output, KV buffers, KV caches, recurrent, compute x2)
};

const log_case logs[] = {
    {"llama31-8b_c4096.log", "llama31-8b_v512.gguf", 6},
    {"llama31-8b_c8192_fa0_q8k.log", "llama31-8b_v512.gguf", 6},
    {"qwen35-9b_c4096_np2.log", "qwen35-9b_v512.gguf", 8},
    {"gemma3-12b_c4096_np2.log", "gemma3-12b_v512.gguf", 8},
    {"lfm2-1.2b_c4096_np2.log", "lfm2-1.2b_v512.gguf", 8},
    // llama-server's n_outputs_max = n_parallel (server_output_limits): explain plans the logged 2, not n_batch
    {"llama31-8b_c4096_np2_srv.log", "llama31-8b_v512.gguf", 6},
};

bool is_compute_row(const kvfit::explain_row & r) { return r.what.rfind("compute buffer", 0) == 0; }

// Every size and context line of a real llama.cpp log is reproduced. The compute-buffer rows are held to the
// same standard once the library's compute model is byte-exact (branch "compute", checked on all five logs
// together with this branch): the first log decides, so the test tightens by itself when that model is merged.
bool compute_model_is_exact() {
    const auto log = kvfit::parse_llamacpp_log(kvfit::test::read_text(logs_dir + logs[0].log));
    kvfit::warnings warn;
    const auto e = kvfit::explain_log(log, kvfit::load_model(gguf_dir + logs[0].model, warn));
    return std::all_of(e.rows.begin(), e.rows.end(), [](const kvfit::explain_row & r) { return r.same; });
}

TEST(explain, reproduces_every_buffer_line_of_real_logs) {
    const bool exact_compute = compute_model_is_exact();
    if (!exact_compute) std::printf("note: compute-buffer rows not compared (compute model not byte-exact in this build)\n");
    for (const auto & c : logs) {
        const auto log = kvfit::parse_llamacpp_log(kvfit::test::read_text(logs_dir + c.log));
        kvfit::warnings warn;
        const auto m = kvfit::load_model(gguf_dir + c.model, warn);
        const auto e = kvfit::explain_log(log, m);
        size_t buffers = 0, context = 0;
        for (const auto & r : e.rows) {
            const bool size_line = r.log.find("MiB") != std::string::npos;
            buffers += size_line;
            context += !size_line;
            if (is_compute_row(r) && !exact_compute) continue;
            EXPECT_TRUE(r.same) << c.log << " line " << r.line_no << " " << r.what << ": log " << r.log << ", kvfit " << r.kvfit;
        }
        EXPECT_EQ(buffers, c.buffer_rows) << c.log;
        EXPECT_EQ(context, 7u) << c.log; // n_ctx, n_ctx_seq, n_batch, n_ubatch, n_seq_max, flash_attn, kv_unified
    }
}

TEST(explain, cli_takes_the_model_from_the_log_or_m) {
    const auto r = kvfit::test::run_kvfit("explain " + logs_dir + "qwen35-9b_c4096_np2.log -m " + gguf_dir + "qwen35-9b_v512.gguf");
    EXPECT_TRUE(r.status == 0 || r.status == 1) << r.err;
    EXPECT_NE(r.out.find("KV cache 0 (base)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("log 128.00 MiB (2048 cells, 8 layers, 2/2 seqs), K (f16): 64.00 MiB, V (f16): 64.00 MiB"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("recurrent state"), std::string::npos) << r.out;
    // the log names /work/scratch/... which a test machine may lack: then the error says to pass -m
    const auto n = kvfit::test::run_kvfit("explain " + logs_dir + "qwen35-9b_c4096_np2.log");
    if (!fs::exists("/work/scratch/conformance/models/qwen35-9b_v512.gguf")) {
        EXPECT_EQ(n.status, 2);
        EXPECT_NE(n.err.find("pass -m MODEL"), std::string::npos) << n.err;
    }
}

// ../shared/cases K1: 262,144 tokens, 4 sequences sharing one cache (unified) on the 64-layer hybrid model.
// A trial: `explain LOG -m MODEL` on a log whose runs load different models applied MODEL to every run silently. A run
// whose model file is not -m's (a GGUF) is named in a note; with a -m that is no file to compare (a catalog name),
// a run that loads another file than the first run is.
TEST(explain, a_run_of_another_model_than_m_is_noted) {
    const std::string two = kvfit::test::write_temp("two_models.log",
        kvfit::test::read_text(logs_dir + "llama31-8b_c4096.log") + kvfit::test::read_text(logs_dir + "qwen35-9b_c4096_np2.log"));
    const auto r = kvfit::test::run_kvfit("explain " + two + " -m " + gguf_dir + "llama31-8b_v512.gguf");
    EXPECT_NE(r.out.find("run 2 of 2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("note: the log's run 2 loads /work/scratch/conformance/models/qwen35-9b_v512.gguf, not -m " +
                         gguf_dir + "llama31-8b_v512.gguf"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("note: the log's run 1"), std::string::npos) << r.out; // run 1 is -m's model
    const auto cat = kvfit::test::run_kvfit("explain " + two + " -m Meta-Llama-3.1-8B");
    EXPECT_NE(cat.out.find("note: run 2 loads /work/scratch/conformance/models/qwen35-9b_v512.gguf, run 1 "
                           "/work/scratch/conformance/models/llama31-8b_v512.gguf: -m Meta-Llama-3.1-8B is planned for both"),
              std::string::npos) << cat.out << cat.err;
    // one model throughout: no note
    const auto one = kvfit::test::run_kvfit("explain " + logs_dir + "llama31-8b_c4096.log -m " + gguf_dir + "llama31-8b_v512.gguf");
    EXPECT_EQ(one.out.find("note: "), std::string::npos) << one.out;
}

TEST(explain, case_k1_unified_hybrid_excerpt) {
    const std::string text =
        "llama_context: n_seq_max     = 4\n"
        "llama_context: n_ctx         = 262144\n"
        "llama_context: n_ctx_seq     = 262144\n"
        "llama_context: kv_unified    = true\n"
        "llama_kv_cache: size = 16384.00 MiB (262144 cells,  16 layers,  4/1 seqs), K (f16): 8192.00 MiB, V (f16): 8192.00 MiB\n"
        "llama_memory_recurrent: size =  598.50 MiB (     4 cells,  64 layers,  4 seqs), R (f32):   22.50 MiB, S (f32):  576.00 MiB\n";
    kvfit::warnings warn;
    const auto m = kvfit::load_model("Qwen3.5-27B", warn);
    const auto e = kvfit::explain_log(kvfit::parse_llamacpp_log(text), m);
    EXPECT_EQ(e.differences, 0u) << kvfit::render_explanation(m, e);
    EXPECT_EQ(e.rows.size(), 6u);
}

// ../shared/cases K5: -ngl 1 on a 28-block model offloads only the output layer: "offloaded 1/29 layers".
TEST(explain, case_k5_ngl_counts_the_output_layer) {
    const std::string text =
        "load_tensors: offloading output layer to GPU\n"
        "load_tensors: offloaded 1/29 layers to GPU\n"
        "load_tensors:        CUDA0 model buffer size =   100.00 MiB\n"
        "load_tensors:   CPU_Mapped model buffer size =  4000.00 MiB\n"
        "llama_context: n_ctx         = 4096\n";
    kvfit::warnings warn;
    const auto m = kvfit::load_model("Qwen2.5-7B", warn);
    const auto log = kvfit::parse_llamacpp_log(text);
    const auto ls = kvfit::settings_from_log(log, m);
    EXPECT_EQ(ls.placement.n_gpu_layers, 1);
    ASSERT_EQ(ls.gpus.size(), 1u);
    // the log prints no n_batch / n_ubatch line: the defaults it is compared at are said, not taken silently
    EXPECT_EQ(ls.settings.n_ubatch, 512u);
    EXPECT_NE(std::find(ls.notes.begin(), ls.notes.end(),
                        "no 'llama_context: n_seq_max = N' line: compared at one sequence (-np 1)"), ls.notes.end());
    EXPECT_NE(std::find(ls.notes.begin(), ls.notes.end(),
                        "no 'llama_context: n_ubatch = N' line: compared at llama.cpp's default -ub 512 (the compute "
                        "buffer depends on it)"), ls.notes.end());
    const auto e = kvfit::explain_log(log, m);
    ASSERT_FALSE(e.rows.empty());
    EXPECT_EQ(e.rows[0].what, "offloaded layers");
    EXPECT_TRUE(e.rows[0].same) << e.rows[0].log << " vs " << e.rows[0].kvfit;
}

TEST(explain, bad_logs) {
    EXPECT_THROW(kvfit::parse_llamacpp_log("hello\nworld\n"), kvfit::error);
    kvfit::warnings warn;
    const auto m = kvfit::load_model("Qwen3.5-9B", warn);
    const auto log = kvfit::parse_llamacpp_log("load_tensors:   CPU_Mapped model buffer size =  4000.00 MiB\n");
    EXPECT_THROW(kvfit::settings_from_log(log, m), kvfit::error); // stops before the context
}

} // namespace
