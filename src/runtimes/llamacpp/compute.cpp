// llama.cpp's CPU compute buffer: the high-water mark of ggml-alloc over the reserve graph.
//
// llama_context::sched_reserve (src/llama-context.cpp) reserves the pp graph (n_ubatch tokens, n_seq_max
// sequences, n_outputs = min(n_ubatch, n_batch): logits for every ubatch row), then tg, then pp again; the pp graph
// is the largest in every measured configuration. ggml_gallocr (ggml/src/ggml-alloc.c) allocates the inputs first,
// then the nodes in graph order, freeing each tensor after its last consumer, element-wise ops in place, best fit
// over the free blocks. So the buffer is not a sum of tensors but the largest stack of live tensors at one node
// (a "stage"), plus the holes fragmentation leaves under it. The buffer is max over the stages of a graph.
//
// The stage formulas (compute_stages.cpp) were derived with an instrumented ggml-alloc that dumps the
// live set at the peak (../notes/compute_model.md, compute_model.py) and reproduce every compute_bytes of
// ../shared/reference/llamacpp/results.csv to the byte. This file sizes the tensors and picks the stage set from
// the model's features, never from an architecture name:
//   mla layers, q_lora_rank, MoE, indexer  -> stages_mla_dsa        (measured: deepseek32, glm-dsa; compute_mla.cpp)
//   mla layers, q_lora_rank, MoE            -> stages_mla_lora_moe   (measured: Kimi-K2.5, mistral4; compute_mla.cpp)
//   mla + recurrent kda layers, MoE         -> stages_mla_kda        (measured: kimi-linear, kimi-k3; compute_mla.cpp)
//   any other mla layer                     -> stages_mla_moe        (measured: deepseek2 V2-Lite, no q_lora)
//   indexer without mla, MoE                -> stages_msa            (measured: minimax-m3; compute_mla.cpp)
//   input embedding wider than n_embd, attention only -> stages_deepstack (compute_hybrid.cpp; measured:
//                                              qwen3vl, qwen3vlmoe, byte-exact at the log's 0.01 MiB)
//   (mamba2 with latent experts, moe_latent_size: latent_moe_stage / latent_moe_output, compute_hybrid.cpp;
//    measured: nemotron_h_moe, byte-exact at the log's precision)
//   recurrent layers, rec_kind gated_deltanet -> stages_gated_deltanet (measured: qwen35, qwen3next)
//   recurrent layers, rec_kind short_conv   -> stages_short_conv     (measured: lfm2)
//   recurrent layers, rec_kind mamba2       -> stages_mamba2         (measured: mamba2, nemotron_h, granitehybrid)
//   recurrent layers, mamba1/rwkv/lightning -> stages_ssm            (approximation, not measured)
//   swa or chunked layers, unlike layers    -> stages_windowed_mixed (compute_swa.cpp; measured: gemma4, mimo2,
//     (per-type Q width, dense + MoE layers,                          step35)
//      shared expert, MLP beside experts)
//   swa or chunked layers (two KV caches)   -> stages_windowed       (measured: gemma3, gpt-oss)
//   otherwise                               -> stages_dense          (measured: llama, six synthetic shapes)
// Routed experts outside MLA reuse these sets with moe_block() (gate, up, swiglu, down and the freed block gate may
// drop into): measured on gpt-oss, qwen3next and granitehybrid (tests/data/llamacpp_compute.md,
// conformance_shapes); qwen3moe, mixtral and llama4 (dense-attention MoE) are not measured.
#include "runtimes/llamacpp/compute.h"

#include "kvfit/error.h"
#include "runtimes/llamacpp/graph_replay.h"

#include <algorithm>
#include <fmt/format.h>

