#!/usr/bin/env node
// Writes the GGUF of a models_dsa.mjs builder and measures it with measure.mjs's Harness (no_alloc), one context
// at a time, one JSON line per case on stdout (first line: the model). Runs against whichever node-llama-cpp
// resolves from this file's folder (tests/conformance/node_modules = 3.22.1 / llama.cpp v0.5.0; copy this file,
// measure.mjs and models_dsa.mjs beside a node_modules link to 3.21.1 to measure 5b4ebc5).
//
// usage: node measure_dsa.mjs ID small|real|N OUT_DIR [CASES.json|'[...]'|default] [--gguf-write PATH] [--log]
//   default cases: n_ctx 4096/8192/32768 x n_seq 1/3 x f16/f16, q8_0/q8_0 x FA on/off x n_ubatch 512/256
//   (quantized V without FA included: llama.cpp must refuse it).
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Harness, bundledRelease } from "./measure.mjs";
import { MODELS_DSA, specOfDsa } from "./models_dsa.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

export function generateDsa(id, n_vocab, outDir, ggufWrite) {
    fs.mkdirSync(outDir, { recursive: true });
    const base = path.join(outDir, `${id}_v${n_vocab}`);
    const specText = JSON.stringify(specOfDsa(id, n_vocab));
    const specPath = `${base}.json`, gguf = `${base}.gguf`;
    if (fs.existsSync(gguf) && fs.existsSync(specPath) && fs.readFileSync(specPath, "utf8") === specText) return gguf;
    fs.writeFileSync(specPath, specText);
    try {
        execFileSync(ggufWrite, [specPath, gguf], { stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
        fs.rmSync(specPath, { force: true });
        throw new Error(`kvfit-gguf-write ${specPath}: ${String(e.stderr ?? e.message).trim()}`);
    }
    return gguf;
}

export function defaultCases() {
    const out = [];
    for (const n_ctx of [4096, 8192, 32768])
        for (const n_seq of [1, 3])
            for (const [type_k, type_v] of [["f16", "f16"], ["q8_0", "q8_0"]])
                for (const flash_attn of [true, false])
                    for (const n_ubatch of [512, 256]) {
                        if (n_ubatch === 256 && (n_ctx !== 8192)) continue; // ubatch 256 at one context length
                        out.push({ id: `c${n_ctx}_s${n_seq}_${type_k}_fa${flash_attn ? 1 : 0}_ub${n_ubatch}`,
                            n_ctx, n_seq, type_k, type_v, flash_attn, n_ubatch });
                    }
    // mixed K/V types: refused for MLA models (llama_init_from_model: K and V types must match), else accepted
    for (const flash_attn of [true, false])
        out.push({ id: `c4096_s1_q8_0-f16_fa${flash_attn ? 1 : 0}_ub512`, n_ctx: 4096, n_seq: 1, type_k: "q8_0", type_v: "f16", flash_attn, n_ubatch: 512 });
    return out;
}

/// The log lines a rule needs: cache creation, per-cache sizes, filtered layers (collapsed into one line per
/// cache), context sizes, compute buffer, graph size, and any refusal.
function keepLines(log) {
    const out = [];
    let filtered = [];
    const flush = () => { if (filtered.length) out.push(`[summary] llama_kv_cache: filtered layers: ${filtered.join(",")}`); filtered = []; };
    for (const l of log) {
        const f = /^llama_kv_cache: layer +(\d+): filtered$/.exec(l);
        if (f) { filtered.push(Number(f[1])); continue; }
        if (/^llama_kv_cache(_\w+)?: (creating|size =|attn_rot|\s*\S+ KV buffer)|^llama_context: (n_ctx|n_ctx_seq|n_seq_max|n_ubatch|flash_attn|kv_unified)\s|^\w+: +\S+ compute buffer size|^\w+: graph( \([^)]*\))?: nodes|^\w+: .*(flash attention|MSA|DENSE)|error|failed|requires|not support/i.test(l)) {
            if (!/^llama_kv_cache: layer/.test(l)) flush();
            out.push(l);
        }
    }
    flush();
    return out;
}

async function main() {
    const args = process.argv.slice(2);
    const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
    const flag = (name) => { const i = args.indexOf(name); if (i < 0) return false; args.splice(i, 1); return true; };
    const tool = opt("--gguf-write", process.env.KVFIT_GGUF_WRITE ?? "/work/scratch/bin/kvfit-gguf-write");
    const withLog = flag("--log");
    const [id, vocab, outDir, casesArg = "default"] = args;
    if (!MODELS_DSA[id] || !vocab || !outDir) {
        console.error(`usage: node measure_dsa.mjs ID small|real|N OUT_DIR [CASES] (ids: ${Object.keys(MODELS_DSA).join(", ")})`);
        process.exit(2);
    }
    const n_vocab = vocab === "small" ? 512 : vocab === "real" ? MODELS_DSA[id].n_vocab : Number(vocab);
    const cases = casesArg === "default" ? defaultCases()
        : JSON.parse(casesArg.trim().startsWith("[") ? casesArg : fs.readFileSync(casesArg, "utf8"));
    const gguf = generateDsa(id, n_vocab, outDir, tool);
    const h = new Harness({ threads: 1, keepLog: true });
    await h.init();
    const m = await h.loadModel(gguf, { noAlloc: true });
    const keepModel = (l) => /^(print_info: (arch|n_layer|n_layer_all|n_layer_nextn|n_embd_k_gqa|n_embd_v_gqa|n_embd_head_k_mla|n_embd_head_v_mla|n_vocab|n_ctx_train)\b|load_tensors: .*model buffer|model has unused tensor blk\.\d+\.nextn\.eh_proj)/.test(l);
    console.log(JSON.stringify({ kind: "model", id, model: path.basename(gguf), file_bytes: fs.statSync(gguf).size, no_alloc: true,
        release: bundledRelease(), ok: m.ok, ...(m.ok ? m.info : { error: m.error, log_tail: m.log_tail }),
        log_model: h.lines.filter(keepModel) }));
    if (!m.ok) process.exit(3);
    for (const c of cases) {
        const req = { n_ctx: c.n_ctx, n_seq: c.n_seq ?? 1, flash_attn: c.flash_attn ?? true, type_k: c.type_k ?? "f16",
            type_v: c.type_v ?? "f16", n_ubatch: c.n_ubatch ?? 512, swa_full: c.swa_full ?? false };
        const r = await h.measureContext(m.addon, req);
        const log = r.log; delete r.log;
        r.raw = withLog ? log : keepLines(log ?? []);
        console.log(JSON.stringify({ kind: "context", id: c.id ?? null, req, ...r }));
    }
    await h.disposeModel(m.addon);
    await h.dispose();
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    main().catch((e) => { console.error(e); process.exit(1); });
}
