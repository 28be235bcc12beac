#!/usr/bin/env node
// Re-derives every measured line of measured/spec-*.jsonl (measure_spec.mjs) from the rules of
// docs/rules/llamacpp-spec.md, llamacpp-mmproj.md, llamacpp-host-ram.md and prints one line per failed check.
//   node check_spec.mjs [measured/spec-*.jsonl ...]      (default: every spec-*.jsonl in measured/)
// Exit status 1 when a check fails.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const MiB = 1024 * 1024;
const files = process.argv.slice(2).length ? process.argv.slice(2)
    : fs.readdirSync(path.join(here, "measured")).filter((f) => /^spec-.*\.jsonl$/.test(f)).map((f) => path.join(here, "measured", f));

let n = 0, bad = 0;
const check = (ok, what) => { n++; if (!ok) { bad++; console.log(`FAIL ${what}`); } };
const near = (a, b, tol = 0.006) => Math.abs(a - b) <= tol; // log lines print 2 decimals

// ---- rules ------------------------------------------------------------------------------------------------
/// bytes of one recurrent-state copy per sequence (RULES.md): n_recr_layers * (n_embd_r + n_embd_s) * 4
export const RS_PER_SEQ = { "qwen35-9b": 52690944, "qwen35-27b": 156893184 };
/// llama-memory-recurrent.cpp:101: n_rows = mem_size * (1 + n_rs_seq), mem_size = max(1, n_seq_max)
export const rsBytes = (perSeq, nSeq, nRsSeq) => perSeq * Math.max(1, nSeq) * (1 + nRsSeq);

/// MTP (NextN) KV of the draft context: the nextn layers only, f16 (-ctkd/-ctvd), n_ctx_seq cells per stream,
/// one stream per sequence unless unified. layers: nextn layers that keep KV; k, v: values per cell per layer.
const MTP_KV = {
    "qwen35-9b-mtp.gguf": { layers: 1, k: 1024, v: 1024 }, "qwen35-27b-mtp.gguf": { layers: 1, k: 1024, v: 1024 },
    "qwen35-27b-mtp-v248320.gguf": { layers: 1, k: 1024, v: 1024 }, "qwen35moe-35b_v512.gguf": { layers: 1, k: 512, v: 512 },
    "nemotron3-super-120b_v512.gguf": { layers: 1, k: 256, v: 256 }, "deepseek-v3.2_v512.gguf": { layers: 1, k: 576, v: 0 },
    "glm-5_v512.gguf": { layers: 1, k: 576, v: 0 }, "step35-3.7-flash-mtp_v512.gguf": { layers: 3, k: 1024, v: 1024 },
};
export const mtpKvBytes = (m, nCtx, nSeq) => m.layers * nCtx * (m.k + m.v) * 2; // n_ctx = n_ctx_seq * n_seq cells in all

/// llama_state_seq_get_size_ext of one sequence of a plain llama_kv_cache (llama-kv-cache.cpp state_write:
/// magic + seq_id 8, n_stream 4, cell_count 4, per cell pos 4 + n_seq_id 4 + seq_id 4, v_trans 4, n_layer 4,
/// per layer K: type 4 + row size 8 + cells * row, V likewise); PARTIAL_ONLY is ignored by a plain cache
/// ext: M-RoPE models (n_pos_per_embd > 1) also write a 12-byte llama_kv_cell_ext per cell (llama-kv-cache.cpp:2226)
export const kvSeqStateBytes = (cells, layers, rowK, rowV, ext = false) =>
    8 + 4 + 4 + (ext ? 24 : 12) * cells + 8 + layers * (24 + cells * (rowK + rowV));
/// the recurrent part (llama-memory-recurrent.cpp state_write): 28 + 24 * n_recr_layers header + one state
export const rsSeqStateBytes = (perSeq, nRecr) => 28 + 24 * nRecr + perSeq;

// mmproj (clip.cpp warmup): P patches at the warmup image, E n_embd, F n_ff, H heads, p patch size
export function clipComputeFaOff(s) {
    // domain of the closed forms: the patch sizes / warmup image of the real towers (Qwen2/2.5-VL p = 14, Qwen3-VL
    // p = 16, Gemma 3 896 px); other variants are measured but outside the rule
    if ((s.kind === "qwen2vl" || s.kind === "qwen25vl") && s.patch !== 14) return null;
    if (s.kind === "gemma3" && s.image_size !== 896) return null;
    const P = s.kind === "gemma3" ? (s.image_size / s.patch) ** 2 : 8464; // Qwen-VL: set_warmup_n_tokens(46*46) -> 92^2 patches
    const scores = s.n_head * P * P * 4;
    const E = s.n_embd, img = 3 * s.patch * s.patch + 4; // raw image floats per patch + 4 M-RoPE positions (i32)
    switch (s.kind) {
        case "qwen2vl": return scores + 4 * P * (5 * E + img);
        case "qwen25vl": return scores + P * P * 4 + 4 * P * (5 * E + img) + 16960; // + f32 window mask, window indices
        case "qwen3vl": return scores + 4 * P * ((7 + s.deepstack.length) * E + img);
        case "gemma3": return scores + 4 * P * 6 * E;
    }
    return null;
}
export function clipComputeFaOn(s) {
    const E = s.n_embd, F = s.n_ff;
    if (s.kind === "gemma3" && s.image_size === 896) { const P = (s.image_size / s.patch) ** 2; return 4 * P * Math.max(5 * E, F + 3 * E); }
    if (s.kind === "qwen2vl" && E >= 1280 && s.patch === 14) return 4 * 8464 * (Math.max(5 * E, F + 2 * E) + 3 * 196 + 4);
    return null; // Qwen2.5-VL, Qwen3-VL: measured only (open)
}

