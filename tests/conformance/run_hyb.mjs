#!/usr/bin/env node
// Measures the models_hyb.mjs architectures (no_alloc) and writes tests/conformance/measured/<id>.<tag>.jsonl.
//
// usage: node run_hyb.mjs MODELS_DIR TAG [--measure PATH/measure.mjs] [ID...]
//   MODELS_DIR holds <id>_v512.gguf and <id>_v<n_vocab>.gguf (node models_hyb.mjs MODELS_DIR --vocab both).
//   TAG names the runtime (v0.5.0 or 5b4ebc5); --measure picks the measure.mjs whose node_modules holds it.
// One measure.mjs process per GGUF file, one context at a time, --threads 1. Each context line keeps only the
// parsed fields and `raw` (the log lines the parser used); the full log is dropped.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { MODELS_HYB, VARIANTS_HYB } from "./models_hyb.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const ALL = { ...MODELS_HYB, ...VARIANTS_HYB };

/// The small-vocabulary matrix: n_ctx x n_seq x K/V type x flash attention x n_ubatch (48 cases).
export function smallCases() {
    const out = [];
    for (const n_ctx of [4096, 8192, 32768])
        for (const n_seq of [1, 3])
            for (const t of ["f16", "q8_0"])
                for (const fa of [true, false])
                    for (const ub of [512, 256])
                        out.push({ id: `c${n_ctx}_s${n_seq}_${t}_fa${fa ? 1 : 0}_u${ub}`, n_ctx, n_seq, type_k: t, type_v: t, flash_attn: fa, n_ubatch: ub });
    return out;
}
/// A few real-vocabulary cases (output buffer and logits scale with n_vocab).
export function realCases() {
    return [
        { id: "real_c4096_s1_f16_fa1_u512", n_ctx: 4096, n_seq: 1, flash_attn: true, n_ubatch: 512 },
        { id: "real_c32768_s1_f16_fa1_u512", n_ctx: 32768, n_seq: 1, flash_attn: true, n_ubatch: 512 },
        { id: "real_c8192_s3_f16_fa0_u512", n_ctx: 8192, n_seq: 3, flash_attn: false, n_ubatch: 512 },
        { id: "real_c8192_s1_q8_0_fa1_u256", n_ctx: 8192, n_seq: 1, type_k: "q8_0", type_v: "q8_0", flash_attn: true, n_ubatch: 256 },
    ];
}

function measure(measurePath, gguf, cases) {
    let out;
    try {
        out = execFileSync("node", [measurePath, gguf, JSON.stringify(cases), "--no-alloc", "--log", "--threads", "1"],
            { encoding: "utf8", maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
        out = String(e.stdout ?? ""); // the model line says why (exit status 3 when the load fails)
    }
    const lines = [];
    for (const l of out.split("\n")) {
        if (!l.startsWith("{")) continue;
        const d = JSON.parse(l);
        delete d.log;
        lines.push(JSON.stringify({ gguf: path.basename(gguf), ...d }));
    }
    return lines;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const args = process.argv.slice(2);
    const mi = args.indexOf("--measure");
    const measurePath = mi >= 0 ? path.resolve(args[mi + 1]) : path.join(here, "measure.mjs");
    if (mi >= 0) args.splice(mi, 2);
    const [dir, tag, ...ids] = args;
    if (!dir || !tag) { console.error("usage: node run_hyb.mjs MODELS_DIR TAG [--measure measure.mjs] [ID...]"); process.exit(2); }
    const outDir = path.join(here, "measured");
    fs.mkdirSync(outDir, { recursive: true });
    for (const id of ids.length ? ids : Object.keys(MODELS_HYB)) {
        const m = ALL[id];
        const t0 = performance.now();
        const lines = [...measure(measurePath, path.join(dir, `${id}_v512.gguf`), smallCases())];
        const real = path.join(dir, `${id}_v${m.n_vocab}.gguf`);
        if (fs.existsSync(real)) lines.push(...measure(measurePath, real, realCases()));
        fs.writeFileSync(path.join(outDir, `${id}.${tag}.jsonl`), lines.join("\n") + "\n");
        console.log(`${id} ${tag}: ${lines.length} lines, ${Math.round(performance.now() - t0)} ms`);
    }
}
