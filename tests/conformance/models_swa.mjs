#!/usr/bin/env node
// Shape-exact builders for four 2026 architectures whose KV layout differs per layer (sliding-window /
// global, per-layer KV heads and head sizes, MTP blocks): gemma4, mimo2, step35 and minimax-m2.
// Same contract as models.mjs: each builder turns the published hyperparameters into the GGUF keys that
// llama.cpp's converter writes (conversion/<family>.py of release v0.5.0) and the tensor list that
// load_arch_tensors (src/models/<arch>.cpp) requires; the loader refuses a missing tensor, a wrong shape or
// an extra tensor, so a file that loads is shape-exact. Rules and citations: docs/rules/llamacpp-swa.md.
//
// usage: node models_swa.mjs OUT_DIR [--gguf-write PATH] [--vocab small|real|both] [ID...]   write GGUFs
//        node models_swa.mjs --params [ID...]                                                parameter counts
//
// Weight types as models.mjs weightType() (iq1_s / q5_0 / f16 / f32: small sparse files, no CPU_REPACK).
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

// ---------- helpers duplicated from models.mjs (kept identical) ----------
/// ggml type for a weight of this name and shape (ne[0] first).
function weightType(name, shape) {
    const small = shape.length === 1 || /norm|bias|ssm_a$|ssm_d$|conv1d|sinks|exp_probs_b|ffn_gate_inp\.|ssm_beta\.|ssm_alpha\.|ssm_ba\./.test(name);
    if (small) return /ssm_beta\.|ssm_alpha\.|ssm_ba\./.test(name) ? "f16" : "f32";
    if (shape[0] % 256 === 0) return "iq1_s";
    return shape[0] % 32 === 0 ? "q5_0" : "f16";
}

class Builder {
    constructor(arch) { this.arch = arch; this.metadata = { "general.architecture": arch }; this.tensors = []; this.n_layer_trunk = null; }
    k(key, value) { this.metadata[`${this.arch}.${key}`] = value; return this; }
    raw(key, value) { this.metadata[key] = value; return this; }
    t(name, shape) { this.tensors.push({ name, type: weightType(name, shape), shape }); return this; }
    blk(il, name, shape) { return this.t(`blk.${il}.${name}`, shape); }
}

const f32 = (v) => ({ type: "f32", value: v });
// convert_hf_to_gguf.py writes Python int lists as INT32 arrays and bool lists as BOOL arrays
// (gguf-py GGUFValueType.get_type); llama.cpp's get_arr accepts BOOL/UINT32/INT32 for uint32 arrays.
const i32arr = (a) => ({ type: "array", elem: "i32", value: a });
const boolarr = (a) => ({ type: "array", elem: "bool", value: a });
const range = (n) => [...Array(n).keys()];

