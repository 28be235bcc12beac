// Shape-exact builders for the sparse-attention / MLA architectures of llama.cpp v0.5.0 (node-llama-cpp 3.22.1):
// deepseek32 (DeepSeek-V3.2), glm-dsa (GLM-5), deepseek2 as converted for Kimi-K2.5, mistral4 (Mistral Small 4)
// and minimax-m3 (MiniMax-M3, MSA). Entries have the shape of MODELS in models.mjs: {name, build(n_vocab), n_vocab}.
//
// Keys are what convert_hf_to_gguf.py writes for the published config (conversion/deepseek.py DeepseekV2Model /
// DeepseekV32Model, conversion/glm.py GlmMoeDsaModel, conversion/mistral3.py Mistral4Model, conversion/minimax.py
// MiniMaxM3Model, conversion/base.py TextModel.set_gguf_parameters); tensors mirror load_arch_tensors in
// src/models/<arch>.cpp. MTP / NextN blocks are written the way the converter writes them by default (appended as
// blk.<n_layer>, block_count = n_layer + 1, nextn_predict_layers = 1): the loader flags them TENSOR_SKIP
// (ml.load_mtp is false for a normal load), so they are in the file but not in the model buffer.
// Weight types: weightType() of models.mjs (iq1_s / q5_0 / f16 / f32: no CPU_REPACK buffer).
// See docs/rules/llamacpp-dsa.md for the memory rules these files were measured for.

/// ggml type for a weight of this name and shape (ne[0] first); the same choice as models.mjs weightType().
function weightType(name, shape) {
    const small = shape.length === 1 || /norm|bias|exp_probs_b|ffn_gate_inp\./.test(name);
    if (small) return "f32";
    if (shape[0] % 256 === 0) return "iq1_s";
    return shape[0] % 32 === 0 ? "q5_0" : "f16";
}

class Builder {
    constructor(arch) { this.arch = arch; this.metadata = { "general.architecture": arch }; this.tensors = []; }
    k(key, value) { this.metadata[`${this.arch}.${key}`] = value; return this; }
    t(name, shape) { this.tensors.push({ name, type: weightType(name, shape), shape }); return this; }
    blk(il, name, shape) { return this.t(`blk.${il}.${name}`, shape); }
}
const f32 = (v) => ({ type: "f32", value: v });
const boolarr = (a) => ({ type: "array", elem: "bool", value: a });

// ---------------------------------------------------------------------------------------------------------
// The MLA family (deepseek2, deepseek32, glm-dsa, mistral4): one description, h = the HF text config's numbers.
//   h: n_layer (trunk), n_mtp, n_embd, n_ff (dense), n_head, q_lora (0: no q LoRA), kv_lora, nope, rope, v,
//      n_expert, n_expert_used, n_shared, n_ff_exp, n_dense_lead, n_group, topk_group, gating (1 softmax,
//      2 sigmoid, 0: not written), scale, norm_topk, ctx, theta, eps, yarn {factor, orig, log_mul}|null,
//      indexer {n_head, dim, top_k, types?: bool[n_layer]}|null, fused_gate_up, exp_probs_b.

