// The llama.cpp flags (include/kvfit/llamacpp.h): the list the CLI and the HTTP API register, and their values parsed
// with llama.cpp's spelling (common/arg.cpp), shared by the CLI, `kvfit exec` and the HTTP API.
#include "kvfit/llamacpp.h"
#include "core/util.h"

#include "kvfit/error.h"
#include "kvfit/sources.h"
#include "kvfit/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <mutex>
#include <fmt/format.h>
#include <regex>

namespace kvfit {

ggml_type parse_cache_type_flag(std::string_view flag, std::string_view name) {
    // common/arg.cpp kv_cache_types: the types a KV cache may take
    static const ggml_type allowed[] = {ggml_type::f32,  ggml_type::f16,    ggml_type::bf16,
                                        ggml_type::q8_0, ggml_type::q4_0,   ggml_type::q4_1,
                                        ggml_type::iq4_nl, ggml_type::q5_0, ggml_type::q5_1};
    std::string names;
    for (auto t : allowed) {
        if (ggml_traits(t).name == name) return t;
        names += fmt::format("{}{}", names.empty() ? "" : ", ", ggml_traits(t).name);
    }
    throw error(fmt::format("{} '{}': unknown cache type (allowed: {})", flag, name, names));
}

std::vector<double> parse_tensor_split(std::string_view text) {
    std::vector<double> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find_first_of(",/", start), text.size());
        const std::string_view item = text.substr(start, end - start);
        double v = -1;
        const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || ec != std::errc() || p != item.data() + item.size() || !(v >= 0) || v > 1e9) {
            throw error(fmt::format("-ts '{}': expected non-negative proportions like 3,1", text));
        }
        out.push_back(v);
        start = end + 1;
    }
    // llama.cpp (llama_model::load_tensors): an all-zero split means the default split by free memory
    if (std::all_of(out.begin(), out.end(), [](double x) { return x == 0; })) out.clear();
    return out;
}

std::vector<std::string> split_override_rules(std::string_view value) {
    std::vector<std::string> rules;
    size_t start = 0;
    while (start <= value.size()) {
        const size_t end = std::min(value.find(',', start), value.size());
        rules.emplace_back(value.substr(start, end - start));
        start = end + 1;
    }
    return rules;
}

std::optional<std::string> parse_override_rule(std::string_view rule) {
    const size_t eq = rule.rfind('=');
    if (eq == std::string_view::npos || eq == 0) throw error(fmt::format("-ot '{}': expected PATTERN=BUFFER", rule));
    if (rule.substr(eq + 1) != "CPU") return std::nullopt;
    const std::string pattern(rule.substr(0, eq));
    if (const std::string why = detail::regex_unsafe(pattern); !why.empty()) {
        throw error(fmt::format("-ot '{}': the pattern has {}", rule.substr(0, 200), why));
    }
    try {
        std::regex check(pattern);
    } catch (const std::regex_error & e) {
        throw error(fmt::format("-ot '{}': invalid regular expression: {}", rule, e.what()));
    }
    return pattern;
}

namespace {

// "131,072" or "1,048,576": one number written with thousands separators, not a list -- the first part 1 to 3 digits,
// every later part exactly 3. Returns the digits joined ("131072"), or "" for any other text. A real list of that
// shape holds contexts below 1000 only ("256,512"), which the refusal asks to repeat the flag for.
std::string thousands_separated(std::string_view text) {
    std::string joined;
    size_t start = 0, parts = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find(',', start), text.size());
        const std::string_view part = text.substr(start, end - start);
        const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos;
        if (!digits || (parts == 0 ? part.size() > 3 : part.size() != 3)) return "";
        joined += part;
        ++parts;
        start = end + 1;
    }
    return parts > 1 ? joined : "";
}

