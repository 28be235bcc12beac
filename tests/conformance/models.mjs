// Shape-exact model descriptions for the conformance suite: one function per architecture that turns the
// published hyperparameters into the GGUF keys and tensor list llama.cpp's loader requires.
//
// Each tensor list mirrors `load_arch_tensors` of the bundled llama.cpp (release v0.4.0, build 5b4ebc5:
// src/models/<arch>.cpp; names from src/llama-arch.cpp LLM_TENSOR_NAMES). The loader refuses a file with a
// missing required tensor, a wrong shape or an unused extra tensor ("wrong number of tensors"), so a model
// that loads is shape-exact. Keys: convert_hf_to_gguf.py (conversion/<family>.py) names and values.
//
// Hyperparameters come from the published config.json (../shared/configs/ where a copy is kept; the
// others are cited per model). Weight types do not change any buffer compared here except the model
// buffer, which kvfit reads from the same file. Matrices are iq1_s (1.56 bits per weight) when a row is a
// multiple of 256, else q5_0, else f16: small files, because llama.cpp maps the model with MAP_POPULATE
// (llama-mmap.cpp) and so reads every byte of the sparse hole once per load with real allocation; and
// none of these types is repacked by the CPU backend on x86 (q4_0/q4_K/iq4_nl/mxfp4, and q2_K with AVX-512, are
// moved into an extra CPU_REPACK buffer: ggml-cpu/repack.cpp), except f16 on a host with AMX (amx/amx.cpp:
// f16 matrices with ne0 % 16 == 0 and ne1 % 32 == 0; docs/rules/llamacpp-cpu-repack.md).

import fs from "node:fs";

/// ggml type for a weight of this name and shape (ne[0] first).
function weightType(name, shape) {
    const small = shape.length === 1 || /norm|bias|ssm_a$|ssm_d$|conv1d|sinks|exp_probs_b|ffn_gate_inp\.|ssm_beta\.|ssm_alpha\.|ssm_ba\./.test(name);
    if (small) return /ssm_beta\.|ssm_alpha\.|ssm_ba\./.test(name) ? "f16" : "f32";
    if (shape[0] % 256 === 0) return "iq1_s";
    return shape[0] % 32 === 0 ? "q5_0" : "f16";
}

export class Builder {
    constructor(arch) { this.arch = arch; this.metadata = { "general.architecture": arch }; this.tensors = []; }
    /// a key with the arch prefix: k("block_count", 32) -> "<arch>.block_count"
    k(key, value) { this.metadata[`${this.arch}.${key}`] = value; return this; }
    raw(key, value) { this.metadata[key] = value; return this; }
    t(name, shape) { this.tensors.push({ name, type: weightType(name, shape), shape }); return this; }
    blk(il, name, shape) { return this.t(`blk.${il}.${name}`, shape); }
}

const f32 = (v) => ({ type: "f32", value: v });
const u32arr = (a) => ({ type: "array", elem: "u32", value: a });
const i32arr = (a) => ({ type: "array", elem: "i32", value: a });
const boolarr = (a) => ({ type: "array", elem: "bool", value: a });

// Attention q/k/v/o of one layer (create_tensor_qkv + wo), optional biases.
function attn(b, il, n_embd, n_q, n_k, n_v, { bias = false, out = n_q } = {}) {
    b.blk(il, "attn_q.weight", [n_embd, n_q]).blk(il, "attn_k.weight", [n_embd, n_k]).blk(il, "attn_v.weight", [n_embd, n_v]);
    if (bias) b.blk(il, "attn_q.bias", [n_q]).blk(il, "attn_k.bias", [n_k]).blk(il, "attn_v.bias", [n_v]);
    b.blk(il, "attn_output.weight", [out, n_embd]);
}
function ffnGated(b, il, n_embd, n_ff) {
    b.blk(il, "ffn_gate.weight", [n_embd, n_ff]).blk(il, "ffn_down.weight", [n_ff, n_embd]).blk(il, "ffn_up.weight", [n_embd, n_ff]);
}
function embeddings(b, n_embd, n_vocab, tied) {
    b.t("token_embd.weight", [n_embd, n_vocab]).t("output_norm.weight", [n_embd]);
    if (!tied) b.t("output.weight", [n_embd, n_vocab]);
}

// ---------------------------------------------------------------------------------------------------------
// Llama-3.1-8B: shared/configs/meta-llama__Meta-Llama-3.1-8B.json. src/models/llama.cpp.
// llama(h): any shape of the family (tests/conformance/shapes.mjs records and checks siblings); attention.key_length
// when the heads' width is not n_embd / n_head (llama.cpp's n_embd_head_k)
export function llama(h, n_vocab) {
    const b = new Builder("llama");
    b.k("block_count", h.n_layer).k("context_length", 131072).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("attention.layer_norm_rms_epsilon", f32(1e-5)).k("rope.dimension_count", h.head_dim).k("rope.freq_base", f32(500000));
    if (h.head_dim * h.n_head !== h.n_embd) b.k("attention.key_length", h.head_dim).k("attention.value_length", h.head_dim);
    embeddings(b, h.n_embd, n_vocab, !!h.tied);
    for (let il = 0; il < h.n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]);
        attn(b, il, h.n_embd, h.n_head * h.head_dim, h.n_head_kv * h.head_dim, h.n_head_kv * h.head_dim);
        b.blk(il, "ffn_norm.weight", [h.n_embd]);
        ffnGated(b, il, h.n_embd, h.n_ff);
    }
    return b;
}
const llama31_8b = (n_vocab) => llama({ n_layer: 32, n_embd: 4096, n_head: 32, n_head_kv: 8, head_dim: 128, n_ff: 14336 }, n_vocab);

