#pragma once
// Internals of the vLLM policy shared by vllm.cpp (specs, pages, block size, groups) and vllm_pool.cpp
// (budget, blocks, concurrency, checks). Not part of the public API.
#include "kvfit/serving.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvfit::detail {

inline uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/// Bytes of one element of an HF / torch dtype name: float32 4, bfloat16/float16 2, fp8/int8 1.
/// Empty or "auto" -> `fallback`. Throws kvfit::error for an unknown name (`where` names the flag).
uint32_t vllm_dtype_bytes(const std::string & name, uint32_t fallback, const std::string & where);

/// Bytes of a weight group: its bytes when known, else n_params x the model dtype's element size.
inline uint64_t weight_bytes(const weight_group & g, uint32_t dtype_s) { return g.bytes ? g.bytes : g.n_params * dtype_s; }

/// Recurrent state of one layer on one TP rank, bytes (MambaStateShapeCalculator, n_spec = 0; RULES §1.2):
/// GDN conv (k-1) x (2 H_k D_k + H_v D_v)/tp, temporal (H_v/tp) x D_v x D_k; Mamba2 with groups replicated when
/// n_groups % tp != 0; Mamba1; short_conv. Element sizes conv_s and ssm_s. Throws kvfit::error for rwkv.
/// Qwen3.5-27B, tp 1, bf16 conv, f32 temporal: conv 61,440, temporal 3,145,728.
void recurrent_state_bytes(const model_desc & m, uint32_t tp, uint32_t conv_s, uint32_t ssm_s, uint64_t & conv,
                           uint64_t & ssm);

/// The KV-cache layout of a model under resolved settings, global over all layers (before PP projection).
struct vllm_layout {
    uint32_t block_size = 16;            ///< attention block size (after hybrid alignment)
    bool raised = false;                 ///< block size raised by the hybrid alignment
    uint32_t mamba_block_size = 0;       ///< tokens per mamba block (mode all) ; else = block_size
    uint32_t n_head_kv_rank = 0;         ///< heads per rank of the first attention layer
    uint64_t attn1 = 0;                  ///< page of one token of the first attention layer
    uint64_t mamba_conv = 0, mamba_ssm = 0; ///< mamba state parts per layer per rank, bytes
    double padding_pct = 0;              ///< mamba page padding
    bool uniform_type = false;           ///< one attention type, pages differ per layer
    uint64_t page = 0;                   ///< the unified page (max page when uniform_type)
    uint32_t group_size = 0;
    std::vector<vllm_group> groups;
    std::vector<std::vector<uint32_t>> group_layers; ///< layer indices of each group
    std::vector<uint64_t> layer_page;    ///< per layer page (0 without cache); used when uniform_type
    std::vector<uint32_t> group_window;  ///< window (sliding) or chunk (chunked) of each group
    std::vector<std::string> notes;
};

/// Specs, pages, block-size alignment and groups (vllm.cpp). `s` has defaults resolved.
vllm_layout vllm_kv_layout(const model_desc & m, const vllm_settings & s);

/// Blocks one request of `len` tokens holds in each group (kv_cache_interface.py max_memory_usage_bytes / page).
void vllm_fill_per_request(vllm_layout & lay, const vllm_settings & s, uint64_t len);

/// Bytes one block costs on the worker holding layers [first, first + n): tensors x page, or the sum of the
/// stage's pages when uniform_type. `n_tensors` receives the tensor count.
uint64_t vllm_stage_block_bytes(const vllm_layout & lay, uint32_t first, uint32_t n, uint32_t & n_tensors);

} // namespace kvfit::detail
