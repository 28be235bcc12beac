// `kvfit fit-params`: a drop-in for llama.cpp v0.5.0's llama-fit-params (tools/fit-params/fit-params.cpp,
// common/fit.cpp), answered from kvfit's llama.cpp plan instead of loading the model on the GPUs: no weights and
// no GPU needed. Same flags, same stdout:
//   --fit-print on   common_fit_print: one line per device "CUDA0 <model> <context> <compute> " (ROCm0, Vulkan0, MTL0
//                    by the backend: device_name) and "Host ...",
//                    MiB rounded down (bytes/1024/1024); model = weights, context = KV caches + recurrent state
//                    (llama_context::memory_breakdown: memory->memory_breakdown()), compute = the scheduler's buffer;
//                    the output (logits) buffer is in none of them (memory_breakdown_print calls it unaccounted).
//   otherwise        the fitted arguments, "-c N -ngl N[ -ts A,B][ -ot \"...\"]", as llama_fit_params prints them,
//                    found by common_params_fit_impl's steps: 1. no change when every device keeps its --fit-target
//                    free; 2. with -c unset, the context interpolated linearly between --fit-ctx and n_ctx_train x
//                    sequences (rounded down to 256 x streams) from the projected totals; 3. layers: kvfit's
//                    largest -ngl for a dense model, the fewest blocks whose routed experts stay on the CPU for a MoE
//                    model (printed as fit.cpp's LAYER_FRACTION_MOE -ot patterns) — the whole-tensor partial layers
//                    of fit.cpp's step 3 are not reproduced.
// Exit status as llama-fit-params: 0, or 1 with a one-line message ("failed to fit" or a bad argument).
#include "cli_fit_params.h"

#include "cli_exec.h"
#include "kvfit/error.h"
#include "kvfit/gpus.h"
#include "kvfit/llamacpp.h"
#include "kvfit/metal.h"
#include "kvfit/plan.h"
#include "kvfit/sources.h"
#include "kvfit/units.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit::cli {
namespace {

constexpr uint64_t MiB = 1024ull * 1024ull;

// The flags kvfit fit-params reads, by their long names in llama.cpp's tables (include/kvfit/llamacpp.h: the planner's
// llamacpp_flags() and the command line's llamacpp_command_flags(), with every spelling common/arg.cpp gives them),
// then kvfit's own --gpu, --weights, --weights-size. `planned`: handed to parse_llamacpp_flags by its JSON name;
// otherwise read here. A boolean flag is a switch; every other one takes a value.
struct read_flag {
    const flag_spec * spec = nullptr;
    bool planned = false;
};
const std::vector<read_flag> & read_flags() {
    static const std::vector<flag_spec> kvfit_own = {
        {"--gpu", "", "kvfit's: the GPUs (default: the detected ones)", flag_type::text, "GPUS"},
        {"--weights", "", "kvfit's: the weights' format for a config.json model", flag_type::text, "FORMAT"},
        {"--weights-size", "", "kvfit's: the weights' size for a config.json model", flag_type::size},
    };
    static const std::vector<read_flag> v = [] {
        static const std::pair<std::string_view, bool> names[] = {
            {"--model", false}, {"--ctx-size", true}, {"--flash-attn", true}, {"--cache-type-k", true},
            {"--cache-type-v", true}, {"--n-gpu-layers", true}, {"--tensor-split", true}, {"--override-tensor", true},
            {"--parallel", true}, {"--ubatch-size", true}, {"--batch-size", true}, {"--n-cpu-moe", true},
            {"--llamacpp-version", true},
            {"--backend", true},              // kvfit's: the build's GPU backend (device names)
            {"--iogpu-wired-limit-mb", true}, // kvfit's: a Mac's Metal working set (metal.h)
            {"--fit-target", false}, {"--fit-ctx", false}, {"--fit-print", false}, {"--fit", false},
            {"--gpu", false}, {"--weights", false}, {"--weights-size", false},
            {"--kv-unified", true}, {"--swa-full", true}, {"--no-kv-offload", true}, {"--cpu-moe", true}};
        std::vector<read_flag> out;
        for (const auto & [name, planned] : names) {
            const flag_spec * f = find_flag_spelled(llamacpp_flags(), name);
            if (!f) f = find_flag_spelled(llamacpp_command_flags(), name);
            if (!f) f = find_flag_spelled(kvfit_own, name);
            if (f) out.push_back({f, planned});
        }
        return out;
    }();
    return v;
}

// common/common.cpp is_truthy / is_falsey.
bool truthy(std::string_view v) { return v == "on" || v == "enabled" || v == "true" || v == "1"; }
bool falsy(std::string_view v) { return v == "off" || v == "disabled" || v == "false" || v == "0"; }

struct fit_args {
    std::string model, gpu = "auto", weights, weights_size;
    flag_values flags;             // the llama.cpp flags, for parse_llamacpp_flags
    std::vector<uint64_t> targets; // --fit-target, bytes per device (one value: every device)
    uint64_t fit_ctx = 4096;       // --fit-ctx (common.h fit_params_min_ctx); -c 0 makes it "full context"
    bool print = false;            // --fit-print on
};

uint64_t parse_uint(std::string_view flag, std::string_view text) {
    return parse_flag_count(flag, text, 0, uint64_t(1) << 40);
}

} // namespace

