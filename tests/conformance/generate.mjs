#!/usr/bin/env node
// Writes the shape-exact GGUF of each architecture with kvfit's own writer (kvfit-gguf-write): a JSON spec
// from models.mjs or a models_*.mjs (suite.mjs), tensor data a sparse hole (no disk used), a minimal SentencePiece vocabulary.
//
// usage: node generate.mjs OUT_DIR [--gguf-write PATH] [--vocab small|real|both] [ID...]
// Prints one line per file. A file is rewritten only when its spec changed (spec kept beside it).
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ALL_MODELS as MODELS, specOfModel as specOf } from "./suite.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

/// The small vocabulary used for the full matrix: the smallest the SentencePiece loader accepts with byte
/// tokens, so the output buffer and the logits part of the compute buffer stay small (RULES.md).
export const SMALL_VOCAB = 512;

/// Writes `<out>/<id>_v<n_vocab>.gguf` (and its .json spec) unless an identical spec was written before.
/// Returns the path of the GGUF.
export function generate(id, n_vocab, outDir, ggufWrite) {
    fs.mkdirSync(outDir, { recursive: true });
    const base = path.join(outDir, `${id}_v${n_vocab}`);
    const specText = JSON.stringify(specOf(id, n_vocab));
    const specPath = `${base}.json`, gguf = `${base}.gguf`;
    if (fs.existsSync(gguf) && fs.existsSync(specPath) && fs.readFileSync(specPath, "utf8") === specText) return gguf;
    fs.writeFileSync(specPath, specText);
    try {
        execFileSync(ggufWrite, [specPath, gguf], { stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
        fs.rmSync(specPath, { force: true }); // never leave a spec that claims a file was written
        throw new Error(`kvfit-gguf-write ${specPath}: ${String(e.stderr ?? e.message).trim()}`);
    }
    return gguf;
}

export function defaultGgufWrite() {
    return process.env.KVFIT_GGUF_WRITE ?? path.resolve(here, "../../build/tools/kvfit-gguf-write");
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const args = process.argv.slice(2);
    const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
    const tool = opt("--gguf-write", defaultGgufWrite());
    const vocab = opt("--vocab", "both");
    const [out, ...ids] = args;
    if (!out) { console.error("usage: node generate.mjs OUT_DIR [--gguf-write PATH] [--vocab small|real|both] [ID...]"); process.exit(2); }
    for (const id of ids.length ? ids : Object.keys(MODELS)) {
        if (!MODELS[id]) { console.error(`unknown model '${id}' (known: ${Object.keys(MODELS).join(", ")})`); process.exit(2); }
        const sizes = vocab === "small" ? [SMALL_VOCAB] : vocab === "real" ? [MODELS[id].n_vocab] : [SMALL_VOCAB, MODELS[id].n_vocab];
        for (const n of sizes) {
            const t0 = performance.now();
            const f = generate(id, n, out, tool);
            console.log(`${f}  ${fs.statSync(f).size} bytes  ${Math.round(performance.now() - t0)} ms`);
        }
    }
}
