#!/usr/bin/env node
// Measures what the node-llama-cpp addon cannot reach, through probe/llama_probe (the release's own libllama,
// CPU build): MTP draft contexts beside their target, recurrent-state snapshots (n_rs_seq), llama-server's
// n_outputs_max, draft models, LoRA adapters and context checkpoints. Writes measured/spec-<group>.<release>.jsonl.
//
//   node measure_spec.mjs [--release v0.5.0|5b4ebc5] [--models DIR] [--only GROUP,...] [--gguf-write PATH] [--out-dir DIR]
//   --profile ci: the subset the conformance suite measures on every run (spec_conformance.mjs, run.sh): the rows
//   marked CI below, each one a row of the full profile (the default), so the committed files can check it
//   --out-dir: where the spec-<group>.<release>.jsonl files go (default measured/, the committed files the GoogleTests
//   replay; the conformance suite's live run, spec_conformance.mjs, writes into build/ instead)
//   groups: mtp (MTP contexts of every MTP architecture), k6 (Qwen3.6-27B K6 command), draft (a -md draft model),
//           outputs (plain llama-server contexts: n_outputs_max = n_parallel),
//           lora (adapters), ckpt (checkpoints after decoding, allocated)
//
// Each JSON line: {group, model, release, req (what was asked), ok, n_ctx, n_ctx_seq, breakdown (llama's memory
// breakdown per buffer type, exact bytes), parsed (measure.mjs parseContextLog of the context's log lines),
// raw (the log lines the figures were read from), ...state sizes}.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseContextLog } from "./measure.mjs";
import { specOfModel, ALL_MODELS } from "./suite.mjs";
import { SPEC_MODELS, specOfSpec, qwenvlMmproj, gemma3Mmproj, MMPROJ_SHAPES } from "./spec_models.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i < 0 ? dflt : args[i + 1]; };
const release = opt("--release", "v0.5.0");
const modelsDir = opt("--models", path.join(root, "build/spec/models"));
const tool = opt("--gguf-write", process.env.KVFIT_GGUF_WRITE ?? "/work/scratch/bin/kvfit-gguf-write");
const only = opt("--only", "mtp,k6,draft,lora,ckpt,mmproj").split(",");
const outDir = opt("--out-dir", path.join(here, "measured"));
const profile = opt("--profile", "full");
if (!["full", "ci"].includes(profile)) throw new Error(`--profile ${profile}: full or ci`);
const CI = profile === "ci";
const probe = path.join(root, "build/probe", release, "llama_probe");
if (!fs.existsSync(probe)) throw new Error(`${probe} missing: run tests/conformance/probe/build_probe.sh ${release}`);

/// writes the sparse GGUF of a suite model (suite id @ n_vocab) or of a spec_models.mjs id
function gguf(id, n_vocab) {
    fs.mkdirSync(modelsDir, { recursive: true });
    const spec = SPEC_MODELS[id] ? specOfSpec(id) : specOfModel(id, n_vocab);
    const base = path.join(modelsDir, SPEC_MODELS[id] ? id : `${id}_v${n_vocab}`);
    const text = JSON.stringify(spec);
    if (!(fs.existsSync(`${base}.gguf`) && fs.existsSync(`${base}.json`) && fs.readFileSync(`${base}.json`, "utf8") === text)) {
        fs.writeFileSync(`${base}.json`, text);
        execFileSync(tool, [`${base}.json`, `${base}.gguf`], { stdio: ["ignore", "pipe", "inherit"] });
    }
    return `${base}.gguf`;
}

const kvargs = (o) => Object.entries(o).map(([k, v]) => `${k}=${typeof v === "boolean" ? (v ? 1 : 0) : v}`);

