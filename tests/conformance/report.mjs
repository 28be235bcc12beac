// docs/accuracy-<release>.md: the header (llama.cpp release, host CPU and CPU backend, date, method), one row per
// case, failures in full, the llama_probe section (spec_conformance.mjs: draft models, MTP, LoRA, checkpoints) and the
// summary line "N passed, M failed" (with the matrix's and the probe's counts); docs/accuracy.md: the index of the releases.
const MiB = 1024 * 1024;
const mib = (b) => (b == null ? "–" : (b / MiB).toFixed(2));
const signed = (x, digits) => {
    const t = x.toFixed(digits);
    return Number(t) === 0 ? (0).toFixed(digits) : (x > 0 ? "+" : "") + t;
};

function cell(row, name, fmt) {
    const k = row.checks.find((c) => c.name === name);
    if (!k) return ["", "", ""];
    const mark = k.pass ? "" : " **✗**";
    return fmt(k, mark);
}

const fmtLogMiB = (k, mark) => [mib(k.pred), k.meas == null ? "–" : k.meas.toFixed(2), k.diff == null ? "–" : signed(k.diff, 2) + mark];

export function renderReport(meta, rows, spec = null) {
    const r = meta.release;
    const passed = rows.filter((x) => x.pass).length, failed = rows.length - passed;
    const out = [];
    out.push(`# kvfit accuracy against the real llama.cpp ${meta.release_id ?? r.build_commit ?? ""}`.trimEnd());
    out.push("");
    out.push("Written by `tests/conformance/run.sh` (do not edit by hand). Index of the releases: [accuracy.md](accuracy.md).");
    out.push("");
    out.push(`- llama.cpp: release ${r.release ?? "?"} of ${r.repo ?? "ggml-org/llama.cpp"} as bundled in node-llama-cpp ${r.node_llama_cpp ?? "?"} ` +
        `(CPU build, @node-llama-cpp/linux-x64), build commit ${r.build_commit ?? "?"}, ggml ${r.ggml_version ?? "?"}` +
        (meta.release_id ? ` (tests/conformance/releases/${meta.release_id})` : ""));
    out.push(`- kvfit: rules "${meta.kvfit_rules ?? "?"}" (from \`kvfit --json\`)` +
        (meta.kvfit_pass_rules ? `, called with \`--llamacpp-version ${meta.release_id}\`` : "; kvfit is not told the release (KVFIT_PASS_RULES unset)"));
    out.push(`- measured: ${meta.date} on ${meta.host}; ${rows.length} cases in ${meta.seconds.toFixed(0)} s` +
        (meta.threads ? ` (--threads ${meta.threads})` : ""));
    if (meta.cpu) out.push(`- CPU backend: ${meta.cpu_backend ?? "?"} loaded (from /proc/cpuinfo flags: ${meta.cpu.variant_from_flags ?? "?"}, score ${meta.cpu.score}; ` +
        `AMX flags: ${meta.cpu.amx_flags.length ? meta.cpu.amx_flags.join(" ") : "none"}); first CPU buffer type: ${(meta.preferred_buffer_types ?? []).join(", ") || "?"}; ` +
        `extra model buffers with real allocation: ${Object.keys(meta.extra_model_buffers ?? {}).length ? Object.entries(meta.extra_model_buffers).map(([b, l]) => `${b} (${l.join("; ")})`).join(", ") : "none"} ` +
        "— host-dependent, see docs/rules/llamacpp-cpu-repack.md");
    const loadedVariant = /^libggml-cpu-(.+)\.so$/.exec(meta.cpu_backend ?? "")?.[1];
    if (meta.kvfit_cpu_features) out.push(`- kvfit told the CPU: \`--cpu-features ${meta.kvfit_cpu_features}\` (predicts libggml-cpu-${meta.kvfit_cpu_variant ?? "?"}` +
        (loadedVariant && meta.kvfit_cpu_variant && loadedVariant !== meta.kvfit_cpu_variant ? `, **not the variant ggml loaded (${loadedVariant})**` : "") + "; " +
        "`alloc` rows with mmap, `no_alloc` rows with `--no-mmap`, as llama.cpp counts each)");
    out.push("- models: shape-exact GGUFs written by kvfit-gguf-write from tests/conformance/models.mjs and models_*.mjs (suite.mjs; published shapes, tensor data a " +
        "sparse hole, minimal SentencePiece vocabulary: v512, or the real vocabulary size)");
    out.push("");
    out.push("## How each buffer is compared");
    out.push("");
    out.push("- **KV, RS** (per figure): llama.cpp logs K and V (per cache), R and S as `(float)bytes / MiB` with 2 decimals; kvfit's bytes must " +
        "print the same (|Δ| ≤ 0.005 MiB per logged figure; K and V are summed over the caches). **caches**: the cache layout — cells per " +
        "stream, streams and layers of each cache (base, then sliding-window), and each cache's K and V — is compared exactly with the " +
        "log lines, as are n_ctx, n_ctx_seq and the recurrent state's sequence count.");
    out.push("- **KV+RS bytes**: the context's memory breakdown (`getMemoryBreakdown().cpuRam`) is KV + RS + compute, exact. The compute " +
        "buffer is logged with 2 decimals at creation and, with real allocation only, with 4 decimals at dispose " +
        "(`compute buffer size is … MiB, matches expectation`). So KV + RS lies in a window of 10 KiB (no_alloc rows) or about " +
        "105 bytes (alloc rows) and kvfit's KV + RS must fall inside it. Every KV buffer is a multiple of 256 cells × a row of at least " +
        "64 bytes, so inside the 105-byte window the prediction is byte-exact. `no_alloc` is llama.cpp's own no-allocation mode (the " +
        "sizes without the memory); `alloc` rows repeat small cases with the buffers really allocated.");
    out.push("- **output**: logged with 2 decimals only, not part of the breakdown: compared at that precision (use the real-vocabulary rows: " +
        "with 512 tokens the buffer is a few KiB).");
    out.push(`- **compute**: within ${(meta.compute_tolerance * 100).toFixed(0)} % of the logged size (4 decimals on alloc rows, else 2).`);
    out.push("- **weights**: the model's memory breakdown, exact bytes (Δ under 32 bytes of alignment allowed).");
    out.push("- **refusal**: when either side refuses a context (a quantized V cache without flash attention; different K and V types on an " +
        "MLA model), llama.cpp must refuse it and kvfit must exit with status 2.");
    out.push("");
    out.push("Columns: predicted (kvfit), measured (llama.cpp), difference; MiB unless stated. A failing figure is marked ✗ and " +
        "explained under the table.");
    out.push("");
    out.push("| # | architecture | settings | mode | n_ctx / n_ctx_seq (pred · meas) | caches: cells×streams:layers (pred · meas) | KV pred | KV meas | Δ | RS pred | RS meas | Δ | KV+RS Δ bytes | output pred | output meas | Δ | compute pred | compute meas | Δ % | weights Δ bytes | result |");
    out.push("|--:|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|");
    rows.forEach((row, i) => {
        const arch = `${row.name} (v${row.n_vocab})`;
        const nctx = cell(row, "n_ctx", (k, m) => [`${k.pred} · ${k.meas}${m}`])[0] ?? "";
        const caches = cell(row, "kv caches", (k, m) => [k.pred === k.meas ? k.pred : `${k.pred} · ${k.meas}${m}`])[0] ?? "";
        const kv = cell(row, "kv", fmtLogMiB);
        const rs = cell(row, "rs", fmtLogMiB);
        const sum = cell(row, "kv+rs bytes", (k, m) => [`${k.diff}${m}`])[0] ?? "";
        const o = cell(row, "output", fmtLogMiB);
        const c = cell(row, "compute", (k, m) => [mib(k.pred), mib(k.meas), signed(k.diff * 100, 1) + m]);
        const w = cell(row, "weights", (k, m) => [`${k.diff}${m}`])[0] ?? "";
        let result = row.pass ? "PASS" : "**FAIL**";
        const special = row.checks.find((k) => ["refusal", "load"].includes(k.name));
        if (special) {
            const text = `${special.pred} · ${special.meas}`.replace(/\|/g, "\\|");
            out.push(`| ${i + 1} | ${arch} | ${row.settings} | ${row.mode} | ${text} | | | | | | | | | | | | | | | | ${result} |`);
            return;
        }
        out.push(`| ${i + 1} | ${arch} | ${row.settings} | ${row.mode} | ${nctx} | ${caches} | ${kv.join(" | ")} | ${rs.join(" | ")} | ${sum} | ${o.join(" | ")} | ${c.join(" | ")} | ${w} | ${result} |`);
    });
    out.push("");

    // per-buffer tallies
    const names = ["n_ctx", "kv caches", "kv", "rs", "kv+rs bytes", "output", "compute", "weights", "refusal"];
    out.push("## Per buffer");
    out.push("");
    out.push("| check | passed | failed |");
    out.push("|---|--:|--:|");
    for (const n of names) {
        const ks = rows.flatMap((x) => x.checks.filter((k) => k.name === n));
        if (ks.length) out.push(`| ${n} | ${ks.filter((k) => k.pass).length} | ${ks.filter((k) => !k.pass).length} |`);
    }
    const comp = rows.flatMap((x) => x.checks.filter((k) => k.name === "compute"));
    if (comp.length) {
        const worst = comp.reduce((a, b) => (Math.abs(b.diff) > Math.abs(a.diff) ? b : a));
        const wr = rows.find((x) => x.checks.includes(worst));
        out.push("");
        out.push(`Worst compute error: ${signed(worst.diff * 100, 1)} % (${wr.name} v${wr.n_vocab}, ${wr.settings}, ${wr.mode}: ` +
            `predicted ${mib(worst.pred)} MiB, measured ${mib(worst.meas)} MiB).`);
    }
    out.push("");

    const failures = rows.map((x, i) => [x, i]).filter(([x]) => !x.pass);
    if (failures.length) {
        out.push("## Failures");
        out.push("");
        for (const [x, i] of failures) {
            const bad = x.checks.filter((k) => !k.pass).map((k) => {
                const fmt = (v) => (Array.isArray(v) ? `[${v.join(", ")}]` : v);
                return `${k.name}: predicted ${fmt(k.pred)}, measured ${fmt(k.meas)}${k.diff != null ? `, Δ ${typeof k.diff === "number" ? +k.diff.toFixed(6) : k.diff}` : ""}${k.note ? ` (${k.note})` : ""}`;
            });
            out.push(`- #${i + 1} ${x.name} v${x.n_vocab}, ${x.settings}, ${x.mode} — \`${x.command}\`: ${bad.join("; ")}`);
        }
        out.push("");
    }
    if (spec) out.push(...renderSpecSection(spec));
    out.push(summaryLine(passed, failed, spec));
    out.push("");
    return out.join("\n");
}