// Qwen3 dense (qwen3: Qwen3-0.6B..32B) and Qwen3 MoE (qwen3moe: Qwen3-30B-A3B, 235B-A22B, Qwen3-Coder):
// src/models/qwen3.cpp and src/models/qwen3moe.cpp (load_arch_tensors; conversion/qwen.py Qwen3Model, Qwen3MoeModel).
// qwen3(c, n_vocab) / qwen3moe(c, n_vocab) build any shape of the family from an HF config `c` (the field names of
// shared/configs/Qwen__Qwen3-8B.json): num_hidden_layers blocks of llama-style GQA attention without biases,
// num_attention_heads q / num_key_value_heads KV heads x head_dim (attention.key_length / value_length always written:
// Qwen3's queries are not n_embd wide in general, 0.6B's 16 x 128 over 1,024), a per-head q/k RMS norm
// (attn_q_norm / attn_k_norm [head_dim], applied to the 3-D Qcur / Kcur before RoPE), rotary over the whole head;
// qwen3: a SiLU-gated FFN intermediate_size wide; qwen3moe: num_experts routed experts top-num_experts_per_tok
// (moe_intermediate_size wide), softmax router, no shared expert. tie_word_embeddings: no output.weight (the loader
// duplicates token_embd, TENSOR_DUPLICATED).
function qwen3Common(arch, c, n_vocab) {
    const b = new Builder(arch);
    b.k("block_count", c.num_hidden_layers).k("context_length", c.max_position_embeddings ?? 40960)
        .k("embedding_length", c.hidden_size).k("attention.head_count", c.num_attention_heads)
        .k("attention.head_count_kv", c.num_key_value_heads).k("rope.freq_base", f32(c.rope_theta ?? 1000000))
        .k("attention.layer_norm_rms_epsilon", f32(c.rms_norm_eps ?? 1e-6))
        .k("attention.key_length", c.head_dim).k("attention.value_length", c.head_dim);
    embeddings(b, c.hidden_size, n_vocab, !!c.tie_word_embeddings);
    return b;
}
function qwen3Attn(b, il, c) {
    const hd = c.head_dim;
    b.blk(il, "attn_norm.weight", [c.hidden_size]);
    attn(b, il, c.hidden_size, c.num_attention_heads * hd, c.num_key_value_heads * hd, c.num_key_value_heads * hd);
    b.blk(il, "attn_k_norm.weight", [hd]).blk(il, "attn_q_norm.weight", [hd]).blk(il, "ffn_norm.weight", [c.hidden_size]);
}
export function qwen3(c, n_vocab) {
    const b = qwen3Common("qwen3", c, n_vocab);
    b.k("feed_forward_length", c.intermediate_size);
    for (let il = 0; il < c.num_hidden_layers; ++il) {
        qwen3Attn(b, il, c);
        ffnGated(b, il, c.hidden_size, c.intermediate_size);
    }
    return b;
}
export function qwen3moe(c, n_vocab) {
    const b = qwen3Common("qwen3moe", c, n_vocab);
    const E = c.num_experts, F = c.moe_intermediate_size;
    b.k("feed_forward_length", c.intermediate_size ?? 6144).k("expert_count", E)
        .k("expert_used_count", c.num_experts_per_tok).k("expert_feed_forward_length", F);
    for (let il = 0; il < c.num_hidden_layers; ++il) {
        qwen3Attn(b, il, c);
        b.blk(il, "ffn_gate_inp.weight", [c.hidden_size, E]).blk(il, "ffn_gate_exps.weight", [c.hidden_size, F, E])
            .blk(il, "ffn_down_exps.weight", [F, c.hidden_size, E]).blk(il, "ffn_up_exps.weight", [c.hidden_size, F, E]);
    }
    return b;
}
/// Qwen3-8B's config (shared/configs/Qwen__Qwen3-8B.json, the one real qwen3 config kept) with the fields of `over`
/// changed: the synthetic siblings of tests/conformance/shapes.mjs FAMILIES["qwen3"] and ["qwen3moe"]
export function qwen3Config(over = {}) {
    const dir = process.env.KVFIT_SHARED_CONFIGS ?? new URL("../../../shared/configs/", import.meta.url).pathname;
    return { ...JSON.parse(fs.readFileSync(`${dir}/Qwen__Qwen3-8B.json`, "utf8")), ...over };
}

