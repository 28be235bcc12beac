// Shape-exact builders for the hybrid / MoE architectures of llama.cpp release v0.5.0 (node-llama-cpp 3.22.1):
// nemotron_h_moe (Nemotron-3-Super), qwen35moe (Qwen3.5-35B-A3B), qwen3vlmoe (Qwen3-VL-30B-A3B), qwen3vl
// (Qwen3-VL-8B) and gpt-oss (gpt-oss-120b). Same conventions as models.mjs (its small helpers are duplicated
// here so that file stays untouched): each tensor list mirrors `load_arch_tensors` in src/models/<arch>.cpp of
// /work/scratch/llama050/src, keys are what convert_hf_to_gguf.py (conversion/<family>.py) writes, and a file
// that loads is shape-exact because the loader refuses a missing, misshapen or unused extra tensor.
//
// MTP / NextN blocks are written where the converter writes them (Nemotron-3-Super, Qwen3.5-35B-A3B): they are
// trailing blocks (block_count = n_layer + nextn_predict_layers). A main context (node-llama-cpp never sets
// load_mtp) skips their tensors (TENSOR_SKIP: "model has unused tensor ... -- ignoring", and their bytes are
// subtracted from the model buffer), but the file must contain them.
//
// Weight types as models.mjs weightType(): iq1_s / q5_0 / f16 / f32, none of them repacked by the CPU backend.
//
// usage (writes the GGUF files):
//   node models_hyb.mjs OUT_DIR [--gguf-write PATH] [--vocab small|real|both] [ID...]
//   node models_hyb.mjs --params [ID...]      # exact parameter count of each builder (text model, MTP apart)
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { qwen35moe } from "./models.mjs";

/// ggml type for a weight of this name and shape (ne[0] first): as models.mjs weightType().
function weightType(name, shape) {
    const small = shape.length === 1 || /norm|bias|ssm_a$|ssm_d$|conv1d|sinks|exp_probs_b|ffn_gate_inp\.|ssm_beta\.|ssm_alpha\.|ssm_ba\./.test(name);
    if (small) return /ssm_beta\.|ssm_alpha\.|ssm_ba\./.test(name) ? "f16" : "f32";
    if (shape[0] % 256 === 0) return "iq1_s";
    return shape[0] % 32 === 0 ? "q5_0" : "f16";
}

class Builder {
    constructor(arch) { this.arch = arch; this.metadata = { "general.architecture": arch }; this.tensors = []; this.mtpFrom = Infinity; }
    k(key, value) { this.metadata[`${this.arch}.${key}`] = value; return this; }
    raw(key, value) { this.metadata[key] = value; return this; }
    t(name, shape) { this.tensors.push({ name, type: weightType(name, shape), shape }); return this; }
    blk(il, name, shape) { return this.t(`blk.${il}.${name}`, shape); }
}

const f32 = (v) => ({ type: "f32", value: v });
const u32arr = (a) => ({ type: "array", elem: "u32", value: a });
const i32arr = (a) => ({ type: "array", elem: "i32", value: a });
const boolarr = (a) => ({ type: "array", elem: "bool", value: a });

function attn(b, il, n_embd, n_q, n_k, n_v, { bias = false, out = n_q } = {}) {
    b.blk(il, "attn_q.weight", [n_embd, n_q]).blk(il, "attn_k.weight", [n_embd, n_k]).blk(il, "attn_v.weight", [n_embd, n_v]);
    if (bias) b.blk(il, "attn_q.bias", [n_q]).blk(il, "attn_k.bias", [n_k]).blk(il, "attn_v.bias", [n_v]);
    b.blk(il, "attn_output.weight", [out, n_embd]);
}
function embeddings(b, n_embd, n_vocab, tied) {
    b.t("token_embd.weight", [n_embd, n_vocab]).t("output_norm.weight", [n_embd]);
    if (!tied) b.t("output.weight", [n_embd, n_vocab]);
}

