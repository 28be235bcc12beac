// The runtimes' flag tables (include/kvfit/runtime.h flag_spec, one table per runtime) and their readers: `kvfit exec`
// reads every spelling of llama.cpp's table as its canonical flag, each shared setting is one flag per runtime (the
// hints), --help shows each table's metavar, and src/launch/exec.cpp keeps no spelling list of its own (issue 26).
#include "kvfit/error.h"
#include "kvfit/launch.h"
#include "kvfit/llamacpp.h"
#include "kvfit/runtime.h"
#include "support/files.h"
#include "support/run_cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using kvfit::flag_setting;
using kvfit::flag_spec;
using kvfit::test::run_kvfit;

// A value of each llama.cpp flag that has several spellings, unlike llama-server's default so that reading it shows
// ("" = a switch). A flag given a new spelling needs a value here; the test says which.
const std::map<std::string, std::string, std::less<>> & sample_values() {
    static const std::map<std::string, std::string, std::less<>> v = {
        {"ctx_size", "8192"}, {"cache_type_k", "q8_0"}, {"cache_type_v", "q4_0"}, {"flash_attn", "off"},
        {"ubatch_size", "256"}, {"batch_size", "1024"}, {"parallel", "4"}, {"kv_unified", ""}, {"fit_target", "2048,3072"},
        {"n_gpu_layers", "20"}, {"no_kv_offload", ""}, {"tensor_split", "3,1"}, {"override_tensor", "blk\\.1\\.ffn_.*=CPU"},
        {"cpu_moe", ""}, {"n_cpu_moe", "3"}, {"load_mode", "none"}, {"no_repack", ""}, {"mmproj", "proj.gguf"},
        {"cache_ram", "1024"}, {"ctx_checkpoints", "8"}, {"spec_draft_model", "draft.gguf"}, {"spec_draft_ngl", "10"},
        {"spec_draft_type_k", "q8_0"}, {"spec_draft_type_v", "q5_0"}, {"spec_draft_device", "none"},
        {"ctx_size_draft", "4096"},
        // the command line's (llamacpp_command_flags)
        {"model", "other.gguf"}, {"hf_repo", "org/name:Q4_K_M"}, {"hf_file", "f.gguf"}, {"fit", "off"}, {"fit_ctx", "8192"},
        {"fit_print", "on"}, {"split_mode", "row"}, {"embedding", ""}, {"main_gpu", "1"}, {"device", "CUDA1"},
    };
    return v;
}

// Everything `kvfit exec` read from a command, as text: the settings by JSON name (llamacpp_flag_values) and the
// command's other fields. Two commands that read alike give the same text.
std::string read_as(const kvfit::launch_command & c) {
    std::string out;
    const kvfit::flag_values f = kvfit::llamacpp_flag_values(c.settings, c.placement, c.fit_target_bytes);
    for (const auto & [k, v] : f.all()) {
        out += fmt::format("{}={};", k, fmt::join(v, "|"));
    }
    out += fmt::format("model={};hf={};mmproj={};offload={};no_mmap={};fit={};lora={};lora_scaled={};fit_target={};"
                       "draft={};not_modelled={};devices={};split_none={};main_gpu={}",
                       c.model_path, c.hf_repo, c.mmproj_path, c.mmproj_offload, c.no_mmap, c.fit, fmt::join(c.lora, "|"),
                       fmt::join(c.lora_scaled, "|"), c.fit_target_bytes, c.settings.spec.draft_path,
                       fmt::join(c.not_modelled, "|"), c.devices ? fmt::format("{}", fmt::join(*c.devices, ",")) : "all",
                       c.split_none, c.main_gpu);
    return out;
}

std::vector<std::string> command(const std::string & word, const std::string & value) {
    std::vector<std::string> argv = {"llama-server", "-m", "m.gguf", word};
    if (!value.empty()) argv.push_back(value);
    return argv;
}