// Qwen3.5 dense (qwen35): src/models/qwen35.cpp. Layer il is attention iff (il + 1) % 4 == 0.
// Gated DeltaNet keys (conversion/qwen.py): inner_size = H_v * D_v, group_count = H_k, state_size = D_k,
// time_step_rank = H_v.
export function qwen35(h, n_vocab) {
    const b = new Builder("qwen35");
    const value_dim = h.lin_v_heads * h.lin_v_dim;
    b.k("block_count", h.n_layer).k("context_length", 262144).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("attention.layer_norm_rms_epsilon", f32(1e-6)).k("attention.key_length", h.head_dim)
        .k("attention.value_length", h.head_dim).k("rope.dimension_count", h.head_dim / 4)
        .k("rope.freq_base", f32(10000000)).k("rope.dimension_sections", i32arr([11, 11, 10, 0]))
        .k("ssm.conv_kernel", h.d_conv ?? 4).k("ssm.state_size", h.lin_k_dim).k("ssm.group_count", h.lin_k_heads)
        .k("ssm.time_step_rank", h.lin_v_heads).k("ssm.inner_size", value_dim).k("full_attention_interval", 4);
    embeddings(b, h.n_embd, n_vocab, false);
    for (let il = 0; il < h.n_layer; ++il) {
        qwen35Mixer(b, il, h, (il + 1) % 4 === 0);
        ffnGated(b, il, h.n_embd, h.n_ff);
    }
    return b;
}
/// One Qwen3.5 block's norms and token mixer (qwen35 and qwen35moe alike: load_arch_tensors of src/models/qwen35.cpp
/// and qwen35moe.cpp): gated full attention (q doubled by its gate, q/k norms) or a Gated DeltaNet layer (fused qkv,
/// z gate, conv1d of d_conv taps, dt bias, A, beta, alpha, per-head norm, out).
function qwen35Mixer(b, il, h, full) {
    const key_dim = h.lin_k_heads * h.lin_k_dim, value_dim = h.lin_v_heads * h.lin_v_dim;
    b.blk(il, "attn_norm.weight", [h.n_embd]).blk(il, "post_attention_norm.weight", [h.n_embd]);
    if (full) {
        attn(b, il, h.n_embd, h.head_dim * h.n_head * 2, h.head_dim * h.n_head_kv, h.head_dim * h.n_head_kv,
             { out: h.head_dim * h.n_head });
        b.blk(il, "attn_q_norm.weight", [h.head_dim]).blk(il, "attn_k_norm.weight", [h.head_dim]);
    } else {
        b.blk(il, "attn_qkv.weight", [h.n_embd, key_dim * 2 + value_dim]).blk(il, "attn_gate.weight", [h.n_embd, value_dim])
            .blk(il, "ssm_conv1d.weight", [h.d_conv ?? 4, key_dim * 2 + value_dim]).blk(il, "ssm_dt.bias", [h.lin_v_heads])
            .blk(il, "ssm_a", [h.lin_v_heads]).blk(il, "ssm_beta.weight", [h.n_embd, h.lin_v_heads])
            .blk(il, "ssm_alpha.weight", [h.n_embd, h.lin_v_heads]).blk(il, "ssm_norm.weight", [h.lin_v_dim])
            .blk(il, "ssm_out.weight", [value_dim, h.n_embd]);
    }
}

/// Routed experts (n_expert of n_ff_exp, a router) and one shared expert (n_ff_shexp wide, a 1-D sigmoid gate):
/// the FFN of qwen3next and qwen35moe (load_arch_tensors of src/models/qwen3next.cpp, qwen35moe.cpp).
function moeShexp(b, il, h) {
    b.blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert])
        .blk(il, "ffn_down_exps.weight", [h.n_ff_exp, h.n_embd, h.n_expert])
        .blk(il, "ffn_gate_exps.weight", [h.n_embd, h.n_ff_exp, h.n_expert])
        .blk(il, "ffn_up_exps.weight", [h.n_embd, h.n_ff_exp, h.n_expert])
        .blk(il, "ffn_gate_inp_shexp.weight", [h.n_embd])
        .blk(il, "ffn_gate_shexp.weight", [h.n_embd, h.n_ff_shexp]).blk(il, "ffn_up_shexp.weight", [h.n_embd, h.n_ff_shexp])
        .blk(il, "ffn_down_shexp.weight", [h.n_ff_shexp, h.n_embd]);
}

