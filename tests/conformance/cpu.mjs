#!/usr/bin/env node
// The host CPU as llama.cpp's CPU backend sees it, and the host-dependent extra weight buffers (AMX, CPU_REPACK)
// that follow from it. The rule with its citations: docs/rules/llamacpp-cpu-repack.md (same in 5b4ebc5 and v0.5.0
// for x86-64).
//
//   node cpu.mjs                          this host: CPU model, flags, the libggml-cpu variant ggml will load
//   node cpu.mjs --variant sapphirerapids [--spec FILE.json | ID...]
//                                         per model of the suite (or a kvfit-gguf-write spec): the tensors that
//                                         go into AMX / CPU_REPACK and the bytes a real (mmap) load adds
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

// ---------- which libggml-cpu-<variant>.so ggml loads ----------
// ggml/src/CMakeLists.txt (GGML_CPU_ALL_VARIANTS, x86): each variant and the features it is compiled with.
// ggml/src/ggml-cpu/arch/x86/cpu-feats.cpp ggml_backend_cpu_x86_score(): a variant scores 0 when the CPU lacks
// one of its features (CPUID, not /proc/cpuinfo, and no OS check), else 1 + the weights of its features;
// ggml-backend-reg.cpp ggml_backend_load_best() loads the highest score (first found on a tie).
const WEIGHT = { FMA: 1, F16C: 2, SSE42: 4, BMI2: 8, AVX: 16, AVX2: 32, AVX_VNNI: 64, AVX512: 128, AVX512_VBMI: 256,
    AVX512_BF16: 512, AVX512_VNNI: 1024, AMX_INT8: 2048, AMX_TILE: 0 /* compiled in, not scored */ };
// /proc/cpuinfo flag(s) of each feature (the kernel's names for the same CPUID bits)
const FLAGS = { FMA: ["fma"], F16C: ["f16c"], SSE42: ["sse4_2"], BMI2: ["bmi2"], AVX: ["avx"], AVX2: ["avx2"],
    AVX_VNNI: ["avx_vnni"], AVX512: ["avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"], AVX512_VBMI: ["avx512vbmi"],
    AVX512_BF16: ["avx512_bf16"], AVX512_VNNI: ["avx512_vnni"], AMX_INT8: ["amx_int8"], AMX_TILE: ["amx_tile"] };
const H = ["SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2"];
export const VARIANTS = {
    x64: [], sse42: ["SSE42"], sandybridge: ["SSE42", "AVX"], ivybridge: ["SSE42", "AVX", "F16C"],
    piledriver: ["SSE42", "AVX", "F16C", "FMA"], haswell: H,
    skylakex: [...H, "AVX512"], cannonlake: [...H, "AVX512", "AVX512_VBMI"], cascadelake: [...H, "AVX512", "AVX512_VNNI"],
    icelake: [...H, "AVX512", "AVX512_VBMI", "AVX512_VNNI"], cooperlake: [...H, "AVX512", "AVX512_VNNI", "AVX512_BF16"],
    zen4: [...H, "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"], alderlake: [...H, "AVX_VNNI"],
    sapphirerapids: [...H, "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_TILE", "AMX_INT8"],
};

export function scoreVariant(flags, variant) {
    let score = 1;
    for (const f of VARIANTS[variant]) {
        if (f === "AMX_TILE") continue;
        if (!FLAGS[f].every((x) => flags.has(x))) return 0;
        score += WEIGHT[f];
    }
    return score;
}

/// The variant ggml_backend_load_best() picks for these /proc/cpuinfo flags: {variant, score}.
export function predictVariant(flags) {
    let best = { variant: null, score: 0 };
    for (const v of Object.keys(VARIANTS)) { const s = scoreVariant(flags, v); if (s > best.score) best = { variant: v, score: s }; }
    return best;
}

/// The `--cpu-features` value kvfit is given for these /proc/cpuinfo flags: the flags its variant scoring reads
/// (src/runtimes/llamacpp/cpu.cpp, the same table as FLAGS), comma-separated; "none" when there are none.
export function kvfitCpuFeatures(flags) {
    const read = new Set(Object.values(FLAGS).flat());
    const list = [...flags].filter((f) => read.has(f));
    if (!list.length) return "none";
    return list.length === 1 ? `${list[0]},` : list.join(",");
}

/// This host: {model, cores, flags (Set), variant, score}.
export function hostCpu() {
    let flags = new Set();
    try {
        const m = /^flags\s*:\s*(.*)$/m.exec(fs.readFileSync("/proc/cpuinfo", "utf8"));
        if (m) flags = new Set(m[1].trim().split(/\s+/));
    } catch { /* not Linux */ }
    const cpus = os.cpus();
    return { model: cpus[0]?.model?.trim() ?? "?", cores: cpus.length, flags, ...predictVariant(flags) };
}