// ---------------------------------------------------------------------------------------------------------
// Gemma 4: conversion/gemma.py Gemma4Model (+ Gemma3Model, TextModel); src/models/gemma4.cpp. gemma4(t, n_vocab) builds
// any shape of the family from an HF text_config `t` (the field names of shared/configs/google__gemma-4-26B-A4B.json):
// layer_types sliding (window sliding_window, head_dim, num_key_value_heads) or full (global_head_dim,
// num_global_key_value_heads); attention_k_eq_v: full layers have no v_proj (HF Gemma4TextAttention
// use_alternative_attention), V = K in the graph, but the cache still holds a V tensor; enable_moe_block: every layer
// has num_experts experts (top_k_experts used, fused gate_up) beside the dense MLP (intermediate_size) as shared path.
// num_kv_shared_layers > 0: layers il >= n_layer - num_kv_shared_layers hold no cache (has_kv) and have no attn_k /
// attn_v / attn_k_norm (gemma4.cpp kv_flags); create_memory's reuse callback points them at layer
// n_layer_kv_from_start - 2 (sliding) or - 1 (full). Per-layer embeddings (hidden_size_per_layer_input) and
// use_double_wide_mlp are not built (the E2B/E4B layouts).
export function gemma4(t, n_vocab) {
    if (t.hidden_size_per_layer_input || t.use_double_wide_mlp) throw new Error("gemma4: per-layer embeddings / double-wide MLP not built");
    const n_layer = t.num_hidden_layers, n_embd = t.hidden_size, n_head = t.num_attention_heads;
    const isSwa = t.layer_types.map((x) => x === "sliding_attention");
    const hd = (il) => (isSwa[il] ? t.head_dim : t.global_head_dim);
    const kvh = (il) => (isSwa[il] ? t.num_key_value_heads : t.num_global_key_value_heads);
    const b = new Builder("gemma4");
    b.n_layer_trunk = n_layer;
    b.k("block_count", n_layer).k("context_length", t.max_position_embeddings).k("embedding_length", n_embd)
        .k("feed_forward_length", t.intermediate_size).k("attention.head_count", n_head)
        .k("attention.head_count_kv", i32arr(range(n_layer).map(kvh)))          // Gemma4Model: per-layer array
        .k("attention.layer_norm_rms_epsilon", f32(t.rms_norm_eps))
        .k("rope.freq_base", f32(t.rope_parameters.full_attention.rope_theta))
        .k("rope.freq_base_swa", f32(t.rope_parameters.sliding_attention.rope_theta))
        .k("final_logit_softcapping", f32(t.final_logit_softcapping))
        .k("attention.sliding_window", t.sliding_window)
        .k("expert_count", t.num_experts).k("expert_used_count", t.top_k_experts)
        .k("attention.shared_kv_layers", t.num_kv_shared_layers)
        .k("embedding_length_per_layer_input", t.hidden_size_per_layer_input ?? 0)
        .k("attention.sliding_window_pattern", boolarr(isSwa))
        .k("attention.key_length", t.global_head_dim).k("attention.value_length", t.global_head_dim)
        .k("attention.key_length_swa", t.head_dim).k("attention.value_length_swa", t.head_dim)
        .k("expert_feed_forward_length", t.moe_intermediate_size)
        .k("rope.dimension_count", t.global_head_dim).k("rope.dimension_count_swa", t.head_dim);
    // tie_word_embeddings: no output.weight (gemma4.cpp duplicates token_embd)
    b.t("token_embd.weight", [n_embd, n_vocab]).t("output_norm.weight", [n_embd]);
    // Gemma4Model.generate_extra_tensors: one rope_freqs of global_head_dim/2 (proportional RoPE, full layers)
    b.t("rope_freqs.weight", [t.global_head_dim / 2]);
    const n_ff_exp = t.moe_intermediate_size, n_expert = t.num_experts;
    for (let il = 0; il < n_layer; ++il) {
        const h = hd(il), nkv = kvh(il), hasKv = il < n_layer - t.num_kv_shared_layers;
        b.blk(il, "attn_norm.weight", [n_embd]).blk(il, "attn_q.weight", [n_embd, n_head * h]);
        if (hasKv) b.blk(il, "attn_k.weight", [n_embd, nkv * h]);
        if (hasKv && (isSwa[il] || !t.attention_k_eq_v)) b.blk(il, "attn_v.weight", [n_embd, nkv * h]);
        b.blk(il, "attn_output.weight", [n_head * h, n_embd]).blk(il, "attn_q_norm.weight", [h]);
        if (hasKv) b.blk(il, "attn_k_norm.weight", [h]);
        b
            .blk(il, "post_attention_norm.weight", [n_embd])
            .blk(il, "layer_output_scale.weight", [1])                          // HF layer_scalar
            .blk(il, "ffn_norm.weight", [n_embd])
            .blk(il, "ffn_gate.weight", [n_embd, t.intermediate_size]).blk(il, "ffn_up.weight", [n_embd, t.intermediate_size])
            .blk(il, "ffn_down.weight", [t.intermediate_size, n_embd]).blk(il, "post_ffw_norm.weight", [n_embd]);
        if (!t.enable_moe_block) continue;
        b
            .blk(il, "ffn_gate_inp.weight", [n_embd, n_expert]).blk(il, "ffn_gate_inp.scale", [n_embd])   // router.proj, router.scale
            .blk(il, "pre_ffw_norm_2.weight", [n_embd]).blk(il, "post_ffw_norm_1.weight", [n_embd])
            .blk(il, "post_ffw_norm_2.weight", [n_embd])
            .blk(il, "ffn_gate_up_exps.weight", [n_embd, 2 * n_ff_exp, n_expert])  // experts.gate_up_proj
            .blk(il, "ffn_down_exps.weight", [n_ff_exp, n_embd, n_expert])
            .blk(il, "ffn_down_exps.scale", [n_expert]);                         // router.per_expert_scale
    }
    return b;
}