// Qwen3.5 MoE (qwen35moe: Qwen3.5/3.6-35B-A3B, 122B-A10B, 397B-A17B): src/models/qwen35moe.cpp. The blocks of qwen35
// with the FFN replaced by n_expert routed experts (top n_expert_used, n_ff_exp wide) and one shared expert
// (n_ff_shexp wide, a 1-D sigmoid gate). Keys and tensors as the suite's Qwen3.5-35B-A3B (models_hyb.mjs
// qwen35moe_35b, conversion/qwen.py Qwen3_5MoeTextModel): no feed_forward_length; attention.recurrent_layers from
// layer_types (v0.5.0's converter; without it, recurrentKey false, the loader falls back to full_attention_interval,
// as 5b4ebc5's converter writes); with mtp, one
// trailing NextN block (block_count = n_layer + 1), which a main context skips.
export function qwen35moe(h, n_vocab, { mtp = false, recurrentKey = true } = {}) {
    const b = new Builder("qwen35moe");
    const n_all = h.n_layer + (mtp ? 1 : 0);
    const isRecr = (il) => il < h.n_layer && (il + 1) % 4 !== 0;
    b.k("block_count", n_all).k("context_length", 262144).k("embedding_length", h.n_embd)
        .k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("rope.dimension_sections", i32arr([11, 11, 10, 0])).k("rope.freq_base", f32(10000000))
        .k("attention.layer_norm_rms_epsilon", f32(1e-6)).k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used)
        .k("attention.key_length", h.head_dim).k("attention.value_length", h.head_dim)
        .k("expert_feed_forward_length", h.n_ff_exp).k("expert_shared_feed_forward_length", h.n_ff_shexp)
        .k("ssm.conv_kernel", h.d_conv ?? 4).k("ssm.state_size", h.lin_k_dim).k("ssm.group_count", h.lin_k_heads)
        .k("ssm.time_step_rank", h.lin_v_heads).k("ssm.inner_size", h.lin_v_heads * h.lin_v_dim);
    if (recurrentKey) b.k("attention.recurrent_layers", boolarr([...Array(n_all).keys()].map(isRecr)));
    b.k("full_attention_interval", 4).k("rope.dimension_count", h.head_dim / 4);
    if (mtp) b.k("nextn_predict_layers", 1);
    embeddings(b, h.n_embd, n_vocab, false);
    for (let il = 0; il < h.n_layer; ++il) {
        qwen35Mixer(b, il, h, !isRecr(il));
        moeShexp(b, il, h);
    }
    if (mtp) {
        const il = h.n_layer; // load_block_mtp: a full-attention block with MoE + the NextN fusion tensors
        qwen35Mixer(b, il, h, true);
        moeShexp(b, il, h);
        b.blk(il, "nextn.eh_proj.weight", [2 * h.n_embd, h.n_embd]).blk(il, "nextn.enorm.weight", [h.n_embd])
            .blk(il, "nextn.hnorm.weight", [h.n_embd]).blk(il, "nextn.shared_head_norm.weight", [h.n_embd]);
    }
    return b;
}
// Qwen3.5-9B: as shared/reference/llamacpp/gguf/qwen35-9b_*.gguf (measured reference files).
const qwen35_9b = (n_vocab) => qwen35({ n_layer: 32, n_embd: 4096, n_head: 16, n_head_kv: 4, head_dim: 256, n_ff: 12288,
    lin_k_heads: 16, lin_k_dim: 128, lin_v_heads: 32, lin_v_dim: 128 }, n_vocab);
// Qwen3.5-27B: shared/configs/Qwen__Qwen3.5-27B.json (text_config).
const qwen35_27b = (n_vocab) => qwen35({ n_layer: 64, n_embd: 5120, n_head: 24, n_head_kv: 4, head_dim: 256, n_ff: 17408,
    lin_k_heads: 16, lin_k_dim: 128, lin_v_heads: 48, lin_v_dim: 128 }, n_vocab);

// Qwen3-Next-80B-A3B: shared/configs/Qwen__Qwen3-Next-80B-A3B-Thinking.json. src/models/qwen3next.cpp:
// fused ssm_ba, 512 experts top-10, shared expert with a 1-D gate.
function qwen3next_80b(n_vocab) {
    const h = { n_layer: 48, n_embd: 2048, n_head: 16, n_head_kv: 2, head_dim: 256, n_expert: 512, n_expert_used: 10,
        n_ff_exp: 512, n_ff_shexp: 512, lin_k_heads: 16, lin_k_dim: 128, lin_v_heads: 32, lin_v_dim: 128 };
    const key_dim = h.lin_k_heads * h.lin_k_dim, value_dim = h.lin_v_heads * h.lin_v_dim;
    const b = new Builder("qwen3next");
    b.k("block_count", h.n_layer).k("context_length", 262144).k("embedding_length", h.n_embd)
        .k("feed_forward_length", 5120).k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("attention.layer_norm_rms_epsilon", f32(1e-6)).k("attention.key_length", h.head_dim)
        .k("attention.value_length", h.head_dim).k("rope.dimension_count", 64).k("rope.freq_base", f32(10000000))
        .k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used)
        .k("expert_feed_forward_length", h.n_ff_exp).k("expert_shared_feed_forward_length", h.n_ff_shexp)
        .k("ssm.conv_kernel", 4).k("ssm.state_size", h.lin_k_dim).k("ssm.group_count", h.lin_k_heads)
        .k("ssm.time_step_rank", h.lin_v_heads).k("ssm.inner_size", value_dim).k("full_attention_interval", 4);
    embeddings(b, h.n_embd, n_vocab, false);
    for (let il = 0; il < h.n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]).blk(il, "post_attention_norm.weight", [h.n_embd]);
        if ((il + 1) % 4 === 0) {
            attn(b, il, h.n_embd, h.head_dim * h.n_head * 2, h.head_dim * h.n_head_kv, h.head_dim * h.n_head_kv,
                 { out: h.head_dim * h.n_head });
            b.blk(il, "attn_q_norm.weight", [h.head_dim]).blk(il, "attn_k_norm.weight", [h.head_dim]);
        } else {
            b.blk(il, "attn_qkv.weight", [h.n_embd, key_dim * 2 + value_dim]).blk(il, "attn_gate.weight", [h.n_embd, value_dim])
                .blk(il, "ssm_conv1d.weight", [4, key_dim * 2 + value_dim]).blk(il, "ssm_dt.bias", [h.lin_v_heads])
                .blk(il, "ssm_a", [h.lin_v_heads]).blk(il, "ssm_ba.weight", [h.n_embd, 2 * h.lin_v_heads])
                .blk(il, "ssm_norm.weight", [h.lin_v_dim]).blk(il, "ssm_out.weight", [value_dim, h.n_embd]);
        }
        moeShexp(b, il, h);
    }
    return b;
}