// Every spelling of every flag in llama.cpp's tables (common/arg.cpp's aliases and alternates: -ngl, --gpu-layers,
// --n-gpu-layers) reads through `kvfit exec` as its canonical long name does, and the value is read (the command
// differs from one without the flag); a flag exec names as not modelled is so under every spelling, as typed.
TEST(Flags, EverySpellingOfALlamaCppFlagExecsAsItsCanonicalName) {
    const std::string baseline = read_as(kvfit::parse_launch_command({"llama-server", "-m", "m.gguf"}));
    size_t checked = 0;
    for (const auto * table : {&kvfit::llamacpp_flags(), &kvfit::llamacpp_command_flags()}) {
        for (const flag_spec & f : *table) {
            const auto spellings = f.spellings();
            if (spellings.size() < 2) continue;
            const auto sample = sample_values().find(f.json_name());
            if (sample == sample_values().end()) {
                ADD_FAILURE() << f.name << " has several spellings and no sample value in this test";
                continue;
            }
            std::string canonical, canonical_error;
            bool not_modelled = false; // exec names the flag as not modelled (-sm row, -hff, --embedding)
            try {
                const auto c = kvfit::parse_launch_command(command(std::string(f.name), sample->second));
                canonical = read_as(c);
                not_modelled = !c.not_modelled.empty();
            } catch (const kvfit::error & e) {
                canonical_error = e.what();
            }
            for (const auto word : spellings) {
                const std::string w(word);
                SCOPED_TRACE(w);
                if (!canonical_error.empty()) { // -cd / --ctx-size-draft: refused under every spelling, named as typed
                    try {
                        kvfit::parse_launch_command(command(w, sample->second));
                        ADD_FAILURE() << "accepted";
                    } catch (const kvfit::error & e) {
                        std::string expected = canonical_error;
                        expected.replace(expected.find(f.name), f.name.size(), w);
                        EXPECT_EQ(e.what(), expected);
                    }
                    continue;
                }
                const kvfit::launch_command c = kvfit::parse_launch_command(command(w, sample->second));
                if (not_modelled) {
                    ASSERT_EQ(c.not_modelled.size(), 1u);
                    EXPECT_TRUE(c.not_modelled[0].starts_with(w + " ")) << c.not_modelled[0];
                } else {
                    EXPECT_EQ(read_as(c), canonical);
                    EXPECT_NE(read_as(c), baseline) << "the value was not read";
                }
                ++checked;
            }
        }
    }
    EXPECT_GE(checked, 40u); // -c/--ctx-size ... -devd/--spec-draft-device/--device-draft, -m, -hf/-hfr/--hf-repo, ...
    // llama-server's spellings kvfit's own table did not know before exec read it: the same settings as their names
    const auto ngl = kvfit::parse_launch_command({"llama-server", "-m", "m.gguf", "--gpu-layers", "7"});
    EXPECT_EQ(ngl.placement.n_gpu_layers, 7);
    const auto cp = kvfit::parse_launch_command({"llama-server", "-m", "m.gguf", "--swa-checkpoints=5"});
    EXPECT_EQ(cp.settings.ctx_checkpoints, 5u);
    const auto ignored = kvfit::parse_launch_command({"llama-server", "-m", "m.gguf", "--predict", "64", "-cb", "--port", "8080"});
    EXPECT_TRUE(ignored.not_modelled.empty()) << fmt::format("{}", fmt::join(ignored.not_modelled, " | "));
}