/// Gemma 4 26B-A4B's text_config (shared/configs/google__gemma-4-26B-A4B.json) with `over` applied: a sibling shape of
/// the family. over.full_every = k: layer_types with every k-th layer full attention (il % k == k - 1), the 26B's
/// pattern being k = 6.
export function gemma4Config(over = {}) {
    const t = { ...JSON.parse(fs.readFileSync(path.join(sharedConfigs(), "google__gemma-4-26B-A4B.json"), "utf8")).text_config };
    const { full_every, ...rest } = over;
    Object.assign(t, rest);
    if (full_every) t.layer_types = range(t.num_hidden_layers).map((il) => (il % full_every === full_every - 1 ? "full_attention" : "sliding_attention"));
    if (t.layer_types.length !== t.num_hidden_layers) throw new Error("gemma4Config: layer_types and num_hidden_layers differ");
    return t;
}

// Gemma 4 26B-A4B: shared/configs/google__gemma-4-26B-A4B.json (text_config). 30 layers, layer_types: 25 sliding
// (window 1024, head_dim 256, 8 KV heads) + 5 full (il 5 11 17 23 29: global_head_dim 512, num_global_key_value_heads
// 2), k_eq_v on the full layers, num_kv_shared_layers 0, hidden_size_per_layer_input 0 (no PLE), 128 experts top-8
// beside the dense MLP (intermediate 2112).
// kvShared > 0: a SYNTHETIC variant (not a published model) with num_kv_shared_layers = kvShared, to measure the
// KV-sharing rule of gemma4 (the E2B/E4B models use it).
function gemma4_26b_a4b(n_vocab, { kvShared = 0 } = {}) {
    return gemma4(gemma4Config(kvShared ? { num_kv_shared_layers: kvShared } : {}), n_vocab);
}

