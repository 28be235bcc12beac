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

} // namespace kvfit::detail
