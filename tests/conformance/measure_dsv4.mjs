#!/usr/bin/env node
// Measures the MODELS_DSV4 architectures (models_dsv4.mjs) in llama.cpp's no_alloc mode and writes one JSONL file
// per model and release: measured/<id>.<release>.jsonl (first line the model, then one line per context).
//
// usage: node measure_dsv4.mjs [--release v0.5.0|5b4ebc5] [--measure PATH/measure.mjs] [--out DIR] [ID...]
//   --release v0.5.0 (default) runs ./measure.mjs (node-llama-cpp 3.22.1 through ./node_modules);
//   --release 5b4ebc5 needs --measure pointing at a copy of measure.mjs beside a node_modules with 3.21.1.
// Files are loaded with --no-mmap: llama.cpp maps a model with MAP_POPULATE even in no_alloc mode
// (llama_model_loader::init_mappings), which would read every byte of these 10-545 GB sparse files.
// Each context line keeps only the log lines measure.mjs matched ("raw"), not the full log. A case on which
// llama.cpp aborts the process (GGML_ASSERT) is recorded as {ok: false, aborted: true}.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { MODELS_DSV4, specOfDsv4 } from "./models_dsv4.mjs";
import { defaultGgufWrite, SMALL_VOCAB } from "./generate.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

/// The cases: every factor of the brief on the 512-token file, a few on the real vocabulary.
export function casesFor(id, small) {
    const out = [];
    const add = (c) => out.push({ n_seq: 1, flash_attn: true, type_k: "f16", type_v: "f16", n_ubatch: 512, swa_full: false, ...c });
    if (!small) {
        for (const n_ctx of [4096, 32768]) for (const n_seq of [1, 3]) add({ n_ctx, n_seq });
        return out;
    }
    for (const n_ctx of [4096, 8192, 32768])
        for (const n_seq of [1, 3])
            for (const t of ["f16", "q8_0"])
                for (const flash_attn of [true, false]) add({ n_ctx, n_seq, type_k: t, type_v: t, flash_attn });
    for (const n_ctx of [4096, 32768]) for (const n_seq of [1, 3]) for (const flash_attn of [true, false]) add({ n_ctx, n_seq, flash_attn, n_ubatch: 256 });
    if (MODELS_DSV4[id].swa)
        for (const n_ctx of [4096, 32768]) for (const n_seq of [1, 3]) for (const flash_attn of [true, false]) add({ n_ctx, n_seq, flash_attn, swa_full: true });
    add({ n_ctx: 5000 }); add({ n_ctx: 5000, n_seq: 3 }); add({ n_ctx: 10000, n_seq: 4 });
    add({ n_ctx: 4096, type_k: "q8_0", type_v: "f16" });
    add({ n_ctx: 131072 }); add({ n_ctx: 131072, type_k: "q8_0", type_v: "q8_0" }); add({ n_ctx: 131072, n_seq: 3 });
    return out;
}

function main() {
    const args = process.argv.slice(2);
    const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
    const release = opt("--release", "v0.5.0");
    const measure = path.resolve(opt("--measure", path.join(here, "measure.mjs")));
    const outDir = path.resolve(opt("--out", path.join(here, "measured")));
    const models = path.resolve(opt("--models", path.join(here, "../../build/conformance/models")));
    const tool = opt("--gguf-write", defaultGgufWrite());
    const ids = args.length ? args : Object.keys(MODELS_DSV4);
    fs.mkdirSync(outDir, { recursive: true });
    fs.mkdirSync(models, { recursive: true });
    for (const id of ids) {
        if (!MODELS_DSV4[id]) throw new Error(`unknown model ${id}`);
        const lines = [];
        for (const n_vocab of [SMALL_VOCAB, MODELS_DSV4[id].n_vocab]) {
            const base = path.join(models, `${id}_v${n_vocab}`);
            const spec = JSON.stringify(specOfDsv4(id, n_vocab));
            if (!fs.existsSync(`${base}.gguf`) || !fs.existsSync(`${base}.json`) || fs.readFileSync(`${base}.json`, "utf8") !== spec) {
                fs.writeFileSync(`${base}.json`, spec);
                execFileSync(tool, [`${base}.json`, `${base}.gguf`], { stdio: ["ignore", "pipe", "pipe"] });
            }
            const cases = casesFor(id, n_vocab === SMALL_VOCAB);
            const t0 = performance.now();
            const run = (cs) => execFileSync("node", [measure, `${base}.gguf`, JSON.stringify(cs), "--no-alloc", "--no-mmap", "--log", "--threads", "1"],
                { cwd: path.dirname(measure), encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "pipe"] });
            // the full log is dropped; "raw" keeps the lines measure.mjs matched (caches, states, compute, context params)
            const push = (l) => { const j = JSON.parse(l); delete j.log; j.model_id = id; j.n_vocab_file = n_vocab; lines.push(JSON.stringify(j)); };
            let text = null;
            try { text = run(cases); } catch { text = null; }
            if (text != null) {
                for (const l of text.trim().split("\n")) push(l);
            } else {
                // llama.cpp aborted the process (a GGML_ASSERT) on some case: one process per case, the abort recorded
                let first = true;
                for (const c of cases) {
                    try {
                        const ls = run([c]).trim().split("\n");
                        if (first) { push(ls[0]); first = false; }
                        push(ls[1]);
                    } catch (e) {
                        const err = String(e.stderr ?? e.message).trim().split("\n").filter((l) => /GGML_ASSERT|error|failed/i.test(l)).slice(-2);
                        push(JSON.stringify({ kind: "context", id: null, req: c, ok: false, aborted: true, errors: err }));
                    }
                }
            }
            console.error(`${id} v${n_vocab}: ${cases.length} contexts, ${Math.round(performance.now() - t0)} ms`);
        }
        fs.writeFileSync(path.join(outDir, `${id}.${release}.jsonl`), lines.join("\n") + "\n");
    }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