/// "N passed, M failed", over the matrix and the probe's rows when both ran (the index shows this line)
function summaryLine(passed, failed, spec) {
    if (!spec) return `${passed} passed, ${failed} failed`;
    const sp = spec.rows.filter((x) => x.pass).length, sf = spec.rows.length - sp;
    return `${passed + sp} passed, ${failed + sf} failed (matrix ${passed} passed, ${failed} failed; llama_probe ${sp} passed, ${sf} failed)`;
}

const GROUPS = {
    draft: "a draft model (`-md`): its own context at the target's n_ctx, -np, -b, -ub, with -ctkd/-ctvd and n_parallel outputs; " +
        "the same context as node-llama-cpp creates it (`--n-outputs-max batch`)",
    mtp: "MTP (`--spec-type draft-mtp --spec-draft-n-max N`): the target context (n_rs_seq = N recurrent snapshots, " +
        "n_parallel x (1 + N) outputs) and the MTP context on the NextN block (ctx_other = target), one kvfit command for both",
    k6: "case K6 (../shared/cases/README.md): Qwen3.6-27B with its MTP block, real vocabulary, `-b 4096 -ub 1024 -np 1 " +
        "--spec-draft-n-max 2`, at the context sizes llama.cpp's fit tries and chose; and the same without speculative decoding",
    lora: "LoRA adapters (`--lora`) on Llama-3.1-8B, loaded with real allocation: each adapter's buffer",
    ckpt: "context checkpoints (`--ctx-checkpoints`): `llama_state_seq_get_size_ext(PARTIAL_ONLY)` after decoding, with real " +
        "allocation, against kvfit's `detail.host_ram.checkpoint_bytes`; and the allocated context itself",
};

