// The stages of llama.cpp's reserve graph, one set per family of layer graphs (see compute.cpp for how
// a set is chosen). A stage is "inputs I + the slots live at that node + the big tensors being computed", read from
// the live set ggml-alloc (ggml/src/ggml-alloc.c) holds at the peak; ../notes/compute_model.md derives each one.
// The small slot counts (2E, 3E, 7E) are allocator artifacts: best fit puts a tensor into a freed block of exactly
// its size, so they depend on which sizes coincide (E == Q, H >= E); the conditions below encode the cases measured.
// Notation (compute_graph): T tokens, E [n_embd, T], Q Qcur, F [n_ff, T], L logits, KQ non-FA scores, I inputs,
// H freed-input hole, all bytes padded to 32.
#include "runtimes/llamacpp/compute.h"

#include <algorithm>

namespace kvfit::detail {

// Dense decoder (src/models/llama.cpp, build_attn_mha in src/llama-graph.cpp). Exact on llama31-8b and on six
// synthetic llama shapes (MHA, Q > E, 70B); the default for every graph without a measured stage set.
uint64_t stages_dense(const model_desc & m, const compute_graph & g) {
    const uint64_t I = g.inputs, H = g.hole(), E = g.E, Q = g.Q;
    const uint64_t ffn = ffn_block(m, g);
    // Last layer: inp_out_ids selects the output rows (two more [n_embd, T] GET_ROWS tensors); they and the FFN
    // sit on one more slot unless the inputs freed in that layer (hole H) absorb them.
    const bool absorbed = H >= E || H + 2 * E >= ffn_largest(m, g) + g.out_ids;
    // (routed experts with only V rotated, FA: the last layer's experts run on n_outputs rows, last_layer_rows_moe)
    const bool last_rows = g.fa && any_moe(m) && g.rot_v && !g.rot_k;
    // With few outputs (llama-server's n_parallel: server_output_limits) the last layer's FFN runs on n_outputs rows
    // after inp_out_ids and stays under layer 0's (measured: llama31-8b q8_0, 4 sequences, 4 outputs, FA on,
    // tests/conformance/measured/spec-outputs.*.jsonl: 114,389,024 B = I + 2E + ffn)
    const bool few_outputs = 2 * uint64_t(g.n_outputs) <= g.n_tokens;
    const uint64_t last = absorbed || last_rows || few_outputs ? 0 : I + 3 * E + ffn;
    if (g.fa) {
        // layer 0 FFN: l_out, attn_norm and the Q-matmul slot holding attn_out under ffn_gate/up/swiglu; with a
        // rotated K the rotated Q reuses an E-sized block when Q == E
        uint64_t layer0 = I + 2 * E + (g.rot_k && Q == E ? 0 : Q) + ffn;
        if (any_moe(m) && g.rot_v && !g.rot_k) {
            // routed experts, only V rotated (MiniMax-M2.5 f16/q8_0, measured): the FA output rotated back frees
            // Qcur's block (I + 2E + moe); the last layer's experts over n_outputs rows can then be the peak
            layer0 = std::max(I + 2 * E + ffn, last_layer_rows_moe(m, g));
        }
        // output: inp_embd, last l_out with result_norm in place, result_output [n_vocab, n_outputs]
        const uint64_t out = g.tok + (g.rot_k && absorbed ? 3 : 2) * E + g.L;
        return std::max({layer0, last, out});
    }
    // kq [n_kv, T, n_head] above embd/l_out, attn_norm, the Q-matmul slot and Qcur (rope); a rotated K leaves
    // one Q slot fewer
    const uint64_t attn = I + 2 * E + (g.rot_k ? 1 : 2) * Q + g.KQ;
    const uint64_t ffn_stage = std::max(I + 2 * E + ffn, last);
    const uint64_t out = g.tok + 2 * E + g.L;
    return std::max({attn, ffn_stage, out});
}

// Window + full layers with two KV caches (src/models/gemma3.cpp; llama_kv_cache_iswa): the inputs carry both
// caches' masks, indices and rotations (compute_graph_of). The window layers' scores use n_kv_swa and are never
// larger than the full layers'. Exact on gemma3-12b except the output stage of the 262k-vocab file, where in 39 of
// 360 grid configurations the last l_out sits one slot off (one E, <= 1.4 %). gpt-oss (sinks: soft_max_ext with a
// [n_head] sink, negligible) and llama4 (chunked) use this set with their MoE FFN block: an approximation.
uint64_t stages_windowed(const model_desc & m, const compute_graph & g) {
    const uint64_t I = g.inputs, E = g.E, Q = g.Q;
    const uint64_t ffn = ffn_block(m, g);
    const bool moe = any_moe(m);
    if (g.fa) {
        // FA output and attn_out take different slots when Q != E (gemma3-12b: Q 4096 wide, E 3840). With routed
        // experts and only V rotated (gpt-oss f16/q8_0), the FA output rotated back (MUL_MAT by attn_inp_v_rot)
        // frees the Q-sized slot before the FFN: measured I + 2E + moe_block.
        const uint64_t q_slot = moe && g.rot_v && !g.rot_k ? 0 : Q;
        uint64_t out = g.tok + 2 * E + g.L;
        // routed experts (gpt-oss, measured on gpt-oss-120b with the 201k vocabulary): the last l_out and
        // result_norm drop into the freed-input hole H while they fit (output_stage): tok + 3E + L with H >= 2E
        // (32K), I + E + L with one fitting (q8_0, ub 256), I + 2E + L with none (4K, ub 512)
        if (moe) out = output_stage(g, 2);
        return std::max(I + 2 * E + q_slot + ffn, out);
    }
    const uint64_t attn = I + 2 * E + (g.rot_k ? 1 : 2) * Q + g.KQ; // kq of the first full layer
    // output: one more stale [n_embd, T] slot under result_norm without FA. With routed experts the last
    // ffn_moe_out ADD [n_embd, n_outputs] has no free E block when n_outputs == T and sits above the
    // ffn_moe_down slot (attn_post_norm's, right above the inputs): I + Dm + E + L (gpt-oss, 201k vocab).
    uint64_t out = g.tok + 3 * E + g.L;
    if (moe) { // also with T rounded up to n_seq (gpt-oss-120b, 3 sequences: T 513, n_outputs 512)
        const uint64_t Dm = pad32(uint64_t(m.n_embd) * m.n_expert_used * g.n_tokens * 4);
        out = std::max(out, I + Dm + E + g.L);
    }
    return std::max({attn, I + 2 * E + ffn, out});
}

// MLA, absorbed, K-only latent cache, and MoE (src/models/deepseek2.cpp). Exact on deepseek-v2-lite for
// T 128-2048 and n_seq 1-32. Quantized cache types change nothing here (no rotation, no v_idxs).
uint64_t stages_mla_moe(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens, I = g.inputs, E = g.E;
    uint64_t n_head = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (m.kind_of(il) == layer_kind::mla) n_head = std::max<uint64_t>(n_head, m.n_head[il]);
    }
    const uint64_t kvr = m.kv_lora_rank, rope = m.n_rot_mla, qk = uint64_t(m.head_dim_qk_nope) + m.n_rot_mla;
    const uint64_t Fm = pad32(uint64_t(m.n_ff_exp) * m.n_expert_used * T * 4); // ffn_moe_gate/up/swiglu
    const uint64_t Dm = pad32(uint64_t(m.n_embd) * m.n_expert_used * T * 4);  // ffn_moe_down [n_embd, n_used, T]
    // router: ffn_moe_probs and argsort [n_expert, T], ffn_moe_weights [n_expert_used, T]
    const uint64_t R = 2 * pad32(uint64_t(m.n_expert) * T * 4) + pad32(uint64_t(m.n_expert_used) * T * 4);
    const uint64_t dense = I + 2 * E + 3 * g.F; // leading dense layer(s): ffn_gate/up/swiglu
    // output: inp_embd, the last l_out (result_norm in place) and the logits. When n_outputs == T the last
    // ffn_moe_out ADD [n_embd, n_outputs] finds no free E block and sits above ffn_moe_down, with ffn_inp below:
    // I + Dm + 2E + L (deepseek-v2-lite, 102k vocab; the router scratch under it, 0.1 %, is left out).
    uint64_t out = g.tok + 2 * E + g.L;
    if (g.n_outputs == g.n_tokens) out = std::max(out, I + Dm + 2 * E + g.L);
    if (g.fa) {
        // MoE layers: ffn_norm (E), a 5E block freed by the attention (the FA output [kv_lora_rank, n_head, T] is
        // 4E of it, the router scratch sits inside it) and one more [n_embd, T] tensor, under moe gate/up and down
        return std::max({I + 7 * E + 2 * Fm + Dm, dense, out});
    }
    const uint64_t Qa = pad32(n_head * (kvr + rope) * T * 4); // absorbed Qcur [kv_lora_rank + rope, n_head, T]
    // attn_norm + q [qk, n_head, T] + q_nope_absorbed [kv_lora_rank, n_head, T] + q_pe: freed before the scores
    const uint64_t gap0 = E + pad32(n_head * qk * T * 4) + pad32(n_head * kvr * T * 4) + pad32(n_head * rope * T * 4);
    // v_cont: f16 contiguous copy of the latent V^T [n_kv, kv_lora_rank] per stream; it fills the freed gap
    // until it outgrows it
    const uint64_t V = pad32(g.n_kv * kvr * 2) * g.n_stream;
    const uint64_t attn0 = I + g.KQ + E + gap0 + Qa + (V > gap0 ? V : 0);
    const uint64_t attn = I + g.KQ + 2 * E + gap0 + R + Qa + (V > gap0 + E + R ? V : 0);
    return std::max({dense, attn0, attn, out});
}

} // namespace kvfit::detail