namespace kvfit {
namespace detail {
namespace {

/// Width of the K rotation: the largest power of two >= 64 dividing head_dim_k (llama_kv_cache::build_input_k_rot,
/// src/llama-kv-cache.cpp). 128 -> 128, 256 -> 256, 192 -> 64.
uint64_t k_rot_width(uint64_t head_dim_k) {
    uint64_t n = 64;
    while (head_dim_k % (n * 2) == 0) n *= 2;
    return n;
}

/// Inputs of one KV cache (llama_kv_cache::build_input_*, src/llama-kv-cache.cpp; build_attn_inp_kv in
/// src/llama-graph.cpp): k_idxs i64 [T]; v_idxs i64 [T] with FA, [T * n_embd_v_gqa] without (V is stored
/// transposed, one index per element); the Hadamard matrices attn_inp_k_rot f32 [nrot, nrot] and attn_inp_v_rot
/// f32 [64, 64] of a rotated cache; the mask attn_inp_kq_mask [n_kv, T/n_stream, 1, n_stream], f16 with FA, f32
/// without (no GGML_KQ_MASK_PAD in this release). An MLA cache has K only: no v_idxs, no rotation.
uint64_t cache_inputs(const compute_graph & g, uint64_t cells, uint64_t n_embd_v_gqa, uint64_t head_dim_k, bool mla) {
    const uint64_t T = g.n_tokens;
    const uint64_t mask = pad32(cells * T * (g.fa ? 2 : 4));
    const uint64_t k_idxs = pad32(8 * T);
    if (mla) return k_idxs + mask;
    const uint64_t v_idxs = g.fa ? pad32(8 * T) : pad32(8 * T * n_embd_v_gqa);
    const uint64_t nrot = k_rot_width(head_dim_k);
    const uint64_t rot = (g.rot_k ? pad32(nrot * nrot * 4) : 0) + (g.rot_v ? pad32(64 * 64 * 4) : 0);
    return k_idxs + v_idxs + rot + mask;
}

/// Cells per stream of the window cache as llama_kv_cache_iswa sizes it (with the unrounded n_ubatch).
uint64_t window_cells(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c) {
    return s.swa_full ? c.n_ctx_seq : window_cells_per_stream(m, s, c);
}

} // namespace

compute_graph compute_graph_of(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c) {
    compute_graph g;
    g.n_seq = std::max<uint32_t>(1, c.n_seq);
    g.n_stream = c.n_stream;
    g.fa = c.flash_attn;
    // n_outputs_pp = min(n_tokens, n_outputs_max) (llama-context.cpp:672); n_outputs_max = n_batch unless llama-server's
    // speculative limits (or the settings) ask fewer
    g.n_outputs = std::min({c.n_ubatch, c.n_batch, c.n_outputs_max ? c.n_outputs_max : c.n_batch});
    // graph_reserve rounds n_tokens up to a multiple of n_seqs (ubatch_reserve(n_tokens / n_seqs, n_seqs))
    g.n_tokens = (uint64_t(c.n_ubatch) + g.n_seq - 1) / g.n_seq * g.n_seq;
    g.n_kv = c.n_ctx_seq;
    const uint64_t T = g.n_tokens;

    // Attention shape: the widest layer with a cache decides Q and the scores; the first non-MLA layer with a
    // cache decides the rotation (llama.cpp tests hparams.n_embd_head_k(), one value for the model).
    bool windowed = false, any_kv = false, any_plain = false, any_mla = false;
    uint64_t q_width = 0, scores = 0, v_gqa_full = 0, v_gqa_swa = 0, head_k = 0, head_v = 0, head_k_full = 0, head_k_swa = 0;
    // each layer's kind read once (the queries scan its caches): has_kv, is_swa, kind_of() == mla, n_embd_v_gqa;
    // the scores' widest layer per cache (cells x n_head: the cells are one figure per cache)
    uint64_t n_head_full = 0, n_head_swa = 0;
    bool any_recurrent = false;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_cache * a = m.attention_cache(il);
        any_recurrent |= a == nullptr && m.is_recurrent(il); // kind_of(il) == recurrent
        if (!m.has_kv(il)) continue;
        const bool swa = a != nullptr && (a->kind == cache_kind::window || a->kind == cache_kind::chunked);
        const bool mla = a != nullptr && a->kind == cache_kind::latent;
        uint64_t & n_head = swa ? n_head_swa : n_head_full;
        n_head = std::max<uint64_t>(n_head, m.n_head[il]);
        any_kv = true;
        windowed |= swa;
        any_mla |= mla;
        if (!mla && !any_plain) {
            any_plain = true;
            head_k = m.head_dim_k[il];
            head_v = m.head_dim_v[il];
        }
        if (!swa && !mla && head_k_full == 0) head_k_full = m.head_dim_k[il];
        if (swa && head_k_swa == 0) head_k_swa = m.head_dim_k[il];
        q_width = std::max<uint64_t>(q_width, uint64_t(m.n_head[il]) * m.head_dim_k[il]);
        uint64_t & v_gqa = swa ? v_gqa_swa : v_gqa_full;
        v_gqa = std::max<uint64_t>(v_gqa, a ? a->width_v() : 0);
    }
    g.n_kv_swa = windowed ? window_cells(m, s, c) : 0;
    scores = std::max<uint64_t>(g.n_kv * n_head_full, g.n_kv_swa * n_head_swa);
    g.rot_k = any_plain && ggml_is_quantized(s.type_k) && head_k % 64 == 0;
    g.rot_v = any_plain && ggml_is_quantized(s.type_v) && head_v % 64 == 0;

