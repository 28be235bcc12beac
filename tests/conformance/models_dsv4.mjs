// Shape-exact builders for the 2026 sparse/compressed-cache architectures of llama.cpp v0.5.0 (node-llama-cpp
// 3.22.1): deepseek4 (DeepSeek-V4-Flash), kimi-linear (Kimi-Linear-48B-A3B), kimi-k3 (Kimi-K3) and qwen4exp
// (Qwen3.8-Flash-Next). Same contract as models.mjs: each build(n_vocab) returns {metadata, tensors} with exactly
// the tensors `load_arch_tensors` (src/models/<arch>.cpp) requires, so a file that loads is shape-exact. Keys are
// the ones the converter writes (conversion/<family>.py, conversion/base.py TextModel.set_gguf_parameters).
// Sources of every shape: docs/rules/llamacpp-dsv4.md.
//
// The small helpers are duplicated from models.mjs (it exports only MODELS and specOf). weightType() is the same
// rule as models.mjs (iq1_s / q5_0 / f16 / f32: no CPU_REPACK types); a few tensors the converter writes as
// integers (DeepSeek-V4 hash routing table) carry their own type.

function weightType(name, shape) {
    const small = shape.length === 1 || /norm|bias|ssm_a$|ssm_d$|conv1d|sinks|exp_probs_b|ffn_gate_inp\.|ssm_beta\.|ssm_alpha\.|ssm_ba\./.test(name);
    if (small) return /ssm_beta\.|ssm_alpha\.|ssm_ba\./.test(name) ? "f16" : "f32";
    if (shape[0] % 256 === 0) return "iq1_s";
    return shape[0] % 32 === 0 ? "q5_0" : "f16";
}

class Builder {
    constructor(arch) { this.arch = arch; this.metadata = { "general.architecture": arch }; this.tensors = []; }
    k(key, value) { this.metadata[`${this.arch}.${key}`] = value; return this; }
    raw(key, value) { this.metadata[key] = value; return this; }
    t(name, shape, type = null) { this.tensors.push({ name, type: type ?? weightType(name, shape), shape }); return this; }
    blk(il, name, shape, type = null) { return this.t(`blk.${il}.${name}`, shape, type); }
}

const f32 = (v) => ({ type: "f32", value: v });
const u32arr = (a) => ({ type: "array", elem: "u32", value: a });
const u64arr = (a) => ({ type: "array", elem: "u64", value: a });
const f32arr = (a) => ({ type: "array", elem: "f32", value: a });
const boolarr = (a) => ({ type: "array", elem: "bool", value: a });
const i32arr = (a) => ({ type: "array", elem: "i32", value: a });

function moeExperts(b, il, n_embd, n_ff_exp, n_expert) {
    b.blk(il, "ffn_gate_exps.weight", [n_embd, n_ff_exp, n_expert])
        .blk(il, "ffn_down_exps.weight", [n_ff_exp, n_embd, n_expert])
        .blk(il, "ffn_up_exps.weight", [n_embd, n_ff_exp, n_expert]);
}
function shexp(b, il, n_embd, n_ff) {
    b.blk(il, "ffn_gate_shexp.weight", [n_embd, n_ff]).blk(il, "ffn_down_shexp.weight", [n_ff, n_embd])
        .blk(il, "ffn_up_shexp.weight", [n_embd, n_ff]);
}
function ffnGated(b, il, n_embd, n_ff) {
    b.blk(il, "ffn_gate.weight", [n_embd, n_ff]).blk(il, "ffn_down.weight", [n_ff, n_embd]).blk(il, "ffn_up.weight", [n_embd, n_ff]);
}

