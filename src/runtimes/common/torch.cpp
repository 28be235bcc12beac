// Torch dtypes and recurrent state shapes shared by vLLM and SGLang (src/runtimes/common/torch.h).
#include "runtimes/common/torch.h"

#include "kvfit/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace kvfit::detail {

uint32_t torch_dtype_bytes(const std::string & name, uint32_t fallback, const std::string & where) {
    if (name.empty() || name == "auto") return fallback;
    if (name == "float32" || name == "float" || name == "fp32") return 4;
    if (name == "bfloat16" || name == "float16" || name == "half" || name == "bf16" || name == "fp16") return 2;
    if (name.starts_with("fp8") || name == "int8_per_token_head" || name == "int8" || name == "uint8") return 1;
    throw error(fmt::format("{} '{}': unknown dtype (float32, bfloat16, float16)", where, name));
}

void check_tp_divides_heads(const model_desc & m, uint32_t tp, const char * runtime, const char * flag) {
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const uint32_t kv = m.n_head_kv[il];
        if (kv == 0 || (tp >= kv ? tp % kv : kv % tp) == 0) continue;
        throw error(fmt::format("{}: {} {} does not divide the {} KV heads of layer {} and is not a multiple of them "
                                "(QKVParallelLinear: AssertionError: {} is not divisible by {}); give a TP size that "
                                "divides {} or is a multiple of it", runtime, flag, tp, kv, il, std::max(tp, kv),
                                std::min(tp, kv), kv));
    }
    if (m.rec_kind != recurrent_kind::gated_deltanet || m.count(layer_kind::recurrent) == 0) return;
    for (const auto & [n, what] : {std::pair{m.ssm_n_group, "key"}, std::pair{m.ssm_n_head, "value"}}) {
        if (n % tp != 0) {
            throw error(fmt::format("{}: {} {} does not divide the {} Gated DeltaNet (linear attention) {} heads: "
                                    "AssertionError: {} is not divisible by {}", runtime, flag, tp, n, what, n, tp));
        }
    }
}

void recurrent_state_bytes(const model_desc & m, uint32_t tp_, uint32_t conv_s, uint32_t ssm_s, uint64_t & conv,
                           uint64_t & ssm) {
    const uint64_t tp = tp_, k1 = m.ssm_d_conv - 1;
    switch (m.rec_kind) {
    case recurrent_kind::gated_deltanet: // conv (k-1) x (2 H_k D_k + H_v D_v)/tp; temporal (H_v/tp) x D_v x D_k
        conv = k1 * ((2ull * m.ssm_n_group * m.ssm_d_state + uint64_t(m.ssm_n_head) * m.ssm_head_dim) / tp);
        ssm = uint64_t(m.ssm_n_head / tp) * m.ssm_head_dim * m.ssm_d_state;
        break;
    case recurrent_kind::mamba2: { // groups replicated when n_groups % tp != 0
        const uint64_t ng = m.ssm_n_group + (m.ssm_n_group % tp == 0 ? 0 : tp - m.ssm_n_group);
        conv = k1 * ((m.ssm_d_inner + 2 * ng * m.ssm_d_state) / tp);
        ssm = uint64_t(m.ssm_n_head / tp) * m.ssm_head_dim * m.ssm_d_state;
        break;
    }
    case recurrent_kind::mamba1:
        conv = k1 * (m.ssm_d_inner / tp);
        ssm = (m.ssm_d_inner / tp) * uint64_t(m.ssm_d_state);
        break;
    case recurrent_kind::short_conv:
        conv = k1 * ((m.ssm_d_inner ? m.ssm_d_inner : m.n_embd) / tp);
        ssm = 0;
        break;
    case recurrent_kind::kda: // MambaStateShapeCalculator.kda_state_shape: conv (k-1) x (H D + 2 H_k D_k)/tp with
                              // H_k = H, D_k = D; temporal (H/tp) x D x D, always fp32 (RULES §1.2)
        conv = k1 * (3ull * m.ssm_n_head * m.ssm_head_dim / tp) * conv_s;
        ssm = uint64_t(m.ssm_n_head / tp) * m.ssm_head_dim * m.ssm_head_dim * 4;
        return;
    case recurrent_kind::lightning: // MiniMax linear attention (vllm/model_executor/layers/mamba/linear_attn.py
        // MiniMaxText01LinearAttention.get_state_shape): MambaStateShapeCalculator.linear_attention_state_shape
        // (num_heads / tp, head_dim, head_dim), no conv state, in MambaStateDtypeCalculator.linear_attention_state_dtype
        // = --mamba-cache-dtype (auto: the model dtype), the conv states' dtype here
        conv = 0;
        ssm = uint64_t(m.ssm_n_head / tp) * m.ssm_head_dim * m.ssm_head_dim * conv_s;
        return;
    default:
        throw error(fmt::format("recurrent layers of kind {} are not modelled for serving runtimes",
                                recurrent_kind_name(m.rec_kind)));
    }
    conv *= conv_s;
    ssm *= ssm_s;
}

} // namespace kvfit::detail
