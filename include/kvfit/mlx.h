#pragma once
/// @file mlx.h
/// MLX (mlx-lm on Apple silicon): settings spelled as `mlx_lm.generate` / `mlx_lm.server` spell their flags, the
/// memory rules read from mlx-lm's and MLX's source, and plan_mlx(model, settings, devices). Rules and worked
/// examples: docs/rules/mlx.md. Sources are pinned to two commits:
///   mlx-lm  d78bf58e217c904ec282ed8da9b947491f78c022 (ml-explore/mlx-lm, 2026-08-22)  "mlx_lm/..."
///   mlx     846d176227a0ac13d2667e58d2bb68b322109ab0 (ml-explore/mlx,    2026-08-22)  "mlx/..."
/// A policy over model_desc: it reads the caches of each layer (model_desc::caches) and the shape vectors, never
/// an architecture name. Units: bytes (uint64_t) unless a name says otherwise; tokens for lengths; a "cell" is one
/// token's row in a cache (what MLX calls the sequence axis, axis 2 of a (B, H, cells, D) array).

#include "kvfit/model.h"
#include "kvfit/runtime.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvfit {

/// Which mlx-lm entry point runs the model.
/// - generate: `mlx_lm.generate` (generate_step, mlx_lm/generate.py): one sequence, prompt in chunks of
///   prefill_step_size, then one token per step.
/// - server: `mlx_lm.server` (ResponseGenerator + BatchGenerator, mlx_lm/server.py): up to --decode-concurrency
///   sequences batched, an LRU prompt cache (LRUPromptCache, mlx_lm/models/cache.py) of finished conversations.
enum class mlx_command : uint8_t { generate, server };

/// "mlx_lm.generate" or "mlx_lm.server".
const char * mlx_command_name(mlx_command c);

/// MLX weight quantization: the config's "quantization": {"group_size", "bits", "mode"} that mlx_lm.convert
/// (-q --q-bits --q-group-size --q-mode) writes and load_model (mlx_lm/utils.py) applies with nn.quantize.
/// bits 0 = not quantized (weights in the model dtype).
struct mlx_quantization {
    uint32_t bits = 0;           ///< --q-bits: 2, 3, 4, 5, 6, 8 (affine); 4 (mxfp4, nvfp4); 8 (mxfp8)
    uint32_t group_size = 0;     ///< --q-group-size; 0 = the mode's default (affine 64, mxfp4 32, nvfp4 16, mxfp8 32)
    std::string mode = "affine"; ///< --q-mode: affine, mxfp4, nvfp4, mxfp8
    /// Only the routed experts are quantized, the rest stays in the model dtype: how mlx-lm loads an HF MXFP4
    /// checkpoint (gpt-oss): load_model maps quant_method mxfp4 to {"group_size": 32, "bits": 4, "mode": "mxfp4"}
    /// and quantizes a layer only when its ".scales" are in the file (mlx_lm/utils.py load_model).
    bool experts_only = false;
};

/// mlx_lm flags (mlx_lm/generate.py setup_arg_parser, mlx_lm/server.py main), plus what kvfit needs to know about
/// the machine. Optional fields unset = the flag not given.
struct mlx_settings {
    mlx_command command = mlx_command::generate;
    std::string model;                   ///< --model: Hub id or local path; "" = from the model description
    uint64_t context_tokens = 0;         ///< tokens per sequence planned (prompt + generated); 0 = n_ctx_train
    uint32_t n_seq = 1;                  ///< sequences decoded together (server); generate runs exactly 1

    // --- mlx_lm.generate -------------------------------------------------------------------------------------------
    std::optional<uint64_t> max_kv_size; ///< --max-kv-size: RotatingKVCache(max_size, keep=4) for every layer of a
                                         ///< model without make_cache (mlx_lm/models/cache.py make_prompt_cache)
    std::optional<uint32_t> kv_bits;     ///< --kv-bits: QuantizedKVCache once a cache holds quantized_kv_start tokens
    uint32_t kv_group_size = 64;         ///< --kv-group-size (default 64)
    uint64_t quantized_kv_start = 5000;  ///< --quantized-kv-start (generate.py DEFAULT_QUANTIZED_KV_START = 5000)
    std::string prompt_cache_file;       ///< --prompt-cache-file: a cache saved by mlx_lm.cache_prompt
    std::optional<uint64_t> max_tokens;  ///< -m/--max-tokens (default 100); shown in the launch line when set