// ---------- which weights go into an extra buffer ----------
// The CPU buffer-type list (llama-model.cpp make_cpu_buft_list): the extra types of the loaded variant, in the
// order ggml-cpu.cpp ggml_backend_cpu_get_extra_buffer_types() registers them -- AMX (only when compiled with
// __AMX_INT8__ && __AVX512VNNI__, i.e. the sapphirerapids variant, and only when arch_prctl(ARCH_REQ_XCOMP_PERM,
// XTILEDATA) succeeds), then CPU_REPACK (every x86 variant) -- then plain CPU. The loader takes the first type whose
// supports_op accepts the weight's op (llama-model-loader.cpp select_weight_buft / weight_buft_supported: a
// MUL_MAT test op against an f32 [ne0, 512, ne2, ne3] activation; MUL_MAT_ID for the expert tensors).
export function extraBufferTypes(variant, { amxReady = true } = {}) {
    const f = new Set(VARIANTS[variant] ?? []);
    const list = [];
    if (f.has("AMX_INT8") && f.has("AVX512_VNNI") && amxReady) list.push("AMX");
    list.push("CPU_REPACK");
    return list;
}

const QK = { q4_0: 32, q4_1: 32, q8_0: 32, q4_K: 256, q5_K: 256, q6_K: 256, iq4_xs: 256, iq4_nl: 32, mxfp4: 32, q2_K: 256, f16: 1 };
const BLOCK = { q4_0: 18, q4_1: 20, q8_0: 34, q4_K: 144, q5_K: 176, q6_K: 210, iq4_xs: 136, iq4_nl: 18, mxfp4: 17, q2_K: 84, f16: 2 };
const nbytesOf = (t) => {
    const [ne0, ...rest] = t.shape;
    const rows = rest.reduce((a, b) => a * b, 1);
    if (!(t.type in BLOCK)) return null;
    return (ne0 / QK[t.type]) * BLOCK[t.type] * rows;
};
const pad = (x, a) => Math.ceil(x / a) * a;

/// The op llama.cpp tests a weight with (llama-arch.cpp LLM_TENSOR_INFOS), for the tensors that can matter here.
export function weightOp(name) {
    if (/^(token_embd|pos_embd|token_types|per_layer_token_embd)\./.test(name)) return "GET_ROWS";
    if (/_exps\.weight$/.test(name)) return "MUL_MAT_ID";
    if (/(ssm_conv1d|shortconv\.conv)\.weight$/.test(name)) return "SSM_CONV";
    if (/norm|\.bias$|ssm_a$|ssm_d$|sinks|exp_probs_b|_scale/.test(name)) return "OTHER";
    return /\.weight$/.test(name) ? "MUL_MAT" : "OTHER";
}

/// AMX extra_buffer_type::supports_op (amx/amx.cpp): MUL_MAT only, contiguous, src0 type Q4_0/Q4_1/Q8_0 with
/// ne0 % 32 == 0, Q4_K/Q5_K/Q6_K/IQ4_XS with ne0 % 256 == 0, or F16 with ne0 % 16 == 0; and ne1 % 32 == 0.
function amxTakes(t, op) {
    if (op !== "MUL_MAT") return false;
    const align = { q4_0: 32, q4_1: 32, q8_0: 32, q4_K: 256, q5_K: 256, q6_K: 256, iq4_xs: 256, f16: 16 }[t.type];
    return align != null && t.shape[0] % align === 0 && (t.shape[1] ?? 1) % 32 === 0;
}
/// AMX bytes (amx/mmq.cpp ggml_backend_amx_get_alloc_size, get_row_size): ne1 x packed row; f16 unpacked.
function amxBytes(t) {
    const K = t.shape[0], N = t.shape.slice(1).reduce((a, b) => a * b, 1);
    const KB = K / QK[t.type];
    const extra = { q8_0: 4, q4_K: 4, q5_K: 4, iq4_xs: 2 }[t.type] ?? 0;
    return t.type === "f16" ? nbytesOf(t) : N * KB * (BLOCK[t.type] + extra);
}
/// CPU_REPACK extra_buffer_type::supports_op + ggml_repack_get_optimal_repack_type (repack.cpp), x86 branches:
/// MUL_MAT with a 2-D weight or MUL_MAT_ID with a 3-D one; Q4_0, Q4_K, IQ4_NL, MXFP4 when the variant has AVX2,
/// Q2_K when it has AVX512F; ne1 % 8 == 0. Size: ggml_nbytes (no get_alloc_size).
function repackTakes(t, op, feats) {
    const nd = t.shape.length;
    if (!((op === "MUL_MAT" && nd === 2) || (op === "MUL_MAT_ID" && nd === 3))) return false;
    const ok = ["q4_0", "q4_K", "iq4_nl", "mxfp4"].includes(t.type) ? feats.has("AVX2") : t.type === "q2_K" ? feats.has("AVX512") : false;
    return ok && t.shape[1] % 8 === 0;
}

