#!/usr/bin/env node
// Measure what the real llama.cpp (bundled in node-llama-cpp 3.21.1, CPU build) allocates.
//
// usage: node measure.mjs MODEL.gguf CASES.json|'[{...}]' [--log] [--threads N] [--high-level] [--no-alloc]
//   case: {n_ctx, n_seq=1, flash_attn=true, type_k="f16", type_v="f16", n_ubatch=512,
//          swa_full=false, kv_unified=false, id?}
//   One JSON line per case on stdout (first line: the model). --log adds every llama.cpp
//   line of the context (init + dispose) as "log".
//
// Contexts are made through the low-level addon class (llama._bindings.AddonContext), one at a
// time, each disposed before the next: contextSize is the total n_ctx (not per sequence), and
// batchSize sets n_batch = n_ubatch.
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { getLlama, LlamaLogLevel, GgmlType } from "node-llama-cpp";

const MiB = 1024 * 1024;

// ---------- log line patterns (llama.cpp as bundled, release tag v0.4.0) ----------
const num = String.raw`([0-9]+(?:\.[0-9]+)?)`;
export const RX = {
    // llama_context: n_ctx         = 4096
    n_ctx: /^llama_context: n_ctx\s+=\s+(\d+)\s*$/,
    n_rs_seq: /^llama_context: n_rs_seq\s+=\s+(\d+)\s*$/,
    n_outputs_max: /^llama_context: n_outputs_max\s+=\s+(\d+)\s*$/,
    n_ctx_seq: /^llama_context: n_ctx_seq\s+=\s+(\d+)\s*$/,
    n_batch: /^llama_context: n_batch\s+=\s+(\d+)\s*$/,
    n_ubatch: /^llama_context: n_ubatch\s+=\s+(\d+)\s*$/,
    n_seq_max: /^llama_context: n_seq_max\s+=\s+(\d+)\s*$/,
    causal_attn: /^llama_context: causal_attn\s+=\s+(\d+)\s*$/,
    flash_attn: /^llama_context: flash_attn\s+=\s+(\S+)\s*$/,
    kv_unified: /^llama_context: kv_unified\s+=\s+(\S+)\s*$/,
    // llama_context:        CPU  output buffer size =     0.00 MiB
    output_buffer: new RegExp(String.raw`^llama_context:\s+(\S+)\s+output buffer size =\s+${num} MiB\s*$`),
    // llama_kv_cache:        CPU KV buffer size =   128.00 MiB
    kv_buffer: new RegExp(String.raw`^llama_kv_cache(?:_iswa)?:\s+(\S+) KV buffer size =\s+${num} MiB\s*$`),
    // llama_kv_cache: size =  128.00 MiB (  4096 cells,   8 layers,  1/1 seqs), K (f16):   64.00 MiB, V (f16):   64.00 MiB
    kv_size: new RegExp(String.raw`^llama_kv_cache: size =\s+${num} MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+)/\s*(\d+) seqs\), K \((\w+)\):\s+${num} MiB, V \((\w+)\):\s+${num} MiB\s*$`),
    // llama_kv_cache_iswa: creating non-SWA KV cache, size = 8192 cells   /   creating     SWA KV cache, size = 1536 cells
    iswa_create: /^llama_kv_cache_iswa: creating\s+(non-SWA|SWA) KV cache, size = (\d+) cells\s*$/,
    // llama_memory_recurrent:        CPU RS buffer size =    50.25 MiB
    rs_buffer: new RegExp(String.raw`^llama_memory_recurrent:\s+(\S+) RS buffer size =\s+${num} MiB\s*$`),
    // llama_memory_recurrent: size =   50.25 MiB (     1 cells,  32 layers,  1 seqs  0 rs_seq), R (f32):    2.25 MiB, S (f32):   48.00 MiB, P (f32):    0.00 MiB
    rs_size: new RegExp(String.raw`^llama_memory_recurrent: size =\s+${num} MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+) seqs(?:\s+(\d+) rs_seq)?\), R \((\w+)\):\s+${num} MiB, S \((\w+)\):\s+${num} MiB(?:, P \((\w+)\):\s+${num} MiB)?\s*$`),
    // sched_reserve:        CPU compute buffer size =   100.02 MiB
    compute_buffer: new RegExp(String.raw`^(?:\w+):\s+(\S+) compute buffer size =\s+${num} MiB\s*$`),
    // sched_reserve: graph nodes  = 1831   /   graph splits = 1
    graph_nodes: /^\w+: graph nodes\s+=\s+(\d+)/,
    graph_splits: /^\w+: graph splits\s+=\s+(\d+)/,
    // at dispose: ~llama_context:        CPU compute buffer size is 100.0196 MiB, matches expectation of 100.0196 MiB
    compute_buffer_4dp: new RegExp(String.raw`^~?\w+:\s+(\S+) compute buffer size is\s+([0-9]+\.[0-9]+) MiB`),
    // load_tensors:   CPU_Mapped model buffer size =  4550.80 MiB
    model_buffer: new RegExp(String.raw`^load_tensors:\s+(\S+) model buffer size =\s+${num} MiB\s*$`),
    n_vocab: /^print_info: n_vocab\s+=\s+(\d+)\s*$/,
    arch: /^print_info: arch\s+=\s+(\S+)\s*$/,
    vocab_type: /^print_info: vocab type\s+=\s+(.+?)\s*$/,
};

