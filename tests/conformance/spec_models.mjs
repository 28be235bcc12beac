// Shape-exact GGUF specs for the "everything else that takes memory" rules (docs/rules/llamacpp-spec.md,
// llamacpp-host-ram.md, llamacpp-mmproj.md): text models with their MTP (NextN) block, LoRA adapters for a
// suite model, and vision projectors (mmproj) for clip.cpp.
//
//   node spec_models.mjs OUTDIR [--gguf-write /path/kvfit-gguf-write] [id ...]   # writes OUTDIR/<id>.gguf (sparse)
//   node spec_models.mjs --list
//
// Text models reuse models.mjs (specOf); the MTP block follows src/models/qwen35.cpp load_block_mtp (v0.5.0
// and 5b4ebc5 alike): a full-attention decoder block at index n_layer plus nextn.eh_proj [2*n_embd, n_embd],
// nextn.enorm, nextn.hnorm, nextn.shared_head_norm; block_count = n_layer + 1, nextn_predict_layers = 1.
// LoRA adapters follow src/llama-adapter.cpp llama_adapter_lora_init_impl: general.type = "adapter",
// adapter.type = "lora", adapter.lora.alpha, and per adapted weight W [n_in, n_out] the pair
// W.lora_a [n_in, r] and W.lora_b [r, n_out] (names "<weight name>.lora_a/.lora_b").
// mmproj files follow tools/mtmd/clip.cpp clip_model_loader (keys clip.*, tensor names from clip-impl.h).
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { specOf } from "./models.mjs";

const f32 = (v) => ({ type: "f32", value: v });
const u32arr = (a) => ({ type: "array", elem: "u32", value: a });
const i32arr = (a) => ({ type: "array", elem: "i32", value: a });
const f32arr = (a) => ({ type: "array", elem: "f32", value: a });

/// weight type of models.mjs (iq1_s rows of 256, q5_0 rows of 32, else f16; vectors f32)
function wtype(name, shape) {
    if (shape.length === 1 || /norm|bias/.test(name)) return "f32";
    if (shape[0] % 256 === 0) return "iq1_s";
    return shape[0] % 32 === 0 ? "q5_0" : "f16";
}
const T = (name, shape, type = wtype(name, shape)) => ({ name, type, shape });

// ---------------------------------------------------------------------------------------------------------
// qwen35 dense + one MTP block (Qwen3.5-9B / Qwen3.5-27B = Qwen3.6-27B shape, K6)
function qwen35Mtp(baseId, h, n_vocab) {
    const s = specOf(baseId, n_vocab);
    const arch = "qwen35", il = h.n_layer;
    s.metadata[`${arch}.block_count`] = h.n_layer + 1;
    s.metadata[`${arch}.nextn_predict_layers`] = 1;
    const blk = (n, shape) => T(`blk.${il}.${n}`, shape);
    s.tensors.push(blk("attn_norm.weight", [h.n_embd]), blk("post_attention_norm.weight", [h.n_embd]),
        blk("attn_q.weight", [h.n_embd, h.head_dim * h.n_head * 2]), blk("attn_k.weight", [h.n_embd, h.head_dim * h.n_head_kv]),
        blk("attn_v.weight", [h.n_embd, h.head_dim * h.n_head_kv]), blk("attn_output.weight", [h.head_dim * h.n_head, h.n_embd]),
        blk("attn_q_norm.weight", [h.head_dim]), blk("attn_k_norm.weight", [h.head_dim]),
        blk("ffn_gate.weight", [h.n_embd, h.n_ff]), blk("ffn_down.weight", [h.n_ff, h.n_embd]), blk("ffn_up.weight", [h.n_embd, h.n_ff]),
        blk("nextn.eh_proj.weight", [2 * h.n_embd, h.n_embd]), blk("nextn.enorm.weight", [h.n_embd]),
        blk("nextn.hnorm.weight", [h.n_embd]), blk("nextn.shared_head_norm.weight", [h.n_embd]));
    s.metadata["general.name"] += "-mtp";
    return s;
}
const Q35_9B = { n_layer: 32, n_embd: 4096, n_head: 16, n_head_kv: 4, head_dim: 256, n_ff: 12288 };
const Q35_27B = { n_layer: 64, n_embd: 5120, n_head: 24, n_head_kv: 4, head_dim: 256, n_ff: 17408 };