// ---------------------------------------------------------------------------------------------------------
// NVIDIA-Nemotron-3-Super-120B-A12B: shared/configs/nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json.
// src/models/nemotron-h.cpp (llama_model_nemotron_h::load_arch_tensors, reused by nemotron_h_moe).
// conversion/nemotron.py NemotronHModel: num_experts_per_tok present -> arch nemotron_h_moe; pattern letters
// M (Mamba2), * (attention), E (MoE); head_count_kv[il] = num_key_value_heads on '*', else 0;
// feed_forward_length[il] = moe_intermediate_size on 'E' (and on the MTP block), else 0; the MTP block
// (num_nextn_predict_layers 1) is appended as block 88 and registered as attention AND MoE.
// MoE block: router on n_embd; latent down n_embd -> moe_latent_size; experts (up, down; no gate) in the
// latent; latent up back to n_embd; shared expert (up, down) on n_embd.
const NEMOTRON3_SUPER_PATTERN = "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME";
function nemotron3_super(n_vocab, { mtp = true, mtpLatent = true } = {}) {
    const p = NEMOTRON3_SUPER_PATTERN, n_layer = p.length; // 88
    const h = { n_embd: 4096, n_head: 32, n_head_kv: 2, head_dim: 128, n_expert: 512, n_expert_used: 22, n_ff_exp: 2688,
        n_ff_shexp: 5376, latent: 1024 };
    const s = { d_conv: 4, d_inner: 128 * 64, d_state: 128, n_head: 128, n_group: 8 };
    const n_all = n_layer + (mtp ? 1 : 0);
    const isAttn = (il) => il < n_layer ? p[il] === "*" : true;
    const isMoe = (il) => il < n_layer ? p[il] === "E" : true;
    const b = new Builder("nemotron_h_moe");
    b.k("block_count", n_all).k("context_length", 1048576).k("embedding_length", h.n_embd)
        .k("feed_forward_length", u32arr([...Array(n_all).keys()].map((il) => (isMoe(il) ? h.n_ff_exp : 0))))
        .k("attention.head_count", h.n_head)
        .k("attention.head_count_kv", u32arr([...Array(n_all).keys()].map((il) => (isAttn(il) ? h.n_head_kv : 0))))
        .k("attention.key_length", h.head_dim).k("attention.value_length", h.head_dim)
        .k("attention.layer_norm_rms_epsilon", f32(1e-5)).k("attention.layer_norm_epsilon", f32(1e-5))
        .k("rope.dimension_count", h.head_dim).k("rope.freq_base", f32(10000))
        .k("ssm.conv_kernel", s.d_conv).k("ssm.state_size", s.d_state).k("ssm.group_count", s.n_group)
        .k("ssm.inner_size", s.d_inner).k("ssm.time_step_rank", s.n_head)
        .k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used).k("expert_group_count", 1)
        .k("expert_group_used_count", 1).k("expert_feed_forward_length", h.n_ff_exp)
        .k("expert_shared_feed_forward_length", h.n_ff_shexp).k("expert_shared_count", 1)
        .k("expert_weights_norm", true).k("expert_weights_scale", f32(5.0)).k("moe_latent_size", h.latent);
    if (mtp) b.k("nextn_predict_layers", 1);
    embeddings(b, h.n_embd, n_vocab, false);
    const conv_dim = s.d_inner + 2 * s.n_group * s.d_state;
    const moe = (il, latent) => {
        b.blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert]).blk(il, "exp_probs_b.bias", [h.n_expert]);
        if (latent) b.blk(il, "ffn_latent_down.weight", [h.n_embd, h.latent]).blk(il, "ffn_latent_up.weight", [h.latent, h.n_embd]);
        b.blk(il, "ffn_down_exps.weight", [h.n_ff_exp, h.latent, h.n_expert]).blk(il, "ffn_up_exps.weight", [h.latent, h.n_ff_exp, h.n_expert])
            .blk(il, "ffn_down_shexp.weight", [h.n_ff_shexp, h.n_embd]).blk(il, "ffn_up_shexp.weight", [h.n_embd, h.n_ff_shexp]);
    };
    for (let il = 0; il < n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]);
        if (p[il] === "M") {
            b.blk(il, "ssm_in.weight", [h.n_embd, 2 * s.d_inner + 2 * s.n_group * s.d_state + s.n_head])
                .blk(il, "ssm_conv1d.weight", [s.d_conv, conv_dim]).blk(il, "ssm_conv1d.bias", [conv_dim])
                .blk(il, "ssm_dt.bias", [s.n_head]).blk(il, "ssm_a", [1, s.n_head]).blk(il, "ssm_d", [1, s.n_head])
                .blk(il, "ssm_norm.weight", [s.d_inner / s.n_group, s.n_group]).blk(il, "ssm_out.weight", [s.d_inner, h.n_embd]);
        } else if (p[il] === "*") {
            attn(b, il, h.n_embd, h.n_head * h.head_dim, h.n_head_kv * h.head_dim, h.n_head_kv * h.head_dim);
        } else {
            moe(il, true);
        }
    }
    b.mtpFrom = b.tensors.length;
    if (mtp) {
        const il = n_layer;
        b.blk(il, "nextn.enorm.weight", [h.n_embd]).blk(il, "nextn.hnorm.weight", [h.n_embd])
            .blk(il, "nextn.eh_proj.weight", [2 * h.n_embd, h.n_embd]).blk(il, "nextn.shared_head_norm.weight", [h.n_embd])
            .blk(il, "attn_norm.weight", [h.n_embd]);
        attn(b, il, h.n_embd, h.n_head * h.head_dim, h.n_head_kv * h.head_dim, h.n_head_kv * h.head_dim);
        b.blk(il, "post_attention_norm.weight", [h.n_embd]);
        moe(il, mtpLatent);
    }
    return b;
}

