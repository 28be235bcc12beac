// External commands under guard (issue 15): nvidia-smi / rocm-smi that hang, print without end or print nonsense.
// `kvfit exec` used to hang with a hanging nvidia-smi and grow to 5.6 GB with one that never stops printing.
#include "core/subprocess.h"
#include "kvfit/detect.h"
#include "kvfit/error.h"
#include "support/run_cli.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using kvfit::detail::tool_outcome;

const std::string model = std::string(KVFIT_SHARED_DIR) + "/reference/llamacpp/gguf/qwen35-9b_v248320.gguf";

// A directory holding one fake nvidia-smi (the given script body), a rocm-smi that is absent-like, and a
// llama-server that says it ran.
std::string fake_tools(const std::string & name, const std::string & nvidia_smi) {
    const fs::path dir = fs::temp_directory_path() / ("kvfit-guard-bin-" + std::to_string(getpid()) + "-" + name);
    fs::create_directories(dir);
    auto script = [&](const char * file, const std::string & body) {
        const fs::path p = dir / file;
        std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
        fs::permissions(p, fs::perms::owner_all);
    };
    script("nvidia-smi", nvidia_smi);
    script("rocm-smi", "exit 9");
    script("llama-server", "echo ran; exit 7");
    return dir.string();
}

kvfit::test::cli_result exec_with(const std::string & name, const std::string & nvidia_smi, const std::string & timeout = "0.5") {
    return kvfit::test::run_kvfit_env("PATH=" + fake_tools(name, nvidia_smi) + ":/usr/bin:/bin KVFIT_NO_NVML=1 KVFIT_TOOL_TIMEOUT=" + timeout,
                                      "exec -- llama-server -m " + model + " -c 8192");
}

const std::string refuse_tail = "; name the GPUs instead (--gpu 'RTX 4090', --gpu 24GiB)\n";

TEST(detect_guards, a_hanging_nvidia_smi_is_killed_at_the_deadline) {
    const auto start = clock_type::now();
    const auto r = exec_with("hang", "sleep 30 & sleep 30"); // a child of its own too: the whole group goes
    const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err, "kvfit: --gpu auto: nvidia-smi: no answer within 0.5 s (killed)" + refuse_tail);
    EXPECT_EQ(r.out, "") << "the command must not run";
    EXPECT_LT(seconds, 5.0);
}

TEST(detect_guards, an_nvidia_smi_that_never_stops_printing_is_cut_at_1_MiB) {
    const auto r = exec_with("flood", "while :; do echo 'NVIDIA GeForce RTX 4060, 8188, 8000'; done", "20");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err, "kvfit: --gpu auto: nvidia-smi: printed more than 1048576 bytes (killed)" + refuse_tail);
}