// gpt-oss: src/models/openai-moe.cpp: sliding window on every other layer (set_swa_pattern(2): il 0 swa, il 1 full,
// ...), attention sinks, biased experts (MXFP4 in the real files; iq1_s / q5_0 here). gpt_oss(h): any shape of the
// family (tests/conformance/shapes.mjs records and checks siblings); h.n_swa the window (128 when not given).
export function gpt_oss(h, n_vocab) {
    const b = new Builder("gpt-oss");
    b.k("block_count", h.n_layer).k("context_length", 131072).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff_exp).k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("attention.layer_norm_rms_epsilon", f32(1e-5)).k("attention.key_length", h.head_dim)
        .k("attention.value_length", h.head_dim).k("attention.sliding_window", h.n_swa ?? 128)
        .k("rope.freq_base", f32(150000)).k("rope.scaling.type", "yarn").k("rope.scaling.factor", f32(32))
        .k("rope.scaling.original_context_length", 4096)
        .k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used).k("expert_feed_forward_length", h.n_ff_exp);
    embeddings(b, h.n_embd, n_vocab, false);
    const q = h.n_head * h.head_dim, kv = h.n_head_kv * h.head_dim;
    for (let il = 0; il < h.n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]).blk(il, "post_attention_norm.weight", [h.n_embd]);
        attn(b, il, h.n_embd, q, kv, kv, { bias: true });
        b.blk(il, "attn_sinks.weight", [h.n_head])
            .blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert])
            .blk(il, "ffn_gate_exps.weight", [h.n_embd, h.n_ff_exp, h.n_expert])
            .blk(il, "ffn_down_exps.weight", [h.n_ff_exp, h.n_embd, h.n_expert])
            .blk(il, "ffn_up_exps.weight", [h.n_embd, h.n_ff_exp, h.n_expert])
            .blk(il, "attn_output.bias", [h.n_embd]).blk(il, "ffn_gate_inp.bias", [h.n_expert])
            .blk(il, "ffn_gate_exps.bias", [h.n_ff_exp, h.n_expert]).blk(il, "ffn_down_exps.bias", [h.n_embd, h.n_expert])
            .blk(il, "ffn_up_exps.bias", [h.n_ff_exp, h.n_expert]);
    }
    return b;
}
// gpt-oss-20b: shared/configs/openai__gpt-oss-20b.json: 24 layers, window 128, 32 experts, 4 used.
const gpt_oss_20b = (n_vocab) => gpt_oss({ n_layer: 24, n_embd: 2880, n_head: 64, n_head_kv: 8, head_dim: 64, n_expert: 32,
    n_expert_used: 4, n_ff_exp: 2880 }, n_vocab);

