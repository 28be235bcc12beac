#!/usr/bin/env node
// kvfit's CUDA plans against llama.cpp's own scheduler on a simulated CUDA device (tools/simcuda): the release's
// ggml-cuda host code (supports_op, offload_op, get_alloc_size, graph_optimize, buffer types) loaded into the
// release's shipped libllama / libggml (CPU build) through probe/llama_probe, every buffer sized in no_alloc mode.
// For one release: measure the grid below live (every model file the matrix wrote, several placements: -ngl all on
// one GPU, -ngl 0 and 8 with a GPU, 2 and 4 GPUs with -ts, --n-cpu-moe and --cpu-moe, --no-kv-offload, quantized K/V,
// -ub 16 / 512 / 2048, 4 sequences), check that the live figures are the committed ones
// (measured/cuda-<release>.jsonl), let kvfit plan each row through its command line, compare device by device
// (weights and KV + state exactly; compute against the figure kvfit states: exact, or an estimate within the
// measured range it prints), and write docs/accuracy-cuda-<release>.md.
// Without nvcc (the simulated backend cannot be built) the committed rows are compared, with a banner.
// Exit status: 0 every row passes, 1 a row failed, 2 setup failed.
//
// usage: node cuda_conformance.mjs --release 5b4ebc5|v0.5.0 [--kvfit PATH] [--probe PATH] [--simcuda PATH.so]
//          [--models DIR] [--results FILE] [--out FILE] [--from FILE] [--update] [--only ID,ID]
//   --from FILE: compare the rows of FILE instead of measuring; --update: write the live rows to measured/
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { checkRelease } from "./releases.mjs";
import { hostCpu } from "./cpu.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const MiB = 1024 * 1024;

/// The simulated GPUs (tools/simcuda/sim_cudart.cpp SIMCUDA_DEVICES): an RTX 4090 as its driver reports it (24,080 MiB
/// total, 23,664 free after the CUDA context; compute capability 8.9, 128 SMs). -ts rows use several of it.
export const SIM_GPU = "NVIDIA GeForce RTX 4090,8.9,24080,23664,128";

/// The contexts of one placement (llama_probe context options; n_batch 2048 unless said).
const C = {
    base: { n_ctx: 8192, fa: "on" },
    nofa: { n_ctx: 8192, fa: "off" },
    long: { n_ctx: 32768, fa: "on" },
    q8: { n_ctx: 8192, fa: "on", type_k: "q8_0", type_v: "q8_0" },
    ub2048: { n_ctx: 8192, fa: "on", n_ubatch: 2048, n_batch: 2048 },
    np4: { n_ctx: 16384, fa: "on", n_seq: 4 },
    ub16: { n_ctx: 8192, fa: "on", n_ubatch: 16, n_batch: 16 },
    nokvo: { n_ctx: 8192, fa: "on", kqv_offload: 0 },
};
/// The placements: [class, model options, number of GPUs, contexts]. The class names the rule kvfit plans it with.
export const PLACEMENTS = [
    ["full", { ngl: 999 }, 1, ["base", "nofa", "long", "q8", "ub2048", "np4", "ub16", "nokvo"]],
    ["ngl0", { ngl: 0 }, 1, ["base", "nofa", "ub2048", "ub16"]],
    ["partial", { ngl: 8 }, 1, ["base", "nofa", "ub2048"]],
    ["multi", { ngl: 999 }, 2, ["base", "nofa", "ub2048"]],
    ["multi", { ngl: 999, ts: "3,1,1,1" }, 4, ["base"]],
    ["cpumoe", { ngl: 999, n_cpu_moe: 4 }, 1, ["base", "nofa", "ub2048", "ub16"]],
    ["cpumoe", { ngl: 999, n_cpu_moe: 999 }, 1, ["base"]],
    ["cpumoe", { ngl: 999, n_cpu_moe: 4 }, 2, ["base"]],
];
/// --shapes adds the CPU build's plan (no GPU, no simulated device): the graph alone, with the shipped CPU backend
const CPU_PLACEMENT = ["cpu", { ngl: 0 }, 0, ["base", "nofa", "q8", "np4"]];
/// The real-vocabulary files get the base contexts only (the logits and the output buffer change with n_vocab).
const REAL_VOCAB_CONTEXTS = ["base", "nofa"];

