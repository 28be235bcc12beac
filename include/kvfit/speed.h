#pragma once
/// @file speed.h
/// Speed estimates for a llama.cpp plan (report.h renders them): decode and prefill tokens per second as roofline
/// bounds, and the "spill cliff" (how fast the full-GPU plan runs beside plans that move layers or experts to the CPU).
///
/// Method (roofline, Williams, Waterman & Patterson, CACM 52(4), 2009): a step takes at least
/// bytes moved / memory bandwidth and at least FLOPs / compute rate. Decoding one token at batch size 1
/// multiplies every active weight matrix by one vector (2 FLOPs per weight byte-ish), far below any GPU's
/// FLOP/byte ridge point, so llama.cpp decode is memory-bound: each device streams its share of the active
/// weights and of the KV cache once per token. Layers run one after another (llama.cpp's layer split is a
/// pipeline of one token), so the times of the devices add:
///   t_token = sum over devices d of bytes_read(d) / (bandwidth(d) * efficiency(d)).
/// Prefill of a long prompt is compute-bound: 2 FLOPs per active parameter per token plus attention
/// (4 * n_head * head_dim_k FLOPs per attended cell), over each device's FLOP/s; CPU layers of a plan with a
/// GPU run on the first GPU after their weights cross PCIe once per micro-batch (see default_pcie_bytes_per_s).
/// docs/speed.md checks the decode bound against published llama.cpp benchmarks.

#include "kvfit/llamacpp.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// Default host-memory bandwidth for layers on the CPU: 60 GB/s (6.0e10 B/s). A desktop with dual-channel
/// DDR5-4800 has a peak of 2 channels x 8 B x 4.8e9 = 76.8 GB/s; measured copy bandwidth (STREAM) is
/// typically 75-80 % of peak, about 60 GB/s. Dual-channel DDR4-3200 (51.2 GB/s peak) gives about 40;
/// servers with 8-12 channels give 200-400; Apple unified memory uses the GPU row's bandwidth instead.
/// `--cpu-bandwidth` changes it. This figure is used as given (no efficiency factor).
inline constexpr double default_cpu_bandwidth_bytes_per_s = 60e9;

/// Default CPU compute rate for prefill of layers on the CPU: 1 TFLOP/s (1e12), roughly what llama.cpp's
/// quantized matrix kernels reach on a 16-core AVX-512 / AVX2 desktop at batch 512. Prefill figures for CPU
/// layers are the coarsest numbers kvfit prints. `--cpu-flops` changes it.
inline constexpr double default_cpu_flops_per_s = 1e12;

/// Host-to-GPU bandwidth for prefill of layers left on the CPU: 25 GB/s (PCIe 4.0 x16 is 31.5 GB/s raw).
/// With a GPU present, llama.cpp's scheduler runs a large batch's matrix products of CPU-resident weights on
/// the GPU and copies those weights over once per micro-batch (ggml-backend's op offload, batch >= 32), so a
/// spilled layer costs prefill weight_bytes / (pcie x n_ubatch) per token rather than CPU FLOPs.
inline constexpr double default_pcie_bytes_per_s = 25e9;

/// Fraction of the GPU table's peak bandwidth that llama.cpp's decode reaches: 0.65, calibrated as the median
/// of measured / roofline over the eight dense published benchmarks in docs/speed.md (range 0.42-0.84; NVIDIA
/// CUDA 0.57-0.84, Apple Metal 0.42-0.55, AMD ROCm 0.51). Applied to GPUs only.
inline constexpr double default_gpu_bandwidth_efficiency = 0.65;

/// Bandwidth assumed for a GPU given only by size (`--gpu 8GiB`) and not found in the GPU table: 448 GB/s,
/// the RTX 3070 / RTX 2080 class of 8 GiB cards. Reported as "assumed" beside every figure that uses it.
inline constexpr double default_unknown_gpu_bandwidth_bytes_per_s = 448e9;

/// Knobs of the speed model. Defaults are documented above.
struct speed_settings {
    double cpu_bandwidth_bytes_per_s = default_cpu_bandwidth_bytes_per_s; ///< --cpu-bandwidth
    double cpu_flops_per_s = default_cpu_flops_per_s;                     ///< --cpu-flops
    double gpu_bandwidth_efficiency = default_gpu_bandwidth_efficiency;   ///< fraction of peak, 0 < x <= 1
    double unknown_gpu_bandwidth_bytes_per_s = default_unknown_gpu_bandwidth_bytes_per_s;
    double pcie_bytes_per_s = default_pcie_bytes_per_s; ///< host-to-GPU copies of CPU weights during prefill
    /// Tokens already in the context when the decoded token is produced; 0 = the plan's n_ctx_seq (a full
    /// conversation, the slowest point). Full-attention layers read min(depth, cells) cells per token.
    uint64_t depth = 0;
    uint32_t prompt_tokens = 512;  ///< prompt length for the prefill figure (attention grows with it)
};