// ---------------------------------------------------------------------------------------------------------
// Qwen3.5-35B-A3B: shared/configs/Qwen__Qwen3.5-35B-A3B.json (text_config). src/models/qwen35moe.cpp.
// conversion/qwen.py Qwen3_5MoeTextModel (_QwenMtpMixin + Qwen3NextModel + Qwen2MoeModel): block_count = 40 + 1
// MTP block; GDN keys inner_size = H_v * D_v, state_size = D_k, group_count = H_k, time_step_rank = H_v;
// v0.5.0's converter also writes attention.recurrent_layers from layer_types (MTP entries false); the loader
// falls back to full_attention_interval when that key is absent (5b4ebc5's converter).
function qwen35moe_35b(n_vocab, { mtp = true, recurrentKey = true } = {}) {
    // the family's builder (models.mjs qwen35moe, which tests/conformance/shapes.mjs records siblings with)
    return qwen35moe({ n_layer: 40, n_embd: 2048, n_head: 16, n_head_kv: 2, head_dim: 256, n_expert: 256, n_expert_used: 8,
        n_ff_exp: 512, n_ff_shexp: 512, lin_k_heads: 16, lin_k_dim: 128, lin_v_heads: 32, lin_v_dim: 128 }, n_vocab,
        { mtp, recurrentKey });
}