// ---------------------------------------------------------------------------------------------------------
// MiMo-V2-Flash: shared/configs/XiaomiMiMo__MiMo-V2-Flash.json. conversion/mimo.py MimoV2Model; src/models/mimo2.cpp.
// 48 trunk layers, hybrid_layer_pattern 0 = full (9: il 0 5 11 17 23 29 35 41 47), 1 = sliding (39, window 128);
// full layers 4 KV heads, sliding 8; K head 192, V head 128 on both. Layer 0 dense FFN (16384), layers 1-47 MoE
// 256 experts top-8, sigmoid router with e_score_correction_bias. Attention sinks on sliding layers only
// (add_swa_attention_sink_bias). The converter appends _n_nextn = 3 MTP blocks (model.mtp.layers.i -> blk.48+i):
// block_count 51, nextn_predict_layers 3, pattern and head_count_kv extended with 3 sliding entries.
// withMtp = false: the trunk-only layout of a file converted without MTP blocks (block_count 48, no nextn key).
function mimo2_v2_flash(n_vocab, { withMtp = true } = {}) {
    const c = JSON.parse(fs.readFileSync(path.join(sharedConfigs(), "XiaomiMiMo__MiMo-V2-Flash.json"), "utf8"));
    const n_trunk = c.num_hidden_layers, n_nextn = withMtp ? 3 : 0, n_all = n_trunk + n_nextn;
    const n_embd = c.hidden_size, n_head = c.num_attention_heads, hk = c.head_dim, hv = c.v_head_dim;
    const pattern = [...c.hybrid_layer_pattern, ...Array(n_nextn).fill(1)];
    const kvh = pattern.map((s) => (s === 1 ? c.swa_num_key_value_heads : c.num_key_value_heads));
    const b = new Builder("mimo2");
    b.n_layer_trunk = n_trunk;
    b.k("block_count", n_all).k("context_length", c.max_position_embeddings).k("embedding_length", n_embd)
        .k("feed_forward_length", c.intermediate_size).k("attention.head_count", n_head)
        .k("attention.head_count_kv", i32arr(kvh))
        .k("rope.freq_base", f32(c.rope_theta)).k("attention.layer_norm_epsilon", f32(c.layernorm_epsilon))
        .k("expert_count", c.n_routed_experts).k("expert_used_count", c.num_experts_per_tok)
        .k("expert_group_count", c.n_group).k("expert_group_used_count", c.topk_group)
        .k("expert_gating_func", 2)                                             // sigmoid (scoring_func)
        .k("attention.key_length", hk).k("attention.value_length", hv)
        .k("attention.sliding_window", c.sliding_window)
        .k("attention.sliding_window_pattern", i32arr(pattern))
        .k("expert_feed_forward_length", c.moe_intermediate_size)
        .k("rope.dimension_count", Math.trunc(hk * c.partial_rotary_factor))     // int(192 * 0.334) = 64
        .k("attention.layer_norm_rms_epsilon", f32(c.layernorm_epsilon))
        .k("attention.value_scale", f32(c.attention_value_scale));
    if (n_nextn) b.k("nextn_predict_layers", n_nextn);
    b.t("token_embd.weight", [n_embd, n_vocab]).t("output_norm.weight", [n_embd]).t("output.weight", [n_embd, n_vocab]);
    for (let il = 0; il < n_all; ++il) {
        const swa = pattern[il] === 1, nkv = kvh[il], mtp = il >= n_trunk;
        b.blk(il, "attn_norm.weight", [n_embd])
            .blk(il, "attn_q.weight", [n_embd, n_head * hk]).blk(il, "attn_k.weight", [n_embd, nkv * hk])
            .blk(il, "attn_v.weight", [n_embd, nkv * hv]).blk(il, "attn_output.weight", [n_head * hv, n_embd]);
        if (swa ? c.add_swa_attention_sink_bias : c.add_full_attention_sink_bias) b.blk(il, "attn_sinks.weight", [n_head]);
        b.blk(il, "ffn_norm.weight", [n_embd]);
        if (mtp || c.moe_layer_freq[il] === 0) {
            // dense FFN: layer 0, and the MTP blocks (MiMo-V2-Flash MTP blocks are dense, sliding-window)
            b.blk(il, "ffn_gate.weight", [n_embd, c.intermediate_size]).blk(il, "ffn_up.weight", [n_embd, c.intermediate_size])
                .blk(il, "ffn_down.weight", [c.intermediate_size, n_embd]);
        } else {
            const E = c.n_routed_experts, F = c.moe_intermediate_size;
            b.blk(il, "ffn_gate_inp.weight", [n_embd, E]).blk(il, "exp_probs_b.bias", [E])
                .blk(il, "ffn_gate_exps.weight", [n_embd, F, E]).blk(il, "ffn_up_exps.weight", [n_embd, F, E])
                .blk(il, "ffn_down_exps.weight", [F, n_embd, E]);
        }
        if (mtp) {
            b.blk(il, "nextn.eh_proj.weight", [2 * n_embd, n_embd]).blk(il, "nextn.enorm.weight", [n_embd])
                .blk(il, "nextn.hnorm.weight", [n_embd]).blk(il, "layer_output_norm.weight", [n_embd]);
        }
    }
    return b;
}

