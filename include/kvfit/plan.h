#pragma once
/// @file plan.h
/// The planner: one request (the CLI's flags or a `POST /v1/plan` body) -> the selected runtime's plan, plus the
/// searches that answer "what would fit instead" by turning the runtime's knobs (runtime.h) with the one monotone
/// search (search.h). Both front doors go through make_plan, so they print the same figures and the same one-line
/// error for the same input. The planner never formats (report.h) and knows no runtime's rules.
///
/// Common flag      JSON field (POST /v1/plan)   Example
/// MODEL            "model"                      "Qwen3.5-9B" (HTTP: catalog names only, no paths)
/// --runtime        "runtime"                    "llama.cpp" (default), "vllm", "sglang", "ollama"
/// --gpu            "gpu"                        "8GiB", "RTX 4060", "2xH100"
/// --weights        "weights"                    "q4_k_m"
/// --weights-size   "weights_size"               "6.6GB"
/// --strict         "strict"                     true: every warning (an assumption kvfit made) is an error
/// Every other field is a flag of the selected runtime by its JSON name (flag_spec::json_name): "ctx_size",
/// "cache_type_k", "max_model_len", "tensor_parallel_size", ... (llamacpp.h, vllm.h, sglang.h, ollama.h).

#include "kvfit/runtime.h"
#include "kvfit/sources.h"

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kvfit {

/// One request: the common flags as text (empty = not given) and the runtime's own flags.
struct plan_request {
    std::string runtime = "llama.cpp"; ///< --runtime: a registry name
    std::string model;                 ///< catalog name, config.json, model directory, .gguf or hf:org/name (CLI)
    std::string gpu;                   ///< --gpu: names or sizes
    std::string weights;               ///< --weights: weight format
    std::string weights_size;          ///< --weights-size: total weight size
    bool strict = false;               ///< --strict: the source's warnings (assumptions) are refused
    flag_values flags;                 ///< the runtime's flags by JSON name, as typed
};

/// A plan and what it was made from: what every renderer (report.h) and chart (chart.h) reads.
struct plan_result {
    model_desc model;                  ///< the model as planned (weights applied)
    const runtime_info * runtime = nullptr; ///< the runtime planned (an entry of runtimes())
    flag_values flags;                 ///< the runtime's flags as given
    machine target;                    ///< the machine planned on (its GPUs)
    runtime_plan plan;                 ///< the runtime's plan, with the planner's searches filled in
};

/// Turns `--gpu` text into devices. The default is parse_gpu_list (names and sizes); the CLI passes one that
/// also takes "auto" (detect the machine's GPUs), which the server does not offer.
using gpu_parser = std::function<std::vector<device_spec>(const std::string & gpu)>;

/// Loads the request's model: the CLI calls load_model(q.model), the server reads the catalog or an upload.
using model_loader = std::function<model_desc(warnings & warn)>;

/// Apply --weights-size (wins) or --weights to a loaded model (formats forced over exact weights). With neither,
/// a model without exact weights (a config.json) gets the runtime's default_weights and its warning. Throws
/// kvfit::error for an unknown format or a bad size.
void apply_request_weights(model_desc & m, const plan_request & q, const runtime_info & rt, warnings & warn);

/// Plan a loaded model: the runtime's plan (source warnings first in its warnings), then, on GPUs, the searches:
/// - max_context: for each of rt.cache_types (and the requested types), the largest value of the context knob that
///   fits with K and V of that type, and the same for all_full_attention_variant(m) at the requested types; a type
///   the runtime refuses with these flags is a row with allowed false and the runtime's message;
/// - when the plan does not fit: alternatives, each one setting changed from the request: each of rt.knobs in order
///   (the largest context, the most sequences, the largest -ngl, the smallest --n-cpu-moe, the smallest memory
///   fraction that fits); when none of them keeps the model on the GPUs, the context with one other such knob
///   ("context+sequences": the largest context with the knob at its least memory, then the most of the knob at that
///   context); then the first other cache type of max_context that fits at the requested context. The
///   command of the first that keeps the model on the GPUs (knob::offloads false) becomes plan.launch ("" when none).
/// Throws kvfit::error from the runtime's plan.
plan_result plan_model(const runtime_info & rt, model_desc m, const warnings & source_warnings, const flag_values & f,
                       machine mc);

/// The one path from a request to a plan, in the CLI's order: the runtime, its flags (check_flags), --gpu (flag
/// errors first), `load`, apply_request_weights, plan_model. The GPUs' compute capability comes from the GPU table
/// (gpus.h). Throws kvfit::error from any of them, and with q.strict for any warning of the model's source or of the
/// weights assumed: "--strict: 2 warnings refused: <warning>; <warning>".
plan_result make_plan(const plan_request & q, const model_loader & load, const gpu_parser & parse_gpus = {});

/// The largest value of rt's context knob that fits `mc` with flags `f` (search.h over knob.range); 0 when none
/// does or the runtime has no context knob. `limit` (when non-zero) caps the search below the knob's range.
uint64_t largest_context(const runtime_info & rt, const model_desc & m, const flag_values & f, const machine & mc,
                         uint64_t limit = 0);

/// `f` with knob `k` at value v, as the runtime parses it (knob::value_text) and with the knob's `with` flags.
flag_values with_knob(flag_values f, const knob & k, uint64_t v);

/// The knob's flag and value as people type it: "--max-num-seqs 90", "--gpu-memory-utilization 0.95".
std::string knob_flags(const knob & k, uint64_t v);

/// The value of knob `k` of rt that fits `mc` with flags `f`: the largest on k.range, or the smallest when
/// k.smallest (search.h); std::nullopt when none does or the knob does not apply (step 0). Throws what rt's plan
/// throws at a probe.
std::optional<uint64_t> knob_fit(const runtime_info & rt, const knob & k, const model_desc & m, const flag_values & f,
                                 const machine & mc, uint64_t limit = 0);

/// Read a `POST /v1/plan` body into a plan_request: the common fields above, and the selected runtime's flags by
/// JSON name (booleans as true/false; lists as an array, a number or a comma-separated string; everything else a
/// string or a number). Numbers become their decimal text so they meet the CLI's own checks (-c 0 gives "-c 0: must
/// be at least 1" on both doors). Fields named in `extra_fields` are left to the caller. Throws kvfit::error
///   "request: expected a JSON object, got array",
///   "request: unknown field 'ctx' (known: model, runtime, gpu, weights, weights_size, strict, ctx_size, ...)",
///   "request: field 'max_model_len' is a vLLM flag, not one of llama.cpp's (set \"runtime\": \"vllm\")",
///   "request: field 'kv_unified': expected true or false, got string",
///   "request: field 'gpu': expected a string or a number, got object",
///   "request: field 'ctx_size': 65 values exceed the limit 64",
///   "request: spec_draft_model (-md) reads a local file: only the command line takes it".
plan_request plan_request_from_json(const nlohmann::json & body, const std::vector<std::string> & extra_fields = {});

} // namespace kvfit