// Gemma 3 (src/models/gemma3.cpp, both releases): a window on (pattern - 1) of every `pattern` layers (v0.5.0
// load_swa_pattern(ml, 6), 5b4ebc5 get_key_or_arr(attention.sliding_window_pattern, 6): the period is the GGUF's
// attention.sliding_window_pattern when present, else 6), q/k norm, post-attention and post-FFN norms, a GELU-gated
// FFN, tied embeddings. gemma3(h): any shape of the family (tests/conformance/shapes.mjs records and checks siblings);
// h.n_swa the window (1,024 when not given), h.swa_pattern the period (the key is written only when given).
export function gemma3(h, n_vocab) {
    const b = new Builder("gemma3");
    b.k("block_count", h.n_layer).k("context_length", 131072).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("attention.layer_norm_rms_epsilon", f32(1e-6)).k("attention.key_length", h.head_dim)
        .k("attention.value_length", h.head_dim).k("attention.sliding_window", h.n_swa ?? 1024)
        .k("rope.freq_base", f32(1000000)).k("rope.freq_base_swa", f32(10000));
    if (h.swa_pattern !== undefined) b.k("attention.sliding_window_pattern", h.swa_pattern);
    embeddings(b, h.n_embd, n_vocab, true);
    for (let il = 0; il < h.n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]);
        attn(b, il, h.n_embd, h.n_head * h.head_dim, h.n_head_kv * h.head_dim, h.n_head_kv * h.head_dim);
        b.blk(il, "post_attention_norm.weight", [h.n_embd]).blk(il, "attn_k_norm.weight", [h.head_dim])
            .blk(il, "attn_q_norm.weight", [h.head_dim]).blk(il, "ffn_norm.weight", [h.n_embd]);
        ffnGated(b, il, h.n_embd, h.n_ff);
        b.blk(il, "post_ffw_norm.weight", [h.n_embd]);
    }
    return b;
}
// Gemma 3 12B: google/gemma-3-12b-pt text config (as shared/reference/llamacpp/gguf/gemma3-12b_*.gguf): 48 layers,
// 3840 wide, 16 x 256 heads, 8 KV heads, FFN 15,360, window 1,024 on 5 of every 6 layers.
const gemma3_12b = (n_vocab) => gemma3({ n_layer: 48, n_embd: 3840, n_head: 16, n_head_kv: 8, head_dim: 256, n_ff: 15360 }, n_vocab);

// DeepSeek-V2-Lite: deepseek-ai/DeepSeek-V2-Lite config.json (as shared/reference/llamacpp/gguf/
// deepseek-v2-lite_v512.gguf). src/models/deepseek2.cpp: MLA (key_length_mla present), no q_lora,
// 1 leading dense block, 64 routed + 2 shared experts.
function deepseek_v2_lite(n_vocab) {
    const h = { n_layer: 27, n_embd: 2048, n_head: 16, kv_lora: 512, rope: 64, nope: 128, v_dim: 128, n_ff: 10944,
        n_expert: 64, n_expert_used: 6, n_shared: 2, n_ff_exp: 1408 };
    const b = new Builder("deepseek2");
    b.k("block_count", h.n_layer).k("context_length", 163840).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head).k("attention.head_count_kv", 1)
        .k("attention.layer_norm_rms_epsilon", f32(1e-6)).k("attention.key_length", h.kv_lora + h.rope)
        .k("attention.value_length", h.kv_lora).k("attention.key_length_mla", h.nope + h.rope)
        .k("attention.value_length_mla", h.v_dim).k("attention.kv_lora_rank", h.kv_lora)
        .k("rope.dimension_count", h.rope).k("rope.freq_base", f32(10000)).k("leading_dense_block_count", 1)
        .k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used).k("expert_shared_count", h.n_shared)
        .k("expert_feed_forward_length", h.n_ff_exp).k("expert_weights_scale", f32(1.0));
    embeddings(b, h.n_embd, n_vocab, false);
    for (let il = 0; il < h.n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]).blk(il, "attn_kv_a_norm.weight", [h.kv_lora])
            .blk(il, "attn_q.weight", [h.n_embd, h.n_head * (h.nope + h.rope)])
            .blk(il, "attn_kv_a_mqa.weight", [h.n_embd, h.kv_lora + h.rope])
            .blk(il, "attn_k_b.weight", [h.nope, h.kv_lora, h.n_head]).blk(il, "attn_v_b.weight", [h.kv_lora, h.v_dim, h.n_head])
            .blk(il, "attn_output.weight", [h.n_head * h.v_dim, h.n_embd]).blk(il, "ffn_norm.weight", [h.n_embd]);
        if (il < 1) { ffnGated(b, il, h.n_embd, h.n_ff); continue; }
        const sh = h.n_ff_exp * h.n_shared;
        b.blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert])
            .blk(il, "ffn_down_exps.weight", [h.n_ff_exp, h.n_embd, h.n_expert])
            .blk(il, "ffn_gate_exps.weight", [h.n_embd, h.n_ff_exp, h.n_expert])
            .blk(il, "ffn_up_exps.weight", [h.n_embd, h.n_ff_exp, h.n_expert])
            .blk(il, "ffn_gate_shexp.weight", [h.n_embd, sh]).blk(il, "ffn_down_shexp.weight", [sh, h.n_embd])
            .blk(il, "ffn_up_shexp.weight", [h.n_embd, sh]);
    }
    return b;
}

// Mamba2 layer tensors (src/models/mamba2.cpp, nemotron-h.cpp, granite-hybrid.cpp).
function mamba2Layer(b, il, n_embd, s) {
    const conv_dim = s.d_inner + 2 * s.n_group * s.d_state;
    b.blk(il, "ssm_in.weight", [n_embd, 2 * s.d_inner + 2 * s.n_group * s.d_state + s.n_head])
        .blk(il, "ssm_conv1d.weight", [s.d_conv, conv_dim]).blk(il, "ssm_conv1d.bias", [conv_dim])
        .blk(il, "ssm_dt.bias", [s.n_head]).blk(il, "ssm_a", [1, s.n_head]).blk(il, "ssm_d", [1, s.n_head])
        .blk(il, "ssm_norm.weight", [s.d_inner / s.n_group, s.n_group]).blk(il, "ssm_out.weight", [s.d_inner, n_embd]);
}
function ssmKeys(b, s) {
    b.k("ssm.conv_kernel", s.d_conv).k("ssm.inner_size", s.d_inner).k("ssm.state_size", s.d_state)
        .k("ssm.time_step_rank", s.n_head).k("ssm.group_count", s.n_group);
}