std::string fit_params_help() {
    std::string out = "Usage: kvfit fit-params -m MODEL [options]\n"
                      "llama.cpp v0.5.0's llama-fit-params answered from kvfit's plan: the same flags and the same stdout, "
                      "without the weights or the GPUs.\nExit status as llama-fit-params: 0, or 1 with a one-line message.\n\n"
                      "Options that take a value:\n";
    const auto list = [&out](bool switches) {
        for (const auto & f : read_flags()) {
            if ((f.spec->type == flag_type::boolean) == switches) out += fmt::format("  {}\n", fmt::join(f.spec->spellings(), ", "));
        }
    };
    list(false);
    out += "Switches:\n";
    list(true);
    out += "\n--fit-print on: one line per device (model, context, compute MiB) and a Host line; otherwise the fitted\n"
           "arguments (-c N -ngl N [-ts A,B] [-ot ...]). --gpu GPUS (kvfit's: \"RTX 4090\", 2xH100, 24GiB,24GiB; default:\n"
           "the detected GPUs), --weights FORMAT / --weights-size SIZE for a config.json model.\n";
    return out;
}

namespace {

fit_args parse_args(int argc, char ** argv) {
    fit_args a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const auto rf = std::find_if(read_flags().begin(), read_flags().end(), [&](const read_flag & f) { return f.spec->spelled(arg); });
        if (rf == read_flags().end()) throw error(fmt::format("invalid argument: {}", arg));
        const std::string json = rf->spec->json_name();
        if (rf->spec->type == flag_type::boolean) {
            a.flags.set(json, "true");
            continue;
        }
        if (i + 1 >= argc) throw error(fmt::format("expected value for argument {}", arg));
        const std::string value = argv[++i];
        const std::string_view name = rf->spec->name;
        if (rf->planned) {
            if (json == "override_tensor") {
                // llama.cpp: comma-separated rules, repeatable (common/arg.cpp parse_tensor_buffer_overrides)
                size_t start = 0;
                while (start <= value.size()) {
                    const size_t comma = value.find(',', start);
                    const std::string rule = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                    if (!rule.empty()) a.flags.add("override_tensor", rule);
                    if (comma == std::string::npos) break;
                    start = comma + 1;
                }
            } else if (json == "ctx_size" && value == "0") {
                // arg.cpp: -c 0 is the model's n_ctx_train, and disables fit.cpp's context reduction
                a.flags.erase("ctx_size");
                a.fit_ctx = UINT32_MAX;
            } else if (json == "n_gpu_layers" && (value == "-1" || value == "auto")) {
                a.flags.erase("n_gpu_layers"); // llama.cpp's default (common.h: -1, auto)
            } else {
                a.flags.set(json, value);
            }
        } else if (name == "--model") {
            a.model = value;
        } else if (name == "--gpu") {
            a.gpu = value;
        } else if (name == "--weights") {
            a.weights = value;
        } else if (name == "--weights-size") {
            a.weights_size = value;
        } else if (name == "--fit-print") {
            if (truthy(value)) a.print = true;
            else if (falsy(value)) a.print = false;
            else throw error(fmt::format("unknown value for --fit-print: '{}'", value));
        } else if (name == "--fit") {
            if (!truthy(value) && !falsy(value)) throw error(fmt::format("unknown value for --fit: '{}'", value));
        } else if (name == "--fit-ctx") {
            a.fit_ctx = parse_uint("--fit-ctx", value);
        } else if (name == "--fit-target") {
            a.targets = parse_fit_target_flag("--fit-target", value); // arg.cpp: MiB each, ',' or '/'; one broadcast
        }
    }
    if (a.model.empty()) throw error("no model: give -m MODEL (a .gguf, config.json, model directory or catalog name)");
    return a;
}

// ggml_backend_dev_name of GPU `i` of `backend`'s build: "CUDA0" (ggml-cuda.h GGML_CUDA_NAME; "ROCm0" in a HIP build),
// "Vulkan0" (ggml-vulkan.h GGML_VK_NAME), "MTL0" (ggml-metal-device.m: "%s%d", "MTL", device).
std::string device_name(gpu_backend backend, size_t i) {
    const char * prefix = backend == gpu_backend::rocm ? "ROCm" : backend == gpu_backend::vulkan ? "Vulkan"
                        : backend == gpu_backend::metal ? "MTL" : "CUDA";
    return fmt::format("{}{}", prefix, i);
}

