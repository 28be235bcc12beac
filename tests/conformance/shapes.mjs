#!/usr/bin/env node
// Sibling shapes of the conformance families: the model axis of the graph templates (issue 24). A family's graph is
// recorded on its `record` shapes (the first is the suite's own model, which gets the full design of contexts; the
// others vary every dimension the family's graph uses) and checked, live, on its `check` shapes, which no template
// was fitted on: other layer counts, widths, head counts, head widths, FFN widths, vocabularies
// (tools/graph_template/graph2.py; tests/conformance/cuda_conformance.mjs --shapes).
//
// usage: node shapes.mjs OUT_DIR [--gguf-write PATH] [--role check|held|record] [FAMILY...]   writes OUT_DIR/<id>_v<n_vocab>.gguf
//        node shapes.mjs --headers DIR [FAMILY...]                  header-only files of the check shapes and the
//                                                                   families' suite models (tests/data/gguf_shapes)
//        node shapes.mjs --list [FAMILY...]                         prints "family role id file" lines
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { llama, qwen35, qwen35moe, gpt_oss, gemma3, qwen3, qwen3moe, qwen3Config } from "./models.mjs";
import { gemma4, gemma4Config, minimaxM2, minimaxM2Config } from "./models_swa.mjs";
import { glmDsa, deepseek2, DSV3 } from "./models_dsa.mjs";
import { deepseek4, DSV4_FLASH } from "./models_dsv4.mjs";
import { qwen3vl, qwen3vlmoe, QWEN3VL_8B, QWEN3VL_30B_A3B } from "./models_hyb.mjs";
import { defaultGgufWrite } from "./generate.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
/// Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B config.json, not kept in shared/configs; its published shape): 48 layers, 2,048
/// wide, 32 x 128 heads, 4 KV heads, 128 experts 768 wide top-8 (softmax router, no shared expert), vocabulary 151,936
const QWEN3_30B_A3B = { num_hidden_layers: 48, hidden_size: 2048, num_attention_heads: 32, num_key_value_heads: 4, head_dim: 128,
    intermediate_size: 6144, num_experts: 128, num_experts_per_tok: 8, moe_intermediate_size: 768, max_position_embeddings: 40960 };
/// A minimax-m2 shape: MiniMax-M2.5's config with the fields of `over` changed (FAMILIES["minimax-m2"])
const mm2 = (over) => (nv) => minimaxM2(minimaxM2Config(over), nv);
/// A qwen3 shape: Qwen3-8B's config with the fields of `over` changed (FAMILIES["qwen3"])
const q3 = (over) => (nv) => qwen3(qwen3Config(over), nv);
/// A qwen3moe shape: Qwen3-30B-A3B's published shape (QWEN3_30B_A3B) with the fields of `over` changed (FAMILIES["qwen3moe"])
const q3m = (over) => (nv) => qwen3moe(qwen3Config({ ...QWEN3_30B_A3B, ...over }), nv);
/// A qwen3vl shape: Qwen3-VL-8B's text shape (models_hyb.mjs QWEN3VL_8B) with the fields of `over` changed (FAMILIES["qwen3vl"])
const q3vl = (over) => (nv) => qwen3vl({ ...QWEN3VL_8B, ...over }, nv);
/// A qwen3vlmoe shape: Qwen3-VL-30B-A3B's text shape with the fields of `over` changed (FAMILIES["qwen3vlmoe"])
const q3vlm = (over) => (nv) => qwen3vlmoe({ ...QWEN3VL_30B_A3B, ...over }, nv);

