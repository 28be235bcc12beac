// Launch commands (include/kvfit/launch.h): llama-server / llama-cli / vllm serve flags -> settings.
// Flag names and defaults follow llama.cpp common/arg.cpp.
#include "kvfit/error.h"
#include "kvfit/launch.h"
#include "kvfit/printable.h"
#include "kvfit/llamacpp.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <regex>

namespace kvfit {
namespace {

std::string basename_of(const std::string & path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// -ot takes comma-separated PATTERN=BUFFER rules; only =CPU rules move memory off the GPUs.
void add_overrides(launch_command & c, const std::string & v) {
    for (const std::string & rule : split_override_rules(v)) {
        if (const auto pattern = parse_override_rule(rule)) {
            c.placement.override_tensor_cpu.push_back(*pattern);
        } else {
            c.not_modelled.push_back("-ot " + rule + " (only =CPU rules are modelled)");
        }
    }
}

// The flag `word` spells among llama.cpp's tables (include/kvfit/llamacpp.h): the planner's flags, then the command
// line's others (-m, -hf, --fit, -sm, ...); nullptr for a flag in neither.
const flag_spec * llamacpp_flag_of(const std::string & word) {
    if (const flag_spec * f = find_flag_spelled(llamacpp_flags(), word)) return f;
    return find_flag_spelled(llamacpp_command_flags(), word);
}

} // namespace

launch_command parse_launch_command(const std::vector<std::string> & argv) {
    if (argv.empty()) throw error("exec: no command after --");
    launch_command c;
    c.argv = argv;
    const std::string prog = basename_of(argv[0]);
    if (prog == "vllm" && argv.size() > 1 && argv[1] == "serve") c.runtime = launch_runtime::vllm;
    else if (prog.rfind("llama-", 0) == 0 || prog == "llama-server" || prog == "main" || prog == "server") c.runtime = launch_runtime::llamacpp;
    if (c.runtime != launch_runtime::llamacpp) return c;

    c.placement.n_gpu_layers = -1; // planning default: every layer on the GPU (llama.cpp's -ngl default is "auto")
    // n_outputs_max: llama-server (and llama-cli, which runs llama-server in a thread: tools/cli/cli-server.h) sets
    // server_output_limits (server-context.cpp:41-53, 1014-1016); llama-completion / main and the other tools keep
    // common_params' 0 -> n_batch (common/common.h:457, llama-context.cpp:250)
    c.settings.server_outputs = prog == "llama-server" || prog == "server" || prog == "llama-cli";
    for (size_t i = 1; i < argv.size(); ++i) {
        std::string flag = argv[i], value;
        bool inline_value = false;
        if (const size_t eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = flag.substr(eq + 1);
            flag = flag.substr(0, eq);
            inline_value = true;
        }
        auto take = [&]() -> std::string {
            if (inline_value) return value;
            if (i + 1 >= argv.size()) throw error(fmt::format("exec: {} needs a value", flag));
            return argv[++i];
        };
        llamacpp_settings & s = c.settings;
        placement_settings & p = c.placement;
        // looked up by any spelling (common/arg.cpp's: -ngl, --gpu-layers, --n-gpu-layers), then read by its
        // canonical long name; messages name the flag as typed
        const flag_spec * spec = llamacpp_flag_of(flag);
        const std::string_view n = spec ? spec->name : std::string_view();
        if (n == "--model") c.model_path = take();
        else if (n == "--hf-repo") c.hf_repo = take();
        else if (n == "--mmproj") c.mmproj_path = take();
        else if (n == "--no-mmproj-offload") c.mmproj_offload = false;
        else if (n == "--ctx-size") s.n_ctx = parse_ctx_size_flag(flag, take(), 0);
        else if (n == "--parallel") s.n_seq = uint32_t(std::max<uint64_t>(1, parse_flag_count(flag, take(), 0, 256)));
        else if (n == "--batch-size") s.n_batch = uint32_t(parse_flag_count(flag, take(), 0, 1u << 20));
        else if (n == "--ubatch-size") s.n_ubatch = uint32_t(parse_flag_count(flag, take(), 0, 1u << 20));
        else if (n == "--cache-type-k") s.type_k = parse_cache_type_flag(flag, take());
        else if (n == "--cache-type-v") s.type_v = parse_cache_type_flag(flag, take());
        else if (n == "--flash-attn") {
            // current llama.cpp: -fa on|off|auto; older builds: a bare -fa meant on
            const bool has_value = inline_value || (i + 1 < argv.size() && (argv[i + 1][0] != '-' || argv[i + 1] == "-1"));
            s.flash_attn = parse_flash_attn_flag("exec: " + flag, has_value ? take() : "on");
        } else if (n == "--n-gpu-layers") p.n_gpu_layers = parse_ngl_flag(flag, take());
        else if (n == "--tensor-split") p.tensor_split = parse_tensor_split(take());
        else if (n == "--override-tensor") add_overrides(c, take());
        else if (n == "--n-cpu-moe") p.n_cpu_moe = uint32_t(parse_flag_count(flag, take(), 0, 100000));
        else if (n == "--cpu-moe") p.cpu_moe = true;
        else if (n == "--no-kv-offload") p.no_kv_offload = true;
        else if (n == "--kv-unified") s.kv_unified = true;
        else if (n == "--swa-full") s.swa_full = true;
        else if (n == "--no-mmap" || n == "--mmap") {
            p.mmap = n == "--mmap";
            c.no_mmap = !p.mmap;
        } else if (n == "--load-mode") { // common/arg.cpp: none and dio do not map the file
            const std::string v = take();
            p.mmap = !(v == "none" || v == "mlock" || v == "dio");
            c.no_mmap = !p.mmap;
        } else if (n == "--no-repack") p.repack = false;
        else if (n == "--repack") p.repack = true;
        else if (n == "--no-host") p.no_host = true;
        else if (n == "--fit") c.fit = take();
        // LoRA adapters and host RAM (issue 14: llamacpp_extras.h)
        else if (n == "--lora") c.lora.push_back(take());
        else if (n == "--lora-scaled") c.lora_scaled.push_back(take());
        else if (n == "--cache-ram") {
            const std::string v = take();
            s.cache_ram_mib = v == "-1" ? -1 : int64_t(parse_flag_count(flag, v, 0, 1ull << 31));
        } else if (n == "--ctx-checkpoints") s.ctx_checkpoints = uint32_t(parse_flag_count(flag, take(), 0, 1u << 20));
        else if (n == "--fit-target") { // MiB per device, "," or "/" separated, one broadcast
            for (const uint64_t b : parse_fit_target_flag(flag, take())) c.fit_target_bytes = std::max(c.fit_target_bytes, b);
        }
        // speculative decoding (src/runtimes/llamacpp/spec.cpp), spelled as v0.5.0's common/arg.cpp:4086-4260
        else if (n == "--spec-type") s.spec.mtp = parse_spec_type(take());
        else if (n == "--spec-draft-n-max") s.spec.n_max = uint32_t(parse_flag_count(flag, take(), 0, 1024));
        else if (n == "--spec-draft-model") s.spec.draft_path = take();
        else if (n == "--spec-draft-ngl") s.spec.draft_n_gpu_layers = parse_ngl_flag(flag, take());
        else if (n == "--spec-draft-type-k") s.spec.type_k = parse_cache_type_flag(flag, take());
        else if (n == "--spec-draft-type-v") s.spec.type_v = parse_cache_type_flag(flag, take());
        else if (n == "--spec-draft-device") s.spec.draft_devices = parse_draft_devices(take());
        else if (n == "--ctx-size-draft") {
            // in neither release's common/arg.cpp: llama-server exits on it (the draft follows -c, speculative.cpp:2550)
            throw error(fmt::format("exec: {} {}: not a flag of llama.cpp v0.5.0 or 5b4ebc5 (the draft context follows "
                                    "-c); remove it", flag, take()));
        }
        // the backend's terms (compute_cuda.cpp): op offload stages CPU-resident experts on CUDA0 (C4); the split
        // mode decides pipeline parallelism (C3): layer (the default) is planned, row / tensor / none are not
        else if (n == "--no-op-offload") s.op_offload = false;
        else if (n == "--split-mode") {
            const std::string v = take();
            if (v == "none") c.split_none = true; // the main GPU alone (launch.h)
            else if (v != "layer") c.not_modelled.push_back(flag + " " + v + " (only -sm layer, the default, and none are modelled)");
        } else if (n == "--main-gpu") {
            c.main_gpu = uint32_t(parse_flag_count(flag, take(), 0, 255));
        } else if (n == "--device") {
            // common/arg.cpp parse_device_list, as -devd reads it (spec.cpp); "none" -> no GPU
            std::vector<uint32_t> idx;
            for (const int32_t d : parse_device_list(flag, take())) {
                if (d >= 0) idx.push_back(uint32_t(d));
            }
            c.devices = std::move(idx);
        }
        // embeddings: llama-server reserves n_batch outputs (server_output_limits, server-context.cpp:42-45); the
        // pooled graph itself is not modelled
        else if (n == "--embedding" || n == "--pooling") {
            const std::string v = n == "--pooling" ? take() : "";
            if (n != "--pooling" || v != "none") {
                c.settings.server_outputs = false;
                c.settings.n_outputs_max = 0;
                c.not_modelled.push_back(flag + (v.empty() ? "" : " " + v) + " (embeddings: n_batch outputs are planned, "
                                         "the pooled graph is not modelled)");
            }
        }
        // flags that change nothing kvfit plans (server, sampling, logging): passed through silently
        else if (const flag_spec * ignored = spec ? nullptr : find_flag_spelled(llamacpp_ignored_flags(), flag)) {
            if (ignored->type != flag_type::boolean) take();
        } else if (flag.size() > 1 && flag[0] == '-') {
            // Unknown (or one of kvfit's own flags, --margin, which llama-server does not take): keep the next word
            // with it when it is not a flag (probably its value).
            std::string entry = argv[i];
            if (!inline_value && i + 1 < argv.size() && argv[i + 1][0] != '-') entry += " " + argv[++i];
            c.not_modelled.push_back(entry);
        } else {
            c.not_modelled.push_back(argv[i]);
        }
    }
    return c;
}

std::vector<std::string> with_flag(const std::vector<std::string> & argv, const std::vector<std::string> & names,
                                   const std::string & value, bool takes_value) {
    std::vector<std::string> out;
    bool done = false;
    for (size_t i = 0; i < argv.size(); ++i) {
        const bool match = i > 0 && std::find(names.begin(), names.end(), argv[i]) != names.end();
        if (!match) {
            out.push_back(argv[i]);
            continue;
        }
        if (takes_value) ++i; // skip the old value
        if (done) continue;
        done = true;
        if (!takes_value && value.empty()) continue;
        out.push_back(argv[i - (takes_value ? 1 : 0)]);
        if (takes_value) out.push_back(value);
    }
    if (!done && !(value.empty() && !takes_value)) {
        out.push_back(names.front());
        if (takes_value) out.push_back(value);
    }
    return out;
}

std::string shell_join(const std::vector<std::string> & argv) {
    std::string out;
    for (const auto & a : argv) { // appended in place: `"" + word` made GCC 12 -O3 warn (-Wrestrict, a false alarm)
        if (!out.empty()) out += ' ';
        out += shell_word(a);
    }
    return out;
}

} // namespace kvfit