const ctxOf = (name) => ({ n_ubatch: 512, n_batch: 2048, ...C[name], name });
const rowKey = (r) => [r.model, r.cls, JSON.stringify(r.mopts), r.n_gpu, r.ctx.name].join("|");

// ---------------------------------------------------------------------------------------------------------------
// measurement

function measure({ probe, simcuda, modelsDir, only, log, allPlacements }) {
    const files = fs.readdirSync(modelsDir).filter((f) => f.endsWith(".gguf")).sort()
        .filter((f) => !only || only.includes(f.replace(/_v\d+\.gguf$/, "")));
    const rows = [];
    for (const f of files) {
        const real = !allPlacements && !/_v512\.gguf$/.test(f);
        for (const [cls, mopts, nGpu, ctxNames] of allPlacements ? [...PLACEMENTS, CPU_PLACEMENT] : PLACEMENTS) {
            const names = real ? ctxNames.filter((n) => REAL_VOCAB_CONTEXTS.includes(n)) : ctxNames;
            if (real && (cls !== "full" || nGpu !== 1)) continue;
            if (names.length === 0) continue;
            const ctxs = names.map(ctxOf);
            const argv = [path.join(modelsDir, f), "no_alloc=1", "mmap=0", ...Object.entries(mopts).map(([k, v]) => `${k}=${v}`)];
            for (const c of ctxs) argv.push("--ctx", ...Object.entries(c).filter(([k]) => k !== "name").map(([k, v]) => `${k}=${v}`));
            const env = nGpu > 0 ? { ...process.env, GGML_BACKEND_PATH: simcuda, SIMCUDA_DEVICES: Array(nGpu).fill(SIM_GPU).join(";") }
                : Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "GGML_BACKEND_PATH"));
            const r = spawnSync(probe, argv, { encoding: "utf8", env, maxBuffer: 1 << 28, timeout: 300000 });
            const lines = (r.stdout || "").split("\n").filter(Boolean).map((x) => JSON.parse(x));
            const model = lines.find((l) => l.kind === "model");
            const contexts = lines.filter((l) => l.kind === "context");
            if (!model?.ok || r.status !== 0) {
                log(`cuda ${f} ${cls} ${JSON.stringify(mopts)}: llama_probe exit ${r.status}: ${(r.stderr || "").trim().split("\n").slice(-2).join(" ")}`);
            }
            ctxs.forEach((c, i) => {
                const l = contexts[i];
                const sizes = (l?.log ?? []).filter((x) => /compute buffer size|pipeline parallelism/.test(x)).map((x) => x.replace(/^\S+:\s+/, ""));
                rows.push({ model: f.replace(/\.gguf$/, ""), cls, mopts, n_gpu: nGpu, ctx: c, ok: !!l?.ok,
                    breakdown: l?.ok ? l.breakdown.map((b) => ({ buft: b.buft, host: b.host, model: b.model, context: b.context, compute: b.compute })) : null,
                    logged: sizes });
            });
        }
    }
    return rows;
}

// ---------------------------------------------------------------------------------------------------------------
// kvfit

function kvfitArgv(r, modelsDir, release) {
    const c = r.ctx, m = r.mopts;
    const a = [path.join(modelsDir, `${r.model}.gguf`), "--json", "--llamacpp-version", release, "--n-outputs-max", "batch", "--no-mmap",
        "-c", String(c.n_ctx), "-fa", c.fa, "-ub", String(c.n_ubatch), "-b", String(c.n_batch)];
    if (r.n_gpu > 0) a.push("--backend", "cuda", "--gpu", Array(r.n_gpu).fill("24080MiB").join(","), "-ngl", String(m.ngl));
    if (m.ts) a.push("-ts", m.ts);
    if (m.n_cpu_moe === 999) a.push("--cpu-moe");
    else if (m.n_cpu_moe) a.push("--n-cpu-moe", String(m.n_cpu_moe));
    if (c.type_k) a.push("-ctk", c.type_k, "-ctv", c.type_v);
    if ((c.n_seq ?? 1) > 1) a.push("-np", String(c.n_seq));
    if (c.kqv_offload === 0) a.push("--no-kv-offload");
    return a;
}

