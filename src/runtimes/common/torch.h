#pragma once
// Shared by the runtimes that load a Hugging Face checkpoint with torch (vLLM, SGLang): element sizes of torch dtypes,
// weight bytes from the checkpoint dtype, and the per-rank shapes of recurrent state both engines allocate
// (vLLM's MambaStateShapeCalculator; SGLang allocates the same shapes, RULES §5). Not part of the public API.
#include "kvfit/model.h"

#include <cstdint>
#include <string>

namespace kvfit::detail {

inline uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/// Bytes of one element of an HF / torch dtype name: float32 4, bfloat16/float16 2, fp8/int8 1.
/// Empty or "auto" -> `fallback`. Throws kvfit::error for an unknown name (`where` names the flag).
uint32_t torch_dtype_bytes(const std::string & name, uint32_t fallback, const std::string & where);

/// Bytes of a weight group: its bytes when known, else n_params x the model dtype's element size.
inline uint64_t weight_bytes(const weight_group & g, uint32_t dtype_s) { return g.bytes ? g.bytes : g.n_params * dtype_s; }

/// Recurrent state of one layer on one TP rank, bytes (MambaStateShapeCalculator, n_spec = 0; RULES §1.2):
/// GDN conv (k-1) x (2 H_k D_k + H_v D_v)/tp, temporal (H_v/tp) x D_v x D_k; Mamba2 with groups replicated when
/// n_groups % tp != 0; Mamba1; short_conv; KDA; MiniMax lightning attention (no conv; temporal (H/tp) x D x D in
/// conv_s, vLLM's linear_attention_state_dtype). Element sizes conv_s and ssm_s. Throws kvfit::error for rwkv.
/// Qwen3.5-27B, tp 1, bf16 conv, f32 temporal: conv 61,440, temporal 3,145,728.
void recurrent_state_bytes(const model_desc & m, uint32_t tp, uint32_t conv_s, uint32_t ssm_s, uint64_t & conv,
                           uint64_t & ssm);

/// Refuses a tensor-parallel size `tp` (>= 1) that the KV or Gated DeltaNet heads do not divide, as vLLM and SGLang do at
/// model construction; `runtime` ("vllm", "sglang") and `flag` ("-tp", "--tp") word the one-line kvfit::error, which
/// always contains "does not divide" (the TP auto-choice skips such sizes). Query heads are each runtime's own check.
/// - KV heads of every attention layer (n_head_kv > 0): for tp >= n_head_kv the heads are replicated and tp % n_head_kv
///   must be 0, else n_head_kv % tp must be 0. vLLM vllm/model_executor/layers/linear.py QKVParallelLinear.__init__
///   (divide(tp_size, total_num_kv_heads) / divide(total_num_kv_heads, tp_size); divide -> ensure_divisibility in
///   vllm/distributed/utils.py asserts "{} is not divisible by {}"); SGLang python/sglang/srt/layers/linear.py
///   QKVParallelLinear.__init__ (the same two divide calls) and the per-model attention rule (models/qwen2.py,
///   llama.py: assert total_num_kv_heads % tp_size == 0 when >= tp_size, else tp_size % total_num_kv_heads == 0).
///   MLA layers have n_head_kv 1: always divisible.
/// - Gated DeltaNet: key heads H_k (ssm_n_group) and value heads H_v (ssm_n_head) each % tp == 0. vLLM
///   vllm/model_executor/layers/mamba/gdn_linear_attn.py (local heads num_k_heads // tp_size, num_v_heads // tp_size;
///   its sharded projections divide 2 H_k D_k + H_v D_v by tp); SGLang python/sglang/srt/models/qwen3_next.py
///   Qwen3GatedDeltaNet (num_k_heads // attn_tp_size, num_v_heads // attn_tp_size; ColumnParallelLinear divide()s
///   conv_dim and the qkvz / ba projections by the TP size).
/// Example: Qwen2.5-7B (28 query, 4 KV heads) at tp 7 is refused; Qwen3.5-27B (4 KV, 16 key, 48 value heads) at tp 3.
void check_tp_divides_heads(const model_desc & m, uint32_t tp, const char * runtime, const char * flag);

} // namespace kvfit::detail