// ---------------------------------------------------------------------------------------------------------
// Qwen3-VL text models. conversion/qwen3vl.py Qwen3VLTextModel / Qwen3VLMoeTextModel write the Qwen3 keys
// plus n_deepstack_layers = len(vision_config.deepstack_visual_indexes) and rope.dimension_sections from
// rope_scaling.mrope_section padded to 4 ([24, 20, 20, 0]; required by the loader).
// n_deepstack_layers only widens the input embedding (n_embd_inp = n_embd * (1 + n_deepstack)), no KV;
// rope type IMROPE -> n_pos_per_embd() = 4 (4 positions per token in the batch, no KV effect).
// Every shape: h = {n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_deepstack (3, every published Qwen3-VL's
// deepstack_visual_indexes count), tied (false)}; the M-RoPE sections are mrope_section [24, 20, 20] for 128-wide heads
// (every published Qwen3-VL's), scaled to head_dim / 2 for other widths (op parameters: they size no tensor).
function qwen3vlKeys(b, h) {
    const sec = h.head_dim === 128 ? [24, 20, 20, 0] : [3 * h.head_dim / 16, 5 * h.head_dim / 32, 5 * h.head_dim / 32, 0];
    b.k("block_count", h.n_layer).k("context_length", 262144).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("rope.dimension_sections", i32arr(sec)).k("rope.freq_base", f32(5000000))
        .k("attention.layer_norm_rms_epsilon", f32(1e-6)).k("attention.key_length", h.head_dim)
        .k("attention.value_length", h.head_dim).k("n_deepstack_layers", h.n_deepstack ?? 3);
}
function qwen3vlAttn(b, il, h) {
    b.blk(il, "attn_norm.weight", [h.n_embd]);
    attn(b, il, h.n_embd, h.n_head * h.head_dim, h.n_head_kv * h.head_dim, h.n_head_kv * h.head_dim);
    b.blk(il, "attn_k_norm.weight", [h.head_dim]).blk(il, "attn_q_norm.weight", [h.head_dim]).blk(il, "ffn_norm.weight", [h.n_embd]);
}
/// Qwen3-VL MoE text model of shape h (+ n_expert, n_expert_used, n_ff_exp): src/models/qwen3vlmoe.cpp (routed experts
/// only, as qwen3moe's); tests/conformance/shapes.mjs FAMILIES["qwen3vlmoe"] records its siblings with it
export function qwen3vlmoe(h, n_vocab) {
    const b = new Builder("qwen3vlmoe");
    qwen3vlKeys(b, h);
    b.k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used).k("expert_feed_forward_length", h.n_ff_exp);
    embeddings(b, h.n_embd, n_vocab, !!h.tied);
    for (let il = 0; il < h.n_layer; ++il) {
        qwen3vlAttn(b, il, h);
        b.blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert])
            .blk(il, "ffn_gate_exps.weight", [h.n_embd, h.n_ff_exp, h.n_expert])
            .blk(il, "ffn_down_exps.weight", [h.n_ff_exp, h.n_embd, h.n_expert])
            .blk(il, "ffn_up_exps.weight", [h.n_embd, h.n_ff_exp, h.n_expert]);
    }
    return b;
}
/// Qwen3-VL dense text model of shape h: src/models/qwen3vl.cpp; FAMILIES["qwen3vl"] records its siblings with it
export function qwen3vl(h, n_vocab) {
    const b = new Builder("qwen3vl");
    qwen3vlKeys(b, h);
    embeddings(b, h.n_embd, n_vocab, !!h.tied);
    for (let il = 0; il < h.n_layer; ++il) {
        qwen3vlAttn(b, il, h);
        b.blk(il, "ffn_gate.weight", [h.n_embd, h.n_ff]).blk(il, "ffn_down.weight", [h.n_ff, h.n_embd])
            .blk(il, "ffn_up.weight", [h.n_embd, h.n_ff]);
    }
    return b;
}
// Qwen3-VL-30B-A3B-Instruct: shared/configs/Qwen__Qwen3-VL-30B-A3B-Instruct.json (text_config; deepstack
// [8, 16, 24]). src/models/qwen3vlmoe.cpp.
export const QWEN3VL_30B_A3B = { n_layer: 48, n_embd: 2048, n_head: 32, n_head_kv: 4, head_dim: 128, n_ff: 6144, n_expert: 128,
    n_expert_used: 8, n_ff_exp: 768 };
