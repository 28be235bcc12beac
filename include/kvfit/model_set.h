#pragma once
/// @file model_set.h
/// A set of models that share one machine (`kvfit MODEL MODEL ... --gpu ...`, issue 28): each model's plan as the
/// runtime co-locates it, the devices' sums, one verdict for the set and the joint solve ("what would fit together").
///
/// How each runtime co-locates models (co-location rule per runtime; the reason each is modelled so):
/// - llama.cpp: one llama-server process per model. llama-server's router (`--models-dir`, `--models-max`) starts one
///   child process per model (tools/server/server-models.cpp: `server_subproc`, a sheredom/subprocess child per
///   `server_models::load`) and unloads the least recently used one past `--models-max` (`unload_lru`); separate
///   llama-server processes are the same. Each process pays its own weights, KV and compute buffers, and sizes its
///   split and `--fit` from the memory free when it loads: planned in order, each on what the ones before it left.
/// - Ollama: one llama-server runner per model; the scheduler loads a model beside the others only when it fits the
///   free VRAM, else unloads an idle one (server/sched.go), and keeps at most OLLAMA_MAX_LOADED_MODELS (default
///   `defaultModelsPerGPU` = 3 x the GPUs, server/sched.go) loaded: planned in order on what is left; models past
///   the maximum, or that do not fit, are evicted, so the set does not run together.
/// - vLLM: one instance per model. Each instance's budget is its own `--gpu-memory-utilization` x the GPU's total
///   (`requested_memory = init_snapshot.total_memory * gpu_memory_utilization`), and it refuses to start when the
///   memory free at its start is below that ("Free memory on device ... is less than desired GPU memory
///   utilization", vllm/v1/worker/gpu_worker.py init_device): instances started in order fit when the sum of their
///   budgets (the buffers each plan holds) is at most the GPU's total.
/// - SGLang: one server per model; `--mem-fraction-static` is a fraction of the memory free when the weights start
///   to load (model_runner.py: `pre_model_load_free` / `get_available_gpu_memory`): planned in order, each on what
///   the ones before it hold.
/// - MLX: one mlx-lm process per model on one unified memory; each process's Metal working-set limit is the same
///   device figure (recommendedMaxWorkingSetSize), so the set fits when the sum of the plans is within it.

#include "kvfit/plan.h"

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// At most this many models in one set (a bound on the work, not a runtime's limit).
inline constexpr size_t max_set_models = 16;

/// A set request: one plan_request per model (the same runtime, --gpu and --strict for all; the flags may differ).
struct set_request {
    std::vector<plan_request> members; ///< in start order: 2..max_set_models
    /// llama.cpp: llama-server's `--models-max` of the router (0 = not given: separate processes, no limit);
    /// Ollama: OLLAMA_MAX_LOADED_MODELS (0 = Ollama's default, 3 x the GPUs). Ignored by the other runtimes.
    uint32_t max_loaded = 0;
    /// Each model's weight for the joint context solve, in thousandths (1000 = weight 1; 1 .. 1,000,000 = 0.001 ..
    /// 1000), in set order; empty = none given (the equal context). With weights, the solve finds the largest t for
    /// which every model at weight x t tokens (rounded down to its runtime's context step) fits together
    /// (set_alternative "weighted_context"), whether or not the set fits as given. parse_set_weight reads one.
    std::vector<uint32_t> weights;
};

/// Weight 1 in set_request::weights.
inline constexpr uint32_t set_weight_one = 1000;

/// Read one weight of `MODEL@weight=W` / `{"weight": W}`: a decimal number from 0.001 to 1000 with at most 3 decimals
/// ("2", "1.5", "0.25"), returned in thousandths. Throws kvfit::error "weight '0': expected a number from 0.001 to
/// 1000 (at most 3 decimals)" for 0, a negative, an exponent, nan, text or more decimals.
uint32_t parse_set_weight(std::string_view text);

/// A weight in thousandths as people write it: 2000 -> "2", 1500 -> "1.5", 250 -> "0.25".
std::string set_weight_text(uint32_t thousandths);