/// GGUF keys conversion/deepseek.py DeepseekV2Model.set_gguf_parameters writes (MLA: head_count_kv forced to 1,
/// key_length = kv_lora_rank + qk_rope_head_dim, value_length = kv_lora_rank, *_mla = the per-head q/k and v sizes).
function mlaKeys(b, h, n_vocab) {
    b.k("block_count", h.n_layer + h.n_mtp).k("context_length", h.ctx).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head).k("attention.head_count_kv", 1)
        .k("rope.freq_base", f32(h.theta)).k("attention.layer_norm_rms_epsilon", f32(h.eps))
        .k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used)
        .k("expert_group_count", h.n_group).k("expert_group_used_count", h.topk_group);
    if (h.gating) b.k("expert_gating_func", h.gating);
    if (h.yarn) {
        b.k("rope.scaling.type", "yarn").k("rope.scaling.factor", f32(h.yarn.factor))
            .k("rope.scaling.original_context_length", h.yarn.orig)
            .k("rope.scaling.yarn_beta_fast", f32(32)).k("rope.scaling.yarn_beta_slow", f32(1));
    }
    b.k("leading_dense_block_count", h.n_dense_lead).k("vocab_size", n_vocab);
    if (h.q_lora) b.k("attention.q_lora_rank", h.q_lora);
    b.k("attention.kv_lora_rank", h.kv_lora).k("attention.key_length", h.kv_lora + h.rope)
        .k("attention.value_length", h.kv_lora).k("attention.key_length_mla", h.nope + h.rope)
        .k("attention.value_length_mla", h.v).k("expert_feed_forward_length", h.n_ff_exp)
        .k("expert_shared_count", h.n_shared).k("expert_weights_scale", f32(h.scale));
    if (h.norm_topk) b.k("expert_weights_norm", true);
    b.k("rope.dimension_count", h.rope);
    if (h.yarn) b.k("rope.scaling.yarn_log_multiplier", f32(0.1 * h.yarn.log_mul));
    if (h.n_mtp) b.k("nextn_predict_layers", h.n_mtp);
    if (h.indexer) {
        b.k("attention.indexer.head_count", h.indexer.n_head).k("attention.indexer.key_length", h.indexer.dim)
            .k("attention.indexer.top_k", h.indexer.top_k);
        if (h.indexer.types) b.k("attention.indexer.types", boolarr(h.indexer.types));
    }
}

/// Tensors of one MLA block (src/models/deepseek2.cpp, deepseek32.cpp, glm-dsa.cpp load_arch_tensors).
function mlaBlock(b, il, h, n_vocab) {
    const E = h.n_embd;
    b.blk(il, "attn_norm.weight", [E]);
    if (h.q_lora) b.blk(il, "attn_q_a_norm.weight", [h.q_lora]);
    b.blk(il, "attn_kv_a_norm.weight", [h.kv_lora]);
    if (h.q_lora) b.blk(il, "attn_q_a.weight", [E, h.q_lora]).blk(il, "attn_q_b.weight", [h.q_lora, h.n_head * (h.nope + h.rope)]);
    else b.blk(il, "attn_q.weight", [E, h.n_head * (h.nope + h.rope)]);
    b.blk(il, "attn_kv_a_mqa.weight", [E, h.kv_lora + h.rope])
        .blk(il, "attn_k_b.weight", [h.nope, h.kv_lora, h.n_head]).blk(il, "attn_v_b.weight", [h.kv_lora, h.v, h.n_head])
        .blk(il, "attn_output.weight", [h.n_head * h.v, E]).blk(il, "ffn_norm.weight", [E]);
    const ix = h.indexer;
    if (ix && (!ix.types || il >= h.n_layer || ix.types[il])) {
        b.blk(il, "indexer.k_norm.weight", [ix.dim]).blk(il, "indexer.k_norm.bias", [ix.dim])
            .blk(il, "indexer.proj.weight", [E, ix.n_head]).blk(il, "indexer.attn_k.weight", [E, ix.dim])
            .blk(il, "indexer.attn_q_b.weight", [h.q_lora, ix.n_head * ix.dim]);
    }
    if (il < h.n_dense_lead) {
        b.blk(il, "ffn_gate.weight", [E, h.n_ff]).blk(il, "ffn_down.weight", [h.n_ff, E]).blk(il, "ffn_up.weight", [E, h.n_ff]);
    } else {
        const X = h.n_expert, F = h.n_ff_exp, S = h.n_ff_exp * h.n_shared;
        b.blk(il, "ffn_gate_inp.weight", [E, X]);
        if (h.exp_probs_b) b.blk(il, "exp_probs_b.bias", [X]);
        if (h.fused_gate_up) b.blk(il, "ffn_gate_up_exps.weight", [E, 2 * F, X]);
        else b.blk(il, "ffn_gate_exps.weight", [E, F, X]).blk(il, "ffn_up_exps.weight", [E, F, X]);
        b.blk(il, "ffn_down_exps.weight", [F, E, X])
            .blk(il, "ffn_gate_shexp.weight", [E, S]).blk(il, "ffn_down_shexp.weight", [S, E]).blk(il, "ffn_up_shexp.weight", [E, S]);
    }
    if (il >= h.n_layer) {
        // NextN block as conversion maps model.layers.<n_layer>.{eh_proj,enorm,hnorm,embed_tokens,shared_head.*}
        b.blk(il, "nextn.eh_proj.weight", [2 * E, E]).blk(il, "nextn.enorm.weight", [E]).blk(il, "nextn.hnorm.weight", [E])
            .blk(il, "nextn.embed_tokens.weight", [E, n_vocab]).blk(il, "nextn.shared_head_head.weight", [E, n_vocab])
            .blk(il, "nextn.shared_head_norm.weight", [E]);
    }
}

