#!/usr/bin/env node
// Checks every measured row of tests/conformance/measured/<id>.<tag>.jsonl (run_hyb.mjs) against the byte rules
// of docs/rules/llamacpp-hybrid-moe.md, and compares the two releases row by row.
//
// usage: node check_hyb.mjs            (prints one summary line per file, then the release comparison)
// A row passes when: the KV cache(s) and the recurrent state printed by llama.cpp (2 decimals of MiB) equal the
// rule; the exact context bytes (memory breakdown) minus the rule's KV + state bytes is the compute buffer
// llama.cpp printed (to 0.005 MiB); the output buffer is n_vocab x n_seq x 4 B; a quantized V cache without
// flash attention is refused.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const MiB = 1024 * 1024;
const pad = (x, n) => Math.ceil(x / n) * n;
const rowBytes = (type, n) => ({ f16: 2 * n, bf16: 2 * n, f32: 4 * n, q8_0: (n / 32) * 34, q4_0: (n / 32) * 18 })[type];

/// The rule per architecture: full-attention KV layers (K and V widths), sliding-window layers, recurrent layers.
const RULES = {
    // 8 '*' blocks, 2 KV heads x 128; 40 'M' blocks: conv (4-1) x (8192 + 2*8*128), SSM 128 x 8192; MTP block 88 none
    "nemotron3-super-120b": { full: { layers: 8, k: 256, v: 256 }, recr: { layers: 40, r: 3 * (8192 + 2 * 8 * 128), s: 128 * 8192 } },
    // 10 full layers ((il+1) % 4 == 0), 2 KV heads x 256; 30 GDN layers: conv 3 x (2*16*128 + 32*128), state 128 x 4096
    "qwen35moe-35b": { full: { layers: 10, k: 512, v: 512 }, recr: { layers: 30, r: 3 * (2 * 16 * 128 + 4096), s: 128 * 4096 } },
    "qwen3vlmoe-30b": { full: { layers: 48, k: 512, v: 512 } },
    "qwen3vl-8b": { full: { layers: 36, k: 1024, v: 1024 } },
    // 18 full + 18 sliding (window 128), 8 KV heads x 64
    "gpt-oss-120b": { full: { layers: 18, k: 512, v: 512 }, swa: { layers: 18, k: 512, v: 512, n_swa: 128 } },
};
const ruleOf = (id) => RULES[Object.keys(RULES).find((k) => id === k || id.startsWith(`${k}-`))];

/// Predicted bytes for one context request.
export function predict(rule, req, n_vocab) {
    const n_ctx = pad(req.n_ctx, 256);
    const unified = false;
    const n_stream = unified ? 1 : req.n_seq;
    const cells = unified ? n_ctx : pad(n_ctx / req.n_seq, 256);
    const kvOf = (c, cellsPerStream) => c.layers * n_stream * cellsPerStream * (rowBytes(req.type_k, c.k) + rowBytes(req.type_v, c.v));
    const out = { cells, kv_full: kvOf(rule.full, cells), kv_swa: 0, swa_cells: 0, rs: 0 };
    if (rule.swa) {
        out.swa_cells = req.swa_full ? cells : pad(Math.min(cells, rule.swa.n_swa * (unified ? req.n_seq : 1) + req.n_ubatch), 256);
        out.kv_swa = kvOf(rule.swa, out.swa_cells);
    }
    if (rule.recr) out.rs = rule.recr.layers * Math.max(1, req.n_seq) * (1 + 0 /* n_rs_seq */) * (rule.recr.r + rule.recr.s) * 4;
    out.output = n_vocab * req.n_seq * 4;
    return out;
}

const close = (a, b, tol) => Math.abs(a - b) <= tol;
// llama.cpp prints %.2f (round half to even on the exact binary value): compare within 0.005 MiB of the exact value
const r2 = (bytes) => bytes / MiB;

