#pragma once
/// @file serving_report.h
/// Reports of the serving runtimes (vLLM, SGLang, Ollama): one plain struct holding the plan, rendered as text
/// (render_serving_text), as the --json document with its runtime_plan object (render_serving_json), and as the
/// launch command that realises the plan (serving_launch_command). Renderers compute nothing new.

#include "kvfit/serving.h"
#include "kvfit/sources.h"

#include <optional>
#include <string>
#include <vector>

namespace kvfit {

/// Version of the serving --json document; bumped when a key changes meaning or disappears.
inline constexpr int serving_json_schema_version = 1;

/// Everything the serving renderers print. Exactly one of vllm / sglang / ollama is set.
struct serving_report {
    model_desc model;                    ///< as loaded (weights applied)
    warnings warn;                       ///< notes from the source
    std::string model_ref;               ///< what the launch command loads: the HF id, or the path given
    std::vector<device_spec> gpus;       ///< GPUs of one node
    uint32_t nodes = 1;                  ///< nodes (--nodes)
    double compute_capability = 0;       ///< of the GPUs; 0 = unknown (sized devices)
    std::optional<vllm_plan> vllm;       ///< the chosen vLLM plan (one replica)
    std::vector<vllm_placement> placements; ///< candidates considered when no -tp/-pp/-dp was given
    std::optional<sglang_plan> sglang;
    std::optional<ollama_plan> ollama;
    /// "vllm", "sglang" or "ollama".
    std::string runtime() const;
    /// True when the plan starts and meets the requested length and concurrency.
    bool fits() const;
};

/// The human report: specs and pages, budget, pool, verdict with vLLM's own messages, notes, launch command.
/// Binary units (GiB = 2^30 B) labelled; the inputs kvfit assumed are said where they are used.
std::string render_serving_text(const serving_report & r);

/// The --json document: schema_version, runtime, model{...}, gpus, nodes, runtime_plan{runtime, version_rules,
/// block_size, page_bytes, num_gpu_blocks, per_request_blocks, max_concurrency, kv_cache_tokens,
/// available_kv_bytes, max_model_len_fit, per_rank[...], ...}, placements[...], fits, launch. Pretty-printed.
/// For SGLang num_gpu_blocks is the token pool (page_size tokens per block); for Ollama runtime_plan carries
/// the llama.cpp plan underneath.
std::string render_serving_json(const serving_report & r);

/// The command that realises the plan, pinning what the plan depends on:
///   vllm serve <model> --max-model-len L --gpu-memory-utilization U --max-num-seqs N --max-num-batched-tokens T
///     --block-size B [--kv-cache-dtype D] [--enable-prefix-caching | --no-enable-prefix-caching] [-tp ...]
///   python -m sglang.launch_server --model-path <model> --tp N --mem-fraction-static F --context-length L ...
///   OLLAMA_* environment for `ollama serve` and a Modelfile with PARAMETER num_ctx.
/// Multi-line for multi-node placements and Ollama.
std::string serving_launch_command(const serving_report & r);

} // namespace kvfit