function mlaModel(arch, h, n_vocab) {
    const b = new Builder(arch);
    mlaKeys(b, h, n_vocab);
    b.t("token_embd.weight", [h.n_embd, n_vocab]).t("output_norm.weight", [h.n_embd]).t("output.weight", [h.n_embd, n_vocab]);
    for (let il = 0; il < h.n_layer + h.n_mtp; ++il) mlaBlock(b, il, h, n_vocab);
    return b;
}

// DeepSeek-V3.2: shared/configs/deepseek-ai__DeepSeek-V3.2.json (DeepseekV32ForCausalLM -> deepseek32).
const DSV32 = { n_layer: 61, n_mtp: 1, n_embd: 7168, n_ff: 18432, n_head: 128, q_lora: 1536, kv_lora: 512, nope: 128,
    rope: 64, v: 128, n_expert: 256, n_expert_used: 8, n_shared: 1, n_ff_exp: 2048, n_dense_lead: 3, n_group: 8,
    topk_group: 4, gating: 2, scale: 2.5, norm_topk: true, ctx: 163840, theta: 10000, eps: 1e-6,
    yarn: { factor: 40, orig: 4096, log_mul: 1.0 }, indexer: { n_head: 64, dim: 128, top_k: 2048 }, exp_probs_b: true };

// GLM-5: shared/configs/zai-org__GLM-5.json (GlmMoeDsaForCausalLM -> glm-dsa). No `indexer_types` key in the
// published file: glm-dsa.cpp then marks every layer "full" (n_ctx_train 202752 < 1048576, the pre-5.2 rule).
const GLM5 = { n_layer: 78, n_mtp: 1, n_embd: 6144, n_ff: 12288, n_head: 64, q_lora: 2048, kv_lora: 512, nope: 192,
    rope: 64, v: 256, n_expert: 256, n_expert_used: 8, n_shared: 1, n_ff_exp: 2048, n_dense_lead: 3, n_group: 1,
    topk_group: 1, gating: 2, scale: 2.5, norm_topk: true, ctx: 202752, theta: 1000000, eps: 1e-5, yarn: null,
    indexer: { n_head: 32, dim: 128, top_k: 2048 }, exp_probs_b: true };

// GLM-5.2's default indexer pattern (src/models/glm-dsa.cpp GLM_5_2_DEFAULT_INDEXER_TYPES: il 0, 1 and every
// 4th layer from 2 are "full"), written as the converter writes an HF `indexer_types` list: a bool array
// `glm-dsa.attention.indexer.types` of n_layer entries. Synthetic: GLM-5 shape + this key, to measure the filter.
export const glm52Types = (n_layer) => [...Array(n_layer).keys()].map((il) => il < 2 || (il - 2) % 4 === 0);

/// A glm-dsa model (src/models/glm-dsa.cpp): GLM-5's text config with the fields of `over` changed (the names of the
/// MLA description above: n_layer, n_dense_lead, n_embd, n_ff, n_head, q_lora, kv_lora, nope, rope, v, n_expert,
/// n_expert_used, n_ff_exp, n_shared, indexer {n_head, dim, top_k}). `over.idx_types`: "glm52" writes GLM-5.2's
/// default pattern for the model's layer count as `attention.indexer.types` (the converter's `indexer_types`), an
/// array writes that list; absent, no key (every layer a full indexer layer: n_ctx_train < 1048576, the pre-5.2 rule).
/// GLM-5 is glmDsa({}), the GLM-5.2-typed GLM-5 glmDsa({ idx_types: "glm52" }); the synthetic sibling shapes of
/// tests/conformance/shapes.mjs are other calls.
export function glmDsa(over, n_vocab) {
    const { idx_types, ...rest } = over;
    const h = { ...GLM5, ...rest, indexer: { ...GLM5.indexer, ...(rest.indexer ?? {}) } };
    if (idx_types) h.indexer.types = idx_types === "glm52" ? glm52Types(h.n_layer) : idx_types;
    return mlaModel("glm-dsa", h, n_vocab);
}