// Throws when `text` is one number with thousands separators (thousands_separated), with the number it means.
void refuse_thousands_separators(std::string_view flag, std::string_view text) {
    std::string n = thousands_separated(text);
    if (n.empty()) return;
    n.erase(0, std::min(n.find_first_not_of('0'), n.size() - 1)); // "000,512" -> 512
    std::string repeated; // "256,512" -> "256 -c 512" (leading zeros dropped: "1,048" -> "1 -c 48")
    for (size_t start = 0; start <= text.size();) {
        const size_t end = std::min(text.find(',', start), text.size());
        std::string_view part = text.substr(start, end - start);
        part.remove_prefix(std::min(part.find_first_not_of('0'), part.size() - 1));
        repeated += fmt::format("{}{}", start == 0 ? "" : fmt::format(" {} ", flag), part);
        start = end + 1;
    }
    throw error(fmt::format("{} {}: reads as one number with thousands separators; did you mean {} {}? (a list of "
                            "contexts below 1000 is spelled by repeating the flag: {} {})", flag, text, flag, n, flag,
                            repeated));
}

} // namespace

uint64_t parse_ctx_size_flag(std::string_view flag, std::string_view text, uint64_t min) {
    refuse_thousands_separators(flag, text); // llama.cpp's std::stoi would read "131,072" as 131
    const size_t digits = text.find_first_not_of("0123456789");
    if (digits != std::string_view::npos && digits > 0 && digits + 1 == text.size() && digits <= 12 &&
        std::string_view("kKmM").find(text.back()) != std::string_view::npos) {
        const uint64_t n = parse_flag_count(flag, text.substr(0, digits), 0, 1ull << 40);
        const bool mega = text.back() == 'm' || text.back() == 'M';
        const std::string decimal = std::islower(static_cast<unsigned char>(text.back()))
                                        ? fmt::format(" (or -c {}, as vLLM reads {})", n * (mega ? 1000000 : 1000), text) : "";
        throw error(fmt::format("{} {}: llama.cpp takes a plain number (its std::stoi reads {} as {}); did you mean {} {}{}?",
                                flag, text, text, n, flag, n << (mega ? 20 : 10), decimal));
    }
    return parse_flag_count(flag, text, min, 1ull << 32);
}

int32_t parse_ngl_flag(std::string_view flag, std::string_view text) {
    if (text == "auto" || text == "all") return -1;
    const bool negative = text.size() > 1 && text[0] == '-';
    const std::string_view digits = negative ? text.substr(1) : text;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
        throw error(fmt::format("{} '{}': expected a non-negative integer, auto, all or a negative integer (every layer)",
                                flag, text));
    }
    const uint64_t n = parse_flag_count(flag, digits, 0, 100000);
    return negative && n > 0 ? -1 : int32_t(n);
}

std::vector<uint64_t> parse_fit_target_flag(std::string_view flag, std::string_view text) {
    std::vector<uint64_t> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find_first_of(",/", start), text.size());
        const std::string_view item = text.substr(start, end - start);
        const bool plain = !item.empty() && item.find_first_not_of("0123456789") == std::string_view::npos;
        if (item.empty() || (!plain && !std::isdigit(static_cast<unsigned char>(item.front())))) {
            throw error(fmt::format("{} '{}': expected MiB per device (1024, or 1024,2048)", flag, text));
        }
        out.push_back(plain ? parse_flag_count(flag, item, 0, 1u << 24) << 20 : parse_size_flag(flag, item));
        start = end + 1;
    }
    return out;
}