// ---------------------------------------------------------------------------------------------------------
// DeepSeek-V4-Flash: ../shared/configs/deepseek-ai__DeepSeek-V4-Flash.json. src/models/deepseek4.cpp
// (load_arch_hparams / load_arch_tensors), keys as conversion/deepseek.py DeepseekV4Model.set_gguf_parameters.
// The main GGUF holds the 43 trunk layers only: the converter skips every `mtp.*` tensor unless it writes the
// separate mtp-*.gguf (filter_tensors), so block_count = num_hidden_layers and no nextn_predict_layers key.
// compress_ratios is written as published (44 entries, the last one the MTP layer's 0); the loader only needs
// at least block_count entries.
export const DSV4_FLASH = {
    n_layer: 43, n_embd: 4096, n_head: 64, head_dim: 512, rope: 64, q_lora: 1024, o_groups: 8, o_lora: 1024,
    n_expert: 256, n_expert_used: 6, n_ff_exp: 2048, n_shared: 1, n_hash: 3, hc: 4, hc_iters: 20,
    idx_heads: 64, idx_dim: 128, idx_topk: 512, swa: 128,
    compress_ratios: [0, 0, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128,
        4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 128, 4, 0],
};
// mtp: also write the MTP layer (blk.43, nextn_predict_layers 1) as a GGUF holding trunk and MTP tensors would;
// the published converter never writes such a main file, the variant only shows what the main context does with
// an MTP layer (the loader skips its tensors: load_mtp is false in llama_model_default_params).
export function deepseek4(h, n_vocab, { mtp = false } = {}) {
    const b = new Builder("deepseek4");
    const n_layer_all = h.n_layer + (mtp ? 1 : 0);
    const hc_dim = h.hc * h.n_embd, hc_mix = (2 + h.hc) * h.hc;
    b.k("block_count", n_layer_all).k("context_length", 1048576).k("embedding_length", h.n_embd)
        .k("attention.head_count", h.n_head).k("attention.head_count_kv", 1)
        .k("rope.scaling.type", "yarn").k("rope.scaling.factor", f32(16)).k("rope.scaling.original_context_length", 65536)
        .k("rope.scaling.yarn_beta_fast", f32(32)).k("rope.scaling.yarn_beta_slow", f32(1))
        .k("rope.freq_base", f32(10000)).k("attention.layer_norm_rms_epsilon", f32(1e-6))
        .k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used).k("expert_gating_func", 4 /* SQRTSOFTPLUS */)
        .k("attention.key_length", h.head_dim).k("attention.value_length", h.head_dim)
        .k("rope.dimension_count", h.rope).k("attention.q_lora_rank", h.q_lora).k("attention.sliding_window", h.swa)
        .k("expert_feed_forward_length", h.n_ff_exp).k("expert_shared_count", h.n_shared)
        .k("expert_weights_scale", f32(1.5)).k("expert_weights_norm", true)
        .k("swiglu_clamp_exp", f32arr(Array(n_layer_all).fill(10.0))).k("swiglu_clamp_shexp", f32arr(Array(n_layer_all).fill(10.0)))
        .k("attention.indexer.head_count", h.idx_heads).k("attention.indexer.key_length", h.idx_dim)
        .k("attention.indexer.top_k", h.idx_topk).k("attention.output_group_count", h.o_groups)
        .k("attention.output_lora_rank", h.o_lora).k("attention.compress_ratios", u32arr(h.compress_ratios))
        .k("attention.compress_rope_freq_base", f32(160000)).k("hyper_connection.count", h.hc)
        .k("hyper_connection.sinkhorn_iterations", h.hc_iters).k("hyper_connection.epsilon", f32(1e-6))
        .k("hash_layer_count", h.n_hash).k("embedding_length_out", hc_dim);
    if (mtp) b.k("nextn_predict_layers", 1);
    b.t("token_embd.weight", [h.n_embd, n_vocab]).t("output_norm.weight", [h.n_embd]).t("output.weight", [h.n_embd, n_vocab])
        .t("output_hc_fn.weight", [hc_dim, h.hc]).t("output_hc_base.weight", [h.hc]).t("output_hc_scale.weight", [1]);
    for (let il = 0; il < n_layer_all; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]).blk(il, "attn_sinks.weight", [h.n_head])
            .blk(il, "attn_q_a.weight", [h.n_embd, h.q_lora]).blk(il, "attn_q_a_norm.weight", [h.q_lora])
            .blk(il, "attn_q_b.weight", [h.q_lora, h.n_head * h.head_dim])
            .blk(il, "attn_kv.weight", [h.n_embd, h.head_dim]).blk(il, "attn_kv_a_norm.weight", [h.head_dim])
            // stored as the converter writes it: (n_head*head_dim/o_groups, o_lora*o_groups); TENSOR_ALLOW_RESHAPE
            .blk(il, "attn_output_a.weight", [h.n_head * h.head_dim / h.o_groups, h.o_lora * h.o_groups])
            .blk(il, "attn_output_b.weight", [h.o_groups * h.o_lora, h.n_embd])
            .blk(il, "hc_attn_fn.weight", [hc_dim, hc_mix]).blk(il, "hc_attn_base.weight", [hc_mix]).blk(il, "hc_attn_scale.weight", [3])
            .blk(il, "hc_ffn_fn.weight", [hc_dim, hc_mix]).blk(il, "hc_ffn_base.weight", [hc_mix]).blk(il, "hc_ffn_scale.weight", [3]);
        const ratio = h.compress_ratios[il];
        if (ratio !== 0) {
            const coff = ratio === 4 ? 2 : 1;
            b.blk(il, "attn_compressor_kv.weight", [h.n_embd, coff * h.head_dim])
                .blk(il, "attn_compressor_gate.weight", [h.n_embd, coff * h.head_dim])
                .blk(il, "attn_compressor_ape.weight", [coff * h.head_dim, ratio])
                .blk(il, "attn_compressor_norm.weight", [h.head_dim]);
            if (ratio === 4) {
                b.blk(il, "indexer.proj.weight", [h.n_embd, h.idx_heads])
                    .blk(il, "indexer.attn_q_b.weight", [h.q_lora, h.idx_heads * h.idx_dim])
                    .blk(il, "indexer_compressor_kv.weight", [h.n_embd, 2 * h.idx_dim])
                    .blk(il, "indexer_compressor_gate.weight", [h.n_embd, 2 * h.idx_dim])
                    .blk(il, "indexer_compressor_ape.weight", [2 * h.idx_dim, ratio])
                    .blk(il, "indexer_compressor_norm.weight", [h.idx_dim]);
            }
        }
        b.blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert]);
        // hash-routed layers: tid2eid (I32, conversion/deepseek.py _write_hash_routing_tensors), no gate bias
        if (il < h.n_hash) b.blk(il, "ffn_gate_tid2eid.weight", [h.n_expert_used, n_vocab], "i32");
        else b.blk(il, "exp_probs_b.bias", [h.n_expert]);
        b.blk(il, "ffn_norm.weight", [h.n_embd]);
        moeExperts(b, il, h.n_embd, h.n_ff_exp, h.n_expert);
        shexp(b, il, h.n_embd, h.n_ff_exp * h.n_shared);
        if (il >= h.n_layer) {
            b.blk(il, "nextn.eh_proj.weight", [2 * h.n_embd, h.n_embd]).blk(il, "nextn.enorm.weight", [h.n_embd])
                .blk(il, "nextn.hnorm.weight", [h.n_embd]).blk(il, "nextn.shared_head_norm.weight", [h.n_embd]);
        }
    }
    return b;
}

