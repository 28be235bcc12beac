#!/usr/bin/env node
// Checks measured/<id>.<tag>.jsonl against the KV rule of docs/rules/llamacpp-swa.md, computed from the GGUF
// keys that models_swa.mjs writes (not from the log): cells, layers and K/V bytes of every cache, and the
// compute buffer implied by the exact context total (ctx_cpuRam_bytes - KV) against the logged MiB figure.
//
// usage: node check_swa.mjs measured/<id>.<tag>.jsonl [...]     exit 1 on any mismatch
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MODELS_SWA } from "./models_swa.mjs";

const MiB = 1024 * 1024;
const pad = (x, n) => Math.ceil(x / n) * n;
/// bytes of one row of n values (ggml_row_size): f16 2 B, q8_0 34 B per 32, q4_0 18 B per 32, f32 4 B
export function rowSize(type, n) {
    switch (type) {
    case "f32": return 4 * n;
    case "f16": case "bf16": return 2 * n;
    case "q8_0": if (n % 32) throw new Error("q8_0 row not a multiple of 32"); return (n / 32) * 34;
    case "q4_0": if (n % 32) throw new Error("q4_0 row not a multiple of 32"); return (n / 32) * 18;
    default: throw new Error(`type ${type}`);
    }
}

/// Per-layer attention layout from the GGUF keys (llama-model.cpp load_hparams + the arch's load_arch_hparams).
export function layoutFromKeys(md) {
    const arch = md["general.architecture"];
    const g = (k) => md[`${arch}.${k}`];
    const val = (v) => (v && typeof v === "object" && "value" in v ? v.value : v);
    const arr = (v, n) => (Array.isArray(val(v)) ? val(v).map(Number) : Array(n).fill(Number(val(v))));
    const n_all = val(g("block_count")), n_nextn = val(g("nextn_predict_layers")) ?? 0, n_layer = n_all - n_nextn;
    const n_head = arr(g("attention.head_count"), n_all);
    const n_head_kv = g("attention.head_count_kv") == null ? n_head : arr(g("attention.head_count_kv"), n_all);
    const hk_full = val(g("attention.key_length")), hv_full = val(g("attention.value_length"));
    const hk_swa = val(g("attention.key_length_swa")) ?? hk_full, hv_swa = val(g("attention.value_length_swa")) ?? hv_full;
    const pat = g("attention.sliding_window_pattern");
    const is_swa = pat == null ? Array(n_all).fill(false) : val(pat).map((x) => Boolean(Number(x)));
    while (is_swa.length < n_all) is_swa.push(false);          // get_arr leaves the rest 0 (dense)
    const shared = val(g("attention.shared_kv_layers")) ?? 0;
    const n_layer_kv_from_start = arch === "gemma4" ? n_all - shared : -1;
    const layers = [];
    for (let il = 0; il < n_all; ++il) {
        const hk = is_swa[il] ? hk_swa : hk_full, hv = is_swa[il] ? hv_swa : hv_full;
        layers.push({ il, swa: is_swa[il], k: hk * n_head_kv[il], v: hv * n_head_kv[il],
            has_kv: n_layer_kv_from_start < 0 || il < n_layer_kv_from_start,
            in_main: n_nextn === 0 || il < n_layer });       // create_memory: MTP layers filtered from the main context
    }
    return { arch, n_all, n_layer, n_nextn, n_swa: val(g("attention.sliding_window")) ?? 0, layers,
        v_max: Math.max(...layers.map((l) => l.v)), any_swa: is_swa.some(Boolean) };
}

/// The caches llama.cpp allocates for one context: [{which, cells, layers, K, V}] (bytes).
export function expectedKv(lay, req) {
    const n_seq = req.n_seq ?? 1, unified = req.kv_unified ?? false;
    const n_stream = unified ? 1 : n_seq;
    const n_ctx_seq = unified ? req.n_ctx : pad(Math.floor(req.n_ctx / n_seq), 256);
    const v_trans = !req.flash_attn;
    const mk = (which, cells, sel) => {
        const ls = lay.layers.filter((l) => l.has_kv && l.in_main && sel(l));
        let K = 0, V = 0;
        for (const l of ls) {
            K += rowSize(req.type_k, l.k) * cells * n_stream;
            V += rowSize(req.type_v, v_trans ? lay.v_max : l.v) * cells * n_stream;
        }
        return { which, cells, layers: ls.length, K, V };
    };
    if (!lay.any_swa) return [mk("full", n_ctx_seq, () => true)];
    const swa_cells = req.swa_full ? n_ctx_seq : pad(Math.min(n_ctx_seq, lay.n_swa * (unified ? n_seq : 1) + req.n_ubatch), 256);
    return [mk("base", n_ctx_seq, (l) => !l.swa), mk("swa", swa_cells, (l) => l.swa)];
}

function specFor(id, n_vocab) { return MODELS_SWA[id].build(n_vocab).metadata; }

export function checkFile(file) {
    const rows = fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    let bad = 0, n = 0;
    for (const r of rows) {
        if (r.kind !== "context") continue;
        const req = r.req;
        const refuse = req.type_v !== "f16" && !req.flash_attn;           // quantized V needs flash attention
        if (refuse) { if (r.ok) { bad++; console.log(`${file} ${r.id}: expected a refusal, got ok`); } n++; continue; }
        if (!r.ok) { bad++; console.log(`${file} ${r.id}: failed: ${(r.errors ?? []).join(" | ")}`); n++; continue; }
        const lay = layoutFromKeys(specFor(r.model_id, r.n_vocab_file));
        const exp = expectedKv(lay, req);
        const errs = [];
        if (exp.length !== r.kv_caches.length) errs.push(`caches ${r.kv_caches.length} != ${exp.length}`);
        let kv = 0;
        exp.forEach((e, i) => {
            const m = r.kv_caches[i] ?? {};
            kv += e.K + e.V;
            if (m.which !== e.which || m.cells !== e.cells || m.layers !== e.layers) errs.push(`${e.which}: ${m.which}/${m.cells}/${m.layers} != ${e.cells} cells ${e.layers} layers`);
            if (Math.abs(m.K_MiB - e.K / MiB) > 0.0051 || Math.abs(m.V_MiB - e.V / MiB) > 0.0051) errs.push(`${e.which}: K ${m.K_MiB} V ${m.V_MiB} != ${(e.K / MiB).toFixed(2)} ${(e.V / MiB).toFixed(2)}`);
        });
        const compute = r.ctx_cpuRam_bytes - kv;                            // exact total minus the rule's KV
        if (Math.abs(compute / MiB - r.compute_buffers.CPU) > 0.0051) errs.push(`compute ${(compute / MiB).toFixed(4)} != logged ${r.compute_buffers.CPU}`);
        // alloc mode: the 4-decimal line printed at dispose pins the KV to 0.00005 MiB (52 B)
        const c4 = r.compute_buffers_4dp?.CPU;
        if (c4 != null && Math.abs(compute / MiB - c4) > 0.000051) errs.push(`compute ${(compute / MiB).toFixed(6)} != 4dp ${c4}`);
        r._kv = kv; r._compute = compute;
        n++;
        if (errs.length) { bad++; console.log(`${file} ${r.id}: ${errs.join("; ")}`); }
    }
    console.log(`${path.basename(file)}: ${n - bad}/${n} contexts agree with the rule`);
    return bad;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    let bad = 0;
    for (const f of process.argv.slice(2)) bad += checkFile(f);
    process.exit(bad ? 1 : 0);
}