    uint64_t n_ff = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) n_ff = std::max<uint64_t>(n_ff, m.n_ff[il]);
    g.tok = pad32(4 * T);                              // inp_tokens i32 [T]
    g.E = pad32(uint64_t(m.n_embd) * T * 4);           // [n_embd, T]
    g.Q = pad32(q_width * T * 4);                      // Qcur [head_dim_k, n_head, T]
    g.F = pad32(n_ff * T * 4);                         // ffn_up [n_ff, T]
    g.L = pad32(uint64_t(m.n_vocab) * g.n_outputs * 4);// result_output [n_vocab, n_outputs]
    g.Eo = pad32(uint64_t(m.n_embd) * g.n_outputs * 4); // [n_embd, n_outputs] after inp_out_ids
    // inp_embd [n_embd_inp, T] (build_inp_embd, src/llama-graph.cpp: n_embd * (1 + n_deepstack_layers) wide)
    g.Ein = m.n_embd_inp > m.n_embd ? pad32(uint64_t(m.n_embd_inp) * T * 4) : g.E;
    g.KQ = pad32(scores * T * 4);                      // kq [n_kv, T/n_s, n_head, n_s]

    // Graph inputs, allocated before any node (llm_graph_context::build_inp_*, src/llama-graph.cpp):
    // inp_tokens, inp_embd (build_inp_embd always adds the float-embedding input [n_embd, T]), inp_pos i32
    // [T * n_pos_per_embd] (rope, absent in attention-free graphs), inp_out_ids i32 [n_outputs], inp_s_copy i32
    // [n_seq] (llm_graph_input_rs), then each KV cache's inputs.
    g.out_ids = pad32(4 * g.n_outputs);
    g.s_copy = any_recurrent ? pad32(4 * uint64_t(g.n_seq)) : 0;
    const uint64_t pos = any_kv ? pad32(4 * T * m.n_pos_per_embd) : 0;
    g.inputs = g.tok + g.Ein + pos + g.out_ids + g.s_copy;
    // v_idxs without FA holds T * hparams.n_embd_v_gqa_max() indices in every cache (llama_kv_cache::build_input_v_idxs,
    // src/llama-kv-cache.cpp): the widest V of the model, whichever cache (mimo2: full 4 x 128, window 8 x 128)
    // The K rotation of each cache is sized by that cache's layers' head_dim_k (kv_attn_rot n_embd_head_all: gemma4
    // base 512, swa 256; attn_inp_k_rot 512 x 512 and 256 x 256, measured)
    if (any_kv) g.inputs_kv = cache_inputs(g, g.n_kv, std::max(v_gqa_full, v_gqa_swa), head_k_full ? head_k_full : head_k, any_mla && !any_plain);
    if (windowed) g.inputs_swa = cache_inputs(g, g.n_kv_swa, std::max(v_gqa_swa, v_gqa_full), head_k_swa ? head_k_swa : head_k, false);
    g.inputs += g.inputs_kv + g.inputs_swa;
    return g;
}

uint64_t output_stage(const compute_graph & g, uint64_t n_e) {
    const uint64_t in_hole = g.E == 0 ? n_e : std::min(n_e, g.hole() / g.E);
    if (in_hole == n_e) return g.tok + g.E + n_e * g.E + g.L;
    return g.tok + g.E + g.hole() + (n_e - in_hole) * g.E + g.L;
}

bool any_moe(const model_desc & m) {
    return std::any_of(m.is_moe.begin(), m.is_moe.end(), [](uint8_t x) { return x != 0; });
}

