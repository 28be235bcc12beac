// Stages of the reserve graph for MLA attention with compressed queries (q_lora_rank > 0), absorbed (K-only latent
// cache), with routed experts, alone (src/models/deepseek2.cpp: Kimi-K2.5, mistral4.cpp = deepseek2 graph) or with
// the DSA lightning indexer (src/models/deepseek32.cpp, glm-dsa.cpp; build_attn with top_k, src/llama-graph.cpp).
// Derived from the live set at the peak, dumped by an instrumented ggml-alloc (ggml/src/ggml-alloc.c of v0.5.0,
// swapped into node-llama-cpp's libggml-base.so) on the conformance shapes, and checked against every measured row
// of tests/data/llamacpp_compute_mla.csv (both releases: their compute buffers are equal). Notation as in
// compute_stages.cpp; tensor sizes f32 [.., T] padded to 32 unless said:
//   qr  [q_lora_rank, T]                   (wq_a + attn_q_a_norm)
//   q   [n_head * (qk_nope + rope), T]     (wq_b, viewed as q_nope / q_pe)
//   qna q_nope_absorbed [kv_lora_rank, n_head, T] (wk_b); the FA output kqv [kv_lora_rank, n_head, T] is as large
//   qpe q_pe [rope, n_head, T] (rope)
//   Qc  Qcur = concat(q_nope_absorbed, q_pe) [kv_lora_rank + rope, n_head, T]
//   kv  kv_cmpr [kv_lora_rank, T];  Vo kqv_mla (wv_b) [v_head_dim, n_head, T]
// The small slot counts are allocator artifacts (best fit reuses a freed block of exactly the tensor's size); the
// conditions below encode the shapes measured, and say which.
#include "runtimes/llamacpp/compute.h"

#include <algorithm>

namespace kvfit::detail {

namespace {

struct mla_sizes {
    uint64_t qr = 0, q = 0, qna = 0, qpe = 0, Qc = 0, kv = 0, Vo = 0;
};

mla_sizes mla_of(const model_desc & m, const compute_graph & g) {
    uint64_t n_head = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.kind_of(il) == layer_kind::mla) n_head = std::max<uint64_t>(n_head, m.n_head[il]);
    }
    const uint64_t T = g.n_tokens, kvr = m.kv_lora_rank, rope = m.n_rot_mla;
    mla_sizes x;
    x.qr = pad32(uint64_t(m.q_lora_rank) * T * 4);
    x.q = pad32(n_head * (m.head_dim_qk_nope + rope) * T * 4);
    x.qna = pad32(n_head * kvr * T * 4);
    x.qpe = pad32(n_head * rope * T * 4);
    x.Qc = pad32(n_head * (kvr + rope) * T * 4);
    x.kv = pad32(kvr * T * 4);
    x.Vo = pad32(n_head * m.head_dim_v_mla * T * 4);
    return x;
}

/// Width of the indexer keys (the indexer cache's K width), 0 without an indexer cache.
uint64_t indexer_width(const model_desc & m) {
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & c : m.caches[il]) {
            if (c.kind == cache_kind::indexer) return c.width_k();
        }
    }
    return 0;
}

uint64_t dense_n_ff(const model_desc & m) {
    uint64_t n_ff = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) n_ff = std::max<uint64_t>(n_ff, m.n_ff[il]);
    return n_ff;
}

/// Without flash attention: v_cont, the f16 contiguous copy of the latent V^T [n_kv, kv_lora_rank] per stream, drops
/// into the two freed [n_embd, T] blocks under l_out or the freed q + q_nope_absorbed block while it fits one, else it
/// sits on Qcur under kq (Kimi-Linear-48B at 32K, ub 256: 2E 4.5 MiB, q + q_nope_absorbed 22 MiB, V 32 MiB; exact).
uint64_t latent_v_on_top(const model_desc & m, const compute_graph & g, const mla_sizes & x) {
    const uint64_t V = pad32(g.n_kv * m.kv_lora_rank * 2) * g.n_stream;
    return V > std::max(2 * g.E, x.q + x.qna) ? V : 0;
}

