#pragma once
/// @file ranking.h
/// "What fits my machine": every model of a list (the catalog, or the models on disk: local.h) planned for the same
/// GPUs and ranked. For each model the planner finds the best weight format and KV cache type that fit fully at the
/// context asked for, then the largest context at that pair (the planner's one search, plan.h largest_context, which
/// stops at the model's training context), the decode speed estimate (speed.h, llama.cpp only), and for a model that
/// fits nowhere, what is short and by how much. No memory rule lives here: every figure is the runtime's plan
/// (runtime.h), every "largest" the planner's search (search.h).
///
/// Choice, per model (documented in docs/list.md):
/// - weight formats, best first: the file's own weights when they are exact (a GGUF, safetensors); else --weights
///   when given; else, when the runtime's default weight format is on the GGUF ladder, the ladder f16, q8_0, q6_k,
///   q5_k_m, q4_k_m, q3_k_m, q2_k; else the runtime's default alone (vLLM, SGLang: the checkpoint's dtype);
/// - cache types, best first: the runtime's (runtime_info::cache_types: llama.cpp f16, q8_0, q4_0), or the one the
///   flags name (-ctk/-ctv);
/// - the first format, then the first cache type, whose plan fits at the target context wins: a higher weight
///   precision is preferred over a higher KV precision (a q8_0 cache costs less quality than a smaller weight
///   format, docs/list.md);
/// - a pair that does not fit as asked gets the runtime's other knobs that keep the model on the GPUs (vLLM's
///   --max-num-seqs, then --gpu-memory-utilization up to 0.95; SGLang's --max-running-requests; Ollama's and mlx-lm's
///   sequences), the first that fits at the target, before the model is filed under "does not fit" (rank_row::changed);
/// - the target context: the runtime's context flag when given (-c N: the largest value), else 4096; never above the
///   model's training context (then the training context is the target, and the row says so).
/// Ranking: models that fit first, larger parameter counts first (the most capable model that fits), then the better
/// format, then the longer context; then the models that do not fit, least memory short first; then the models that
/// could not be planned (their one-line error).

#include "kvfit/plan.h"
#include "kvfit/speed.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kvfit {

/// One model to rank: loaded, or the one-line error loading gave.
struct rank_candidate {
    std::string name;                 ///< catalog name, or the local spelling ("ollama:qwen3:8b", "hf:org/name")
    std::string hf_id;                ///< the catalog's Hugging Face id; "" for a local model without one
    std::string source;               ///< "catalog", or the file read (a GGUF blob, a snapshot directory)
    std::optional<model_desc> model;  ///< the model; std::nullopt when `error` is set
    warnings warn;                    ///< the source's warnings
    std::string error;                ///< the loader's message when it failed
};

/// The models of the built-in catalog, each loaded (model_from_catalog), in catalog order.
std::vector<rank_candidate> catalog_candidates();

/// Which models a list shows. Empty / 0 = no constraint.
struct rank_filter {
    std::string name;         ///< a fragment of the name or the Hugging Face id, case-insensitive: "qwen"
    std::string family;       ///< the architecture family, case-insensitive: the GGUF architecture ("qwen35",
                              ///< "llama", "deepseek2") or the HF model_type ("qwen3_5_text")
    uint64_t min_params = 0;  ///< at least this many parameters (model_desc::n_params)
    uint64_t max_params = 0;  ///< at most this many
    uint64_t min_context = 0; ///< a training context of at least this many tokens
};

/// A parameter count as people write it: "7B", "1.5b", "500M", "1T", "8030261248" (K, M, B, T: 10^3 ... 10^12).
/// Throws kvfit::error "<flag> 'x': expected a parameter count like 7B, 500M or 8030261248".
uint64_t parse_param_count(std::string_view flag, std::string_view text);

/// True when the candidate passes the filter (a candidate that failed to load passes on its name alone).
bool rank_filter_matches(const rank_filter & f, const rank_candidate & c);

/// How every model is planned.
struct rank_settings {
    std::string runtime = "llama.cpp"; ///< a registry name
    flag_values flags;                 ///< the runtime's flags as given; its context flag sets the target context
    std::string weights;               ///< --weights: the one format tried for models without exact weights
    speed_settings speed;              ///< the decode estimate's settings; depth = the target context
};

/// The default target context when the flags name none: 4096 tokens.
inline constexpr uint64_t default_rank_context = 4096;

/// The context every model must reach: the largest value of the runtime's context flag in s.flags, else
/// default_rank_context. Throws kvfit::error for a malformed value ("-c 'x': expected a positive integer").
uint64_t rank_target_context(const rank_settings & s);

/// One model's line of the list.
struct rank_row {
    std::string name, hf_id, source;
    std::string family;                ///< gguf_architecture, else architecture
    uint64_t n_params = 0;             ///< parameters (0 when the source gives none)
    uint64_t n_ctx_train = 0;          ///< training context, tokens
    uint64_t target_context = 0;       ///< the context every choice had to reach, tokens
    bool fits = false;                 ///< some format and cache type fit fully at target_context
    std::string weights;               ///< the format chosen (fits) or the smallest tried (does not): "q8_0", "gguf"
    uint64_t weights_bytes = 0;        ///< the model's weight bytes in that format
    bool weights_exact = false;        ///< read from the file, not estimated from the parameter count
    std::string cache_type;            ///< K and V type chosen (or the smallest tried)
    /// fits: the one setting the ranking changed from the flags to fit at target_context, as typed ("--max-num-seqs
    /// 90"): the first of the runtime's knobs (runtime_info::knobs, neither the context nor one that offloads) whose
    /// search (plan.h knob_fit) finds a value, tried before the model is filed under "does not fit"; "" = none
    std::string changed;
    uint64_t context_tokens = 0;       ///< fits: the largest context at that format and cache type; else 0
    bool context_capped = false;       ///< context_tokens is the training context: the search's top, not the memory
    std::optional<double> decode_tokens_per_s; ///< at target_context depth (llama.cpp only; speed.h)
    uint64_t short_bytes = 0;          ///< does not fit: bytes missing on the fullest GPU at target_context
    std::string short_device;          ///< that GPU
    std::string short_buffer;          ///< the first buffer, in allocation order, that crosses its budget
    std::vector<std::string> refusals; ///< the runtime's startup errors of the smallest plan (vLLM, SGLang)
    std::string launch;                ///< fits: the runtime's command at context_tokens
    std::vector<std::string> warnings; ///< the source's and the runtime's warnings of the chosen plan
    std::string error;                 ///< could not be planned (the one-line message); the row is last
    int format_rank = 0;               ///< position of `weights` on the list of formats tried (0 = best)
};

/// Plan every candidate that passes `filter` for `mc` with `s`, and rank the rows (see the file comment). Throws
/// kvfit::error for an unknown runtime or flags the runtime rejects (before any model is planned); a model's own
/// failure is its row's `error`.
std::vector<rank_row> rank_models(const std::vector<rank_candidate> & candidates, const machine & mc,
                                  const rank_settings & s, const rank_filter & filter = {});

/// The list as a table (report): one line per model, then the notes (target context, capped contexts, speed).
std::string render_ranking_text(const std::vector<rank_row> & rows, const machine & mc, const rank_settings & s);

/// The list as JSON: {"schema_version", "runtime", "gpus", "target_context", "models": [row...]} (docs/list.md).
nlohmann::ordered_json ranking_json(const std::vector<rank_row> & rows, const machine & mc, const rank_settings & s);

} // namespace kvfit