function parseContextLog(lines) {
    const r = { kv_buffer_list: [], kv_caches: [], compute_buffers: {}, compute_buffers_4dp: {}, kv_buffers: {}, rs: null };
    const raw = [];
    let iswaNext = null;
    for (const line of lines) {
        let m;
        const keep = () => raw.push(line);
        for (const k of ["n_ctx", "n_rs_seq", "n_outputs_max", "n_ctx_seq", "n_batch", "n_ubatch", "n_seq_max", "graph_nodes", "graph_splits"])
            if ((m = RX[k].exec(line))) { r[k] = Number(m[1]); keep(); }
        for (const k of ["flash_attn", "kv_unified", "causal_attn"])
            if ((m = RX[k].exec(line))) { r[k] = m[1]; keep(); }
        if ((m = RX.output_buffer.exec(line))) { r.output_buffer_MiB = Number(m[2]); keep(); }
        if ((m = RX.iswa_create.exec(line))) { iswaNext = m[1] === "SWA" ? "swa" : "base"; keep(); }
        if ((m = RX.kv_buffer.exec(line))) { r.kv_buffers[m[1]] = (r.kv_buffers[m[1]] ?? 0) + Number(m[2]); r.kv_buffer_list.push(Number(m[2])); keep(); }
        if ((m = RX.kv_size.exec(line))) {
            r.kv_caches.push({
                which: iswaNext ?? "full", size_MiB: Number(m[1]), cells: Number(m[2]), layers: Number(m[3]),
                seqs: `${m[4]}/${m[5]}`, type_k: m[6], K_MiB: Number(m[7]), type_v: m[8], V_MiB: Number(m[9])
            });
            keep();
        }
        if ((m = RX.rs_buffer.exec(line))) { keep(); }
        if ((m = RX.rs_size.exec(line))) {
            r.rs = { size_MiB: Number(m[1]), cells: Number(m[2]), layers: Number(m[3]), seqs: Number(m[4]),
                rs_seq: m[5] == null ? null : Number(m[5]), type_r: m[6], R_MiB: Number(m[7]), type_s: m[8], S_MiB: Number(m[9]),
                type_p: m[10] ?? null, P_MiB: m[11] == null ? 0 : Number(m[11]) };
            keep();
        }
        if ((m = RX.compute_buffer.exec(line))) { r.compute_buffers[m[1]] = Number(m[2]); keep(); }
        if ((m = RX.compute_buffer_4dp.exec(line))) { r.compute_buffers_4dp[m[1]] = Number(m[2]); keep(); }
    }
    r.raw = raw;
    return r;
}