/// Output stage of these graphs: inp_embd, the freed input hole H, `n_e` [n_embd, T] tensors of the last layer
/// (its l_out with result_norm in place among them) and the logits. When H holds at least one of them they are laid
/// out from the hole's start on (the hole merges with the free top: tok + E + n_e E + L), else above it.
/// Measured: Kimi-K2.5 (n_e 3: exact at H < E and H >= 2E), Mistral-Small-4 (n_e 7, see below; -0.16 % at H = 4E).
uint64_t mla_output(const compute_graph & g, uint64_t n_e) {
    const uint64_t H = g.hole();
    return g.tok + g.E + (H >= g.E ? 0 : H) + n_e * g.E + g.L;
}

} // namespace

// MLA + MoE, compressed queries, no indexer (deepseek2.cpp as Kimi-K2.5 and mistral4 build it). Exact on Kimi-K2.5
// (every row, 512 and 163840 vocab); Mistral-Small-4 within 0.16 % (output stage at a 131072 vocabulary, FA, 32K).
uint64_t stages_mla_lora_moe(const model_desc & m, const compute_graph & g) {
    const uint64_t I = g.inputs, E = g.E;
    const mla_sizes x = mla_of(m, g);
    // q == E (Mistral-Small-4: 32 heads x 128 = n_embd): the wq_b output reuses [n_embd, T] blocks exactly, and one
    // more E (plus kv_cmpr) stays under the scores and the output; measured only on that shape
    const bool q_is_E = x.q == E;
    // MoE layers: ffn_norm, the freed kqv_mla block Vo (the router scratch sits in it), ffn_inp, then the routed
    // experts (moe_block: ffn_moe_gate drops into Vo only when it fits). Kimi-K2.5: 2E + Vo + 3 Fm + Dm, exact.
    const uint64_t moe = I + 2 * E + x.Vo + moe_block(m, g, x.Vo);
    uint64_t attn = 0;
    if (g.fa) {
        // Qcur concat of a MoE layer: attn_norm, the freed q + qr block, q_nope_absorbed and q_pe, a freed
        // E + qr + kv_cmpr block, the previous l_out, then Qcur (Mistral-Small-4, exact)
        attn = I + 3 * E + x.q + 2 * x.qr + x.kv + x.qna + x.qpe + x.Qc;
    } else {
        // kq [n_kv, T, n_head] above Qcur; below it l_out, two freed [n_embd, T] blocks (v_cont, the f16 latent
        // V^T, inside them) and the freed q + q_nope_absorbed (Kimi-K2.5, exact); q == E: one E + kv_cmpr more
        attn = I + (q_is_E ? 4 * E + x.kv : 3 * E) + x.q + x.qna + x.Qc + latent_v_on_top(m, g, x) + g.KQ;
    }
    return std::max({moe, attn, mla_output(g, q_is_E ? 7 : 3)});
}