// ---------------------------------------------------------------------------------------------------------
// Kimi-Linear-48B-A3B: the published config.json (moonshotai/Kimi-Linear-48B-A3B-Instruct; copy read from
// Firworks/Kimi-Linear-48B-A3B-Instruct-nvfp4/config.json, see the rules doc). src/models/kimi-linear.cpp,
// keys as conversion/kimi_linear.py: head_count_kv per layer (1 on MLA layers, 0 on KDA layers; full_attn_layers
// is 1-based), key_length = kv_lora_rank + qk_rope_head_dim (the MLA latent), no q_lora (q_lora_rank null).
export const KIMI_LINEAR_48B = {
    n_layer: 27, n_embd: 2304, n_head: 32, n_ff: 9216, kv_lora: 512, rope: 64, nope: 128, v_dim: 128, head_dim_cfg: 72,
    kda_dim: 128, d_conv: 4, n_expert: 256, n_expert_used: 8, n_ff_exp: 1024, n_shared: 1, n_dense: 1,
    full_attn_layers: [4, 8, 12, 16, 20, 24, 27],
};
function kimi_linear(h, n_vocab) {
    const b = new Builder("kimi-linear");
    const isMla = (il) => h.full_attn_layers.includes(il + 1);
    b.k("block_count", h.n_layer).k("context_length", 1048576).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head)
        .k("attention.head_count_kv", u32arr([...Array(h.n_layer).keys()].map((il) => (isMla(il) ? 1 : 0))))
        .k("attention.layer_norm_rms_epsilon", f32(1e-5)).k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used)
        .k("expert_gating_func", 2 /* SIGMOID */).k("attention.key_length", h.kv_lora + h.rope)
        .k("attention.value_length", h.head_dim_cfg).k("vocab_size", n_vocab)
        .k("ssm.conv_kernel", h.d_conv).k("kda.head_dim", h.kda_dim).k("attention.kv_lora_rank", h.kv_lora)
        .k("rope.dimension_count", h.rope).k("attention.key_length_mla", h.nope + h.rope)
        .k("attention.value_length_mla", h.v_dim).k("expert_feed_forward_length", h.n_ff_exp)
        .k("expert_shared_count", h.n_shared).k("leading_dense_block_count", h.n_dense).k("expert_weights_scale", f32(2.446));
    b.t("token_embd.weight", [h.n_embd, n_vocab]).t("output_norm.weight", [h.n_embd]).t("output.weight", [h.n_embd, n_vocab]);
    const d_inner = h.kda_dim * h.n_head;
    for (let il = 0; il < h.n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]);
        if (!isMla(il)) {
            b.blk(il, "ssm_conv1d_q.weight", [h.d_conv, 1, d_inner, 1]).blk(il, "ssm_conv1d_k.weight", [h.d_conv, 1, d_inner, 1])
                .blk(il, "ssm_conv1d_v.weight", [h.d_conv, 1, d_inner, 1])
                .blk(il, "attn_q.weight", [h.n_embd, d_inner]).blk(il, "attn_k.weight", [h.n_embd, d_inner])
                .blk(il, "attn_v.weight", [h.n_embd, d_inner])
                .blk(il, "ssm_f_a.weight", [h.n_embd, h.kda_dim]).blk(il, "ssm_f_b.weight", [h.kda_dim, d_inner])
                .blk(il, "ssm_beta.weight", [h.n_embd, h.n_head]).blk(il, "ssm_a", [1, h.n_head, 1, 1])
                .blk(il, "ssm_dt.bias", [d_inner])
                .blk(il, "ssm_g_a.weight", [h.n_embd, h.kda_dim]).blk(il, "ssm_g_b.weight", [h.kda_dim, d_inner])
                .blk(il, "ssm_norm.weight", [h.kda_dim]).blk(il, "attn_output.weight", [d_inner, h.n_embd]);
        } else {
            b.blk(il, "attn_kv_a_norm.weight", [h.kv_lora]).blk(il, "attn_q.weight", [h.n_embd, h.n_head * (h.nope + h.rope)])
                .blk(il, "attn_kv_a_mqa.weight", [h.n_embd, h.kv_lora + h.rope])
                .blk(il, "attn_k_b.weight", [h.nope, h.kv_lora, h.n_head]).blk(il, "attn_v_b.weight", [h.kv_lora, h.v_dim, h.n_head])
                .blk(il, "attn_output.weight", [h.n_head * h.v_dim, h.n_embd]);
        }
        b.blk(il, "ffn_norm.weight", [h.n_embd]);
        if (il < h.n_dense) { ffnGated(b, il, h.n_embd, h.n_ff); continue; }
        b.blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert]);
        moeExperts(b, il, h.n_embd, h.n_ff_exp, h.n_expert);
        shexp(b, il, h.n_embd, h.n_ff_exp * h.n_shared);
        b.blk(il, "exp_probs_b.bias", [h.n_expert]);
    }
    return b;
}