    // --- both ------------------------------------------------------------------------------------------------------
    uint32_t prefill_step_size = 2048;   ///< generate_step's prefill_step_size; server --prefill-step-size (2048)

    // --- mlx_lm.server ---------------------------------------------------------------------------------------------
    uint32_t decode_concurrency = 32;    ///< --decode-concurrency (default 32)
    uint32_t prompt_concurrency = 8;     ///< --prompt-concurrency (default 8)
    uint32_t prompt_cache_size = 10;     ///< --prompt-cache-size: LRU entries (default 10)
    std::optional<uint64_t> prompt_cache_bytes; ///< --prompt-cache-bytes (default: no byte limit)

    // --- weights and machine ---------------------------------------------------------------------------------------
    /// Quantization of the weights when the model description has no exact bytes (a config.json, not the MLX
    /// checkpoint's safetensors): kvfit estimates the bytes mlx_lm.convert would write. bits 0 = model dtype.
    mlx_quantization weights;
    /// `sudo sysctl iogpu.wired_limit_mb=N`: the GPU working set becomes N MiB; 0 = macOS's default.
    uint64_t iogpu_wired_limit_mb = 0;
    /// The devices' memory_bytes already are Metal's recommendedMaxWorkingSetSize (as
    /// mx.device_info()["max_recommended_working_set_size"] prints it), not the unified RAM.
    bool memory_is_working_set = false;
};

// ============================================================================================================
// Rules
// ============================================================================================================

// The GPU working set MLX plans against (Metal's recommendedMaxWorkingSetSize, which mlx-lm wires: generate.py
// wired_limit, server.py main; MLX's allocator sizes its limits from it: allocator.cpp MetalAllocator, memory limit
// = min(1.5 x ws, 0.95 x RAM), cache reclaim at 0.95 x ws) is metal_working_set_bytes (metal.h), the rule the
// llama.cpp and Ollama plans share.

/// Cells a KVCache (and BatchKVCache, ChunkedKVCache below its chunk, QuantizedKVCache) holds after `tokens`
/// tokens went through a fresh cache: it grows in steps of 256 (KVCache.step), each growth allocating
/// ceil(S / 256) x 256 cells for an update of S tokens, so with prefill chunks that are multiples of 256 the
/// cells are ceil(tokens / 256) x 256. Example: 32768 -> 32768; 32769 -> 33024; 5000 -> 5120; 0 -> 0.
uint64_t mlx_kvcache_cells(uint64_t tokens);

/// Peak cells of a RotatingKVCache(max_size, keep) (sliding-window layers, or every layer under --max-kv-size)
/// over a run of `tokens` tokens with prompt chunks of `prefill_step` (mlx_lm/models/cache.py RotatingKVCache):
///   tokens <= max_size: min(max_size, tokens + 255)            (in-place growth by min(256, max_size - offset))
///   tokens  > max_size: max(max_size, min(tokens, max_size - 1 + prefill_step))
///                        (_update_concat keeps max_size - 1 cells and appends the whole chunk; decode trims back
///                         to max_size). An upper bound for tokens <= max_size, exact for a long prompt.
/// Example gpt-oss window 128, chunk 2048: 32768 tokens -> 127 + 2048 = 2175 cells during the prompt, 128 after.
uint64_t mlx_rotating_cells(uint64_t tokens, uint64_t max_size, uint32_t prefill_step);

/// Peak cells of a ChunkedKVCache(chunk) (chunked-attention layers): maybe_trim_front keeps at most `chunk` valid
/// cells, and the next update appends ceil(S / 256) x 256: min(mlx_kvcache_cells(tokens), chunk + ceil(P/256) x 256)
/// with P = min(prefill_step, tokens). Example chunk 8192, chunk 2048: 10240 cells at 32768 tokens.
uint64_t mlx_chunked_cells(uint64_t tokens, uint64_t chunk, uint32_t prefill_step);

/// Bytes of one `dim`-wide row quantized by mx.quantize in affine mode (mlx/ops.cpp affine_quantize): packed
/// uint32 words of dim x bits / 32 (dim x bits / 8 bytes), plus a scale and a bias per group of `group_size`,
/// each in the input dtype (`scale_bytes`, 2 for bf16/f16). QuantizedKVCache stores keys and values so
/// (mlx_lm/models/cache.py QuantizedKVCache, KVCache.to_quantized).
/// Example dim 128, 4 bits, group 64, bf16: 64 + 2 x 2 x 2 = 72 bytes (256 in bf16).
uint64_t mlx_quantized_row_bytes(uint64_t dim, uint32_t bits, uint32_t group_size, uint32_t scale_bytes);