// mamba2-2.7b: state-spaces/mamba2-2.7b config.json (d_model 2560, n_layer 64, expand 2, d_state 128,
// headdim 64, ngroups 1, d_conv 4, vocab 50277 padded to 50288). Keys as conversion/mamba.py Mamba2Model.
function mamba2_2_7b(n_vocab) {
    const n_embd = 2560, n_layer = 64, s = { d_conv: 4, d_inner: 5120, d_state: 128, n_head: 80, n_group: 1 };
    const b = new Builder("mamba2");
    b.k("context_length", 1048576).k("embedding_length", n_embd).k("feed_forward_length", 0).k("attention.head_count", 0)
        .k("block_count", n_layer).k("attention.layer_norm_rms_epsilon", f32(1e-5));
    ssmKeys(b, s);
    embeddings(b, n_embd, n_vocab, true);
    for (let il = 0; il < n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [n_embd]);
        // mamba2.cpp: d_in_proj = d_inner + conv_dim + dt_rank (same as 2*d_inner + 2*ng*ds + nh)
        mamba2Layer(b, il, n_embd, s);
    }
    return b;
}

// Nemotron-H-56B-Base-8K: shared/configs/nvidia__Nemotron-H-56B-Base-8K.json. One mixer per block from
// hybrid_override_pattern: M mamba2, * attention, - MLP (relu^2, up/down). Keys as conversion/nemotron.py.
const NEMOTRON_H_56B_PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
function nemotron_h_56b(n_vocab) {
    const p = NEMOTRON_H_56B_PATTERN, n_layer = p.length, n_embd = 8192, n_ff = 32768, head_dim = 128, n_head = 64, n_head_kv = 8;
    const s = { d_conv: 4, d_inner: 256 * 64, d_state: 256, n_head: 256, n_group: 8 };
    const b = new Builder("nemotron_h");
    b.k("context_length", 8192).k("embedding_length", n_embd).k("block_count", n_layer)
        .k("feed_forward_length", u32arr([...p].map((c) => (c === "-" ? n_ff : 0))))
        .k("attention.head_count", n_head)
        .k("attention.head_count_kv", u32arr([...p].map((c) => (c === "*" ? n_head_kv : 0))))
        .k("attention.key_length", head_dim).k("attention.value_length", head_dim)
        .k("attention.layer_norm_rms_epsilon", f32(1e-5)).k("attention.layer_norm_epsilon", f32(1e-5));
    ssmKeys(b, s);
    embeddings(b, n_embd, n_vocab, false);
    for (let il = 0; il < n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [n_embd]);
        if (p[il] === "M") mamba2Layer(b, il, n_embd, s);
        else if (p[il] === "*") attn(b, il, n_embd, n_head * head_dim, n_head_kv * head_dim, n_head_kv * head_dim);
        else b.blk(il, "ffn_down.weight", [n_ff, n_embd]).blk(il, "ffn_up.weight", [n_embd, n_ff]);
    }
    return b;
}

// LFM2-1.2B: LiquidAI/LFM2-1.2B config.json (as shared/reference/llamacpp/gguf/lfm2-1.2b_*.gguf):
// 16 blocks, attention at il 2 5 8 10 12 14 (head_count_kv 8), short convolution (L_cache 3) elsewhere.
function lfm2_1_2b(n_vocab) {
    const kv = [0, 0, 8, 0, 0, 8, 0, 0, 8, 0, 8, 0, 8, 0, 8, 0];
    const n_embd = 2048, n_ff = 8192, n_head = 32, head_dim = 64;
    const b = new Builder("lfm2");
    b.k("block_count", kv.length).k("context_length", 128000).k("embedding_length", n_embd).k("feed_forward_length", n_ff)
        .k("attention.head_count", n_head).k("attention.layer_norm_rms_epsilon", f32(1e-5))
        .k("rope.freq_base", f32(1000000)).k("shortconv.l_cache", 3).k("attention.head_count_kv", i32arr(kv));
    b.t("token_embd.weight", [n_embd, n_vocab]).t("token_embd_norm.weight", [n_embd]);
    for (let il = 0; il < kv.length; ++il) {
        b.blk(il, "ffn_norm.weight", [n_embd]);
        ffnGated(b, il, n_embd, n_ff);
        b.blk(il, "attn_norm.weight", [n_embd]);
        if (kv[il] === 0) {
            b.blk(il, "shortconv.conv.weight", [3, n_embd]).blk(il, "shortconv.in_proj.weight", [n_embd, 3 * n_embd])
                .blk(il, "shortconv.out_proj.weight", [n_embd, n_embd]);
        } else {
            b.blk(il, "attn_q_norm.weight", [head_dim]).blk(il, "attn_k_norm.weight", [head_dim]);
            attn(b, il, n_embd, n_head * head_dim, kv[il] * head_dim, kv[il] * head_dim);
        }
    }
    return b;
}

