#!/usr/bin/env node
// The conformance suite against one llama.cpp release (releases.mjs): for every architecture that applies to it
// (suite.mjs: models.mjs + models_*.mjs), write shape-exact GGUFs (generate.mjs), let kvfit predict each case of the
// matrix (matrix.mjs), measure the same case on the real llama.cpp of that release (measure.mjs), compare buffer by
// buffer (compare.mjs) and write docs/accuracy-<release>.md. Exit status 1 when any case fails.
//
// usage: node conformance.mjs [--release 5b4ebc5|v0.5.0] [--kvfit PATH] [--gguf-write PATH] [--models DIR]
//                             [--out FILE] [--results FILE] [--no-alloc-only] [--threads N] [ID...]
// kvfit is called with --llamacpp-version <release>, so it predicts that release's rules (KVFIT_PASS_RULES=0: not told)
// (without it kvfit uses its default rules, whatever the release measured).
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ALL_MODELS as MODELS, modelsFor } from "./suite.mjs";
import { RELEASES, checkRelease, defaultRelease } from "./releases.mjs";
import { hostCpu, kvfitCpuFeatures } from "./cpu.mjs";
import { generate, SMALL_VOCAB, defaultGgufWrite } from "./generate.mjs";
import { smallVocabCases, realVocabCases, measureAllocated } from "./matrix.mjs";
import { Harness, bundledRelease } from "./measure.mjs";
import { compareCase, COMPUTE_TOLERANCE } from "./compare.mjs";
import { renderReport } from "./report.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
const flag = (name) => { const i = args.indexOf(name); if (i < 0) return false; args.splice(i, 1); return true; };
const release = checkRelease(opt("--release", defaultRelease()));
const kvfit = opt("--kvfit", process.env.KVFIT ?? path.join(root, "build/kvfit"));
const ggufWrite = opt("--gguf-write", defaultGgufWrite());
const modelsDir = opt("--models", path.join(root, "build/conformance/models"));
const outFile = opt("--out", path.join(root, `docs/accuracy-${release}.md`));
const resultsFile = opt("--results", path.join(root, `build/conformance/results-${release}.json`));
const threads = Number(opt("--threads", "2"));
const noAllocOnly = flag("--no-alloc-only");
const passRules = process.env.KVFIT_PASS_RULES !== "0"; // kvfit predicts the release measured (KVFIT_PASS_RULES=0: its default)
// The CPU the weights are measured on (the host's /proc/cpuinfo flags that decide ggml's CPU variant, cpu.mjs), so kvfit
// predicts the extra buffers (AMX, CPU_REPACK) of that host. --cpu-features X: another CPU (with a runtime that loads
// that variant: cpu_variant.mjs and $CONFORMANCE_NODE_MODULES).
const cpuFeatures = opt("--cpu-features", kvfitCpuFeatures(hostCpu().flags));
for (const id of args) if (!MODELS[id]) { console.error(`unknown model '${id}' (known: ${Object.keys(MODELS).join(", ")})`); process.exit(2); }
const notForRelease = args.filter((id) => !MODELS[id].releases.includes(release));
if (notForRelease.length) console.error(`release ${release}: skipping ${notForRelease.join(", ")} (releases: ${notForRelease.map((id) => MODELS[id].releases.join("/")).join(", ")})`);
const ids = args.length ? args.filter((id) => MODELS[id].releases.includes(release)) : modelsFor(release);

const settingsOf = (c) => `c${c.n_ctx} np${c.n_seq} fa${c.flash_attn ? 1 : 0} ${c.type_k}/${c.type_v} ub${c.n_ubatch}${c.swa_full ? " swa_full" : ""}`;

/// kvfit's prediction for a case: {pred} or {rc, error}. mode "alloc": a real load with mmap (node-llama-cpp's
/// default); "no_alloc": llama.cpp sizes each buffer type's tensors once, as a load without mmap allocates them, so
/// kvfit is told --no-mmap (docs/rules/llamacpp-cpu-repack.md, "What the model memory breakdown counts").
/// --n-outputs-max batch: the addon keeps libllama's n_outputs_max = n_batch (llama-context.cpp:250), where kvfit's
/// default is llama-server's n_parallel (server_output_limits).
function predict(gguf, c, mode) {
    const argv = [gguf, "-c", String(c.n_ctx), "-np", String(c.n_seq), "-ctk", c.type_k, "-ctv", c.type_v,
        "-fa", c.flash_attn ? "on" : "off", "-ub", String(c.n_ubatch), "-b", String(c.n_ubatch), ...(c.swa_full ? ["--swa-full"] : []),
        "--n-outputs-max", "batch",
        ...(passRules ? ["--llamacpp-version", release] : []), "--cpu-features", cpuFeatures,
        ...(mode === "no_alloc" ? ["--no-mmap"] : []), "--json"];
    const r = spawnSync(kvfit, argv, { encoding: "utf8" });
    if (r.status === 0) return { pred: JSON.parse(r.stdout), rc: 0, command: `kvfit ${argv.slice(1).join(" ")}` };
    return { pred: null, rc: r.status, error: (r.stderr || r.error?.message || "").trim(), command: `kvfit ${argv.slice(1).join(" ")}` };
}

