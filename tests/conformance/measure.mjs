#!/usr/bin/env node
// Measure what the real llama.cpp (bundled in node-llama-cpp, CPU build) allocates, for one of the releases in
// releases.mjs (node-llama-cpp imported from releases/<release>/node_modules, nowhere else).
// A library (Harness, parseContextLog) for conformance.mjs and a command line for one model:
//
// usage: node measure.mjs MODEL.gguf CASES.json|'[{...}]' [--release 5b4ebc5|v0.5.0] [--log] [--threads N] [--no-alloc] [--no-mmap]
//   --release: default $CONFORMANCE_RELEASE, else the newest release (releases.mjs)
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
import { fileURLToPath } from "node:url";
import { defaultRelease, checkRelease, importRuntime, runtimePackageDir } from "./releases.mjs";

/// node-llama-cpp of the release a Harness was initialised for (one release per process: two native addons of
/// different llama.cpp builds would share ggml's symbols)
let NLC = null, NLC_RELEASE = null;
async function useRuntime(release) {
    if (NLC && NLC_RELEASE !== release) throw new Error(`node-llama-cpp of release ${NLC_RELEASE} is loaded already; one release per process`);
    if (!NLC) { NLC = await importRuntime(release); NLC_RELEASE = release; }
    return NLC;
}

const MiB = 1024 * 1024;

