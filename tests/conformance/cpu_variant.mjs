#!/usr/bin/env node
// Measure another host's CPU backend on this one: a copy of a release's node_modules whose prebuilt binaries hold
// a single libggml-cpu-<variant>.so, so ggml_backend_load_best (ggml-backend-reg.cpp) has no other variant to
// choose. Any variant whose features this CPU has runs here (on an AVX-512 host: x64, sse42, ..., haswell,
// skylakex, ..., zen4; never sapphirerapids without AMX, which scores 0 and would not load). Its extra buffer
// types and what they take are then measured for real (docs/rules/llamacpp-cpu-repack.md):
//
//   node cpu_variant.mjs --release v0.5.0 --variant haswell OUT_DIR
//   CONFORMANCE_NODE_MODULES=OUT_DIR/node_modules node conformance.mjs --release v0.5.0 --cpu-features haswell ...
//
// node-llama-cpp and @node-llama-cpp/linux-x64 are copied (node resolves a package from its real path, so the
// binaries package must sit beside a real node-llama-cpp); every other package is a symlink to the release's.
import fs from "node:fs";
import path from "node:path";
import { runtimeModules, checkRelease, defaultRelease } from "./releases.mjs";
import { VARIANTS } from "./cpu.mjs";

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
const release = checkRelease(opt("--release", defaultRelease()));
const variant = opt("--variant", null);
const out = args[0];
if (!variant || !VARIANTS[variant] || !out) {
    console.error(`usage: node cpu_variant.mjs [--release ID] --variant ${Object.keys(VARIANTS).join("|")} OUT_DIR`);
    process.exit(2);
}

const src = fs.realpathSync(runtimeModules(release));
const dst = path.join(path.resolve(out), "node_modules");
fs.rmSync(dst, { recursive: true, force: true });
fs.mkdirSync(dst, { recursive: true });
for (const e of fs.readdirSync(src)) {
    if (e === "node-llama-cpp") fs.cpSync(path.join(src, e), path.join(dst, e), { recursive: true });
    else if (e === "@node-llama-cpp") {
        fs.mkdirSync(path.join(dst, e));
        for (const p of fs.readdirSync(path.join(src, e))) fs.cpSync(path.join(src, e, p), path.join(dst, e, p), { recursive: true });
    } else fs.symlinkSync(path.join(src, e), path.join(dst, e));
}
const bins = path.join(dst, "@node-llama-cpp/linux-x64/bins/linux-x64");
let kept = null;
for (const f of fs.readdirSync(bins)) {
    const m = /^libggml-cpu-(.+)\.so$/.exec(f);
    if (!m) continue;
    if (m[1] === variant) kept = f;
    else fs.rmSync(path.join(bins, f));
}
if (!kept) { console.error(`${bins}: no libggml-cpu-${variant}.so`); process.exit(1); }
console.log(dst);