// ---------------------------------------------------------------------------------------------------------
// Kimi-K3: text_config of the published moonshotai/Kimi-K3 config.json (93 layers; see the rules doc for the
// copies read). src/models/kimi-k3.cpp, keys as conversion/kimi_k3.py: 69 KDA layers (96 heads x 128, full-rank
// gate ssm_g), 24 MLA layers (1-based full_attn_layers 4, 8, ..., 92, 93; q_lora 1536, kv_lora 512, nope-only,
// output gate), latent MoE (896 experts top-16 at routed_expert_hidden_size 3584, 2 shared experts), block
// attention residuals (attn_res_block_size 12), situ activation.
export const KIMI_K3 = {
    n_layer: 93, n_embd: 7168, n_head: 96, n_ff: 33792, q_lora: 1536, kv_lora: 512, rope: 64, nope: 128, v_dim: 128,
    kda_dim: 128, d_conv: 4, n_expert: 896, n_expert_used: 16, n_ff_exp: 3072, n_shared: 2, latent: 3584, n_dense: 1,
    attn_res_block: 12,
    full_attn_layers: [4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 93],
};
function kimi_k3(h, n_vocab) {
    const b = new Builder("kimi-k3");
    const isMla = (il) => h.full_attn_layers.includes(il + 1);
    b.k("block_count", h.n_layer).k("context_length", 1048576).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head)
        .k("attention.head_count_kv", u32arr([...Array(h.n_layer).keys()].map((il) => (isMla(il) ? 1 : 0))))
        .k("attention.layer_norm_rms_epsilon", f32(1e-5)).k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used)
        .k("expert_gating_func", 2 /* SIGMOID */).k("vocab_size", n_vocab)
        .k("ssm.conv_kernel", h.d_conv).k("kda.head_dim", h.kda_dim).k("kda.gate_lower_bound", f32(-5.0))
        .k("attention.q_lora_rank", h.q_lora).k("attention.kv_lora_rank", h.kv_lora).k("rope.dimension_count", h.rope)
        .k("attention.key_length", h.kv_lora + h.rope).k("attention.value_length", h.kv_lora)
        .k("attention.key_length_mla", h.nope + h.rope).k("attention.value_length_mla", h.v_dim)
        .k("expert_feed_forward_length", h.n_ff_exp).k("expert_shared_count", h.n_shared)
        .k("leading_dense_block_count", h.n_dense).k("expert_weights_scale", f32(1.0)).k("expert_weights_norm", true)
        .k("expert_latent_length", h.latent).k("activation.situ_beta", f32(4.0)).k("activation.situ_linear_beta", f32(25.0))
        .k("attn_res.block_size", h.attn_res_block);
    b.t("token_embd.weight", [h.n_embd, n_vocab]).t("output_norm.weight", [h.n_embd]).t("output.weight", [h.n_embd, n_vocab])
        .t("output_res_score.weight", [h.n_embd]);
    const d_inner = h.kda_dim * h.n_head;
    for (let il = 0; il < h.n_layer; ++il) {
        b.blk(il, "attn_norm.weight", [h.n_embd]).blk(il, "ffn_norm.weight", [h.n_embd])
            .blk(il, "attn_res_score.weight", [h.n_embd]).blk(il, "ffn_res_score.weight", [h.n_embd]);
        if (!isMla(il)) {
            b.blk(il, "ssm_conv1d_q.weight", [h.d_conv, 1, d_inner, 1]).blk(il, "ssm_conv1d_k.weight", [h.d_conv, 1, d_inner, 1])
                .blk(il, "ssm_conv1d_v.weight", [h.d_conv, 1, d_inner, 1])
                .blk(il, "attn_q.weight", [h.n_embd, d_inner]).blk(il, "attn_k.weight", [h.n_embd, d_inner])
                .blk(il, "attn_v.weight", [h.n_embd, d_inner])
                .blk(il, "ssm_f_a.weight", [h.n_embd, h.kda_dim]).blk(il, "ssm_f_b.weight", [h.kda_dim, d_inner])
                .blk(il, "ssm_beta.weight", [h.n_embd, h.n_head]).blk(il, "ssm_a", [h.n_head])
                .blk(il, "ssm_dt.bias", [d_inner]).blk(il, "ssm_g.weight", [h.n_embd, d_inner])
                .blk(il, "ssm_norm.weight", [h.kda_dim]).blk(il, "attn_output.weight", [d_inner, h.n_embd]);
        } else {
            b.blk(il, "attn_q_a_norm.weight", [h.q_lora]).blk(il, "attn_kv_a_norm.weight", [h.kv_lora])
                .blk(il, "attn_q_a.weight", [h.n_embd, h.q_lora]).blk(il, "attn_q_b.weight", [h.q_lora, h.n_head * (h.nope + h.rope)])
                .blk(il, "attn_kv_a_mqa.weight", [h.n_embd, h.kv_lora + h.rope])
                .blk(il, "attn_k_b.weight", [h.nope, h.kv_lora, h.n_head]).blk(il, "attn_v_b.weight", [h.kv_lora, h.v_dim, h.n_head])
                .blk(il, "attn_gate.weight", [h.n_embd, h.n_head * h.v_dim])
                .blk(il, "attn_output.weight", [h.n_head * h.v_dim, h.n_embd]);
        }
        if (il < h.n_dense) { ffnGated(b, il, h.n_embd, h.n_ff); continue; }
        b.blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert]).blk(il, "exp_probs_b.bias", [h.n_expert]);
        moeExperts(b, il, h.latent, h.n_ff_exp, h.n_expert);
        b.blk(il, "ffn_routed_down.weight", [h.n_embd, h.latent]).blk(il, "ffn_routed_up.weight", [h.latent, h.n_embd])
            .blk(il, "ffn_routed_norm.weight", [h.latent]);
        shexp(b, il, h.n_embd, h.n_ff_exp * h.n_shared);
    }
    return b;
}