// ---------------------------------------------------------------------------------------------------------
// LoRA adapter for a suite model: rank r on the attention q/k/v/o (+ optionally the FFN) of every block.
// base: the model spec it adapts (shapes are read from it, so the adapter matches: llama-adapter.cpp checks
// model_tensor->ne[0] == a->ne[0], b->ne[1] == model_tensor->ne[1], a->ne[1] == b->ne[0]).
function loraOf(baseSpec, { r = 16, ffn = false, type = "f16", alpha = 32, arch } = {}) {
    const re = ffn ? /^blk\.\d+\.(attn_(q|k|v|output)|ffn_(gate|up|down))\.weight$/ : /^blk\.\d+\.attn_(q|k|v|output)\.weight$/;
    const tensors = [];
    for (const t of baseSpec.tensors) {
        if (!re.test(t.name)) continue;
        const base = t.name.replace(/\.weight$/, "");
        tensors.push({ name: `${base}.weight.lora_a`, type, shape: [t.shape[0], r] });
        tensors.push({ name: `${base}.weight.lora_b`, type, shape: [r, t.shape[1]] });
    }
    return {
        version: 3, data: "sparse",
        metadata: { "general.architecture": arch ?? baseSpec.metadata["general.architecture"], "general.type": "adapter",
            "general.name": `${baseSpec.metadata["general.name"]}-lora-r${r}`, "adapter.type": "lora", "adapter.lora.alpha": f32(alpha) },
        tensors,
    };
}

// ---------------------------------------------------------------------------------------------------------
// mmproj (clip.cpp). Keys: clip.has_vision_encoder, clip.projector_type, clip.vision.{image_size, patch_size,
// embedding_length, feed_forward_length, projection_dim, block_count, attention.head_count,
// attention.layer_norm_epsilon, image_mean, image_std, ...}; tensor names: clip-impl.h TN_*.
function visionBase(h, ptype) {
    return {
        "general.architecture": "clip", "general.type": "mmproj", "general.name": `${h.name}-mmproj`,
        "clip.has_vision_encoder": true, "clip.projector_type": ptype,
        "clip.vision.image_size": h.image_size, "clip.vision.patch_size": h.patch,
        "clip.vision.embedding_length": h.n_embd, "clip.vision.feed_forward_length": h.n_ff,
        "clip.vision.projection_dim": h.proj_dim, "clip.vision.block_count": h.n_layer,
        "clip.vision.attention.head_count": h.n_head, "clip.vision.attention.layer_norm_epsilon": f32(h.eps ?? 1e-6),
        "clip.vision.image_mean": f32arr(h.mean ?? [0.5, 0.5, 0.5]), "clip.vision.image_std": f32arr(h.std ?? [0.5, 0.5, 0.5]),
        "clip.use_gelu": h.gelu ?? false, "clip.use_silu": h.silu ?? false,
    };
}