// The flag that sets `s` in every runtime's table: at most one per runtime, and the one the registry names for it
// (the context knob, the sequences knob, the cache-type flag).
TEST(Flags, EverySharedSettingIsOneFlagPerRuntime) {
    std::set<flag_setting> llama_settings;
    for (const flag_spec & f : kvfit::llamacpp_flags()) {
        if (f.setting != flag_setting::none) llama_settings.insert(f.setting);
    }
    EXPECT_EQ(llama_settings, (std::set<flag_setting>{flag_setting::context, flag_setting::concurrency,
                                                      flag_setting::cache_type_k, flag_setting::cache_type_v,
                                                      flag_setting::flash_attn, flag_setting::memory_margin}));
    for (const auto & rt : kvfit::runtimes()) {
        SCOPED_TRACE(std::string(rt.name));
        std::map<flag_setting, int> seen;
        for (const flag_spec & f : rt.flags()) {
            if (f.setting == flag_setting::none) continue;
            ++seen[f.setting];
            // cache_type stands for K and V at once: then no flag of its own for either
            if (f.setting == flag_setting::cache_type) EXPECT_TRUE(rt.cache_type_v.empty()) << f.name;
        }
        for (const auto & [s, n] : seen) {
            // llama.cpp keeps the margin twice: --fit-target, its own, and --margin, kvfit's spelling with a unit
            const int allowed = rt.name == "llama.cpp" && s == flag_setting::memory_margin ? 2 : 1;
            EXPECT_LE(n, allowed) << kvfit::flag_setting_name(s);
        }
        const flag_spec * context = kvfit::flag_for_setting(rt, flag_setting::context);
        ASSERT_NE(context, nullptr);
        EXPECT_EQ(context->json_name(), rt.context.flag);
        const flag_spec * k = kvfit::flag_for_setting(rt, flag_setting::cache_type_k);
        ASSERT_NE(k, nullptr);
        EXPECT_EQ(k->json_name(), rt.cache_type_k);
        const flag_spec * v = kvfit::flag_for_setting(rt, flag_setting::cache_type_v);
        ASSERT_NE(v, nullptr);
        EXPECT_EQ(v->json_name(), rt.cache_type_v.empty() ? rt.cache_type_k : rt.cache_type_v);
        const flag_spec * seqs = kvfit::flag_for_setting(rt, flag_setting::concurrency);
        ASSERT_NE(seqs, nullptr);
        for (const auto & kn : rt.knobs) { // the knob the planner turns for "fewer sequences", where it has one
            if (kn.name == "sequences") EXPECT_EQ(kn.flag, seqs->json_name());
        }
    }
    EXPECT_EQ(kvfit::flag_for_setting(kvfit::find_runtime("vllm"), flag_setting::none), nullptr);
}

// The hints read the tables: a llama.cpp flag under another runtime names that runtime's flag for the same setting,
// with the engine's own name where kvfit's flag stands for one, or says it is not used (the documented nones:
// flash attention under vLLM, SGLang and mlx-lm; a memory margin under mlx-lm).
TEST(Flags, HintsNameTheSelectedRuntimesFlagForTheSameSetting) {
    const std::pair<const char *, const char *> cases[] = {
        {"--runtime vllm -np 8", "-np/--parallel is a llama.cpp flag; with --runtime vllm use --max-num-seqs"},
        {"--runtime sglang -ctv q8_0", "-ctv/--cache-type-v is a llama.cpp flag; with --runtime sglang use --kv-cache-dtype"},
        {"--runtime ollama -np 2",
         "-np/--parallel is a llama.cpp flag; with --runtime ollama use --num-parallel (OLLAMA_NUM_PARALLEL)"},
        {"--runtime ollama -c 8192", "-c/--ctx-size is a llama.cpp flag; with --runtime ollama use --num-ctx (PARAMETER num_ctx)"},
        {"--runtime mlx -ctk q8_0", "-ctk/--cache-type-k is a llama.cpp flag; with --runtime mlx use --kv-bits"},
        {"--runtime sglang --margin 2GiB", "--margin is a llama.cpp flag; with --runtime sglang use --mem-fraction-static"},
        {"--runtime vllm -fitt 2048", "-fitt/--fit-target is a llama.cpp flag; with --runtime vllm use --gpu-memory-utilization"},
        {"--runtime vllm -fa on", "-fa/--flash-attn is a llama.cpp flag, not used with --runtime vllm"},
        {"--runtime mlx --margin 1GiB", "--margin is a llama.cpp flag, not used with --runtime mlx"},
        {"--runtime vllm --swa-full", "--swa-full is a llama.cpp flag, not used with --runtime vllm"},
    };
    for (const auto & [args, message] : cases) {
        const auto r = run_kvfit(fmt::format("Meta-Llama-3.1-8B --gpu 24GiB {}", args));
        EXPECT_EQ(r.status, 2) << args;
        EXPECT_EQ(r.err, fmt::format("kvfit: {}\n", message)) << args;
    }
}