const commas = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : String(n));
/// one check as a table cell: predicted · measured (Δ), ✗ when it failed
function specCell(k) {
    if (!k) return "";
    const mark = k.pass ? "" : " **✗**";
    let text;
    if (k.name === "committed") text = k.pass ? "=" : "differs";
    else if (k.unit === "MiB") text = `${mib(k.pred)} · ${k.meas == null ? "–" : Number(k.meas).toFixed(2)}`;
    else if (k.unit === "B") {
        const rel = /compute/.test(k.name);
        text = k.pred === k.meas ? `${commas(k.pred)} =` : `${commas(k.pred)} · ${commas(k.meas)} (${rel ? `${signed(k.diff * 100, 1)} %` : `Δ ${commas(k.diff)}`})`;
        if (/^known miss|^upper bound|^estimate/.test(k.how)) text += ` ${k.how.split(" (")[0].replace(/^estimate.*/, "estimate")}`;
    } else text = k.pred === k.meas || String(k.pred) === String(k.meas) ? `${k.pred} =` : `${k.pred} · ${k.meas}`;
    return `${text}${mark}`.replace(/\|/g, "\\|");
}

/// The llama_probe section of docs/accuracy-<release>.md (spec_conformance.mjs): one table per group, one row per
/// context (or adapter), one column per check; how each is compared; counts; failures in full.
export function renderSpecSection({ meta, rows }) {
    const out = [];
    const passed = rows.filter((x) => x.pass).length;
    out.push("## Speculative decoding, draft models, LoRA, checkpoints (llama_probe)");
    out.push("");
    out.push("node-llama-cpp's addon cannot create an MTP context, set n_rs_seq / n_outputs_max / ctx_other or load LoRA buffers " +
        "without a context, so these rows are measured through `tests/conformance/probe/llama_probe`: the C API of the same shipped " +
        "libllama (CPU build), compiled against this release's own headers (the llama.cpp source node-llama-cpp ships as " +
        "`llama/gitRelease.bundle`). `spec_conformance.mjs` measures them live (`measure_spec.mjs --profile " + `${meta.profile}\`` +
        (meta.from ? `; this run compared ${meta.from} instead of measuring` : "") + "), asks kvfit for each with the flags a user gives " +
        "(the command is listed under each table), and checks that every live figure equals the committed " +
        "`tests/conformance/measured/spec-<group>." + meta.release_id + ".jsonl` line that the GoogleTests replay (column **committed**: " +
        "every figure that does not depend on the host's CPU; the weights' split over AMX / CPU_REPACK buffers does, and is checked " +
        "against kvfit told the host's CPU).");
    out.push("");
    out.push(`- measured: ${meta.date} on ${meta.host}; ${rows.length} rows in ${meta.seconds.toFixed(0)} s (` +
        Object.entries(meta.timings).map(([g, t]) => `${g} ${t.toFixed(1)} s`).join(", ") + ")");
    out.push("- **exact**: bytes from `llama_get_memory_breakdown` (the context column is KV + recurrent state, the compute column " +
        "the scheduler's buffer, the model column the weights) or counts from the log; **log, 2 decimals**: a figure llama.cpp only " +
        "logs in MiB (`(float)bytes / MiB`, %.2f), kvfit's bytes must print the same (one 0.005 MiB rounding per logged figure).");
    out.push(`- **compute**: within ${meta.compute_tolerance * 100} % as in the matrix (exact when Δ is 0). **MTP compute**: kvfit's ` +
        "`detail.spec.compute_rule` says how it is estimated (src/runtimes/llamacpp/spec.cpp): `fitted` (the closed form fitted on the " +
        `dense Qwen3.5 rows, within 8.3 % of each) must be within ${meta.mtp_fitted_tolerance * 100} %; \`target_bound\` (the target's own compute at the MTP ` +
        "context's sizes, for graphs kvfit does not derive: MoE, MLA, windows, FA off) must not be below the measured buffer.");
    out.push("- **checkpoint**: hybrid models save the recurrent part only, whatever was decoded: exact; a sliding-window model saves " +
        "min(tokens, n_swa) cells and kvfit plans the largest (n_swa cells): exact once n_swa tokens are decoded, else an upper bound; " +
        "a plain cache can roll back, llama-server makes no checkpoint: kvfit plans 0 and the measured partial state is the whole sequence.");
    out.push("");
    out.push("| group | what | rows | passed | failed |");
    out.push("|---|---|--:|--:|--:|");
    for (const g of Object.keys(GROUPS)) {
        const gr = rows.filter((x) => x.group === g);
        if (!gr.length && !(meta.groups ?? []).includes(g)) continue;
        out.push(`| ${g} | ${GROUPS[g]} | ${gr.length} | ${gr.filter((x) => x.pass).length} | ${gr.filter((x) => !x.pass).length} |`);
    }
    out.push("");
    let n = 0;
    for (const g of Object.keys(GROUPS)) {
        const gr = rows.filter((x) => x.group === g);
        if (!gr.length) continue;
        const names = [];
        for (const r of gr) for (const k of r.checks) if (!names.includes(k.name)) names.push(k.name);
        const order = ["kvfit", "n_ctx", "n_rs_seq", "kv caches", "kv", "rs", "kv+rs bytes", "n_outputs_max", "output", "compute", "weights",
            "checkpoint", "lora buffer", "lora tensors", "lora device", "committed"];
        names.sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
        out.push(`### ${g}`);
        out.push("");
        out.push(`| # | model | context | settings | ${names.join(" | ")} | result |`);
        out.push(`|--:|---|---|---|${names.map(() => "---").join("|")}|:-:|`);
        const commands = [];
        for (const r of gr) {
            ++n;
            const cells = names.map((nm) => specCell(r.checks.find((k) => k.name === nm)));
            out.push(`| ${n} | ${r.model.replace(/\.gguf$/, "")} | ${r.context} | ${r.settings} | ${cells.join(" | ")} | ${r.pass ? "PASS" : "**FAIL**"} |`);
            if (r.command && !commands.some((c) => c.command === r.command)) commands.push({ n, command: r.command });
        }
        out.push("");
        out.push("Compared as: " + names.map((nm) => {
            const hows = [...new Set(gr.flatMap((r) => r.checks.filter((k) => k.name === nm).map((k) => k.how)))];
            return `**${nm}** ${hows.join(" / ")}`;
        }).join("; ") + ".");
        out.push("");
        out.push("<details><summary>kvfit commands</summary>");
        out.push("");
        for (const c of commands) out.push(`- #${c.n}: \`${c.command}\``);
        out.push("");
        out.push("</details>");
        out.push("");
    }
    if (meta.skipped?.length) {
        out.push("Not compared (llama.cpp does not make the context; the committed file says the same): " +
            meta.skipped.map((s) => `${s.group} ${s.model} (${s.why})`).join("; ") + ".");
        out.push("");
    }
    const failures = rows.filter((x) => !x.pass);
    if (failures.length) {
        out.push("### Failures (llama_probe)");
        out.push("");
        for (const r of failures) {
            const bad = r.checks.filter((k) => !k.pass).map((k) => `${k.name}: predicted ${k.pred}, measured ${k.meas}` +
                `${k.diff != null ? `, Δ ${typeof k.diff === "number" ? +k.diff.toFixed(6) : k.diff}` : ""} (${k.how}${k.note ? `; ${k.note}` : ""})`);
            out.push(`- ${r.group} ${r.model} ${r.context} (${r.settings}) — \`${r.command}\`: ${bad.join("; ")}`);
        }
        out.push("");
    }
    out.push(`llama_probe: ${passed} passed, ${rows.length - passed} failed`);
    out.push("");
    return out;
}

