// Stages of the reserve graph for models with recurrent layers: Gated DeltaNet, short convolution, Mamba and RWKV.
// Their scratch is the one part of the compute buffer that grows with n_seq: each sequence's conv and SSM state is
// gathered into the graph (build_rs, src/llama-graph.cpp). Notation as in compute_stages.cpp.
#include "runtimes/llamacpp/compute.h"

#include <algorithm>

namespace kvfit::detail {

// Gated DeltaNet layers with gated full attention every few layers (src/models/qwen35.cpp, delta-net-base.cpp;
// the fused GATED_DELTA_NET op of this release). Exact on qwen35-9b (all vocabularies) and on the 0.8B/2B/27B
// shapes except the 27B with the real vocabulary (see the output stage). Routed experts (qwen35moe, qwen3next)
// take ffn_block()'s MoE block: an approximation.
uint64_t stages_gated_deltanet(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens, n_seq = g.n_seq, I = g.inputs, E = g.E, Q = g.Q;
    const uint64_t d_conv = std::max<uint32_t>(1, m.ssm_d_conv), d_state = m.ssm_d_state, d_inner = m.ssm_d_inner;
    const uint64_t H_v = std::max<uint32_t>(1, m.ssm_n_head);
    const uint64_t conv_dim = d_inner + 2 * uint64_t(m.ssm_n_group) * d_state;
    const uint64_t Cs = pad32((d_conv - 1) * conv_dim * n_seq * 4);             // conv_states gathered [.., n_seq]
    const uint64_t X = pad32(conv_dim * T * 4);                                 // qkv_mixed [conv_dim, T]
    const uint64_t Cc = pad32((T + (d_conv - 1) * n_seq) * conv_dim * 4);       // conv_input [T/s + K-1, conv_dim, s]
    const uint64_t S = pad32(d_state * (d_inner / H_v) * H_v * n_seq * 4);      // ssm state gathered
    const uint64_t G = pad32(d_inner * (T + d_state * n_seq) * 4);              // GATED_DELTA_NET out (y + state)
    const uint64_t Qk = pad32(d_state * m.ssm_n_group * T * 4);                 // q_conv / k_conv (l2-normed)
    const uint64_t gate = 3 * pad32(H_v * T * 4);                               // gate, beta [H_v, T]
    const uint64_t base = I + 2 * E;                                            // input_embed/l_out + attn_norm
    // with routed experts the gathered conv_states drop into a freed [n_embd, T] block of the previous layer's MoE
    // and the rest stacks above that block (measured: Qwen3.5-35B-A3B, n_seq 3, ub 256: E - Cs = 1.734 MiB more)
    const uint64_t Cs_slot = any_moe(m) ? std::max(Cs, E) : Cs;
    const uint64_t t0 = base + Cs_slot + X + Cc;                                // top after conv_input
    uint64_t gdn = 0;
    if (S > Cs + X) {          // the state does not fit the freed conv_states + qkv hole: on top
        gdn = t0 + S + (G + 2 * Qk + gate > Cs + Cc ? G : 0);
    } else if (S > Cs) {       // state in the hole, conv_output_raw [conv_dim, T] on top
        gdn = t0 + X + (G + 2 * Qk + gate > Cs + X - S + Cc ? G : 0);
    } else {                   // both fit below; everything after conv_input reuses the tail
        gdn = std::max(t0, base + S + X + 2 * Qk + gate + G);
    }
    // FFN above attn_norm/l_out and the freed slot (I + 2E). FA with only V rotated (f16/q8_0): the FA output
    // [Q] drops into attn_norm's freed block when it fits (E, plus the router's freed E under it with routed
    // experts), its rotation back takes Qcur's block, so attn_output lands in Qcur_full's and the FFN sits one E
    // higher (measured: qwen35-9b Q == E, qwen3next Q == 2E with MoE; not Qwen3.5-27B, Q 6144 > E 5120, where
    // attn_output takes attn_norm's block).
    const uint64_t attn_norm_block = E + (any_moe(m) ? E : 0);
    const uint64_t rot_v_only = g.fa && g.rot_v && !g.rot_k && Q <= attn_norm_block ? E : 0;
    uint64_t ffn = ffn_block(m, g) + rot_v_only;
    if (any_moe(m)) {
        // routed experts (qwen3next, build_moe_ffn): ffn_norm, a freed [n_embd, T] block the router scratch sits
        // in (too small for ffn_moe_gate unless it fits) and the residual, under gate/up/swiglu/down
        ffn = std::max(ffn, E + moe_block(m, g, E) + rot_v_only);
    }
    // output: the last ffn_out and result_norm drop into the freed input hole while they fit. With a large hole
    // (long context, FA) and Q != E, the 27B shape's last FFN can fit into the hole and the stage becomes
    // I + E + L instead (up to -18.6 % at 248k vocabulary, 128K): a known miss.
    const uint64_t out = output_stage(g, 2);
    if (g.fa) return std::max({gdn, I + 2 * E + ffn, out});
    // Qcur_full = Q + gate (2Q) and the normed Q under kq; a rotated Q takes one more Q slot
    // (with routed experts one more E under them: the router's freed block, measured on qwen3next)
    const uint64_t attn = I + 2 * E + (any_moe(m) ? E : 0) + (g.rot_k ? 4 : 3) * Q + g.KQ;
    const uint64_t ffn_stage = I + 2 * E + (Q == E && !g.rot_k ? E : 0) + ffn;
    return std::max({gdn, attn, ffn_stage, out});
}

// Short convolution + GQA (src/models/lfm2.cpp). Exact on lfm2-1.2b except two grid rows of the 65k-vocab file
// (5.9 %), where the freed input hole is within 1 % of E and best fit picks a different block.
uint64_t stages_short_conv(const model_desc & m, const compute_graph & g) {
    const uint64_t I = g.inputs, H = g.hole(), E = g.E;
    const uint64_t Cs = pad32(m.n_embd_r() * g.n_seq * 4); // conv state gathered [n_embd * (L_cache - 1), n_seq]
    const uint64_t ffn = I + 2 * E + Cs + ffn_block(m, g);  // the gathered conv state stays live through the layer
    // output: the last layer's [n_embd, T] tensor fits the hole left after two conv-state gathers, or stacks on it
    const uint64_t out = H >= E + g.s_copy + g.out_ids + 2 * Cs ? g.tok + 2 * E + g.L : g.tok + E + H + 2 * E + g.L;
    if (g.fa) return std::max(ffn, out);
    const uint64_t attn = I + 2 * E + (g.rot_k ? 1 : 2) * g.Q + g.KQ;
    return std::max({ffn, attn, out});
}

// Mamba2 layers (build_mamba2_layer, src/models/mamba-base.cpp), alone (mamba2) or with attention and
// FFN/MoE blocks (nemotron_h: one mixer or FFN per block; granitehybrid: mixer + MoE in every block).
// Measured with the instrumented ggml-alloc on the conformance shapes: the scan stage is within 1 % for
// mamba2-2.7b and Nemotron-H (ub <= 512); the MoE stage is exact on Granite-4.0-H-Small.
uint64_t stages_mamba2(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens, n_seq = g.n_seq, I = g.inputs, E = g.E;
    const uint64_t d_inner = m.ssm_d_inner, ng_ds = 2 * uint64_t(m.ssm_n_group) * m.ssm_d_state;
    const uint64_t conv_dim = d_inner + ng_ds, n_head = m.ssm_n_head;
    const uint64_t Z = pad32((2 * d_inner + ng_ds + n_head) * T * 4);  // in_proj zxBCdt [d_in_proj, T]
    const uint64_t dt = pad32(n_head * T * 4);                          // dt (cont) [n_head, T/s, s]
    const uint64_t Cc = pad32((T + (std::max<uint64_t>(1, m.ssm_d_conv) - 1) * n_seq) * conv_dim * 4); // conv_x concat
    const uint64_t Xc = pad32(conv_dim * T * 4);                        // SSM_CONV output [conv_dim, T/s, s]
    const uint64_t Y = pad32((d_inner * T + m.n_embd_s() * n_seq) * 4); // SSM_SCAN: y + final states
    // scan: inp_embd/l_out and attn_norm (2E), dt, in_proj, the freed conv_x concat, conv output, scan output
    const uint64_t scan = I + 2 * E + dt + Z + Cc + Xc + Y;
    uint64_t top = scan;
    const bool mixer_and_ffn = [&] {
        for (uint32_t il = 0; il < m.n_layer; ++il)
            if ((m.is_recurrent(il) || m.has_kv(il)) && (m.n_ff[il] > 0 || m.is_moe[il])) return true;
        return false;
    }();
    if (any_moe(m) && m.moe_latent > 0) {
        // latent routed experts in their own blocks (nemotron_h_moe): compute_hybrid.cpp
        top = std::max(top, latent_moe_stage(m, g));
    } else if (any_moe(m)) {
        // MoE after the mixer: ffn_norm, the freed gated-norm output y [d_inner, T] (ffn_moe_gate drops into it
        // when it fits beside the router), ffn_inp, then moe_block (granitehybrid, exact)
        const uint64_t Yn = pad32(d_inner * T * 4);
        top = std::max(top, I + 2 * E + Yn + moe_block(m, g, Yn));
    }
    bool any_attn = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_cache * a = m.attention_cache(il);
        any_attn |= a != nullptr && a->kind != cache_kind::latent;
    }
    if (any_attn && !g.fa) {
        // kq, as dense; one [n_embd, T] slot fewer beside latent experts (measured: Nemotron-3-Super, Q == E)
        const uint64_t slots = m.moe_latent > 0 ? 1 : 2;
        top = std::max(top, I + slots * E + (g.rot_k ? 1 : 2) * g.Q + g.KQ);
    }
    uint64_t n_ff = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) n_ff = std::max<uint64_t>(n_ff, m.n_ff[il]);
    if (n_ff > 0) top = std::max(top, I + 2 * E + (any_attn ? g.Q : 0) + (m.ffn_gated ? 3 : 1) * g.F);
    if (n_ff > 0 && !mixer_and_ffn && !any_moe(m) && g.fa) {
        // Mixer blocks alternating with FFN-only blocks (nemotron_h), FA. When the scan output fits the freed
        // conv_x concat with less to spare than the dt CONT and the gathered conv states (Cc - Y < dt + Cs) and is
        // no larger than the SSM_CONV output (Y <= Xc), best fit puts it right above the previous FFN block's
        // l_out; the mixer's output and the next FFN block's l_out then stack there, and the next mixer's conv
        // output and y CONT land on top (measured: Nemotron-H, T = 1024..1092 per sequence, n_seq 1-3, any n_ctx
        // and K/V type, byte-exact; outside that window the scan stage above holds):
        //   inp_embd/residual (E), the freed gated-norm y [d_inner, T] (Yd), mamba_out (E), the freed ffn_up [n_ff, T]
        //   (F), that block's l_out (E), the next mamba_out (E), the next l_out (E), SSM_CONV out (Xc), y CONT (Yd).
        const uint64_t Cs = pad32((std::max<uint64_t>(1, m.ssm_d_conv) - 1) * conv_dim * n_seq * 4); // conv states
        const uint64_t Yd = pad32(d_inner * T * 4);
        if (Y <= Xc && Cc - Y < dt + Cs) top = std::max(top, I + 5 * E + 2 * Yd + g.F + Xc);
    }
    // output: inp_embd, the freed input hole, the last l_out and result_norm (one more [n_embd, T] slot when
    // blocks carry a mixer and an FFN: granitehybrid's ffn_inp), the logits
    if (any_moe(m) && m.moe_latent > 0) return std::max(top, latent_moe_output(m, g));
    return std::max(top, output_stage(g, mixer_and_ffn ? 3 : 2));
}

