#pragma once
/// @file report.h
/// Reports: one plain `report` struct built from a model and settings, rendered as a human table
/// (render_text) or as the `--json` document (render_json). Renderers compute nothing new.

#include "kvfit/plan.h"
#include "kvfit/sources.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvfit {

/// Version of the --json document; bumped when a key changes meaning or disappears.
inline constexpr int json_schema_version = 1;

/// One row of the seeds' table: KV bytes at a context, and beside it the all-full-attention variant.
struct context_row {
    uint64_t n_ctx = 0;                  ///< requested tokens
    uint64_t kv_bytes = 0;               ///< all KV caches under llama.cpp rules (n_seq, n_ubatch as set)
    uint64_t kv_bytes_if_all_full = 0;   ///< every layer cached like the full-attention layer, same cells
};

/// The largest n_ctx that fits for one cache type (K and V both of that type).
struct cache_type_fit {
    ggml_type type = ggml_type::f16;
    bool allowed = true;        ///< false when the type needs flash attention and -fa off is set
    uint64_t max_n_ctx = 0;     ///< tokens (a multiple of 256 x streams); 0 when nothing fits
};

/// The answer to "does it fit": only present when devices were given (`--gpu`).
struct fit_report {
    std::vector<device_spec> gpus;      ///< the devices planned on
    uint64_t margin_bytes = 0;          ///< kept free per GPU
    uint64_t recommended_n_ctx = 0;     ///< requested n_ctx when it fits, else the largest that fits (requested types)
    std::vector<cache_type_fit> max_n_ctx;   ///< per cache type: f16, q8_0, q4_0 (+ the requested types)
    uint64_t max_n_ctx_if_all_full = 0; ///< the same search for the all-full-attention variant, requested types
    uint64_t weights_bytes_that_fit = 0;///< the largest weight size that fits at requested_n_ctx (0: none)
    /// When the requested plan does not fit: the largest -ngl that fits at the requested n_ctx (the rest of
    /// the blocks run on the CPU), and its host-RAM total; -1 when even -ngl 0 does not fit the GPU buffers.
    int32_t offload_n_gpu_layers = -1;
    uint64_t offload_host_bytes = 0;    ///< host RAM under that -ngl (weights, KV, compute, output)
    /// For MoE models: the smallest --n-cpu-moe N (experts of the first N blocks in host RAM, everything else
    /// on the GPU) that fits at the requested n_ctx, and its host-RAM total; -1 when none does or no MoE.
    int32_t offload_n_cpu_moe = -1;
    uint64_t offload_moe_host_bytes = 0;
};

/// Everything the renderers print.
struct report {
    model_desc model;                     ///< the model as loaded
    warnings warn;                        ///< notes from the source
    llamacpp_settings settings;           ///< settings as given
    placement_settings placement;         ///< placement as given
    uint64_t kv_bytes_per_token = 0;      ///< growing layers (full + MLA), settings' cache types
    uint64_t kv_bytes_per_token_if_all_full = 0;  ///< n_layer x the full-attention layer's bytes
    uint64_t kv_bytes_per_token_f16 = 0;  ///< the same with f16 K and V (for the q8_0 = 34/64 note)
    uint64_t kv_bytes_per_token_q8_0 = 0; ///< the same with q8_0 K and V
    uint64_t state_bytes_per_sequence = 0;///< recurrent state of one sequence, f32
    std::vector<context_row> contexts;    ///< the seeds' table
    uint64_t requested_n_ctx = 0;         ///< the n_ctx planned (largest -c, or the model's n_ctx_train like llama-server)
    bool requested_from_model = false;    ///< true when -c was not given
    llamacpp_plan plan;                   ///< the plan at requested_n_ctx on the given GPUs (host only without --gpu)
    std::optional<fit_report> fit;        ///< present when --gpu was given
};

/// Build the report. `contexts` are the table's n_ctx values (empty: 8192, 32768, 131072, 262144).
/// With GPUs, the fit is checked at the largest `contexts` value the user gave (`user_contexts`), or at the
/// model's n_ctx_train. Throws kvfit::error for invalid settings (see llamacpp_context_size).
report make_report(const model_desc & m, const warnings & warn, const llamacpp_settings & s,
                   const placement_settings & p, const std::vector<uint64_t> & user_contexts,
                   const std::vector<device_spec> & gpus, uint64_t margin_bytes);

/// The human report: layer layout, per-token bytes, the seeds' table, weights, and the fit when present.
/// Binary units (GiB = 2^30 B, MiB = 2^20 B) are labelled.
std::string render_text(const report & r);

/// `--check`: a verdict on the user's own flags. For each GPU, in llama.cpp's allocation order (weights at
/// load, then KV cache and recurrent state at context creation, then the compute buffer at the scheduler's
/// reserve), names the first buffer that crosses capacity - margin and by how much, and what would fit.
/// Requires r.fit (GPUs given).
std::string render_check(const report & r);

/// The --json document (schema_version json_schema_version): model{...}, cache_type_k/v, kv_bytes_per_token,
/// kv_bytes_per_token_if_all_full_attention, state_bytes_per_sequence, contexts[], parameter_count,
/// weights_bytes, n_ctx, n_ctx_seq, buffers{...}, devices[...], fit{...}. Pretty-printed with 2 spaces.
std::string render_json(const report & r);

/// The llama-server command line that realises the plan: -m, -c, -np, -ngl, -fa, -ctk, -ctv, -ub, -ts.
std::string llama_server_command(const report & r, uint64_t n_ctx);

/// Format bytes for people: "0.25 GiB", "50.25 MiB", "32.00 KiB", "512 B" (binary units, 2 decimals).
std::string human_bytes(uint64_t bytes);

/// Format an integer with thousands separators: 52690944 -> "52,690,944".
std::string with_commas(uint64_t n);

} // namespace kvfit