// The spellings (alias, name, alternates) are common/arg.cpp's common_arg({...}) lists of llama.cpp v0.5.0 (the
// speculative ones at common/arg.cpp:4086-4260: -md/--spec-draft-model/--model-draft, -ngld/--spec-draft-ngl/
// --gpu-layers-draft/--n-gpu-layers-draft, -ctkd/--spec-draft-type-k/--cache-type-k-draft, ...; -ngl/--gpu-layers/
// --n-gpu-layers; -ctxcp/--ctx-checkpoints/--swa-checkpoints; -fitt/--fit-target at :2892); flags llama.cpp does
// not have are kvfit's (--margin, --llamacpp-version, --cpu-features, --backend, --ram, --n-outputs-max, ...).
const std::vector<flag_spec> & llamacpp_flags() {
    using t = flag_type;
    using s = flag_setting;
    static const std::vector<flag_spec> v = {
        {"--ctx-size", "-c", "context size(s) in tokens; several values (8192,32768) make the table", t::list,
         "INT[,INT...]", s::context},
        {"--cache-type-k", "-ctk", "K cache type: f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1", t::text, "TYPE",
         s::cache_type_k},
        {"--cache-type-v", "-ctv", "V cache type (quantized needs flash attention)", t::text, "TYPE", s::cache_type_v},
        {"--flash-attn", "-fa", "on, off or auto (default auto = on where supported)", t::text, "on|off|auto",
         s::flash_attn},
        {"--ubatch-size", "-ub", "physical batch, tokens (default 512)", t::count},
        {"--batch-size", "-b", "logical batch, tokens (default 2048)", t::count},
        {"--parallel", "-np", "sequences / server slots (default 1)", t::count, "", s::concurrency},
        {"--kv-unified", "-kvu", "one KV stream shared by all sequences", t::boolean},
        {"--swa-full", "", "full-size cache for sliding-window layers", t::boolean},
        {"--mla-kv", "", "older llama.cpp MLA layout: K 576 plus V 512 per layer", t::boolean},
        {"--llamacpp-version", "", "llama.cpp release whose rules apply: v0.5.0 (default, node-llama-cpp 3.22.1) or "
                                   "5b4ebc5 (3.21.1)", t::text, "RELEASE"},
        {"--margin", "", "memory kept free per GPU, with a unit: 1GiB (default, as llama.cpp --fit), 512MiB", t::size, "SIZE",
         s::memory_margin},
        {"--fit-target", "-fitt", "llama.cpp's spelling of --margin: MiB kept free per GPU (default 1024; A,B per device: "
                                  "the largest is kept on each)", t::text, "MiB[,MiB...]", s::memory_margin},
        {"--n-gpu-layers", "-ngl", "layers on the GPU, counting the output layer (default all)", t::text,
         "INT|all|auto", s::none, {"--gpu-layers"}},
        {"--no-kv-offload", "-nkvo", "keep KV cache and state in host memory", t::boolean},
        {"--tensor-split", "-ts", "split proportions across GPUs, e.g. 3,1", t::text, "A,B..."},
        {"--override-tensor", "-ot", "PATTERN=CPU keeps matching tensors in host memory (repeatable)", t::list,
         "PATTERN=CPU"},
        {"--cpu-moe", "-cmoe", "keep all MoE expert weights on the CPU", t::boolean},
        {"--n-cpu-moe", "-ncmoe", "keep the experts of the first N layers on the CPU", t::count},
        // the CPU backend's extra weight buffers (AMX, CPU_REPACK): docs/rules/llamacpp-cpu-repack.md
        {"--cpu-features", "", "CPU of the host-resident weights (libggml-cpu variant, extra buffers AMX / CPU_REPACK): "
                               "auto (this machine), none, avx2, avx512, amx, a variant (haswell, zen4, ...) or "
                               "/proc/cpuinfo flags; default assumed avx2 (--gpu auto and kvfit exec detect this machine)",
         t::text},
        {"--mmap", "", "memory-map the model file (llama.cpp's default)", t::boolean},
        {"--no-mmap", "", "read the model into allocated buffers: weights moved to AMX / CPU_REPACK counted once", t::boolean},
        {"--load-mode", "-lm", "auto, none, mmap, mlock, mmap+mlock or dio (none and dio: no mmap)", t::text},
        {"--no-repack", "-nr", "no CPU extra buffer types (AMX, CPU_REPACK)", t::boolean},
        {"--no-host", "", "with GPUs: no host buffer type, so host-resident weights may go to AMX / CPU_REPACK", t::boolean},
        // projector, LoRA adapters, host RAM (issue 14: llamacpp_extras.h; mmproj.cpp, lora.cpp, host_ram.cpp)
        {"--mmproj", "-mm", "multimodal projector GGUF: its weights and clip compute buffer on the first GPU", t::text,
         "FILE"},
        {"--no-mmproj-offload", "", "keep the projector (weights and compute) in host RAM", t::boolean},
        {"--lora", "", "LoRA adapter GGUF (or PEFT safetensors), with its base weights' devices (repeatable, FILE,FILE)", t::list,
         "FILE"},
        {"--lora-scaled", "", "LoRA adapter FILE:SCALE (repeatable, comma-separated)", t::list, "FILE:SCALE"},
        {"--cache-ram", "-cram", "llama-server prompt cache limit in MiB, host RAM (default 8192; -1 no limit; 0 off)", t::text,
         "MiB|-1"},
        {"--ctx-checkpoints", "-ctxcp", "context checkpoints per slot, host RAM (default 32; recurrent and SWA models)", t::count,
         "", s::none, {"--swa-checkpoints"}},
        {"--ram", "", "host RAM for the host verdict: SIZE, or auto (this machine's MemTotal; --gpu auto detects it)", t::text,
         "SIZE|auto"},
        // speculative decoding (src/runtimes/llamacpp/spec.cpp, docs/rules/llamacpp-spec.md): llama.cpp's spelling
        {"--spec-type", "", "speculative decoding: draft-mtp (an MTP context on the model's NextN block), draft-simple "
                            "(with -md), none", t::text, "TYPE"},
        {"--spec-draft-n-max", "", "draft tokens per step (default 3): outputs reserved, recurrent snapshots with MTP",
         t::count},
        {"--spec-draft-model", "-md", "draft model (GGUF, read like -m): its weights, KV, state and compute", t::text,
         "FILE", s::none, {"--model-draft"}},
        {"--spec-draft-ngl", "-ngld", "draft layers on the GPU (default all)", t::text, "INT|all|auto", s::none,
         {"--gpu-layers-draft", "--n-gpu-layers-draft"}},
        {"--spec-draft-type-k", "-ctkd", "K cache type of the draft / MTP context (default f16)", t::text, "TYPE", s::none,
         {"--cache-type-k-draft"}},
        {"--spec-draft-type-v", "-ctvd", "V cache type of the draft / MTP context (default f16)", t::text, "TYPE", s::none,
         {"--cache-type-v-draft"}},
        {"--spec-draft-device", "-devd", "GPUs of the draft model: CUDA0,CUDA1 (index in --gpu) or none (host)", t::text,
         "DEV[,DEV...]", s::none, {"--device-draft"}},
        {"--ctx-size-draft", "-cd", "not a llama.cpp v0.5.0 / 5b4ebc5 flag (the draft follows -c): refused", t::text},
        {"--spec-draft-ctx", "", "context the draft / MTP context is sized at: target (v0.5.0, 5b4ebc5: the fitted "
                                 "n_ctx) or train (llama.cpp build 9893: n_ctx_train)", t::text},
        // the backend and its compute terms (compute_cuda.cpp, docs/rules/llamacpp-cuda.md)
        {"--backend", "", "ggml backend of the GPUs: cuda, rocm, vulkan, metal or cpu (default: from the GPU names; "
                          "cuda assumed for --gpu SIZE)", t::text},
        {"--iogpu-wired-limit-mb", "", "sudo sysctl iogpu.wired_limit_mb=N on a Mac: the Metal working set in MiB "
                                       "(default: macOS's recommendedMaxWorkingSetSize)", t::count},
        {"--no-op-offload", "", "keep the ops of CPU-resident weights on the CPU (no CUDA staging of CPU experts at "
                                "n_ubatch >= 32)", t::boolean},
        // llama-server's n_outputs_max (server-context.cpp:41-53) versus libllama's default (llama-context.cpp:250)
        {"--n-outputs-max", "", "outputs the compute graph reserves logits for: server (default: llama-server's "
                                "n_parallel x (1 + draft tokens), at most -b), batch (libllama's default n_batch: "
                                "node-llama-cpp, llama-fit-params, llama-completion) or a count", t::text},
    };
    return v;
}

