#pragma once
/// @file runtime.h
/// The one runtime interface. A runtime (llama.cpp, vLLM, SGLang, Ollama, ...) is one folder under src/runtimes/
/// with its settings, its flags and `plan(model, flags, machine) -> runtime_plan`, and one line in the registry
/// (runtimes()). Every report (text, --json, --check, charts), the HTTP API and the web page read runtime_plan,
/// so a new runtime reaches all of them without touching them.
///
/// This header holds no runtime's rules: those are in llamacpp.h, vllm.h, sglang.h and ollama.h. Units: bytes
/// (uint64_t) unless a name says otherwise; tokens for contexts.

#include "kvfit/model.h"

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvfit {

// --- what a runtime runs on ----------------------------------------------------------------------------------

/// One GPU as the runtimes see it.
struct device_spec {
    std::string name;              ///< display name ("GPU0", "RTX 4060", "24GiB")
    /// The memory the runtime's device query reports, bytes: a GPU table row's CUDA/HIP total
    /// (gpu_info::memory_bytes: what torch.cuda.mem_get_info() and cudaMemGetInfo give as total, e.g. 22.05 GiB on an
    /// L4), a size as given, or the free memory a detection tool measured. On an Apple GPU it is the unified RAM
    /// until metal_budget() replaces it by Metal's working set (memory_is_working_set).
    uint64_t memory_bytes = 0;
    double compute_capability = 0; ///< CUDA compute capability from the GPU table (8.6 for an RTX 3090); 0 = unknown
    /// "NVIDIA", "AMD", "Apple" from the GPU table (or the detection tool); "" = unknown. llama.cpp's backend is
    /// inferred from it (llamacpp_backend_of).
    std::string vendor{};
    /// From the GPU table (0 when the device is a size or a detected name): the marketed size in GB ("24 GB" for an
    /// L4) and the total the vendor's tool reports, bytes (nvidia-smi memory.total, 23034 MiB for an L4; rocm-smi's
    /// VRAM total; hw.memsize on a Mac). SGLang's default --mem-fraction-static reads the latter (nvidia-smi).
    uint32_t marketed_gb = 0;
    uint64_t reported_bytes = 0;
    bool memory_estimate = false;       ///< memory_bytes is the table's estimate (no published log of that figure)
    bool memory_is_working_set = false; ///< memory_bytes already is Metal's recommendedMaxWorkingSetSize (Apple)
};

/// How a device's memory reads in reports: "22.05 GiB as CUDA reports it (estimate; nvidia-smi 23,034 MiB;
/// marketed 24 GB)" for a table row, "64.00 GiB unified memory (marketed 64 GB)" for a Mac before the working set,
/// "48.00 GiB Metal working set (64.00 GiB unified memory)" after metal_budget, the size alone for a sized device.
/// Declared here, beside device_spec, so a runtime's report sections can name its GPUs (llama.cpp's fit line).
std::string gpu_memory_text(const device_spec & d);

/// The devices of one node a plan is made for: GPUs in order; none = CPU only.
struct machine {
    std::vector<device_spec> gpus; ///< every GPU alike for vLLM and SGLang (the smallest is planned)
};

// --- what a runtime allocates --------------------------------------------------------------------------------

/// One allocation on one device. `name` is from a fixed vocabulary, so reports can stack and label buffers of any
/// runtime: "weights", "kv" (KV caches), "state" (recurrent and compressor state), "output" (logits), "compute"
/// (llama.cpp's scheduler buffer), "activation" (vLLM's profiled peak), "non_torch" (NCCL, cuBLAS, CUDA context
/// growth), "cuda_graph", "kv_pool" (vLLM's and SGLang's preallocated KV pool), "mamba_pool" (SGLang's state slots).
struct buffer {
    std::string name;      ///< from the vocabulary above
    uint64_t bytes = 0;    ///< bytes on this device
    bool estimate = false; ///< true when the figure is a kvfit default or estimate, not a measured or published rule
    std::string what;      ///< one line: what it holds or where the figure comes from ("" when the name says it)
    /// For an estimate whose error was measured: the relative error (estimate - measured) / measured seen on the
    /// measured rows of its kind, lowest and highest (-0.6 = 60 % under); has_range false when never measured.
    bool has_range = false;
    double range_lo = 0, range_hi = 0;
};

/// Memory on one device (a GPU, or the host's RAM) under a plan.
struct device_plan {
    std::string name;              ///< GPU name, or "host" for system RAM
    bool is_host = false;          ///< system RAM (unbounded here: capacity 0, always fits)
    uint64_t capacity_bytes = 0;   ///< device memory; 0 for the host
    uint64_t reserved_bytes = 0;   ///< kept free: llama.cpp's --margin (--fit target); vLLM (1 - utilization) x total
    std::vector<buffer> buffers;   ///< in the runtime's allocation order
    uint32_t n_layers = 0;         ///< transformer blocks placed here
    /// Sum of the buffers' bytes.
    uint64_t used_bytes() const;
    /// Bytes of the buffer called `name` (0 when absent).
    uint64_t bytes_of(std::string_view name) const;
    /// capacity - reserved - used: negative when it overflows; 0 for the host.
    int64_t free_bytes() const;
    /// used + reserved <= capacity; always true for the host.
    bool fits() const;
};

/// One KV cache as the runtime logs it (llama.cpp: "llama_kv_cache: size = ... (cells, layers, streams)").
struct cache_plan {
    std::string name;              ///< llama.cpp: "base", "swa", "indexer", "csa", "hca", "lid"
    uint64_t cells_per_stream = 0; ///< tokens each stream holds
    uint32_t n_stream = 1;         ///< streams (sequences, or 1 when unified)
    uint32_t n_layer = 0;          ///< layers in this cache
    uint64_t k_bytes = 0;          ///< all K tensors of the cache
    uint64_t v_bytes = 0;          ///< all V tensors of the cache (0 for K-only caches)
    uint64_t bytes() const { return k_bytes + v_bytes; }
};

/// The largest context that fits the GPUs for one value of the runtime's cache-type setting, found by the planner's
/// search (plan.h). The rows: each of runtime_info::cache_types, then the requested types if they are not among them,
/// then one row for all_full_attention_variant(model) at the requested types.
struct context_limit {
    std::string cache_type;          ///< K and V both of this type ("f16", "q8_0"); the variant row: the requested K type
    bool all_full_attention = false; ///< the row of the all-full-attention variant of the model
    bool allowed = true;             ///< false: the runtime refuses this type with these flags; `refusal` says why
    std::string refusal;             ///< the runtime's one-line message ("" when allowed)
    uint64_t context_tokens = 0;     ///< the largest value of the context setting that fits; 0 = none fits
    /// true: the search reached the top of the context knob's range (the model's training context, at least one
    /// step) with memory to spare for this value; more may fit
    bool capped = false;
};

/// A change of one setting that makes a plan fit which does not ("what would fit instead"), found by the planner's
/// search over a knob (runtime_info::context, runtime_info::knobs).
struct alternative {
    /// the knob turned: "context", "sequences", "n_gpu_layers", "n_cpu_moe", "gpu_memory_utilization" (a knob's
    /// name), "cache_type" (another value of the cache-type setting, from max_context), or "context+<knob>" when no
    /// one setting fits and the context is turned with another knob (value: the context; flags: both)
    std::string knob;
    /// its value in the knob's unit: tokens for the context, sequences, layers for -ngl, blocks for --n-cpu-moe,
    /// hundredths for a memory fraction (95 = 0.95); 0 for "cache_type" (the type is `cache_type`)
    uint64_t value = 0;
    std::string cache_type;      ///< "cache_type": the type K and V both take ("q8_0", "fp8"); "" for every other knob
    std::string flags;           ///< the runtime's flags that set it, as a person types them: "-ngl 13", "-c 32768"
    uint64_t context_tokens = 0; ///< the context it is planned at
    uint64_t host_bytes = 0;     ///< host memory the plan then takes (every buffer on the host), bytes
};

/// One named figure of a plan section (plan_section): a size, a number in a unit, or a word, with the runtime source
/// its rule reproduces and whether kvfit estimated it. Reports read figures by position in their row, never by name.
struct plan_figure {
    std::string label;             ///< what it is, in the runtime's words: "weights", "num_gpu_blocks", "kv_cache_dtype"
    std::optional<uint64_t> bytes; ///< a size, bytes (people see GiB/MiB); std::nullopt when the figure is not a size
    /// a number in `unit` (tokens, blocks, requests, layers, a fraction of memory); std::nullopt for a size or a word
    std::optional<double> value;
    std::string unit;              ///< the unit of `value`: "tokens", "blocks", "B per token", "fraction"; "" otherwise
    std::string text;              ///< the figure when it is a word ("fp8", "auto", "extra_buffer"); "" otherwise
    /// where the figure comes from: the runtime file and function whose rule it reproduces ("vllm/v1/worker/
    /// gpu_worker.py determine_available_memory"), "flag" for a value as given, or kvfit's own estimate named
    std::string source;
    bool estimate = false;         ///< a kvfit constant or estimate (no runtime rule and no flag decides it)
};

/// One line of a plan section as the text report prints it (under the section's title, indented by two spaces),
/// with the typed figures it shows, in order.
struct plan_row {
    std::string text;                 ///< the line, without its two-space indent or newline; may hold its own indent
    std::vector<plan_figure> figures; ///< the figures the line shows; empty for a line of words
};

/// A titled block of a plan's runtime-specific figures, built by the runtime from its own plan (vLLM's KV specs,
/// budget and pool; SGLang's static pool; Ollama's choices; llama.cpp's per-token figures, table and fit; mlx-lm's
/// caches): reports render sections without naming a runtime.
struct plan_section {
    /// The heading, printed after a blank line ("Pool (max_model_len 32,768, max_num_seqs 256, ...)"); "" for an
    /// untitled section, whose rows are printed as they are, each with its own indent, right after what comes before
    /// ("placement: TP 2, PP 1, DP 1" under the model line; an empty row is a blank line: llama.cpp's blocks).
    std::string title;
    std::vector<plan_row> rows; ///< in print order
};

/// The host's RAM under a plan, when the runtime gives it a verdict of its own (llama.cpp with --ram, --mmproj, --lora,
/// --cache-ram or --ctx-checkpoints: host_ram.cpp llamacpp_host_ram; docs/rules/llamacpp-host-ram.md). Bytes.
struct host_ram_verdict {
    uint64_t needed_bytes = 0;   ///< what must fit the RAM (the prompt cache, which the runtime evicts, left out)
    uint64_t capacity_bytes = 0; ///< --ram (or the RAM detected); 0 = unknown
    bool known = false;          ///< capacity given: a verdict exists
    bool over = false;           ///< known and needed_bytes > capacity: the plan does not fit (fits false)
};

/// The runtime's own words for the short verdict (report.h render_check) and a chart's title and note (chart.h),
/// set by a runtime whose settings read otherwise than the common words (llama.cpp: plan.cpp); every field empty (or
/// false) means the common words, so the reports name no runtime.
struct plan_words {
    /// What the verdict is for: "n_ctx 65,536 (f16 K / f16 V, 1 sequence)" (llama.cpp's padded n_ctx, cache types and
    /// sequences); "" = "context N tokens (S sequences, <rules>)".
    std::string setting;
    /// What device_plan::reserved_bytes is called: "margin" (llama.cpp --margin, --fit's target); "" = "reserve".
    std::string reserve;
    /// A line `--check` adds when a GPU is over: what the runtime does then instead of refusing (llama.cpp moves
    /// layers to the CPU under --fit); "" = none.
    std::string when_over;
    /// true: `--check`'s "fits instead" lines are the largest context per cache type (max_context, written with the
    /// runtime's context and cache-type flags: "-c 44800 -ctk f16 -ctv f16"); false: the planner's alternatives.
    bool fits_instead_by_cache_type = false;
    /// A chart title's settings after the runtime's name (" - f16 K/V - np 1 - ub 512 - fa auto") and after the
    /// GPUs (" (margin 1.00 GiB)"); "" = none.
    std::string chart_settings, chart_reserve;
    /// The note of the chart against all full attention (chart.h make_compare_series): the KV bytes per token of the
    /// model and of its all-full-attention variant, lines separated by '\n'; "" = none.
    std::string chart_kv_note;
};

/// A runtime's plan: the one type every report, the HTTP API and the page read. A plan that does not fit is a
/// result (fits false), not an error; settings the runtime rejects outright throw kvfit::error instead.
struct runtime_plan {
    std::string runtime;                ///< registry name: "llama.cpp", "vllm", "sglang", "ollama"
    std::string rules;                  ///< whose rules: "llama.cpp v0.5.0 (node-llama-cpp 3.22.1)", "vLLM 2026 rules (v0.24+)"
    /// The value of the runtime's context setting the plan is made at, after the runtime's defaults: llama.cpp -c
    /// (the largest -c, or n_ctx_train; before llama.cpp pads it: detail.n_ctx), vLLM max_model_len (the auto-fit
    /// result under -1), SGLang context_length, Ollama num_ctx (per slot). Tokens.
    uint64_t context_tokens = 0;
    uint32_t sequences = 0;             ///< llama.cpp -np, vLLM max_num_seqs, SGLang max_running_requests, Ollama slots
    std::vector<device_plan> devices;   ///< GPUs in order, then the host when the runtime puts anything there
    std::vector<cache_plan> caches;     ///< KV caches as the runtime logs them (empty when it logs one pool: vLLM, SGLang)
    /// KV bytes one more token of context costs the whole model, for the plan's cache types (llama.cpp's growing
    /// caches); std::nullopt when the runtime's rules state no such figure (vLLM, SGLang: see detail).
    std::optional<uint64_t> kv_bytes_per_token;
    /// Fixed state bytes of one sequence (recurrent layers); std::nullopt when the runtime states none.
    std::optional<uint64_t> state_bytes_per_sequence;
    bool starts = true;                 ///< the runtime would start with these settings (refusals empty)
    /// Starts and meets the request: every GPU within capacity - reserved (llama.cpp), the length and the
    /// concurrency asked (vLLM, SGLang), every layer on the GPU (Ollama). The CLI exits 0 when true, 3 when not.
    bool fits = false;
    std::vector<std::string> refusals;  ///< the runtime's own startup errors, verbatim where it has one
    std::vector<std::string> warnings;  ///< the model source's warnings, then the runtime's: shown in every output
    std::vector<std::string> notes;     ///< defaults taken, inputs assumed, estimates
    /// The assumptions the verdict rests on that no flag and no runtime rule decided: a kvfit constant (vLLM's activation
    /// peak, SGLang's CUDA context), a default ratio taken silently by the runtime, a checkpoint part estimated from its
    /// config (a vision tower). Each names its value and source; shown in every output, and `--strict` refuses a plan
    /// with any (kvfit::error "strict: N assumptions refused: ...").
    std::vector<std::string> assumptions;
    /// Nodes the plan spans, each with `machine::gpus` (vLLM --nodes); 1 for one machine: the report's device line
    /// says "2 nodes of 8 x H100" when more than 1.
    uint32_t nodes = 1;
    /// The runtime's own figures as typed sections, in print order (every runtime of the registry; empty: the text
    /// report prints the common lines, render_generic_text). Built by the runtime from its native plan, beside
    /// `detail` (the same figures for JSON readers, docs/json.md); the planner may append the runtime's words for its
    /// searches (runtime_info::search_sections).
    std::vector<plan_section> sections;
    /// true: `sections` are the whole text report after the warnings (llama.cpp: its model lines, figures, verdict and
    /// searches), which then ends with the units line; false: the report frames them with the device and model
    /// lines before, and the verdict, notes, the planner's searches and the launch after (vLLM, SGLang, Ollama, mlx-lm).
    bool sections_complete = false;
    /// The host's RAM verdict when the runtime gives one (llama.cpp); std::nullopt otherwise.
    std::optional<host_ram_verdict> host_ram;
    /// The runtime's words for `--check` and charts (plan_words); empty = the common words.
    plan_words words;
    /// with GPUs: the largest context per cache type (planner), for every runtime (vLLM's and mlx-lm's own figures,
    /// detail.max_model_len_fit and detail.max_context_fit, stay beside it: docs/json.md)
    std::vector<context_limit> max_context;
    std::vector<alternative> alternatives;  ///< when it does not fit: settings that would (planner)
    /// The command a person pastes unchanged to run this plan; when it does not fit, the command of the planner's
    /// first alternative that keeps the model on the GPUs (the largest context, else fewer sequences, ...: plan.h
    /// plan_model); "" when there is none.
    std::string launch;
    /// Runtime-specific figures, documented per runtime in docs/json.md (llama.cpp: contexts, placement, recurrent
    /// state; vLLM: groups, blocks, per-rank budget; SGLang: the pool; Ollama: its choices and the llama.cpp plan).
    nlohmann::ordered_json detail = nlohmann::ordered_json::object();
};

// --- flags ---------------------------------------------------------------------------------------------------

/// How a flag's value is written (the CLI registers it so; the HTTP API reads a JSON value so).
enum class flag_type : uint8_t {
    text,     ///< a word: "q8_0", "auto"
    count,    ///< a whole number: 8192
    size,     ///< bytes with an optional unit: "10GiB"
    fraction, ///< a number in (0, 1]: 0.92
    boolean,  ///< present or not (JSON true / false)
    list,     ///< repeatable, or comma-separated: -c 8192,32768
};

/// What a flag sets, in terms every runtime shares: the key that turns one runtime's flag into another's in the
/// CLI's hints ("-c/--ctx-size is a llama.cpp flag; with --runtime vllm use --max-model-len": flag_for_setting).
/// A runtime has at most one flag per setting (tests/test_flags.cpp); most flags set nothing shared (none).
enum class flag_setting : uint8_t {
    none,          ///< a setting of this runtime only (--swa-full, --block-size), or an input of kvfit's
    context,       ///< the context the plan is made at: llama.cpp -c, vLLM --max-model-len, SGLang --context-length,
                   ///< Ollama num_ctx, mlx-lm's tokens per sequence (runtime_info::context.flag)
    concurrency,   ///< sequences served at once: llama.cpp -np, vLLM --max-num-seqs, SGLang --max-running-requests,
                   ///< OLLAMA_NUM_PARALLEL, mlx-lm's sequences decoded together
    cache_type_k,  ///< the K cache's type, a flag of its own: llama.cpp -ctk
    cache_type_v,  ///< the V cache's type, a flag of its own: llama.cpp -ctv
    cache_type,    ///< K and V by one flag (vLLM's and SGLang's --kv-cache-dtype, OLLAMA_KV_CACHE_TYPE, mlx-lm
                   ///< --kv-bits): it answers for cache_type_k and cache_type_v (runtime_info::cache_type_k)
    flash_attn,    ///< flash attention on or off: llama.cpp -fa, OLLAMA_FLASH_ATTENTION
    memory_margin, ///< GPU memory the runtime leaves unused: llama.cpp --fit-target (kvfit's --margin), vLLM
                   ///< --gpu-memory-utilization, SGLang --mem-fraction-static, Ollama's LLAMA_ARG_FIT_TARGET
};

/// The setting's name as tests and docs write it: "context", "cache_type_k", "none".
std::string_view flag_setting_name(flag_setting s);

/// One flag a runtime accepts, spelled as the runtime spells it: the one table of a runtime's flags that the CLI
/// registers (names, metavars), `kvfit exec` and `kvfit fit-params` read a command line with (every spelling), the
/// HTTP API reads JSON by (json_name) and the hints cross runtimes by (setting). The spellings are the runtime's
/// own: llama.cpp's as common/arg.cpp registers them (common_arg({"-ngl", "--gpu-layers", "--n-gpu-layers"}, ...)),
/// vLLM's as vllm/engine/arg_utils.py, SGLang's as sglang/srt/server_args.py; Ollama and mlx-lm are configured by
/// environment variables, Modelfile parameters and Python arguments, which engine_name names beside kvfit's flag.
struct flag_spec {
    std::string_view name;            ///< long flag: "--max-model-len"
    std::string_view alias;           ///< the short flag people type: "-c", "-tp", "" for none
    std::string_view help;            ///< one line, for --help and GET /v1/runtimes
    flag_type type = flag_type::text; ///< how its value is written
    /// The value's name in --help: "INT[,INT...]", "TYPE", "FILE", "SIZE"; "" = by type (INT for a count, SIZE,
    /// FLOAT, VALUE[,VALUE...] for a list, VALUE for text; none for a boolean): value_name().
    std::string_view metavar = "";
    flag_setting setting = flag_setting::none; ///< what it sets across runtimes (hints)
    /// The runtime's other spellings of the flag, read from a command line as `name` (llama-server's --gpu-layers
    /// for --n-gpu-layers, --swa-checkpoints for --ctx-checkpoints); --help shows name and alias only.
    std::vector<std::string_view> alternates = {};
    /// The setting as the engine itself names it where `name` is kvfit's flag for it, not the engine's: Ollama's
    /// environment variable ("OLLAMA_NUM_PARALLEL") or Modelfile parameter ("PARAMETER num_ctx"); "" when the
    /// runtime's command line takes `name` itself. The hints show it: "--num-parallel (OLLAMA_NUM_PARALLEL)".
    std::string_view engine_name = "";
    /// The JSON and Python name: the long flag without "--", '-' as '_': "--max-model-len" -> "max_model_len".
    std::string json_name() const;
    /// Every spelling, the one people type first: alias (when any), name, then the alternates:
    /// {"-ngl", "--n-gpu-layers", "--gpu-layers"}.
    std::vector<std::string_view> spellings() const;
    /// True when `word` is one of spellings() ("--gpu-layers" is --n-gpu-layers).
    bool spelled(std::string_view word) const;
    /// metavar, or the type's name when there is none ("INT" for a count); "" for a boolean.
    std::string_view value_name() const;
};

/// The flag of `flags` that `word` spells (spellings()), or nullptr: "-ngl", "--gpu-layers" and "--n-gpu-layers"
/// all find --n-gpu-layers in llamacpp_flags().
const flag_spec * find_flag_spelled(const std::vector<flag_spec> & flags, std::string_view word);

/// Flag values by JSON name (flag_spec::json_name), exactly as typed: the CLI's text, or the HTTP body's value as
/// text (numbers in decimal, booleans "true"/"false"). Each runtime parses its own values, so the CLI and the API
/// give the same messages for the same mistake.
class flag_values {
public:
    /// Set a flag to one value, replacing any before.
    void set(std::string_view name, std::string value);
    /// Append a value (list flags: -c 8192 -c 32768).
    void add(std::string_view name, std::string value);
    /// Forget a flag.
    void erase(std::string_view name);
    /// True when the flag was given.
    bool has(std::string_view name) const;
    /// The flag's last value, or `fallback` when it was not given.
    std::string text(std::string_view name, std::string_view fallback = "") const;
    /// Every value given (empty when none).
    std::vector<std::string> list(std::string_view name) const;
    /// A boolean flag: given and not "false".
    bool boolean(std::string_view name) const;
    /// All flags given, by name.
    const std::map<std::string, std::vector<std::string>, std::less<>> & all() const { return values_; }

private:
    std::map<std::string, std::vector<std::string>, std::less<>> values_;
};

/// A whole number for `flag` in [min, max]: "-c 8192". Rejects signs, fractions, exponents and trailing text:
/// "-c 0: must be at least 1", "-c '-1': expected a positive integer", "-ub 99999999: too large (at most 1048576)",
/// "-c 99999999999999999999: too large (at most 4294967296)" (past 2^64 - 1 too, not "expected an integer").
uint64_t parse_flag_count(std::string_view flag, std::string_view text, uint64_t min, uint64_t max);

// --- the registry ----------------------------------------------------------------------------------------------

/// Values a knob is searched over: lo, lo + step, ... <= hi. step 0: the knob does not apply to this model.
struct knob_range {
    uint64_t lo = 0, hi = 0, step = 0;
};

/// The top of every runtime's context search when the model states no training context (no max_position_embeddings
/// or the like: a hand-written config): 1,048,576 tokens. One value for all runtimes, so that "the largest context
/// that fits" of one model does not depend on which runtime searched it; the engines themselves fall back to 2,048
/// there (vLLM _get_and_verify_max_len, SGLang get_context_length).
inline constexpr uint64_t k_context_search_top = 1ull << 20;

/// A setting the planner's search may turn (plan.h) to answer "what would fit instead". GPU memory must be
/// monotone in it (search.h).
struct knob {
    std::string_view name;      ///< "context", "n_gpu_layers", "n_cpu_moe"
    std::string_view flag;      ///< JSON name of the flag it sets: "ctx_size"; "" = the runtime has no such knob
    std::string_view spelled;   ///< the flag as people type it, for alternative::flags: "-c", "-ngl", "--n-cpu-moe"
    bool smallest = false;      ///< false: more needs more memory (search the largest that fits); true: the smallest
    /// The values to search for this model and these flags (llama.cpp's context: 256 x streams up to n_ctx_train).
    knob_range (*range)(const model_desc & m, const flag_values & f) = nullptr;
    /// Flags set beside the knob while it is searched: {"n_cpu_moe", "0"} while -ngl is.
    std::vector<std::pair<std::string_view, std::string_view>> with;
    /// The flag's text for value v, as the runtime parses it and people type it (vLLM's utilization in hundredths:
    /// 95 -> "0.95"); nullptr = v in decimal.
    std::string (*value_text)(uint64_t v) = nullptr;
    /// true: the knob moves part of the model to host memory (-ngl, --n-cpu-moe): a partial fit, slower; the ranking
    /// (ranking.h), which files a model under "fits" only when it fits fully, does not turn it.
    bool offloads = false;
};

/// One runtime: its name, its flags, its planner and the knobs the planner may turn.
struct runtime_info {
    std::string_view name;    ///< --runtime value and registry key: "llama.cpp", "vllm", "sglang", "ollama"
    std::string_view display; ///< as people write it: "llama.cpp", "vLLM", "SGLang", "Ollama"
    std::string_view summary; ///< one line for --help and GET /v1/runtimes
    /// The runtime's own flags (the common ones, --gpu --weights --weights-size --runtime MODEL --json --check
    /// --chart --offline --verbose, belong to the planner and the CLI).
    const std::vector<flag_spec> & (*flags)() = nullptr;
    /// Checks the flags' values without a model (flag errors come before the model is read). Throws kvfit::error.
    void (*check_flags)(const flag_values & f) = nullptr;
    /// Gives weight bytes to a model whose file has none and for which neither --weights nor --weights-size was
    /// given (llama.cpp and Ollama: q4_k_m; vLLM, SGLang: the checkpoint's dtype), with a warning saying so.
    void (*default_weights)(model_desc & m, std::vector<std::string> & warnings) = nullptr;
    /// The model as this runtime builds it from its source, before any plan (nullptr: unchanged). llama.cpp and
    /// Ollama: llamacpp_adapt_model (a sliding window the architecture does not read is full attention, with a
    /// warning). Called by make_plan and the ranking after the model is loaded.
    void (*adapt_model)(model_desc & m, std::vector<std::string> & warnings) = nullptr;
    /// The plan. Parses its flags itself; throws kvfit::error for settings the runtime rejects outright.
    runtime_plan (*plan)(const model_desc & m, const flag_values & f, const machine & mc) = nullptr;
    /// The runtime's own words for the planner's searches (runtime_plan::max_context, alternatives, launch), called
    /// by plan_model once they are done: appends them to p.sections (llama.cpp: the largest -c per -ctk/-ctv, what
    /// would fit instead and the launch, under its fit section; src/runtimes/llamacpp/sections.cpp). nullptr: the
    /// text report prints the common search lines (flag names from this registry entry).
    void (*search_sections)(const model_desc & m, runtime_plan & p) = nullptr;
    /// plan(m, f, mc).fits without the figures only reports read (detail, launch, notes): what the planner's
    /// searches call at every probe (plan.h). Throws what plan throws. nullptr: the planner calls plan.
    bool (*fits)(const model_desc & m, const flag_values & f, const machine & mc) = nullptr;
    knob context;                               ///< the context setting (always searched first)
    /// Knobs searched when a plan does not fit, in order (the context knob among them: its result is the launch).
    /// Each runtime registers its context and its concurrency setting here (llama.cpp -c, vLLM --max-model-len and
    /// --max-num-seqs, SGLang --context-length and --max-running-requests, Ollama num_ctx and OLLAMA_NUM_PARALLEL,
    /// mlx-lm --context-tokens and --num-sequences).
    std::vector<knob> knobs;
    /// Cache types the planner finds the largest context for, highest precision first; [0] = the runtime's default.
    /// Every one the planner may also offer as an alternative ("cache_type") at the requested context.
    std::vector<std::string_view> cache_types;
    /// JSON names of the cache-type flags: K and V ("" = none). A runtime with one flag for both (vLLM's and SGLang's
    /// --kv-cache-dtype, OLLAMA_KV_CACHE_TYPE, mlx-lm's --kv-bits) names it as cache_type_k and leaves cache_type_v "".
    std::string_view cache_type_k, cache_type_v;
    /// The cache type that means "the flag not given" when the flag has no spelling for the default (mlx-lm's
    /// --kv-bits: "none" = the model's dtype); the planner erases the flag for it. "" = every type is spelled.
    std::string_view cache_type_unset;
};

/// rt's flag that sets `s` (a flag tagged cache_type answers cache_type_k and cache_type_v), or nullptr when rt
/// has none or s is none: flag_for_setting(vllm, flag_setting::concurrency) is --max-num-seqs.
const flag_spec * flag_for_setting(const runtime_info & rt, flag_setting s);

/// The flag whose JSON name is `json_name` as people type it: its short alias, else its long name ("-ctk",
/// "--kv-cache-dtype"); the JSON name itself when rt has no such flag.
std::string flag_spelling(const runtime_info & rt, std::string_view json_name);

/// `f` with K and V of cache type `type` (both of rt's cache-type flags set; the flag erased for
/// rt.cache_type_unset): what the planner's max_context rows, the ranking and the charts plan each type with.
flag_values with_cache_type(const runtime_info & rt, flag_values f, std::string_view type);

/// The cache type `f` asks for: rt's K flag as given, rt.cache_type_unset when that names the default and the flag
/// is absent, else rt.cache_types[0]; "" when the runtime registers no cache types.
std::string requested_cache_type(const runtime_info & rt, const flag_values & f);

/// Every runtime, llama.cpp first (src/runtimes/registry.cpp).
const std::vector<runtime_info> & runtimes();

/// The runtime called `name`, its case ignored ("vLLM" is vllm). Throws kvfit::error "--runtime 'x': expected llama.cpp,
/// vllm, sglang, ollama, mlx".
const runtime_info & find_runtime(std::string_view name);

} // namespace kvfit
