// Parameter counts from the shapes of a model description, per block, as the HF modeling files create the
// tensors. Bytes stay 0 (apply_weight_format sets them). MTP/NextN blocks are not counted: they are not
// part of n_layer, and the published totals of Qwen3-Next (79,674,391,296) exclude them.
#include "sources/hf_detail.h"

namespace kvfit::detail {
namespace {

// Attention of a full/swa/chunked layer (LlamaAttention and its descendants):
// q_proj n_embd x n_head*hd (x2 with an output gate, Qwen3-Next/Qwen3.5), k_proj and v_proj
// n_embd x n_head_kv*hd, o_proj n_head*hd x n_embd, optional biases, q/k RMSNorm of hd, gpt-oss sinks.
uint64_t attention_params(const hf_build & b, uint32_t il) {
    const model_desc & m = b.m;
    const param_flags & f = b.flags;
    const uint64_t q = uint64_t(m.n_head[il]) * m.head_dim_k[il] * (f.attn_gate ? 2 : 1);
    const uint64_t kv = uint64_t(m.n_head_kv[il]) * m.head_dim_k[il];
    const uint64_t o = uint64_t(m.n_head[il]) * m.head_dim_v[il];
    uint64_t n = m.n_embd * (q + 2 * kv) + o * m.n_embd;
    if (f.qkv_bias) n += q + 2 * kv;
    if (f.o_bias) n += m.n_embd;
    if (f.qk_norm) n += 2ull * m.head_dim_k[il];
    if (f.sinks) n += m.n_head[il];
    return n;
}

// DeepSeek MLA (modeling_deepseek_v3.py DeepseekV3Attention): q_a_proj n_embd x q_lora + q_a_layernorm +
// q_b_proj q_lora x n_head*(nope+rope) (or q_proj n_embd x n_head*(nope+rope)); kv_a_proj_with_mqa
// n_embd x (kv_lora+rope); kv_a_layernorm kv_lora; kv_b_proj kv_lora x n_head*(nope+v); o_proj n_head*v x n_embd.
uint64_t mla_params(const hf_build & b, uint32_t il) {
    const model_desc & m = b.m;
    const uint64_t n_head = m.n_head[il];
    const uint64_t qk = m.head_dim_qk_nope + m.n_rot_mla;
    uint64_t n = m.q_lora_rank > 0 ? uint64_t(m.n_embd) * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * n_head * qk
                                   : uint64_t(m.n_embd) * n_head * qk;
    n += uint64_t(m.n_embd) * (m.kv_lora_rank + m.n_rot_mla) + m.kv_lora_rank;
    n += uint64_t(m.kv_lora_rank) * n_head * (m.head_dim_qk_nope + m.head_dim_v_mla);
    n += n_head * m.head_dim_v_mla * m.n_embd;
    return n;
}

// Gated DeltaNet (modeling_qwen3_next.py Qwen3NextGatedDeltaNet; Qwen3.5 splits the same rows into
// in_proj_qkv/z/b/a): in_proj_qkvz n_embd x (2*key_dim + 2*value_dim), in_proj_ba n_embd x 2*H_v,
// conv1d (2*key_dim + value_dim) x kernel (no bias), dt_bias H_v, A_log H_v, norm D_v, out_proj value_dim x n_embd.
uint64_t gated_deltanet_params(const model_desc & m) {
    const uint64_t key_dim = uint64_t(m.ssm_n_group) * m.ssm_d_state;
    const uint64_t value_dim = m.ssm_d_inner;
    uint64_t n = uint64_t(m.n_embd) * (2 * key_dim + 2 * value_dim) + uint64_t(m.n_embd) * 2 * m.ssm_n_head;
    n += (2 * key_dim + value_dim) * m.ssm_d_conv;
    n += 2ull * m.ssm_n_head + m.ssm_head_dim;
    n += value_dim * m.n_embd;
    return n;
}

// Mamba2 (modeling_nemotron_h.py NemotronHMamba2Mixer): in_proj n_embd x (2*d_inner + 2*ng*ds + n_heads),
// conv1d (d_inner + 2*ng*ds) x kernel (+ bias), dt_bias, A_log, D of n_heads, gated norm d_inner,
// out_proj d_inner x n_embd; in/out biases with use_bias.
uint64_t mamba2_params(const hf_build & b) {
    const model_desc & m = b.m;
    const uint64_t conv_dim = m.ssm_d_inner + 2ull * m.ssm_n_group * m.ssm_d_state;
    const uint64_t in_out = m.ssm_d_inner + conv_dim + m.ssm_n_head;
    uint64_t n = m.n_embd * in_out + conv_dim * m.ssm_d_conv + 3ull * m.ssm_n_head + m.ssm_d_inner;
    n += uint64_t(m.ssm_d_inner) * m.n_embd;
    if (b.flags.conv_bias) n += conv_dim;
    if (b.flags.ssm_proj_bias) n += in_out + m.n_embd;
    return n;
}

// One MLP of width n_ff: gate/up/down (3 matrices) or up/down (2, relu2), with optional biases.
uint64_t mlp_params(const hf_build & b, uint64_t n_ff, bool bias) {
    const uint64_t n_mat = b.flags.ffn_gated ? 3 : 2;
    uint64_t n = n_mat * b.m.n_embd * n_ff;
    if (bias) n += (n_mat - 1) * n_ff + b.m.n_embd;
    return n;
}

// Routed experts (counted as expert_params), router, shared expert(s) and their gate.
void moe_params(const hf_build & b, weight_group & g) {
    const model_desc & m = b.m;
    const param_flags & f = b.flags;
    g.expert_params = m.n_expert * mlp_params(b, m.n_ff_exp, f.expert_bias);
    g.n_params += g.expert_params;
    g.n_params += uint64_t(m.n_embd) * m.n_expert + (f.router_bias ? m.n_expert : 0) + (f.score_bias ? m.n_expert : 0);
    if (m.n_ff_shexp > 0) g.n_params += mlp_params(b, m.n_ff_shexp, f.mlp_bias) + (f.shexp_gate ? m.n_embd : 0);
}

weight_group layer_params(const hf_build & b, uint32_t il) {
    const model_desc & m = b.m;
    weight_group g;
    g.n_params = uint64_t(b.n_norm[il]) * m.n_embd;
    switch (b.kind[il]) {
    case layer_kind::full:
    case layer_kind::swa:
    case layer_kind::chunked:   g.n_params += attention_params(b, il); break;
    case layer_kind::mla:       g.n_params += mla_params(b, il); break;
    case layer_kind::recurrent: g.n_params += m.rec_kind == recurrent_kind::mamba2 ? mamba2_params(b)
                                                                                    : gated_deltanet_params(m);
                                break;
    case layer_kind::none:      break;
    }
    if (b.attn_linear[il]) g.n_params += uint64_t(m.n_embd) * m.n_embd;
    if (b.ffn_linear[il]) g.n_params += uint64_t(m.n_embd) * m.n_embd;
    if (m.is_moe[il]) moe_params(b, g);
    else if (m.n_ff[il] > 0) g.n_params += mlp_params(b, m.n_ff[il], b.flags.mlp_bias);
    return g;
}

} // namespace

void count_params(hf_build & b) {
    model_weights & w = b.m.weights;
    w.layers.resize(b.m.n_layer);
    for (uint32_t il = 0; il < b.m.n_layer; ++il) w.layers[il] = layer_params(b, il);
    w.token_embd.n_params = uint64_t(b.m.n_vocab) * b.m.n_embd;
    // The final norm belongs to the output group; with tied embeddings the head is token_embd itself, so the
    // output group is empty and the norm is counted under `other`.
    if (b.m.tied_embeddings) {
        w.other.n_params += b.m.n_embd;
    } else {
        w.output.n_params = uint64_t(b.m.n_vocab) * b.m.n_embd + b.m.n_embd;
    }
}

} // namespace kvfit::detail