/// why the probe failed: llama.cpp's error lines of the model or context it printed (its stderr is empty: every log
/// line goes into the JSON on stdout), else the exception's text
function probeError(e) {
    const out = String(e.stdout ?? "").split("\n").filter(Boolean).map((x) => { try { return JSON.parse(x); } catch { return null; } });
    const bad = out.find((x) => x && x.ok === false);
    const why = (bad?.log ?? []).filter((l) => /error|failed|wrong|assert/i.test(l)).slice(-2).join(" | ");
    return (why || String(e.stderr || e.message)).slice(-600);
}

/// runs the probe once: model options + contexts; returns the parsed JSON lines
function runProbe(model, mopts, ctxs) {
    const argv = [model, ...kvargs(mopts)];
    for (const c of ctxs) argv.push("--ctx", ...kvargs(c));
    const out = execFileSync(probe, argv, { maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] }).toString();
    return out.trim().split("\n").map((l) => JSON.parse(l));
}

const KEEP = /^(llama_context: (n_ctx|n_ctx_seq|n_batch|n_ubatch|n_seq_max|n_rs_seq|n_outputs_max|flash_attn|kv_unified)|.*(KV buffer|RS buffer|output buffer|compute buffer|LoRA buffer|model buffer| size = |creating|worst-case|padding V|loaded \d+ tensors))/;

/// one group: runs the contexts and writes the lines
function measure(group, modelId, mopts, ctxs, lines, extra = {}) {
    const file = typeof modelId === "string" && modelId.endsWith(".gguf") ? modelId : null;
    const res = runProbe(file ?? modelId, mopts, ctxs);
    const model = res.find((r) => r.kind === "model");
    const loras = res.filter((r) => r.kind === "lora");
    if (!model.ok) {
        lines.push({ group, model: path.basename(file ?? modelId), release, ok: false, kind: "model", log_tail: model.log.slice(-8) });
        return;
    }
    const mline = { group, kind: "model", model: path.basename(file ?? modelId), release, mopts, n_layer: model.n_layer,
        n_layer_nextn: model.n_layer_nextn, model_buffers: model.log.filter((l) => /model buffer size/.test(l)) };
    lines.push(mline);
    for (const l of loras) {
        const raw = l.log.filter((x) => KEEP.test(x) || /lora|LoRA|adapter/.test(x)).filter((x) => !/- kv /.test(x));
        const m = l.log.map((x) => /^\S+:\s+(\S+) LoRA buffer size =\s+([0-9.]+) MiB/.exec(x)).filter(Boolean);
        const nt = l.log.map((x) => /loaded (\d+) tensors from lora file/.exec(x)).find(Boolean);
        lines.push({ group, kind: "lora", model: path.basename(file), lora: path.basename(l.path), release, ok: l.ok,
            lora_buffers_MiB: Object.fromEntries(m.map((x) => [x[1], Number(x[2])])), n_tensors: nt ? Number(nt[1]) : null, raw, ...extra });
    }
    const cres = res.filter((r) => r.kind === "context");
    cres.forEach((r, i) => {
        const parsed = parseContextLog(r.log);
        delete parsed.raw;
        const { log, kind, opts, ...rest } = r;
        lines.push({ group, kind: "context", model: path.basename(file), release, req: ctxs[i], ...rest, parsed,
            raw: log.filter((x) => KEEP.test(x)), ...extra });
    });
}