// ---------------------------------------------------------------------------------------------------------
// Step-3.7-Flash: shared/configs/stepfun-ai__Step-3.7-Flash.json (an abridged copy: 45 layer_types, 64 heads,
// 8 KV heads x 128, window 512, 288 experts top-8, first 3 dense, shared expert 1280, 3 MTP layers) completed
// with the published text_config that the copy omits (attention_other_setting: 96 query heads on the sliding
// layers, 8 KV heads; use_head_wise_attn_gate; moe_layers_enum "3,...,44"), as StepFun's own GGUF of the model
// carries it (step35.attention.head_count = [64 full / 96 sliding] x 45, head_count_kv 8 x 45, key_length 128,
// sliding_window 512, leading_dense_block_count 3, 754 tensors, rope_freqs {64}, blk.0.attn_gate {4096, 64}).
// conversion/step3.py Step35Model; src/models/step35.cpp. Full layers il % 4 == 0 (12), sliding the rest (33).
// withMtp: the 3 NextN blocks appended at blk.45-47 (block_count 48, nextn_predict_layers 3); the converter pads
// layer_types for them with "full_attention" when the config lists only 45 (as this copy does).
function step35_3_7_flash(n_vocab, { withMtp = false } = {}) {
    const c = JSON.parse(fs.readFileSync(path.join(sharedConfigs(), "stepfun-ai__Step-3.7-Flash.json"), "utf8"));
    const n_trunk = c.num_hidden_layers, n_nextn = withMtp ? c.num_nextn_predict_layers : 0, n_all = n_trunk + n_nextn;
    const n_embd = c.hidden_size, hd = c.head_dim, n_head_full = c.num_attention_heads, n_head_swa = 96;
    const types = [...c.layer_types, ...Array(n_all - c.layer_types.length).fill("full_attention")].slice(0, n_all);
    const isSwa = types.map((x) => x === "sliding_attention");
    const heads = isSwa.map((s) => (s ? n_head_swa : n_head_full));
    const kvh = isSwa.map(() => c.num_key_value_heads);
    const b = new Builder("step35");
    b.n_layer_trunk = n_trunk;
    b.k("block_count", n_all).k("context_length", 262144).k("embedding_length", n_embd)
        .k("feed_forward_length", c.intermediate_size)
        .k("rope.freq_base", f32(5000000)).k("rope.freq_base_swa", f32(10000))
        .k("expert_gating_func", 2)                                             // moe_router_activation sigmoid
        .k("attention.key_length", hd).k("attention.value_length", hd)
        .k("attention.head_count", i32arr(heads)).k("attention.head_count_kv", i32arr(kvh))
        .k("attention.sliding_window", c.sliding_window).k("attention.sliding_window_pattern", boolarr(isSwa))
        .k("expert_count", c.num_experts).k("expert_used_count", c.num_experts_per_tok)
        .k("expert_feed_forward_length", c.moe_intermediate_size)
        .k("expert_shared_feed_forward_length", c.share_expert_dim)
        .k("expert_weights_scale", f32(c.moe_router_scaling_factor)).k("expert_weights_norm", true)
        .k("leading_dense_block_count", c.first_k_dense_replace).k("moe_every_n_layers", 1)
        .k("attention.layer_norm_rms_epsilon", f32(1e-5));
    if (n_nextn) b.k("nextn_predict_layers", n_nextn);
    b.t("token_embd.weight", [n_embd, n_vocab]).t("output_norm.weight", [n_embd]).t("output.weight", [n_embd, n_vocab]);
    // rope_freqs: llama3 rope factors over the widest rotary dim (sliding layers rotate all 128 dims) / 2
    b.t("rope_freqs.weight", [hd / 2]);
    for (let il = 0; il < n_all; ++il) {
        const nh = heads[il], mtp = il >= n_trunk;
        b.blk(il, "attn_norm.weight", [n_embd]).blk(il, "attn_q_norm.weight", [hd]).blk(il, "attn_k_norm.weight", [hd])
            .blk(il, "attn_q.weight", [n_embd, nh * hd]).blk(il, "attn_k.weight", [n_embd, kvh[il] * hd])
            .blk(il, "attn_v.weight", [n_embd, kvh[il] * hd]).blk(il, "attn_output.weight", [nh * hd, n_embd])
            .blk(il, "attn_gate.weight", [n_embd, nh]).blk(il, "ffn_norm.weight", [n_embd]);
        if (mtp || il < c.first_k_dense_replace) {
            b.blk(il, "ffn_gate.weight", [n_embd, c.intermediate_size]).blk(il, "ffn_up.weight", [n_embd, c.intermediate_size])
                .blk(il, "ffn_down.weight", [c.intermediate_size, n_embd]);
        } else {
            const E = c.num_experts, F = c.moe_intermediate_size, S = c.share_expert_dim;
            b.blk(il, "ffn_gate_inp.weight", [n_embd, E]).blk(il, "exp_probs_b.bias", [E])
                .blk(il, "ffn_gate_exps.weight", [n_embd, F, E]).blk(il, "ffn_up_exps.weight", [n_embd, F, E])
                .blk(il, "ffn_down_exps.weight", [F, n_embd, E])
                .blk(il, "ffn_gate_shexp.weight", [n_embd, S]).blk(il, "ffn_up_shexp.weight", [n_embd, S])
                .blk(il, "ffn_down_shexp.weight", [S, n_embd]);
        }
        if (mtp) {
            b.blk(il, "nextn.eh_proj.weight", [2 * n_embd, n_embd]).blk(il, "nextn.enorm.weight", [n_embd])
                .blk(il, "nextn.hnorm.weight", [n_embd]).blk(il, "nextn.shared_head_norm.weight", [n_embd])
                .blk(il, "nextn.shared_head_head.weight", [n_embd, n_vocab]);
        }
    }
    return b;
}