/// Bytes of an MLX-quantized weight of `n_elements` (a multiple of the group size): packed n x bits / 8, plus per
/// group of q.group_size: affine a scale and a bias in the model dtype (`dtype_bytes`); mxfp4 / nvfp4 / mxfp8 one
/// uint8 scale and no bias (mlx/ops.cpp affine_quantize, fp_quantize). q.bits 0: n x dtype_bytes.
/// Examples per 4096 x 4096 weight: affine 4-bit group 64 bf16 = 8388608 + 2 x 262144 x 2 = 9437184 (4.5 bits);
/// mxfp4 = 8388608 + 524288 = 8912896 (4.25 bits).
uint64_t mlx_weight_bytes(uint64_t n_elements, const mlx_quantization & q, uint32_t dtype_bytes);

/// `q` with the mode's default group size filled in (mlx_lm/utils.py quantize_model defaults_for_mode: affine 64,
/// mxfp4 32, nvfp4 16, mxfp8 32; bits default 4, mxfp8 8). Throws kvfit::error with MLX's message, e.g.
/// "mlx: [quantize] The requested number of bits 7 is not supported. The supported bits are 2, 3, 4, 5, 6 and 8.",
/// "mlx: [quantize] mxfp4 quantization requires group size 32 but got 64.", or "mlx: unknown --q-mode 'x'".
mlx_quantization mlx_resolve_quantization(const mlx_quantization & q);

/// Element bytes of the activations, and so of the KV cache and the conv state: the model dtype (mlx_lm.convert
/// --dtype defaults to config.json's torch_dtype; an HF checkpoint loads in its own): float32 4, float16 and
/// bfloat16 2; "" -> 2 (bf16 assumed).
uint32_t mlx_activation_bytes_per_element(const model_desc & m);

// ============================================================================================================
// The plan
// ============================================================================================================

/// One buffer on a device, as runtime_plan will carry it. `estimate` is true when the figure is kvfit's estimate
/// rather than a rule read from mlx-lm/MLX source (transients, the prompt-cache bound, weights from a config).
struct mlx_buffer {
    std::string name;       ///< weights, kv, state, prompt_cache, activation
    uint64_t bytes = 0;
    bool estimate = false;
    std::string what;       ///< one line: the rule or the estimate, with its numbers
};

/// One group of caches of the same class and shape (for reports: "36 x KVCache 32768 cells").
struct mlx_cache_group {
    std::string name;           ///< the mlx-lm class: KVCache, QuantizedKVCache, RotatingKVCache, ChunkedKVCache,
                                ///< ArraysCache (conv + ssm state), CacheList (several caches on one layer)
    cache_kind kind = cache_kind::full;
    uint32_t n_layer = 0;       ///< layers with this cache
    uint64_t cells = 0;         ///< cells per sequence at the peak (0 for states)
    uint32_t n_seq = 1;         ///< batch (sequences)
    uint64_t k_bytes_per_cell = 0; ///< per layer per sequence (state: bytes per sequence)
    uint64_t v_bytes_per_cell = 0;
    uint64_t bytes = 0;         ///< n_layer x n_seq x cells x (k + v), or n_layer x n_seq x state bytes
};

/// One device (mlx-lm uses one GPU: the Mac's).
struct mlx_device_plan {
    std::string name;
    uint64_t memory_bytes = 0;    ///< as given: unified RAM (or the working set when memory_is_working_set)
    uint64_t capacity_bytes = 0;  ///< the working set planned against
    std::vector<mlx_buffer> buffers;
    uint64_t used_bytes() const;
    bool fits() const { return used_bytes() <= capacity_bytes; }
};