// ---- checks -----------------------------------------------------------------------------------------------
const lines = files.flatMap((f) => fs.readFileSync(f, "utf8").trim().split("\n").filter(Boolean).map((l) => ({ f: path.basename(f), ...JSON.parse(l) })));
const ctxs = lines.filter((l) => l.kind === "context" && l.ok);

for (const l of ctxs.filter((c) => c.group === "mtp" || c.group === "k6")) {
    const id = l.req.id, p = l.parsed, m = MTP_KV[l.model];
    const nSeq = l.req.n_seq ?? 1;
    if (id.startsWith("mtp")) {
        if (!m) continue;
        const attn = p.kv_caches.filter((c) => c.layers > 0 && !/^dsv4/.test(c.which));
        const bytes = attn.reduce((a, c) => a + (c.K_MiB + c.V_MiB) * MiB, 0);
        check(near(bytes / MiB, mtpKvBytes(m, l.req.n_ctx, nSeq) / MiB, 0.02), `${l.f} ${l.model} ${id}: MTP KV ${bytes / MiB} MiB vs rule ${mtpKvBytes(m, l.req.n_ctx, nSeq) / MiB}`);
        check(attn.every((c) => c.type_k === "f16" && c.cells === l.req.n_ctx / nSeq && c.seqs === `${nSeq}/${nSeq}`), `${l.f} ${l.model} ${id}: MTP cache cells/types/streams ${JSON.stringify(attn)}`);
        check(p.rs == null, `${l.f} ${l.model} ${id}: MTP context has no recurrent state`);
        check(l.n_rs_seq_actual === 0, `${l.f} ${l.model} ${id}: MTP context n_rs_seq 0`);
    } else if (p.rs && /qwen35-(9b|27b)/.test(l.model)) {
        const per = RS_PER_SEQ[/27b/.test(l.model) ? "qwen35-27b" : "qwen35-9b"];
        const want = rsBytes(per, nSeq, l.req.n_rs_seq ?? 0);
        check(near(p.rs.size_MiB, want / MiB), `${l.f} ${l.model} ${id}: RS ${p.rs.size_MiB} MiB vs (1 + n_rs_seq) rule ${want / MiB}`);
        const ctxBytes = l.breakdown.reduce((a, b) => a + b.context, 0);
        const kv = p.kv_caches.reduce((a, c) => a + (c.K_MiB + c.V_MiB) * MiB, 0);
        check(ctxBytes === kv + want, `${l.f} ${l.model} ${id}: breakdown context ${ctxBytes} != KV ${kv} + RS ${want}`);
    }
}

// K6: the compute buffers measured on the CPU build (k6 group) and llama.cpp's fit (common/fit.cpp) reproduce
// 190,464 (v0.5.0 / 5b4ebc5: common_fit_extra_model) and 184,320 (build 9893: MTP at n_ctx_train in the margin)
for (const rel of ["v0.5.0", "5b4ebc5"]) {
    const k6 = ctxs.filter((c) => c.group === "k6" && c.release === rel);
    if (!k6.length) continue;
    const get = (id) => k6.find((c) => c.req.id === id);
    const comp = (id) => get(id).breakdown.reduce((a, b) => a + b.compute, 0);
    const mtp4k = comp("mtp_4096"), mtp262k = comp("mtp_262144");
    check(near(mtp262k / MiB, 648.03, 0.01), `${rel} K6: MTP compute at n_ctx_train ${mtp262k / MiB} MiB vs logged 648.03`);
    const model = 16386.94 * MiB, rs3 = rsBytes(RS_PER_SEQ["qwen35-27b"], 1, 2), free = 31153 * MiB, margin = 512 * MiB;
    // CUDA0 main compute: 756 MiB logged at 262144 = 244 MiB + the f16 KQ mask (n_ctx x n_ubatch x 2 B)
    const cm = (n) => 244 * MiB + n * 1024 * 2;
    const cmtp = (n) => n === 4096 ? mtp4k : n === 262144 ? mtp262k : null;
    const fit = (T, used) => { const a = used(4096), b = used(262144); const x = 4096 + Math.floor((262144 - 4096) * (T - a) / (b - a)); return x - (x % 256); };
    const v050 = fit(free - margin, (n) => model + n * 65536 + rs3 + cm(n) + n * 4096 + cmtp(n));
    const b9893 = fit(free - margin - (1024 * MiB + 648.03 * MiB), (n) => model + n * 65536 + rs3 + cm(n));
    check(v050 === 190464, `${rel} K6: fit with the MTP context measured at every n_ctx gives ${v050}, case says 190464`);
    check(b9893 === 184320, `${rel} K6: fit with the MTP context at n_ctx_train in the margin gives ${b9893}, case says 184320`);
}