// Qwen2-VL / Qwen2.5-VL / Qwen3-VL vision towers (clip.cpp PROJECTOR_TYPE_QWEN2VL / QWEN25VL / QWEN3VL,
// models/qwen2vl.cpp, models/qwen3vl.cpp; names and splits from conversion/qwenvl.py and qwen3vl.py): the Conv3d
// patch embedding is written as two 2-D kernels v.patch_embd.weight and v.patch_embd.weight.1 [p, p, 3, n_embd];
// Qwen2-VL splits the fused qkv into q/k/v; Qwen3-VL keeps attn_qkv, has a patch bias, learned position
// embeddings (f32) and deepstack mergers v.deepstack.<il>.{norm,fc1,fc2}. Matrices f16 (mmproj-F16), vectors f32.
const V = (name, shape, type) => ({ name, type: type ?? (shape.length === 1 ? "f32" : "f16"), shape });
function qwenvlMmproj(kind, h) {
    const md = visionBase(h, { qwen2vl: "qwen2vl_merger", qwen25vl: "qwen2.5vl_merger", qwen3vl: "qwen3vl_merger" }[kind]);
    const t = [];
    const E = h.n_embd, p = h.patch;
    t.push(V("v.patch_embd.weight", [p, p, 3, E]), V("v.patch_embd.weight.1", [p, p, 3, E]));
    if (kind === "qwen3vl") {
        md["clip.vision.spatial_merge_size"] = 2;
        t.push(V("v.patch_embd.bias", [E]), V("v.position_embd.weight", [E, h.n_pos], "f32"));
    }
    if (kind === "qwen25vl") md["clip.vision.n_wa_pattern"] = h.n_wa_pattern;
    const rms = kind === "qwen25vl";
    for (let il = 0; il < h.n_layer; ++il) {
        const b = (n, shape, type) => t.push(V(`v.blk.${il}.${n}`, shape, type));
        if (kind === "qwen3vl") { b("attn_qkv.weight", [E, 3 * E]); b("attn_qkv.bias", [3 * E]); }
        else for (const x of ["q", "k", "v"]) { b(`attn_${x}.weight`, [E, E]); b(`attn_${x}.bias`, [E]); }
        b("attn_out.weight", [E, E]); b("attn_out.bias", [E]);
        b("ln1.weight", [E]); b("ln2.weight", [E]);
        if (!rms) { b("ln1.bias", [E]); b("ln2.bias", [E]); }
        if (kind === "qwen25vl") { b("ffn_gate.weight", [E, h.n_ff]); b("ffn_gate.bias", [h.n_ff]); }
        b("ffn_up.weight", [E, h.n_ff]); b("ffn_up.bias", [h.n_ff]);
        b("ffn_down.weight", [h.n_ff, E]); b("ffn_down.bias", [E]);
        if (kind === "qwen3vl" && h.deepstack.includes(il)) {
            const D = 4 * E;
            t.push(V(`v.deepstack.${il}.norm.weight`, [D]), V(`v.deepstack.${il}.norm.bias`, [D]),
                V(`v.deepstack.${il}.fc1.weight`, [D, D]), V(`v.deepstack.${il}.fc1.bias`, [D]),
                V(`v.deepstack.${il}.fc2.weight`, [D, h.proj_dim]), V(`v.deepstack.${il}.fc2.bias`, [h.proj_dim]));
        }
    }
    t.push(V("v.post_ln.weight", [E]));
    if (!rms) t.push(V("v.post_ln.bias", [E]));
    const M = 4 * E;
    t.push(V("mm.0.weight", [M, M]), V("mm.0.bias", [M]), V("mm.2.weight", [M, h.proj_dim]), V("mm.2.bias", [h.proj_dim]));
    return { version: 3, data: "sparse", metadata: md, tensors: t };
}
const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073], CLIP_STD = [0.26862954, 0.26130258, 0.27577711];
// Qwen2-VL-7B-Instruct vision_config: embed_dim 1280, depth 32, num_heads 16, mlp_ratio 4, patch 14, hidden_size 3584
const QWEN2VL_7B = { name: "Qwen2-VL-7B", n_embd: 1280, n_ff: 5120, n_layer: 32, n_head: 16, patch: 14, proj_dim: 3584,
    image_size: 560, mean: CLIP_MEAN, std: CLIP_STD };
// Qwen2.5-VL-7B-Instruct vision_config: hidden 1280, intermediate 3420, depth 32, heads 16, out_hidden 3584,
// fullatt_block_indexes [7, 15, 23, 31] -> n_wa_pattern 8, window 112, silu
const QWEN25VL_7B = { name: "Qwen2.5-VL-7B", n_embd: 1280, n_ff: 3420, n_layer: 32, n_head: 16, patch: 14, proj_dim: 3584,
    image_size: 560, mean: CLIP_MEAN, std: CLIP_STD, silu: true, n_wa_pattern: 8 };