/// family -> {arch, base: the suite's model id (recorded with the full design; null where the suite has no model of the
/// family, whose real shape is then a `record` shape with its real vocabulary in `vocab`), record: [[id, build, n_vocab]], check,
/// held (optional: held out like check, through committed rows only, not measured live in CI)}
export const FAMILIES = {
    llama: {
        arch: "llama",
        base: "llama31-8b",
        record: [
            // Llama-3.2-1B (meta-llama/Llama-3.2-1B config.json): 16 layers, 2048 wide, 32 x 64 heads, 8 KV heads
            ["llama-3.2-1b", (nv) => llama({ n_layer: 16, n_embd: 2048, n_head: 32, n_head_kv: 8, head_dim: 64, n_ff: 8192 }, nv), 512],
            // Llama-3.2-3B: 28 layers, 3072 wide, 24 x 128 heads, 8 KV heads
            ["llama-3.2-3b", (nv) => llama({ n_layer: 28, n_embd: 3072, n_head: 24, n_head_kv: 8, head_dim: 128, n_ff: 8192 }, nv), 512],
            // synthetic: heads narrower than n_embd / n_head (attention.key_length), 4 KV heads, another FFN width
            ["llama-s12", (nv) => llama({ n_layer: 12, n_embd: 2560, n_head: 20, n_head_kv: 4, head_dim: 96, n_ff: 6912 }, nv), 512],
            // synthetic: 3 KV heads, 160-wide heads, a vocabulary of 1,024 (the unrotated graph's shapes vary n_vocab too)
            ["llama-s20", (nv) => llama({ n_layer: 20, n_embd: 1536, n_head: 12, n_head_kv: 3, head_dim: 160, n_ff: 5120 }, nv), 1024],
            // synthetic: 2 KV heads of 128 (11 queries each): the rotated-cache graph (heads a multiple of 64) at
            // another GQA ratio than the real shapes' 8 KV heads
            ["llama-s18", (nv) => llama({ n_layer: 18, n_embd: 2816, n_head: 22, n_head_kv: 2, head_dim: 128, n_ff: 7680 }, nv), 512],
            // synthetic: 224-wide heads (a multiple of q8_0's 32-value block, not of 64), 3 KV heads: a third shape of
            // the unrotated graph
            ["llama-s10", (nv) => llama({ n_layer: 10, n_embd: 1792, n_head: 6, n_head_kv: 3, head_dim: 224, n_ff: 4608 }, nv), 512],
            // synthetic: the rotated-cache graph (heads a multiple of 64) with queries wider than n_embd (40 x 128 =
            // 5120 > 3072) and narrower (16 x 128 = 2048 < 4096): on every shape above that rotates, n_head x head_dim
            // equals n_embd, so a width of either fitted as n_embd (found: syn-llama-qbig q8_0, 3 MiB under)
            ["llama-r14", (nv) => llama({ n_layer: 14, n_embd: 3072, n_head: 40, n_head_kv: 8, head_dim: 128, n_ff: 8192 }, nv), 512],
            ["llama-r6", (nv) => llama({ n_layer: 6, n_embd: 4096, n_head: 16, n_head_kv: 4, head_dim: 128, n_ff: 11008 }, nv), 512],
        ],
        check: [
            // Llama-3.1-70B (meta-llama/Llama-3.1-70B config.json): 80 layers, 8192 wide, 64 heads, 28672 FFN
            ["llama-3.1-70b", (nv) => llama({ n_layer: 80, n_embd: 8192, n_head: 64, n_head_kv: 8, head_dim: 128, n_ff: 28672 }, nv), 512],
            // synthetic: 24 layers, 2304 wide, 18 x 128 heads, 6 KV heads, another vocabulary
            ["llama-s24", (nv) => llama({ n_layer: 24, n_embd: 2304, n_head: 18, n_head_kv: 6, head_dim: 128, n_ff: 9216 }, nv), 32000],
            // synthetic: 96-wide heads (unrotated), 2 KV heads, another vocabulary
            ["llama-s16", (nv) => llama({ n_layer: 16, n_embd: 2048, n_head: 16, n_head_kv: 2, head_dim: 96, n_ff: 5632 }, nv), 49152],
        ],
    },
    // Qwen3 dense (qwen3: Qwen3-0.6B..32B): llama-style GQA without biases, a per-head q/k RMS norm (attn_q_norm /
    // attn_k_norm [head_dim]) before RoPE, a SiLU-gated FFN (src/models/qwen3.cpp). The suite has no qwen3 model, so
    // the real shape is Qwen3-8B (shared/configs/Qwen__Qwen3-8B.json, the one real qwen3 config kept) recorded as a
    // shape, its 151,936 vocabulary the --vocab-model file (`vocab`). The siblings are qwen3Config() with Qwen3-8B's
    // dimensions changed: 4-8 layers, n_embd 1024-2048, 10-16 heads 64/128 wide with queries wider than (0.6B's 16 x 128
    // over 1,024), narrower than and as wide as n_embd, GQA ratios 2-6, FFN 3,072-5,632. All recorded shapes have an output
    // matrix: a tied head (Qwen3-0.6B, 1.7B and 4B tie) has no output.weight leaf in the graph, llama.cpp's
    // TENSOR_DUPLICATED token_embd stands in, and kvfit's replay reads it so (graph_replay.cpp; held out: qwen3-s7).
    // Every head width is a multiple of 64, as every published Qwen3's 128 (a quantized cache rotates on every shape:
    // the variants with a rotated K/V are the ones recorded); a 96-wide head is not replayed.
    qwen3: {
        arch: "qwen3",
        base: null,
        vocab: ["qwen3-8b", 151936],
        record: [
            // synthetic, fitted on the full design of contexts (graph2.py: the first shape): Qwen3-0.6B's widths (1,024
            // wide, 16 x 128 heads: queries twice n_embd), 4 KV heads, FFN 3,072, 8 layers
            ["qwen3-s8", q3({ num_hidden_layers: 8, hidden_size: 1024, num_attention_heads: 16, num_key_value_heads: 4,
                head_dim: 128, intermediate_size: 3072 }), 1024],
            // Qwen3-8B: 36 layers, 4,096 wide, 32 x 128 heads, 8 KV heads, FFN 12,288 (its 151,936 vocabulary: `vocab`)
            ["qwen3-8b", q3({}), 512],
            // synthetic: 6 layers, 1,536 wide, 12 x 64 heads (queries narrower than n_embd), 2 KV heads (6 queries each),
            // FFN 4,096
            ["qwen3-s6", q3({ num_hidden_layers: 6, hidden_size: 1536, num_attention_heads: 12, num_key_value_heads: 2,
                head_dim: 64, intermediate_size: 4096 }), 1024],
            // synthetic: 5 layers, 2,048 wide, 16 x 128 heads (queries as wide as n_embd), 8 KV heads (2 queries each),
            // FFN 5,632
            ["qwen3-s5", q3({ num_hidden_layers: 5, hidden_size: 2048, num_attention_heads: 16, num_key_value_heads: 8,
                head_dim: 128, intermediate_size: 5632 }), 1024],
            // synthetic: 4 layers, 1,280 wide, 20 x 64 heads, 5 KV heads, FFN 3,456
            ["qwen3-s4", q3({ num_hidden_layers: 4, hidden_size: 1280, num_attention_heads: 20, num_key_value_heads: 5,
                head_dim: 64, intermediate_size: 3456 }), 1024],
        ],
        check: [
            // synthetic: 9 layers, 2,560 wide, 32 x 128 heads (queries wider than n_embd, as Qwen3-4B's), 8 KV heads,
            // FFN 9,728 (Qwen3-4B's), Llama 2's vocabulary
            ["qwen3-s9", q3({ num_hidden_layers: 9, hidden_size: 2560, num_attention_heads: 32, num_key_value_heads: 8,
                head_dim: 128, intermediate_size: 9728 }), 32000],
            // synthetic: 7 layers, 1,792 wide, 14 x 64 heads (queries half n_embd), 7 KV heads, FFN 4,864, tied
            // embeddings, another vocabulary
            ["qwen3-s7", q3({ num_hidden_layers: 7, hidden_size: 1792, num_attention_heads: 14, num_key_value_heads: 7,
                head_dim: 64, intermediate_size: 4864, tie_word_embeddings: true }), 49152],
        ],
    },
    // Qwen3 MoE (qwen3moe: Qwen3-30B-A3B, 235B-A22B, Qwen3-Coder-30B-A3B / 480B-A35B): qwen3's attention (per-head q/k
    // RMS norm) and routed experts only: a softmax router, top-8, the weights renormalised, no shared expert, no dense
    // layer (src/models/qwen3moe.cpp, llama-graph.cpp build_moe_ffn). The real shape is Qwen3-30B-A3B's published one
    // (QWEN3_30B_A3B), recorded as a shape, its 151,936 vocabulary the --vocab-model file. Every shape routes to 8
    // experts (every published Qwen3 MoE's top-k: graph_layer_sig "m8"; another count is a layer kind not recorded,
    // named), every head is 64 or 128 wide.
    qwen3moe: {
        arch: "qwen3moe",
        base: null,
        vocab: ["qwen3-30b-a3b", 151936],
        record: [
            // synthetic, fitted on the full design of contexts: 6 layers, 1,024 wide, 16 x 128 heads (queries twice
            // n_embd), 4 KV heads, 32 experts 384 wide
            ["qwen3moe-s6", q3m({ num_hidden_layers: 6, hidden_size: 1024, num_attention_heads: 16, num_key_value_heads: 4,
                num_experts: 32, moe_intermediate_size: 384 }), 1024],
            // Qwen3-30B-A3B: 48 layers, 2,048 wide, 32 x 128 heads, 4 KV heads, 128 experts 768 wide
            ["qwen3-30b-a3b", q3m({}), 512],
            // synthetic: 5 layers, 1,536 wide, 12 x 64 heads (queries half n_embd), 2 KV heads, 16 experts 512 wide
            ["qwen3moe-s5", q3m({ num_hidden_layers: 5, hidden_size: 1536, num_attention_heads: 12, num_key_value_heads: 2,
                head_dim: 64, num_experts: 16, moe_intermediate_size: 512 }), 1024],
            // synthetic: 4 layers, 2,048 wide, 16 x 128 heads (queries as wide as n_embd), 8 KV heads, 48 experts 256 wide
            ["qwen3moe-s4", q3m({ num_hidden_layers: 4, hidden_size: 2048, num_attention_heads: 16, num_key_value_heads: 8,
                num_experts: 48, moe_intermediate_size: 256 }), 1024],
            // synthetic: 3 layers, 1,280 wide, 20 x 64 heads, 5 KV heads, 24 experts 640 wide
            ["qwen3moe-s3", q3m({ num_hidden_layers: 3, hidden_size: 1280, num_attention_heads: 20, num_key_value_heads: 5,
                head_dim: 64, num_experts: 24, moe_intermediate_size: 640 }), 1024],
        ],
        check: [
            // synthetic: 7 layers, 2,560 wide, 20 x 128 heads, 4 KV heads, 64 experts 768 wide, Llama 2's vocabulary
            ["qwen3moe-s7", q3m({ num_hidden_layers: 7, hidden_size: 2560, num_attention_heads: 20, num_key_value_heads: 4,
                num_experts: 64, moe_intermediate_size: 768 }), 32000],
            // synthetic: 5 layers, 1,792 wide, 14 x 64 heads, 7 KV heads, 40 experts 448 wide, another vocabulary
            ["qwen3moe-s5b", q3m({ num_hidden_layers: 5, hidden_size: 1792, num_attention_heads: 14, num_key_value_heads: 7,
                head_dim: 64, num_experts: 40, moe_intermediate_size: 448 }), 49152],
        ],
    },
    // Qwen3-VL dense text model (qwen3vl: Qwen3-VL-2B..32B): qwen3's layers (per-head q/k RMS norm, SiLU-gated FFN) with
    // M-RoPE (ggml_rope_multi over 4 positions per token: inp_pos is 4 x T, llama_hparams::n_pos_per_embd) and deepstack:
    // the input embedding is n_embd x (1 + n_deepstack_layers) wide (the token path pads get_rows to it, ggml_pad) and
    // each of the first n_deepstack_layers layers adds its slice, a view (il + 1) x n_embd floats in, to l_out
    // (src/models/qwen3vl.cpp, llama-graph.cpp build_inp_embd). The text-only reserve graph keeps both. A deepstack
    // layer's signature carries "e" and its slice index is the layer dimension l_deepstack (graph_shape.cpp: the view's
    // offset, 4 x l_deepstack x n_embd bytes); every shape has 3 deepstack layers, as every published Qwen3-VL
    // (deepstack_visual_indexes of 3), and at least 6 layers (3 deepstack, the one after them, a plain one, the last). Base: the suite's Qwen3-VL-8B (models_hyb.mjs, 151,936 vocabulary). Heads 64/128 wide.
    qwen3vl: {
        arch: "qwen3vl",
        base: "qwen3vl-8b",
        record: [
            // synthetic, fitted on the full design of contexts (graph2.py: the first shape): 7 layers, 1,024 wide, 16 x 128
            // heads (queries twice n_embd), 4 KV heads, FFN 3,072
            ["qwen3vl-s7", q3vl({ n_layer: 7, n_embd: 1024, n_head: 16, n_head_kv: 4, head_dim: 128, n_ff: 3072 }), 1024],
            // synthetic: 6 layers, 1,536 wide, 12 x 64 heads (queries narrower than n_embd), 2 KV heads, FFN 4,096
            ["qwen3vl-s6", q3vl({ n_layer: 6, n_embd: 1536, n_head: 12, n_head_kv: 2, head_dim: 64, n_ff: 4096 }), 1024],
            // synthetic: 8 layers, 2,048 wide, 16 x 128 heads (queries as wide as n_embd), 8 KV heads, FFN 5,632
            ["qwen3vl-s8", q3vl({ n_layer: 8, n_embd: 2048, n_head: 16, n_head_kv: 8, head_dim: 128, n_ff: 5632 }), 1024],
            // synthetic: 9 layers, 1,280 wide, 20 x 64 heads, 5 KV heads, FFN 3,456
            ["qwen3vl-s9", q3vl({ n_layer: 9, n_embd: 1280, n_head: 20, n_head_kv: 5, head_dim: 64, n_ff: 3456 }), 1024],
        ],
        check: [
            // synthetic: 10 layers, 2,560 wide, 32 x 128 heads (Qwen3-VL-4B's widths), 8 KV heads, FFN 9,728, Llama 2's vocabulary
            ["qwen3vl-s10", q3vl({ n_layer: 10, n_embd: 2560, n_head: 32, n_head_kv: 8, head_dim: 128, n_ff: 9728 }), 32000],
            // synthetic: 6 layers, 1,792 wide, 14 x 64 heads (queries half n_embd), 7 KV heads, FFN 4,864, tied
            // embeddings (Qwen3-VL-2B and 4B tie), another vocabulary
            ["qwen3vl-s6b", q3vl({ n_layer: 6, n_embd: 1792, n_head: 14, n_head_kv: 7, head_dim: 64, n_ff: 4864, tied: true }), 49152],
        ],
    },
    // Qwen3-VL MoE text model (qwen3vlmoe: Qwen3-VL-30B-A3B, 235B-A22B): qwen3vl's attention, M-RoPE and deepstack with
    // qwen3moe's routed experts (softmax router, top-8, no shared expert; src/models/qwen3vlmoe.cpp). Base: the suite's
    // Qwen3-VL-30B-A3B (shared/configs/Qwen__Qwen3-VL-30B-A3B-Instruct.json). Every shape routes to 8 experts and has 3
    // deepstack layers, as every published Qwen3-VL MoE.
    qwen3vlmoe: {
        arch: "qwen3vlmoe",
        base: "qwen3vlmoe-30b",
        record: [
            // synthetic, fitted on the full design: 7 layers, 1,024 wide, 16 x 128 heads, 4 KV heads, 32 experts 384 wide
            ["qwen3vlmoe-s7", q3vlm({ n_layer: 7, n_embd: 1024, n_head: 16, n_head_kv: 4, n_expert: 32, n_ff_exp: 384 }), 1024],
            // synthetic: 6 layers, 1,536 wide, 12 x 64 heads, 2 KV heads, 16 experts 512 wide
            ["qwen3vlmoe-s6", q3vlm({ n_layer: 6, n_embd: 1536, n_head: 12, n_head_kv: 2, head_dim: 64, n_expert: 16, n_ff_exp: 512 }), 1024],
            // synthetic: 8 layers, 2,048 wide, 16 x 128 heads, 8 KV heads, 48 experts 256 wide
            ["qwen3vlmoe-s8", q3vlm({ n_layer: 8, n_embd: 2048, n_head: 16, n_head_kv: 8, n_expert: 48, n_ff_exp: 256 }), 1024],
            // synthetic: 6 layers, 1,280 wide, 20 x 64 heads, 5 KV heads, 24 experts 640 wide
            ["qwen3vlmoe-s6b", q3vlm({ n_layer: 6, n_embd: 1280, n_head: 20, n_head_kv: 5, head_dim: 64, n_expert: 24, n_ff_exp: 640 }), 1024],
        ],
        check: [
            // synthetic: 9 layers, 2,560 wide, 20 x 128 heads, 4 KV heads, 64 experts 768 wide, Llama 2's vocabulary
            ["qwen3vlmoe-s9", q3vlm({ n_layer: 9, n_embd: 2560, n_head: 20, n_head_kv: 4, n_expert: 64, n_ff_exp: 768 }), 32000],
            // synthetic: 7 layers, 1,792 wide, 14 x 64 heads, 7 KV heads, 40 experts 448 wide, another vocabulary
            ["qwen3vlmoe-s7b", q3vlm({ n_layer: 7, n_embd: 1792, n_head: 14, n_head_kv: 7, head_dim: 64, n_expert: 40, n_ff_exp: 448 }), 49152],
        ],
    },
    // Qwen3.5 dense (Gated DeltaNet layers, every fourth one gated full attention): src/models/qwen35.cpp
    qwen35: {
        arch: "qwen35",
        base: "qwen35-9b",
        record: [
            // Qwen3.5-27B (shared/configs/Qwen__Qwen3.5-27B.json): 64 layers, 48 value heads
            ["qwen35-27b", (nv) => qwen35({ n_layer: 64, n_embd: 5120, n_head: 24, n_head_kv: 4, head_dim: 256, n_ff: 17408,
                lin_k_heads: 16, lin_k_dim: 128, lin_v_heads: 48, lin_v_dim: 128 }, nv), 512],
            // synthetic: narrower DeltaNet heads (64 wide), 2 KV heads, another vocabulary
            ["qwen35-s16", (nv) => qwen35({ n_layer: 16, n_embd: 2048, n_head: 8, n_head_kv: 2, head_dim: 256, n_ff: 6144,
                lin_k_heads: 8, lin_k_dim: 64, lin_v_heads: 16, lin_v_dim: 64 }, nv), 1024],
            // synthetic: 128-wide attention heads, 12 DeltaNet key heads (llama.cpp sizes the values by the key width: D_v = D_k)
            ["qwen35-s12", (nv) => qwen35({ n_layer: 12, n_embd: 3072, n_head: 12, n_head_kv: 3, head_dim: 128, n_ff: 8192,
                lin_k_heads: 12, lin_k_dim: 128, lin_v_heads: 24, lin_v_dim: 128 }, nv), 512],
            // synthetic: 96-wide DeltaNet heads, 5 KV heads, a 3-wide convolution
            ["qwen35-s20", (nv) => qwen35({ n_layer: 20, n_embd: 2560, n_head: 20, n_head_kv: 5, head_dim: 256, n_ff: 7168,
                lin_k_heads: 10, lin_k_dim: 96, lin_v_heads: 20, lin_v_dim: 96, d_conv: 3 }, nv), 512],
            // synthetic: as many DeltaNet value heads as key heads (every shape above has two or three per key head)
            // and a width unrelated to them: on the shapes above the convolution's channels equalled n_embd x d_state /
            // 64, and a fit took it (Qwen3.5-0.8B then 33 % under)
            ["qwen35-r8", (nv) => qwen35({ n_layer: 8, n_embd: 1792, n_head: 14, n_head_kv: 2, head_dim: 128, n_ff: 4864,
                lin_k_heads: 12, lin_k_dim: 64, lin_v_heads: 12, lin_v_dim: 64 }, nv), 512],
        ],
        check: [
            // synthetic: 24 layers, one KV head, Qwen3's vocabulary
            ["qwen35-s24", (nv) => qwen35({ n_layer: 24, n_embd: 1536, n_head: 6, n_head_kv: 1, head_dim: 256, n_ff: 4608,
                lin_k_heads: 6, lin_k_dim: 128, lin_v_heads: 12, lin_v_dim: 128 }, nv), 151936],
            // synthetic: 40 layers, 128-wide heads, 28 DeltaNet value heads
            ["qwen35-s40", (nv) => qwen35({ n_layer: 40, n_embd: 3584, n_head: 28, n_head_kv: 4, head_dim: 128, n_ff: 18944,
                lin_k_heads: 14, lin_k_dim: 128, lin_v_heads: 28, lin_v_dim: 128 }, nv), 512],
        ],
    },
    // gpt-oss (sliding-window layers of 128 alternating with full attention, attention sinks, biased MoE):
    // src/models/openai-moe.cpp. Even layer counts only, as both real models (the last layer full attention), and 4
    // experts used per token, as both: the count is the number of adds in the layer's graph (graph_layer_sig's m4), so
    // a model whose last layer is a window layer or that uses another count of experts has a layer kind never
    // recorded and falls back to the estimate, named
    "gpt-oss": {
        arch: "gpt-oss",
        base: "gpt-oss-20b",
        record: [
            // gpt-oss-120b (shared/configs/openai__gpt-oss-120b.json): 36 layers, 128 experts, 4 used
            ["gpt-oss-120b", (nv) => gpt_oss({ n_layer: 36, n_embd: 2880, n_head: 64, n_head_kv: 8, head_dim: 64, n_expert: 128,
                n_expert_used: 4, n_ff_exp: 2880 }, nv), 512],
            // synthetic: a window of 256, 40 x 64 heads (2,560 wide on a 2,048 residual), 4 KV heads, 16 experts,
            // expert FFN half the width, another vocabulary
            ["gpt-oss-s12", (nv) => gpt_oss({ n_layer: 12, n_embd: 2048, n_head: 40, n_head_kv: 4, head_dim: 64, n_expert: 16,
                n_expert_used: 4, n_ff_exp: 1024, n_swa: 256 }, nv), 1024],
            // synthetic: 128-wide heads, 6 KV heads, 8 experts, an expert FFN wider than n_embd x 0.5
            ["gpt-oss-s10", (nv) => gpt_oss({ n_layer: 10, n_embd: 1536, n_head: 24, n_head_kv: 6, head_dim: 128, n_expert: 8,
                n_expert_used: 4, n_ff_exp: 1280 }, nv), 512],
            // synthetic: a window of 64, 2 KV heads, 64 experts, queries wider than n_embd (1,280)
            ["gpt-oss-s6", (nv) => gpt_oss({ n_layer: 6, n_embd: 1024, n_head: 20, n_head_kv: 2, head_dim: 64, n_expert: 64,
                n_expert_used: 4, n_ff_exp: 512, n_swa: 64 }, nv), 512],
        ],
        check: [
            // synthetic: 16 layers, a window of 512, 24 experts, Llama 2's vocabulary
            ["gpt-oss-s16", (nv) => gpt_oss({ n_layer: 16, n_embd: 2304, n_head: 48, n_head_kv: 4, head_dim: 64, n_expert: 24,
                n_expert_used: 4, n_ff_exp: 1536, n_swa: 512 }, nv), 32000],
            // synthetic: 8 layers, 128-wide heads, 2 KV heads, 12 experts, another vocabulary
            ["gpt-oss-s8", (nv) => gpt_oss({ n_layer: 8, n_embd: 1792, n_head: 16, n_head_kv: 2, head_dim: 128, n_expert: 12,
                n_expert_used: 4, n_ff_exp: 896 }, nv), 49152],
        ],
    },
    // Qwen3.5 MoE (qwen35moe: Qwen3.5/3.6-35B-A3B, 122B-A10B, 397B-A17B): the qwen35 blocks with routed experts and a
    // shared expert (src/models/qwen35moe.cpp). The base is the suite's Qwen3.5-35B-A3B (models_hyb.mjs, with its MTP
    // block, which a main context skips); /work/shared/configs holds no other qwen3_5_moe config, so the siblings are
    // synthetic: expert counts 256 / 128 / 64 / 40 / 96, expert and shared-expert widths apart from each other and
    // from n_embd, DeltaNet heads 64-128 wide with 1-4 value heads per key head. Every shape routes to 8 experts
    // (Qwen3.5-35B-A3B's and 122B-A10B's top-k): llama.cpp sums the used experts' outputs as a chain of n_expert_used
    // views and n_expert_used - 1 adds (llm_graph_context::build_moe_ffn), so the layer's topology depends on the
    // count, and the layer signature names it (graph_layer_sig: "m8"); another top-k is another layer kind, not
    // recorded, and kvfit says so and estimates
    qwen35moe: {
        arch: "qwen35moe",
        base: "qwen35moe-35b",
        record: [
            // synthetic: 12 layers, 3072 wide, 32 x 256 attention heads, 128 experts, 1,024-wide experts
            ["qwen35moe-s12", (nv) => qwen35moe({ n_layer: 12, n_embd: 3072, n_head: 32, n_head_kv: 2, head_dim: 256,
                n_expert: 128, n_expert_used: 8, n_ff_exp: 1024, n_ff_shexp: 1024,
                lin_k_heads: 16, lin_k_dim: 128, lin_v_heads: 64, lin_v_dim: 128 }, nv), 512],
            // synthetic: 64 experts, a shared expert twice as wide as the routed ones, 128-wide attention heads, 3 KV heads, 64-wide DeltaNet heads, a 3-wide convolution, another vocabulary
            ["qwen35moe-s16", (nv) => qwen35moe({ n_layer: 16, n_embd: 1536, n_head: 12, n_head_kv: 3, head_dim: 128,
                n_expert: 64, n_expert_used: 8, n_ff_exp: 384, n_ff_shexp: 768,
                lin_k_heads: 8, lin_k_dim: 64, lin_v_heads: 16, lin_v_dim: 64, d_conv: 3 }, nv), 1024],
            // synthetic: 40 experts, 96-wide DeltaNet heads, 4 KV heads, a shared expert narrower than the routed
            ["qwen35moe-s20", (nv) => qwen35moe({ n_layer: 20, n_embd: 2560, n_head: 20, n_head_kv: 4, head_dim: 256,
                n_expert: 40, n_expert_used: 8, n_ff_exp: 640, n_ff_shexp: 320,
                lin_k_heads: 10, lin_k_dim: 96, lin_v_heads: 20, lin_v_dim: 96 }, nv), 512],
            // synthetic: one DeltaNet value head per key head and a width unrelated to them (qwen35-r8's reason: the
            // convolution's channels apart from n_embd), 96 experts
            ["qwen35moe-r8", (nv) => qwen35moe({ n_layer: 8, n_embd: 1792, n_head: 14, n_head_kv: 2, head_dim: 128,
                n_expert: 96, n_expert_used: 8, n_ff_exp: 256, n_ff_shexp: 384,
                lin_k_heads: 12, lin_k_dim: 64, lin_v_heads: 12, lin_v_dim: 64 }, nv), 512],
        ],
        check: [
            // synthetic at Qwen3.5-122B-A10B's published layer count (48), expert count and top-k (256 top-8), with an
            // MTP block; 32 x 256 heads, 48 DeltaNet value heads (3 per key head), 1,024-wide experts; Qwen3's vocabulary.
            // (Value heads a multiple of 32 make ssm_alpha / ssm_beta f16 [n_embd, 32k] matrices the CPU backend moves to
            // AMX on a host that has it: the CPU rows' weights would then depend on the measuring host.)
            ["qwen35moe-s48", (nv) => qwen35moe({ n_layer: 48, n_embd: 3072, n_head: 32, n_head_kv: 2, head_dim: 256,
                n_expert: 256, n_expert_used: 8, n_ff_exp: 1024, n_ff_shexp: 1024,
                lin_k_heads: 16, lin_k_dim: 128, lin_v_heads: 48, lin_v_dim: 128 }, nv, { mtp: true }), 151936],
            // synthetic: 24 layers, one KV head, 160 experts, 3 DeltaNet value heads per key head, a shared expert 3x
            // the routed width
            ["qwen35moe-s24", (nv) => qwen35moe({ n_layer: 24, n_embd: 1024, n_head: 8, n_head_kv: 1, head_dim: 256,
                n_expert: 160, n_expert_used: 8, n_ff_exp: 320, n_ff_shexp: 960,
                lin_k_heads: 8, lin_k_dim: 128, lin_v_heads: 24, lin_v_dim: 128 }, nv), 512],
        ],
    },
    // Gemma 4 MoE (gemma4: Gemma-4-26B-A4B): window layers and wider full-attention layers (own head width and KV head
    // count, V = K), every layer routed experts top-8 beside a dense MLP (src/models/gemma4.cpp). The base is the
    // suite's Gemma-4-26B-A4B (models_swa.mjs); /work/shared/configs holds no other gemma4 config, so the siblings are
    // synthetic, each the 26B's text_config with its dimensions changed (gemma4Config): layer counts 4-30 with a full
    // layer every 3rd-6th (the last layer full, as every published Gemma 4), windows 64-2,048, head widths 64-512
    // on window and full layers apart, 1-8 KV heads, queries wider and narrower than n_embd, dense MLPs wider and
    // narrower than n_embd, 12-128 experts 192-768 wide. Without flash attention the layers whose V row
    // (n_head_kv x head_dim) is narrower than the widest are padded to it (a ggml_pad more: graph_layer_sig's "v"), so
    // the shapes cover the three regimes: window rows wider than the full layers' (26B, s12, s10: the full layers
    // padded), narrower (s8, s6, s5, s4: the window layers padded) and alike (s9, s6e, s8e: none padded). Every
    // shape routes to 8 experts (the 26B's top_k_experts: the count is the layer's number of adds, graph_layer_sig
    // "m8"), keeps attention_k_eq_v, and has no KV-shared layers, per-layer embeddings or double-wide MLP: the dense
    // 31B (no experts: "Wd" layers) and the E2B/E4B layouts have layer kinds not recorded and stay estimates, named
    gemma4: {
        arch: "gemma4",
        base: "gemma4-26b-a4b",
        record: [
            // synthetic: 12 layers (a full layer every 6th), 2304 wide, 8 x 256 heads (queries narrower than n_embd),
            // 4 KV heads, one on full layers, a window of 512, 64 experts 512 wide, another vocabulary
            ["gemma4-s12", (nv) => gemma4(gemma4Config({ num_hidden_layers: 12, full_every: 6, hidden_size: 2304,
                num_attention_heads: 8, head_dim: 256, global_head_dim: 512, num_key_value_heads: 4,
                num_global_key_value_heads: 1, intermediate_size: 1536, num_experts: 64, moe_intermediate_size: 512,
                sliding_window: 512 }), nv), 1024],
            // synthetic: 10 layers (a full layer every 5th), 12 x 128 heads (256 on full layers), 6 KV heads, 2 on full
            // layers, a dense MLP wider than n_embd, a window of 256, 32 experts
            ["gemma4-s10", (nv) => gemma4(gemma4Config({ num_hidden_layers: 10, full_every: 5, hidden_size: 1792,
                num_attention_heads: 12, head_dim: 128, global_head_dim: 256, num_key_value_heads: 6,
                num_global_key_value_heads: 2, intermediate_size: 2048, num_experts: 32, moe_intermediate_size: 384,
                sliding_window: 256 }), nv), 512],
            // synthetic: 8 layers (a full layer every 4th), 20 heads of 192 on window layers and 256 on full layers
            // (not twice as wide), 2 KV heads on window layers and 4 on full layers, a window of 128, 48 experts 640 wide
            ["gemma4-s8", (nv) => gemma4(gemma4Config({ num_hidden_layers: 8, full_every: 4, hidden_size: 2560,
                num_attention_heads: 20, head_dim: 192, global_head_dim: 256, num_key_value_heads: 2,
                num_global_key_value_heads: 4, intermediate_size: 1024, num_experts: 48, moe_intermediate_size: 640,
                sliding_window: 128 }), nv), 512],
            // synthetic: 6 layers (a full layer every 3rd), 12 x 128 heads (256 on full layers), 4 KV heads on both
            // (window V rows 512 under the full layers' 1,024), a window of 64, 16 experts 256 wide
            ["gemma4-s6", (nv) => gemma4(gemma4Config({ num_hidden_layers: 6, full_every: 3, hidden_size: 1536,
                num_attention_heads: 12, head_dim: 128, global_head_dim: 256, num_key_value_heads: 4,
                num_global_key_value_heads: 4, intermediate_size: 1280, num_experts: 16, moe_intermediate_size: 256,
                sliding_window: 64 }), nv), 512],
            // synthetic: 5 layers (one full layer, the last), 10 x 64 heads (512 on the full layer: queries wider than
            // n_embd there), 2 KV heads and 1 on the full layer (V rows 128 under 512), 12 experts 192 wide
            ["gemma4-s5", (nv) => gemma4(gemma4Config({ num_hidden_layers: 5, full_every: 5, hidden_size: 1280,
                num_attention_heads: 10, head_dim: 64, global_head_dim: 512, num_key_value_heads: 2,
                num_global_key_value_heads: 1, intermediate_size: 896, num_experts: 12, moe_intermediate_size: 192,
                sliding_window: 1024 }), nv), 512],
            // synthetic: 4 layers (a full layer every 2nd), 8 x 64 heads (128 on full layers), one KV head and 2 on full
            // layers (V rows 64 under 256), 10 experts 128 wide, a window of 32: a third shape with a padded window
            // layer after a full one (that layer kind's widths fitted on s8 and s6 alone gave 1,920 for gemma4-s15's
            // 4,096-wide queries, found by its held-out rows)
            ["gemma4-s4", (nv) => gemma4(gemma4Config({ num_hidden_layers: 4, full_every: 2, hidden_size: 1024,
                num_attention_heads: 8, head_dim: 64, global_head_dim: 128, num_key_value_heads: 1,
                num_global_key_value_heads: 2, intermediate_size: 768, num_experts: 10, moe_intermediate_size: 128,
                sliding_window: 32 }), nv), 512],
            // synthetic: 9 layers (a full layer every 3rd), V rows alike on every layer (4 x 128 = 2 x 256: no padding),
            // 24 experts 448 wide, a dense MLP 1.5x n_embd
            ["gemma4-s9", (nv) => gemma4(gemma4Config({ num_hidden_layers: 9, full_every: 3, hidden_size: 2048,
                num_attention_heads: 16, head_dim: 128, global_head_dim: 256, num_key_value_heads: 4,
                num_global_key_value_heads: 2, intermediate_size: 3072, num_experts: 24, moe_intermediate_size: 448,
                sliding_window: 256 }), nv), 512],
            // synthetic: 6 layers (a full layer every 3rd), V rows alike (4 x 128 = 1 x 512), 16 x 128 heads (512 on full
            // layers), 20 experts 320 wide, a window of 128
            ["gemma4-s6e", (nv) => gemma4(gemma4Config({ num_hidden_layers: 6, full_every: 3, hidden_size: 1792,
                num_attention_heads: 16, head_dim: 128, global_head_dim: 512, num_key_value_heads: 4,
                num_global_key_value_heads: 1, intermediate_size: 1024, num_experts: 20, moe_intermediate_size: 320,
                sliding_window: 128 }), nv), 512],
            // synthetic: 8 layers (a full layer every 4th), V rows alike (2 x 192 = 1 x 384), 8 x 192 heads (384 on full
            // layers), 36 experts 576 wide, a window of 512
            ["gemma4-s8e", (nv) => gemma4(gemma4Config({ num_hidden_layers: 8, full_every: 4, hidden_size: 2560,
                num_attention_heads: 8, head_dim: 192, global_head_dim: 384, num_key_value_heads: 2,
                num_global_key_value_heads: 1, intermediate_size: 1792, num_experts: 36, moe_intermediate_size: 576,
                sliding_window: 512 }), nv), 512],
        ],
        check: [
            // synthetic: 18 layers (a full layer every 6th), 3072 wide, 24 x 128 heads (256 on full layers), 8 KV heads,
            // 4 on full layers (V rows alike), a window of 2,048, 96 experts 768 wide, Llama 2's vocabulary
            ["gemma4-s18", (nv) => gemma4(gemma4Config({ num_hidden_layers: 18, full_every: 6, hidden_size: 3072,
                num_attention_heads: 24, head_dim: 128, global_head_dim: 256, num_key_value_heads: 8,
                num_global_key_value_heads: 4, intermediate_size: 4096, num_experts: 96, moe_intermediate_size: 768,
                sliding_window: 2048 }), nv), 32000],
            // synthetic: 15 layers (a full layer every 5th), 16 x 256 heads (512 on full layers), 2 KV heads on both
            // (window V rows padded without flash attention), a window of 512, 40 experts 320 wide, another vocabulary
            ["gemma4-s15", (nv) => gemma4(gemma4Config({ num_hidden_layers: 15, full_every: 5, hidden_size: 2048,
                num_attention_heads: 16, head_dim: 256, global_head_dim: 512, num_key_value_heads: 2,
                num_global_key_value_heads: 2, intermediate_size: 1280, num_experts: 40, moe_intermediate_size: 320,
                sliding_window: 512 }), nv), 49152],
        ],
    },
    // Gemma 3 (gemma3: src/models/gemma3.cpp): a window on (pattern - 1) of every `pattern` layers (the GGUF's
    // attention.sliding_window_pattern, 6 when absent: every published Gemma 3), all layers alike otherwise (q/k norm,
    // post-attention and post-FFN norms, a GELU-gated FFN, tied embeddings). The base is the suite's Gemma-3-12B
    // (models.mjs), recorded with its 262,208 vocabulary; /work/shared/configs holds no gemma3 config, so the siblings
    // are synthetic gemma3() calls. A layer's kind (graph_layer_sig) is its cache (W window, F full), the layer before
    // it and whether it is the first or the last; the shapes end on each of the three last kinds a period can leave
    // (F<W$: a layer count a multiple of the period, W<F$: one more, W<W$: the others) on at least two shapes each,
    // with periods 3, 4 and 6 (layer 1 is a window layer on every period above 2: W<W^). Heads 64-256 wide (all a
    // multiple of 64: a quantized K/V cache is rotated on every shape, so no unrotated variant is recorded), 1-8 KV
    // heads, queries narrower than, as wide as and wider than n_embd, windows 32-1,024, vocabularies 512/1,024.
    gemma3: {
        arch: "gemma3",
        base: "gemma3-12b",
        record: [
            // synthetic: 12 layers (F<W$), 1536 wide, 8 x 128 heads (queries narrower than n_embd), 2 KV heads, a window
            // of 256 (the full design of contexts: graph2.py's first shape; s9 and s7, the first of their last-layer
            // kinds, get it too: --full-design-new-kinds, without which s7's W<F$ cache views were fitted on 3 streams)
            ["gemma3-s12", (nv) => gemma3({ n_layer: 12, n_embd: 1536, n_head: 8, n_head_kv: 2, head_dim: 128, n_ff: 6144,
                n_swa: 256 }, nv), 512],
            // synthetic: 9 layers (W<W$), 4 x 256 heads (queries as wide as n_embd), one KV head (as Gemma-3-1B), a
            // window of 512, another vocabulary
            ["gemma3-s9", (nv) => gemma3({ n_layer: 9, n_embd: 1024, n_head: 4, n_head_kv: 1, head_dim: 256, n_ff: 4096,
                n_swa: 512 }, nv), 1024],
            // synthetic: 7 layers (W<F$: the last a window layer after the full one), 16 x 64 heads, 4 KV heads, a
            // window of 128
            ["gemma3-s7", (nv) => gemma3({ n_layer: 7, n_embd: 2048, n_head: 16, n_head_kv: 4, head_dim: 64, n_ff: 5632,
                n_swa: 128 }, nv), 512],
            // synthetic: period 4, 10 layers (W<W$), 10 x 192 heads (queries wider than n_embd), 5 KV heads, a window of 64
            ["gemma3-s10p4", (nv) => gemma3({ n_layer: 10, n_embd: 1280, n_head: 10, n_head_kv: 5, head_dim: 192, n_ff: 3584,
                n_swa: 64, swa_pattern: 4 }, nv), 512],
            // synthetic: period 3, 4 layers (W<F$), 6 x 128 heads, 3 KV heads, a window of 32
            ["gemma3-s4p3", (nv) => gemma3({ n_layer: 4, n_embd: 768, n_head: 6, n_head_kv: 3, head_dim: 128, n_ff: 2304,
                n_swa: 32, swa_pattern: 3 }, nv), 512],
            // synthetic: period 3, 6 layers (F<W$: a third shape of it), 12 x 64 heads, 6 KV heads, a window of 1,024
            ["gemma3-s6p3", (nv) => gemma3({ n_layer: 6, n_embd: 2560, n_head: 12, n_head_kv: 6, head_dim: 64, n_ff: 7168,
                n_swa: 1024, swa_pattern: 3 }, nv), 512],
        ],
        check: [
            // Gemma-3-1B-like (google/gemma-3-1b-pt: 26 layers, 1152 wide, 4 x 256 heads, one KV head, FFN 6,912, a
            // window of 512): its 26 layers end W<W$; Llama 2's vocabulary for its 262,144 (the live check's time)
            ["gemma3-1b", (nv) => gemma3({ n_layer: 26, n_embd: 1152, n_head: 4, n_head_kv: 1, head_dim: 256, n_ff: 6912,
                n_swa: 512 }, nv), 32000],
            // Gemma-3-27B cut short (google/gemma-3-27b-pt: 5376 wide, 32 x 128 heads, 16 KV heads, FFN 21,504, a window
            // of 1,024) to 13 of its 62 layers (W<F$), another vocabulary
            ["gemma3-27b-c13", (nv) => gemma3({ n_layer: 13, n_embd: 5376, n_head: 32, n_head_kv: 16, head_dim: 128,
                n_ff: 21504, n_swa: 1024 }, nv), 49152],
        ],
    },
    // GLM-5 / GLM-5.2 (glm-dsa: src/models/glm-dsa.cpp): MLA attention (one latent cache row of kv_lora + rope per
    // token, queries absorbed through attn_k_b), a DSA lightning indexer choosing each query's top-k cells, routed
    // experts top-8 with a shared expert, leading dense layers, a NextN block (loaded, skipped: not in the graph). The
    // base is the suite's GLM-5 with GLM-5.2's indexer types (glm-5-idxtypes: the layer pattern the GLM-5.2 logs ran,
    // tests/data/gpu_logs), recorded beside the synthetic shapes below (generate.mjs writes it; graph2.py gives the full
    // design of contexts to glm-dsa-s18, 18 layers, and to the first shape of each new layer kind, not to its 78
    // layers); /work/shared/configs holds no other glm_moe_dsa config, so the siblings are synthetic glmDsa() calls
    // with GLM-5's dimensions changed. Two layer patterns: GLM-5.2's indexer types (layers 0, 1 and every 4th from 2
    // score their own top-k, the 3 between reuse it: graph_layer_sig's "k3" and "t1".."t3"), with 3 leading dense
    // layers and a layer count of 2 + 4k (the last layer the third of a shared run, as GLM-5.2's 78), and every layer
    // its own indexer (GLM-5's published config: no indexer_types), with 3-5 leading dense layers. Indexer heads held
    // at what ggml-cuda's fused lightning indexer takes (lightning-indexer.cu ggml_cuda_lightning_indexer_supported:
    // 128 wide, 32 or 64 of them), so the graph a CUDA build runs is the CPU build's (fused_lid: llama-context.cpp
    // resolves it from the device's support): another indexer width is another graph, not recorded (the signature's
    // "I128"). Every shape routes to 8 experts (graph_layer_sig "m8"); latent rows (kv_lora + rope) a multiple of 64,
    // as every published MLA model's, so quantized caches rotate on every shape. The top-k over the cells,
    // min(top_k, cells), is fitted from the full design's 1,024- and 1,536-token contexts (--extra-points).
    "glm-dsa": {
        arch: "glm-dsa",
        base: "glm-5-idxtypes",
        record: [
            // synthetic, GLM-5.2 indexer types, fitted on the full design of contexts (graph2.py: the first shape): 18
            // layers, 1280 wide, 12 x (96 + 32) heads, kv LoRA 480 (latent row 512), V 96 wide, GLM-5's top-2,048
            // (more than the cells of the design's 1,024 and 1,536 contexts: min(top_k, cells) both ways), 32 experts
            // 384 wide, queries (1,536) wider than n_embd
            ["glm-dsa-s18", (nv) => glmDsa({ idx_types: "glm52", n_layer: 18, n_embd: 1280, n_ff: 3584, n_head: 12,
                q_lora: 512, kv_lora: 480, nope: 96, rope: 32, v: 96, n_expert: 32, n_ff_exp: 384,
                indexer: { n_head: 64, top_k: 2048 } }, nv), 512],
            // synthetic, GLM-5.2 indexer types: 10 layers, 2048 wide, 16 x (128 + 64) query heads, q LoRA 768, kv
            // LoRA 256 (latent row 320), V heads 128, 64 indexer heads, top-512, 64 experts 512 wide, another vocabulary
            ["glm-dsa-s10", (nv) => glmDsa({ idx_types: "glm52", n_layer: 10, n_embd: 2048, n_ff: 5120, n_head: 16,
                q_lora: 768, kv_lora: 256, nope: 128, rope: 64, v: 128, n_expert: 64, n_ff_exp: 512,
                indexer: { n_head: 64, top_k: 512 } }, nv), 1024],
            // synthetic, GLM-5.2 indexer types: 14 layers, 24 x (64 + 128) heads (rope as wide as the indexer's), kv
            // LoRA 320 (latent row 448), V heads 192, top-8,192 (more than a 4,096 context's cells: min(top_k, cells)
            // takes the cells), 48 experts 768 wide, 2 shared experts
            ["glm-dsa-s14", (nv) => glmDsa({ idx_types: "glm52", n_layer: 14, n_embd: 3072, n_ff: 8192, n_head: 24,
                q_lora: 1024, kv_lora: 320, nope: 64, rope: 128, v: 192, n_expert: 48, n_ff_exp: 768, n_shared: 2,
                indexer: { n_head: 32, top_k: 8192 } }, nv), 512],
            // synthetic, every layer its own indexer: 8 layers, 3 leading dense, 1792 wide, 14 x (128 + 64) heads, kv
            // LoRA 384 (latent row 448), top-1,792 (over the cells of the full design's 1,024 and 1,536 contexts, two
            // points of min(top_k, cells) taking the cells; the first shape of these layer kinds, so fitted on the full
            // design: graph2.py --full-design-new-kinds), 40 experts 448 wide
            ["glm-dsa-f8", (nv) => glmDsa({ n_layer: 8, n_dense_lead: 3, n_embd: 1792, n_ff: 4608, n_head: 14,
                q_lora: 640, kv_lora: 384, nope: 128, rope: 64, v: 160, n_expert: 40, n_ff_exp: 448,
                indexer: { n_head: 32, top_k: 1792 } }, nv), 512],
            // synthetic, every layer its own indexer: 12 layers, 4 leading dense, 2560 wide, 20 x (64 + 64) heads, kv
            // LoRA 448 (latent row 512), top-6,144, 96 experts 320 wide, 2 shared experts, another vocabulary
            ["glm-dsa-f12", (nv) => glmDsa({ n_layer: 12, n_dense_lead: 4, n_embd: 2560, n_ff: 6912, n_head: 20,
                q_lora: 896, kv_lora: 448, nope: 64, rope: 64, v: 128, n_expert: 96, n_ff_exp: 320, n_shared: 2,
                indexer: { n_head: 64, top_k: 6144 } }, nv), 1024],
            // synthetic, every layer its own indexer: 7 layers, 3 leading dense, 1536 wide, 8 x (192 + 128) heads, kv
            // LoRA 256 (latent row 384), top-384, 24 experts 640 wide
            ["glm-dsa-f7", (nv) => glmDsa({ n_layer: 7, n_dense_lead: 3, n_embd: 1536, n_ff: 4096, n_head: 8,
                q_lora: 384, kv_lora: 256, nope: 192, rope: 128, v: 256, n_expert: 24, n_ff_exp: 640,
                indexer: { n_head: 32, top_k: 384 } }, nv), 512],
            // synthetic, every layer its own indexer: 10 layers, 5 leading dense, 2816 wide, 28 x (96 + 64) heads, kv
            // LoRA 384 (latent row 448), V 64 wide, top-1,024, 72 experts 256 wide, a 1,024 vocabulary: a fourth
            // shape of the routed layer kinds (with three, GLM-5's 64 x (192 + 64) queries were fitted as a single
            // product that does not hold for it: the held-out GLM-5 fell back to its format-1 graph)
            ["glm-dsa-f10", (nv) => glmDsa({ n_layer: 10, n_dense_lead: 5, n_embd: 2816, n_ff: 7168, n_head: 28,
                q_lora: 1280, kv_lora: 384, nope: 96, rope: 64, v: 64, n_expert: 72, n_ff_exp: 256,
                indexer: { n_head: 64, top_k: 1024 } }, nv), 1024],
        ],
        check: [
            // GLM-5 (shared/configs/zai-org__GLM-5.json, every layer its own indexer) is held out too, through the suite
            // grid's own rows (glm-5_v512: 27 simulated-CUDA rows per release in measured/cuda-<release>.jsonl, compared
            // on every CI run); it is not written here at its 154,880 vocabulary, whose rows were never recorded
            // synthetic, GLM-5.2 indexer types: 22 layers, 4096 wide, 32 x (192 + 64) heads, kv LoRA 512 (GLM-5's
            // latent row, 576), V 256, 32 indexer heads, top-2,048, 128 experts 1,024 wide, Llama 2's vocabulary
            ["glm-dsa-s22", (nv) => glmDsa({ idx_types: "glm52", n_layer: 22, n_embd: 4096, n_ff: 10240, n_head: 32,
                q_lora: 1536, kv_lora: 512, nope: 192, rope: 64, v: 256, n_expert: 128, n_ff_exp: 1024,
                indexer: { n_head: 32, top_k: 2048 } }, nv), 32000],
            // synthetic, every layer its own indexer: 9 layers, 3 leading dense, 2304 wide, 18 x (128 + 32) heads, kv
            // LoRA 288 (latent row 320), V 112, top-3,072, 64 experts 576 wide, 2 shared experts, another vocabulary
            ["glm-dsa-f9", (nv) => glmDsa({ n_layer: 9, n_dense_lead: 3, n_embd: 2304, n_ff: 6144, n_head: 18,
                q_lora: 576, kv_lora: 288, nope: 128, rope: 32, v: 112, n_expert: 64, n_ff_exp: 576, n_shared: 2,
                indexer: { n_head: 64, top_k: 3072 } }, nv), 49152],
        ],
    },
    // MiniMax-M2.x (minimax-m2: MiniMax-M2 / M2.1 / M2.5): full-attention GQA layers with a q/k RMS norm over all
    // heads (attn_q_norm n_head x head_dim, attn_k_norm n_head_kv x head_dim), partial rotary (rotary_dim of head_dim),
    // routed experts top-8 with a sigmoid router and its bias, no shared expert, no dense layer (src/models/minimax-m2.cpp).
    // The base is the suite's MiniMax-M2.5 (models_swa.mjs, 62 layers, 256 experts), recorded beside the synthetic
    // shapes; graph2.py gives the full design of contexts to the first shape below, not to the 62 layers. Its real
    // 200,064 vocabulary is checked through the suite grid's committed rows (minimax-m2.5_v200064, measured/cuda-*.jsonl).
    // /work/shared/configs holds no other minimax_m2 config, so the siblings are minimaxM2Config() with M2.5's
    // dimensions changed: 4-10 layers, n_embd 1024-2560, 8-28 heads 64-256 wide (queries narrower than, as wide as and
    // wider than n_embd), 1-7 KV heads, rotary 32-128 of the head, 16-256 experts 256-1,536 wide. Every shape routes
    // to 8 experts (M2.5's top-k: graph_layer_sig "m8"), and every head width is a multiple of 64, as every published
    // MiniMax-M2's 128 (a quantized cache rotates on every shape: the variants with a rotated K/V are the ones recorded)
    "minimax-m2": {
        arch: "minimax-m2",
        base: "minimax-m2.5",
        record: [
            // synthetic, fitted on the full design of contexts (graph2.py: the first shape): 8 layers, 1536 wide,
            // 16 x 128 heads (queries 2,048 wider than n_embd, as M2.5's 6,144 over 3,072), 4 KV heads, rotary 64,
            // 32 experts 512 wide, a 1,024 vocabulary
            ["minimax-m2-s8", mm2({ num_hidden_layers: 8, hidden_size: 1536,
                num_attention_heads: 16, num_key_value_heads: 4, head_dim: 128, rotary_dim: 64, num_local_experts: 32,
                intermediate_size: 512 }), 1024],
            // synthetic: 6 layers, 1024 wide, 12 x 64 heads (queries narrower than n_embd), 2 KV heads, rotary 32,
            // 16 experts 384 wide
            ["minimax-m2-s6", mm2({ num_hidden_layers: 6, hidden_size: 1024,
                num_attention_heads: 12, num_key_value_heads: 2, head_dim: 64, rotary_dim: 32, num_local_experts: 16,
                intermediate_size: 384 }), 512],
            // synthetic: 5 layers, 2048 wide, 8 x 256 heads (queries as wide as n_embd), one KV head, rotary 128 (half
            // the head, as M2.5's 64 of 128), 48 experts 256 wide
            ["minimax-m2-s5", mm2({ num_hidden_layers: 5, hidden_size: 2048,
                num_attention_heads: 8, num_key_value_heads: 1, head_dim: 256, rotary_dim: 128, num_local_experts: 48,
                intermediate_size: 256 }), 512],
            // synthetic: 4 layers, 1280 wide, 20 x 128 heads, 5 KV heads, rotary 96, 24 experts 768 wide (wider than
            // n_embd / 2), a 1,024 vocabulary. The expert width is not 32 x n_head: on the four shapes above it is,
            // and the first fit took the experts' width for 32 x l_n_head (both held-out shapes would have been off)
            ["minimax-m2-s4", mm2({ num_hidden_layers: 4, hidden_size: 1280,
                num_attention_heads: 20, num_key_value_heads: 5, head_dim: 128, rotary_dim: 96, num_local_experts: 24,
                intermediate_size: 768 }), 1024],
        ],
        check: [
            // MiniMax-M2.5 at its real 200,064 vocabulary is held out through the suite grid's committed rows
            // (minimax-m2.5_v200064, measured/cuda-<release>.jsonl); not written here (a 200,064-token vocabulary)
            // synthetic: 9 layers, 2560 wide, 20 x 128 heads, 4 KV heads, rotary 64, 64 experts 768 wide, Llama 2's
            // vocabulary
            ["minimax-m2-s9", mm2({ num_hidden_layers: 9, hidden_size: 2560,
                num_attention_heads: 20, num_key_value_heads: 4, head_dim: 128, rotary_dim: 64, num_local_experts: 64,
                intermediate_size: 768 }), 32000],
            // synthetic: 7 layers, 1792 wide, 28 x 64 heads, 7 KV heads, rotary 32, 40 experts 448 wide, another vocabulary
            ["minimax-m2-s7", mm2({ num_hidden_layers: 7, hidden_size: 1792,
                num_attention_heads: 28, num_key_value_heads: 7, head_dim: 64, rotary_dim: 32, num_local_experts: 40,
                intermediate_size: 448 }), 49152],
        ],
    },
    // DeepSeek-V3 / R1, Kimi-K2.x (deepseek2: src/models/deepseek2.cpp): MLA attention (one latent cache row of kv_lora
    // + rope per token, queries absorbed through attn_k_b), queries through a q LoRA, routed experts top-8 with shared
    // experts, leading dense layers, a sigmoid router with a score-correction bias (noaux_tc). The base is the suite's
    // Kimi-K2.5 (61 layers, 384 experts in one group, 1 dense layer; generate.mjs writes it, at 512 tokens and at its
    // 163,840, which graph2.py takes as --vocab-model), recorded beside the shapes below; the siblings are synthetic deepseek2() calls with
    // its dimensions changed, in two router layouts that are two layer kinds (graph_layer_sig "m8f2" and "m8gf2"):
    // ungrouped routing (Kimi-K2's n_group 1) and group-limited routing (DeepSeek-V3's 8 groups of which 4 are used:
    // build_moe_ffn's n_expert_groups > 1 branch), with 1-4 leading dense layers. Every shape routes to 8 experts
    // ("m8") by sigmoid ("f2"); a softmax router (DeepSeek-V2/V2.5, "f1") or another top-k is a kind not recorded.
    // Latent rows (kv_lora + rope) a multiple of 64, as every published MLA model's, so quantized caches rotate on
    // every shape. No layer count of 26 or 27 (llama.cpp's "lite" deepseek2: no q LoRA). graph2.py gives the full
    // design to ds2-k12 and to ds2-g9, the first shape of the grouped kinds (--full-design-new-kinds).
    deepseek2: {
        arch: "deepseek2",
        base: "kimi-k2.5",
        record: [
            // synthetic, ungrouped: 12 layers, 1 dense, 1280 wide, 12 x (96 + 64) heads, q LoRA 512, kv LoRA 448
            // (latent row 512), V 96, 32 experts 384 wide, 1 shared
            ["ds2-k12", (nv) => deepseek2({ n_layer: 12, n_embd: 1280, n_ff: 3584, n_head: 12, q_lora: 512, kv_lora: 448,
                nope: 96, rope: 64, v: 96, n_expert: 32, n_ff_exp: 384 }, nv), 512],
            // synthetic, ungrouped: 8 layers, 2048 wide, 16 x (128 + 64) heads, q LoRA 768, kv LoRA 256 (latent row
            // 320), 64 experts 512 wide, 2 shared, another vocabulary
            ["ds2-k8", (nv) => deepseek2({ n_layer: 8, n_embd: 2048, n_ff: 5120, n_head: 16, q_lora: 768, kv_lora: 256,
                nope: 128, rope: 64, v: 128, n_expert: 64, n_ff_exp: 512, n_shared: 2 }, nv), 1024],
            // synthetic, ungrouped: 6 layers, 1536 wide, 24 x (64 + 128) heads, kv LoRA 320 (latent row 448), V 192,
            // 48 experts 768 wide
            ["ds2-k6", (nv) => deepseek2({ n_layer: 6, n_embd: 1536, n_ff: 4096, n_head: 24, q_lora: 1024, kv_lora: 320,
                nope: 64, rope: 128, v: 192, n_expert: 48, n_ff_exp: 768 }, nv), 512],
            // synthetic, grouped: 9 layers, 3 dense, 2560 wide, 20 x (64 + 64) heads, kv LoRA 448 (latent row 512),
            // 64 experts in 8 groups, 4 used (DeepSeek-V3's), 320 wide, 2 shared
            ["ds2-g9", (nv) => deepseek2({ n_layer: 9, n_dense_lead: 3, n_embd: 2560, n_ff: 6912, n_head: 20, q_lora: 896,
                kv_lora: 448, nope: 64, rope: 64, v: 128, n_expert: 64, n_group: 8, topk_group: 4, n_ff_exp: 320,
                n_shared: 2 }, nv), 512],
            // synthetic, grouped: 7 layers, 4 dense, 1792 wide, 14 x (128 + 64) heads, kv LoRA 384 (latent row 448),
            // V 160, 40 experts in 4 groups, 2 used, another vocabulary
            ["ds2-g7", (nv) => deepseek2({ n_layer: 7, n_dense_lead: 4, n_embd: 1792, n_ff: 4608, n_head: 14, q_lora: 640,
                kv_lora: 384, nope: 128, rope: 64, v: 160, n_expert: 40, n_group: 4, topk_group: 2, n_ff_exp: 448 }, nv), 1024],
            // synthetic, grouped: 10 layers, 3 dense, 3072 wide, 28 x (192 + 128) heads, q LoRA 384 (narrower than
            // the kv LoRA's latent row 384), V 256, 96 experts in 6 groups, 3 used
            ["ds2-g10", (nv) => deepseek2({ n_layer: 10, n_dense_lead: 3, n_embd: 3072, n_ff: 8192, n_head: 28, q_lora: 384,
                kv_lora: 256, nope: 192, rope: 128, v: 256, n_expert: 96, n_group: 6, topk_group: 3, n_ff_exp: 640 }, nv), 512],
            // synthetic, grouped: 8 layers, 2 dense, 1024 wide, 8 x (96 + 64) heads, kv LoRA 192 (latent row 256), V
            // 64, 24 experts in 2 groups, 1 used, 2 shared
            ["ds2-g8", (nv) => deepseek2({ n_layer: 8, n_dense_lead: 2, n_embd: 1024, n_ff: 2816, n_head: 8, q_lora: 320,
                kv_lora: 192, nope: 96, rope: 64, v: 64, n_expert: 24, n_group: 2, topk_group: 1, n_ff_exp: 256,
                n_shared: 2 }, nv), 512],
        ],
        check: [
            // DeepSeek-V3 in miniature (shared/configs/deepseek-ai__DeepSeek-V3.json with 7 layers for 61): 3 dense,
            // 7168 wide, 128 x (128 + 64) heads, q LoRA 1536, kv LoRA 512 (latent row 576), 256 experts in 8 groups,
            // 4 used, 2048 wide, Llama 2's vocabulary
            ["deepseek-v3-m7", (nv) => deepseek2({ ...DSV3, n_layer: 7 }, nv), 32000],
            // synthetic, ungrouped: 9 layers, 1 dense, 2304 wide, 18 x (128 + 32) heads, q LoRA 576, kv LoRA 288
            // (latent row 320), V 112, 56 experts 576 wide, 2 shared, another vocabulary
            ["ds2-k9", (nv) => deepseek2({ n_layer: 9, n_embd: 2304, n_ff: 6144, n_head: 18, q_lora: 576, kv_lora: 288,
                nope: 128, rope: 32, v: 112, n_expert: 56, n_ff_exp: 576, n_shared: 2 }, nv), 49152],
        ],
    },
    // DeepSeek-V4 (deepseek4: src/models/deepseek4.cpp): every layer a one-head window attention (MQA, attn_sinks) with
    // hyper-connections (4 copies of the residual stream, the fused DSV4_HC_PRE/COMB/POST ops, which the CPU and CUDA
    // builds both take: ggml-cpu.c and ggml-cuda.cu supports_op), and by its compress ratio (compress_ratios[il]) a
    // compressed cache: ratio 4 (CSA) with a lightning indexer choosing the top-k compressed cells, ratio 128 (HCA)
    // without one, ratio 0 neither; the first hash_layer_count layers route by a token-id table (ffn_gate_tid2eid)
    // instead of the gate. The base is the suite's DeepSeek-V4-Flash (43 layers: 0, 0, then 4 and 128 alternating, the
    // first 3 hash-routed), recorded beside the synthetic shapes below, which keep its layer pattern (odd layer counts:
    // the last layer a ratio-4 one, as the 43-layer model's and the 39-layer cut's) and change every width.
    // No head 128 wide: llama.cpp always rotates K where the head is as wide as the lightning indexer's
    // (llama-kv-cache.cpp:326-331, "always create Hadamard rotation tensors for DeepSeek lightning indexers"), another
    // graph at f16 too, which kvfit names as not recorded (graph_replay.cpp instantiate_graph).
    // Held at what the graph's topology or the CUDA build needs, so the graph a CUDA build runs is the CPU build's:
    // 4 hyper-connections (ggml-cuda's dsv4-hc.cu kernels are written for DSV4_HC = 4; a signature's "hc4"), 128-wide
    // indexer heads, 32 or 64 of them (ggml_cuda_lightning_indexer_supported; "I128"), 6 experts used ("m6": the used
    // experts' outputs are summed one add each). min(top_k, compressed cells) from the design's 1,024- and 1,536-token
    // contexts (--extra-points).
    deepseek4: {
        arch: "deepseek4",
        base: "deepseek-v4-flash",
        record: [
            // synthetic, fitted on the full design of contexts (graph2.py: the first shape): 7 layers, 1024 wide, 16 x 256
            // heads (rope 64), q LoRA 512, 4 output groups of LoRA 256, 64 indexer heads, top-512, window 128, 32
            // experts 256 wide
            ["dsv4-s7", (nv) => deepseek4(dsv4Shape({ n_layer: 7, n_embd: 1024, n_head: 16, head_dim: 256, rope: 64,
                q_lora: 512, o_groups: 4, o_lora: 256, n_expert: 32, n_ff_exp: 256, idx_heads: 64, idx_topk: 512,
                swa: 128 }), nv), 1024],
            // synthetic: 9 layers, 1536 wide, 24 x 384 heads (rope 32), q LoRA 768, 8 output groups of 384, 32 indexer
            // heads, top-256, window 64, 48 experts 384 wide, 2 shared experts
            ["dsv4-s9", (nv) => deepseek4(dsv4Shape({ n_layer: 9, n_embd: 1536, n_head: 24, head_dim: 384, rope: 32,
                q_lora: 768, o_groups: 8, o_lora: 384, n_expert: 48, n_ff_exp: 384, n_shared: 2, idx_heads: 32,
                idx_topk: 256, swa: 64 }), nv), 1024],
            // synthetic: 5 layers, 2048 wide, 8 x 512 heads (DeepSeek-V4-Flash's head width, rope 64), q LoRA 384, 2
            // output groups of 512, 64 indexer heads, top-1,024 (more than the cells of the design's small contexts),
            // window 256, 24 experts 512 wide, another vocabulary
            ["dsv4-s5", (nv) => deepseek4(dsv4Shape({ n_layer: 5, n_embd: 2048, n_head: 8, head_dim: 512, rope: 64,
                q_lora: 384, o_groups: 2, o_lora: 512, n_expert: 24, n_ff_exp: 512, idx_heads: 64, idx_topk: 1024,
                swa: 256 }), nv), 2048],
            // synthetic: 11 layers, 1280 wide, 20 x 192 heads (rope 128), q LoRA 640, 4 output groups of 320, 32 indexer
            // heads, top-384, window 96, 40 experts 320 wide: a fourth shape of every layer kind
            ["dsv4-s11", (nv) => deepseek4(dsv4Shape({ n_layer: 11, n_embd: 1280, n_head: 20, head_dim: 192, rope: 128,
                q_lora: 640, o_groups: 4, o_lora: 320, n_expert: 40, n_ff_exp: 320, idx_heads: 32, idx_topk: 384,
                swa: 96 }), nv), 1024],
        ],
        // The v0.5.0 template (data/graphs/deepseek4.v0.5.0.txt) is byte-exact on both held-out shapes' committed rows
        // (`held`: measured/cuda-shapes-v0.5.0.jsonl, CPU build and simulated CUDA; test_cuda_sched.cpp), which CI does
        // not measure live: the case, DeepSeek-V4-Flash's own design (shared/configs/
        // deepseek-ai__DeepSeek-V4-Flash.json) cut from 43 to 39 layers at a small vocabulary, took ~84 s for its 29
        // placements on two shared cores, over CI's ~20 s per family and release; dsv4-s13 took 16 s (a candidate
        // for `check`, not moved: only v0.5.0 has a template).
        check: [],
        held: [
            ["dsv4-flash-l39", (nv) => deepseek4({ ...DSV4_FLASH, n_layer: 39 }, nv), 1024],
            // synthetic: 13 layers, 1792 wide, 28 x 256 heads (rope 64), q LoRA 896, 7 output groups of 448, 64 indexer
            // heads, top-768, window 160, 56 experts 448 wide, another vocabulary
            ["dsv4-s13", (nv) => deepseek4(dsv4Shape({ n_layer: 13, n_embd: 1792, n_head: 28, head_dim: 256, rope: 64,
                q_lora: 896, o_groups: 7, o_lora: 448, n_expert: 56, n_ff_exp: 448, idx_heads: 64, idx_topk: 768,
                swa: 160 }), nv), 32000],
        ],
    },
};