// checkpoints (llama_state_seq_get_size_ext PARTIAL_ONLY after decoding)
for (const l of ctxs.filter((c) => c.group === "ckpt" && c.decode_rc === 0)) {
    const d = l.req.decode;
    if (/qwen35-9b/.test(l.model)) {
        check(l.state_seq_partial === rsSeqStateBytes(RS_PER_SEQ["qwen35-9b"], 24), `${l.f} ${l.req.id}: qwen35 checkpoint ${l.state_seq_partial} vs ${rsSeqStateBytes(RS_PER_SEQ["qwen35-9b"], 24)}`);
        check(l.state_seq_full === l.state_seq_partial + kvSeqStateBytes(d, 8, 2048, 2048, true) - 8 + 4 * (l.req.n_seq - 1), `${l.f} ${l.req.id}: qwen35 full seq state ${l.state_seq_full}`);
    } else if (/gpt-oss/.test(l.model)) {
        const cells = Math.min(d, 128); // gpt-oss sliding_window 128: the SWA cells of the sequence that are not masked
        check(l.state_seq_partial === kvSeqStateBytes(cells, 12, 1024, 1024), `${l.f} ${l.req.id}: gpt-oss checkpoint ${l.state_seq_partial} vs ${kvSeqStateBytes(cells, 12, 1024, 1024)}`);
    } else if (/llama31/.test(l.model)) {
        check(l.state_seq_partial === kvSeqStateBytes(d, 32, 2048, 2048) && l.state_seq_partial === l.state_seq_full, `${l.f} ${l.req.id}: plain KV checkpoint = whole sequence ${l.state_seq_partial}`);
    }
}

// LoRA: one buffer per base-weight buffer type, sum of ggml_nbytes(lora_a) + ggml_nbytes(lora_b)
const LORA_BYTES = { "llama31-8b-lora-r16.gguf": 32 * 2 * 16 * (4096 + 4096 + 4096 + 1024 + 4096 + 1024 + 4096 + 4096),
    "llama31-8b-lora-r64-ffn.gguf": 32 * 2 * 64 * (2 * 4096 + 4096 + 1024 + 4096 + 1024 + 2 * 4096 + 3 * (4096 + 14336)),
    "llama31-8b-lora-r32-q8.gguf": 32 * (34 / 32) * 32 * (4096 + 4096 + 4096 + 1024 + 4096 + 1024 + 4096 + 4096) };
for (const l of lines.filter((x) => x.kind === "lora" && x.ok)) {
    const want = LORA_BYTES[l.lora];
    if (want == null) continue;
    const got = Object.values(l.lora_buffers_MiB).reduce((a, b) => a + b, 0);
    check(near(got, want / MiB), `${l.f} ${l.lora}: LoRA buffer ${got} MiB vs ${want / MiB}`);
}
for (const l of ctxs.filter((c) => c.group === "lora" && c.breakdown_after)) {
    const before = l.breakdown.reduce((a, b) => a + b.compute, 0), after = l.breakdown_after.reduce((a, b) => a + b.compute, 0);
    check(before === after, `${l.f} ${l.set}: compute with the adapters applied ${after} vs ${before}`);
    check(l.breakdown.every((b) => b.model === 0 || b.model === 1365032960), `${l.f}: the adapters are not in llama's memory breakdown`);
}

// mmproj
const K9 = { "mmproj-qwen25vl-7b": [4872, 705], "mmproj-qwen3vl-4b": [4728, 323], "mmproj-qwen2vl-7b": [4598, 267], "mmproj-gemma3-12b": [1132, 121] };
for (const l of lines.filter((x) => x.kind === "mmproj" && x.ok)) {
    if (K9[l.id]) {
        const want = K9[l.id][l.fa === "off" ? 0 : 1];
        // K9 gives whole MiB (from CUDA logs); the CPU build is within 0.51 MiB of each
        check(Math.abs(l.compute_bytes / MiB - want) < 0.52, `${l.f} ${l.id} FA ${l.fa}: ${l.compute_bytes / MiB} MiB vs K9 ${want}`);
    }
    if (!l.shape) continue;
    const f = l.fa === "off" ? clipComputeFaOff(l.shape) : clipComputeFaOn(l.shape);
    if (f != null) check(l.compute_bytes === f, `${l.f} ${l.id} ${JSON.stringify(l.shape)} FA ${l.fa}: ${l.compute_bytes} vs rule ${f}`);
}

console.log(`${n} checks, ${bad} failed (${files.length} files)`);
process.exit(bad ? 1 : 0);