// MLA + MoE + DSA lightning indexer (deepseek32.cpp, glm-dsa.cpp: DeepSeek-V3.2, GLM-5). Every layer's build_attn
// (DSA variant, src/llama-graph.cpp) makes `zeros` = ggml_fill(ggml_new_tensor_4d(f32, 1, n_top_k, T/n_s, n_s)), a
// graph leaf: ggml-alloc allocates every leaf before the first node and frees it after its layer's set_rows, so all
// n_layer of them (Z = 4 * min(n_kv, top_k) * T bytes each, 4 MiB at -ub 512) sit under the layers: 244 MiB on
// DeepSeek-V3.2. The inputs carry both caches' k_idxs and masks (the indexer's f16 always: fused_lid, which needs an
// f16 mask, is on for the CPU) and the indexer's Hadamard matrix attn_inp_k_rot [idx_dim, idx_dim] f32.
// Measured worst: DeepSeek-V3.2 +0.47 % (no FA, 32K x 3), GLM-5 -2.6 % (FA, 3 sequences at 4K: one E more under
// Qcur), GLM-5 with shared indexers (indexer.types) -2.6 %. Not followed (known misses, docs/llamacpp.md): with FA the
// allocator goes through more layouts than `M > E` tells apart (v0.5.0 traces, GLM-5 -ub 512, above the inputs: 204 MiB
// for M <= 16 MiB, 256 MiB for 16 < M <= 24 (layer 4's FA over a second mask-sized add), 268 MiB beyond (below), then
// Qcur-0 + the f32 indexer score [n_kv, T] once 2M outgrows the 100 MiB under Qcur): GLM-5 +11.4 % at n_kv 16384,
// -8.2 % at 65536; DeepSeek-V3.2 +9.9 % at 16384.
uint64_t stages_mla_dsa(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens, E = g.E;
    const mla_sizes x = mla_of(m, g);
    const uint64_t idx_dim = indexer_width(m);
    uint64_t n_dsa = 0; // layers calling the DSA build_attn: every MLA layer (shared-indexer layers reuse a top_k)
    for (uint32_t il = 0; il < m.n_layer; ++il) n_dsa += m.kind_of(il) == layer_kind::mla;
    const uint64_t top_k = std::min<uint64_t>(g.n_kv, m.indexer_top_k);
    const uint64_t Z = pad32(4 * top_k * T);
    const uint64_t M = pad32(g.n_kv * T * 2);              // f16 mask-sized: kq_mask_all fill, kq_mask_top_k add
    const uint64_t lid_inputs = pad32(8 * T) + M + pad32(idx_dim * idx_dim * 4);
    const uint64_t B = g.inputs + lid_inputs + n_dsa * Z;  // inputs + every layer's zeros leaf
    const uint64_t idxq = pad32(uint64_t(m.indexer_n_head) * idx_dim * T * 4); // indexer_q [idx_dim, idx_heads, T]
    const uint64_t Dm = pad32(uint64_t(m.n_embd) * m.n_expert_used * T * 4);   // ffn_moe_down
    // A dense FFN width that is no multiple of n_embd (DeepSeek-V3.2: 18432 / 7168) leaves layer 0's freed FFN
    // blocks unmatched, and layer 1 stacks higher (A1, K1); GLM-5 (12288 = 2 x 6144) peaks in layer 0 (A0, K0).
    const uint64_t n_ff = dense_n_ff(m);
    const bool odd_ffn = n_ff > 0 && m.n_embd > 0 && n_ff % m.n_embd != 0;
    // Qcur concat, layer 0: embd (get_rows), attn_norm, qr, the freed q, q_nope_absorbed, q_pe (GLM-5, exact)
    const uint64_t S0 = 2 * E + x.qr + x.q + x.qna + x.qpe;
    // layer 1: attn_norm, q_pe, a freed E + indexer_q block, l_out of layer 0, the freed q, q_nope_absorbed
    const uint64_t S1 = 3 * E + x.qpe + idxq + x.q + x.qna;
    uint64_t top = B + S0 + x.Qc;
    if (odd_ffn) top = std::max(top, B + S1 + x.Qc);
    if (g.fa) {
        // Once the mask-sized tensors outgrow an [n_embd, T] block they no longer fit the freed blocks under Qcur,
        // and the FA output [kv_lora_rank, n_head, T] lands on top of Qcur: in the first layer (GLM-5, 32K), or, when
        // Qcur is larger than the freed ffn_moe_down block it would reuse, in a MoE layer above l_out, the previous
        // layer's freed ffn_moe_down and the two mask tensors (DeepSeek-V3.2, 32K; both exact)
        if (M > E) top = std::max(top, B + (x.Qc > Dm ? 2 * E + 2 * M + Dm : S0) + x.Qc + x.qna);
    } else {
        // kq [n_kv, T, n_head] above Qcur; v_cont (f16 latent V^T) inside the freed blocks under it
        top = std::max(top, B + 2 * E + x.qr + 2 * Z + x.q + x.qna + x.Qc + g.KQ);          // layer 0 (GLM-5)
        if (odd_ffn) top = std::max(top, B + 5 * E + Z + x.q + x.qna + x.Qc + g.KQ);          // layer 1 (DSv3.2)
    }
    // The routed-expert stage never peaks: the zeros leaves of the layers already run leave holes under it. Output:
    // the last layer's l_out sits about where its routed experts stacked over the freed inputs and leaves (2E, the
    // freed kqv_mla, ffn_moe_gate/up, ffn_moe_down), result_norm and the logits on top: GLM-5 at 154880 vocabulary,
    // 3 sequences, ub 256 +3.0 % (measured 266.05 MiB; the closed form does not place l_out exactly), and it
    // overestimates the one-sequence FA row at 4K by 2.7 % where Qcur's stage is the real peak.
    const uint64_t Vo = x.Vo, Fm = pad32(uint64_t(m.n_ff_exp) * m.n_expert_used * T * 4);
    const uint64_t out = g.tok + E + (B - g.tok - E - n_dsa * Z) + 2 * E + Vo + 2 * Fm + Dm + E + g.L;
    return std::max({top, out, mla_output(g, 3)});
}

} // namespace kvfit::detail