/// The machine's host RAM under the set: every model's host part and the sum, with a verdict when the RAM is known.
/// Each process holds its own host buffers, so they add up; a GGUF mapped by several processes (the same MODEL and
/// weights twice) is one page cache, counted once at its largest (the kernel shares a file's pages between mappings:
/// mmap(2) MAP_SHARED, llama-mmap.cpp maps the file read-only shared).
struct set_host {
    /// Each model's host RAM as its plan states it, bytes, in set order: the plan's host RAM need
    /// (detail.host_ram.needed_bytes: host buffers, mapped weights as page cache, projector, adapters, context
    /// checkpoints at their limit; llama.cpp with --ram, --gpu auto or a host flag, src/runtimes/llamacpp/host_ram.cpp),
    /// else the bytes of its host device (weights kept on the CPU, KV and compute buffers there); 0 when none.
    std::vector<uint64_t> member_bytes;
    /// Of member_bytes[i], the mapped weights' page cache that another model of the set maps too (counted once).
    std::vector<uint64_t> shared_bytes;
    uint64_t used_bytes = 0;       ///< the sum of member_bytes less shared_bytes
    /// used_bytes plus each llama-server's prompt cache at its --cache-ram limit (evicted within it, so a warning only)
    uint64_t with_cache_bytes = 0;
    uint64_t capacity_bytes = 0;   ///< the machine's RAM (--ram, or detected under --gpu auto); 0 = unknown
    bool known() const { return capacity_bytes > 0; } ///< a RAM to check against: the verdict applies
    bool fits() const { return !known() || used_bytes <= capacity_bytes; } ///< used within the RAM (true when unknown)
};

/// One GPU of the machine under the set: every model's share and the sum.
struct set_device {
    std::string name;                  ///< the GPU's name
    uint64_t capacity_bytes = 0;       ///< its memory as the runtime reads it (the single-model plan's capacity)
    /// Kept free: llama.cpp / Ollama the margin the last model started keeps; SGLang the last server's
    /// (1 - --mem-fraction-static) of what it saw; vLLM and MLX 0 (each budget is in its buffers).
    uint64_t reserved_bytes = 0;
    std::vector<uint64_t> member_bytes;///< each model's buffers on this GPU, in set order (0 when it has none here)
    uint64_t used_bytes = 0;           ///< the sum of member_bytes
    /// capacity - reserved - used (negative: short by that much).
    int64_t free_bytes() const { return int64_t(capacity_bytes) - int64_t(reserved_bytes) - int64_t(used_bytes); }
    bool fits() const { return free_bytes() >= 0; } ///< used + reserved <= capacity
};

/// A change to the whole set that makes it fit together (the joint solve), verified by planning the set again.
struct set_alternative {
    /// "equal_context" (one context for every model), "weighted_context" (set_request::weights: each model's context
    /// in proportion to its weight), "utilization_split" (vLLM: each instance's smallest
    /// --gpu-memory-utilization that fits alone, the rest of the GPU shared equally) or "fraction_split" (SGLang: in
    /// start order, each server's smallest --mem-fraction-static that fits beside the ones before it) or
    /// "gpu_assignment" (several GPUs: each model's process shown one GPU, CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES,
    /// the models of one GPU co-located by the runtime's rule; not for Ollama, whose scheduler places runners itself)
    std::string kind;
    /// per model, what sets it: "-c 12288", "--gpu-memory-utilization 0.45", "CUDA_VISIBLE_DEVICES=1 (GPU1, L40S)"
    std::vector<std::string> flags;
    std::vector<uint64_t> values;     ///< per model: tokens (the contexts), hundredths (the splits) or a GPU index
    /// weighted_context: t, the tokens of weight 1 before each model's rounding (values[i] = w_i x t rounded down to
    /// model i's context step); 0 for the other kinds
    uint64_t per_weight = 0;
    /// equal_context / weighted_context: the search reached the top of the range (a model's training context: the
    /// knob's upper end) with the set still fitting; larger contexts may fit too, past what the model was trained on
    bool capped = false;
};

/// The set's plan.
struct set_result {
    const runtime_info * runtime = nullptr;///< the runtime of every member
    std::string colocation;                ///< one line: how this runtime co-locates models, with its source
    std::vector<std::string> specs;        ///< each model as given (MODEL of the command line)
    /// Each model's plan as it runs in the set: planned in start order on what the earlier ones left (llama.cpp,
    /// Ollama, SGLang), or on the whole machine (vLLM, MLX: budgets of the total); the planner's searches included.
    std::vector<plan_result> plans;
    std::vector<bool> fits_alone;          ///< each model's plan on the whole machine, alone, fits
    std::vector<set_device> devices;       ///< the GPUs, in order (empty without --gpu)
    set_host host;                         ///< the host RAM every model's process holds, summed
    std::vector<uint32_t> weights;         ///< set_request::weights (empty: none given)
    /// every model's plan fits in the set, every GPU within its capacity, the host RAM within the machine's (when known)
    bool fits = false;
    std::vector<std::string> refusals;     ///< why the set does not run together (one line each)
    std::vector<std::string> warnings;     ///< set-level assumptions (each model's own are in its plan)
    /// when it does not fit: joint changes that make it fit; with weights, the weighted contexts also when it fits
    std::vector<set_alternative> alternatives;
    /// when it does not fit: the joint changes searched, in words ("an equal -c", "one GPU per model"), found or not
    std::vector<std::string> tried;
};

