// Stages of the reserve graph for the 2026 decoders whose layer graphs the older stage sets do not cover: the
// widened input embedding of deepstack models (Qwen3-VL), latent routed experts (Nemotron-3-Super) and the MoE
// FFN of the Gated DeltaNet hybrids (Qwen3.5-MoE). Notation as in compute_stages.cpp (compute_graph): T tokens,
// E [n_embd, T], Ein inp_embd [n_embd_inp, T], Eo [n_embd, n_outputs], Q Qcur, F [n_ff, T], L logits, KQ non-FA
// scores, I inputs (with the wide inp_embd), H freed-input hole; bytes padded to 32.
//
// Derived from the measured rows of tests/conformance/measured/<id>.<release>.jsonl (llama.cpp v0.5.0 and 5b4ebc5,
// CPU, no_alloc: sched_reserve's "CPU compute buffer size"), replayed by tests/data/llamacpp_compute_2026.csv.
//
// Not derived here (no stage set holds; the stage sets below are far under for them, both releases): DeepSeek-V4
// (src/models/deepseek4.cpp: 4 hyper-connection copies of the residual, 64 heads x 512 Q, compressed CSA/HCA caches
// concatenated to the window K, lightning-indexer scores) and Qwen3.8-Flash-Next (src/models/qwen4exp.cpp: hyper
// connections, indexer_score_tokens that grow with n_ctx even with FA). Their peak depends on the fragmentation left
// by dozens of earlier tensors, so kvfit replays llama.cpp's own recorded allocation sequence instead
// (graph_replay.h; DeepSeek-V4-Flash and Qwen3.8-Flash-Next's GGUF shape recorded, both releases); other shapes of
// these families fall back to these stages and are named as estimates (llamacpp_compute_unmodelled).
#include "runtimes/llamacpp/compute.h"

#include <algorithm>

namespace kvfit::detail {

namespace {

/// ffn_moe_probs and ffn_moe_argsort [n_expert, T] of build_moe_ffn (src/llama-graph.cpp): live under the experts.
uint64_t router_pair(const model_desc & m, const compute_graph & g) {
    return 2 * pad32(uint64_t(m.n_expert) * g.n_tokens * 4);
}

} // namespace

// Deepstack (src/models/qwen3vl.cpp, qwen3vlmoe.cpp; build_inp_embd in src/llama-graph.cpp): inp_embd is an input
// [n_embd_inp, T] with n_embd_inp = n_embd * (1 + n_deepstack_layers); the token path pads the get_rows output to
// that width (ggml_pad, P = Ein) and the first n_deepstack layers add views of it to their l_out
// ("deepstack_out"), so P stays live through layer 0's attention and FFN, with the freed get_rows [n_embd, T] under it.
// Measured (Qwen3-VL-8B dense, Qwen3-VL-30B-A3B MoE; n_ctx 4096-32768, n_seq 1/3, ub 256/512, f16/q8_0, FA on/off):
//   FA, dense:   I + P + E (attn_norm in the get_rows hole) + Q (attn_out) + ffn_gate/up/swiglu (3F)
//   FA, MoE:     I + P + 2E + ffn_moe_probs/argsort + moe_block
//   no FA:       I + P + 2E + 2Q + kq
//   output:      the last l_out and result_norm [n_embd, n_outputs] and the logits. Dense: above all the inputs
//                (I + 2Eo + L) unless the freed input hole holds exactly one row (Eo <= H < 2Eo), then above
//                inp_tokens and inp_embd only (tok + Ein + 2Eo + L); 4 real-vocabulary rows per release, exact.
//                MoE: tok + Ein + one row + L (two rows with a rotated K cache).
uint64_t stages_deepstack(const model_desc & m, const compute_graph & g) {
    const uint64_t I = g.inputs, E = g.E, Q = g.Q, P = g.Ein, Eo = g.Eo, H = g.hole();
    const bool moe = any_moe(m);
    const uint64_t layer0 = moe ? I + P + 2 * E + router_pair(m, g) + moe_block(m, g, 0)
                                : I + P + E + Q + ffn_block(m, g);
    uint64_t out = 0;
    if (moe) out = g.tok + g.Ein + (g.rot_k ? 2 : 1) * Eo + g.L;
    else out = (H >= Eo && H < 2 * Eo ? g.tok + g.Ein : I) + 2 * Eo + g.L;
    if (g.fa) return std::max(layer0, out);
    const uint64_t attn = I + P + 2 * E + 2 * Q + g.KQ;
    return std::max({layer0, attn, out});
}

} // namespace kvfit::detail

namespace kvfit::detail {

// Latent routed experts (src/models/nemotron-h.cpp build_ffn_layer, build_moe_ffn in src/llama-graph.cpp): the
// block's input goes through ffn_latent_down [moe_latent, T], the experts run in the latent without a gate
// (LLM_FFN_RELU_SQR: ffn_moe_up [n_ff_exp, n_used, T], the activation in place, ffn_moe_down
// [moe_latent, n_used, T]), ffn_latent_up brings the sum back to n_embd, the shared expert runs on n_embd.
// Measured (Nemotron-3-Super, n_ctx 4096-32768, n_seq 1/3, ub 256/512, FA on/off, f16/q8_0): the peak is at
// ffn_moe_down, above the inputs and four [n_embd, T] slots (the block input, attn_norm and two blocks the
// previous mixer layer leaves live under the top): I + 4E + ffn_moe_up + ffn_moe_down, within 0.01 MiB.
uint64_t latent_moe_stage(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens;
    const uint64_t up = pad32(uint64_t(m.n_ff_exp) * m.n_expert_used * T * 4);    // ffn_moe_up
    const uint64_t down = pad32(uint64_t(m.moe_latent) * m.n_expert_used * T * 4);// ffn_moe_down
    return g.inputs + 4 * g.E + up + down;
}

// Output stage after a last latent-MoE block: inp_tokens, inp_embd, then three [n_embd, T] tensors (the last
// block's residual, its l_out and result_norm) and the latent ffn_moe_out [moe_latent, n_outputs], each in the freed
// input hole H when it fits (best fit, in that order) or on top, then the logits on top; when all of them fit the
// hole it is the top of the buffer and the logits follow them. Measured (Nemotron-3-Super, 131072 vocabulary):
// H < E: I + 3E + L (c4096); H holding one E: tok + E + H + 2E + latent + L (ub 256, q8_0); all in the hole:
// tok + E + 3E + latent + L (c32768).
uint64_t latent_moe_output(const model_desc & m, const compute_graph & g) {
    const uint64_t items[4] = {g.E, g.E, g.E, pad32(uint64_t(m.moe_latent) * g.n_outputs * 4)};
    uint64_t hole = g.hole(), in_hole = 0, on_top = 0;
    for (const uint64_t x : items) {
        if (x <= hole) hole -= x, in_hole += x;
        else on_top += x;
    }
    const uint64_t base = g.tok + g.Ein;
    if (on_top == 0) return base + in_hole + g.L;
    return base + g.hole() + on_top + g.L;
}

} // namespace kvfit::detail
