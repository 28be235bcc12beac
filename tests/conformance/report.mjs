// docs/accuracy-<release>.md: the header (llama.cpp release, host CPU and CPU backend, date, method), one row per
// case, failures in full, and the summary line "N passed, M failed"; docs/accuracy.md: the index of the releases.
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

export function renderReport(meta, rows) {
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
    out.push(`${passed} passed, ${failed} failed`);
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