// ---------- log line patterns (written for 5b4ebc5 = release tag v0.4.0; additions for later releases) ----------
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
    // v0.5.0 composite caches: llama_kv_cache_dsa: creating main KV cache, size = 4096 cells
    //                          llama_kv_cache_dsa: creating indexer KV cache, size = 4096 cells  (also _msa, _dsa_iswa)
    // the next "llama_kv_cache: size = ..." line belongs to that cache: which = "dsa_main", "dsa_indexer", "msa_main", ...
    cache_create: /^llama_kv_cache_(dsa|msa|dsa_iswa):\s+creating\s+(\S+) KV cache, size = (\d+) cells\s*$/,
    // llama_memory_recurrent:        CPU RS buffer size =    50.25 MiB
    rs_buffer: new RegExp(String.raw`^llama_memory_recurrent:\s+(\S+) RS buffer size =\s+${num} MiB\s*$`),
    // llama_memory_recurrent: size =   50.25 MiB (     1 cells,  32 layers,  1 seqs  0 rs_seq), R (f32):    2.25 MiB, S (f32):   48.00 MiB, P (f32):    0.00 MiB
    rs_size: new RegExp(String.raw`^llama_memory_recurrent: size =\s+${num} MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+) seqs(?:\s+(\d+) rs_seq)?\), R \((\w+)\):\s+${num} MiB, S \((\w+)\):\s+${num} MiB(?:, P \((\w+)\):\s+${num} MiB)?\s*$`),
    // sched_reserve:        CPU compute buffer size =   100.02 MiB
    compute_buffer: new RegExp(String.raw`^(?:\w+):\s+(\S+) compute buffer size =\s+${num} MiB\s*$`),
    // sched_reserve: graph nodes  = 1831   /   graph splits = 1
    graph_nodes: /^\w+: graph nodes\s+=\s+(\d+)/,
    graph_splits: /^\w+: graph splits\s+=\s+(\d+)/,
    // v0.5.0: sched_reserve: graph: nodes = 7240, splits = 1, input objects = 4, input tensors = 8
    //         sched_reserve: graph (pp bs=512, tg bs=1): nodes = 6781 / 6666, splits = 1 / 1, ...  (pp / tg graphs)
    graph_nodes_splits: /^\w+: graph(?: \([^)]*\))?: nodes = (\d+)(?: \/ \d+)?, splits = (\d+)/,
    // at dispose: ~llama_context:        CPU compute buffer size is 100.0196 MiB, matches expectation of 100.0196 MiB
    compute_buffer_4dp: new RegExp(String.raw`^~?\w+:\s+(\S+) compute buffer size is\s+([0-9]+\.[0-9]+) MiB`),
    // load_tensors:   CPU_Mapped model buffer size =  4550.80 MiB
    model_buffer: new RegExp(String.raw`^load_tensors:\s+(\S+) model buffer size =\s+${num} MiB\s*$`),
    // v0.5.0 (llama-context.cpp graph_reserve summary): sched_reserve: graph: nodes = 3004, splits = 1, input objects = 4, input tensors = 13
    //   or, when the pp and tg graphs differ: sched_reserve: graph (pp bs=512, tg bs=1): nodes = 3004 / 2990, splits = 1 / 1, ...
    graph_summary: /^\w+: graph(?: \(pp bs=\d+, tg bs=\d+\))?: nodes = (\d+)(?: \/ (\d+))?, splits = (\d+)(?: \/ (\d+))?/,
    // llama_kv_cache: the V embeddings have different sizes across layers and FA is not enabled - padding V cache to 2048
    kv_v_padded: /^llama_kv_cache: the V embeddings have different sizes across layers and FA is not enabled - padding V cache to (\d+)\s*$/,
    // llama_kv_cache: attn_rot_k = 1, n_embd_head_k_all = 256   (v0.5.0: Hadamard rotation of quantized K/V)
    kv_attn_rot: /^llama_kv_cache: attn_rot_(k|v) = (\d+), n_embd_head_k_all = (-?\d+)\s*$/,
    // ---- added for llama.cpp v0.5.0 (node-llama-cpp 3.22.1): caches that 5b4ebc5's patterns do not name ----
    // llama_kv_cache_dsv4: creating DSV4 raw KV cache   /   creating DSV4 CSA compressed KV cache, size = 1024 cells
    //   (the printed size is ceil(n_ctx_seq/ratio); the cache itself is padded to 256: see the next size line)
    dsv4_create: /^llama_kv_cache_dsv4: creating DSV4 (raw|CSA compressed|HCA compressed|lightning-indexer) KV cache(?:, size = (\d+) cells)?\s*$/,
    // llama_dsv4_comp_state:        CPU DSV4 csa state buffer size =     1.31 MiB
    dsv4_state_buffer: new RegExp(String.raw`^llama_dsv4_comp_state:\s+(\S+) DSV4 (csa|hca|lid) state buffer size =\s+${num} MiB\s*$`),
    // llama_dsv4_comp_state: csa ratio = 4, state = 8 x 1024, streams = 1, rs_seq = 0, layers = 21, size =    1.31 MiB
    dsv4_state: new RegExp(String.raw`^llama_dsv4_comp_state: (csa|hca|lid) ratio = (\d+), state = (\d+) x (\d+), streams = (\d+), rs_seq = (\d+), layers = (\d+), size =\s+${num} MiB\s*$`),
    // llama_memory_hybrid_idx / llama_kv_cache_dsa / llama_kv_cache_msa: creating indexer KV cache, size = N cells
    //   (llama_memory_hybrid_idx logs from a lambda, so its prefix is "operator()")
    // llama_kv_cache_dsa / llama_kv_cache_msa: creating main KV cache, size = N cells
    // llama_kv_cache_dsa_iswa: creating DSA KV cache, size = N cells   /   creating SWA KV cache, size = N cells
    idx_create: /^(llama_memory_hybrid_idx|operator\(\)|llama_kv_cache_dsa|llama_kv_cache_msa|llama_kv_cache_dsa_iswa): creating (indexer|main|DSA|SWA) KV cache, size = (\d+) cells\s*$/,
    n_vocab: /^print_info: n_vocab\s+=\s+(\d+)\s*$/,
    arch: /^print_info: arch\s+=\s+(\S+)\s*$/,
    vocab_type: /^print_info: vocab type\s+=\s+(.+?)\s*$/,
};

