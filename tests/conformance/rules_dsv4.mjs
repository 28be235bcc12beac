// The memory rules of llama.cpp v0.5.0 and 5b4ebc5 for the MODELS_DSV4 architectures, as exact byte formulas
// (docs/rules/llamacpp-dsv4.md gives the source lines), and a check of them against measured/<id>.<release>.jsonl.
//
// usage: node rules_dsv4.mjs [measured/*.jsonl ...]   (default: every file in measured/)
// For each context it predicts every cache (cells, layers, K and V bytes) and every state, compares them with the
// MiB llama.cpp logged (2 decimals) and prints compute = ctx_cpuRam_bytes - KV - state, checked against the
// logged compute buffer. Exit status 1 on any mismatch.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DSV4_FLASH, KIMI_LINEAR_48B, KIMI_K3, QWEN38_FLASH_NEXT } from "./models_dsv4.mjs";

const pad = (x, n) => Math.ceil(x / n) * n;
/// bytes of one row of `n` values of ggml type t (ggml_row_size)
export function rowBytes(t, n) {
    const blk = { f32: [1, 4], f16: [1, 2], bf16: [1, 2], q8_0: [32, 34], q4_0: [32, 18], q4_1: [32, 20], q5_0: [32, 22], q5_1: [32, 24] }[t];
    if (!blk) throw new Error(`type ${t}`);
    return (n / blk[0]) * blk[1];
}

/// llama_context constructor (src/llama-context.cpp:290-303), kv_unified false as node-llama-cpp sets it.
export function ctxSeq(n_ctx, n_seq) {
    const n = pad(n_ctx, 256);
    const seq = pad(Math.floor(n / n_seq), 256);
    return { n_ctx: seq * n_seq, n_ctx_seq: seq };
}

const F32 = 4;