namespace {

struct moe_sizes {
    uint64_t Fm = 0; ///< ffn_moe_gate / ffn_moe_up / ffn_moe_swiglu [n_ff_exp, n_expert_used, T]
    uint64_t Dm = 0; ///< ffn_moe_down [n_embd, n_expert_used, T]
    uint64_t R = 0;  ///< router: ffn_moe_probs + argsort [n_expert, T] (two), ffn_moe_weights [n_expert_used, T]
    uint64_t Fs = 0; ///< ffn_shexp gate/up [n_ff_shexp, T]
};

moe_sizes moe_of(const model_desc & m, const compute_graph & g) {
    const uint64_t T = g.n_tokens;
    moe_sizes x;
    x.Fm = pad32(uint64_t(m.n_ff_exp) * m.n_expert_used * T * 4);
    x.Dm = pad32(uint64_t(m.n_embd) * m.n_expert_used * T * 4);
    x.R = 2 * pad32(uint64_t(m.n_expert) * T * 4) + pad32(uint64_t(m.n_expert_used) * T * 4);
    x.Fs = pad32(uint64_t(m.n_ff_shexp) * T * 4);
    return x;
}

} // namespace

uint64_t moe_block(const model_desc & m, const compute_graph & g, uint64_t hole) {
    // build_moe_ffn (src/llama-graph.cpp), this release: ffn_moe_gate and ffn_moe_up [n_ff_exp, n_used, T]
    // (MUL_MAT_ID), ffn_moe_swiglu beside them (SWIGLU of two sources, not in place), then ffn_moe_down
    // [n_embd, n_used, T] once gate and up are freed. ffn_moe_gate, allocated first, drops into the freed `hole`
    // under the FFN input when it fits beside the router's ffn_moe_probs/argsort [n_expert, T]; up and swiglu go
    // on top. ffn_moe_down reuses the freed gate + up block (one block when both were on top) when it fits.
    // Measured: gpt-oss (hole 0, down == gate: 3 Fm), qwen3next (3 Fm + Dm), granitehybrid (gate in the hole).
    const moe_sizes x = moe_of(m, g);
    const uint64_t router = 2 * pad32(uint64_t(m.n_expert) * g.n_tokens * 4);
    const bool gate_in_hole = x.Fm + router <= hole;
    const uint64_t freed = gate_in_hole ? x.Fm : 2 * x.Fm; // block left under ffn_moe_swiglu for ffn_moe_down
    const uint64_t span = (gate_in_hole ? 0 : x.Fm) + 2 * x.Fm; // gate (unless in the hole), up, swiglu
    if (!g.cuda) return span + (x.Dm > freed ? x.Dm : 0);
    // On CUDA ffn_moe_weighted [n_embd, n_used, T] is a tensor of its own (compute_graph::cuda), placed once
    // ffn_moe_swiglu is freed: in the block gate/up/swiglu leave beside ffn_moe_down when it fits, else on top.
    if (x.Dm <= freed) return x.Dm <= span - x.Dm ? span : span + x.Dm;
    return x.Dm <= span ? span + x.Dm : span + 2 * x.Dm;
}

uint64_t ffn_block(const model_desc & m, const compute_graph & g) {
    // build_ffn (src/llama-graph.cpp): ffn_gate, ffn_up, ffn_swiglu [n_ff, T]; a plain MLP without gate
    // (LLM_FFN_RELU_SQR, nemotron-h.cpp) is ffn_up alone, the activation in place
    uint64_t block = (m.ffn_gated ? 3 : 1) * g.F;
    if (!any_moe(m)) return block;
    // routed experts (moe_block, nothing freed under them) or the shared expert beside the routed output (one E)
    const moe_sizes x = moe_of(m, g);
    block = std::max(block, moe_block(m, g, 0));
    if (x.Fs > 0) block = std::max(block, g.E + 3 * x.Fs);
    return block;
}

uint64_t ffn_largest(const model_desc & m, const compute_graph & g) {
    if (!any_moe(m)) return g.F;
    const moe_sizes x = moe_of(m, g);
    return std::max({g.F, x.Fm, x.Dm, x.Fs});
}

} // namespace detail