// ---------------------------------------------------------------------------------------------------------
// Qwen3.8-Flash-Next (qwen4exp): the loader keys of ../shared/configs/SOURCES.md, completed from a copy of the
// text config (see the rules doc): 48 layers, full attention at il % 4 == 3 (layer_types), Gated DeltaNet
// elsewhere (16 k-heads / 48 v-heads x 128, conv 4), 512 experts top-10 (640) + shared 640, hyper-connections
// 4 x low-rank 320, QSA indexer 4 heads x 128 (top_k 2048, compress ratio 4), PLE n-gram hash embedding on
// layer 1 (ple_layer_ids [2], 1-based; ngram 3, 8 heads per n-gram, conv 4). The MTP layer is dropped by the
// converter (conversion/qwen4exp.py: no_mtp = True). src/models/qwen4exp.cpp.
// PLE table: (ngram-1)*heads_per_ngram = 16 heads of n_embd/16 = 160 values (ple_value is [n_embd, n_embd], so
// 16 x ple_head_dim = n_embd); the head vocab sizes and hash multipliers are checkpoint constants we do not have:
// 20,000,000 rows per head (ngram_vocab_size_base, a multiple of 128) and placeholder multipliers. They size only
// the weight buffer (per_layer_token_embd), never a cache.
export const QWEN38_FLASH_NEXT = {
    n_layer: 48, n_embd: 2560, n_head: 24, n_head_kv: 2, head_dim: 256, lin_k_heads: 16, lin_v_heads: 48, lin_dim: 128,
    d_conv: 4, n_expert: 512, n_expert_used: 10, n_ff_exp: 640, n_ff_shexp: 640, hc: 4, hc_lr: 320,
    idx_heads: 4, idx_dim: 128, idx_topk: 2048, idx_ratio: 4,
    ple_layer: 1, ple_ngram: 3, ple_heads_per_ngram: 8, ple_conv: 4, ple_head_vocab: 20000000, eos: 248044,
};
function qwen4exp(h, n_vocab) {
    const b = new Builder("qwen4exp");
    const isFull = (il) => il % 4 === 3;
    const key_dim = h.lin_k_heads * h.lin_dim, value_dim = h.lin_v_heads * h.lin_dim, conv_dim = 2 * key_dim + value_dim;
    const hc_dim = h.hc * h.n_embd;
    const ple_heads = (h.ple_ngram - 1) * h.ple_heads_per_ngram, ple_dim = h.n_embd / ple_heads;
    b.k("block_count", h.n_layer).k("context_length", 262144).k("embedding_length", h.n_embd)
        .k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("rope.dimension_sections", i32arr([11, 11, 10, 0])).k("rope.freq_base", f32(10000000))
        .k("attention.layer_norm_rms_epsilon", f32(1e-6)).k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used)
        .k("attention.key_length", h.head_dim).k("attention.value_length", h.head_dim)
        .k("expert_feed_forward_length", h.n_ff_exp).k("expert_shared_feed_forward_length", h.n_ff_shexp)
        .k("ssm.conv_kernel", h.d_conv).k("ssm.state_size", h.lin_dim).k("ssm.group_count", h.lin_k_heads)
        .k("ssm.time_step_rank", h.lin_v_heads).k("ssm.inner_size", value_dim)
        .k("attention.recurrent_layers", boolarr([...Array(h.n_layer).keys()].map((il) => !isFull(il))))
        .k("full_attention_interval", 4).k("rope.dimension_count", h.head_dim / 4)
        .k("hyper_connection.count", h.hc).k("hyper_connection.low_rank", h.hc_lr)
        .k("attention.indexer.head_count", h.idx_heads).k("attention.indexer.key_length", h.idx_dim)
        .k("attention.indexer.top_k", h.idx_topk)
        .k("attention.compress_ratios", u32arr([...Array(h.n_layer).keys()].map((il) => (isFull(il) ? h.idx_ratio : 0))))
        .k("ple.layers", u32arr([h.ple_layer])).k("ple.ngram_size", h.ple_ngram).k("ple.heads_per_ngram", h.ple_heads_per_ngram)
        .k("ple.conv_kernel", h.ple_conv).k("ple.eos_token_id", h.eos).k("embedding_length_per_layer_input", ple_dim)
        .k("ple.layer_multipliers", u64arr([...Array(h.ple_ngram).keys()].map((i) => 1000003 + 2 * i)))
        .k("ple.head_offsets", u64arr([...Array(ple_heads).keys()].map((i) => i * h.ple_head_vocab)))
        .k("ple.head_vocab_sizes", u64arr(Array(ple_heads).fill(h.ple_head_vocab)));
    b.t("token_embd.weight", [h.n_embd, n_vocab])
        // 1-D [hc_dim]: what 5b4ebc5 requires, and v0.5.0 accepts it ({n_embd, hc}, TENSOR_ALLOW_RESHAPE)
        .t("output_hc_norm.weight", [hc_dim]).t("output_hc_down.weight", [hc_dim, h.hc_lr]).t("output_hc_up.weight", [h.hc_lr, hc_dim])
        .t("output.weight", [h.n_embd, n_vocab])
        .t("per_layer_token_embd.weight", [ple_dim, ple_heads * h.ple_head_vocab]);
    for (let il = 0; il < h.n_layer; ++il) {
        for (const s of ["attn", "ffn"]) {
            b.blk(il, `hc_${s}_norm.weight`, [hc_dim]).blk(il, `hc_${s}_down.weight`, [hc_dim, h.hc_lr])
                .blk(il, `hc_${s}_up.weight`, [h.hc_lr, hc_dim]).blk(il, `hc_${s}_inject.weight`, [hc_dim, h.hc]);
        }
        if (isFull(il)) {
            b.blk(il, "attn_q.weight", [h.n_embd, h.head_dim * h.n_head * 2]).blk(il, "attn_k.weight", [h.n_embd, h.head_dim * h.n_head_kv])
                .blk(il, "attn_v.weight", [h.n_embd, h.head_dim * h.n_head_kv]).blk(il, "attn_output.weight", [h.head_dim * h.n_head, h.n_embd])
                .blk(il, "attn_q_norm.weight", [h.head_dim]).blk(il, "attn_k_norm.weight", [h.head_dim])
                .blk(il, "indexer.q_proj.weight", [h.n_embd, h.idx_heads * h.idx_dim]).blk(il, "indexer.k_proj.weight", [h.n_embd, h.idx_dim])
                .blk(il, "indexer.q_norm.weight", [h.idx_dim]).blk(il, "indexer.k_norm.weight", [h.idx_dim]);
        } else {
            b.blk(il, "attn_qkv.weight", [h.n_embd, conv_dim]).blk(il, "attn_gate.weight", [h.n_embd, value_dim])
                .blk(il, "ssm_conv1d.weight", [h.d_conv, conv_dim]).blk(il, "ssm_dt.bias", [h.lin_v_heads])
                .blk(il, "ssm_a", [h.lin_v_heads]).blk(il, "ssm_beta.weight", [h.n_embd, h.lin_v_heads])
                .blk(il, "ssm_alpha.weight", [h.n_embd, h.lin_v_heads]).blk(il, "ssm_norm.weight", [h.lin_dim])
                .blk(il, "ssm_out.weight", [value_dim, h.n_embd]);
        }
        if (il === h.ple_layer) {
            b.blk(il, "ple_key.weight", [h.n_embd, hc_dim]).blk(il, "ple_value.weight", [h.n_embd, h.n_embd])
                .blk(il, "ple_norm_key.weight", [hc_dim]).blk(il, "ple_norm_query.weight", [hc_dim])
                .blk(il, "ple_norm_conv.weight", [hc_dim]).blk(il, "ple_conv1d.weight", [h.ple_conv, hc_dim]);
        }
        b.blk(il, "ffn_gate_inp.weight", [h.n_embd, h.n_expert]);
        moeExperts(b, il, h.n_embd, h.n_ff_exp, h.n_expert);
        b.blk(il, "ffn_gate_inp_shexp.weight", [h.n_embd]);
        shexp(b, il, h.n_embd, h.n_ff_shexp);
    }
    return b;
}