// Qwen2.5-VL-3B: same tower, out_hidden 2048
const QWEN25VL_3B = { ...QWEN25VL_7B, name: "Qwen2.5-VL-3B", proj_dim: 2048 };
// Qwen3-VL-8B-Instruct vision_config: hidden 1152, intermediate 4304, depth 27, heads 16, patch 16,
// num_position_embeddings 2304 (image_size 768), out_hidden 4096, deepstack_visual_indexes [8, 16, 24], gelu
const QWEN3VL_8B = { name: "Qwen3-VL-8B", n_embd: 1152, n_ff: 4304, n_layer: 27, n_head: 16, patch: 16, proj_dim: 4096,
    image_size: 768, n_pos: 2304, deepstack: [8, 16, 24], gelu: true, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] };
// Qwen3-VL-4B / 2B: hidden 1024, intermediate 4096, depth 24, heads 16, deepstack [5, 11, 17], out 2560 / 2048
const QWEN3VL_4B = { ...QWEN3VL_8B, name: "Qwen3-VL-4B", n_embd: 1024, n_ff: 4096, n_layer: 24, proj_dim: 2560, deepstack: [5, 11, 17] };

// Gemma 3 (clip.cpp PROJECTOR_TYPE_GEMMA3, models/siglip.cpp; conversion/gemma.py Gemma3VisionModel): SigLIP-so400m,
// 896 px, patch 14 (4096 patches), avg-pool 4x4 -> 256 tokens, mm.soft_emb_norm + mm.input_projection [n_text, 1152].
function gemma3Mmproj(h) {
    const md = visionBase(h, "gemma3");
    const E = h.n_embd, t = [];
    t.push(V("v.patch_embd.weight", [h.patch, h.patch, 3, E]), V("v.patch_embd.bias", [E]),
        V("v.position_embd.weight", [E, (h.image_size / h.patch) ** 2], "f32"));
    for (let il = 0; il < h.n_layer; ++il) {
        const b = (n, shape) => t.push(V(`v.blk.${il}.${n}`, shape));
        for (const x of ["q", "k", "v"]) { b(`attn_${x}.weight`, [E, E]); b(`attn_${x}.bias`, [E]); }
        b("attn_out.weight", [E, E]); b("attn_out.bias", [E]);
        b("ln1.weight", [E]); b("ln1.bias", [E]); b("ln2.weight", [E]); b("ln2.bias", [E]);
        b("ffn_up.weight", [E, h.n_ff]); b("ffn_up.bias", [h.n_ff]); b("ffn_down.weight", [h.n_ff, E]); b("ffn_down.bias", [E]);
    }
    t.push(V("v.post_ln.weight", [E]), V("v.post_ln.bias", [E]), V("mm.soft_emb_norm.weight", [E]),
        V("mm.input_projection.weight", [h.proj_dim, E]));
    return { version: 3, data: "sparse", metadata: md, tensors: t };
}
const GEMMA3_12B = { name: "gemma-3-12b", n_embd: 1152, n_ff: 4304, n_layer: 27, n_head: 16, patch: 14, proj_dim: 3840,
    image_size: 896, gelu: true };