/// llama.cpp's buffers by kvfit's device names: CUDA<i> -> GPU<i>, every host buffer type (CUDA_Host, CPU) -> host
function simDevices(breakdown) {
    const dev = new Map();
    for (const b of breakdown) {
        const name = b.host ? "host" : b.buft.startsWith("CUDA") ? `GPU${b.buft.slice(4)}` : b.buft;
        const d = dev.get(name) ?? { weights: 0, kv: 0, compute: 0 };
        d.weights += b.model; d.kv += b.context; d.compute += b.compute;
        dev.set(name, d);
    }
    return dev;
}

function compareRow(r, doc) {
    const sim = simDevices(r.breakdown);
    const checks = [];
    const names = new Set([...sim.keys(), ...doc.devices.map((d) => d.name)]);
    for (const name of [...names].sort()) {
        const s = sim.get(name) ?? { weights: 0, kv: 0, compute: 0 };
        const d = doc.devices.find((x) => x.name === name);
        const buf = (n) => d?.buffers.find((b) => b.name === n) ?? { bytes: 0, estimate: false };
        const w = buf("weights").bytes, kv = buf("kv").bytes + buf("state").bytes;
        // a no_alloc fit sizes the prompt graph only: kvfit's figure for it when it replays the scheduler graph
        const di = doc.devices.indexOf(d);
        const prompt = doc.detail?.gpu_compute?.prompt_bytes;
        const comp = prompt && di >= 0 ? { ...buf("compute"), bytes: prompt[di] } : buf("compute");
        checks.push({ device: name, what: "weights", pred: w, meas: s.weights, pass: w === s.weights });
        checks.push({ device: name, what: "kv", pred: kv, meas: s.kv, pass: kv === s.kv });
        // compute: exact where kvfit says so; an estimate within the range it states (compute_range: [lo, hi], relative)
        const range = comp.range ?? null;
        const rel = s.compute ? (comp.bytes - s.compute) / s.compute : comp.bytes ? Infinity : 0;
        let pass;
        if (!comp.estimate) pass = comp.bytes === s.compute;
        else if (range) pass = s.compute === 0 ? comp.bytes === 0 : rel >= range[0] - 1e-9 && rel <= range[1] + 1e-9;
        else pass = false; // an estimate without a stated range is a defect (issue 24)
        checks.push({ device: name, what: "compute", pred: comp.bytes, meas: s.compute, pass, rel, estimate: !!comp.estimate, range });
    }
    return checks;
}

// ---------------------------------------------------------------------------------------------------------------
// measured error of the estimates