// Granite-4.0-H-Small: ibm-granite/granite-4.0-h-small config.json (hidden 4096, 40 layers, 32 q / 8 kv heads,
// 72 experts top-10, expert FFN 768, shared 1536, mamba 128 heads x 64, d_state 128, 1 group, d_conv 4, tied,
// vocab 100352); 4 attention layers (layer_types "attention" at il 5 15 25 35), 36 mamba2.
// src/models/granite-hybrid.cpp; keys as conversion/granite.py GraniteHybridModel.
function granite_4_0_h_small(n_vocab) {
    const n_layer = 40, n_embd = 4096, n_head = 32, n_head_kv = 8, head_dim = 128, n_ff = 768, n_shexp = 1536, n_expert = 72;
    const attnAt = new Set([5, 15, 25, 35]);
    const s = { d_conv: 4, d_inner: 8192, d_state: 128, n_head: 128, n_group: 1 };
    const b = new Builder("granitehybrid");
    b.k("block_count", n_layer).k("context_length", 131072).k("embedding_length", n_embd).k("feed_forward_length", n_ff)
        .k("attention.head_count", n_head)
        .k("attention.head_count_kv", u32arr([...Array(n_layer).keys()].map((i) => (attnAt.has(i) ? n_head_kv : 0))))
        .k("attention.layer_norm_rms_epsilon", f32(1e-5)).k("attention.scale", f32(0.0078125))
        .k("embedding_scale", f32(12)).k("residual_scale", f32(0.246)).k("logit_scale", f32(16))
        .k("rope.freq_base", f32(10000000)).k("expert_count", n_expert).k("expert_used_count", 10)
        .k("expert_shared_feed_forward_length", n_shexp);
    ssmKeys(b, s);
    embeddings(b, n_embd, n_vocab, true);
    for (let il = 0; il < n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [n_embd]);
        if (attnAt.has(il)) attn(b, il, n_embd, n_head * head_dim, n_head_kv * head_dim, n_head_kv * head_dim);
        else mamba2Layer(b, il, n_embd, s);
        b.blk(il, "ffn_norm.weight", [n_embd]).blk(il, "ffn_gate_inp.weight", [n_embd, n_expert])
            .blk(il, "ffn_gate_exps.weight", [n_embd, n_ff, n_expert]).blk(il, "ffn_down_exps.weight", [n_ff, n_embd, n_expert])
            .blk(il, "ffn_up_exps.weight", [n_embd, n_ff, n_expert])
            .blk(il, "ffn_gate_shexp.weight", [n_embd, n_shexp]).blk(il, "ffn_up_shexp.weight", [n_embd, n_shexp])
            .blk(il, "ffn_down_shexp.weight", [n_shexp, n_embd]);
    }
    return b;
}

/// The architectures covered: id -> {name, build(n_vocab), n_vocab (the real vocabulary), swa (has windows)}.
export const MODELS = {
    "qwen35-9b":        { name: "Qwen3.5-9B",              build: qwen35_9b,           n_vocab: 248320 },
    "qwen35-27b":       { name: "Qwen3.5-27B",             build: qwen35_27b,          n_vocab: 248320 },
    "qwen3next-80b":    { name: "Qwen3-Next-80B-A3B",      build: qwen3next_80b,       n_vocab: 151936 },
    "llama31-8b":       { name: "Llama-3.1-8B",            build: llama31_8b,          n_vocab: 128256 },
    "gpt-oss-20b":      { name: "gpt-oss-20b",             build: gpt_oss_20b,         n_vocab: 201088, swa: true },
    "gemma3-12b":       { name: "Gemma-3-12B",             build: gemma3_12b,          n_vocab: 262208, swa: true },
    "deepseek-v2-lite": { name: "DeepSeek-V2-Lite",        build: deepseek_v2_lite,    n_vocab: 102400 },
    "mamba2-2.7b":      { name: "mamba2-2.7b",             build: mamba2_2_7b,         n_vocab: 50288 },
    "nemotron-h-56b":   { name: "Nemotron-H-56B-Base-8K",  build: nemotron_h_56b,      n_vocab: 131072 },
    "lfm2-1.2b":        { name: "LFM2-1.2B",               build: lfm2_1_2b,           n_vocab: 65536 },
    "granite-4.0-h-small": { name: "Granite-4.0-H-Small",  build: granite_4_0_h_small, n_vocab: 100352 },
};

/// The kvfit-gguf-write spec of model `id` with a minimal SentencePiece vocabulary of n_vocab tokens.
export function specOf(id, n_vocab) {
    const m = MODELS[id];
    const b = m.build(n_vocab);
    return {
        version: 3, data: "sparse",
        metadata: { ...b.metadata, "general.name": `${m.name}-conformance` },
        vocab: { spm: n_vocab },
        tensors: b.tensors,
    };
}
