#!/usr/bin/env node
// Measures the models of models_swa.mjs (no_alloc) and writes measured/<id>.<release>.jsonl.
//
// usage: node measure_swa.mjs MODEL_DIR [--measure PATH/measure.mjs] [--tag TAG] [--gguf-write PATH] [ID...]
//   --measure: the measure.mjs to run (a copy beside another node_modules measures another node-llama-cpp);
//   --tag: file suffix (default: the release tag that measure.mjs reports, build commit if none).
// One line per model load and per context, as measure.mjs prints them, with `log` dropped and `raw` kept
// (raw = only the lines measure.mjs's regexes matched: context parameters, KV cache and compute lines).
// Contexts run one at a time, --threads 1 (MEASURING.md).
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { MODELS_SWA, generateSwa, defaultGgufWrite } from "./models_swa.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

/// The small-vocabulary matrix: n_ctx x n_seq x K/V type x flash attention x n_ubatch x swa_full.
export function matrixSwa(swa) {
    const cases = [];
    for (const n_ctx of [4096, 8192, 32768])
        for (const n_seq of [1, 3])
            for (const t of ["f16", "q8_0"])
                for (const flash_attn of [true, false])
                    for (const n_ubatch of [512, 256])
                        for (const swa_full of swa ? [false, true] : [false])
                            cases.push({ id: `c${n_ctx}_s${n_seq}_${t}_fa${flash_attn ? 1 : 0}_ub${n_ubatch}_swf${swa_full ? 1 : 0}`,
                                n_ctx, n_seq, type_k: t, type_v: t, flash_attn, n_ubatch, swa_full });
    return cases;
}
/// A few real-vocabulary cases (the output buffer and the logits in the compute buffer depend on n_vocab).
export function matrixRealVocab() {
    return [
        { id: "rv_c8192_s1_f16_fa1_ub512", n_ctx: 8192, n_seq: 1, type_k: "f16", type_v: "f16", flash_attn: true, n_ubatch: 512, swa_full: false },
        { id: "rv_c4096_s1_f16_fa0_ub512", n_ctx: 4096, n_seq: 1, type_k: "f16", type_v: "f16", flash_attn: false, n_ubatch: 512, swa_full: false },
        { id: "rv_c32768_s3_q8_0_fa1_ub256", n_ctx: 32768, n_seq: 3, type_k: "q8_0", type_v: "q8_0", flash_attn: true, n_ubatch: 256, swa_full: false },
    ];
}

function runMeasure(measure, gguf, cases) {
    const out = execFileSync(process.execPath, [measure, gguf, JSON.stringify(cases), "--no-alloc", "--log", "--threads", "1"],
        { maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] }).toString();
    return out.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const args = process.argv.slice(2);
    const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
    const measure = path.resolve(opt("--measure", path.join(here, "measure.mjs")));
    const tagOpt = opt("--tag", null);
    const tool = opt("--gguf-write", defaultGgufWrite());
    const [modelDir, ...ids] = args;
    if (!modelDir) { console.error("usage: node measure_swa.mjs MODEL_DIR [--measure PATH] [--tag TAG] [--gguf-write PATH] [ID...]"); process.exit(2); }
    fs.mkdirSync(path.join(here, "measured"), { recursive: true });
    for (const id of ids.length ? ids : Object.keys(MODELS_SWA)) {
        const m = MODELS_SWA[id];
        const lines = [];
        for (const [n_vocab, cases] of [[512, matrixSwa(m.swa)], [m.n_vocab, matrixRealVocab()]]) {
            const gguf = generateSwa(id, n_vocab, modelDir, tool);
            let rows;
            try { rows = runMeasure(measure, gguf, cases); }
            catch (e) {
                // the model did not load: measure.mjs printed the model line (ok: false) and exited 3
                rows = String(e.stdout ?? "").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
                if (!rows.length) throw e;
            }
            for (const r of rows) { delete r.log; r.model_id = id; r.n_vocab_file = n_vocab; lines.push(r); }
        }
        const rel = lines[0]?.release ?? {};
        const tag = tagOpt ?? rel.release ?? rel.build_commit ?? "unknown";
        const file = path.join(here, "measured", `${id}.${tag}.jsonl`);
        fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
        const ok = lines.filter((l) => l.kind === "context" && l.ok).length, all = lines.filter((l) => l.kind === "context").length;
        console.log(`${file}: ${lines.filter((l) => l.kind === "model" && l.ok).length} model loads, ${ok}/${all} contexts ok`);
    }
}