std::string print_lines(const std::vector<llamacpp_device_memory> & dmd, gpu_backend backend) {
    std::string out;
    for (size_t id = 0; id + 1 < dmd.size(); ++id) {
        out += fmt::format("{} {} {} {} \n", device_name(backend, id), dmd[id].model / MiB, dmd[id].context / MiB,
                           dmd[id].compute / MiB);
    }
    out += fmt::format("Host {} {} {} \n", dmd.back().model / MiB, dmd.back().context / MiB, dmd.back().compute / MiB);
    return out;
}

std::string print_fit(const llamacpp_fit_result & r) {
    std::string out = fmt::format("-c {} -ngl {}", r.n_ctx, r.n_gpu_layers);
    size_t nd = r.tensor_split.size();
    while (nd > 1 && r.tensor_split[nd - 1] == 0) --nd; // fit-params.cpp trims trailing zeros
    if (nd > 1) {
        out += " -ts ";
        for (size_t id = 0; id < nd; ++id) out += fmt::format("{}{}", id > 0 ? "," : "", r.tensor_split[id]);
    }
    for (size_t i = 0; i < r.overrides.size(); ++i) out += fmt::format("{}{}=CPU", i == 0 ? " -ot \"" : ",", r.overrides[i]);
    out += r.overrides.empty() ? "\n" : "\"\n";
    return out;
}

} // namespace

std::string fit_params_output(int argc, char ** argv) {
    const fit_args a = parse_args(argc, argv);
    const llamacpp_inputs in = parse_llamacpp_flags(a.flags); // flag errors before the model is read, as the CLI
    // an Apple GPU's budget is Metal's working set, as ggml-metal reports it to fit.cpp (metal.h), the plan's one rule
    std::vector<std::string> notes;
    const std::vector<device_spec> gpus = metal_budget(gpus_from_option(a.gpu), in.settings.iogpu_wired_limit_mb, notes);
    const gpu_backend backend = llamacpp_backend_of(gpus, in.settings.backend).backend;
    warnings warn;
    model_desc m = load_model(a.model, warn);
    llamacpp_adapt_model(m, warn); // the model as llama.cpp builds it (a window it does not read is full)
    plan_request q;
    q.weights = a.weights;
    q.weights_size = a.weights_size;
    apply_request_weights(m, q, find_runtime("llama.cpp"), warn);
    for (const auto & w : warn) fmt::print(stderr, "kvfit: warning: {}\n", w);
    for (const auto & n : notes) fmt::print(stderr, "kvfit: {}\n", n);
    llamacpp_settings s = in.settings;
    s.n_ctx = in.contexts.empty() ? 0 : in.contexts.back();
    // llama-fit-params measures with common_context_params_to_llama(params), common_params' n_outputs_max 0 -> n_batch
    // (tools/fit-params/fit-params.cpp:31, common/common.cpp:1724, llama-context.cpp:250), not llama-server's rule
    s.server_outputs = false;
    s.n_outputs_max = 0;
    if (a.print) {
        fmt::print(stderr, "llama_fit_params: printing estimated memory in MiB to stdout (device, model, context, compute) ...\n");
        return print_lines(llamacpp_device_memory_data(m, s, in.placement, gpus), backend);
    }
    // -ngl as common_params holds it (arg.cpp:2785): "all" is -2, a number itself (-1 and auto were dropped as the
    // default): any of them makes fit.cpp abort before step 3
    std::optional<int32_t> ngl_given;
    if (const std::string t = a.flags.text("n_gpu_layers"); !t.empty()) ngl_given = t == "all" ? -2 : std::stoi(t);
    const llamacpp_fit_result r = llamacpp_fit_params(m, s, in.placement, gpus, a.targets, a.fit_ctx, ngl_given);
    fmt::print(stderr, "llama_fit_params: printing fitted CLI arguments to stdout...\n");
    return print_fit(r);
}

int run_fit_params(int argc, char ** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "-h" || std::string_view(argv[i]) == "--help") {
            fmt::print("{}", fit_params_help());
            return 0;
        }
    }
    try {
        const std::string out = fit_params_output(argc, argv);
        std::fwrite(out.data(), 1, out.size(), stdout);
        return 0;
    } catch (const llamacpp_fit_failure & f) {
        fmt::print(stderr, "kvfit fit-params: {}\n", f.what());
        fmt::print(stderr, "llama_fit_params: failed to fit CLI arguments to free memory, exiting...\n");
        return 1;
    } catch (const error & e) {
        fmt::print(stderr, "kvfit fit-params: {}\n", e.what());
        return 1;
    }
}

} // namespace kvfit::cli