namespace kvfit::detail {

// MLA layers between Kimi Delta Attention layers, with routed experts (src/models/kimi-linear.cpp, kimi-k3.cpp).
//   KDA output o [ssm_n_head * ssm_head_dim, T] (before wo): the freed block under ffn_inp in a KDA layer's MoE
// Kimi-Linear-48B (no attention residuals): MoE stage I + 2E + o + moe_block(o) (exact), kq stage as Kimi-K2.5
// (exact), output stage above the freed input hole (exact except 3 sequences at 32K, FA, 163840 vocabulary: +4.6 %,
// 5b4ebc5, where one [n_embd, T] block drops into the hole; v0.5.0 aborts on -np 3).
// Kimi-K3 (attention residuals every attn_res_block layers, experts in an n_expert_latent-wide latent): every layer
// concatenates the blocks so far, attn_res concat [n_embd, k, T]; at the MoE peak (layer 60 of 93) k = 6 blocks,
// the most that fit the freed ffn_moe_situ block Fm of the previous layer. MoE stage: prefix_sum_attn, a freed 5E
// block, ffn_norm, the router block (E), the concat (k E), a freed Fm, ffn_moe_situ (Fm) and the latent ffn_moe_down
// [n_expert_latent, n_used, T]: I + (2k + 2) E + 2 Fm + Dl, within 0.01 %. kq stage (layer 75, 7 blocks): attn_norm,
// the freed blocks with v_cont, l_out, the freed q, q and q_nope_absorbed, the concat, Qcur, kq. Approximate (not
// derived from one live set per row), and BEYOND the suite's 5 % on four v0.5.0 cases, all under: -9.4 % (no FA,
// 4 sequences, ub 256, 8K), -8.3 % (FA, 4 sequences, 10000 cells), -5.5 % (no FA, 3 sequences, ub 256, 4K), -5.0 %
// (no FA, one sequence, ub 512, 4K). In those the allocator places Qcur and the concat differently (dumped: freed
// blocks of 69-108 MiB between l_out and the concat that grow with the sequences' KDA states), which this closed
// form does not follow; the other rows are within 3.7 %.
uint64_t stages_mla_kda(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens, I = g.inputs, E = g.E;
    const mla_sizes x = mla_of(m, g);
    const uint64_t out = g.tok + E + g.hole() + 3 * E + g.L;
    if (m.attn_res_block > 0) {
        const uint64_t Fm = pad32(uint64_t(m.n_ff_exp) * m.n_expert_used * T * 4);       // ffn_moe_situ
        const uint64_t width = m.n_expert_latent > 0 ? m.n_expert_latent : m.n_embd;
        const uint64_t Dl = pad32(width * m.n_expert_used * T * 4);                       // ffn_moe_down
        const uint64_t n_blocks = (m.n_layer + m.attn_res_block - 1) / m.attn_res_block;
        const uint64_t k = std::min<uint64_t>(n_blocks, E > 0 ? Fm / E : 0);
        uint64_t top = std::max(I + (2 * k + 2) * E + 2 * Fm + Dl, out);
        if (!g.fa) top = std::max(top, I + 2 * E + 2 * x.q + x.qna + n_blocks * E + x.Qc + g.KQ);
        return top;
    }
    const uint64_t o = pad32(uint64_t(m.ssm_n_head) * m.ssm_head_dim * T * 4);
    uint64_t top = std::max(I + 2 * E + o + moe_block(m, g, o), out);
    if (!g.fa) top = std::max(top, I + 3 * E + x.q + x.qna + x.Qc + latent_v_on_top(m, g, x) + g.KQ);
    return top;
}

// MSA: GQA attention whose blocks a lightning indexer selects (src/models/minimax-m3.cpp, build_attn_msa_fa; cache
// llama_kv_cache_msa), routed experts. With flash attention the batch path builds, per stream, the block mask
// expanded to cells, bmc = get_rows [n_tps * idx_heads, n_kv] f32 and its transposed copy bmx (G each), over the f32
// copy of the mask msa_mf [n_kv, T] (Mf), which lives the whole graph. Without flash attention MSA falls back to
// dense attention (kq [n_kv, T, n_head]). Extra inputs: the indexer cache's k_idxs and, with FA, pos_slot_i i32
// [n_ps, n_s], pos_mask f32 [n_ps, T], bias f32 [n_ps / 128, T], cell_blk i32 [n_kv, n_s]; n_ps, the position axis
// at reserve, is two 128-token blocks (measured; the block size is not in model_desc). Stages, measured on
// MiniMax-M3 (not derived row by row, worst -4.7 %: 3 sequences at 32K, q8_0; -4.5 % without FA, q8_0 K; NOT
// modeled: a rotated V alone (f16 K, q8_0 V, FA, 3 sequences, ub 256, 6000: -12.9 %, conformance suite v0.5.0)):
//   MSA mask: inputs, Mf, Qcur, l_out, a freed block R (4 E + 8 K-sized [n_head_kv * head_dim, T] blocks; with a
//             rotated K the freed E and the Hadamard-rotated Qcur instead), bmc, bmx;
//   MoE:      inputs, Mf, ffn_inp, ffn_norm, ffn_moe_gate/up/swiglu_oai (down reuses gate + up), two Mf more under
//             them with a rotated K;
//   kq:       inputs, Qcur, l_out, R and the router's three [n_expert, T] blocks under kq;
//   output:   inp_embd, the freed inputs and Mf, 7 [n_embd, T] blocks of the last layer, the logits.
bool msa_indexer(const model_desc & m) {
    if (m.indexer_top_k == 0 || m.count(layer_kind::mla) > 0 || m.count(layer_kind::recurrent) > 0) return false;
    bool indexed = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        bool full = false, idx = false;
        for (const auto & c : m.caches[il]) {
            if (c.kind == cache_kind::compressed) return false;
            full |= c.kind == cache_kind::full;
            idx |= c.kind == cache_kind::indexer && c.ratio == 1;
        }
        indexed |= full && idx;
    }
    return indexed;
}

