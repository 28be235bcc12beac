#!/usr/bin/env node
// Checks the measured DSA / MSA / MLA contexts (measured/<id>.<release>.jsonl) against the memory rule of
// docs/rules/llamacpp-dsa.md, computed from the GGUF keys the builder wrote (models_dsa.mjs) the way
// llama.cpp v0.5.0 reads them. Prints one line per context and exits 1 on any mismatch.
//
// usage: node check_dsa.mjs measured/*.jsonl      |      node check_dsa.mjs --params
// Per context: every cache's layers / cells / streams / K and V MiB (as logged, 2 decimals), the refusals, and
// compute = ctx_cpuRam_bytes - KV (exact bytes from the memory breakdown) against the logged compute MiB.
// Per pair of contexts that differ only in the cache type (f16 vs q8_0) and build the same graph (same node
// count): equal compute bytes, i.e. the KV rule accounts for the whole difference of ctx_cpuRam_bytes, byte for byte.
import fs from "node:fs";
import { MODELS_DSA, specOfDsa, countParams } from "./models_dsa.mjs";

const MiB = 1024 * 1024;
/// bytes of one row of n values (ggml_row_size): f32 4, f16/bf16 2, q8_0 34 per 32, q4_0 18 per 32.
export function rowSize(type, n) {
    const per32 = { f32: 128, f16: 64, bf16: 64, q8_0: 34, q4_0: 18, q4_1: 20, q5_0: 22, q5_1: 24, iq4_nl: 18 }[type];
    if (per32 == null || n % 32 !== 0) throw new Error(`row size of ${n} x ${type} unknown`);
    return (n / 32) * per32;
}
const QUANT = new Set(["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"]);

// GLM-5.2 fallback of src/models/glm-dsa.cpp (GLM_5_2_DEFAULT_INDEXER_TYPES) when n_ctx_train >= 1048576
const glm52Default = (il) => il < 2 || (il - 2) % 4 === 0;

/// The caches llama.cpp creates for this GGUF metadata (llama-model.cpp create_memory, main context):
/// [{name, layers: [il...], width_k, width_v(fa)}]; width_v is a function of flash attention (v_trans).
export function cachesOf(md) {
    const a = md["general.architecture"], k = (x) => md[`${a}.${x}`];
    const val = (x) => (x && typeof x === "object" && "value" in x ? x.value : x);
    const n_layer_all = val(k("block_count")), n_layer = n_layer_all - (val(k("nextn_predict_layers")) ?? 0);
    const head_kv = val(k("attention.head_count_kv"));
    const key_len = val(k("attention.key_length")), val_len = val(k("attention.value_length"));
    const is_mla = k("attention.key_length_mla") != null && k("attention.value_length_mla") != null;
    const trunk = [...Array(n_layer).keys()];
    const main = { name: "main", layers: trunk, width_k: key_len * head_kv, width_v: () => (is_mla ? 0 : val_len * head_kv) };
    if (a === "deepseek2" || a === "mistral4") return [{ ...main, name: "full" }];
    if (a === "deepseek32" || a === "glm-dsa") {
        let full = () => true;
        if (a === "glm-dsa") {
            const types = val(k("attention.indexer.types"));
            full = types ? (il) => !!types[il] : val(k("context_length")) < 1048576 ? () => true : glm52Default;
        }
        return [{ ...main, name: "dsa_main" },
            { name: "dsa_indexer", layers: trunk.filter(full), width_k: val(k("attention.indexer.key_length")), width_v: () => 0 }];
    }
    if (a === "minimax-m3") {
        const all = [...Array(n_layer_all).keys()], lead = val(k("leading_dense_block_count")) ?? 0;
        return [{ ...main, name: "msa_main", layers: all },
            // the indexer copy of hparams keeps is_mla() false, so it also gets a V of value_length x 1 head
            { name: "msa_indexer", layers: all.filter((il) => il >= lead), width_k: val(k("attention.indexer.key_length")), width_v: () => val_len }];
    }
    throw new Error(`no rule for ${a}`);
}

/// Context geometry (llama-context.cpp:289-305): n_ctx = pad256(n_ctx), n_ctx_seq = pad256(n_ctx / n_seq) cells
/// per stream, n_seq streams (node-llama-cpp never sets kv_unified; unified would give 1 stream of pad256(n_ctx)).
export function geometry(req) {
    const n_seq = req.n_seq ?? 1, pad = (x) => Math.ceil(x / 256) * 256;
    const n_ctx_seq = pad(Math.floor(pad(req.n_ctx) / n_seq));
    return { n_ctx_seq, n_stream: n_seq, n_ctx: n_ctx_seq * n_seq };
}