/// Predicted caches and states of one context. release: "v0.5.0" | "5b4ebc5".
/// Returns {caches: [{which, cells, layers, streams, K, V}], states: [{which, bytes}], rs: {R, S, P} | null, refused}
export function predict(id, req, release) {
    const { n_ctx_seq } = ctxSeq(req.n_ctx, req.n_seq);
    const ns = req.n_seq, rs_seq = 0; // node-llama-cpp passes n_rs_seq 0
    const kv = (which, cells, layers, wk, wv, tk = req.type_k, tv = req.type_v) =>
        ({ which, cells, layers, streams: ns, K: ns * cells * layers * (wk ? rowBytes(tk, wk) : 0), V: ns * cells * layers * (wv ? rowBytes(tv, wv) : 0) });
    const vQuant = !["f16", "f32", "bf16"].includes(req.type_v), kQuant = !["f16", "f32", "bf16"].includes(req.type_k);
    // llama_init_from_model (src/llama-context.cpp:3776-3811, 5b4ebc5 :3693-3728), in this order
    const refusal = ({ kv_same, head_k, head_v }) =>
        kv_same && req.type_k !== req.type_v ? "does not support different K" :
        vQuant && !req.flash_attn ? "quantized V cache requires flash_attn" :
        req.flash_attn && kQuant && head_k % 32 !== 0 ? "does not divide n_embd_head_k" :
        req.flash_attn && vQuant && head_v % 32 !== 0 ? "does not divide n_embd_head_v" : null;
    if (id.startsWith("deepseek-v4-flash")) {
        const h = DSV4_FLASH, L_all = h.n_layer + (id.endsWith("-mtp") ? 1 : 0);
        const r = h.compress_ratios.slice(0, L_all);
        const L4 = r.filter((x) => x === 4).length, L128 = r.filter((x) => x === 128).length;
        const swa = req.swa_full ? n_ctx_seq : pad(Math.min(n_ctx_seq, h.swa + req.n_ubatch), 256);
        const csa = pad(Math.max(1, Math.ceil(n_ctx_seq / 4)), 256), hca = pad(Math.max(1, Math.ceil(n_ctx_seq / 128)), 256);
        const planes = ns * (1 + rs_seq);
        return {
            refused: refusal({ kv_same: true, head_k: h.head_dim, head_v: h.head_dim }),
            caches: [kv("base", n_ctx_seq, 0, 0, 0), kv("swa", swa, L_all, h.head_dim, 0), kv("dsv4_csa", csa, L4, h.head_dim, 0),
                kv("dsv4_hca", hca, L128, h.head_dim, 0), kv("dsv4_lid", csa, L4, h.idx_dim, 0)],
            states: [
                { which: "csa", bytes: planes * L4 * 2 * (2 * h.head_dim) * (2 * 4) * F32 },
                { which: "hca", bytes: planes * L128 * 2 * h.head_dim * 128 * F32 },
                { which: "lid", bytes: planes * L4 * 2 * (2 * h.idx_dim) * (2 * 4) * F32 },
            ],
            rs: null,
        };
    }
    if (id === "kimi-linear-48b" || id === "kimi-k3") {
        const h = id === "kimi-k3" ? KIMI_K3 : KIMI_LINEAR_48B;
        const L_mla = h.full_attn_layers.length, L_kda = h.n_layer - L_mla;
        const d_inner = h.n_head * h.kda_dim;
        const n_embd_r = 3 * (h.d_conv - 1) * d_inner, n_embd_s = h.kda_dim * h.kda_dim * h.n_head; // llama-hparams.cpp n_embd_r/n_embd_s
        const rows = Math.max(1, ns) * (1 + rs_seq);
        // value_length: kimi-linear keeps config head_dim 72 (base.py), kimi-k3 writes kv_lora_rank 512
        const n_embd_head_v = id === "kimi-k3" ? h.kv_lora : h.head_dim_cfg;
        return {
            refused: refusal({ kv_same: true, head_k: h.kv_lora + h.rope, head_v: n_embd_head_v }),
            caches: [kv("full", n_ctx_seq, L_mla, h.kv_lora + h.rope, 0)],
            states: [],
            rs: { R: L_kda * n_embd_r * F32 * rows, S: L_kda * n_embd_s * F32 * rows, P: 0 },
        };
    }
    if (id === "qwen38-flash-next") {
        const h = QWEN38_FLASH_NEXT, L_att = h.n_layer / 4, L_gdn = h.n_layer - L_att;
        const d_inner = h.lin_v_heads * h.lin_dim, conv = 2 * h.lin_k_heads * h.lin_dim + d_inner;
        const rows = Math.max(1, ns) * (1 + rs_seq);
        const ple = (h.ple_conv - 1) * h.ple_ngram * h.hc * h.n_embd; // llama_hparams::ple_conv_state
        const w = h.n_head_kv * h.head_dim;
        return {
            refused: refusal({ kv_same: false, head_k: h.head_dim, head_v: h.head_dim }),
            caches: [kv("full", n_ctx_seq, L_att, w, w),
                // indexer cache: K only in v0.5.0 (MLA trick, llama-memory-hybrid-idx.cpp:58-60); 5b4ebc5 also allocates
                // a V of n_embd_head_v (256, value_length) per token and layer
                kv("idx", n_ctx_seq, L_att, h.idx_dim, release === "5b4ebc5" ? h.head_dim : 0)],
            states: [],
            rs: { R: L_gdn * (h.d_conv - 1) * conv * F32 * rows, S: L_gdn * h.lin_dim * d_inner * F32 * rows, P: ple * F32 * rows },
        };
    }
    throw new Error(`no rule for ${id}`);
}

/// Sum of predicted KV + state bytes.
export function predictedBytes(p) {
    return p.caches.reduce((a, c) => a + c.K + c.V, 0) + p.states.reduce((a, s) => a + s.bytes, 0) +
        (p.rs ? p.rs.R + p.rs.S + p.rs.P : 0);
}