/// The report when only the llama_probe rows ran (no matrix results of this release)
export function renderSpecOnly(spec, release) {
    const out = [`# kvfit accuracy against the real llama.cpp ${spec.meta.release_id}`, "",
        "Written by `tests/conformance/run.sh` (do not edit by hand). Index of the releases: [accuracy.md](accuracy.md).", "",
        `- llama.cpp: release ${release.release} as bundled in node-llama-cpp ${release.node_llama_cpp} (CPU build), build commit ${release.build_commit}`,
        "- the matrix (conformance.mjs) did not run: only the llama_probe rows below", ""];
    out.push(...renderSpecSection(spec));
    out.push(summaryLine(0, 0, spec));
    out.push("");
    return out.join("\n");
}

/// The report when the suite could not run (npm registry unreachable): says so, never passes silently.
export function renderSkipped(reason, date, release = null) {
    return [`# kvfit accuracy against the real llama.cpp${release ? ` ${release}` : ""}`, "", "Written by `tests/conformance/run.sh` (do not edit by hand).", "",
        `**CONFORMANCE SUITE SKIPPED: npm registry unreachable** (${date}): ${reason}.`, "",
        "Nothing was measured: kvfit was not checked against llama.cpp in this run.", "",
        "0 passed, 0 failed (skipped)", ""].join("\n");
}