const std::vector<flag_spec> & llamacpp_command_flags() {
    using t = flag_type;
    using s = flag_setting;
    // common/arg.cpp (v0.5.0) spellings; --fit, --fit-ctx and --fit-print are llama-fit-params' (common/fit.cpp)
    static const std::vector<flag_spec> v = {
        {"--model", "-m", "the model file (GGUF)", t::text, "FILE"},
        {"--hf-repo", "-hf", "a Hub model: org/name[:QUANT]", t::text, "ORG/NAME[:QUANT]", s::none, {"-hfr"}},
        {"--hf-file", "-hff", "the file of the Hub model", t::text, "FILE"},
        {"--fit", "-fit", "llama.cpp's fitting of -c and -ngl to the free memory: on or off", t::text, "on|off"},
        {"--fit-ctx", "-fitc", "the smallest context --fit may reduce -c to (default 4096)", t::count},
        {"--fit-print", "-fitp", "llama-fit-params: print the memory per device instead of the fitted arguments", t::text,
         "on|off"},
        {"--repack", "", "CPU extra buffer types (AMX, CPU_REPACK), llama.cpp's default; -nr turns them off", t::boolean},
        {"--split-mode", "-sm", "none (the main GPU alone), layer (the default) or row (not modelled)", t::text, "MODE"},
        {"--main-gpu", "-mg", "the GPU of -sm none (kvfit exec plans it alone)", t::count, "INDEX"},
        {"--device", "-dev", "the GPUs llama.cpp uses, by name (CUDA0,CUDA1; none: no GPU); kvfit exec plans those",
         t::text, "DEV[,DEV...]"},
        {"--embedding", "", "embeddings only: n_batch outputs (the pooled graph is not modelled)", t::boolean, "", s::none,
         {"--embeddings"}},
        {"--pooling", "", "embedding pooling: none keeps token outputs; others as --embedding", t::text, "TYPE"},
    };
    return v;
}