// Kimi-K2.5: shared/configs/moonshotai__Kimi-K2.5.json text_config (kimi_k2, architectures DeepseekV3ForCausalLM)
// -> DeepseekV2Model -> deepseek2. num_nextn_predict_layers 0 (and DeepseekV2Model skips MTP anyway).
const KIMI_K25 = { n_layer: 61, n_mtp: 0, n_embd: 7168, n_ff: 18432, n_head: 64, q_lora: 1536, kv_lora: 512, nope: 128,
    rope: 64, v: 128, n_expert: 384, n_expert_used: 8, n_shared: 1, n_ff_exp: 2048, n_dense_lead: 1, n_group: 1,
    topk_group: 1, gating: 2, scale: 2.827, norm_topk: true, ctx: 262144, theta: 50000, eps: 1e-5,
    yarn: { factor: 64, orig: 4096, log_mul: 1.0 }, indexer: null, exp_probs_b: true };

/// A deepseek2 model (src/models/deepseek2.cpp; DeepseekV2Model / DeepseekV3 / Kimi-K2 as converted): Kimi-K2.5's text
/// config with the fields of `over` changed (the names of the MLA description above: n_layer, n_dense_lead, n_embd,
/// n_ff, n_head, q_lora, kv_lora, nope, rope, v, n_expert, n_expert_used, n_ff_exp, n_shared, n_group, topk_group).
/// Kimi-K2.5 is deepseek2({}); the DeepSeek-V3 shape (shared/configs/deepseek-ai__DeepSeek-V3.json: 128 heads, 256
/// experts in 8 groups of which 4 are used, 3 leading dense layers, 129,280 tokens) is `DSV3` below; the synthetic
/// sibling shapes of tests/conformance/shapes.mjs are other calls. A layer count of 26 or 27 is refused: llama.cpp
/// takes such a deepseek2 for a "lite" model and ignores its q LoRA (deepseek2.cpp load_arch_hparams is_lite).
export function deepseek2(over, n_vocab) {
    const h = { ...KIMI_K25, ...over };
    if (h.q_lora && (h.n_layer === 26 || h.n_layer === 27)) throw new Error(`deepseek2 with q LoRA and ${h.n_layer} layers: llama.cpp reads it as a lite model`);
    return mlaModel("deepseek2", h, n_vocab);
}

/// DeepSeek-V3 / R1 (shared/configs/deepseek-ai__DeepSeek-V3.json, DeepseekV3ForCausalLM -> deepseek2): Kimi-K2.5's
/// layout with 128 heads, 256 experts in 8 groups (topk_group 4), 3 leading dense layers, the MTP block left out
/// (DeepseekV2Model does not convert it). Changed from KIMI_K25 by deepseek2(DSV3).
export const DSV3 = { n_layer: 61, n_head: 128, n_expert: 256, n_dense_lead: 3, n_group: 8, topk_group: 4, scale: 2.5,
    ctx: 163840, theta: 10000, eps: 1e-6, yarn: { factor: 40, orig: 4096, log_mul: 1.0 } };

