#pragma once
/// @file request.h
/// One request, two front doors: the CLI's flags and the HTTP API's `POST /v1/plan` body both become a
/// `plan_request` (the flags as text, exactly as typed), and make_report_from_request turns it into the
/// report. Both front doors therefore print the same JSON and the same one-line error for the same input.
///
/// Flag            JSON field (POST /v1/plan)     Example
/// MODEL           "model"                        "Qwen3.5-9B" (HTTP: catalog names only, no paths)
/// -c              "ctx_size"                     [8192, 32768] or 8192 or "8192,32768"
/// -ctk / -ctv     "cache_type_k" / "cache_type_v" "q8_0"
/// -fa             "flash_attn"                   "on" | "off" | "auto" (or 1, 0, true, false, -1, as llama.cpp)
/// -ub / -b / -np  "ubatch_size" / "batch_size" / "parallel"   512
/// --gpu           "gpu"                          "8GiB", "RTX 4060", "2xH100"
/// --margin        "margin"                       "1GiB"
/// --weights       "weights"                      "q4_k_m"
/// --weights-size  "weights_size"                 "6.6GB"
/// -ngl -ts -ot    "n_gpu_layers" "tensor_split" "override_tensor"
/// --kv-unified --swa-full --mla-kv --no-kv-offload --cpu-moe  (JSON booleans)
/// --n-cpu-moe     "n_cpu_moe"
/// --llamacpp-version "llamacpp_version"        "5b4ebc5" | "v0.5.0"

#include "kvfit/report.h"

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace kvfit {

/// The planning flags of the CLI, as text. Empty strings mean "not given" (the CLI's defaults apply).
struct plan_request {
    std::string model;                     ///< catalog name, config.json, model directory or .gguf (CLI)
    std::vector<std::string> ctx_size;     ///< -c values; each may hold a comma-separated list
    std::string cache_type_k = "f16";      ///< -ctk
    std::string cache_type_v = "f16";      ///< -ctv
    std::string flash_attn = "auto";       ///< -fa: on, off or auto (parse_flash_attn_flag)
    std::string ubatch_size;               ///< -ub, tokens
    std::string batch_size;                ///< -b, tokens
    std::string parallel;                  ///< -np, sequences
    bool kv_unified = false;               ///< --kv-unified
    bool swa_full = false;                 ///< --swa-full
    bool mla_kv = false;                   ///< --mla-kv
    std::string llamacpp_version;          ///< --llamacpp-version: 5b4ebc5 or v0.5.0 (empty: the newest)
    std::string gpu;                       ///< --gpu: names or sizes
    std::string margin;                    ///< --margin: size kept free per GPU
    std::string weights;                   ///< --weights: weight format
    std::string weights_size;              ///< --weights-size: total weight size
    std::string n_gpu_layers;              ///< -ngl: number, "all" or "auto"
    bool no_kv_offload = false;            ///< --no-kv-offload
    std::string tensor_split;              ///< -ts: proportions "3,1"
    std::vector<std::string> override_tensor; ///< -ot rules "PATTERN=CPU"
    bool cpu_moe = false;                  ///< --cpu-moe
    std::string n_cpu_moe;                 ///< --n-cpu-moe
};

/// The request's flags parsed into the planner's inputs (everything but the model).
struct plan_inputs {
    llamacpp_settings settings;            ///< cache types, batch sizes, sequences, flash attention
    placement_settings placement;          ///< -ngl, -ts, -ot, --no-kv-offload, MoE on the CPU
    std::vector<uint64_t> contexts;        ///< -c values, tokens (empty: the report's defaults)
    std::vector<device_spec> gpus;         ///< --gpu (empty: no fit question)
    uint64_t margin_bytes = default_margin_bytes; ///< --margin
};

/// Turns `--gpu` text into devices. The default is parse_gpu_list (names and sizes); the CLI passes one that
/// also takes "auto" (detect the machine's GPUs), which the server does not offer.
using gpu_parser = std::function<std::vector<device_spec>(const std::string & gpu)>;

/// Parse the flags. Throws kvfit::error with the CLI's one-line messages, for example
/// "-c 0: must be at least 1", "-ctk 'q9_9': unknown cache type (allowed: f32, ...)",
/// "-fa 'maybe': expected on, off or auto (or 1, 0, true, false, -1)", "-ts '3,x': expected non-negative proportions like 3,1".
plan_inputs parse_plan_request(const plan_request & q, const gpu_parser & parse_gpus = {});

/// Apply --weights-size (wins) or --weights to a loaded model, as the CLI does (formats forced over exact
/// weights). With neither, a model without exact weights (a config.json) gets default_weight_format and a
/// warning saying so. Throws kvfit::error for an unknown format or a bad size.
void apply_request_weights(model_desc & m, const plan_request & q, warnings & warn);

/// Loads the request's model: the CLI calls load_model(q.model), the server reads the catalog or an upload.
using model_loader = std::function<model_desc(warnings & warn)>;

/// The one path from flags to report, in the CLI's order: parse_plan_request (flag errors first), `load`,
/// apply_request_weights, make_report. Throws kvfit::error from any of them.
report make_report_from_request(const plan_request & q, const model_loader & load, const gpu_parser & parse_gpus = {});

/// Read a `POST /v1/plan` body into a plan_request. Numbers become their decimal text so they meet the
/// CLI's own checks (-c 0 gives "-c 0: must be at least 1" on both doors). Fields not in the table above
/// (except those listed in `extra_fields`, which the caller reads) are refused:
///   "request: unknown field 'ctx' (known: model, ctx_size, cache_type_k, ...)".
/// Throws kvfit::error "request: expected a JSON object, got array", "request: field 'kv_unified': expected
/// true or false, got string", "request: field 'gpu': expected a string or a number, got object", and
/// "request: field 'ctx_size': 65 values exceed the limit 64".
plan_request plan_request_from_json(const nlohmann::json & body, const std::vector<std::string> & extra_fields = {});

} // namespace kvfit
