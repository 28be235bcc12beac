// Window + full layers whose layers are not all alike: the 2026 window models (src/models/gemma4.cpp,
// mimo2.cpp, step35.cpp, llama.cpp v0.5.0 and 5b4ebc5). Compared with the gemma3 / gpt-oss graphs of
// stages_windowed (compute_stages.cpp), these have
//   - per-layer-type query widths (gemma4: head_dim 256 on window layers, 512 on full layers; step35: 96 query heads
//     on window layers, 64 on full layers), so the Q block under a stage is that layer's, not the widest;
//   - mixed FFN kinds: leading dense layers before routed experts (mimo2, step35), a shared expert run after the
//     routed ones (step35: ffn_norm stays live under them), or a dense MLP beside the experts (gemma4: the MoE is
//     expanded first, the MLP after it).
// The stages were read off the live set at ggml-alloc's peak (an instrumented ggml/src/ggml-alloc.c dumping the
// live tensors at the high-water mark of the pp reserve graph, llama.cpp v0.5.0, no_alloc) and checked on every
// measured row of tests/data/llamacpp_compute_swa.csv (conformance rows of tests/conformance/measured/).
// Notation as in compute_stages.cpp: I inputs, E [n_embd, T], Q_l Qcur of layer l [head_dim_k, n_head, T], KQ_l the
// non-FA scores kq [n_kv_l, T/n_s, n_head, n_s], L the logits, H the freed-input hole.
#include "runtimes/llamacpp/compute.h"

#include <algorithm>

namespace kvfit::detail {

namespace {

uint64_t q_of(const model_desc & m, const compute_graph & g, uint32_t il) {
    return pad32(uint64_t(m.n_head[il]) * m.head_dim_k[il] * g.n_tokens * 4);
}

/// Non-FA scores of layer il: kq [n_kv, T/n_s, n_head, n_s] with n_kv the cells of the layer's cache (a KV-shared
/// layer reads the cache of its source layer, of the same type).
uint64_t kq_of(const model_desc & m, const compute_graph & g, uint32_t il) {
    bool swa = m.is_swa(il);
    if (!m.has_kv(il)) { // KV-shared (gemma4): a window layer when a window layer has its Q width
        for (uint32_t j = 0; j < m.n_layer && !swa; ++j)
            swa = m.is_swa(j) && uint64_t(m.n_head[j]) * m.head_dim_k[j] == uint64_t(m.n_head[il]) * m.head_dim_k[il];
    }
    const uint64_t cells = swa ? g.n_kv_swa : g.n_kv;
    return pad32(cells * m.n_head[il] * g.n_tokens * 4);
}

bool parallel_mlp(const model_desc & m, uint32_t il) { return m.is_moe[il] != 0 && m.n_ff[il] > 0; }

} // namespace

uint64_t last_layer_rows_moe(const model_desc & m, const compute_graph & g) {
    // The last layer keeps only the n_outputs rows (inp_out_ids get_rows before the FFN); with T rounded up to n_seq
    // (ub 256, 3 sequences: T 258, 256 outputs) its routed experts run on n_outputs rows above I + 2E:
    // I + 2E + ffn_inp [n_embd, n_outputs] + moe_block over n_outputs rows (measured, f16 K / q8_0 V, FA: mimo2
    // layer 47, MiniMax-M2.5 layer 61, byte-exact). Without routed experts on the last layer: 0.
    if (m.n_layer == 0 || !m.is_moe[m.n_layer - 1]) return 0;
    compute_graph o = g;
    o.n_tokens = g.n_outputs;
    return g.inputs + 2 * g.E + pad32(uint64_t(m.n_embd) * g.n_outputs * 4) + moe_block(m, o, 0);
}

bool windowed_mixed_layers(const model_desc & m) {
    uint64_t q0 = 0;
    bool dense = false, moe = false, par = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.n_head[il] == 0) continue;
        const uint64_t q = uint64_t(m.n_head[il]) * m.head_dim_k[il];
        if (q0 == 0) q0 = q;
        if (q != q0) return true;
        if (m.is_moe[il]) moe = true;
        else if (m.n_ff[il] > 0) dense = true;
        par |= parallel_mlp(m, il);
    }
    return (dense && moe) || par || m.n_ff_shexp > 0;
}