uint64_t stages_msa(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens, E = g.E, ns = g.n_seq;
    uint32_t n_kv_head = 0, head_dim = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (const layer_cache * a = m.attention_cache(il)) {
            n_kv_head = std::max(n_kv_head, a->n_head);
            head_dim = std::max(head_dim, a->head_dim_k);
        }
    }
    const uint64_t n_ps = 256, n_blk = n_ps / 128;
    uint64_t I = g.inputs + pad32(8 * T); // + the indexer cache's k_idxs
    if (g.fa) I += pad32(4 * n_ps * ns) + pad32(4 * n_ps * T) + pad32(4 * n_blk * T) + pad32(4 * g.n_kv * ns);
    const uint64_t Mf = g.fa ? pad32(g.n_kv * T * 4) : 0;
    const uint64_t kv1 = pad32(uint64_t(n_kv_head) * head_dim * T * 4);
    const uint64_t R = g.rot_k ? E + g.Q : 4 * E + 8 * kv1;
    const uint64_t Fm = pad32(uint64_t(m.n_ff_exp) * m.n_expert_used * T * 4);
    // a rotated K leaves a freed block under Mf in the MoE stage: two Mf once Mf outgrows an [n_embd, T] block, else
    // about four K-sized blocks and the router's (MiniMax-M3, 3 sequences: -1.4 % .. -4.7 %)
    const uint64_t rot_moe = !g.rot_k ? 0
                             : Mf > E ? 2 * Mf
                                      : 4 * kv1 + 2 * pad32(uint64_t(m.n_expert) * T * 4) + pad32(uint64_t(m.n_expert_used) * T * 4);
    uint64_t top = I + Mf + 2 * E + 3 * Fm + rot_moe;
    if (g.fa) {
        const uint64_t G = pad32(g.n_kv * (T / ns) * m.indexer_n_head * 4);
        if (g.rot_k) {
            // rotated K: the freed E, the Hadamard-rotated Qcur, Mf, bmc, and l_out 3 Qcur above Mf (the freed
            // Qcur slots) until bmc outgrows them, then one Qcur over bmc; bmx on top (exact at 4K/5K, -1.2 % at 32K)
            top = std::max(top, I + 2 * E + g.Q + Mf + (G <= 3 * g.Q ? 3 * g.Q : G + g.Q) + G);
        } else {
            top = std::max(top, I + Mf + g.Q + E + R + 2 * G);
        }
    } else {
        top = std::max(top, I + g.Q + E + R + 3 * pad32(uint64_t(m.n_expert) * T * 4) + g.KQ);
    }
    return std::max(top, g.tok + E + (I - g.tok - E + Mf) + 7 * E + g.L);
}

} // namespace kvfit::detail