// ---------------------------------------------------------------------------------------------------------
// MiniMax-M2.x (minimax-m2): conversion/minimax.py MiniMaxM2Model; src/models/minimax-m2.cpp. minimaxM2(c, n_vocab)
// builds any shape of the family from an HF config `c` (the field names of shared/configs/MiniMaxAI__MiniMax-M2.5.json):
// num_hidden_layers full-attention layers, num_attention_heads q / num_key_value_heads KV heads x head_dim, per-layer q/k
// norm over the whole projection (qk_norm_type per_layer: attn_q_norm [n_head x head_dim], attn_k_norm [n_kv x
// head_dim]), num_local_experts experts top-num_experts_per_tok (intermediate_size wide), sigmoid router with bias
// (expert_gating_func 2, exp_probs_b), partial rotary (rotary_dim of head_dim). No sliding window; the converter writes
// no MTP blocks (use_mtp / num_mtp_modules are ignored).
export function minimaxM2(c, n_vocab) {
    const n_layer = c.num_hidden_layers, n_embd = c.hidden_size, n_head = c.num_attention_heads, nkv = c.num_key_value_heads;
    const hd = c.head_dim, E = c.num_local_experts, F = c.intermediate_size;
    const b = new Builder("minimax-m2");
    b.n_layer_trunk = n_layer;
    b.k("block_count", n_layer).k("context_length", c.max_position_embeddings).k("embedding_length", n_embd)
        .k("feed_forward_length", F).k("attention.head_count", n_head).k("attention.head_count_kv", nkv)
        .k("rope.freq_base", f32(c.rope_theta)).k("attention.layer_norm_rms_epsilon", f32(c.rms_norm_eps))
        .k("expert_count", E).k("expert_used_count", c.num_experts_per_tok).k("expert_gating_func", 2)
        .k("attention.key_length", hd).k("attention.value_length", hd)
        .k("expert_feed_forward_length", F).k("rope.dimension_count", c.rotary_dim);
    b.t("token_embd.weight", [n_embd, n_vocab]).t("output_norm.weight", [n_embd]).t("output.weight", [n_embd, n_vocab]);
    for (let il = 0; il < n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [n_embd])
            .blk(il, "attn_q.weight", [n_embd, n_head * hd]).blk(il, "attn_k.weight", [n_embd, nkv * hd])
            .blk(il, "attn_v.weight", [n_embd, nkv * hd]).blk(il, "attn_output.weight", [n_head * hd, n_embd])
            .blk(il, "attn_q_norm.weight", [n_head * hd]).blk(il, "attn_k_norm.weight", [nkv * hd])
            .blk(il, "ffn_norm.weight", [n_embd]).blk(il, "ffn_gate_inp.weight", [n_embd, E])
            .blk(il, "ffn_gate_exps.weight", [n_embd, F, E]).blk(il, "ffn_down_exps.weight", [F, n_embd, E])
            .blk(il, "ffn_up_exps.weight", [n_embd, F, E]).blk(il, "exp_probs_b.bias", [E]);
    }
    return b;
}