const std::vector<flag_spec> & llamacpp_ignored_flags() {
    using t = flag_type;
    using s = flag_setting;
    // common/arg.cpp (v0.5.0) spellings: -n/--predict/--n-predict, -to/--timeout, ...
    static const std::vector<flag_spec> v = {
        {"--host", "", "server: address", t::text},
        {"--port", "", "server: port", t::text},
        {"--threads", "-t", "CPU threads: speed, not memory", t::text},
        {"--threads-batch", "-tb", "CPU threads for the prompt: speed, not memory", t::text},
        {"--threads-http", "", "server: HTTP threads", t::text},
        {"--timeout", "-to", "server: read/write timeout", t::text},
        {"--alias", "-a", "server: the model's name in the API", t::text},
        {"--api-key", "", "server: API key", t::text},
        {"--chat-template", "", "prompt formatting", t::text},
        {"--chat-template-file", "", "prompt formatting", t::text},
        {"--reasoning-format", "", "response formatting", t::text},
        {"--n-predict", "-n", "tokens to predict (within -c)", t::text, "", s::none, {"--predict"}},
        {"--prompt", "-p", "the prompt (within -c)", t::text},
        {"--system-prompt", "-sys", "the system prompt (within -c)", t::text},
        {"--seed", "-s", "sampling", t::text},
        {"--temp", "", "sampling", t::text},
        {"--top-k", "", "sampling", t::text},
        {"--top-p", "", "sampling", t::text},
        {"--min-p", "", "sampling", t::text},
        {"--repeat-penalty", "", "sampling", t::text},
        {"--log-file", "", "logging", t::text},
        {"--jinja", "", "prompt formatting", t::boolean},
        {"--metrics", "", "server: the metrics endpoint", t::boolean},
        {"--no-webui", "", "server: no web page", t::boolean},
        {"--conversation", "-cnv", "llama-cli: chat mode", t::boolean},
        {"--single-turn", "-st", "llama-cli: one turn", t::boolean},
        {"--verbose", "-v", "logging", t::boolean},
        {"--log-disable", "", "logging", t::boolean},
        {"--mlock", "", "locks the mapped weights in RAM: no change to their size", t::boolean},
        {"--cont-batching", "-cb", "continuous batching (llama-server's default)", t::boolean},
        {"--no-warmup", "", "no warm-up run: the buffers are the same", t::boolean},
    };
    return v;
}