// Mistral Small 4 (mistralai/Mistral-Small-4-119B-2603): Mistral3ForConditionalGeneration wrapping a text_config
// of model_type mistral4 -> conversion/mistral3.py Mistral4Model(DeepseekV2Model) -> mistral4. Shape: the
// Mistral4Config defaults of huggingface/transformers src/transformers/models/mistral4/configuration_mistral4.py
// (commit 008e5743, documented as that checkpoint): 36 layers, 4096, 32 heads, q_lora 1024, kv_lora 256,
// nope 64 + rope 64, v 128, 128 experts top-4 + 1 shared, expert FFN 2048, no dense lead, vocab 131072,
// 1048576 positions, yarn 128 x 8192. Experts ship stacked (gate_up_proj) -> ffn_gate_up_exps.
const MISTRAL_SMALL_4 = { n_layer: 36, n_mtp: 0, n_embd: 4096, n_ff: 12288, n_head: 32, q_lora: 1024, kv_lora: 256,
    nope: 64, rope: 64, v: 128, n_expert: 128, n_expert_used: 4, n_shared: 1, n_ff_exp: 2048, n_dense_lead: 0,
    n_group: 1, topk_group: 1, gating: 0, scale: 1.0, norm_topk: true, ctx: 1048576, theta: 10000, eps: 1e-6,
    yarn: { factor: 128, orig: 8192, log_mul: 1.0 }, indexer: null, fused_gate_up: true, exp_probs_b: false };

// ---------------------------------------------------------------------------------------------------------
// MiniMax-M3 (minimax-m3): MiniMaxAI/MiniMax-M3 text config as kept in xiaowanCN/aiconfigurator
// aic-core/src/aiconfigurator_core/model_configs/MiniMaxAI--MiniMax-M3_config.json (commit 5dfdd047): 60 layers,
// 6144, 64 q / 4 kv heads x 128, rotary 64, 128 experts top-4 + 1 shared (3072), first 3 layers dense (12288),
// MSA indexer 4 heads x 128, block 128, top-16 blocks, 1 local block, vocab 200064, 1048576 positions.
// Keys as conversion/minimax.py MiniMaxM3Model (+ MiniMaxM2Model, TextModel); tensors src/models/minimax-m3.cpp.
function minimax_m3(n_vocab) {
    const h = { n_layer: 60, n_embd: 6144, n_head: 64, n_head_kv: 4, head_dim: 128, rot: 64, n_ff: 12288, n_ff_exp: 3072,
        n_expert: 128, n_expert_used: 4, n_shared: 1, n_dense: 3, idx_heads: 4, idx_dim: 128 };
    const b = new Builder("minimax-m3");
    b.k("block_count", h.n_layer).k("context_length", 1048576).k("embedding_length", h.n_embd)
        .k("feed_forward_length", h.n_ff).k("attention.head_count", h.n_head).k("attention.head_count_kv", h.n_head_kv)
        .k("rope.freq_base", f32(5000000)).k("attention.layer_norm_rms_epsilon", f32(1e-6))
        .k("expert_count", h.n_expert).k("expert_used_count", h.n_expert_used).k("expert_gating_func", 2)
        .k("attention.key_length", h.head_dim).k("attention.value_length", h.head_dim)
        .k("expert_feed_forward_length", h.n_ff_exp).k("rope.dimension_count", h.rot)
        .k("expert_shared_count", h.n_shared).k("expert_weights_scale", f32(2.0)).k("expert_weights_norm", true)
        .k("attention.indexer.head_count", h.idx_heads).k("attention.indexer.key_length", h.idx_dim)
        .k("attention.indexer.top_k", 16).k("attention.indexer.block_size", 128).k("attention.indexer.local_blocks", 1)
        .k("leading_dense_block_count", h.n_dense);
    const E = h.n_embd, q = h.n_head * h.head_dim, kv = h.n_head_kv * h.head_dim;
    b.t("token_embd.weight", [E, n_vocab]).t("output_norm.weight", [E]).t("output.weight", [E, n_vocab]);
    for (let il = 0; il < h.n_layer; ++il) {
        b.blk(il, "attn_q.weight", [E, q]).blk(il, "attn_k.weight", [E, kv]).blk(il, "attn_v.weight", [E, kv])
            .blk(il, "attn_output.weight", [q, E]).blk(il, "attn_norm.weight", [E])
            .blk(il, "attn_q_norm.weight", [h.head_dim]).blk(il, "attn_k_norm.weight", [h.head_dim]).blk(il, "ffn_norm.weight", [E]);
        if (il < h.n_dense) {
            b.blk(il, "ffn_gate.weight", [E, h.n_ff]).blk(il, "ffn_down.weight", [h.n_ff, E]).blk(il, "ffn_up.weight", [E, h.n_ff]);
            continue;
        }
        const X = h.n_expert, F = h.n_ff_exp, S = F * h.n_shared;
        b.blk(il, "ffn_gate_inp.weight", [E, X]).blk(il, "exp_probs_b.bias", [X])
            .blk(il, "ffn_gate_exps.weight", [E, F, X]).blk(il, "ffn_down_exps.weight", [F, E, X]).blk(il, "ffn_up_exps.weight", [E, F, X])
            .blk(il, "ffn_gate_shexp.weight", [E, S]).blk(il, "ffn_down_shexp.weight", [S, E]).blk(il, "ffn_up_shexp.weight", [E, S])
            .blk(il, "indexer.q_proj.weight", [E, h.idx_heads * h.idx_dim]).blk(il, "indexer.k_proj.weight", [E, h.idx_dim])
            .blk(il, "indexer.q_norm.weight", [h.idx_dim]).blk(il, "indexer.k_norm.weight", [h.idx_dim]);
    }
    return b;
}