// Mamba1 (src/models/graph-context-mamba.cpp: mamba, jamba) and RWKV.
// APPROXIMATION, not measured: every scratch tensor of one recurrent layer live at the scan, no reuse, above the
// dense stages of the attention/FFN layers. Mamba: in_proj zxBCdt [d_in_proj, T], conv_states gathered, conv_x
// concat [T/s + K-1, conv_dim, s], ssm states gathered, ssm_scan output (y [d_inner, T] + final states).
// RWKV: six [n_embd, T] projections (r, w, k, v, a, g), token shift, wkv state and output.
uint64_t stages_ssm(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens, n_seq = g.n_seq, E = g.E;
    const uint64_t d_inner = m.ssm_d_inner, ng_ds = 2 * uint64_t(m.ssm_n_group) * m.ssm_d_state;
    const uint64_t Cs = pad32(m.n_embd_r() * n_seq * 4);
    const uint64_t S = pad32(m.n_embd_s() * n_seq * 4);
    uint64_t proj = 0, conv = 0, scan = 0;
    if (m.rec_kind == recurrent_kind::rwkv) {
        proj = 6 * E;
        scan = E + S;
    } else if (m.rec_kind == recurrent_kind::lightning) {
        // MiniMax-01 (models/minimax-01.cpp): wqkv [3 d_inner, T]; the decay mask inp_diag_decay [T, T, n_head] f32 is a
        // graph input, reserved with one sequence ([TAG_RESERVE_DIAG_DECAY]: it grows with n_seq_tokens^2), and each
        // lightning layer scales and exponentiates it and scores q k^T of the same shape: three such tensors live
        const uint64_t diag = pad32(T * T * m.ssm_n_head * 4);
        proj = pad32(3 * d_inner * T * 4);
        scan = 3 * diag + pad32(d_inner * T * 4) + S;
    } else {
        const bool mamba2 = m.rec_kind == recurrent_kind::mamba2;
        const uint64_t conv_dim = mamba2 ? d_inner + ng_ds : d_inner;
        const uint64_t d_in_proj = mamba2 ? 2 * d_inner + ng_ds + m.ssm_n_head : 2 * d_inner;
        proj = pad32(d_in_proj * T * 4);
        conv = pad32((T + (std::max<uint64_t>(1, m.ssm_d_conv) - 1) * n_seq) * conv_dim * 4);
        scan = pad32(d_inner * T * 4) + S;
    }
    const uint64_t ssm = g.inputs + 2 * E + Cs + proj + conv + S + scan;
    return std::max(ssm, stages_dense(m, g));
}

} // namespace kvfit::detail