namespace {

// -c takes one value as in llama.cpp, or several (repeated or comma-separated) for the table. A value shaped like one
// number with thousands separators is refused (llama.cpp's std::stoi reads "131,072" as 131, and a list would plan
// 131 and 72 tokens, both padded to 256 cells by llama_context: GGML_PAD(n_ctx, 256), src/llama-context.cpp:289).
std::vector<uint64_t> parse_contexts(const std::vector<std::string> & values) {
    std::vector<uint64_t> out;
    for (const auto & v : values) {
        refuse_thousands_separators("-c", v);
        size_t start = 0;
        while (start <= v.size()) {
            const size_t end = std::min(v.find(',', start), v.size());
            out.push_back(parse_ctx_size_flag("-c", std::string_view(v).substr(start, end - start), 1));
            start = end + 1;
        }
    }
    return out;
}

// A flag given with a value: an empty one means "not given" (the default applies), as before the registry.
bool given(const flag_values & f, std::string_view name) { return !f.text(name).empty(); }

// -md FILE read like -m. The planner's searches parse the flags once per candidate, so the last file read is kept
// (by path, size and modification time) instead of read again each time.
std::shared_ptr<const model_desc> load_draft(const std::string & path) {
    static std::mutex mu;
    static std::string last_key;
    static std::shared_ptr<const model_desc> last;
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    const auto time = std::filesystem::last_write_time(path, ec);
    const std::string key = ec ? "" : fmt::format("{}\n{}\n{}", path, size, time.time_since_epoch().count());
    {
        std::lock_guard<std::mutex> lock(mu);
        if (!key.empty() && key == last_key) return last;
    }
    warnings warn; // the draft's own warnings (assumed formats) are not the plan's
    auto m = std::make_shared<const model_desc>(load_model(path, warn));
    std::lock_guard<std::mutex> lock(mu);
    last_key = key;
    last = m;
    return m;
}

// Speculative decoding flags (spec.cpp). -cd/--ctx-size-draft is in neither release's common/arg.cpp (the draft
// context takes llama_n_ctx(ctx_tgt), common/speculative.cpp:2550): llama-server refuses it, so does kvfit.
void parse_spec_flags(const flag_values & f, llamacpp_settings & s) {
    llamacpp_spec & sp = s.spec;
    if (given(f, "ctx_size_draft")) {
        throw error(fmt::format("-cd {}: not a flag of llama.cpp v0.5.0 or 5b4ebc5 (the draft context follows the target's "
                                "-c: common/speculative.cpp:2550)", f.text("ctx_size_draft")));
    }
    if (given(f, "spec_type")) sp.mtp = parse_spec_type(f.text("spec_type"));
    if (given(f, "spec_draft_n_max")) sp.n_max = uint32_t(parse_flag_count("--spec-draft-n-max", f.text("spec_draft_n_max"), 0, 1024));
    if (given(f, "spec_draft_type_k")) sp.type_k = parse_cache_type_flag("-ctkd", f.text("spec_draft_type_k"));
    if (given(f, "spec_draft_type_v")) sp.type_v = parse_cache_type_flag("-ctvd", f.text("spec_draft_type_v"));
    if (given(f, "spec_draft_ngl")) {
        sp.draft_n_gpu_layers = parse_ngl_flag("-ngld", f.text("spec_draft_ngl")); // arg.cpp:4218, as -ngl
    }
    if (given(f, "spec_draft_device")) sp.draft_devices = parse_draft_devices(f.text("spec_draft_device"));
    if (given(f, "spec_draft_ctx")) {
        const std::string v = f.text("spec_draft_ctx");
        if (v == "target") sp.draft_ctx = spec_draft_ctx::target;
        else if (v == "train") sp.draft_ctx = spec_draft_ctx::n_ctx_train;
        else throw error(fmt::format("--spec-draft-ctx '{}': expected target or train", v));
    }
    if (given(f, "spec_draft_model")) {
        sp.draft_path = f.text("spec_draft_model");
        sp.draft = load_draft(sp.draft_path);
    }
}

} // namespace

// --mmproj, --no-mmproj-offload, --lora, --lora-scaled, --cache-ram, --ctx-checkpoints, --ram (host_ram.cpp)
void parse_extras_flags(const flag_values & f, llamacpp_settings & s);
void extras_flag_values(const llamacpp_settings & s, flag_values & f);

flash_attn_mode parse_flash_attn_flag(std::string_view flag, std::string_view v) {
    if (v == "on" || v == "enabled" || v == "true" || v == "1") return flash_attn_mode::on;
    if (v == "off" || v == "disabled" || v == "false" || v == "0") return flash_attn_mode::off;
    if (v == "auto" || v == "-1") return flash_attn_mode::automatic;
    throw error(fmt::format("{} '{}': expected on, off or auto (or 1, 0, true, false, -1)", flag, v));
}