/// id -> {name, build(n_vocab), n_vocab (real vocabulary)}; same shape as MODELS in models.mjs.
export const MODELS_DSV4 = {
    "deepseek-v4-flash":   { name: "DeepSeek-V4-Flash",      build: (n) => deepseek4(DSV4_FLASH, n),       n_vocab: 129280, swa: true },
    "deepseek-v4-flash-mtp": { name: "DeepSeek-V4-Flash+MTP",  build: (n) => deepseek4(DSV4_FLASH, n, { mtp: true }), n_vocab: 129280, swa: true, variant: true },
    "kimi-linear-48b":     { name: "Kimi-Linear-48B-A3B",    build: (n) => kimi_linear(KIMI_LINEAR_48B, n), n_vocab: 163840 },
    "kimi-k3":             { name: "Kimi-K3",                build: (n) => kimi_k3(KIMI_K3, n),             n_vocab: 163840 },
    "qwen38-flash-next":   { name: "Qwen3.8-Flash-Next",     build: (n) => qwen4exp(QWEN38_FLASH_NEXT, n),  n_vocab: 248320 },
};

/// The kvfit-gguf-write spec of model `id` (minimal SentencePiece vocabulary of n_vocab tokens).
export function specOfDsv4(id, n_vocab) {
    const m = MODELS_DSV4[id];
    const b = m.build(n_vocab);
    return { version: 3, data: "sparse", metadata: { ...b.metadata, "general.name": `${m.name}-conformance` },
        vocab: { spm: n_vocab }, tensors: b.tensors };
}

/// Parameter count of the tensors a builder writes (every element of every tensor, MTP layers and vision
/// towers are never written). Returns {total, by: {embd, output, layers, other}}.
export function paramCount(b) {
    const by = { embd: 0, output: 0, layers: 0, other: 0 };
    for (const t of b.tensors) {
        const n = t.shape.reduce((a, x) => a * x, 1);
        if (t.name === "token_embd.weight") by.embd += n;
        else if (t.name === "output.weight") by.output += n;
        else if (t.name.startsWith("blk.")) by.layers += n;
        else by.other += n;
    }
    return { total: by.embd + by.output + by.layers + by.other, by };
}