/// For a list of tensors in file order ({name, type, shape}, a kvfit-gguf-write spec's "tensors"), on variant:
/// {buffers: {AMX|CPU_REPACK: {tensors, bytes}}, no_alloc_delta, mmap_alloc_delta} where the deltas are what the
/// model memory breakdown adds over the sum of all tensors (no_alloc: 0 for f16/repack, the AMX packing growth for
/// quantized AMX types; alloc with mmap: every extra-buffer tensor inside the mapped range counted a second time).
/// Assumes the file's data section is tensor after tensor, each padded to `alignment` (GGUF default 32).
export function predictExtra(tensors, variant, { alignment = 32, amxReady = true } = {}) {
    const feats = new Set(VARIANTS[variant] ?? []);
    const list = extraBufferTypes(variant, { amxReady });
    let offs = 0;
    const placed = tensors.map((t) => {
        const nb = nbytesOf(t) ?? null;
        const op = weightOp(t.name);
        let buft = "CPU";
        for (const b of list) {
            if (b === "AMX" && amxTakes(t, op)) { buft = b; break; }
            if (b === "CPU_REPACK" && repackTakes(t, op, feats)) { buft = b; break; }
        }
        const r = { ...t, op, buft, offs, nbytes: nb };
        offs += pad(nb ?? 0, alignment);
        return r;
    });
    // a tied output head (no output.weight) is token_embd created again for the output layer (TENSOR_DUPLICATED,
    // tested as LLM_TENSOR_OUTPUT, op MUL_MAT): a tensor of its own only when an extra type takes it
    const dups = [];
    const emb = placed.find((x) => x.name === "token_embd.weight");
    if (emb && !placed.some((x) => x.name === "output.weight")) {
        const o = { ...emb, name: "output.weight", op: "MUL_MAT", buft: "CPU", duplicate: true };
        for (const b of list) {
            if (b === "AMX" && amxTakes(o, o.op)) { o.buft = b; break; }
            if (b === "CPU_REPACK" && repackTakes(o, o.op, feats)) { o.buft = b; break; }
        }
        if (o.buft !== "CPU") dups.push(o);
    }
    const buffers = {};
    let noAllocDelta = 0;
    for (const t of [...placed.filter((x) => x.buft !== "CPU"), ...dups]) {
        const size = pad(t.buft === "AMX" ? amxBytes(t) : t.nbytes, 32); // TENSOR_ALIGNMENT
        buffers[t.buft] ??= { tensors: 0, bytes: 0, names: [] };
        buffers[t.buft].tensors++; buffers[t.buft].bytes += size; buffers[t.buft].names.push(t.name);
        noAllocDelta += t.duplicate ? size : size - pad(t.nbytes, 32); // a duplicate adds its whole extra copy
    }
    // mapped range of the CPU tensors: [min offs, max offs + nbytes) (llama-model-loader.cpp get_mapping_range)
    const cpu = placed.filter((x) => x.buft === "CPU");
    const first = Math.min(...cpu.map((x) => x.offs)), last = Math.max(...cpu.map((x) => x.offs + x.nbytes));
    const inside = placed.filter((x) => x.buft !== "CPU" && x.offs >= first && x.offs + x.nbytes <= last);
    const doubled = inside.reduce((s, x) => s + pad(x.nbytes, alignment), 0);
    return { variant, extra_types: list, buffers, no_alloc_delta: noAllocDelta, mmap_alloc_delta: noAllocDelta + doubled, doubled_bytes: doubled };
}

async function main() {
    const args = process.argv.slice(2);
    const opt = (name) => { const i = args.indexOf(name); if (i < 0) return null; const v = args[i + 1]; args.splice(i, 2); return v; };
    const variant = opt("--variant");
    const specFile = opt("--spec");
    const host = hostCpu();
    if (!variant && !specFile && !args.length) {
        console.log(JSON.stringify({ model: host.model, cores: host.cores, variant: host.variant, score: host.score,
            amx_flags: [...host.flags].filter((f) => f.startsWith("amx")), extra_buffer_types: extraBufferTypes(host.variant) }));
        return;
    }
    const v = variant ?? host.variant;
    if (specFile) {
        const spec = JSON.parse(fs.readFileSync(specFile, "utf8"));
        const r = predictExtra(spec.tensors, v);
        console.log(JSON.stringify({ spec: path.basename(specFile), ...r }));
        return;
    }
    const { ALL_MODELS, specOfModel } = await import("./suite.mjs");
    for (const id of args.length && args[0] !== "all" ? args : Object.keys(ALL_MODELS)) {
        const r = predictExtra(specOfModel(id, 512).tensors, v);
        for (const b of Object.values(r.buffers)) b.names = [...new Set(b.names.map((n) => n.replace(/^blk\.\d+\./, "blk.N.")))];
        console.log(JSON.stringify({ id, ...r }));
    }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    main().catch((e) => { console.error(e); process.exit(1); });
}