llamacpp_inputs parse_llamacpp_flags(const flag_values & f) {
    llamacpp_inputs in;
    llamacpp_settings & s = in.settings;
    s.type_k = parse_cache_type_flag("-ctk", f.text("cache_type_k", "f16"));
    s.type_v = parse_cache_type_flag("-ctv", f.text("cache_type_v", "f16"));
    s.flash_attn = parse_flash_attn_flag("-fa", f.text("flash_attn", "auto"));
    if (given(f, "ubatch_size")) s.n_ubatch = uint32_t(parse_flag_count("-ub", f.text("ubatch_size"), 1, 1u << 20));
    if (given(f, "batch_size")) s.n_batch = uint32_t(parse_flag_count("-b", f.text("batch_size"), 1, 1u << 20));
    if (given(f, "parallel")) s.n_seq = uint32_t(parse_flag_count("-np", f.text("parallel"), 1, 256));
    s.kv_unified = f.boolean("kv_unified");
    s.swa_full = f.boolean("swa_full");
    s.mla = f.boolean("mla_kv") ? mla_layout::k_and_v : mla_layout::k_only;
    if (given(f, "llamacpp_version")) s.release = parse_llamacpp_release(f.text("llamacpp_version"));
    in.contexts = parse_contexts(f.list("ctx_size"));

    placement_settings & p = in.placement;
    const std::string ngl = f.text("n_gpu_layers");
    if (!ngl.empty()) p.n_gpu_layers = parse_ngl_flag("-ngl", ngl);
    p.no_kv_offload = f.boolean("no_kv_offload");
    p.cpu_moe = f.boolean("cpu_moe");
    if (given(f, "n_cpu_moe")) p.n_cpu_moe = uint32_t(parse_flag_count("--n-cpu-moe", f.text("n_cpu_moe"), 0, 100000));
    if (!f.text("tensor_split").empty()) p.tensor_split = parse_tensor_split(f.text("tensor_split"));
    for (const auto & value : f.list("override_tensor")) {
        for (const auto & rule : split_override_rules(value)) {
            const auto pattern = parse_override_rule(rule);
            if (!pattern) throw error(fmt::format("-ot '{}': only the CPU target is modelled", rule));
            p.override_tensor_cpu.push_back(*pattern);
        }
    }
    if (given(f, "cpu_features")) p.cpu = parse_cpu_features(f.text("cpu_features"));
    if (f.boolean("mmap") && f.boolean("no_mmap")) throw error("--mmap and --no-mmap: give one of them");
    if (f.boolean("no_mmap")) p.mmap = false;
    if (given(f, "load_mode")) {
        // common/arg.cpp --load-mode; llama-model-loader.cpp: use_mmap for auto, mmap and mmap+mlock
        const std::string lm = f.text("load_mode");
        if (lm == "auto" || lm == "mmap" || lm == "mmap+mlock") p.mmap = !f.boolean("no_mmap");
        else if (lm == "none" || lm == "mlock" || lm == "dio") p.mmap = false;
        else throw error(fmt::format("--load-mode '{}': expected auto, none, mmap, mlock, mmap+mlock or dio", lm));
        if (f.boolean("mmap") && !p.mmap) throw error(fmt::format("--mmap and --load-mode {}: give one of them", lm));
    }
    p.repack = !f.boolean("no_repack");
    p.no_host = f.boolean("no_host");
    if (given(f, "margin")) in.margin_bytes = parse_size_flag("--margin", f.text("margin"));
    if (given(f, "fit_target")) { // kvfit keeps one margin on every GPU: the largest target
        if (given(f, "margin")) throw error("--margin and --fit-target: give one of them (--fit-target is llama.cpp's MiB)");
        const std::vector<uint64_t> t = parse_fit_target_flag("--fit-target", f.text("fit_target"));
        in.margin_bytes = *std::max_element(t.begin(), t.end());
    }
    parse_extras_flags(f, s);
    parse_spec_flags(f, s);
    // the backend (compute_cuda.cpp)
    if (given(f, "backend")) s.backend = parse_gpu_backend(f.text("backend"));
    s.op_offload = !f.boolean("no_op_offload");
    if (given(f, "iogpu_wired_limit_mb")) {
        s.iogpu_wired_limit_mb = parse_flag_count("--iogpu-wired-limit-mb", f.text("iogpu_wired_limit_mb"), 0, 1ull << 32);
    }
    // n_outputs_max: llama-server's rule unless told (rules.cpp llamacpp_context_size)
    s.server_outputs = true;
    if (given(f, "n_outputs_max")) {
        const std::string v = f.text("n_outputs_max");
        if (v == "batch") s.server_outputs = false;
        else if (v != "server") {
            if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
                throw error(fmt::format("--n-outputs-max '{}': expected server, batch or a positive integer", v));
            }
            s.server_outputs = false;
            s.n_outputs_max = uint32_t(parse_flag_count("--n-outputs-max", v, 1, 1u << 20));
        }
    }
    return in;
}