std::string llamacpp_compute_unmodelled(const model_desc & m, const llamacpp_settings & s, const llamacpp_context * c) {
    // a scheduler graph recorded from the real llama.cpp (format 2, compute_sched.cpp) is replayed to the byte
    if (c != nullptr && detail::sched_compute_cpu(m, s, *c)) return "";
    // a reserve graph recorded from the real llama.cpp (graph_replay.cpp) is replayed to the byte
    std::string no_replay;
    if (detail::replay_covers(m, s, &no_replay)) {
        std::string why;
        if (c == nullptr || detail::replay_compute(m, s, *c, &why)) return "";
        return "the recorded reserve graph of this model does not cover this context (" + why +
               "): the figure is an estimate";
    }
    if (m.n_hc > 1) {
        return fmt::format("the reserve graph of a decoder with hyper-connections ({} copies of the residual stream) is "
                           "not modelled ({}): the figure is an estimate, measured up to 4.8x too small", m.n_hc, no_replay);
    }
    // compressed caches (DeepSeek-V4's CSA/HCA, models/deepseek4.cpp) with fewer than two residual copies: no stage set
    // derives that graph either, whatever the hyper-connection count says
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (const auto & k : m.caches[il]) {
            if (k.kind != cache_kind::compressed) continue;
            return fmt::format("the reserve graph of a decoder with compressed attention caches (DeepSeek-V4 CSA/HCA) is "
                               "not modelled ({}): the figure is an estimate", no_replay);
        }
    }
    // a family whose graph was recorded (for another shape or other settings): its stage set is known to be inexact
    // (GLM-5 with flash attention: 18.5 % under the recorded graph at 131,072 cells, 25.2 % at 202,752)
    if (detail::replay_recorded_for_arch(m, s)) {
        return fmt::format("the reserve graph of {} was recorded for other shapes or settings only ({}): the figure is "
                           "the stage-set estimate, which the recordings show up to 25 % too small for the 2026 DSA/MSA "
                           "graphs at long contexts", m.gguf_architecture, no_replay);
    }
    if (m.rec_kind == recurrent_kind::lightning) {
        return "the reserve graph of MiniMax-01 lightning attention (models/minimax-01.cpp: a [n_ubatch, n_ubatch, "
               "n_head] f32 decay mask per layer) is not measured: the figure is an estimate";
    }
    if (m.count(layer_kind::mla) > 0 && m.rec_kind == recurrent_kind::kda && m.attn_res_block > 0) {
        return "MLA + KDA layers with attention residuals: the stage set is fitted, not derived; the figure is an "
               "estimate, measured up to 9.4 % too small with several sequences";
    }
    if (m.count(layer_kind::mla) > 0 && m.indexer_top_k > 0) {
        uint32_t indexed = 0;
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            for (const auto & c : m.caches[il]) indexed += c.kind == cache_kind::indexer ? 1 : 0;
        }
        if (indexed > 0 && indexed < m.count(layer_kind::mla)) {
            return "a DSA indexer on some MLA layers only (indexer types): the stage set is fitted; the figure is an "
                   "estimate, measured up to 7.8 % too large with several sequences";
        }
    }
    if (detail::msa_indexer(m) && ggml_is_quantized(s.type_v) && !ggml_is_quantized(s.type_k)) {
        return "an MSA indexer with a quantized V cache and an unquantized K (V rotated alone): not modelled; the "
               "figure is an estimate, measured 12.9 % too small";
    }
    return "";
}