/// Predicted result: {refused: reason} or {caches: [{name, layers, cells, streams, K, V}], kv_bytes}.
export function predict(md, req) {
    const a = md["general.architecture"];
    const is_mla = md[`${a}.attention.key_length_mla`] != null;
    if (is_mla && req.type_k !== req.type_v) return { refused: "model does not support different K and V cache types" };
    if (QUANT.has(req.type_v) && !req.flash_attn) return { refused: "quantized V cache requires flash_attn" };
    const g = geometry(req);
    const caches = cachesOf(md).map((c) => {
        const wv = c.width_v(req.flash_attn);
        const per = g.n_ctx_seq * g.n_stream * c.layers.length;
        return { name: c.name, layers: c.layers.length, cells: g.n_ctx_seq, streams: g.n_stream,
            K: per * rowSize(req.type_k, c.width_k), V: wv ? per * rowSize(req.type_v, wv) : 0 };
    });
    return { ...g, caches, kv_bytes: caches.reduce((s, c) => s + c.K + c.V, 0) };
}

/// --params: parameter counts of each builder with its real vocabulary, trunk and NextN block apart.
function printParams() {
    for (const [id, m] of Object.entries(MODELS_DSA)) {
        const md = specOfDsa(id, m.n_vocab).metadata, a = md["general.architecture"];
        const n_layer = md[`${a}.block_count`] - (md[`${a}.nextn_predict_layers`] ?? 0);
        const c = countParams(m.build(m.n_vocab), n_layer);
        console.log(`${id}: trunk ${c.trunk} (${(c.trunk / 1e9).toFixed(2)} B), NextN ${c.mtp} (${(c.mtp / 1e9).toFixed(2)} B)`);
    }
}

function main() {
    if (process.argv[2] === "--params") return printParams();
    const files = process.argv.slice(2);
    let bad = 0, n = 0, pairs = 0;
    for (const f of files) {
        const lines = fs.readFileSync(f, "utf8").trim().split("\n").map(JSON.parse);
        let md = null, tag = "";
        let computeOf = new Map();
        for (const l of lines) {
            if (l.kind === "model") {
                computeOf = new Map();
                md = specOfDsa(l.id, l.n_vocab).metadata;
                tag = `${l.id} v${l.n_vocab} (${l.release.node_llama_cpp})`;
                continue;
            }
            ++n;
            const p = predict(md, l.req), errs = [];
            if (p.refused) {
                if (l.ok) errs.push(`expected refusal (${p.refused}), got a context`);
            } else if (!l.ok) {
                errs.push(`refused: ${(l.errors ?? []).join(" / ")}`);
            } else {
                if (l.n_ctx_seq !== p.n_ctx_seq || l.n_ctx !== p.n_ctx) errs.push(`n_ctx ${l.n_ctx}/${l.n_ctx_seq} != ${p.n_ctx}/${p.n_ctx_seq}`);
                if (l.kv_caches.length !== p.caches.length) errs.push(`${l.kv_caches.length} caches, expected ${p.caches.length}`);
                p.caches.forEach((c, i) => {
                    const m = l.kv_caches[i] ?? {};
                    const near = (x, y) => Math.abs(x - y / MiB) < 0.0051;
                    if (m.which !== c.name || m.layers !== c.layers || m.cells !== c.cells || m.seqs !== `${c.streams}/${c.streams}`
                        || !near(m.K_MiB, c.K) || !near(m.V_MiB, c.V))
                        errs.push(`cache ${i}: got ${m.which} ${m.layers}L ${m.cells}c ${m.seqs} K ${m.K_MiB} V ${m.V_MiB}, expected ${c.name} ${c.layers}L ${c.cells}c K ${(c.K / MiB).toFixed(2)} V ${(c.V / MiB).toFixed(2)}`);
                });
                const compute = l.ctx_cpuRam_bytes - p.kv_bytes;
                const logged = Object.values(l.compute_buffers).reduce((s, x) => s + x, 0);
                if (Math.abs(compute / MiB - logged) > 0.0051) errs.push(`compute ${compute} B (${(compute / MiB).toFixed(4)} MiB) != logged ${logged} MiB`);
                // same graph (node count) = same compute expected; a quantized K adds Hadamard rotations on some caches
                const key = JSON.stringify({ ...l.req, type_k: null, type_v: null, nodes: l.graph_nodes });
                if (computeOf.has(key)) { ++pairs; if (computeOf.get(key) !== compute) errs.push(`compute ${compute} != ${computeOf.get(key)} of the same context with other cache types`); }
                else computeOf.set(key, compute);
                l.__kv = p.kv_bytes; l.__compute = compute;
            }
            if (errs.length) ++bad;
            console.log(`${errs.length ? "FAIL" : "ok  "} ${tag} ${l.id}: ${p.refused ? "refused" : `kv ${p.kv_bytes} compute ${l.__compute}`}${errs.length ? "  " + errs.join("; ") : ""}`);
        }
    }
    console.log(`${n} contexts, ${pairs} same-context type pairs with byte-equal compute, ${bad} failed`);
    process.exit(bad ? 1 : 0);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop())) main();