flag_values llamacpp_flag_values(const llamacpp_settings & s, const placement_settings & p, uint64_t margin_bytes) {
    flag_values f;
    if (s.n_ctx) f.set("ctx_size", std::to_string(s.n_ctx));
    f.set("cache_type_k", std::string(ggml_traits(s.type_k).name));
    f.set("cache_type_v", std::string(ggml_traits(s.type_v).name));
    f.set("flash_attn", flash_attn_name(s.flash_attn));
    f.set("ubatch_size", std::to_string(s.n_ubatch));
    f.set("batch_size", std::to_string(s.n_batch));
    f.set("parallel", std::to_string(s.n_seq));
    if (s.kv_unified) f.set("kv_unified", "true");
    if (s.swa_full) f.set("swa_full", "true");
    if (s.mla == mla_layout::k_and_v) f.set("mla_kv", "true");
    f.set("llamacpp_version", s.release == llamacpp_release::b5b4ebc5 ? "5b4ebc5" : "v0.5.0");
    f.set("margin", fmt::format("{}B", margin_bytes));
    if (p.n_gpu_layers >= 0) f.set("n_gpu_layers", std::to_string(p.n_gpu_layers));
    if (p.no_kv_offload) f.set("no_kv_offload", "true");
    if (!p.tensor_split.empty()) {
        std::string ts;
        for (double x : p.tensor_split) ts += fmt::format("{}{}", ts.empty() ? "" : ",", x);
        f.set("tensor_split", ts);
    }
    for (const auto & pattern : p.override_tensor_cpu) f.add("override_tensor", pattern + "=CPU");
    if (p.cpu_moe) f.set("cpu_moe", "true");
    if (p.n_cpu_moe) f.set("n_cpu_moe", std::to_string(p.n_cpu_moe));
    if (p.cpu.source != "assumed") f.set("cpu_features", p.cpu.variant);
    if (!p.mmap) f.set("no_mmap", "true");
    if (!p.repack) f.set("no_repack", "true");
    if (p.no_host) f.set("no_host", "true");
    extras_flag_values(s, f);
    // speculative decoding (spec.cpp)
    const llamacpp_spec & sp = s.spec;
    if (sp.mtp) f.set("spec_type", "draft-mtp");
    if (sp.active()) f.set("spec_draft_n_max", std::to_string(sp.n_max));
    if (!sp.draft_path.empty()) f.set("spec_draft_model", sp.draft_path);
    if (sp.draft_n_gpu_layers >= 0) f.set("spec_draft_ngl", std::to_string(sp.draft_n_gpu_layers));
    if (sp.type_k != ggml_type::f16) f.set("spec_draft_type_k", std::string(ggml_traits(sp.type_k).name));
    if (sp.type_v != ggml_type::f16) f.set("spec_draft_type_v", std::string(ggml_traits(sp.type_v).name));
    if (!sp.draft_devices.empty()) {
        std::string d;
        for (int32_t i : sp.draft_devices) d += i < 0 ? std::string("none") : fmt::format("{}GPU{}", d.empty() ? "" : ",", i);
        f.set("spec_draft_device", d);
    }
    if (sp.draft_ctx == spec_draft_ctx::n_ctx_train) f.set("spec_draft_ctx", "train");
    if (s.backend) f.set("backend", gpu_backend_name(*s.backend));
    if (!s.op_offload) f.set("no_op_offload", "true");
    if (s.iogpu_wired_limit_mb) f.set("iogpu_wired_limit_mb", std::to_string(s.iogpu_wired_limit_mb));
    if (!s.server_outputs) f.set("n_outputs_max", s.n_outputs_max ? std::to_string(s.n_outputs_max) : std::string("batch"));
    return f;
}

const char * flash_attn_name(flash_attn_mode m) {
    return m == flash_attn_mode::on ? "on" : m == flash_attn_mode::off ? "off" : "auto";
}

} // namespace kvfit
