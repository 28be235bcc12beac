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
    /// "equal_context" (one context for every model), "utilization_split" (vLLM: each instance's smallest
    /// --gpu-memory-utilization that fits alone, the rest of the GPU shared equally) or "fraction_split" (SGLang: in
    /// start order, each server's smallest --mem-fraction-static that fits beside the ones before it) or
    /// "gpu_assignment" (several GPUs: each model's process shown one GPU, CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES,
    /// the models of one GPU co-located by the runtime's rule; not for Ollama, whose scheduler places runners itself)
    std::string kind;
    /// per model, what sets it: "-c 12288", "--gpu-memory-utilization 0.45", "CUDA_VISIBLE_DEVICES=1 (GPU1, L40S)"
    std::vector<std::string> flags;
    std::vector<uint64_t> values;     ///< per model: tokens (equal_context), hundredths (the splits) or a GPU index
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
    bool fits = false;                     ///< every model's plan fits in the set, every GPU within its capacity
    std::vector<std::string> refusals;     ///< why the set does not run together (one line each)
    std::vector<std::string> warnings;     ///< set-level assumptions (each model's own are in its plan)
    std::vector<set_alternative> alternatives; ///< when it does not fit: joint changes that make it fit
    /// when it does not fit: the joint changes searched, in words ("an equal -c", "one GPU per model"), found or not
    std::vector<std::string> tried;
};

/// Loads member `i`'s model (the CLI: load_model of its MODEL).
using set_model_loader = std::function<model_desc(size_t i, warnings & warn)>;

/// Plan a set. Each member goes through make_plan (its flags checked, weights applied) alone on the machine, then
/// is planned in the set by its runtime's co-location rule (above); the GPUs' sums and the verdict follow. When the
/// set does not fit: the largest context equal for every model that fits together (search.h over the context
/// knob's range common to all), for vLLM the --gpu-memory-utilization split and for SGLang the --mem-fraction-static
/// split (set_alternative) - each verified by planning the set again.
/// Throws kvfit::error: "a set needs at least 2 models", "a set of 17 models exceeds the limit 16", "model 2:
/// --runtime vllm differs from model 1's llama.cpp: a set runs under one runtime", and whatever make_plan throws,
/// prefixed with the model's number and name ("model 2 (Qwen3-8B): -c 0: must be at least 1"); with --strict also
/// for the set's own warnings ("strict: 1 warning refused: each of the 2 llama-server processes holds ...").
set_result plan_set(const set_request & q, const set_model_loader & load, const gpu_parser & parse_gpus = {});

/// Read a set from a JSON body (POST /v1/plan, the Python module's plan_set): "models" is an array of 2..16 model
/// names or objects; an object's fields (its "model", and runtime flags by JSON name) replace the body's for that
/// model; the body's other fields are every model's (plan_request_from_json reads each merged body); "max_loaded" is
/// set_request::max_loaded. `extra_fields` are passed to plan_request_from_json (the server's uploads); `bodies`,
/// when given, receives each model's merged body (the server reads uploads from it). Throws kvfit::error
/// "request: field 'models': expected an array of models", "request: field 'models' item 3: expected a name or an
/// object", "request: field 'models' item 1: names no model (a set has no default model)" (an object with no
/// "model" nor any of `extra_fields`, the body's included), "request: field 'models' item 1: model: empty value",
/// "request: 'model' and 'models' together: put each model in 'models'", "request: field 'max_loaded': expected a
/// whole number from 0 to 1024", "a set of 17 models exceeds the limit 16", and what plan_request_from_json throws.
set_request set_request_from_json(nlohmann::json body, const std::vector<std::string> & extra_fields = {},
                                  std::vector<nlohmann::json> * bodies = nullptr);

/// Split a command-line model with per-model settings, `MODEL@-c=32768,-np=2,--kv-unified`, into the model and its
/// flags by JSON name for runtime `rt` (a flag spelled as the runtime spells it, long or short; `=VALUE` for a
/// valued flag, nothing for a boolean). Only an '@' followed by '-' starts settings (hf:org/name@rev stays a model).
/// Throws kvfit::error: "MODEL@...: '-x' is not a llama.cpp flag", "MODEL@...: '-c' needs a value (-c=32768)",
/// "MODEL@...: '--kv-unified' takes no value".
std::pair<std::string, flag_values> parse_set_member(const std::string & text, const runtime_info & rt);

} // namespace kvfit