const groups = {
    // MTP contexts next to their target, for every architecture with an MTP block that both releases load.
    mtp(lines) {
        const models = [
            ["qwen35-9b-mtp", 512, 2, true], ["qwen35-27b-mtp", 512, 2, true], ["qwen35moe-35b", 512, 2, true],
            ["nemotron3-super-120b", 512, 2, true], ["deepseek-v3.2", 512, 0, false], ["glm-5", 512, 0, false],
            ["mimo2-v2-flash", 512, 0, false], ["step35-3.7-flash-mtp", 512, 0, false], ["deepseek-v4-flash-mtp", 512, 2, true],
            ["glm-5-idxtypes", 512, 0, false],
        ];
        const MLA = ["deepseek-v3.2", "glm-5", "glm-5-idxtypes"];
        // CI: every model that makes an MTP context (MiMo-V2-Flash's MTP graph asserts with the suite's builder, so it
        // has no row to compare), the larger ones at two of the four target / MTP pairs (they take 2-4 s a pair)
        const CI_PAIRS = { "qwen35-27b-mtp": ["c4096_s1_n2_f16", "c32768_s2_n2_q8_0"], "qwen35moe-35b": ["c4096_s1_n2_f16", "c32768_s2_n2_q8_0"],
            "nemotron3-super-120b": ["c4096_s1_n2_f16", "c32768_s2_n2_q8_0"] };
        for (const [id, nv, , rs] of models) {
            if (CI && id === "mimo2-v2-flash") continue;
            let file;
            try { file = gguf(id, nv); } catch (e) { lines.push({ group: "mtp", model: id, release, ok: false, error: String(e.message).slice(0, 300) }); continue; }
            const ctxs = [];
            for (const [n_ctx, n_seq, n_max, tk] of [[4096, 1, 2, "f16"], [32768, 1, 3, "f16"], [32768, 2, 2, "q8_0"], [65536, 1, 2, "f16"]]) {
                if (CI && CI_PAIRS[id] && !CI_PAIRS[id].includes(`c${n_ctx}_s${n_seq}_n${n_max}_${tk}`)) continue;
                const base = { n_ctx, n_seq, n_batch: 2048, n_ubatch: 512, fa: "on", threads: 1 };
                // the target: llama-server's n_rs_seq = --spec-draft-n-max (common.h need_n_rs_seq), n_outputs_max
                // = n_parallel * (1 + n_max) (server_output_limits), per seq 1 + n_max
                ctxs.push({ ...base, id: `tgt_c${n_ctx}_s${n_seq}_n${n_max}_${tk}`, type_k: tk, type_v: tk, n_rs_seq: n_max,
                    n_outputs_max: n_seq * (1 + n_max), n_outputs_max_per_seq: 1 + n_max, keep: 1 });
                // the MTP draft context (common_speculative_init_result): same n_ctx / n_seq / batch, -ctkd/-ctvd
                // default f16, n_rs_seq 0, n_outputs_max = n_parallel, per seq 1, ctx_other = target
                ctxs.push({ ...base, id: `mtp_c${n_ctx}_s${n_seq}_n${n_max}_${tk}`, type_k: "f16", type_v: "f16", ctx_type: "mtp",
                    n_outputs_max: n_seq, n_outputs_max_per_seq: 1, other: "prev" });
            }
            if (MLA.includes(id)) { // MLA without flash attention: the draft's compute is target-sized, its KV is not
                const base = { n_ctx: 65536, n_seq: 1, n_batch: 2048, n_ubatch: 512, fa: "off", threads: 1 };
                ctxs.push({ ...base, id: "tgt_c65536_s1_n2_f16_faoff", n_rs_seq: 2, n_outputs_max: 3, n_outputs_max_per_seq: 3, keep: 1 });
                ctxs.push({ ...base, id: "mtp_c65536_s1_n2_f16_faoff", ctx_type: "mtp", n_outputs_max: 1, n_outputs_max_per_seq: 1, other: "prev" });
            }
            try { measure("mtp", file, { no_alloc: 1, load_mtp: 1, mmap: 0 }, ctxs, lines, { model_id: id }); }
            catch (e) { lines.push({ group: "mtp", model: id, release, ok: false, error: probeError(e) }); }
        }
    },
    // K6: Qwen3.6-27B (= Qwen3.5-27B shape + MTP), real vocabulary, -b 4096 -ub 1024 -np 1 --spec-draft-n-max 2,
    // at the context sizes the fit tries (4096 = --fit-ctx, 262144 = n_ctx_train) and the ones it chose.
    k6(lines) {
        const file = gguf("qwen35-27b-mtp-v248320");
        const ctxs = [];
        // CI: the fit's two ends (--fit-ctx 4096, n_ctx_train) and the context it chose (190,464)
        for (const n_ctx of CI ? [4096, 190464, 262144] : [4096, 184320, 188672, 190464, 218368, 262144]) {
            const base = { n_ctx, n_seq: 1, n_batch: 4096, n_ubatch: 1024, fa: "on", threads: 1 };
            ctxs.push({ ...base, id: `tgt_${n_ctx}`, n_rs_seq: 2, n_outputs_max: 3, n_outputs_max_per_seq: 3, keep: 1 });
            ctxs.push({ ...base, id: `mtp_${n_ctx}`, ctx_type: "mtp", n_outputs_max: 1, n_outputs_max_per_seq: 1, other: "prev" });
            ctxs.push({ ...base, id: `plain_${n_ctx}`, n_rs_seq: 0, n_outputs_max: 1, n_outputs_max_per_seq: 1 });
        }
        measure("k6", file, { no_alloc: 1, load_mtp: 1, mmap: 0 }, ctxs, lines, { model_id: "qwen35-27b-mtp-v248320" });
    },
    // a draft model (-md): its own model, its own context at the target's n_ctx / n_seq / n_batch / n_ubatch,
    // -ctkd/-ctvd types, n_rs_seq 0, n_outputs_max = n_parallel (common_base_params_to_speculative)
    draft(lines) {
        const file = gguf("qwen35-9b", 248320);
        const ctxs = [];
        for (const [n_ctx, n_seq, tk] of [[32768, 1, "f16"], [32768, 4, "q8_0"]]) {
            ctxs.push({ id: `draft_c${n_ctx}_s${n_seq}_${tk}`, n_ctx, n_seq, n_batch: 2048, n_ubatch: 512, fa: "on", type_k: tk, type_v: tk,
                n_outputs_max: n_seq, n_outputs_max_per_seq: 1, threads: 1 });
            ctxs.push({ id: `dflt_c${n_ctx}_s${n_seq}_${tk}`, n_ctx, n_seq, n_batch: 2048, n_ubatch: 512, fa: "on", type_k: tk, type_v: tk, threads: 1 });
        }
        measure("draft", file, { no_alloc: 1, mmap: 0 }, ctxs, lines, { model_id: "qwen35-9b_v248320" });
    },
    // LoRA adapters on Llama-3.1-8B (512 tokens): the adapter buffer, allocated (no_alloc=0 so the adapter's
    // buffer is really created), one tiny context with the adapters applied
    lora(lines) {
        const file = gguf("llama31-8b-v512");
        const adapters = ["llama31-8b-lora-r16", "llama31-8b-lora-r64-ffn", "llama31-8b-lora-r32-q8"].map((id) => gguf(id));
        // CI: the three adapters loaded together, no context (decoding 8 tokens through Llama-3.1-8B takes ~8 s a context)
        const runs = CI ? [adapters] : [[adapters[0]], [adapters[1]], [adapters[2]], adapters];
        for (const set of runs) {
            const argv = { no_alloc: 0, mmap: 1 };
            const res = runProbeWithLoras(file, argv, set, CI ? [] : [{ id: "ctx_lora", n_ctx: 1024, n_batch: 512, n_ubatch: 512, lora_apply: 1, decode: 8, threads: 2 },
                { id: "ctx_nolora", n_ctx: 1024, n_batch: 512, n_ubatch: 512, decode: 8, threads: 2 }]);
            for (const r of res) lines.push({ group: "lora", release, model: path.basename(file), set: set.map((s) => path.basename(s)), ...r });
        }
    },
    // llama-server without speculative decoding: load_model sets n_outputs_max = server_output_limits(params).total =
    // min(n_batch, n_parallel x (1 + 0)) (server-context.cpp:41-53, 1014-1016; speculative.cpp:2606-2615), so the pp
    // graph reserves logits for n_parallel rows (llama-context.cpp:672 n_outputs_pp), not the addon's n_batch. Plain
    // target contexts of the suite's architectures (header-only GGUFs of tests/data/gguf_synthetic, real vocabulary)
    // at -np 1 and -np 4 with n_outputs_max = n_parallel ("srv_*"), and one with libllama's default ("lib_*").
    outputs(lines) {
        const ids = ["llama31-8b", "qwen35-9b", "gpt-oss-20b", "gemma3-12b", "deepseek-v2-lite", "mamba2-2.7b",
            "nemotron-h-56b", "granite-4.0-h-small", "qwen3next-80b", "deepseek-v3.2", "glm-5", "kimi-k2.5",
            "mistral-small-4", "minimax-m3", "kimi-linear-48b", "qwen35moe-35b", "qwen3vlmoe-30b", "gpt-oss-120b",
            "gemma4-26b-a4b", "gemma4-kvshared12", "mimo2-v2-flash", "step35-3.7-flash", "minimax-m2.5",
            "nemotron3-super-120b", "deepseek-v4-flash", "qwen38-flash-next", "lfm2-1.2b"];
        const only = process.env.OUTPUTS_IDS ? process.env.OUTPUTS_IDS.split(",") : ids;
        for (const id of only.filter((x) => ALL_MODELS[x]?.releases.includes(release))) {
            const nv = ALL_MODELS[id]?.n_vocab;
            let file;
            try { file = gguf(id, nv); } catch (e) { lines.push({ group: "outputs", model: id, release, ok: false, error: String(e.message).slice(0, 300) }); continue; }
            const base = { n_ctx: 4096, n_batch: 2048, n_ubatch: 512, threads: 1 };
            const ctxs = [
                { ...base, id: "srv_s1_faon", n_seq: 1, fa: "on", n_outputs_max: 1, n_outputs_max_per_seq: 1 },
                { ...base, id: "srv_s4_faon", n_seq: 4, fa: "on", n_outputs_max: 4, n_outputs_max_per_seq: 1 },
                { ...base, id: "srv_s1_faoff", n_seq: 1, fa: "off", n_outputs_max: 1, n_outputs_max_per_seq: 1 },
                { ...base, id: "srv_s4_q8_faon", n_seq: 4, fa: "on", type_k: "q8_0", type_v: "q8_0", n_outputs_max: 4, n_outputs_max_per_seq: 1 },
                { ...base, id: "lib_s1_faon", n_seq: 1, fa: "on" },
            ];
            try { measure("outputs", file, { no_alloc: 1, mmap: 0 }, ctxs, lines, { model_id: `${id}_v${nv}` }); }
            catch (e) { lines.push({ group: "outputs", model: id, release, ok: false, error: String(e.stderr ?? e.message).slice(-600) }); }
        }
    },
    // context checkpoints: llama_state_seq_get_size_ext(PARTIAL_ONLY) after decoding, allocated
    ckpt(lines) {
        const cases = [
            ["qwen35-9b", 512, [[1024, 1, 16, 0], [1024, 2, 16, 0], [1024, 1, 16, 2], [1024, 1, 48, 0]]],
            ["gpt-oss-20b", 512, [[1024, 1, 16, 0], [1024, 1, 100, 0], [1024, 1, 300, 0]]],
            ["llama31-8b", 512, [[1024, 1, 16, 0]]],
        ];
        // CI: 16 tokens decoded in each model (~7 s each on 2 cores; gpt-oss-20b's 300 tokens, the largest sliding-window
        // checkpoint, take ~55 s and stay in the full profile)
        for (const [id, nv, all] of cases) {
            const list = CI ? all.filter(([, n_seq, dec, rs]) => n_seq === 1 && dec === 16 && rs === 0) : all;
            const file = gguf(id, nv);
            const ctxs = list.map(([n_ctx, n_seq, dec, rs]) => ({ id: `ck_c${n_ctx}_s${n_seq}_d${dec}_rs${rs}`, n_ctx, n_seq, n_batch: 512, n_ubatch: 512,
                n_rs_seq: rs, decode: dec, fa: "on", threads: 2 }));
            try { measure("ckpt", file, { no_alloc: 0, mmap: 1 }, ctxs, lines, { model_id: `${id}_v${nv}` }); }
            catch (e) { lines.push({ group: "ckpt", model: id, release, ok: false, error: String(e.stderr ?? e.message).slice(-400) }); }
        }
    },
};