const MiB = 1024 * 1024;
const near = (mib, bytes) => Math.abs(mib - bytes / MiB) <= 0.0051;

/// Checks one measured context line; returns {ok, problems, compute_bytes}.
export function checkLine(id, line, release) {
    const p = predict(id, line.req, release);
    const problems = [];
    if (p.refused) {
        if (line.ok) problems.push(`expected refusal (${p.refused}) but it loaded`);
        else if (!line.aborted && !(line.errors ?? []).some((e) => e.includes(p.refused))) problems.push(`refused for another reason: ${JSON.stringify(line.errors)}, expected "${p.refused}"`);
        return { ok: problems.length === 0, problems, refused: true };
    }
    if (!line.ok) return { ok: false, problems: [`refused or aborted: ${JSON.stringify(line.errors)}`] };
    const got = line.kv_caches.filter((c) => c.layers > 0 || c.which === "base");
    const want = p.caches.filter((c) => c.layers > 0 || c.which === "base");
    if (got.length !== want.length) problems.push(`caches: got ${got.length} want ${want.length}`);
    for (let i = 0; i < Math.min(got.length, want.length); ++i) {
        const g = got[i], w = want[i];
        if (g.which !== w.which || g.cells !== w.cells || g.layers !== w.layers || g.seqs !== `${w.streams}/${w.streams}` ||
            !near(g.K_MiB, w.K) || !near(g.V_MiB, w.V))
            problems.push(`cache ${i}: got ${JSON.stringify(g)} want ${JSON.stringify(w)}`);
    }
    for (const s of p.states) {
        const g = (line.dsv4_states ?? []).find((x) => x.which === s.which);
        if (!g || !near(g.size_MiB, s.bytes) || g.streams !== line.req.n_seq) problems.push(`state ${s.which}: got ${JSON.stringify(g)} want ${s.bytes}`);
    }
    if (p.rs) {
        const r = line.rs;
        if (!r || !near(r.R_MiB, p.rs.R) || !near(r.S_MiB, p.rs.S) || !near(r.P_MiB, p.rs.P)) problems.push(`rs: got ${JSON.stringify(r)} want ${JSON.stringify(p.rs)}`);
    }
    const compute = line.ctx_cpuRam_bytes - predictedBytes(p);
    const logged = Object.values(line.compute_buffers).reduce((a, x) => a + x, 0);
    if (!near(logged, compute)) problems.push(`compute: total - KV - state = ${compute} B = ${(compute / MiB).toFixed(4)} MiB, logged ${logged} MiB`);
    return { ok: problems.length === 0, problems, compute_bytes: compute, kv_state_bytes: predictedBytes(p) };
}

function main() {
    const here = path.dirname(fileURLToPath(import.meta.url));
    let files = process.argv.slice(2);
    if (!files.length) files = fs.readdirSync(path.join(here, "measured")).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(here, "measured", f));
    let bad = 0, n = 0;
    for (const f of files) {
        const [id, ...rest] = path.basename(f, ".jsonl").split(".");
        const release = rest.join(".");
        const lines = fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l));
        let nOk = 0, nRef = 0, nAb = 0;
        for (const l of lines) {
            if (l.kind !== "context") continue;
            ++n;
            if (l.aborted) { ++nAb; continue; }
            const r = checkLine(id, l, release);
            if (r.refused && r.ok) { ++nRef; continue; }
            if (r.ok) { ++nOk; continue; }
            ++bad;
            console.log(`MISMATCH ${path.basename(f)} ${JSON.stringify(l.req)} v${l.n_vocab_file}\n  ${r.problems.join("\n  ")}`);
        }
        console.log(`${path.basename(f)}: ${nOk} exact, ${nRef} refused as predicted, ${nAb} aborted by llama.cpp`);
    }
    console.log(`${n} contexts, ${bad} mismatches`);
    process.exit(bad ? 1 : 0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