// --help shows every runtime flag with its table's value name ("-c,--ctx-size INT[,INT...]", "--kv-cache-dtype DTYPE"),
// and the CLI reads llama-server's alternate spellings as their flags (--gpu-layers 20 is -ngl 20).
TEST(Flags, HelpShowsEachTablesMetavarAndTheCliTakesTheAlternates) {
    const auto help = run_kvfit("--help");
    ASSERT_EQ(help.status, 0);
    std::set<std::string_view> done;
    for (const auto & rt : kvfit::runtimes()) {
        for (const flag_spec & f : rt.flags()) {
            if (!done.insert(f.name).second || f.type == kvfit::flag_type::boolean) continue; // the first owner's is shown
            const std::string names = !f.alias.empty() && f.alias.size() == 2 ? fmt::format("{},{}", f.alias, f.name)
                                                                              : std::string(f.name);
            EXPECT_NE(help.out.find(fmt::format("{} {}", names, f.value_name())), std::string::npos)
                << names << " " << f.value_name();
        }
    }
    EXPECT_NE(help.out.find("--n-gpu-layers INT|all|auto"), std::string::npos);
    EXPECT_NE(help.out.find("--spec-draft-model FILE"), std::string::npos);
    EXPECT_EQ(help.out.find("--gpu-layers"), std::string::npos) << "an alternate is listed";
    const auto alternate = run_kvfit("Meta-Llama-3.1-8B --gpu 24GiB -c 8192 --gpu-layers 20 --json");
    const auto alias = run_kvfit("Meta-Llama-3.1-8B --gpu 24GiB -c 8192 -ngl 20 --json");
    ASSERT_EQ(alias.status, 0) << alias.err;
    EXPECT_EQ(alternate.status, alias.status) << alternate.err;
    EXPECT_EQ(alternate.out, alias.out);
    EXPECT_NE(alias.out.find("\"n_gpu_layers\": 20"), std::string::npos);
}

// An alternate spelling belongs to its runtime: SGLang's server_args.py takes --tensor-parallel-size and --tp-size for
// --tp, while --tensor-parallel-size is vLLM's own name and, with llama.cpp, still a vLLM flag (exit 2 with the hint).
TEST(Flags, AlternatesAreTheSelectedRuntimes) {
    const std::string cfg = std::string(KVFIT_SHARED_DIR) + "/configs/Qwen__Qwen3.5-27B.json";
    const auto tp = run_kvfit(cfg + " --runtime sglang --gpu 2xH200 --tp 2 --json");
    ASSERT_EQ(tp.status, 0) << tp.err;
    for (const char * spelled : {"--tensor-parallel-size", "--tp-size"}) {
        const auto other = run_kvfit(cfg + " --runtime=sglang --gpu 2xH200 " + spelled + " 2 --json");
        EXPECT_EQ(other.status, 0) << spelled << ": " << other.err;
        EXPECT_EQ(other.out, tp.out) << spelled;
    }
    const auto vllm = run_kvfit(cfg + " --runtime vllm --gpu 2xH200 --tensor-parallel-size 2 --json");
    EXPECT_EQ(vllm.status, 0) << vllm.err;
    const auto llama = run_kvfit(cfg + " --gpu 2xH200 --tensor-parallel-size 2");
    EXPECT_EQ(llama.status, 2);
    EXPECT_NE(llama.err.find("--tensor-parallel-size is a vLLM flag"), std::string::npos) << llama.err;
}