/// Loads member `i`'s model (the CLI: load_model of its MODEL).
using set_model_loader = std::function<model_desc(size_t i, warnings & warn)>;

/// Plan a set. Each member goes through make_plan (its flags checked, weights applied) alone on the machine, then
/// is planned in the set by its runtime's co-location rule (above); the GPUs' sums and the verdict follow. When the
/// set does not fit: the largest context equal for every model that fits together (search.h over the context
/// knob's range common to all), for vLLM the --gpu-memory-utilization split and for SGLang the --mem-fraction-static
/// split (set_alternative) - each verified by planning the set again. With weights (set_request::weights), the
/// weighted contexts replace the equal one and are searched whether or not the set fits. The host RAM of every
/// model adds up (set_host) and, with the RAM known (--ram, --gpu auto), is part of the verdict and of every search.
/// Throws kvfit::error: "a set needs at least 2 models", "a set of 17 models exceeds the limit 16", "model 2:
/// --runtime vllm differs from model 1's llama.cpp: a set runs under one runtime", and whatever make_plan throws,
/// prefixed with the model's number and name ("model 2 (Qwen3-8B): -c 0: must be at least 1"); with --strict also
/// for the set's own warnings ("strict: 1 warning refused: each of the 2 llama-server processes holds ..."),
/// "weights: 3 given for 2 models", "model 2: --ram 32GiB differs from model 1's 64 GiB: a set shares one machine's
/// RAM".
set_result plan_set(const set_request & q, const set_model_loader & load, const gpu_parser & parse_gpus = {});

/// Read a set from a JSON body (POST /v1/plan, the Python module's plan_set): "models" is an array of 2..16 model
/// names or objects; an object's fields (its "model", and runtime flags by JSON name) replace the body's for that
/// model; the body's other fields are every model's (plan_request_from_json reads each merged body); "max_loaded" is
/// set_request::max_loaded; an object's "weight" (a number or a string, parse_set_weight) is that model's weight
/// (set_request::weights; 1 for the others). `extra_fields` are passed to plan_request_from_json (the server's uploads); `bodies`,
/// when given, receives each model's merged body (the server reads uploads from it). Throws kvfit::error
/// "request: field 'models': expected an array of models", "request: field 'models' item 3: expected a name or an
/// object", "request: field 'models' item 1: names no model (a set has no default model)" (an object with no
/// "model" nor any of `extra_fields`, the body's included), "request: field 'models' item 1: model: empty value",
/// "request: 'model' and 'models' together: put each model in 'models'", "request: field 'models' item 2: weight
/// '0': expected a number from 0.001 to 1000 (at most 3 decimals)", "request: field 'weight': a weight is one
/// model's: give it in its 'models' item", "request: field 'max_loaded': expected a
/// whole number from 0 to 1024", "a set of 17 models exceeds the limit 16", and what plan_request_from_json throws.
set_request set_request_from_json(nlohmann::json body, const std::vector<std::string> & extra_fields = {},
                                  std::vector<nlohmann::json> * bodies = nullptr);

/// Split a command-line model with per-model settings, `MODEL@-c=32768,-np=2,--kv-unified` or `MODEL@weight=2,-np=2`,
/// into the model and its flags by JSON name for runtime `rt` (a flag spelled as the runtime spells it, long or
/// short; `=VALUE` for a valued flag, nothing for a boolean) and, into `*weight` (thousandths; left alone when not
/// given), its `weight=W` (parse_set_weight). Only an '@' followed by '-' or by 'weight=' starts settings
/// (hf:org/name@rev stays a model). Throws kvfit::error: "MODEL@...: '-x' is not one of llama.cpp's flags",
/// "MODEL@...: '-c' needs a value (-c=VALUE)", "MODEL@...: '--kv-unified' takes no value", "MODEL@...: weight '0':
/// expected a number from 0.001 to 1000 (at most 3 decimals)", "MODEL@...: 'weight' is given twice; give it once";
/// a weight with `weight` null: "MODEL@...: 'weight' is for a set of models".
std::pair<std::string, flag_values> parse_set_member(const std::string & text, const runtime_info & rt,
                                                     uint32_t * weight = nullptr);

} // namespace kvfit
