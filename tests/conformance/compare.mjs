// kvfit's prediction against llama.cpp's measurement for one case: one check per buffer.
//
// What is exact, and how (docs/accuracy.md repeats this):
// - model buffer: the model's memory breakdown (exact bytes) against kvfit's weights_bytes (host-dependent extra
//   buffers, AMX / CPU_REPACK, are named in the note: docs/rules/llamacpp-cpu-repack.md).
// - KV and recurrent state, each figure: llama.cpp logs K, V, R and S as (float)bytes / MiB with 2 decimals;
//   kvfit's bytes must print the same (|predicted MiB - logged MiB| <= 0.005). Cells per stream, layers,
//   streams, n_ctx and n_ctx_seq are logged as integers and compared exactly.
// - KV + recurrent state, in bytes: the context's memory breakdown gives KV + RS + compute exactly
//   (ctx cpuRam); the compute buffer is logged with 2 decimals at creation and, with real allocation only,
//   with 4 decimals at dispose. So KV + RS lies in [cpuRam - compute_max, cpuRam - compute_min]: a 10 KiB
//   window in no_alloc mode, a 105-byte window with real allocation. Every KV and RS buffer is a multiple
//   of 256 cells x a row of >= 64 bytes (KV) or of n_seq x a multiple of 4 bytes (RS), so inside the
//   105-byte window the prediction is byte-exact.
// - output buffer: logged with 2 decimals only (not in the breakdown); compared at that precision.
// - compute buffer: within 5 % of the logged value (4 decimals when allocated, else 2).
const MiB = 1024 * 1024;

/// llama.cpp prints (float)bytes / (1024.0f * 1024.0f) with %.2f.
export const asLogged = (bytes) => Math.fround(Math.fround(bytes) / MiB);
export const atLogPrecision = (bytes, logMiB) => logMiB != null && Math.abs(asLogged(bytes) - logMiB) <= 0.005 + 1e-9;
export const COMPUTE_TOLERANCE = 0.05;

function check(name, pass, pred, meas, diff, note = "") { return { name, pass, pred, meas, diff, note }; }

/// The figures compared, read from kvfit's --json document (schema_version 2, docs/json.md): llama.cpp's context
/// sizes and recurrent state are in `detail`, the KV caches in `caches`, the buffers summed over devices in `totals`.
function figures(doc) {
    if (doc.schema_version !== 2) throw new Error(`kvfit --json: schema_version ${doc.schema_version}, expected 2`);
    return { n_ctx: doc.detail.n_ctx, n_ctx_seq: doc.detail.n_ctx_seq, kv_caches: doc.caches,
             recurrent: doc.detail.recurrent, buffers: doc.totals, weights_no_mmap: doc.detail.weights_bytes_no_mmap ?? null,
             compute_modelled: doc.detail.compute_modelled !== false };
}