export const SPEC_MODELS = {
    "qwen35-9b-mtp":  { build: () => qwen35Mtp("qwen35-9b", Q35_9B, 512), what: "Qwen3.5-9B + MTP block, 512-token vocabulary" },
    "qwen35-9b-mtp-v248320": { build: () => qwen35Mtp("qwen35-9b", Q35_9B, 248320), what: "Qwen3.5-9B + MTP block, real vocabulary" },
    "qwen35-27b-mtp": { build: () => qwen35Mtp("qwen35-27b", Q35_27B, 512), what: "Qwen3.5/3.6-27B + MTP block (K6), 512 tokens" },
    "qwen35-27b-mtp-v248320": { build: () => qwen35Mtp("qwen35-27b", Q35_27B, 248320), what: "Qwen3.5/3.6-27B + MTP block (K6), real vocabulary" },
    "llama31-8b-v512": { build: () => specOf("llama31-8b", 512), what: "Llama-3.1-8B (suite model), 512 tokens" },
    "llama31-8b-lora-r16": { build: () => loraOf(specOf("llama31-8b", 512), { r: 16 }), what: "LoRA r16 f16 on q/k/v/o of Llama-3.1-8B" },
    "llama31-8b-lora-r64-ffn": { build: () => loraOf(specOf("llama31-8b", 512), { r: 64, ffn: true }), what: "LoRA r64 f16 on attention + FFN" },
    "mmproj-qwen2vl-7b": { build: () => qwenvlMmproj("qwen2vl", QWEN2VL_7B), what: "Qwen2-VL-7B vision projector" },
    "mmproj-qwen25vl-7b": { build: () => qwenvlMmproj("qwen25vl", QWEN25VL_7B), what: "Qwen2.5-VL-7B vision projector" },
    "mmproj-qwen25vl-3b": { build: () => qwenvlMmproj("qwen25vl", QWEN25VL_3B), what: "Qwen2.5-VL-3B vision projector" },
    "mmproj-qwen3vl-8b": { build: () => qwenvlMmproj("qwen3vl", QWEN3VL_8B), what: "Qwen3-VL-8B vision projector" },
    "mmproj-qwen3vl-4b": { build: () => qwenvlMmproj("qwen3vl", QWEN3VL_4B), what: "Qwen3-VL-4B/2B vision tower (4B projection)" },
    "mmproj-gemma3-12b": { build: () => gemma3Mmproj(GEMMA3_12B), what: "Gemma-3-12B vision projector (SigLIP)" },
    "llama31-8b-lora-r32-q8": { build: () => loraOf(specOf("llama31-8b", 512), { r: 32, type: "q8_0" }), what: "LoRA r32 q8_0 on q/k/v/o" },
};

export function specOfSpec(id) { return SPEC_MODELS[id].build(); }
export { loraOf, qwen35Mtp, qwenvlMmproj, gemma3Mmproj, Q35_9B, Q35_27B };
/// the projector shapes of the mmproj ids (kind + hyperparameters), for the formulas of docs/rules/llamacpp-mmproj.md
export const MMPROJ_SHAPES = {
    "mmproj-qwen2vl-7b": { kind: "qwen2vl", ...QWEN2VL_7B }, "mmproj-qwen25vl-7b": { kind: "qwen25vl", ...QWEN25VL_7B },
    "mmproj-qwen25vl-3b": { kind: "qwen25vl", ...QWEN25VL_3B }, "mmproj-qwen3vl-8b": { kind: "qwen3vl", ...QWEN3VL_8B },
    "mmproj-qwen3vl-4b": { kind: "qwen3vl", ...QWEN3VL_4B }, "mmproj-gemma3-12b": { kind: "gemma3", ...GEMMA3_12B },
};

export function writeSpecGguf(id, outDir, tool) {
    fs.mkdirSync(outDir, { recursive: true });
    const spec = specOfSpec(id);
    const text = JSON.stringify(spec);
    const specPath = path.join(outDir, `${id}.json`), gguf = path.join(outDir, `${id}.gguf`);
    if (fs.existsSync(gguf) && fs.existsSync(specPath) && fs.readFileSync(specPath, "utf8") === text) return gguf;
    fs.writeFileSync(specPath, text);
    execFileSync(tool, [specPath, gguf], { stdio: ["ignore", "pipe", "pipe"] });
    return gguf;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const args = process.argv.slice(2);
    if (args[0] === "--list") {
        for (const [id, m] of Object.entries(SPEC_MODELS)) console.log(`${id}\t${m.what}`);
        process.exit(0);
    }
    const gi = args.indexOf("--gguf-write");
    const tool = gi >= 0 ? args.splice(gi, 2)[1] : (process.env.KVFIT_GGUF_WRITE ?? "/work/scratch/bin/kvfit-gguf-write");
    const [outDir, ...ids] = args;
    for (const id of ids.length ? ids : Object.keys(SPEC_MODELS)) console.log(writeSpecGguf(id, outDir, tool));
}