async function main() {
    const t0 = performance.now();
    const h = new Harness({ threads, release });
    await h.init();
    const bundled = bundledRelease(release);
    if (bundled.build_commit && bundled.build_commit !== RELEASES[release].build_commit) {
        console.error(`release ${release}: the installed runtime is build ${bundled.build_commit}, expected ${RELEASES[release].build_commit}`);
        process.exit(2);
    }
    const preferred = new Set(), extraBuffers = {};
    const rows = [];
    let kvfitRules = null, kvfitCpu = null;
    const log = (s) => process.stderr.write(s + "\n");

    for (const id of ids) {
        const variants = [
            { n_vocab: SMALL_VOCAB, cases: smallVocabCases({ swa: !!MODELS[id].swa }) },
            { n_vocab: MODELS[id].n_vocab, cases: realVocabCases() },
        ];
        for (const v of variants) {
            const tm = performance.now();
            const gguf = generate(id, v.n_vocab, modelsDir, ggufWrite);
            const predsOf = { no_alloc: v.cases.map((c) => predict(gguf, c, "no_alloc")) };
            if (!noAllocOnly && v.n_vocab === SMALL_VOCAB) predsOf.alloc = v.cases.map((c) => predict(gguf, c, "alloc"));
            const preds = predsOf.alloc ?? predsOf.no_alloc;
            kvfitRules ??= preds.find((p) => p.pred)?.pred.rules ?? null;
            kvfitCpu ??= preds.find((p) => p.pred)?.pred.detail?.cpu_backend ?? null;
            // real allocation: small cases of the small-vocabulary files that llama.cpp accepted in no_alloc mode
            // (each such load reads the whole file once: MAP_POPULATE)
            const accepted = new Set();
            const modes = [["no_alloc", () => v.cases.map((c, i) => i)]];
            if (!noAllocOnly && v.n_vocab === SMALL_VOCAB)
                modes.push(["alloc", () => v.cases.map((c, i) => i).filter((i) => accepted.has(i) && measureAllocated(v.cases[i], preds[i].pred))]);
            for (const [mode, select] of modes) {
                const which = select();
                if (!which.length) continue;
                const m = await h.loadModel(gguf, { noAlloc: mode === "no_alloc" });
                if (m.ok) {
                    if (m.info.preferred_buft) preferred.add(m.info.preferred_buft);
                    for (const [b, mib] of Object.entries(m.info.model_buffers)) if (!/^CPU(_Mapped)?$/.test(b) && mib > 0)
                        (extraBuffers[b] ??= []).push(`${id} v${v.n_vocab} ${mib.toFixed(2)} MiB`);
                }
                if (!m.ok) {
                    for (const i of which) rows.push({ id, name: MODELS[id].name, n_vocab: v.n_vocab, mode, settings: settingsOf(v.cases[i]),
                        case: v.cases[i], command: predsOf[mode][i].command, pass: false,
                        checks: [{ name: "load", pass: false, pred: "", meas: `${m.error}: ${m.log_tail.slice(-3).join(" | ")}`, diff: null, note: "" }] });
                    continue;
                }
                const mp = predsOf[mode];
                for (const i of which) {
                    const c = v.cases[i];
                    const meas = await h.measureContext(m.addon, c);
                    if (meas.ok) accepted.add(i);
                    const res = compareCase({ c, pred: mp[i].pred, rc: mp[i].rc, kvfitError: mp[i].error, meas, model: m.info, mode });
                    rows.push({ id, name: MODELS[id].name, n_vocab: v.n_vocab, mode, settings: settingsOf(c), case: c, command: mp[i].command, ...res,
                        ctx_cpuRam_bytes: meas.ctx_cpuRam_bytes ?? null, graph_nodes: meas.graph_nodes ?? null });
                }
                await h.disposeModel(m.addon);
            }
            const done = rows.filter((r) => r.id === id && r.n_vocab === v.n_vocab);
            log(`${id} v${v.n_vocab}: ${done.filter((r) => r.pass).length}/${done.length} passed (${Math.round(performance.now() - tm)} ms)`);
            // what failed, in the log itself (CI keeps only the log; the report is written on the CI machine)
            for (const r of done.filter((r) => !r.pass))
                for (const k of r.checks.filter((k) => !k.pass))
                    log(`  FAILED ${r.mode} ${r.settings}: ${k.name}: kvfit ${JSON.stringify(k.pred)}, llama.cpp ${JSON.stringify(k.meas)}${k.note ? ` (${k.note})` : ""}`);
        }
    }
    await h.dispose();

    const seconds = (performance.now() - t0) / 1000;
    const cpu = hostCpu();
    const meta = { release: bundled, release_id: release, date: new Date().toISOString().slice(0, 10), seconds,
        host: `${cpu.model}, ${os.cpus().length} cores`,
        cpu: { model: cpu.model, cores: cpu.cores, variant_from_flags: cpu.variant, score: cpu.score,
            amx_flags: [...cpu.flags].filter((f) => f.startsWith("amx")), avx512_flags: [...cpu.flags].filter((f) => f.startsWith("avx512")) },
        cpu_backend: h.cpuBackend, preferred_buffer_types: [...preferred], extra_model_buffers: extraBuffers,
        kvfit_cpu_features: cpuFeatures, kvfit_cpu_variant: kvfitCpu?.variant ?? null,
        models: ids, compute_tolerance: COMPUTE_TOLERANCE, kvfit_rules: kvfitRules, kvfit_pass_rules: passRules, threads };
    fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
    fs.writeFileSync(resultsFile, JSON.stringify({ meta, rows }, null, 1));
    fs.mkdirSync(path.dirname(outFile), { recursive: true });
    fs.writeFileSync(outFile, renderReport(meta, rows));
    const failed = rows.filter((r) => !r.pass).length;
    log(`release ${release}: ${rows.length - failed} passed, ${failed} failed in ${seconds.toFixed(1)} s (CPU backend ${h.cpuBackend ?? "?"}); report ${path.relative(process.cwd(), outFile)}`);
    process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.error(e); process.exit(3); });
