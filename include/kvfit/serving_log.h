#pragma once
/// @file serving_log.h
/// `kvfit explain LOG` for the serving engines (issue 27 item 3): read a vLLM, SGLang, Ollama or mlx-lm startup log, find the
/// model and the settings it prints, plan the same run, and set what the engine allocated beside kvfit's figure, each
/// difference with its cause. The readers are in src/launch/serving_log.cpp, the comparison in
/// src/launch/serving_explain.cpp; the llama.cpp reader (launch.h, explain.cpp) is apart and unchanged.
///
/// The lines read, with the engine source that prints each:
/// - vLLM: "non-default args: {...}" (entrypoints/utils.py log_non_default_args), "Initializing a V1 LLM engine (vX) with
///   config: k=v, ..." (v1/engine/core.py), "Model loading took X GiB" (v1/worker/gpu_model_runner.py load_model; V0
///   "Loading model weights took X GB", worker/model_runner.py), "Available KV cache memory: X GiB" (v1/worker/
///   gpu_worker.py determine_available_memory; V0 "the rest of the memory reserved for KV Cache is X GiB" and
///   "kv_cache_size=X GiB", worker/worker.py), "GPU KV cache size: N tokens" and "Maximum concurrency for N tokens per
///   request: X.XXx" (v1/core/kv_cache_utils.py), "# GPU blocks: N" (V0 executor_base.py / early V1), the refusals of
///   check_enough_kv_cache_memory ("X GiB KV cache is needed, which is larger than the available KV cache memory (Y
///   GiB)"), V0's "The model's max seq len (N) is larger than the maximum number of tokens that can be stored in KV
///   cache (M)", "No available memory for the cache blocks", "max_num_seqs (N) exceeds available Mamba cache blocks (M)".
/// - SGLang: "server_args=ServerArgs(...)" (srt/server_args.py), "Load weight begin. avail mem=X GB" and "Load weight
///   end. ... avail mem=X GB, mem usage=Y GB." (srt/model_executor/model_runner.py load_model), "KV Cache is allocated.
///   #tokens: N, K size: X GB, V size: Y GB" (srt/mem_cache/memory_pool.py), "Use sliding window memory pool.
///   full_layer_tokens=N, swa_layer_tokens=M", "Mamba Cache is allocated. max_mamba_cache_size: N", "max_total_num_tokens=N,
///   ..., max_running_requests=N, context_len=N" (srt/managers/scheduler.py). SGLang's "GB" are GiB (get_available_gpu_memory
///   divides by 1 << 30).
/// - mlx-lm: "Prompt: N tokens, ...", "Generation: N tokens, ...", "Peak memory: X GB" (mlx_lm/generate.py main:
///   mx.get_peak_memory() / 1e9), mlx_lm.benchmark's "Timing with prompt_tokens=N and generation_tokens=M" and
///   "peak_memory=X", and the command line when the log holds it ("mlx_lm.generate --model X --prefill-step-size N").
/// - Ollama (its server log, slog key=value lines): `msg="starting llama server" cmd="... --ctx-size N --batch-size N
///   --n-gpu-layers N --parallel N [--flash-attn] [--kv-cache-type T]"` (llm/server.go NewLlamaServer; "starting runner"
///   from 0.11), `msg="starting llama-server" cmd="... -c N -np N [--cache-type-k T] --flash-attn on|off|auto [-b N
///   -ub N]"` (llm/llama_server.go startLlamaServer, the llama-server runner of ollama PR #16031), `msg="gpu memory"
///   ... free="X GiB"` (server/sched.go), `msg="offload to cuda"` / `msg=offload library=cuda` with layers.model, layers.offload,
///   memory.available, memory.required.full, memory.required.kv, memory.weights.total, memory.graph.full
///   (llm/memory.go EstimateGPULayers, 0.1.3x-0.11), the new engine's `msg="model weights"|"kv cache"|"compute
///   graph" device=D size=S` and `msg="total memory" size=S` (llm/server.go / ml/backend/ggml, 0.11.5+),
///   `msg="inference compute" ... name="..." total="X GiB"` (discover/types.go), "Listening on ... (version X)"
///   (server/routes.go), "llama runner started in" (llm/server.go WaitUntilRunning). Sizes as Ollama prints them
///   (format.HumanBytes2: one decimal of KiB/MiB/GiB, 1024-based). The runner's own llama.cpp lines ("llm_load_tensors:
///   offloaded N/M layers", "llama_kv_cache_init: CUDA0 KV buffer size = X MiB", "llama_context: ...") are read by the
///   llama.cpp reader (launch.h parse_llamacpp_log) into serving_log::runner.
///
/// Units: figures as printed (GiB, GB, tokens); sizes inside the plans are bytes.

#include "kvfit/launch.h"
#include "kvfit/model.h"

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// The engine a serving log comes from.
enum class serving_engine : uint8_t { vllm, sglang, mlx_lm, ollama };

/// "vLLM", "SGLang", "mlx-lm", "Ollama".
const char * serving_engine_name(serving_engine e);

/// kvfit's runtime that plans the engine (find_runtime's name): "vllm", "sglang", "mlx", "ollama".
const char * serving_engine_runtime(serving_engine e);

/// One figure of a serving log, as printed.
struct serving_figure {
    size_t line_no = 0;   ///< 1-based
    std::string key;      ///< "weights_gib", "available_kv_gib", "kv_tokens", "gpu_blocks", "max_concurrency", "peak_gb", ...
    double value = 0;     ///< the number (commas removed)
    std::string text;     ///< the figure as printed ("290,864", "5.98")
};