/// docs/accuracy.md: one line per release with its summary line, read back from docs/accuracy-<release>.md.
/// entries: [{id, node_llama_cpp, release, file, text (the report, or null when missing)}]
export function renderIndex(entries, { date, host, seconds }) {
    const out = ["# kvfit accuracy against the real llama.cpp", "",
        "Written by `tests/conformance/run.sh` (do not edit by hand): the conformance suite (tests/conformance) run against each " +
        "llama.cpp release kvfit models, one report per release.", "",
        `Run ${date} on ${host}, ${seconds.toFixed(0)} s for all releases.`, "",
        "| llama.cpp | node-llama-cpp | report | CPU backend | result |", "|---|---|---|---|---|"];
    for (const e of entries) {
        const summary = e.text ? (e.text.trim().split("\n").pop() ?? "?") : "not run";
        const backend = e.text ? (/^- CPU backend: (\S+)/m.exec(e.text)?.[1] ?? "–") : "–";
        out.push(`| ${e.id}${e.release !== e.id ? ` (release ${e.release})` : ""} | ${e.node_llama_cpp} | [${e.file}](${e.file}) | ${backend} | ${summary} |`);
    }
    out.push("");
    out.push("Each report has two parts: the matrix (node-llama-cpp's addon, `conformance.mjs`) and the section \"Speculative " +
        "decoding, draft models, LoRA, checkpoints (llama_probe)\": a draft model (`-md`), MTP contexts (`--spec-type draft-mtp`), " +
        "case K6, LoRA adapters (`--lora`) and context checkpoints, measured live through the release's own C API " +
        "(`probe/llama_probe`, `spec_conformance.mjs`) and compared with kvfit's command line and with the committed " +
        "`tests/conformance/measured/spec-*.jsonl` that the GoogleTests replay. The result column counts both (matrix + llama_probe).");
    out.push("");
    out.push("The weights of an `alloc` row depend on the host CPU: on a CPU whose libggml-cpu variant has extra buffer types " +
        "that take some of the model's weight types (AMX on Intel Xeon with AMX; CPU_REPACK for q4_0/q4_K/iq4_nl/mxfp4/q2_K), " +
        "llama.cpp copies those weights into the extra buffer while the mmap'd file stays counted (docs/rules/llamacpp-cpu-repack.md). " +
        "The suite passes the host's CPU flags to kvfit (`--cpu-features`, from tests/conformance/cpu.mjs), which places those weights as llama.cpp does.");
    out.push("");
    return out.join("\n");
}

/// Writes docs/accuracy.md from the per-release reports found in docs/ (every release of releases.mjs).
export async function writeIndex(docsDir, { seconds }) {
    const fs = await import("node:fs");
    const path = await import("node:path");
    const os = await import("node:os");
    const { RELEASES } = await import("./releases.mjs");
    const entries = Object.entries(RELEASES).map(([id, r]) => {
        const file = `accuracy-${id}.md`;
        let text = null;
        try { text = fs.readFileSync(path.join(docsDir, file), "utf8"); } catch { /* not run yet */ }
        return { id, node_llama_cpp: r.node_llama_cpp, release: r.release, file, text };
    });
    const host = `${os.cpus()[0]?.model?.trim() ?? "?"}, ${os.cpus().length} cores`;
    fs.writeFileSync(path.join(docsDir, "accuracy.md"), renderIndex(entries, { date: new Date().toISOString().slice(0, 10), host, seconds }));
}