// An alternate is read in its --name=value form too, and an error about its value names the spelling typed, not the
// table's main name (--swa-checkpoints -1 said "--ctx-checkpoints '-1'"; SGLang's --tensor-parallel-size=x said --tp).
TEST(Flags, AlternatesWithValuesAndTheirErrorsNameWhatWasTyped) {
    const std::string cfg = std::string(KVFIT_SHARED_DIR) + "/configs/Qwen__Qwen3.5-27B.json";
    const auto tp = run_kvfit(cfg + " --runtime sglang --gpu 2xH200 --tp 2 --json");
    ASSERT_EQ(tp.status, 0) << tp.err;
    const auto eq = run_kvfit(cfg + " --runtime sglang --gpu 2xH200 --tensor-parallel-size=2 --json");
    EXPECT_EQ(eq.status, 0) << eq.err;
    EXPECT_EQ(eq.out, tp.out);
    for (const char * bad : {" --runtime sglang --gpu 2xH200 --tensor-parallel-size x",
                             " --runtime sglang --gpu 2xH200 --tensor-parallel-size=0"}) {
        const auto r = run_kvfit(cfg + bad);
        EXPECT_EQ(r.status, 2) << bad;
        EXPECT_EQ(r.err.rfind("kvfit: --tensor-parallel-size '", 0), 0u) << r.err;
        EXPECT_EQ(r.err.find("--tp "), std::string::npos) << r.err;
    }
    for (const char * bad : {" --swa-checkpoints -1", " --swa-checkpoints=-1"}) {
        const auto r = run_kvfit(cfg + bad);
        EXPECT_EQ(r.status, 2) << bad;
        EXPECT_EQ(r.err, "kvfit: --swa-checkpoints '-1': expected a non-negative integer\n") << bad;
    }
    const auto main_name = run_kvfit(cfg + " --ctx-checkpoints -1");
    EXPECT_EQ(main_name.err, "kvfit: --ctx-checkpoints '-1': expected a non-negative integer\n");
}

// src/launch/exec.cpp looks a flag up in llama.cpp's tables and reads it by its canonical name: no list of
// spellings of its own (is_one_of(flag, {"-c", "--ctx-size"}) was there), and no table alias spelled in it.
TEST(Flags, ExecKeepsNoSpellingListOfItsOwn) {
    const std::string exec = kvfit::test::read_text(std::string(KVFIT_SOURCE_DIR) + "/src/launch/exec.cpp");
    ASSERT_FALSE(exec.empty());
    EXPECT_EQ(exec.find("is_one_of("), std::string::npos);
    for (const auto * table : {&kvfit::llamacpp_flags(), &kvfit::llamacpp_command_flags(), &kvfit::llamacpp_ignored_flags()}) {
        for (const flag_spec & f : *table) {
            for (const auto w : f.spellings()) {
                if (w == f.name) continue; // exec switches on the canonical name
                EXPECT_EQ(exec.find(fmt::format("\"{}\"", w)), std::string::npos) << w << " spelled in exec.cpp";
            }
        }
    }
    // nor do fit-params' and the Ollama runner's readers keep a spelling map
    const std::string fit = kvfit::test::read_text(std::string(KVFIT_SOURCE_DIR) + "/app/cli_fit_params.cpp");
    EXPECT_EQ(fit.find("{\"-c\", \"--ctx-size\"}"), std::string::npos);
    const std::string log = kvfit::test::read_text(std::string(KVFIT_SOURCE_DIR) + "/src/launch/serving_log.cpp");
    EXPECT_EQ(log.find("{\"-c\", \"ctx_size\"}"), std::string::npos);
}

} // namespace