function qwen3vlmoe_30b(n_vocab) { return qwen3vlmoe(QWEN3VL_30B_A3B, n_vocab); }
// Qwen3-VL-8B-Instruct (dense): 36 layers, hidden 4096, FFN 12288, 32 q / 8 kv heads x 128, rope 5e6,
// mrope [24, 20, 20], deepstack [8, 16, 24], vocab 151936, untied LM head. Published GGUF metadata of
// qwen3-vl:8b-instruct (https://ollama.com/library/qwen3-vl:8b-instruct-q8_0/blobs/4768dcaebbaf: block_count 36,
// embedding_length 4096, feed_forward_length 12288, head_count 32, head_count_kv 8, key_length 128,
// rope.freq_base 5e6, deepstack_visual_indexes [8, 16, 24]). src/models/qwen3vl.cpp.
export const QWEN3VL_8B = { n_layer: 36, n_embd: 4096, n_head: 32, n_head_kv: 8, head_dim: 128, n_ff: 12288 };
function qwen3vl_8b(n_vocab) { return qwen3vl(QWEN3VL_8B, n_vocab); }

// ---------------------------------------------------------------------------------------------------------
// gpt-oss-120b: shared/configs/openai__gpt-oss-120b.json. src/models/openai-moe.cpp: window 128 on every other
// layer (load_swa_pattern(ml, 2): il 0 sliding, il 1 full, ...), attention sinks, biased experts (MXFP4 in the
// real file; iq1_s / q5_0 here). conversion/gpt_oss.py.
function gpt_oss_120b(n_vocab) {
    const h = { n_layer: 36, n_embd: 2880, n_head: 64, n_head_kv: 8, head_dim: 64, n_expert: 128, n_expert_used: 4, n_ff_exp: 2880 };
    const b = new Builder("gpt-oss");
    b.k("block_count", h.n_layer).k("context_length", 131072).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff_exp).k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("rope.scaling.type", "yarn").k("rope.scaling.factor", f32(32)).k("rope.scaling.original_context_length", 4096)
        .k("rope.freq_base", f32(150000)).k("attention.layer_norm_rms_epsilon", f32(1e-5))
        .k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used)
        .k("attention.key_length", h.head_dim).k("attention.value_length", h.head_dim)
        .k("attention.sliding_window", 128).k("expert_feed_forward_length", h.n_ff_exp);
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

/// The architectures covered: id -> {name, build(n_vocab), n_vocab (the real vocabulary), swa (has windows)}.
export const MODELS_HYB = {
    // v0.5.0 only: 5b4ebc5's loader does not create the MTP block's ffn_latent_down/up (measured: "done_getting_tensors:
    // wrong number of tensors; expected 781, got 779", measured/nemotron3-super-120b.5b4ebc5.jsonl); 5b4ebc5 is covered by
    // the --no-mtp variant below, whose compute buffer equals this model's on both releases
    "nemotron3-super-120b": { name: "NVIDIA-Nemotron-3-Super-120B-A12B", build: (n) => nemotron3_super(n), n_vocab: 131072, releases: ["v0.5.0"] },
    "qwen35moe-35b":        { name: "Qwen3.5-35B-A3B",        build: (n) => qwen35moe_35b(n), n_vocab: 248320 },
    "qwen3vlmoe-30b":       { name: "Qwen3-VL-30B-A3B",       build: qwen3vlmoe_30b,          n_vocab: 151936 },
    "qwen3vl-8b":           { name: "Qwen3-VL-8B",            build: qwen3vl_8b,              n_vocab: 151936 },
    "gpt-oss-120b":         { name: "gpt-oss-120b",           build: gpt_oss_120b,            n_vocab: 201088, swa: true },
};