/// MiniMax-M2.5's config (shared/configs/MiniMaxAI__MiniMax-M2.5.json) with the fields of `over` changed: the
/// synthetic siblings of tests/conformance/shapes.mjs FAMILIES["minimax-m2"].
export function minimaxM2Config(over = {}) {
    return { ...JSON.parse(fs.readFileSync(path.join(sharedConfigs(), "MiniMaxAI__MiniMax-M2.5.json"), "utf8")), ...over };
}

// MiniMax-M2.5: 62 full-attention layers, 48 q / 8 KV heads x 128, 256 experts top-8 (intermediate 1536), rotary_dim 64.
const minimax_m2_5 = (n_vocab) => minimaxM2(minimaxM2Config(), n_vocab);

function sharedConfigs() {
    return process.env.KVFIT_SHARED_CONFIGS ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../shared/configs");
}

/// id -> {name, build(n_vocab), n_vocab (the real vocabulary), swa (has sliding-window layers)}.
export const MODELS_SWA = {
    "gemma4-26b-a4b":        { name: "gemma-4-26B-A4B",          build: (n) => gemma4_26b_a4b(n),                      n_vocab: 262144, swa: true },
    // synthetic: the 26B shape with num_kv_shared_layers 12 (the KV-sharing rule; no such published model)
    "gemma4-kvshared12":     { name: "gemma-4-26B-A4B-kvshared12-synthetic", build: (n) => gemma4_26b_a4b(n, { kvShared: 12 }), n_vocab: 262144, swa: true },
    // the MTP layout loads in v0.5.0 only: 5b4ebc5's load_hparams wants sliding_window_pattern of n_layer - nextn
    // entries ("key mimo2.attention.sliding_window_pattern has wrong array length; expected 48, got 51", measured)
    "mimo2-v2-flash":        { name: "MiMo-V2-Flash",            build: (n) => mimo2_v2_flash(n, { withMtp: true }),   n_vocab: 152576, swa: true, releases: ["v0.5.0"] },
    "mimo2-v2-flash-trunk":  { name: "MiMo-V2-Flash-trunk",      build: (n) => mimo2_v2_flash(n, { withMtp: false }),  n_vocab: 152576, swa: true },
    "step35-3.7-flash":      { name: "Step-3.7-Flash",           build: (n) => step35_3_7_flash(n, { withMtp: false }), n_vocab: 128896, swa: true },
    "step35-3.7-flash-mtp":  { name: "Step-3.7-Flash-MTP",       build: (n) => step35_3_7_flash(n, { withMtp: true }),  n_vocab: 128896, swa: true },
    "minimax-m2.5":          { name: "MiniMax-M2.5",             build: minimax_m2_5,                                  n_vocab: 200064, swa: false },
};

/// The kvfit-gguf-write spec of model `id` with a minimal SentencePiece vocabulary of n_vocab tokens.
export function specOfSwa(id, n_vocab) {
    const m = MODELS_SWA[id];
    const b = m.build(n_vocab);
    return {
        version: 3, data: "sparse",
        metadata: { ...b.metadata, "general.name": `${m.name}-conformance` },
        vocab: { spm: n_vocab },
        tensors: b.tensors,
    };
}