uint64_t llamacpp_compute_bytes(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c) {
    // The largest tensor of any reserve graph is at most the f32 attention scores of every cell against the ubatch
    // for every query head; where that passes 2^60 bytes (1 EiB) the stage arithmetic would wrap 64 bits
    // (-c 4294967296 -ub 1048576 with 1,024 heads gave a figure 512x too small): refused, not wrapped.
    uint32_t heads = std::max<uint32_t>(1, m.indexer_n_head);
    for (const uint32_t h : m.n_head) heads = std::max(heads, h);
    const unsigned __int128 scores = static_cast<unsigned __int128>(std::max<uint64_t>(1, c.n_ctx)) *
                                     std::max<uint32_t>(1, c.n_ubatch) * heads * 4;
    if (scores > (static_cast<unsigned __int128>(1) << 60)) {
        throw error(fmt::format("llama.cpp: n_ctx {} with -ub {} and {} heads: one attention-score tensor alone would "
                                "pass 1 EiB; no compute buffer is planned for that", c.n_ctx, c.n_ubatch, heads));
    }
    // the scheduler graph recorded from the real llama.cpp, split and allocated as the CPU build does (exact)
    if (const auto b = detail::sched_compute_cpu(m, s, c)) return b->bytes;
    // a graph recorded from the real llama.cpp: its allocations replayed through ggml-alloc's allocator (exact)
    if (const auto r = detail::replay_compute(m, s, c)) return r->bytes;
    // A graph kvfit does not model (warned above), with fewer outputs than rows (llama-server's n_parallel): its
    // stages were fitted with logits for every row, and with one output they measured 25-47 % above the estimate
    // (DeepSeek-V4-Flash, Qwen3.8-Flash-Next: tests/conformance/measured/spec-outputs.*.jsonl), so the figure for
    // n_batch outputs is kept as an upper bound.
    if (c.n_outputs_max < std::min(c.n_ubatch, c.n_batch) && !llamacpp_compute_unmodelled(m, s).empty()) {
        llamacpp_context all = c;
        all.n_outputs_max = c.n_batch;
        return llamacpp_compute_bytes(m, s, all);
    }
    return detail::stage_peak(m, detail::compute_graph_of(m, s, c));
}

namespace detail {

uint64_t stage_peak(const model_desc & m, const compute_graph & g) {
    // the layer kinds counted in one pass (model_desc::count scans every layer)
    uint32_t n_mla = 0, n_recurrent = 0, n_windowed = 0;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_kind k = m.kind_of(il);
        n_mla += k == layer_kind::mla;
        n_recurrent += k == layer_kind::recurrent;
        n_windowed += k == layer_kind::swa || k == layer_kind::chunked;
    }
    if (n_mla > 0) {
        // compressed queries + routed experts, no recurrent layers: compute_mla.cpp (with or without a DSA indexer)
        if (m.q_lora_rank > 0 && detail::any_moe(m) && n_recurrent == 0) {
            return m.indexer_top_k > 0 ? detail::stages_mla_dsa(m, g) : detail::stages_mla_lora_moe(m, g);
        }
        if (m.rec_kind == recurrent_kind::kda && detail::any_moe(m)) return detail::stages_mla_kda(m, g);
        return detail::stages_mla_moe(m, g);
    }
    // an indexer beside plain attention (MSA, llama_kv_cache_msa): compute_mla.cpp
    if (detail::msa_indexer(m) && detail::any_moe(m)) return detail::stages_msa(m, g);
    // a widened input embedding (deepstack) on an attention-only decoder: compute_hybrid.cpp
    if (m.n_embd_inp > m.n_embd && n_recurrent == 0 && n_windowed == 0) return detail::stages_deepstack(m, g);
    if (n_recurrent > 0) {
        switch (m.rec_kind) {
        case recurrent_kind::gated_deltanet: return detail::stages_gated_deltanet(m, g);
        case recurrent_kind::short_conv:     return detail::stages_short_conv(m, g);
        case recurrent_kind::mamba2:         return detail::stages_mamba2(m, g);
        default:                             return detail::stages_ssm(m, g);
        }
    }
    if (n_windowed > 0) {
        if (detail::windowed_mixed_layers(m)) return detail::stages_windowed_mixed(m, g); // compute_swa.cpp
        return detail::stages_windowed(m, g);
    }
    return detail::stages_dense(m, g);
}

device_compute full_offload_compute(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                    bool cuda) {
    compute_graph g = compute_graph_of(m, s, c);
    g.cuda = cuda;
    // the CPU graph's peak holds inp_tokens (its freed slot at offset 0) and inp_embd (an input never freed) under
    // every stage; the GPU split holds neither (a recorded graph's replay is the CPU's peak, with the same prefix)
    const auto r = replay_compute(m, s, c);
    const uint64_t cpu = r ? r->bytes : stage_peak(m, g);
    device_compute d;
    d.gpu = cpu - std::min(cpu, g.tok + g.Ein);
    d.host = g.inputs + g.E;
    return d;
}

} // namespace detail
} // namespace kvfit