// vision projectors: clip.cpp warmup reserve (no_alloc), FA off and on, for the real shapes (K9) and for variants
// of each projector type that the formulas of docs/rules/llamacpp-mmproj.md are checked against
const MM_BASE = {
    qwen2vl: { name: "v", n_embd: 1280, n_ff: 5120, n_layer: 4, n_head: 16, patch: 14, proj_dim: 3584, image_size: 560 },
    qwen25vl: { name: "v", n_embd: 1280, n_ff: 3420, n_layer: 8, n_head: 16, patch: 14, proj_dim: 3584, image_size: 560, silu: true, n_wa_pattern: 8 },
    qwen3vl: { name: "v", n_embd: 1152, n_ff: 4304, n_layer: 4, n_head: 16, patch: 16, proj_dim: 4096, image_size: 768, n_pos: 2304, deepstack: [1], gelu: true },
    gemma3: { name: "v", n_embd: 1152, n_ff: 4304, n_layer: 4, n_head: 16, patch: 14, proj_dim: 3840, image_size: 896, gelu: true },
};
const MM_VARIANTS = [
    ["qwen2vl", {}], ["qwen2vl", { n_layer: 32 }], ["qwen2vl", { n_head: 8 }], ["qwen2vl", { n_head: 32 }], ["qwen2vl", { n_ff: 2560 }],
    ["qwen2vl", { n_ff: 10240 }], ["qwen2vl", { n_ff: 7680 }], ["qwen2vl", { n_embd: 640, n_ff: 1280 }], ["qwen2vl", { n_embd: 640, n_ff: 2560 }],
    ["qwen2vl", { n_embd: 640, n_ff: 5120 }], ["qwen2vl", { n_embd: 640, n_ff: 10240 }], ["qwen2vl", { n_embd: 2560, n_ff: 5120 }],
    ["qwen2vl", { n_embd: 2560, n_ff: 20480 }], ["qwen2vl", { proj_dim: 2048 }], ["qwen2vl", { n_embd: 640, n_ff: 2560, patch: 16 }],
    ["qwen25vl", {}], ["qwen25vl", { n_head: 8 }], ["qwen25vl", { n_ff: 6840 }], ["qwen25vl", { n_ff: 1710 }], ["qwen25vl", { n_embd: 640, n_ff: 1710 }],
    ["qwen25vl", { n_embd: 640, n_ff: 3420 }],
    ["qwen3vl", {}], ["qwen3vl", { n_head: 8 }], ["qwen3vl", { n_ff: 8608 }], ["qwen3vl", { n_embd: 2304 }], ["qwen3vl", { deepstack: [] }],
    ["qwen3vl", { n_layer: 27, deepstack: [8, 16] }], ["qwen3vl", { n_layer: 27, deepstack: [8, 16, 24], proj_dim: 2048 }],
    ["qwen3vl", { n_layer: 27, deepstack: [8, 16, 24], proj_dim: 8192 }], ["qwen3vl", { n_layer: 27, deepstack: [8, 16, 24], n_ff: 8608 }],
    ["gemma3", {}], ["gemma3", { n_head: 8 }], ["gemma3", { n_ff: 8608 }], ["gemma3", { n_embd: 2304 }], ["gemma3", { image_size: 448 }],
];
groups.mmproj = (lines) => {
    const mprobe = path.join(root, "build/probe", release, "mtmd_probe");
    if (!fs.existsSync(mprobe)) throw new Error(`${mprobe} missing: run tests/conformance/probe/build_probe.sh ${release} --mtmd`);
    const nbytes = (t) => t.shape.reduce((a, x) => a * x, 1) * (t.type === "f16" ? 2 : 4);
    const runOne = (id, spec, shape) => {
        const file = path.join(modelsDir, `${id}.gguf`);
        fs.mkdirSync(modelsDir, { recursive: true });
        const text = JSON.stringify(spec);
        if (!(fs.existsSync(file) && fs.existsSync(`${file}.json`) && fs.readFileSync(`${file}.json`, "utf8") === text)) {
            fs.writeFileSync(`${file}.json`, text);
            execFileSync(tool, [`${file}.json`, file], { stdio: ["ignore", "pipe", "inherit"] });
        }
        const weights = spec.tensors.reduce((a, t) => a + nbytes(t), 0);
        for (const fa of ["off", "on"]) {
            const j = JSON.parse(execFileSync(mprobe, [file, `fa=${fa}`], { maxBuffer: 1 << 28 }).toString());
            const raw = j.log.filter((l) => /compute buffer|warmup|flash attention|model size|projector|n_wa_pattern|graph splits|error/.test(l));
            const total = j.ok ? j.mem_v.reduce((a, d) => a + d.bytes, 0) : null;
            lines.push({ group: "mmproj", kind: "mmproj", id, release, shape, fa, ok: j.ok, weights_bytes: weights, total_bytes: total,
                compute_bytes: j.ok ? total - weights : null, raw });
        }
    };
    for (const id of ["mmproj-qwen2vl-7b", "mmproj-qwen25vl-7b", "mmproj-qwen25vl-3b", "mmproj-qwen3vl-8b", "mmproj-qwen3vl-4b", "mmproj-gemma3-12b"])
        runOne(id, specOfSpec(id), MMPROJ_SHAPES[id]);
    MM_VARIANTS.forEach(([kind, over], i) => {
        const h = { ...MM_BASE[kind], ...over };
        runOne(`mmvar-${kind}-${i}`, kind === "gemma3" ? gemma3Mmproj(h) : qwenvlMmproj(kind, h), { kind, ...h });
    });
};

