// Every model of the conformance suite: MODELS of models.mjs plus the MODELS_<X> objects exported by each
// tests/conformance/models_*.mjs (same shape: id -> {name, build(n_vocab), n_vocab, swa?}), merged into one map.
// Each model may say which llama.cpp releases it applies to (`releases: ["v0.5.0"]`, ids from releases.mjs);
// without it, it applies to all of them. Two files defining the same id is an error.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MODELS } from "./models.mjs";
import { RELEASE_IDS } from "./releases.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

async function collect() {
    const all = {};
    const add = (file, id, m) => {
        if (all[id]) throw new Error(`conformance model '${id}' is defined in ${all[id].source} and in ${file}`);
        if (typeof m?.build !== "function" || !Number.isInteger(m?.n_vocab) || typeof m?.name !== "string")
            throw new Error(`${file}: model '${id}' needs {name, build(n_vocab), n_vocab}`);
        const releases = m.releases ?? RELEASE_IDS;
        for (const r of releases) if (!RELEASE_IDS.includes(r)) throw new Error(`${file}: model '${id}': unknown release '${r}' (known: ${RELEASE_IDS.join(", ")})`);
        all[id] = { ...m, releases: [...releases], source: file };
    };
    for (const [id, m] of Object.entries(MODELS)) add("models.mjs", id, m);
    const files = fs.readdirSync(here).filter((f) => /^models_[A-Za-z0-9_-]+\.mjs$/.test(f)).sort();
    for (const f of files) {
        const mod = await import(pathToFileURL(path.join(here, f)).href);
        const objs = Object.entries(mod).filter(([k, v]) => /^MODELS_[A-Za-z0-9_]+$/.test(k) && v && typeof v === "object");
        if (!objs.length) throw new Error(`${f} exports no MODELS_<X> object`);
        for (const [, obj] of objs) for (const [id, m] of Object.entries(obj)) add(f, id, m);
    }
    return all;
}

/// id -> {name, build, n_vocab, swa?, releases, source}
export const ALL_MODELS = await collect();

/// The ids that apply to release r, in definition order (models.mjs first, then models_*.mjs by file name).
export const modelsFor = (r) => Object.keys(ALL_MODELS).filter((id) => ALL_MODELS[id].releases.includes(r));

/// The kvfit-gguf-write spec of model `id` with a minimal SentencePiece vocabulary of n_vocab tokens.
export function specOfModel(id, n_vocab) {
    const m = ALL_MODELS[id];
    if (!m) throw new Error(`unknown model '${id}'`);
    const b = m.build(n_vocab);
    return {
        version: 3, data: "sparse",
        metadata: { ...b.metadata, "general.name": `${m.name}-conformance` },
        vocab: { spm: n_vocab },
        tensors: b.tensors,
    };
}