/// --ranges: the lowest and highest relative error of kvfit's estimated compute buffers, per placement class and
/// device kind (GPU, host), over these rows, into data/llamacpp_cuda_compute_error.json (kvfit prints them beside
/// every estimate: gpu_compute_error, compute_sched.cpp). Widened by 2 points each way: the rows are the suite's
/// shapes, a model outside them can err a little further.
function writeRanges(release, results, log) {
    const file = path.join(root, "data/llamacpp_cuda_compute_error.json");
    const doc = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
    const ranges = {};
    for (const r of results) {
        if (r.cls === "cpu") continue;
        for (const k of r.checks) {
            if (k.what !== "compute" || !k.estimate || !(k.meas > 0) || !Number.isFinite(k.rel)) continue;
            const key = `${r.cls}|${k.device === "host" ? "host" : "gpu"}`;
            const e = ranges[key] ?? { lo: Infinity, hi: -Infinity, rows: 0 };
            e.lo = Math.min(e.lo, k.rel); e.hi = Math.max(e.hi, k.rel); e.rows += 1;
            ranges[key] = e;
        }
    }
    for (const e of Object.values(ranges)) { e.lo = Math.max(-1, Math.floor((e.lo - 0.02) * 1000) / 1000); e.hi = Math.ceil((e.hi + 0.02) * 1000) / 1000; }
    doc.about = "Measured error (estimate - llama.cpp) / llama.cpp of kvfit's estimated llama.cpp compute buffers with GPUs, " +
        "per placement class and device, on the CUDA conformance rows kvfit estimated (tests/conformance/cuda_conformance.mjs " +
        "--ranges; a simulated CUDA device running the release's own scheduler), widened by 2 points each way.";
    doc.releases = { ...(doc.releases ?? {}), [release]: Object.fromEntries(Object.entries(ranges).sort()) };
    fs.writeFileSync(file, JSON.stringify(doc, null, 1) + "\n");
    log(`cuda_conformance: wrote the estimates' measured error for ${release} to ${path.relative(root, file)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// report

const pct = (x) => (x === Infinity ? "inf" : `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)} %`);
const mib = (b) => `${(b / MiB).toFixed(2)}`;

/// --shapes: each row's shape as the templates saw it (tests/conformance/shapes.mjs): "held out" (never fitted on: the
/// proof that the template generalises), "recorded" (fitted on), or "suite model" (a family's base model)
async function shapeRoles() {
    const { FAMILIES, shapesOf } = await import("./shapes.mjs");
    const roles = new Map();
    for (const [f, fam] of Object.entries(FAMILIES)) if (fam.base) roles.set(fam.base, { family: f, role: "recorded (suite model)" });
    for (const s of shapesOf([])) roles.set(s.id, { family: s.family, role: s.role === "record" ? "recorded" : "held out" });
    return roles;
}

function renderReport(meta, rows, roles = null) {
    const out = [`# kvfit's CUDA plans against llama.cpp ${meta.release} on a simulated CUDA device`, "",
        `Generated by \`tests/conformance/cuda_conformance.mjs\` on ${meta.date} (${meta.host}), ${meta.source}. ` +
        "The device: `tools/simcuda` builds the release's own ggml-cuda host code (device init, buffer types, " +
        "`supports_op`, `offload_op`, `get_alloc_size`, `graph_optimize`) against a CUDA runtime that answers for simulated " +
        `GPUs (${SIM_GPU.split(",")[0]}, compute capability ${SIM_GPU.split(",")[1]}); llama.cpp's scheduler and allocator run unchanged in the ` +
        "release's shipped libraries, in no_alloc mode (every buffer sized, none allocated), through `probe/llama_probe`. " +
        "kvfit plans each row through its command line (`--backend cuda --gpu 24080MiB[,…] --no-mmap --n-outputs-max batch` and the " +
        "row's flags). Weights and KV + state are compared exactly per device; a compute buffer must be exact where kvfit " +
        "says it is, and inside the measured range kvfit prints beside it where it is an estimate.", ""];
    const ok = rows.filter((r) => r.pass).length;
    out.push(`**${ok} of ${rows.length} rows pass.**`, "");
    // per class and device kind: the compute error distribution
    const groups = new Map();
    for (const r of rows) {
        for (const k of r.checks.filter((x) => x.what === "compute" && (x.meas > 0 || x.pred > 0))) {
            const key = `${r.cls}|${k.device === "host" ? "host" : "GPU"}`;
            if (!groups.has(key)) groups.set(key, []);
            groups.get(key).push(k);
        }
    }
    out.push("| placement | device | rows | exact | within 5 % | worst under | median | worst over | kvfit's rule |", "|---|---|---|---|---|---|---|---|---|");
    for (const [key, ks] of [...groups].sort()) {
        const [cls, dev] = key.split("|");
        const e = ks.map((k) => k.rel).sort((a, b) => a - b);
        const rule = ks.some((k) => !k.estimate) ? (ks.every((k) => !k.estimate) ? "exact" : "exact / estimate") : "estimate";
        out.push(`| ${cls} | ${dev} | ${ks.length} | ${e.filter((x) => x === 0).length} | ${e.filter((x) => Math.abs(x) <= 0.05).length} | ` +
            `${pct(e[0])} | ${pct(e[Math.floor(e.length / 2)])} | ${pct(e[e.length - 1])} | ${rule} |`);
    }
    if (roles) {
        // the shapes apart: what the templates were fitted on, and the siblings they never saw
        out.push("", "## Shapes: fitted on, and held out", "", "A held-out shape was never seen by the template's fit " +
            "(tests/conformance/shapes.mjs `check`): its rows prove the template generalises to other dimensions.", "",
            "| family | shape | role | rows | pass |", "|---|---|---|---|---|");
        const byShape = new Map();
        for (const r of rows) {
            const id = r.model.replace(/_v\d+$/, "");
            const e = byShape.get(r.model) ?? { id, n: 0, ok: 0 };
            e.n += 1; e.ok += r.pass ? 1 : 0;
            byShape.set(r.model, e);
        }
        for (const [model, e] of [...byShape].sort()) {
            const ro = roles.get(e.id) ?? { family: "?", role: "?" };
            out.push(`| ${ro.family} | ${model} | ${ro.role} | ${e.n} | ${e.ok} |`);
        }
        out.push("");
    }
    out.push("", "## Rows", "", "| model | placement | context | device: compute llama.cpp / kvfit MiB (error) | result |", "|---|---|---|---|---|");
    for (const r of rows) {
        const c = r.ctx;
        const ctx = `c ${c.n_ctx}, fa ${c.fa}, ub ${c.n_ubatch}${c.type_k ? `, ${c.type_k}` : ""}${(c.n_seq ?? 1) > 1 ? `, np ${c.n_seq}` : ""}${c.kqv_offload === 0 ? ", no KV offload" : ""}`;
        const place = `${r.n_gpu} GPU${r.n_gpu > 1 ? "s" : ""}, ${Object.entries(r.mopts).map(([k, v]) => `${k} ${v}`).join(", ")}`;
        const comp = r.checks.filter((k) => k.what === "compute" && (k.meas || k.pred)).map((k) => `${k.device} ${mib(k.meas)} / ${mib(k.pred)} (${pct(k.rel)}${k.estimate ? ", est." : ""})`).join("; ");
        const fails = r.checks.filter((k) => !k.pass).map((k) => `${k.device} ${k.what} ${k.pred} vs ${k.meas}`);
        out.push(`| ${r.model} | ${place} | ${ctx} | ${comp || (r.error ?? "")} | ${r.pass ? "pass" : `**FAIL** ${fails.join(", ") || r.error || ""}`} |`);
    }
    out.push("", `${ok} passed, ${rows.length - ok} failed`);
    return out.join("\n") + "\n";
}