/// What kvfit reads from a vLLM, SGLang, Ollama or mlx-lm log. Lines it does not know are ignored.
struct serving_log {
    serving_engine engine = serving_engine::vllm;
    std::string version;            ///< "0.24.0" from the engine's banner or engine line; "" when not printed
    bool v0_engine = false;         ///< vLLM's V0 engine (its memory-profiling lines, "Initializing an LLM engine")
    std::string model;              ///< the model as the log names it (path or Hub id); "" when not printed
    /// Engine arguments found in the log, by vLLM's / SGLang's / mlx-lm's own name ("max_model_len", "tp_size",
    /// "prefill_step_size"), each with its line and the value as printed (Python repr: 'x', True, None, {...}).
    std::vector<std::pair<std::string, log_value>> args;
    std::vector<serving_figure> figures; ///< in log order (a figure printed by every rank: each line)
    std::vector<serving_figure> errors;  ///< the engine's refusals (key "kv_needed", "max_seq_len", "no_memory",
                                         ///< "mamba_blocks", "oom", "sglang_not_enough", "scheduler_exception":
                                         ///< SGLang's scheduler raised during its start, for any cause); text = the line
    size_t last_line = 0;
    /// Ollama: its runner's llama.cpp lines (the llama.cpp reader's view of them: offloaded layers, KV and compute
    /// buffers), when the log holds any; empty otherwise. Line numbers are the log's.
    std::optional<llamacpp_log> runner;
    /// The first value of argument `key`, or nullptr.
    const log_value * arg(std::string_view key) const;
    /// The first figure `key`, or nullptr; min_of: the smallest over all lines (per-rank figures: the engine takes the min).
    const serving_figure * figure(std::string_view key, bool min_of = false) const;
};

/// The engine whose own startup lines `head` (the start of a log) holds: Ollama when any of Ollama's slog lines is
/// there ("level=... msg=\"starting llama-server\"", "msg=\"offload to cuda\"", ...: its runner's llama.cpp lines then
/// belong to the Ollama log); else vLLM, SGLang or mlx-lm when no llama.cpp line is there; false otherwise. A line
/// counts only in the shape its engine prints it: its words opening the message (after a logger prefix ending in
/// "] ", e.g. vLLM's "INFO 05-15 16:03:37 [gpu_worker.py:460] ") and followed by their figure ("Available KV cache
/// memory: 11.08 GiB", "Peak memory: 5.08 GB"), or beside the other words of the same line; prose quoting such a
/// line, and any line holding a NUL byte (a binary file), count for no engine. Reads at most the first 4 MiB.
bool detect_serving_engine(std::string_view head, serving_engine & engine);

/// Read a serving log line by line from `in` (lines cut at 64 KiB; at most 65,536 figures and arguments kept; an
/// Ollama runner's llama.cpp lines kept up to 4 MiB for the llama.cpp reader). Throws kvfit::error k_no_startup_log
/// (launch.h) for a log with no engine's line, or whose engine lines give no figure, refusal or runner line (nothing
/// to compare); "log: more than 65536 ..." past the bound.
serving_log parse_serving_log(std::istream & in);
/// The same over text (tests, the fuzzer).
serving_log parse_serving_log(std::string_view text);

/// What `kvfit explain` was told beside the log: the inputs a log does not state. Every one that is used is named in
/// the explanation's notes as given.
struct serving_inputs {
    std::string gpu;                  ///< --gpu: the GPU the run had (kvfit's --gpu spelling: "RTX 3090", "2xH100"); "" = none
    /// --assume KEY=VALUE: an engine argument the log does not print, by the engine's name (kv_cache_dtype=fp8,
    /// tensor_parallel_size=2, mem_fraction_static=0.88, prefill_step_size=512), or "vllm_rules=0.21"; for Ollama
    /// kvfit's Ollama flags by JSON name (num_ctx, num_parallel, ollama_kv_cache_type, ollama_flash_attention).
    std::vector<std::pair<std::string, std::string>> assumed;
};

/// Plan the run the log describes on `m` and compare each figure the log prints with kvfit's (include/kvfit/launch.h
/// explain_row, explanation). Rows: the weights, the budget ("Available KV cache memory", SGLang's pool), the pool
/// at the logged budget (tokens, blocks, concurrency: equal when the log's figure lies within what kvfit computes
/// over the rounding of the logged budget), the pool at kvfit's own budget when the GPU is known (--gpu or a vLLM V0
/// total), mlx-lm's peak memory, and the start verdict; each row that differs says why (kvfit's terms with their
/// sizes and sources). Ollama: the run's context, slots, flash attention and K/V type as the runner's llama.cpp lines
/// state them ("llama_context: n_ctx / n_seq_max / flash_attn", the KV cache line), else as the launch line does
/// (-c / --ctx-size = num_ctx x -np / --parallel), each noted with its line (--assume of a setting the log states
/// throws kvfit::error; none stated: Ollama's default num_ctx, noted as assumed), planned with kvfit's Ollama
/// plan (ollama.h) on the GPU the log names (--gpu, else "inference compute" total, else the first
/// memory.available figure, else the "gpu memory" free figure), its KV cache, weights, compute graph and offloaded
/// layers beside Ollama's estimate and the runner's buffers and layers, and the start verdict. Throws kvfit::error for settings the planner rejects (the planner's
/// own message).
explanation explain_serving_log(const serving_log & log, const model_desc & m, const serving_inputs & in);

/// The explanation as text, as render_explanation prints llama.cpp's, headed by the engine and release.
std::string render_serving_explanation(const serving_log & log, const model_desc & m, const explanation & e);

} // namespace kvfit