/// The MLX plan, shaped like runtime_plan so that the adapter is a copy.
struct mlx_plan {
    std::string runtime = "mlx";
    std::string rules = "mlx-lm d78bf58 / mlx 846d176 (2026-08-22)";
    mlx_settings settings;            ///< with defaults resolved (context, weights quantization)
    uint64_t context_tokens = 0;      ///< tokens per sequence planned
    uint32_t sequences = 1;
    std::vector<mlx_device_plan> devices;
    std::vector<mlx_cache_group> caches;
    uint64_t kv_bytes_per_token = 0;  ///< bytes one more token costs over the growing caches, one sequence
    uint64_t state_bytes_per_sequence = 0;
    uint64_t max_context_fit = 0;     ///< largest context_tokens that fits (search.h over [1, n_ctx_train]); 0 when none does
    bool starts = false;              ///< no refusal
    bool fits = false;                ///< starts, and every device within its working set
    std::vector<std::string> refusals;///< mlx-lm/MLX's messages, verbatim where the source has one
    std::vector<std::string> warnings;///< mlx-lm's own warnings (the near-working-set warning) and kvfit's
    std::vector<std::string> notes;   ///< defaults taken, estimates
    /// defaults kvfit took that decide the verdict (a config's weights at the model's dtype without --q-bits):
    /// runtime_plan::assumptions, shown in every output and refused by --strict
    std::vector<std::string> assumptions;
    std::string launch;               ///< the command line to paste
};

/// Plan mlx-lm for `m` at settings.context_tokens on `gpus` (one Apple GPU; more is a refusal). Buffers:
/// - weights: exact bytes when the description has them (the MLX checkpoint's safetensors), minus the vision
///   tower (mlx-lm's sanitize drops it); else n_params x mlx_weight_bytes(settings.weights) (estimate).
/// - kv: every growing cache at its peak cells (KVCache: mlx_kvcache_cells; window: RotatingKVCache; chunked:
///   ChunkedKVCache; --max-kv-size: RotatingKVCache(N, keep 4) on models without make_cache), x n_seq;
///   --kv-bits: QuantizedKVCache rows from the quantized_kv_start conversion on, and the conversion transient.
/// - state: conv states (activation dtype) and SSM / delta-rule states (float32) per recurrent layer, x n_seq.
/// - prompt_cache (server): the LRU bound, --prompt-cache-size entries of the full context, capped by
///   --prompt-cache-bytes minus the active caches (estimate: a bound, not a measurement).
/// - activation: the prefill transient of the largest layer for a chunk of prefill_step_size tokens (estimate).
/// Refusals are a result (starts = false), never thrown. kvfit::error only for bad settings: --kv-bits,
/// --kv-group-size or the weights' quantization out of MLX's range (MLX's own message, see
/// mlx_resolve_quantization), --max-kv-size <= 4, --prefill-step-size 0, n_seq 0, no device.
mlx_plan plan_mlx(const model_desc & m, const mlx_settings & s, const std::vector<device_spec> & gpus);

/// The launch line for `s` and model id `model_id`: "mlx_lm.generate --model <id> [flags that differ from the
/// defaults]" or "mlx_lm.server --model <id> ...", preceded by "sudo sysctl iogpu.wired_limit_mb=N && " when set
/// and by an `mlx_lm.convert -q` step when weights are quantized from a non-MLX checkpoint (`convert`).
std::string mlx_launch_line(const mlx_settings & s, const std::string & model_id, bool convert);

// ============================================================================================================
// The runtime interface (src/runtimes/mlx/adapter.cpp)
// ============================================================================================================

/// The MLX flags, by JSON name, parsed: mlx_lm's own (--max-kv-size, --kv-bits, --kv-group-size,
/// --quantized-kv-start, --prompt-cache-file, --max-tokens, --prefill-step-size, --decode-concurrency,
/// --prompt-concurrency, --prompt-cache-size, --prompt-cache-bytes), mlx_lm.convert's for weights of a config.json
/// (--q-bits, --q-group-size, --q-mode, --q-experts-only), and kvfit's: --mlx-command generate|server,
/// --context-tokens (prompt + generated, per sequence), --num-sequences, --iogpu-wired-limit-mb,
/// --memory-is-working-set. Throws kvfit::error "--mlx-command 'x': expected generate or server", or a count's
/// message ("--kv-bits 'x': expected a number from 1 to 8").
mlx_settings parse_mlx_flags(const flag_values & f);

/// The MLX flags (see parse_mlx_flags).
const std::vector<flag_spec> & mlx_flags();

/// The registry entry: plan_mlx through the interface (its buffers, caches, refusals and launch line; detail holds
/// the settings, the cache groups and max_context_fit; the text report's sections: the settings with the per-token
/// and per-sequence figures and max_context_fit, each device's buffers against the working set, the cache groups). Weights of a config.json are mlx_lm.convert's estimate
/// (--q-bits), not --weights' GGUF formats.
runtime_info mlx_runtime();

} // namespace kvfit