const numel = (shape) => shape.reduce((a, x) => a * x, 1);

/// Parameter count of the text model (real vocabulary): every tensor of the trunk (blk < n_layer) and the
/// globals, without the MTP blocks and without generated constants (rope_freqs). A tied output counts once.
export function paramCount(id) {
    const m = MODELS_SWA[id];
    const b = m.build(m.n_vocab);
    const out = { id, total: 0, embedding: 0, output: 0, attention: 0, ffn_dense: 0, experts: 0, router: 0, shared_expert: 0,
        norms_other: 0, excluded_mtp: 0, excluded_generated: 0, tensors: b.tensors.length };
    for (const t of b.tensors) {
        const n = numel(t.shape);
        const mb = /^blk\.(\d+)\./.exec(t.name);
        if (mb && Number(mb[1]) >= b.n_layer_trunk) { out.excluded_mtp += n; continue; }
        if (t.name === "rope_freqs.weight") { out.excluded_generated += n; continue; }
        out.total += n;
        if (t.name === "token_embd.weight") out.embedding += n;
        else if (t.name === "output.weight") out.output += n;
        else if (/attn_(q|k|v|output|gate)\.weight$/.test(t.name)) out.attention += n;
        else if (/ffn_(gate|up|down)\.weight$/.test(t.name)) out.ffn_dense += n;
        else if (/_exps\.weight$/.test(t.name)) out.experts += n;
        else if (/_shexp\.weight$/.test(t.name)) out.shared_expert += n;
        else if (/ffn_gate_inp\.weight$/.test(t.name)) out.router += n;
        else out.norms_other += n;
    }
    return out;
}

export function defaultGgufWrite() {
    return process.env.KVFIT_GGUF_WRITE ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../build/tools/kvfit-gguf-write");
}

/// Writes `<out>/<id>_v<n_vocab>.gguf` (and its .json spec) unless an identical spec was written before.
export function generateSwa(id, n_vocab, outDir, ggufWrite) {
    fs.mkdirSync(outDir, { recursive: true });
    const base = path.join(outDir, `${id}_v${n_vocab}`);
    const specText = JSON.stringify(specOfSwa(id, n_vocab));
    const specPath = `${base}.json`, gguf = `${base}.gguf`;
    if (fs.existsSync(gguf) && fs.existsSync(specPath) && fs.readFileSync(specPath, "utf8") === specText) return gguf;
    fs.writeFileSync(specPath, specText);
    try {
        execFileSync(ggufWrite, [specPath, gguf], { stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
        fs.rmSync(specPath, { force: true });
        throw new Error(`kvfit-gguf-write ${specPath}: ${String(e.stderr ?? e.message).trim()}`);
    }
    return gguf;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const args = process.argv.slice(2);
    const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
    if (args[0] === "--params") {
        for (const id of args.length > 1 ? args.slice(1) : Object.keys(MODELS_SWA)) console.log(JSON.stringify(paramCount(id)));
        process.exit(0);
    }
    const tool = opt("--gguf-write", defaultGgufWrite());
    const vocab = opt("--vocab", "both");
    const [out, ...ids] = args;
    if (!out) { console.error("usage: node models_swa.mjs OUT_DIR [--gguf-write PATH] [--vocab small|real|both] [ID...] | --params [ID...]"); process.exit(2); }
    for (const id of ids.length ? ids : Object.keys(MODELS_SWA)) {
        if (!MODELS_SWA[id]) { console.error(`unknown model '${id}' (known: ${Object.keys(MODELS_SWA).join(", ")})`); process.exit(2); }
        const sizes = vocab === "small" ? [512] : vocab === "real" ? [MODELS_SWA[id].n_vocab] : [512, MODELS_SWA[id].n_vocab];
        for (const n of sizes) {
            const f = generateSwa(id, n, out, tool);
            console.log(`${f}  ${fs.statSync(f).size} bytes`);
        }
    }
}