// The stage set. Per layer l with attention (every layer here; KV-shared layers compute their Q and scores too):
//   FA:      I + B_l + E + ffn_l. ffn_l is the layer's FFN block: dense ffn_gate/up/swiglu (3 F_l), or the routed
//            experts (moe_block: ffn_moe_gate/up or the fused ffn_moe_gate_up [2 n_ff_exp, n_used, T], their GLU,
//            ffn_moe_down on top unless it fits the freed gate+up block); E is the FFN input (ffn_inp / attn_out).
//            B_l is the block under it, freed by the attention: Qcur's block (the attention norm and the router
//            scratch sit inside it), plus one more [n_embd, T] slot (ffn_norm, live under the routed experts when
//            a shared expert reads it after them, step35) when Qcur is no wider than 2 n_embd. Measured: mimo2
//            (Q 3E: B = Q), step35 (full layers Q 2E: B = E + Q; window layers 3E: B = Q). With a dense MLP beside
//            the experts (gemma4) B is the narrowest layer's Qcur (the window layers', 4096 wide), measured on every
//            layer type: the full layers' wider Qcur block is taken by that layer's attention output.
//   non-FA:  I + 2E + 2 Q_l + KQ_l (attn_norm, the layer input, Qcur and its rope/normed copy under kq, as
//            stages_dense); one more E with a head-wise gate (step35: attn_norm is read again after the attention). gemma4 (dense MLP beside the experts): the previous window layer's ffn_gate-sized block
//            [n_ff, T] and its Qcur block stay under the first full layer's kq (measured: + Q_window + F).
//   output:  the last layer's output (h_nextn, the whole ubatch: embeddings_nextn_masked is off) and result_norm
//            above the inputs when the freed-input hole H cannot hold result_norm and what the last layer left in
//            it; gemma4 keeps its MLP's ffn_up-sized block [n_ff, T] under them.
uint64_t stages_windowed_mixed(const model_desc & m, const compute_graph & g) {
    const uint64_t I = g.inputs, E = g.E, T = g.n_tokens;
    uint64_t q_min = 0, F_par = 0;
    bool any_par = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.n_head[il] == 0) continue;
        const uint64_t q = q_of(m, g, il);
        q_min = q_min == 0 ? q : std::min(q_min, q);
        if (parallel_mlp(m, il)) {
            any_par = true;
            F_par = std::max<uint64_t>(F_par, pad32(uint64_t(m.n_ff[il]) * T * 4));
        }
    }
    const uint64_t moe = any_moe(m) ? moe_block(m, g, 0) : 0;
    const uint64_t gate_norm = m.arch.head_gate ? E : 0; // attn_norm kept for the head-wise gate (arch_facts head_gate)
    uint64_t top = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.n_head[il] == 0) continue;
        const uint64_t Q = q_of(m, g, il);
        uint64_t ffn = 0;
        if (m.is_moe[il]) {
            ffn = moe;
            if (m.n_ff_shexp > 0) ffn = std::max(ffn, E + 3 * pad32(uint64_t(m.n_ff_shexp) * T * 4));
        } else {
            ffn = (m.ffn_gated ? 3 : 1) * pad32(uint64_t(m.n_ff[il]) * T * 4);
        }
        if (g.fa) {
            uint64_t B = any_par ? q_min : Q + (Q <= 2 * E ? E : 0);
            // only V rotated (f16 K, quantized V): the FA output rotated back (MUL_MAT by attn_inp_v_rot) frees
            // Qcur's block before the FFN, B is one [n_embd, T] slot (ffn_norm), with a shared expert also the
            // router's three [n_expert, T] tensors (measured: mimo2 I + 2E + moe, step35 I + 2E + 3R + moe)
            if (g.rot_v && !g.rot_k) {
                B = E + (m.is_moe[il] && m.n_ff_shexp > 0 ? 3 * pad32(uint64_t(m.n_expert) * T * 4) : 0);
                // gemma4 (dense MLP beside the experts): one [n_embd, T] slot under attn_out, and one more between
                // the freed ffn_moe_gate_up block and ffn_moe_geglu (measured layer 0, f16/q8_0 ub 256 3 sequences:
                // I + 3E + 3 Fm + Dm)
                if (any_par) B = 2 * E;
            }
            top = std::max(top, I + B + E + ffn);
        } else {
            // a rotated K (quantized type_k): the Hadamard-rotated Q replaces Qcur and its rope copy (one Q slot,
            // as stages_dense); gemma4 then keeps an E block where the window layer's Qcur was (measured
            // q8_0/f16 8K: I + 3E + F + Q + KQ; mimo2: I + 2E + Q + KQ)
            const uint64_t extra = any_par && !m.is_swa(il) ? (g.rot_k ? E : q_min) + F_par : 0;
            top = std::max(top, I + 2 * E + gate_norm + extra + (g.rot_k ? 1 : 2) * Q + kq_of(m, g, il));
        }
    }
    // (not with h_nextn_rows: those graphs run the last layer on every row)
    if (g.fa && g.rot_v && !g.rot_k && !any_par && !m.arch.h_nextn_rows) top = std::max(top, last_layer_rows_moe(m, g));
    const uint64_t H = g.hole();
    uint64_t out = 0;
    if (!m.arch.h_nextn_rows) {
        // the last layer selects the output rows (mimo2: crop_last_layer); result_norm [n_embd, n_outputs] right
        // above inp_embd (the freed inputs and the last layer's blocks are one hole by then), the logits on top
        // (measured: tok + E + E_out + L at 4K-32K, 1 and 3 sequences)
        out = g.tok + E + pad32(uint64_t(m.n_embd) * g.n_outputs * 4) + g.L;
    } else if (any_par) {
        // gemma4: result_norm (get_rows of h_nextn) in the hole; h_nextn sits above a block of [n_embd, T] + the
        // MLP's [n_ff, T] that the last layer freed, inside the freed-input hole when that holds them
        // (non-FA, long masks: tok + 3E + F + L), above the inputs otherwise (FA 8K: I + 2E + F + L)
        out = (H >= E + F_par ? g.tok + 3 * E : I + 2 * E) + F_par + g.L;
    } else {
        // step35: result_norm and h_nextn stacked above the inputs (FA 8K: I + 2E + L), or in the hole when it
        // holds both (32K: tok + 3E + L, -4 % at ub 256 with 3 sequences, where they sit 6 MB higher)
        out = H >= 2 * E ? g.tok + 3 * E + g.L : I + 2 * E + g.L;
    }
    return std::max(top, out);
}

} // namespace kvfit::detail
