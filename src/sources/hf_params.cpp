// Parameter counts from the shapes of a model description, per block, as llama.cpp v0.5.0's loaders create the
// tensors (src/models/<arch>.cpp load_arch_tensors; the HF modeling files create the same matrices). Bytes stay 0
// (apply_weight_format sets them). MTP / NextN blocks are counted apart in weights.mtp (an estimate: one block like
// the last decoder block plus eh_proj and its norms), not in the totals: published totals exclude them
// (Qwen3-Next-80B-A3B 79,674,391,296) and llama.cpp does not run them for plain decoding.
#include "sources/hf_detail.h"

namespace kvfit::detail {
namespace {

// Softmax attention (models/llama.cpp create_tensor_qkv, gemma4.cpp, mimo2.cpp, step35.cpp): q n_embd x
// n_head*hd_k (x2 with an output gate: Qwen3-Next/Qwen3.5), k n_embd x n_kv*hd_k, v n_embd x n_kv*hd_v (none when V
// is K: Gemma 4 attention_k_eq_v), o n_head*hd_v x n_embd; biases; q/k norms per head (hd_k each) or over all heads
// (MiniMax-M2 qk_norm_type per_layer); sinks (n_head); an output gate n_embd x gate[il] (Step, Laguna g_proj).
uint64_t attention_params(const hf_build & b, uint32_t il) {
    const model_desc & m = b.m;
    const param_flags & f = b.flags;
    const uint64_t q = uint64_t(m.n_head[il]) * m.head_dim_k[il] * (b.attn_gate ? 2 : 1);
    const uint64_t k = uint64_t(m.n_head_kv[il]) * m.head_dim_k[il];
    const uint64_t v = b.no_v_proj[il] ? 0 : uint64_t(m.n_head_kv[il]) * m.head_dim_v[il];
    const uint64_t o = uint64_t(m.n_head[il]) * m.head_dim_v[il];
    uint64_t n = m.n_embd * (q + k + v) + o * m.n_embd;
    if (f.qkv_bias) n += q + k + v;
    if (f.o_bias) n += m.n_embd;
    if (f.qk_norm) n += b.qk_norm_full ? uint64_t(m.n_head[il]) * m.head_dim_k[il] + k : 2ull * m.head_dim_k[il];
    if (b.sinks[il]) n += m.n_head[il];
    n += uint64_t(m.n_embd) * b.gate[il]; // output gate (Step g_proj per head, Laguna per head or per element)
    if (b.indexer[il]) { // MSA (models/minimax-m3.cpp): indexer q_proj n_embd x idx_heads*idx_dim, k_proj, q/k norms
        const uint64_t d = b.index_head_dim, h = b.index_n_head;
        n += uint64_t(m.n_embd) * h * d + uint64_t(m.n_embd) * d + 2 * d;
    }
    return n;
}

// MLA (models/deepseek2.cpp): wq_a n_embd x q_lora + q_a_norm + wq_b q_lora x n_head*(nope+rope) (or wq n_embd x
// n_head*(nope+rope)); wkv_a_mqa n_embd x (kv_lora+rope); kv_a_norm kv_lora; wk_b + wv_b kv_lora x n_head*(nope+v);
// wo n_head*v x n_embd. DSA indexer (models/deepseek32.cpp, glm-dsa.cpp) on layers that own one: indexer_attn_q_b
// q_lora x idx_heads*idx_dim, indexer_attn_k n_embd x idx_dim, k_norm weight + bias, indexer_proj n_embd x idx_heads.
uint64_t mla_params(const hf_build & b, uint32_t il) {
    const model_desc & m = b.m;
    const uint64_t n_head = m.n_head[il];
    const uint64_t qk = m.head_dim_qk_nope + m.n_rot_mla;
    uint64_t n = m.q_lora_rank > 0 ? uint64_t(m.n_embd) * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * n_head * qk
                                   : uint64_t(m.n_embd) * n_head * qk;
    n += uint64_t(m.n_embd) * (m.kv_lora_rank + m.n_rot_mla) + m.kv_lora_rank;
    n += uint64_t(m.kv_lora_rank) * n_head * (m.head_dim_qk_nope + m.head_dim_v_mla);
    n += n_head * m.head_dim_v_mla * m.n_embd;
    if (b.indexer[il]) {
        const uint64_t d = b.index_head_dim, h = b.index_n_head;
        n += uint64_t(m.q_lora_rank) * h * d + uint64_t(m.n_embd) * d + 2 * d + uint64_t(m.n_embd) * h;
    }
    return n;
}

// DeepSeek-V4 block (models/deepseek4.cpp load_arch_tensors): sinks, wq_a, q_a_norm, wq_b, wkv n_embd x hd,
// kv_norm, wo_a n_head*hd*o_lora (grouped), wo_b o_groups*o_lora x n_embd; hyper-connections for attention and FFN
// (fn hc_dim x (2+hc)*hc, base, scale 3); by compress ratio r: compressor wkv/wgate n_embd x coff*hd (coff 2 for r 4),
// ape coff*hd x r, norm hd; r 4 adds the indexer (proj, q_b, compressor wkv/wgate n_embd x 2*idx, ape, norm).
uint64_t dsv4_params(const hf_build & b, uint32_t il) {
    const model_desc & m = b.m;
    const uint64_t e = m.n_embd, hd = m.head_dim_k[il], h = m.n_head[il], ql = m.q_lora_rank;
    uint64_t n = h + e * ql + ql + ql * h * hd + e * hd + hd + h * hd * b.o_lora + uint64_t(b.o_groups) * b.o_lora * e;
    const uint64_t hc_dim = uint64_t(b.hc_mult) * e, hc_mix = uint64_t(2 + b.hc_mult) * b.hc_mult;
    n += 2 * (hc_dim * hc_mix + hc_mix + 3);
    const uint64_t r = b.compress[il];
    if (r != 0) {
        const uint64_t coff = r == 4 ? 2 : 1;
        n += 2 * e * coff * hd + coff * hd * r + hd;
        if (r == 4) {
            const uint64_t d = b.index_head_dim, ih = b.index_n_head;
            n += e * ih + ql * ih * d + 2 * e * 2 * d + 2 * d * r + d;
        }
    }
    return n;
}

// Gated DeltaNet (hf qwen3_next Qwen3NextGatedDeltaNet; Qwen3.5 splits the same rows into in_proj_qkv/z/b/a):
// in_proj_qkvz n_embd x (2*key_dim + 2*value_dim), in_proj_ba n_embd x 2*H_v, conv1d (2*key_dim + value_dim) x
// kernel (no bias), dt_bias H_v, A_log H_v, norm D_v, out_proj value_dim x n_embd.
uint64_t gated_deltanet_params(const model_desc & m) {
    const uint64_t key_dim = uint64_t(m.ssm_n_group) * m.ssm_d_state;
    const uint64_t value_dim = m.ssm_d_inner;
    uint64_t n = uint64_t(m.n_embd) * (2 * key_dim + 2 * value_dim) + uint64_t(m.n_embd) * 2 * m.ssm_n_head;
    n += (2 * key_dim + value_dim) * m.ssm_d_conv;
    n += 2ull * m.ssm_n_head + m.ssm_head_dim;
    n += value_dim * m.n_embd;
    return n;
}

// Mamba2 (hf nemotron_h NemotronHMamba2Mixer): in_proj n_embd x (2*d_inner + 2*ng*ds + n_heads),
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

// Kimi Delta Attention (models/kimi-linear.cpp): q/k/v n_embd x d_inner, their short convs d_inner x kernel each,
// gate f_a n_embd x hd + f_b hd x d_inner, beta n_embd x heads, A_log and dt_bias, g_a/g_b output gate, norm hd,
// o d_inner x n_embd. An estimate: the low-rank gate widths are taken as head_dim.
uint64_t kda_params(const model_desc & m) {
    const uint64_t e = m.n_embd, d = m.ssm_d_inner, hd = m.ssm_head_dim, h = m.ssm_n_head;
    return 3 * e * d + 3 * d * m.ssm_d_conv + 2 * (e * hd + hd * d) + e * h + 2 * h + d + hd + d * e;
}

// MiniMax lightning attention (llama.cpp models/minimax-01.cpp load_arch_tensors; vLLM MiniMaxText01LinearAttention):
// wqkv n_embd x 3 d_inner, output gate n_embd x d_inner, out d_inner x n_embd, norm d_inner (d_inner = heads x head_dim).
uint64_t lightning_params(const model_desc & m) {
    const uint64_t e = m.n_embd, d = m.ssm_d_inner;
    return 3 * e * d + e * d + d * e + d;
}

// One MLP of width n_ff at width `n_in`: gate/up/down (3 matrices) or up/down (2, relu2), with optional biases.
uint64_t mlp_params(const hf_build & b, uint64_t n_in, uint64_t n_ff, bool bias) {
    const uint64_t n_mat = b.flags.ffn_gated ? 3 : 2;
    uint64_t n = n_mat * n_in * n_ff;
    if (bias) n += (n_mat - 1) * n_ff + n_in;
    return n;
}

// Routed experts (counted as expert_params, at the latent width when moe_latent_size is set, with the latent
// down/up projections: models/nemotron-h.cpp ffn_latent_down/up), router (+ bias), shared expert(s) and their gate.
void moe_params(const hf_build & b, weight_group & g, uint32_t il) {
    const model_desc & m = b.m;
    const param_flags & f = b.flags;
    const uint64_t width = b.moe_latent > 0 ? b.moe_latent : m.n_embd;
    g.expert_params = m.n_expert * mlp_params(b, width, m.n_ff_exp, f.expert_bias);
    g.n_params += g.expert_params;
    if (b.moe_latent > 0) g.n_params += 2ull * m.n_embd * b.moe_latent;
    g.n_params += uint64_t(m.n_embd) * m.n_expert + (f.router_bias ? m.n_expert : 0) + (f.score_bias ? m.n_expert : 0);
    if (m.n_ff_shexp > 0) g.n_params += mlp_params(b, m.n_embd, m.n_ff_shexp, f.mlp_bias) + (f.shexp_gate ? m.n_embd : 0);
    // DeepSeek-V4 hash-routed layers: a token-id -> expert table instead of the score bias
    if (il < b.n_hash_layers) g.n_params += uint64_t(m.n_expert_used) * m.n_vocab - (f.score_bias ? m.n_expert : 0);
    // Gemma 4 (models/gemma4.cpp): router input scale, per-expert scale, and three more norms
    if (b.ffn_dense[il] > 0) g.n_params += mlp_params(b, m.n_embd, b.ffn_dense[il], f.mlp_bias) + 4ull * m.n_embd + m.n_expert;
}

weight_group layer_params(const hf_build & b, uint32_t il) {
    const model_desc & m = b.m;
    weight_group g;
    g.n_params = uint64_t(b.n_norm[il]) * m.n_embd;
    switch (b.mix[il]) {
    case mixer::attention:      g.n_params += attention_params(b, il); break;
    case mixer::mla:            g.n_params += mla_params(b, il); break;
    case mixer::dsv4:           g.n_params += dsv4_params(b, il); break;
    case mixer::gated_deltanet: g.n_params += gated_deltanet_params(m); break;
    case mixer::mamba2:         g.n_params += mamba2_params(b); break;
    case mixer::kda:            g.n_params += kda_params(m); break;
    case mixer::lightning:      g.n_params += lightning_params(m); break;
    case mixer::none:           break;
    }
    if (b.attn_linear[il]) g.n_params += uint64_t(m.n_embd) * m.n_embd;
    if (b.ffn_linear[il]) g.n_params += uint64_t(m.n_embd) * m.n_embd;
    if (m.is_moe[il]) moe_params(b, g, il);
    else if (m.n_ff[il] > 0) g.n_params += mlp_params(b, m.n_embd, m.n_ff[il], b.flags.mlp_bias);
    // per-layer embeddings (models/gemma4.cpp, gemma3n.cpp): inp_gate n_embd x ple, proj ple x n_embd, post norm
    if (b.n_embd_per_layer > 0) g.n_params += 2ull * m.n_embd * b.n_embd_per_layer + m.n_embd;
    return g;
}

} // namespace

void count_params(hf_build & b) {
    model_desc & m = b.m;
    model_weights & w = m.weights;
    w.layers.resize(m.n_layer);
    for (uint32_t il = 0; il < m.n_layer; ++il) w.layers[il] = layer_params(b, il);
    w.token_embd.n_params = uint64_t(m.n_vocab) * m.n_embd;
    if (b.n_embd_per_layer > 0) { // per_layer_token_embd, per_layer_model_proj, per_layer_proj_norm
        const uint64_t ple = uint64_t(b.n_embd_per_layer) * m.n_layer;
        w.token_embd.n_params += uint64_t(b.n_vocab_per_layer) * ple;
        w.other.n_params += uint64_t(m.n_embd) * ple + b.n_embd_per_layer;
    }
    if (b.hc_mult > 0) { // hc_head_fn hc_dim x hc, hc_head_base hc, hc_head_scale 1 (models/deepseek4.cpp)
        w.other.n_params += uint64_t(b.hc_mult) * m.n_embd * b.hc_mult + b.hc_mult + 1;
    }
    // The final norm belongs to the output group; with tied embeddings the head is token_embd itself, so the
    // output group is empty and the norm is counted under `other`.
    if (m.tied_embeddings) {
        w.other.n_params += m.n_embd;
    } else {
        w.output.n_params = uint64_t(m.n_vocab) * m.n_embd + m.n_embd;
    }
    if (m.n_layer_mtp_apart > 0) {
        // one block like the last decoder block, eh_proj 2*n_embd x n_embd, enorm, hnorm, shared-head norm; DeepSeek's
        // and GLM's checkpoints (num_nextn_predict_layers) also store an embedding and a head per MTP layer
        uint64_t block = w.layers.back().n_params + 2ull * m.n_embd * m.n_embd + 3ull * m.n_embd;
        if (b.mtp_own_head) block += 2ull * m.n_vocab * m.n_embd;
        w.mtp.n_params = block * m.n_layer_mtp_apart;
    }
}

} // namespace kvfit::detail