/// pred: kvfit --json output, schema 2 (null when kvfit refused: rc), meas: Harness.measureContext result,
/// model: {model_bytes}, c: the case, mode: "no_alloc" | "alloc". Returns {pass, checks, notes}.
export function compareCase({ c, pred, rc, kvfitError, meas, model, mode }) {
    const checks = [];
    // A context either side refuses: both must refuse (kvfit with exit status 2). The matrix marks the
    // refusals it expects (c.refused: quantized V without flash attention); llama.cpp also refuses others,
    // e.g. different K and V types on an MLA model.
    if (c.refused || !pred || !meas.ok) {
        const refusedByLlama = !meas.ok, refusedByKvfit = !pred && rc === 2;
        const llamaText = refusedByLlama ? `llama.cpp refused: ${(meas.errors ?? [meas.error]).join("; ")}` : "llama.cpp accepted";
        const kvfitText = pred ? "kvfit accepted" : `kvfit exit ${rc}${kvfitError ? `: ${kvfitError}` : ""}`;
        checks.push(check("refusal", refusedByLlama && refusedByKvfit, kvfitText, llamaText, null));
        return finish(checks);
    }

    const predDoc = pred;
    pred = figures(pred);
    // context size
    checks.push(check("n_ctx", pred.n_ctx === meas.n_ctx && pred.n_ctx_seq === meas.n_ctx_seq,
        `${pred.n_ctx}/${pred.n_ctx_seq}`, `${meas.n_ctx}/${meas.n_ctx_seq}`, null));

    // KV caches: the layout (one line per cache: cells per stream, layers, streams) exactly, and the K and V
    // bytes of all caches together at the log's precision (one 0.005 MiB rounding per logged figure)
    const pk = [...pred.kv_caches].sort((a, b) => (a.name === "swa") - (b.name === "swa"));
    // llama_kv_cache_dsv4 logs its unused base cache (0 layers, 0 MiB: "creating non-SWA KV cache" of
    // llama_kv_cache_iswa, src/llama-kv-cache-dsv4.cpp); a cache without layers holds nothing, so it is left out
    // unless kvfit predicts an empty cache too
    const emptyPred = pred.kv_caches.some((k) => k.n_layer === 0);
    const mk = [...meas.kv_caches].filter((k) => emptyPred || k.layers !== 0 || k.K_MiB !== 0 || k.V_MiB !== 0)
        .sort((a, b) => (a.which === "swa") - (b.which === "swa"));
    const kPred = pk.reduce((s, k) => s + k.k_bytes, 0), vPred = pk.reduce((s, k) => s + k.v_bytes, 0);
    const kLog = mk.reduce((s, k) => s + k.K_MiB, 0), vLog = mk.reduce((s, k) => s + k.V_MiB, 0);
    const kvPred = kPred + vPred, kvLog = kLog + vLog;
    const slack = 0.005 * Math.max(1, mk.length) + 1e-9;
    const kvNotes = [];
    if (Math.abs(asLogged(kPred) - kLog) > slack) kvNotes.push(`K ${asLogged(kPred).toFixed(2)} vs ${kLog.toFixed(2)} MiB`);
    if (Math.abs(asLogged(vPred) - vLog) > slack) kvNotes.push(`V ${asLogged(vPred).toFixed(2)} vs ${vLog.toFixed(2)} MiB`);
    checks.push(check("kv", kvNotes.length === 0, kvPred, kvLog, asLogged(kvPred) - kvLog, kvNotes.join(", ")));

    const layoutNotes = [];
    if (pk.length !== mk.length) layoutNotes.push(`${pk.length} caches predicted (${pk.map((k) => k.name).join(", ")}), ${mk.length} logged (${mk.map((k) => k.which).join(", ")})`);
    for (let i = 0; i < Math.min(pk.length, mk.length); ++i) {
        const p = pk[i], m = mk[i], streams = Number(m.seqs.split("/")[1]);
        if (p.cells_per_stream !== m.cells) layoutNotes.push(`${p.name}: cells ${p.cells_per_stream} vs ${m.cells}`);
        if (p.n_layer !== m.layers) layoutNotes.push(`${p.name}: layers ${p.n_layer} vs ${m.layers}`);
        if (p.n_stream !== streams) layoutNotes.push(`${p.name}: streams ${p.n_stream} vs ${streams}`);
        if (!atLogPrecision(p.k_bytes, m.K_MiB)) layoutNotes.push(`${p.name}: K ${asLogged(p.k_bytes).toFixed(2)} vs ${m.K_MiB} MiB`);
        if (!atLogPrecision(p.v_bytes, m.V_MiB)) layoutNotes.push(`${p.name}: V ${asLogged(p.v_bytes).toFixed(2)} vs ${m.V_MiB} MiB`);
    }
    const fmtCaches = (list, cells, layers, streams) => list.map((k) => `${k[cells]}x${k[streams]}:${k[layers]}L`).join("+") || "none";
    checks.push(check("kv caches", layoutNotes.length === 0, fmtCaches(pk, "cells_per_stream", "n_layer", "n_stream"),
        fmtCaches(mk.map((k) => ({ ...k, streams: k.seqs.split("/")[1] })), "cells", "layers", "streams"), null, layoutNotes.join(", ")));

    // recurrent state, figure by figure
    const pr = pred.recurrent, mr = meas.rs;
    // plus the per-layer-embedding conv state P (llama_memory_recurrent, Qwen3.8-Flash-Next) and the DeepSeek-V4
    // compressor states (llama_dsv4_comp_state, src/llama-kv-cache-dsv4.cpp), both in the context's memory
    // (totals.state_bytes is their sum with R and S: P = state_bytes - r - s - comp)
    if (pr.p_bytes == null && pred.buffers.state_bytes != null)
        pr.p_bytes = Math.max(0, pred.buffers.state_bytes - pr.r_bytes - pr.s_bytes - (pr.comp_bytes ?? 0));
    const rsPred = pr.r_bytes + pr.s_bytes + (pr.p_bytes ?? 0) + (pr.comp_bytes ?? 0);
    if (pr.n_layer > 0 || mr) {
        const notes = [];
        let ok = !!mr && pr.n_layer > 0;
        if (!mr) notes.push("no recurrent state logged");
        if (mr && pr.n_layer === 0) notes.push("recurrent state logged, none predicted");
        if (mr && pr.n_layer > 0) {
            if (pr.n_seq !== mr.cells) { ok = false; notes.push(`sequences ${pr.n_seq} vs ${mr.cells}`); }
            if (!atLogPrecision(pr.r_bytes, mr.R_MiB)) { ok = false; notes.push(`R ${asLogged(pr.r_bytes).toFixed(2)} vs ${mr.R_MiB} MiB`); }
            if (!atLogPrecision(pr.s_bytes, mr.S_MiB)) { ok = false; notes.push(`S ${asLogged(pr.s_bytes).toFixed(2)} vs ${mr.S_MiB} MiB`); }
            if (pr.p_bytes != null && !atLogPrecision(pr.p_bytes, mr.P_MiB ?? 0)) { ok = false; notes.push(`P ${asLogged(pr.p_bytes).toFixed(2)} vs ${mr.P_MiB} MiB`); }
        }
        const rsLog = mr ? mr.R_MiB + mr.S_MiB + (mr.P_MiB ?? 0) : null;
        checks.push(check("rs", ok, rsPred, rsLog, mr ? asLogged(rsPred - (pr.comp_bytes ?? 0)) - rsLog : null, notes.join(", ")));
    }

    // KV + RS in bytes, from the exact context total minus the compute buffer
    const c4 = meas.compute_buffers_4dp?.CPU, c2 = meas.compute_buffers?.CPU;
    const [cMid, cHalf] = mode === "alloc" && c4 != null ? [c4, 0.00005] : [c2, 0.005];
    const lo = meas.ctx_cpuRam_bytes - Math.ceil((cMid + cHalf) * MiB), hi = meas.ctx_cpuRam_bytes - Math.floor((cMid - cHalf) * MiB);
    const sum = kvPred + rsPred;
    const sumDiff = sum < lo ? sum - lo : sum > hi ? sum - hi : 0;
    checks.push(check("kv+rs bytes", sumDiff === 0, sum, [lo, hi], sumDiff,
        `window ${hi - lo + 1} B (compute logged with ${mode === "alloc" && c4 != null ? 4 : 2} decimals)`));

    // output buffer (log only)
    checks.push(check("output", atLogPrecision(pred.buffers.output_bytes, meas.output_buffer_MiB), pred.buffers.output_bytes,
        meas.output_buffer_MiB, asLogged(pred.buffers.output_bytes) - meas.output_buffer_MiB));

    // compute buffer, within 5 %
    const cMeas = Math.round(cMid * MiB), cPred = pred.buffers.compute_bytes;
    const rel = (cPred - cMeas) / cMeas;
    // kvfit says (detail.compute_modelled false, a warning in every output) that it does not model this graph's compute
    // buffer: its figure is not checked against the tolerance, the report shows it as an estimate with its error
    if (!pred.compute_modelled) checks.push(check("compute", true, cPred, cMeas, rel, "estimate: kvfit warns that this graph's compute buffer is not modelled"));
    else checks.push(check("compute", Math.abs(rel) <= COMPUTE_TOLERANCE, cPred, cMeas, rel));

    // model buffer
    // (a host-dependent extra buffer -- AMX, CPU_REPACK -- is named in the note: with real allocation and mmap its
    // tensors are counted twice, docs/rules/llamacpp-cpu-repack.md; the check itself is unchanged)
    // no_alloc mode sizes the model buffer as a no-mmap load does (one buffer over every tensor of the context):
    // kvfit's detail.weights_bytes_no_mmap (a tied output created before token_embd is a second tensor there,
    // gemma4); real allocation with mmap counts the mapped range, totals.weights_bytes. Without the field: as before.
    const wPred = mode === "no_alloc" && pred.weights_no_mmap != null ? pred.weights_no_mmap : pred.buffers.weights_bytes;
    const wDiff = wPred - model.model_bytes;
    const extra = Object.entries(model.model_buffers ?? {}).filter(([b, mib]) => !/^CPU(_Mapped)?$/.test(b) && mib > 0);
    // kvfit's host model buffers (detail.cpu_backend: the CPU it was told, --cpu-features) beside the logged ones
    const cpuPred = predDoc.detail?.cpu_backend;
    const kvfitBufs = cpuPred?.model_buffers?.length > 1
        ? `; kvfit (libggml-cpu-${cpuPred.variant}): ${cpuPred.model_buffers.map((b) => `${b.name} ${asLogged(b.bytes).toFixed(2)} MiB`).join(", ")}` : "";
    checks.push(check("weights", Math.abs(wDiff) < 32, wPred, model.model_bytes, wDiff,
        (extra.length ? `model buffers logged: ${Object.entries(model.model_buffers).map(([b, mib]) => `${b} ${mib.toFixed(2)} MiB`).join(", ")}` : "") + kvfitBufs));
    return finish(checks);
}

function finish(checks) { return { pass: checks.every((k) => k.pass), checks }; }