// ---------- helpers ----------
function ggmlTypeId(name) {
    if (typeof name === "number") return name;
    const key = Object.keys(GgmlType).find((k) => isNaN(Number(k)) && k.toLowerCase() === String(name).toLowerCase());
    if (key == null) throw new Error(`unknown ggml type "${name}"`);
    return GgmlType[key];
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------- main ----------
async function main() {
    const args = process.argv.slice(2);
    const withLog = args.includes("--log");
    const highLevel = args.includes("--high-level");
    const noAlloc = args.includes("--no-alloc"); // llama.cpp's no_alloc model: sizes without allocating
    const ti = args.indexOf("--threads");
    const threads = ti >= 0 ? Number(args[ti + 1]) : Math.max(1, os.cpus().length);
    const pos = args.filter((a, i) => !a.startsWith("--") && !(ti >= 0 && i === ti + 1));
    if (pos.length !== 2) {
        console.error("usage: node measure.mjs MODEL.gguf CASES.json|'[...]' [--log] [--threads N]");
        process.exit(2);
    }
    const modelPath = path.resolve(pos[0]);
    const cases = JSON.parse(pos[1].trim().startsWith("[") ? pos[1] : fs.readFileSync(pos[1], "utf8"));

    let lines = [];
    const logger = (level, message) => {
        for (const l of String(message).split("\n")) if (l.trim() !== "") lines.push(l.replace(/\s+$/, ""));
    };
    const t0 = performance.now();
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.debug, logger, progressLogs: false });
    const tLlama = performance.now();

    lines = [];
    // The addon model class directly: llama.loadModel() would first load the model a second time
    // (no_alloc "simulator session" for its memory checks) and run a tokenizer round trip.
    // --high-level uses llama.loadModel() as MEASURING.md describes (same numbers, slower).
    let addonModel, model = null;
    if (highLevel) {
        model = await llama.loadModel({ modelPath, gpuLayers: 0, useMmap: true, ignoreMemorySafetyChecks: true });
        addonModel = model._model;
    } else {
        addonModel = new llama._bindings.AddonModel(modelPath, {
            addonExports: llama._bindings, gpuLayers: 0, useMmap: true, checkTensors: false, noAlloc
        });
        if (!(await addonModel.init())) {
            await sleep(20);
            const tail = lines.filter((l) => !/^(create_tensor|llama_model_loader: - kv|load_tensors: layer)/.test(l)).slice(-15);
            console.log(JSON.stringify({ kind: "model", model: path.basename(modelPath), ok: false, error: "llama.cpp could not load the model", log_tail: tail }));
            process.exit(3);
        }
    }
    await sleep(20);
    const tModel = performance.now();
    const modelLines = lines;
    const mb = addonModel.getMemoryBreakdown();
    const modelInfo = { arch: null, n_vocab: null, vocab_type: null, model_buffers: {} };
    for (const l of modelLines) {
        let m;
        if ((m = RX.model_buffer.exec(l))) modelInfo.model_buffers[m[1]] = Number(m[2]);
        if ((m = RX.n_vocab.exec(l))) modelInfo.n_vocab = Number(m[1]);
        if ((m = RX.arch.exec(l))) modelInfo.arch = m[1];
        if ((m = RX.vocab_type.exec(l))) modelInfo.vocab_type = m[1];
    }
    const head = {
        kind: "model", model: path.basename(modelPath), llama_cpp_release: llama.llamaCppRelease?.release,
        model_bytes: mb.cpuRam, model_gpu_bytes: mb.gpuVram, model_size_bytes: addonModel.getModelSize(), no_alloc: noAlloc,
        ...modelInfo, get_llama_ms: Math.round(tLlama - t0), load_ms: Math.round(tModel - tLlama),
        raw: modelLines.filter((l) => RX.model_buffer.test(l) || /^print_info: (arch|n_vocab|vocab type|file type|file size|model params)/.test(l)),
        ...(withLog ? { log: modelLines } : {})
    };
    console.log(JSON.stringify(head));

    for (const c of cases) {
        const req = {
            n_ctx: c.n_ctx, n_seq: c.n_seq ?? 1, flash_attn: c.flash_attn ?? true,
            type_k: c.type_k ?? "f16", type_v: c.type_v ?? "f16", n_ubatch: c.n_ubatch ?? 512,
            swa_full: c.swa_full ?? false, kv_unified: c.kv_unified ?? false
        };
        const out = { kind: "context", id: c.id ?? null, model: path.basename(modelPath), req };
        if (req.kv_unified) {
            out.ok = false;
            out.error = "kv_unified is not exposed by node-llama-cpp 3.21.1's AddonContext (llama_context_default_params: kv_unified=false)";
            console.log(JSON.stringify(out));
            continue;
        }
        lines = [];
        const t1 = performance.now();
        let ctx = null;
        try {
            ctx = new llama._bindings.AddonContext(addonModel, {
                contextSize: req.n_ctx, batchSize: req.n_ubatch, sequences: req.n_seq,
                flashAttention: req.flash_attn, kvCacheKeyType: ggmlTypeId(req.type_k),
                kvCacheValueType: ggmlTypeId(req.type_v), swaFullCache: req.swa_full, threads
            });
            const ok = await ctx.init();
            await sleep(20);
            out.ok = ok === true;
            out.create_ms = Math.round(performance.now() - t1);
            if (out.ok) {
                const cb = ctx.getMemoryBreakdown();
                out.ctx_cpuRam_bytes = cb.cpuRam;
                out.ctx_gpuVram_bytes = cb.gpuVram;
                out.context_size = ctx.getContextSize();
                out.state_size = ctx.getStateSize();
            }
        } catch (e) {
            out.ok = false;
            out.error = String(e?.message ?? e);
            out.create_ms = Math.round(performance.now() - t1);
        }
        const initLines = lines;
        lines = [];
        const t2 = performance.now();
        if (ctx != null) { try { await ctx.dispose(); } catch (e) { out.dispose_error = String(e?.message ?? e); } }
        await sleep(20);
        out.dispose_ms = Math.round(performance.now() - t2);
        const all = [...initLines, ...lines];
        const p = parseContextLog(all);
        Object.assign(out, {
            n_ctx: p.n_ctx, n_ctx_seq: p.n_ctx_seq, n_batch: p.n_batch, n_ubatch: p.n_ubatch, n_seq_max: p.n_seq_max, n_rs_seq: p.n_rs_seq, n_outputs_max: p.n_outputs_max,
            flash_attn: p.flash_attn, kv_unified: p.kv_unified, graph_nodes: p.graph_nodes, graph_splits: p.graph_splits,
            output_buffer_MiB: p.output_buffer_MiB,
            output_buffer_bytes_formula: modelInfo.n_vocab != null ? modelInfo.n_vocab * req.n_seq * 4 : null,
            kv_caches: p.kv_caches, kv_buffer_MiB: p.kv_buffers, kv_buffer_MiB_list: p.kv_buffer_list, rs: p.rs,
            compute_buffer_MiB: p.compute_buffers, compute_buffer_MiB_4dp: p.compute_buffers_4dp
        });
        // Exact here: ctx_cpuRam_bytes (= KV + recurrent state + compute, llama.cpp's memory breakdown)
        // and model_bytes. The log gives KV/RS in MiB with 2 decimals (+-0.005 MiB each figure) and, at
        // dispose in real mode only, the compute buffer with 4 decimals (+-0.00005 MiB = +-52 B). So:
        if (out.ok) {
            const kvMiB = p.kv_caches.reduce((s, k) => s + k.K_MiB + k.V_MiB, 0);
            const rsMiB = p.rs ? p.rs.R_MiB + p.rs.S_MiB + p.rs.P_MiB : 0;
            out.kv_MiB_log = Math.round(kvMiB * 100) / 100;
            out.rs_MiB_log = Math.round(rsMiB * 100) / 100;
            out.compute_bytes_approx = out.ctx_cpuRam_bytes - Math.round(kvMiB * MiB) - Math.round(rsMiB * MiB);
            const c4 = p.compute_buffers_4dp.CPU;
            if (c4 != null)
                out.kv_plus_rs_bytes_range = [out.ctx_cpuRam_bytes - Math.ceil((c4 + 0.00005) * MiB),
                    out.ctx_cpuRam_bytes - Math.floor((c4 - 0.00005) * MiB)];
        }
        out.raw = p.raw;
        if (!out.ok) out.errors = all.filter((l) => /error|failed|unsupported|not supported|requires/i.test(l));
        if (withLog) out.log = all;
        console.log(JSON.stringify(out));
    }
    if (model != null) await model.dispose(); else await addonModel.dispose();
    await llama.dispose();
}

main().catch((e) => { console.error(e); process.exit(1); });
