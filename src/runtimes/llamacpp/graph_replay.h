// Private to the llama.cpp compute-buffer model: replay of a recorded reserve graph.
//
// For graphs whose live set the stage formulas (compute_stages.cpp and friends) do not derive, kvfit replays the
// allocation sequence llama.cpp's own ggml-alloc performed on that graph, recorded once per release from the real
// runtime (tools/graph_template: a ggml-base built with an allocation trace, llama_probe, a fit of every tensor's
// shape over a design of contexts). A template holds, per variant (flash attention, K/V types), the graph's
// allocations and frees in order with each tensor's type and shape written in the context's variables; replaying
// it through a copy of ggml_dyn_tallocr (best fit over the free blocks, ggml/src/ggml-alloc.c) gives the compute
// buffer to the byte for any context of that model shape. Templates live in data/graphs/<arch>.<release>.txt.
#pragma once

#include "kvfit/llamacpp.h"
#include "runtimes/llamacpp/sched.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvfit::detail {

/// The graph shape key of model m: a 16-hex-digit FNV-1a hash over every model_desc field the reserve graph's
/// tensor shapes can depend on (layer count and kinds, per-layer heads, widths and caches, expert counts and widths,
/// MLA / indexer / SSM / hyper-connection dimensions), but not n_vocab, which templates take as a variable. Two
/// models with the same key build the same graph in the same release. Shown as `detail.compute_graph_key` (JSON).
std::string llamacpp_graph_key(const model_desc & m);

/// The release as template files and docs name it: "v0.5.0" or "5b4ebc5" (data/graphs, docs/accuracy-cuda-<tag>.md).
std::string release_tag(const llamacpp_settings & s);

/// The model-level dimensions a format-2 template's expressions may name (graph_shape.cpp), in a fixed order:
/// n_embd, n_layer, the expert, MLA, indexer, SSM and hyper-connection widths, and every model_desc::graph_dims key
/// as g_<key> (non-alphanumerics as '_'). 0 for what the model lacks.
std::vector<std::pair<std::string, int64_t>> graph_dims(const model_desc & m);

/// Layer il's own dimensions, named l_*: heads, KV heads, K/V head widths, dense FFN width, and per cache i (caches
/// order) l_c<i>_k / l_c<i>_v widths, l_c<i>_window, l_c<i>_ratio. Empty for a NextN block (il >= n_layer).
std::vector<std::pair<std::string, int64_t>> graph_layer_dims(const model_desc & m, uint32_t il);

/// What layer il is in the graph, without its sizes: its caches' kinds (F full, W window, C chunked, M latent,
/// I indexer with its head width, Z compressed with its ratio, c/s/p states), its FFN (d dense, m<k> routed with k
/// experts used per token, m<k>d both, - none; H hash-routed), hc<n> with n hyper-connections, n without attention
/// heads;
/// then "<" and the same for layer il - 1 ("^" for none, "^" appended when it is layer 0), and "$" on the last layer (n_layer - 1): a
/// template maps each signature to a recorded segment kind. "Fd<Fd$" is the last layer of a dense GQA decoder.
std::string graph_layer_sig(const model_desc & m, uint32_t il);

/// The words for a signature of graph_layer_sig, for warnings: "Mqm6f1n0s0<^" -> "MLA latent cache, queries without a
/// LoRA, routed experts, 6 used per token, softmax router, routing weights not normalised, routing weights not scaled;
/// the first layer". A character it does not know is quoted, never dropped.
std::string describe_layer_sig(std::string_view sig);

/// The result of a replay: the compute buffer in bytes and the template variant it came from
/// ("deepseek4 v0.5.0 fa=1 kv=f16").
struct graph_replay_result {
    uint64_t bytes = 0;
    std::string variant;
};

/// True when a template is recorded for m's graph shape in s's release, with a variant for s's flash attention (auto:
/// on) and K/V types; else false and the reason in `why` (optional).
bool replay_covers(const model_desc & m, const llamacpp_settings & s, std::string * why = nullptr);

/// True when some template is recorded for m's llama.cpp architecture in s's release (whether or not it covers m's
/// shape and s's settings): the stage sets are then known to be inexact for this family, and a figure that falls back
/// to them is warned (llamacpp_compute_unmodelled).
bool replay_recorded_for_arch(const model_desc & m, const llamacpp_settings & s);

/// The CPU compute buffer of m's reserve graph under s and c, replayed from a recorded template; nullopt when no
/// template applies: no template for m's architecture and release, a different graph key (another model shape of
/// the family), or settings outside the recorded variants. `why` (optional) receives the reason in one phrase.
std::optional<graph_replay_result> replay_compute(const model_desc & m, const llamacpp_settings & s,
                                                  const llamacpp_context & c, std::string * why = nullptr);

/// A reserve graph instantiated from a recorded format-2 template (data/graphs/*.txt with `kvfit-graph 2`, written by
/// tools/graph_template/graph2.py): the graph exactly as llama.cpp's scheduler receives it, for the scheduler replay
/// (sched.h). Buffers are not assigned: the caller places each weight and cache tensor by the plan.
struct graph_instance {
    ggraph g;
    std::vector<int32_t> layer;      ///< per tensor: its layer (-1: the global segment)
    std::vector<uint8_t> weight;     ///< per tensor: 1 for a model weight (g.t[i].name: its GGUF name)
    std::vector<uint8_t> cache;      ///< per tensor: 1 for a KV or state cache tensor of its layer
    std::string variant;             ///< "llama v0.5.0 graph fa=1 kv=f16 st=1"
};

/// m's reserve graph under s and c from a format-2 template (tg: the token-generation graph, one token per sequence);
/// nullopt when none applies (no template for m's graph key and release, no variant for the flash attention, K/V
/// class and stream layout, or a weight the model lacks), with the reason in `why`. What the context does not change
/// (names, ops, types, sources, weights, node order) is built once per model and settings and kept per thread (the
/// last four such skeletons, each matched in full: template, variant, K/V types, layer kinds and variables, the whole
/// tensor list); a call evaluates the shapes, strides, view offsets and op parameters for its context alone, in the
/// same order and with the same failures as a build from scratch.
std::optional<graph_instance> instantiate_graph(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                                bool tg, std::string * why = nullptr);

/// Every embedded graph template (data/graphs/*.txt) parsed: one "<file name>: <parse error>" per template that does
/// not parse, empty when all do. A plan that needs a template which failed names it and its error in the reason (not
/// "no graph recorded"); the test suite asserts this list is empty.
std::vector<std::string> graph_template_errors();

/// The parse error of a template's text, "" when it parses (tests: a corrupted copy of an embedded template fails).
std::string graph_template_parse_error(std::string_view text);

} // namespace kvfit::detail