/// Variants used to pin down release differences (not part of the matrix).
export const VARIANTS_HYB = {
    // MTP block without its latent projections: what 5b4ebc5's loader creates for the MTP block.
    "nemotron3-super-120b-mtpnolatent": { name: "Nemotron-3-Super MTP without latent", build: (n) => nemotron3_super(n, { mtpLatent: false }), n_vocab: 131072 },
    // --no-mtp conversion: 88 blocks, no nextn_predict_layers.
    "nemotron3-super-120b-nomtp": { name: "Nemotron-3-Super --no-mtp", build: (n) => nemotron3_super(n, { mtp: false }), n_vocab: 131072 },
    // as 5b4ebc5's converter writes it: no attention.recurrent_layers key (full_attention_interval fallback).
    "qwen35moe-35b-norecr": { name: "Qwen3.5-35B-A3B without recurrent_layers", build: (n) => qwen35moe_35b(n, { recurrentKey: false }), n_vocab: 248320 },
    "qwen35moe-35b-nomtp": { name: "Qwen3.5-35B-A3B --no-mtp", build: (n) => qwen35moe_35b(n, { mtp: false }), n_vocab: 248320 },
};

const ALL = { ...MODELS_HYB, ...VARIANTS_HYB };

/// The kvfit-gguf-write spec of model `id` with a minimal SentencePiece vocabulary of n_vocab tokens.
export function specOfHyb(id, n_vocab) {
    const m = ALL[id];
    const b = m.build(n_vocab);
    return { version: 3, data: "sparse", metadata: { ...b.metadata, "general.name": `${m.name}-conformance` },
        vocab: { spm: n_vocab }, tensors: b.tensors };
}

const nelem = (shape) => shape.reduce((a, x) => a * x, 1);

/// Exact parameter counts from the builder's tensor list: text model (MTP blocks apart), MTP, and the parts.
export function paramsOf(id, n_vocab = ALL[id].n_vocab) {
    const b = ALL[id].build(n_vocab);
    const text = b.tensors.slice(0, b.mtpFrom), mtp = b.tensors.slice(b.mtpFrom);
    const sum = (ts) => ts.reduce((a, t) => a + nelem(t.shape), 0);
    const exps = text.filter((t) => /_exps\.weight$/.test(t.name));
    return { id, n_vocab, text: sum(text), mtp: sum(mtp), routed_experts: sum(exps), embeddings: sum(text.filter((t) => !t.name.startsWith("blk."))) };
}

function writeGguf(id, n_vocab, outDir, tool) {
    fs.mkdirSync(outDir, { recursive: true });
    const base = path.join(outDir, `${id}_v${n_vocab}`);
    const specText = JSON.stringify(specOfHyb(id, n_vocab));
    const specPath = `${base}.json`, gguf = `${base}.gguf`;
    if (fs.existsSync(gguf) && fs.existsSync(specPath) && fs.readFileSync(specPath, "utf8") === specText) return gguf;
    fs.writeFileSync(specPath, specText);
    try {
        execFileSync(tool, [specPath, gguf], { stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
        fs.rmSync(specPath, { force: true });
        throw new Error(`kvfit-gguf-write ${specPath}: ${String(e.stderr ?? e.message).trim()}`);
    }
    return gguf;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const args = process.argv.slice(2);
    if (args[0] === "--params") {
        for (const id of args.length > 1 ? args.slice(1) : Object.keys(MODELS_HYB)) console.log(JSON.stringify(paramsOf(id)));
    } else {
        const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
        const here = path.dirname(fileURLToPath(import.meta.url));
        const tool = opt("--gguf-write", process.env.KVFIT_GGUF_WRITE ?? path.resolve(here, "../../build/tools/kvfit-gguf-write"));
        const vocab = opt("--vocab", "small");
        const [out, ...ids] = args;
        if (!out) { console.error("usage: node models_hyb.mjs OUT_DIR [--gguf-write PATH] [--vocab small|real|both] [ID...] | --params [ID...]"); process.exit(2); }
        for (const id of ids.length ? ids : Object.keys(MODELS_HYB)) {
            if (!ALL[id]) { console.error(`unknown model '${id}' (known: ${Object.keys(ALL).join(", ")})`); process.exit(2); }
            const sizes = vocab === "small" ? [512] : vocab === "real" ? [ALL[id].n_vocab] : [512, ALL[id].n_vocab];
            for (const n of sizes) { const f = writeGguf(id, n, out, tool); console.log(`${f}  ${fs.statSync(f).size} bytes`); }
        }
    }
}