function checkFile(file) {
    const id = path.basename(file).replace(/\.(v0\.5\.0|5b4ebc5)\.jsonl$/, "");
    const rule = ruleOf(id);
    const rows = fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    let n_vocab = null, pass = 0, fail = 0, refused = 0, loadFail = null;
    const problems = [];
    for (const d of rows) {
        if (d.kind === "model") { n_vocab = d.n_vocab; if (!d.ok) loadFail = d.log_tail?.at(-2) ?? d.error; continue; }
        const req = d.req, p = predict(rule, req, n_vocab);
        const quantV = req.type_v !== "f16" && req.type_v !== "bf16" && req.type_v !== "f32";
        if (!req.flash_attn && quantV) { if (!d.ok) { refused++; pass++; } else { fail++; problems.push(`${d.id}: quantized V without FA accepted`); } continue; }
        if (!d.ok) { fail++; problems.push(`${d.id}: context failed`); continue; }
        const errs = [];
        const base = d.kv_caches.find((c) => c.which !== "swa"), swa = d.kv_caches.find((c) => c.which === "swa");
        if (!base || base.cells !== p.cells || base.layers !== rule.full.layers || !close(base.size_MiB, r2(p.kv_full), 0.005001)) errs.push(`kv ${JSON.stringify(base)} vs ${p.cells} cells ${r2(p.kv_full)} MiB`);
        if (rule.swa && (!swa || swa.cells !== p.swa_cells || !close(swa.size_MiB, r2(p.kv_swa), 0.005001))) errs.push(`swa ${JSON.stringify(swa)} vs ${p.swa_cells} cells ${r2(p.kv_swa)}`);
        if (rule.recr) {
            if (!d.rs || d.rs.rs_seq !== 0 || d.rs.cells !== Math.max(1, req.n_seq) || !close(d.rs.size_MiB, r2(p.rs), 0.005001)) errs.push(`rs ${JSON.stringify(d.rs)} vs ${r2(p.rs)}`);
        } else if (d.rs) errs.push("unexpected recurrent state");
        const compute = d.ctx_cpuRam_bytes - p.kv_full - p.kv_swa - p.rs;
        if (!close(compute / MiB, d.compute_buffers.CPU, 0.005001)) errs.push(`compute ${compute / MiB} vs logged ${d.compute_buffers.CPU}`);
        if (!close(d.output_buffer_MiB, r2(p.output), 0.005001)) errs.push(`output ${d.output_buffer_MiB} vs ${r2(p.output)}`);
        if (errs.length) { fail++; problems.push(`${d.id}: ${errs.join("; ")}`); } else pass++;
    }
    return { file: path.basename(file), id, pass, fail, refused, loadFail, problems, rows };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const dir = path.join(here, "measured");
    const files = fs.readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort();
    const results = files.map((f) => checkFile(path.join(dir, f)));
    let bad = 0;
    for (const r of results) {
        console.log(`${r.file}: ${r.pass} pass (${r.refused} refused as required), ${r.fail} fail${r.loadFail ? `; load failed: ${r.loadFail}` : ""}`);
        for (const p of r.problems.slice(0, 5)) console.log(`   ${p}`);
        bad += r.fail;
    }
    // release comparison: same gguf + case id -> same KV, state, compute, nodes?
    console.log("\nrelease comparison (5b4ebc5 vs v0.5.0), per file: rows compared, rows whose compute / nodes / model bytes differ");
    const byKey = (r) => new Map(r.rows.map((d) => [`${d.gguf}|${d.kind}|${d.id}`, d]));
    for (const r of results.filter((x) => x.file.endsWith(".v0.5.0.jsonl"))) {
        const o = results.find((x) => x.file === r.file.replace(".v0.5.0.", ".5b4ebc5."));
        if (!o) continue;
        const a = byKey(r), b = byKey(o);
        let n = 0, dc = 0, dn = 0, dm = 0;
        const ex = [];
        for (const [k, x] of a) {
            const y = b.get(k);
            if (!y || !x.ok || !y.ok) continue;
            if (x.kind === "model") { if (x.model_bytes !== y.model_bytes) { dm++; ex.push(`model ${x.model_bytes} vs ${y.model_bytes}`); } continue; }
            n++;
            if (x.ctx_cpuRam_bytes !== y.ctx_cpuRam_bytes) { dc++; if (ex.length < 3) ex.push(`${x.gguf} ${x.id}: ${x.compute_buffers.CPU} vs ${y.compute_buffers.CPU} MiB`); }
            if (x.graph_nodes !== y.graph_nodes) dn++;
        }
        console.log(`  ${r.id}: ${n} rows, ctx bytes differ ${dc}, graph nodes differ ${dn}, model bytes differ ${dm}${ex.length ? `  e.g. ${ex.join(" | ")}` : ""}`);
    }
    process.exit(bad ? 1 : 0);
}