/// A DeepSeek-V4 shape: DeepSeek-V4-Flash's hyper-parameters with `o` over them, and its layer pattern at o.n_layer
/// layers (compress ratios 0, 0, then 4 and 128 alternating; the published list's trailing 0 is the MTP layer's).
function dsv4Shape(o) {
    const n = o.n_layer;
    const ratios = [...Array(n).keys()].map((il) => (il < 2 ? 0 : (il - 2) % 2 === 0 ? 4 : 128));
    return { ...DSV4_FLASH, n_shared: 1, n_hash: 3, ...o, compress_ratios: [...ratios, 0] };
}

function specOf(name, build, n_vocab) {
    const b = build(n_vocab);
    return { version: 3, data: "sparse", metadata: { ...b.metadata, "general.name": `${name}-shape` }, vocab: { spm: n_vocab }, tensors: b.tensors };
}

/// Writes OUT_DIR/<id>_v<n_vocab>.gguf for one shape unless its spec is unchanged; returns the path.
export function writeShape(id, build, n_vocab, outDir, tool) {
    fs.mkdirSync(outDir, { recursive: true });
    const base = path.join(outDir, `${id}_v${n_vocab}`);
    const text = JSON.stringify(specOf(id, build, n_vocab));
    if (fs.existsSync(`${base}.gguf`) && fs.existsSync(`${base}.json`) && fs.readFileSync(`${base}.json`, "utf8") === text) return `${base}.gguf`;
    fs.writeFileSync(`${base}.json`, text);
    try {
        execFileSync(tool, [`${base}.json`, `${base}.gguf`], { stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
        fs.rmSync(`${base}.json`, { force: true });
        throw new Error(`kvfit-gguf-write ${base}.json: ${String(e.stderr ?? e.message).trim()}`);
    }
    return `${base}.gguf`;
}

/// [{family, role, id, build, n_vocab}] of the families asked for (all when none)
export function shapesOf(families) {
    const out = [];
    for (const [f, fam] of Object.entries(FAMILIES)) {
        if (families.length && !families.includes(f)) continue;
        // held: held out like check, through committed rows only (too large to measure live in CI)
        for (const role of ["record", "check", "held"]) for (const [id, build, n_vocab] of fam[role] ?? []) out.push({ family: f, role, id, build, n_vocab });
    }
    return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const args = process.argv.slice(2);
    const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
    const tool = opt("--gguf-write", defaultGgufWrite());
    if (args[0] === "--headers") {
        // what the unit tests plan from (tests/test_cuda_sched.cpp): the held-out shapes and the suite's own files
        const [, out, ...fams] = args;
        const { specOfModel } = await import("./suite.mjs");
        fs.rmSync(out, { recursive: true, force: true });
        fs.mkdirSync(out, { recursive: true });
        const write = (spec, file) => {
            const tmp = path.join(out, ".spec.json");
            fs.writeFileSync(tmp, JSON.stringify({ ...spec, data: "header_only" }));
            execFileSync(tool, [tmp, path.join(out, file)], { stdio: ["ignore", "pipe", "pipe"] });
            fs.rmSync(tmp);
            console.log(path.join(out, file));
        };
        // at the small vocabulary (a real one's token strings are megabytes): the test sets n_vocab from the row
        for (const s of shapesOf(fams).filter((x) => x.role !== "record")) write(specOf(s.id, s.build, 512), `${s.id}.gguf`);
        for (const [f, fam] of Object.entries(FAMILIES)) {
            if (fams.length && !fams.includes(f)) continue;
            if (fam.base) write(specOfModel(fam.base, 512), `${fam.base}.gguf`);
        }
    } else if (args[0] === "--list") {
        for (const s of shapesOf(args.slice(1))) console.log(`${s.family} ${s.role} ${s.id} ${s.id}_v${s.n_vocab}.gguf`);
    } else {
        // --role check|record: only the held-out (or only the fitted) shapes; tests/conformance/run.sh measures the
        // held-out ones live in CI
        const role = opt("--role", null);
        if (role !== null && role !== "check" && role !== "record" && role !== "held") { console.error(`--role: 'check', 'held' or 'record', not '${role}'`); process.exit(2); }
        const [out, ...fams] = args;
        if (!out) { console.error("usage: node shapes.mjs OUT_DIR [--gguf-write PATH] [--role check|record] [FAMILY...]"); process.exit(2); }
        for (const f of fams) if (!FAMILIES[f]) { console.error(`unknown family '${f}' (known: ${Object.keys(FAMILIES).join(", ")})`); process.exit(2); }
        for (const s of shapesOf(fams)) if (role === null || s.role === role) console.log(writeShape(s.id, s.build, s.n_vocab, out, tool));
        // a family without a suite model: its real shape at its real vocabulary too (graph2.py --vocab-model)
        if (role === null || role === "record") {
            for (const [f, fam] of Object.entries(FAMILIES)) {
                if ((fams.length && !fams.includes(f)) || !fam.vocab) continue;
                const [id, n_vocab] = fam.vocab, rec = fam.record.find((r) => r[0] === id);
                console.log(writeShape(id, rec[1], n_vocab, out, tool));
            }
        }
    }
}
