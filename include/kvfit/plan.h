#pragma once
/// @file plan.h
/// The planner: a model, llama.cpp settings and the devices -> where every buffer goes, whether it fits,
/// and the largest n_ctx that fits for each KV cache type.

#include "kvfit/runtime.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit {

/// Default free memory kept on each GPU: 1024 MiB, the target of llama.cpp's own --fit
/// (common/common.h: fit_params_target = 1024 MiB per device). It covers the CUDA context (a few hundred
/// MiB), the driver's and other processes' memory. `--margin` changes it.
inline constexpr uint64_t default_margin_bytes = 1024ull << 20;

/// One GPU as the planner sees it.
struct device_spec {
    std::string name;          ///< display name ("GPU0", "RTX 4060", "24GiB")
    uint64_t memory_bytes = 0; ///< usable memory (total or free), bytes
};

/// Parse a size: "8GiB", "6.6GB", "512MiB", "24G" (= GiB, as llama.cpp and nvidia-smi speak), "1024" bytes.
/// Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB, TB) units are exact; the result is rounded down to
/// a byte. Throws kvfit::error for an empty, negative, non-numeric or over-2^60 value or an unknown unit.
uint64_t parse_size(std::string_view text);

/// Where llama.cpp puts tensors: -ngl, --no-kv-offload, -ts, and MoE experts kept on the CPU.
struct placement_settings {
    int32_t n_gpu_layers = -1;        ///< -ngl; -1 (or anything >= n_layer + 1) offloads every block and the output
    bool no_kv_offload = false;       ///< --no-kv-offload: KV caches and recurrent state in host memory
    std::vector<double> tensor_split; ///< -ts proportions per GPU; empty = by device memory (llama.cpp: by free memory)
    uint32_t n_cpu_moe = 0;           ///< --n-cpu-moe N: routed experts of the first N blocks on the CPU
    bool cpu_moe = false;             ///< --cpu-moe: all routed experts on the CPU
    /// -ot/--override-tensor "regex=CPU" rules, matched with std::regex_search as llama.cpp does
    /// (common/arg.cpp, tensor_buft_overrides) against each block's tensor names. kvfit keeps tensors per
    /// block, not per name, so a rule is tested on a representative routed-expert name
    /// ("blk.<il>.ffn_up_exps.weight": moves the block's expert bytes) and on a representative non-expert
    /// name ("blk.<il>.attn_q.weight": moves the rest of the block). Only the CPU target is modelled.
    std::vector<std::string> override_tensor_cpu;
};

/// Memory on one device (or the host) under a plan.
struct device_usage {
    std::string name;            ///< GPU name, or "host" for system RAM
    bool is_host = false;        ///< true for system RAM
    uint64_t capacity_bytes = 0; ///< device memory; 0 for the host (unbounded here)
    uint64_t margin_bytes = 0;   ///< kept free on this device
    uint32_t n_layers = 0;       ///< blocks placed here (the output layer not counted)
    bool has_output = false;     ///< output layer (and its logits) placed here
    buffer_set used;             ///< bytes per buffer kind
    /// Bytes left after the margin: capacity - margin - used.total(); negative when it overflows.
    int64_t free_bytes() const;
    /// True when used.total() + margin <= capacity (always true for the host).
    bool fits() const;
};

/// A complete llama.cpp plan for one setting.
struct llamacpp_plan {
    llamacpp_settings settings;          ///< the settings as given
    placement_settings placement;        ///< the placement as given
    llamacpp_context ctx;                ///< sizes as llama.cpp sets them
    std::vector<kv_cache_buffer> kv;     ///< KV caches
    recurrent_buffer rs;                 ///< recurrent state
    buffer_set total;                    ///< all buffers, all devices
    std::vector<device_usage> devices;   ///< GPUs in order, then the host
    uint32_t n_gpu_layers = 0;           ///< effective -ngl (output layer counted, as llama.cpp logs "offloaded N/M")
    /// Per block il (length n_layer): index into `devices` of the device -ngl gives the block; its KV cache
    /// and recurrent state live there unless --no-kv-offload. Read by the speed model (speed.h).
    std::vector<uint32_t> layer_device;
    /// Per block il: device of the block's non-expert weights (the host when an -ot rule moves them).
    std::vector<uint32_t> weight_device;
    /// Per block il: device of the block's routed-expert weights (the host under --cpu-moe, --n-cpu-moe, -ot).
    std::vector<uint32_t> expert_device;
    bool fits() const;                   ///< every GPU within capacity - margin
};

/// Plan a setting on the given GPUs (empty = CPU only: everything in host memory).
/// Placement follows llama.cpp src/llama-model.cpp load_tensors: the token embedding stays on the CPU;
/// block il is offloaded when il >= n_layer + 1 - ngl, the output layer whenever ngl >= 1; offloaded blocks
/// are split across GPUs by -ts proportions (upper_bound over cumulative fractions). KV and recurrent state
/// live with their layer unless --no-kv-offload. The output buffer is host memory. The compute buffer is
/// charged to every device that runs part of the graph (see llamacpp_compute_bytes).
/// Throws kvfit::error for invalid settings (see llamacpp_context_size) or a -ts of the wrong length.
llamacpp_plan plan_llamacpp(const model_desc & m, const llamacpp_settings & s, const placement_settings & p,
                            const std::vector<device_spec> & gpus, uint64_t margin_bytes = default_margin_bytes);

/// The largest n_ctx (a multiple of 256 x streams) for which plan_llamacpp(...) fits with the given cache
/// types, searching up to the model's n_ctx_train (or `limit` when non-zero). 0 when not even 256 tokens fit.
/// Monotone search over the KV size; the compute buffer is re-evaluated at each candidate.
uint64_t max_fitting_n_ctx(const model_desc & m, llamacpp_settings s, const placement_settings & p,
                           const std::vector<device_spec> & gpus, uint64_t margin_bytes, uint64_t limit = 0);

} // namespace kvfit