// ---------------------------------------------------------------------------------------------------------------

async function main() {
    const args = process.argv.slice(2);
    const opt = (name, dflt) => { const i = args.indexOf(name); return i < 0 ? dflt : args[i + 1]; };
    const release = checkRelease(opt("--release", "v0.5.0"));
    const kvfit = opt("--kvfit", path.join(root, "build/kvfit"));
    const probe = opt("--probe", path.join(root, "build/probe", release, "llama_probe"));
    const simcuda = opt("--simcuda", path.join(root, "build/simcuda", release, "libggml-cuda.so"));
    const modelsDir = path.resolve(opt("--models", args.includes("--shapes") ? path.join(root, "build/shapes") : path.join(root, "build/conformance/models", release)));
    const resultsFile = opt("--results", path.join(root, `build/conformance/cuda-results-${release}.json`));
    const outFile = opt("--out", path.join(root, args.includes("--shapes") ? `docs/accuracy-cuda-shapes-${release}.md` : `docs/accuracy-cuda-${release}.md`));
    const from = opt("--from", null);
    const only = opt("--only", null)?.split(",") ?? null;
    // --shapes: the sibling shapes of tests/conformance/shapes.mjs (build/shapes), every placement for each, their own
    // committed rows
    const shapes = args.includes("--shapes");
    const committedFile = opt("--committed", path.join(here, "measured", shapes ? `cuda-shapes-${release}.jsonl` : `cuda-${release}.jsonl`));
    const log = (s) => process.stderr.write(s + "\n");
    const t0 = performance.now();

    const committed = fs.existsSync(committedFile) ? fs.readFileSync(committedFile, "utf8").trim().split("\n").filter(Boolean).map((x) => JSON.parse(x)) : [];
    let rows, source;
    if (from) {
        rows = fs.readFileSync(from, "utf8").trim().split("\n").filter(Boolean).map((x) => JSON.parse(x))
            .filter((r) => !only || only.includes(r.model.replace(/_v\d+$/, "")));
        source = `the rows of ${path.relative(root, path.resolve(from))} (not measured in this run)`;
    } else {
        if (!fs.existsSync(probe) || !fs.existsSync(simcuda)) { log(`cuda_conformance: no ${!fs.existsSync(probe) ? probe : simcuda}`); process.exit(2); }
        rows = measure({ probe, simcuda, modelsDir, only, log, allPlacements: shapes });
        source = "measured live";
    }
    const byKey = new Map(committed.map((r) => [rowKey(r), r]));
    const results = [];
    for (const r of rows) {
        const res = { ...r, checks: [], pass: true };
        if (!from && committed.length) {
            const c = byKey.get(rowKey(r));
            const same = c && JSON.stringify(c.breakdown) === JSON.stringify(r.breakdown) && c.ok === r.ok;
            if (!same) { res.pass = false; res.error = c ? "live figures differ from measured/" : "no committed row"; }
        }
        if (!r.ok) {
            // llama.cpp refused the context (e.g. 4 sequences over Kimi-Linear's state): kvfit must refuse too
            const k = spawnSync(kvfit, kvfitArgv(r, modelsDir, release), { encoding: "utf8" });
            res.checks.push({ device: "-", what: "refusal", pred: `exit ${k.status}`, meas: "refused", pass: k.status === 2 });
        } else {
            const k = spawnSync(kvfit, kvfitArgv(r, modelsDir, release), { encoding: "utf8", maxBuffer: 1 << 26 });
            if (k.status !== 0 && k.status !== 3) {
                res.checks.push({ device: "-", what: "kvfit", pred: `exit ${k.status}`, meas: "planned", pass: false });
                res.error = (k.stderr || "").trim().split("\n").slice(-1)[0];
            } else res.checks.push(...compareRow(r, JSON.parse(k.stdout)));
        }
        res.pass = res.pass && res.checks.every((k) => k.pass);
        results.push(res);
    }
    if (args.includes("--ranges")) writeRanges(release, results, log);
    if (args.includes("--update") && !from) {
        fs.writeFileSync(committedFile, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
        log(`cuda_conformance: wrote ${rows.length} rows to ${path.relative(root, committedFile)}`);
    }
    const seconds = (performance.now() - t0) / 1000;
    const meta = { release, date: new Date().toISOString().slice(0, 10), host: `${hostCpu().model}, ${os.cpus().length} cores`, source, seconds };
    fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
    fs.writeFileSync(resultsFile, JSON.stringify({ meta, rows: results }, null, 1));
    fs.mkdirSync(path.dirname(outFile), { recursive: true });
    fs.writeFileSync(outFile, renderReport(meta, results, shapes ? await shapeRoles() : null));
    const failed = results.filter((r) => !r.pass);
    for (const r of failed.slice(0, 40)) log(`FAIL cuda ${r.model} ${r.cls} ${JSON.stringify(r.mopts)} x${r.n_gpu} ${r.ctx.name}: ${r.error ?? ""} ${r.checks.filter((k) => !k.pass).map((k) => `${k.device} ${k.what} kvfit ${k.pred} llama.cpp ${k.meas}`).join("; ")}`);
    log(`simulated CUDA ${release}: ${results.length - failed.length} passed, ${failed.length} failed in ${seconds.toFixed(1)} s; report ${path.relative(process.cwd(), outFile)}`);
    process.exit(failed.length ? 1 : 0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main().catch((e) => { console.error(e); process.exit(2); });