TEST(detect_guards, nonsense_figures_are_refused_in_one_line) {
    const std::pair<std::string, std::string> rows[] = {
        {"echo 'NVIDIA GeForce RTX 4060, 8188, -1'", "nvidia-smi: line 1: memory.free: expected a whole number, got '-1'"},
        {"echo 'NVIDIA GeForce RTX 4060, -8188, 100'", "nvidia-smi: line 1: memory.total: expected a whole number, got '-8188'"},
        {"echo 'NVIDIA GeForce RTX 4060, 8188, 9000'", "nvidia-smi: line 1: memory.free 9000 MiB exceeds memory.total 8188 MiB"},
        {"echo 'NVIDIA GeForce RTX 4060, 99999999999, 1'",
         "nvidia-smi: line 1: memory.total 99999999999 MiB exceeds the limit of 4194304 MiB (4 TiB)"},
        {"echo 'NVIDIA GeForce RTX 4060, 18446744073709551615, 1'",
         "nvidia-smi: line 1: memory.total 18446744073709551615 MiB exceeds the limit of 4194304 MiB (4 TiB)"},
        {"echo 'NVIDIA GeForce RTX 4060, 0, 0'", "nvidia-smi: line 1: memory.total is 0"},
        {"echo 'NVIDIA GeForce RTX 4060, [N/A], [N/A]'", "nvidia-smi: line 1: memory.total: expected a whole number, got '[N/A]'"},
    };
    int n = 0;
    for (const auto & [script, message] : rows) {
        const auto r = exec_with("bad" + std::to_string(n++), script);
        EXPECT_EQ(r.status, 2) << script;
        EXPECT_EQ(r.err, "kvfit: --gpu auto: " + message + refuse_tail) << script;
    }
    // rocm-smi: used memory over the total
    EXPECT_THROW(kvfit::parse_rocm_smi_json(R"j({"card0": {"VRAM Total Memory (B)": "100", "VRAM Total Used Memory (B)": "200"}})j"),
                 kvfit::error);
    EXPECT_THROW(kvfit::parse_rocm_smi_json(R"j({"card0": {"VRAM Total Memory (B)": -5}})j"), kvfit::error);
    EXPECT_THROW(kvfit::parse_rocm_smi_json(R"j({"card0": {"VRAM Total Memory (B)": 1.5}})j"), kvfit::error);
}

// A tool that is absent or fails (no driver loaded) still means "no GPU": the command runs on the CPU.
TEST(detect_guards, an_absent_or_failing_tool_is_no_gpu) {
    const auto r = exec_with("nodriver", "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver'; exit 9");
    EXPECT_EQ(r.status, 7) << r.err;
    EXPECT_EQ(r.out, "ran\n");
    EXPECT_NE(r.err.find("nvidia-smi: exit status 9"), std::string::npos) << r.err;
}

TEST(detect_guards, run_tool_outcomes) {
    using ms = std::chrono::milliseconds;
    auto start = clock_type::now();
    const auto hang = kvfit::detail::run_tool({"sh", "-c", "echo partial; sleep 20"}, ms(300), 1024);
    EXPECT_EQ(int(hang.outcome), int(tool_outcome::timed_out));
    EXPECT_EQ(hang.output, "partial\n");
    EXPECT_LT(std::chrono::duration<double>(clock_type::now() - start).count(), 3.0);
    // closes its output, then stays: still killed at the deadline
    start = clock_type::now();
    const auto stay = kvfit::detail::run_tool({"sh", "-c", "exec >&-; sleep 20"}, ms(300), 1024);
    EXPECT_EQ(int(stay.outcome), int(tool_outcome::timed_out));
    EXPECT_LT(std::chrono::duration<double>(clock_type::now() - start).count(), 3.0);
    const auto flood = kvfit::detail::run_tool({"yes"}, ms(5000), 4096);
    EXPECT_EQ(int(flood.outcome), int(tool_outcome::too_much_output));
    EXPECT_EQ(flood.output.size(), 4096u);
    EXPECT_EQ(int(kvfit::detail::run_tool({"kvfit-no-such-tool"}, ms(1000), 16).outcome), int(tool_outcome::not_found));
    const auto fail = kvfit::detail::run_tool({"sh", "-c", "echo out; echo err >&2; exit 3"}, ms(2000), 1024);
    EXPECT_EQ(int(fail.outcome), int(tool_outcome::exited));
    EXPECT_EQ(fail.exit_status, 3);
    EXPECT_EQ(fail.output, "out\n"); // stderr is not captured
    const auto ok = kvfit::detail::run_tool({"printf", "a,b"}, ms(2000), 1024);
    EXPECT_TRUE(ok.ok());
    EXPECT_EQ(ok.output, "a,b");
    EXPECT_EQ(kvfit::detail::describe_tool_failure(hang, ms(300), 1024), "no answer within 0.3 s (killed)");
    EXPECT_EQ(kvfit::detail::describe_tool_failure(flood, ms(300), 4096), "printed more than 4096 bytes (killed)");
}

} // namespace