function runProbeWithLoras(file, mopts, loras, ctxs) {
    const argv = [file, ...kvargs(mopts), ...loras.map((l) => `lora=${l}`)];
    for (const c of ctxs) argv.push("--ctx", ...kvargs(c));
    const out = execFileSync(probe, argv, { maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "pipe"] }).toString();
    const res = out.trim().split("\n").map((l) => JSON.parse(l));
    return res.filter((r) => r.kind !== "dispose").map((r) => {
        const { log, ...rest } = r;
        const o = { ...rest };
        if (r.kind === "lora") {
            const m = log.map((x) => /^\S+:\s+(\S+) LoRA buffer size =\s+([0-9.]+) MiB/.exec(x)).filter(Boolean);
            o.lora = path.basename(r.path); delete o.path;
            o.lora_buffers_MiB = Object.fromEntries(m.map((x) => [x[1], Number(x[2])]));
            const nt = log.map((x) => /loaded (\d+) tensors from lora file/.exec(x)).find(Boolean);
            o.n_tensors = nt ? Number(nt[1]) : null;
            o.raw = log.filter((x) => /LoRA buffer|loaded \d+ tensors|adapter|alpha/.test(x) && !/- kv /.test(x));
        } else if (r.kind === "model") {
            o.model_buffers = log.filter((x) => /model buffer size/.test(x));
            delete o.path;
        } else {
            o.raw = log.filter((x) => KEEP.test(x));
            o.parsed = parseContextLog(log); delete o.parsed.raw;
        }
        return o;
    });
}

fs.mkdirSync(outDir, { recursive: true });
for (const g of only) {
    if (!groups[g]) throw new Error(`unknown group '${g}' (known: ${Object.keys(groups).join(", ")})`);
    const lines = [];
    const t0 = Date.now();
    groups[g](lines);
    const out = path.join(outDir, `spec-${g}.${release}.jsonl`);
    fs.writeFileSync(out, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    console.log(`${g}: ${lines.length} lines -> ${path.relative(process.cwd(), out)} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}