export function parseContextLog(lines) {
    const r = { kv_buffer_list: [], kv_caches: [], compute_buffers: {}, compute_buffers_4dp: {}, kv_buffers: {}, rs: null };
    const raw = [];
    let iswaNext = null;
    let labelNext = null; // v0.5.0 caches: set by the dsv4_create / idx_create lines, wins over iswaNext
    for (const line of lines) {
        let m;
        const keep = () => raw.push(line);
        for (const k of ["n_ctx", "n_rs_seq", "n_outputs_max", "n_ctx_seq", "n_batch", "n_ubatch", "n_seq_max", "graph_nodes", "graph_splits"])
            if ((m = RX[k].exec(line))) { r[k] = Number(m[1]); keep(); }
        for (const k of ["flash_attn", "kv_unified", "causal_attn"])
            if ((m = RX[k].exec(line))) { r[k] = m[1]; keep(); }
        if ((m = RX.output_buffer.exec(line))) { r.output_buffer_MiB = Number(m[2]); keep(); }
        if ((m = RX.iswa_create.exec(line))) { iswaNext = m[1] === "SWA" ? "swa" : "base"; labelNext = null; keep(); }
        if ((m = RX.cache_create.exec(line))) { iswaNext = `${m[1]}_${m[2].toLowerCase()}`; keep(); }
        if ((m = RX.graph_nodes_splits.exec(line))) { r.graph_nodes = Number(m[1]); r.graph_splits = Number(m[2]); keep(); }
        if ((m = RX.dsv4_create.exec(line))) {
            labelNext = { "raw": null, "CSA compressed": "dsv4_csa", "HCA compressed": "dsv4_hca", "lightning-indexer": "dsv4_lid" }[m[1]];
            if (m[2] != null) (r.dsv4_logged_cells ??= {})[labelNext] = Number(m[2]);
            keep();
        }
        if ((m = RX.idx_create.exec(line))) {
            labelNext = m[2] === "indexer" ? "idx" : m[2] === "SWA" ? "swa" : m[2] === "DSA" ? "dsa" : "main";
            keep();
        }
        if ((m = RX.dsv4_state_buffer.exec(line))) { keep(); }
        if ((m = RX.dsv4_state.exec(line))) {
            (r.dsv4_states ??= []).push({ which: m[1], ratio: Number(m[2]), rows: Number(m[3]), width: Number(m[4]),
                streams: Number(m[5]), rs_seq: Number(m[6]), layers: Number(m[7]), size_MiB: Number(m[8]) });
            keep();
        }
        if ((m = RX.kv_buffer.exec(line))) { r.kv_buffers[m[1]] = (r.kv_buffers[m[1]] ?? 0) + Number(m[2]); r.kv_buffer_list.push(Number(m[2])); keep(); }
        if ((m = RX.kv_size.exec(line))) {
            r.kv_caches.push({
                which: labelNext ?? iswaNext ?? "full", size_MiB: Number(m[1]), cells: Number(m[2]), layers: Number(m[3]),
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
        // additions for v0.5.0 log lines (do not change the fields above)
        if ((m = RX.graph_summary.exec(line))) {
            r.graph_nodes = Number(m[1]); r.graph_splits = Number(m[3]);
            if (m[2] != null) r.graph_nodes_tg = Number(m[2]);
            if (m[4] != null) r.graph_splits_tg = Number(m[4]);
            keep();
        }
        if ((m = RX.kv_v_padded.exec(line))) {
            // attach to the cache the next size line belongs to
            (r.kv_v_padded ??= []).push({ which: iswaNext ?? "full", n_embd_v_gqa_max: Number(m[1]) });
            keep();
        }
        if ((m = RX.kv_attn_rot.exec(line))) {
            (r.kv_attn_rot ??= []).push({ which: iswaNext ?? "full", [`rot_${m[1]}`]: Number(m[2]), n_embd_head_all: Number(m[3]) });
            keep();
        }
        if ((m = RX.compute_buffer_4dp.exec(line))) { r.compute_buffers_4dp[m[1]] = Number(m[2]); keep(); }
    }
    r.raw = raw;
    return r;
}

// ---------- helpers ----------
function ggmlTypeId(name) {
    if (typeof name === "number") return name;
    const GgmlType = NLC.GgmlType;
    const key = Object.keys(GgmlType).find((k) => isNaN(Number(k)) && k.toLowerCase() === String(name).toLowerCase());
    if (key == null) throw new Error(`unknown ggml type "${name}"`);
    return GgmlType[key];
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// The llama.cpp that release `id`'s node-llama-cpp bundles: node-llama-cpp version, release tag, ggml version and
/// build commit (the build-info strings inside libggml-base.so: "<ggml version>\0<commit>\0").
export function bundledRelease(id = NLC_RELEASE ?? defaultRelease()) {
    const root = runtimePackageDir(id);
    const read = (p) => { try { return JSON.parse(fs.readFileSync(path.join(root, p), "utf8")); } catch { return {}; } };
    const out = {
        id,
        node_llama_cpp: read("package.json").version ?? null,
        release: read("llama/binariesGithubRelease.json").release ?? null,
        repo: read("llama/llama.cpp.info.json").llamaCppGithubRepo ?? null,
        ggml_version: null, build_commit: null,
    };
    try {
        const so = path.join(path.dirname(root), "@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so");
        const m = /\0(\d+\.\d+\.\d+)\0([0-9a-f]{7,40})\0/.exec(fs.readFileSync(so).toString("latin1"));
        if (m) { out.ggml_version = m[1]; out.build_commit = m[2]; }
    } catch { /* not linux-x64: leave unknown */ }
    return out;
}

/// One llama.cpp (CPU backend) for the whole run; models and contexts are made one at a time through the
/// low-level addon classes, as the prototype established (MEASURING.md): contextSize is the total n_ctx
/// (the high-level API treats it as per sequence) and batchSize sets n_batch = n_ubatch.
export class Harness {
    constructor({ threads = 2, keepLog = false, release = defaultRelease() } = {}) {
        this.threads = threads; this.keepLog = keepLog; this.lines = []; this.release = checkRelease(release);
        this.cpuBackend = null; // the libggml-cpu-<variant>.so ggml loaded ("load_backend: loaded CPU backend from ...")
    }

    async init() {
        const { getLlama, LlamaLogLevel } = await useRuntime(this.release);
        const logger = (level, message) => {
            for (const l of String(message).split("\n")) {
                if (l.trim() === "") continue;
                const m = /^load_backend: loaded CPU backend from (.+?)\s*$/.exec(l);
                if (m) this.cpuBackend = path.basename(m[1]);
                this.lines.push(l.replace(/\s+$/, ""));
            }
        };
        this.llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.debug, logger, progressLogs: false });
    }

    /// Loads a model; noAlloc: llama.cpp's no_alloc mode (sizes every buffer, allocates none).
    /// Returns {ok, addon, info} where info has model_bytes (exact, memory breakdown), n_vocab, arch.
    /// useMmap (default true): false keeps llama.cpp from mapping the file, whose MAP_POPULATE prefetch
    /// (llama-model-loader.cpp init_mappings) would read every byte of a sparse file even in no_alloc mode;
    /// no buffer size depends on it in no_alloc mode (for files of hundreds of GB, e.g. DeepSeek-V4, Kimi-K3).
    async loadModel(modelPath, { noAlloc, useMmap = true }) {
        this.lines = [];
        const addon = new this.llama._bindings.AddonModel(modelPath, {
            addonExports: this.llama._bindings, gpuLayers: 0, useMmap, checkTensors: false, noAlloc
        });
        const ok = await addon.init();
        // a loaded model has logged its model buffers (then, with real allocation, progress dots)
        const settled = await this.settleLog(ok ? (ls) => ls.some((l) => RX.model_buffer.test(l)) : null, { quietMs: 20 });
        const lines = this.lines;
        addon.kvfitNoAlloc = !!noAlloc;
        if (ok && !settled) return { ok: false, error: "llama.cpp's log did not reach its model buffer lines within 60 s", log_tail: lines.slice(-15) };
        if (!ok) {
            const tail = lines.filter((l) => !/^(create_tensor|llama_model_loader: - kv|load_tensors: layer)/.test(l)).slice(-15);
            return { ok: false, error: "llama.cpp could not load the model", log_tail: tail };
        }
        const info = { arch: null, n_vocab: null, model_buffers: {}, preferred_buft: null };
        for (const l of lines) {
            let m;
            if ((m = RX.model_buffer.exec(l))) info.model_buffers[m[1]] = Number(m[2]);
            // the first buffer type of the CPU list: the variant's first extra type (AMX, CPU_REPACK) or CPU
            if ((m = /cannot be used with preferred buffer type (\S+), using/.exec(l))) info.preferred_buft = m[1];
            if ((m = RX.n_vocab.exec(l))) info.n_vocab = Number(m[1]);
            if ((m = RX.arch.exec(l))) info.arch = m[1];
        }
        info.model_bytes = addon.getMemoryBreakdown().cpuRam;
        return { ok: true, addon, info };
    }

    /// Creates and disposes one context. req: {n_ctx, n_seq, flash_attn, type_k, type_v, n_ubatch, swa_full}.
    /// Returns the parsed log (parseContextLog) plus ok, error, ctx_cpuRam_bytes (exact: KV + RS + compute).
    async measureContext(addon, req) {
        this.lines = [];
        const out = { ok: false };
        let ctx = null;
        try {
            ctx = new this.llama._bindings.AddonContext(addon, {
                contextSize: req.n_ctx, batchSize: req.n_ubatch, sequences: req.n_seq,
                flashAttention: req.flash_attn, kvCacheKeyType: ggmlTypeId(req.type_k),
                kvCacheValueType: ggmlTypeId(req.type_v), swaFullCache: req.swa_full, threads: this.threads
            });
            out.ok = (await ctx.init()) === true;
            // a created context has logged its reserve summary last ("sched_reserve: reserve took ...", both releases)
            if (!(await this.settleLog(out.ok ? (ls) => ls.some((l) => /^\w+: reserve took /.test(l)) : null)))
                out.log_incomplete = "llama.cpp's log did not reach its 'reserve took' line within 60 s";
            if (out.ok) out.ctx_cpuRam_bytes = ctx.getMemoryBreakdown().cpuRam;
        } catch (e) {
            out.ok = false;
            out.error = String(e?.message ?? e);
        }
        const initLines = this.lines;
        this.lines = [];
        if (ctx != null) { try { await ctx.dispose(); } catch (e) { out.dispose_error = String(e?.message ?? e); } }
        // with real allocation, ~llama_context logs the compute buffer with 4 decimals
        if (!(await this.settleLog(out.ok && addon.kvfitNoAlloc === false ? (ls) => ls.some((l) => RX.compute_buffer_4dp.test(l)) : null)))
            out.log_incomplete = "llama.cpp's log did not reach ~llama_context's compute buffer line within 60 s";
        const all = [...initLines, ...this.lines];
        Object.assign(out, parseContextLog(all));
        if (!out.ok) {
            out.errors = all.filter((l) => /error|failed|unsupported|not supported|requires|must|mismatch|invalid/i.test(l));
            if (!out.errors.length) out.errors = all.slice(-3);
        }
        if (out.log_incomplete) { out.ok = false; (out.errors ??= []).unshift(out.log_incomplete); }
        if (this.keepLog) out.log = all;
        return out;
    }

    /// Waits until llama.cpp's log has caught up with the native call that just returned. The logger is a thread-safe
    /// function: its lines reach JavaScript in event-loop turns (at most ~1,000 lines a turn) after the call has
    /// returned, so a fixed sleep loses the tail of a long log on a loaded machine (a DeepSeek-V4 context logs ~5,900
    /// lines, the compute buffer line among the last; a CI run lost it once). Returns true when `done(lines)` holds
    /// (when given) and no line has arrived for `quietMs`; false after `maxMs` without `done`.
    async settleLog(done, { quietMs = 10, maxMs = 60000 } = {}) {
        const t0 = performance.now();
        let n = -1, since = t0;
        for (;;) {
            await sleep(2);
            const now = performance.now();
            if (this.lines.length !== n) { n = this.lines.length; since = now; continue; }
            const reached = done == null || done(this.lines);
            if (reached && now - since >= quietMs) return true;
            if (!reached && now - t0 > maxMs) return false;
        }
    }

    async disposeModel(addon) { await addon.dispose(); }
    async dispose() { await this.llama.dispose(); }
}

// ---------- command line: one model, a list of cases ----------
async function main() {
    const args = process.argv.slice(2);
    const withLog = args.includes("--log");
    const noAlloc = args.includes("--no-alloc");
    const useMmap = !args.includes("--no-mmap");
    const ti = args.indexOf("--threads");
    const threads = ti >= 0 ? Number(args[ti + 1]) : 2;
    const ri = args.indexOf("--release");
    const release = ri >= 0 ? args[ri + 1] : defaultRelease();
    const pos = args.filter((a, i) => !a.startsWith("--") && !(ti >= 0 && i === ti + 1) && !(ri >= 0 && i === ri + 1));
    if (pos.length !== 2) {
        console.error("usage: node measure.mjs MODEL.gguf CASES.json|'[...]' [--release 5b4ebc5|v0.5.0] [--log] [--threads N] [--no-alloc]");
        process.exit(2);
    }
    const modelPath = path.resolve(pos[0]);
    const cases = JSON.parse(pos[1].trim().startsWith("[") ? pos[1] : fs.readFileSync(pos[1], "utf8"));
    const h = new Harness({ threads, keepLog: withLog, release });
    await h.init();
    const m = await h.loadModel(modelPath, { noAlloc, useMmap });
    console.log(JSON.stringify({ kind: "model", model: path.basename(modelPath), no_alloc: noAlloc, release: bundledRelease(release), cpu_backend: h.cpuBackend,
        ok: m.ok, ...(m.ok ? m.info : { error: m.error, log_tail: m.log_tail }) }));
    if (!m.ok) process.exit(3);
    for (const c of cases) {
        const req = { n_ctx: c.n_ctx, n_seq: c.n_seq ?? 1, flash_attn: c.flash_attn ?? true, type_k: c.type_k ?? "f16",
            type_v: c.type_v ?? "f16", n_ubatch: c.n_ubatch ?? 512, swa_full: c.swa_full ?? false };
        const r = await h.measureContext(m.addon, req);
        if (!withLog) delete r.raw;
        console.log(JSON.stringify({ kind: "context", id: c.id ?? null, req, ...r }));
    }
    await h.disposeModel(m.addon);
    await h.dispose();
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    main().catch((e) => { console.error(e); process.exit(1); });
}