const noMtp = (h) => ({ ...h, n_mtp: 0 });

/// id -> {name, build(n_vocab), n_vocab (the real vocabulary), arch, config (where the shape comes from)}.
export const MODELS_DSA = {
    "deepseek-v3.2":      { name: "DeepSeek-V3.2",      arch: "deepseek32", n_vocab: 129280, config: "deepseek-ai__DeepSeek-V3.2.json",
                            build: (n) => mlaModel("deepseek32", DSV32, n) },
    "deepseek-v3.2-nomtp": { name: "DeepSeek-V3.2 (--no-mtp)", arch: "deepseek32", n_vocab: 129280, config: "deepseek-ai__DeepSeek-V3.2.json",
                            build: (n) => mlaModel("deepseek32", noMtp(DSV32), n) },
    "glm-5":              { name: "GLM-5",              arch: "glm-dsa",    n_vocab: 154880, config: "zai-org__GLM-5.json",
                            build: (n) => glmDsa({}, n) },
    "glm-5-idxtypes":     { name: "GLM-5 + GLM-5.2 indexer_types", arch: "glm-dsa", n_vocab: 154880, config: "zai-org__GLM-5.json (+ indexer_types)",
                            build: (n) => glmDsa({ idx_types: "glm52" }, n) },
    "kimi-k2.5":          { name: "Kimi-K2.5",          arch: "deepseek2",  n_vocab: 163840, config: "moonshotai__Kimi-K2.5.json",
                            build: (n) => deepseek2({}, n) },
    "mistral-small-4":    { name: "Mistral-Small-4-119B", arch: "mistral4", n_vocab: 131072, config: "transformers Mistral4Config defaults",
                            build: (n) => mlaModel("mistral4", MISTRAL_SMALL_4, n) },
    "minimax-m3":         { name: "MiniMax-M3",         arch: "minimax-m3", n_vocab: 200064, config: "aiconfigurator MiniMaxAI--MiniMax-M3_config.json",
                            build: minimax_m3 },
};

/// The kvfit-gguf-write spec of model `id` with a minimal SentencePiece vocabulary of n_vocab tokens.
export function specOfDsa(id, n_vocab) {
    const m = MODELS_DSA[id];
    const b = m.build(n_vocab);
    return { version: 3, data: "sparse", metadata: { ...b.metadata, "general.name": `${m.name}-conformance` },
        vocab: { spm: n_vocab }, tensors: b.tensors };
}

/// Parameter count of a builder's tensor list, split into trunk / MTP (blk.<il> with il >= n_layer_trunk).
export function countParams(b, n_layer_trunk) {
    let trunk = 0, mtp = 0;
    for (const t of b.tensors) {
        const n = t.shape.reduce((a, x) => a * x, 1);
        const m = /^blk\.(\d+)\./.exec(t.name);
        if (m && Number(m[1]) >= n_layer_trunk) mtp += n; else trunk += n;
    }
    return { trunk, mtp };
}