/// What one device (GPU or host) reads and computes per token.
struct device_speed {
    std::string name;                   ///< device name as in the plan ("RTX 4060", "GPU0", "host")
    bool is_host = false;               ///< system RAM and CPU
    double bandwidth_bytes_per_s = 0;   ///< effective bandwidth used (after the efficiency factor)
    double flops_per_s = 0;             ///< compute rate used for prefill (FP16 dense for GPUs)
    bool assumed = false;               ///< true when the GPU was not in the table and defaults were used
    uint64_t weight_bytes = 0;          ///< active weights read per decoded token
    uint64_t kv_bytes = 0;              ///< KV cells read per decoded token at `depth`
    uint64_t state_bytes = 0;           ///< recurrent state read and written per token (2 x state)
    double decode_seconds = 0;          ///< (weight + kv + state bytes) / bandwidth
    double prefill_flops = 0;           ///< FLOPs per prompt token on this device
    double prefill_seconds = 0;         ///< prefill_flops / flops_per_s, per token
};

/// Tokens per second of one plan.
struct speed_estimate {
    uint64_t depth = 0;                 ///< context depth used for the KV term, tokens
    std::vector<device_speed> devices;  ///< GPUs in plan order, then the host
    double decode_tokens_per_s = 0;     ///< 1 / sum of decode_seconds (one sequence)
    double prefill_tokens_per_s = 0;    ///< 1 / sum of prefill_seconds
};

/// Bytes of weights one decoded token reads from block `il`: the non-expert bytes plus
/// expert_bytes * n_expert_used / n_expert for MoE blocks (shared experts are in the non-expert bytes).
/// Example gpt-oss-20b block: ~11.4 MiB of attention/router + 32 experts of which 4 are read.
uint64_t active_block_bytes(const model_desc & m, uint32_t il, bool experts);

/// Estimate decode and prefill speed of `plan` (built by plan_llamacpp for model `m`). A GPU's bandwidth
/// and FLOP/s come from the GPU table (find_gpu on the device name); unknown names use the settings'
/// defaults and are marked `assumed`. Apple GPUs use their unified-memory bandwidth for GPU layers;
/// the host keeps cpu_bandwidth_bytes_per_s.
speed_estimate estimate_speed(const model_desc & m, const llamacpp_plan & plan, const speed_settings & s);

/// One row of the spill cliff.
struct cliff_row {
    std::string label;              ///< "all on GPU", "1 layer on CPU", "experts on CPU", ...
    std::string flags;              ///< the llama.cpp flags that realise it: "-ngl 33", "--cpu-moe"
    placement_settings placement;   ///< the placement planned
    uint32_t layers_on_cpu = 0;     ///< blocks (output layer counted as one) left on the CPU
    bool fits = false;              ///< every GPU within capacity - margin
    uint64_t gpu_bytes = 0;         ///< the fullest GPU's total
    double decode_tokens_per_s = 0;
    double prefill_tokens_per_s = 0;
};

/// The spill cliff for one setting: the full-GPU plan, then -ngl moving 1, 2, 4, 8, 16 ... blocks to the
/// CPU, then all on the CPU (-ngl 0); for MoE models also --cpu-moe (every routed expert on the CPU).
/// `llamacpp_choice` is the row llama.cpp would run when the full plan does not fit: the largest -ngl
/// that fits (what --fit and manual tuning converge to); -1 when the full plan fits or nothing fits.
struct spill_cliff {
    uint64_t n_ctx = 0;                 ///< requested context
    std::vector<cliff_row> rows;
    int llamacpp_choice = -1;           ///< index into rows
    int32_t fit_ngl = -1;               ///< largest -ngl that fits (-1: none, not even 0)
    double fit_decode_tokens_per_s = 0; ///< decode speed at fit_ngl
};

/// Build the spill cliff for `s` on `gpus` (see spill_cliff). Throws kvfit::error as plan_llamacpp does.
spill_cliff make_spill_cliff(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                             const std::vector<device_spec> & gpus, uint64_t margin_bytes, const speed_settings & ss);

/// The cliff as a table: one line per row with flags, fits, fullest GPU, decode and prefill tokens/s and the slowdown
/// against the first row; then the devices' bandwidths and which were assumed (src/planner/speed_section.cpp).
std::string render_spill_cliff(const model_desc & m, const spill_cliff & c, const speed_estimate & full,
                               const speed_settings & ss);

struct plan_result; // plan.h

/// A runtime's speed model, found by the plan's runtime (find_speed_model), never by its name in a report or the
/// ranking (issue 26). Today one: llama.cpp's roofline above (src/planner/speed_section.cpp); Ollama's plans are
/// llama-server's but name their own runtime and have none.
struct speed_model {
    std::string_view runtime; ///< the registry name of the runtime it models (runtime_info::name)
    /// Decode tokens per second of `m` with the runtime's flags `f` on `mc` at context `n_ctx` (tokens), decoding at
    /// depth min(n_ctx, s.depth); std::nullopt when the weights have no bytes. Throws what the runtime's planner throws.
    std::optional<double> (*decode_speed)(const model_desc & m, const flag_values & f, const machine & mc, uint64_t n_ctx,
                                          const speed_settings & s) = nullptr;
    /// The `--speed` section of a plan of the runtime, as text (llama.cpp: the spill cliff, or the CPU-only figures).
    std::string (*speed_section)(const plan_result & r, const speed_settings & s) = nullptr;
};

/// The speed model of `rt`, or nullptr when kvfit has none for that runtime.
const speed_model * find_speed_model(const runtime_info & rt);

/// Parse a bandwidth: "60" (GB/s), "60GB/s", "76.8 GB/s", "1.5TB/s" -> bytes per second (decimal units, as
/// vendors state bandwidth). Throws kvfit::error for anything else or a value <= 0.
double parse_bandwidth(std::string_view text);

} // namespace kvfit
