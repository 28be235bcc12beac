#!/usr/bin/env python3
"""Records one model's llama.cpp reserve graph as a template kvfit replays (src/runtimes/llamacpp/graph_replay.cpp).

  tools/graph_template/extract.py --release v0.5.0 --id deepseek-v4-flash [--jobs 2] [--kvfit build/kvfit]

1. the model's shape-exact GGUFs (tests/conformance/generate.mjs: 512-token and real vocabularies);
2. a design of contexts (n_ctx, n_ubatch, outputs, sequences, unified KV, window cache, K/V types, flash attention)
   run through the tracing llama_probe (build_trace.sh), each giving ggml-alloc's allocation sequence;
3. the contexts grouped by graph topology (the sequence of allocations and frees); in each group every tensor
   dimension fitted as an expression of the context variables (gfit.py), and the group replayed through a copy
   of ggml_dyn_tallocr at every traced context: it must give llama.cpp's own compute buffer to the byte;
4. data/graphs/<arch>.<release>.txt written (gwrite.py), keyed by kvfit's graph key of the model; run
   share_releases.py afterwards to keep one copy of a graph the releases share
   (`kvfit MODEL.gguf --json`: detail.compute_graph_key).
Exits 1 when a dimension cannot be fitted or a replay differs from llama.cpp.
"""
import argparse, hashlib, json, os, pickle, re, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gtrace import tokens_per_seq, trace
from gfit import fit_values, load_known
from gwrite import write_template, kv_class

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
TYPES = {"f32": (4, 1), "f16": (2, 1), "bf16": (2, 1), "i32": (4, 1), "i64": (8, 1), "i16": (2, 1), "i8": (1, 1),
         "q8_0": (34, 32), "q4_0": (18, 32), "q4_1": (20, 32), "q5_0": (22, 32), "q5_1": (24, 32), "iq4_nl": (18, 32)}


def nbytes(typ, ne):
    ts, bs = TYPES[typ]
    return ts * ne[0] // bs * ne[1] * ne[2] * ne[3]


# --- the design ---------------------------------------------------------------------------------------------------
# (n_ctx, n_ubatch, outputs): n_ubatch off the powers of two (96, 320, 384, 640) so that roundings show; n_ctx not a
# multiple of 256 (6000) so that padding shows; outputs few (llama-server's n_parallel) and all (libllama's n_batch).
POINTS = [(8192, 4096, 7), (4096, 16, 1), (4096, 64, 7), (4096, 2048, 7), (32768, 96, 7), (8192, 640, 3), (4096, 512, 7), (4096, 256, 7), (4096, 320, 7),
          (4096, 1024, 7), (8192, 512, 7), (32768, 512, 7), (131072, 512, 7), (6000, 512, 7), (4096, 512, 1),
          (4096, 512, 37), (32768, 256, 37), (8192, 1024, 1), (131072, 320, 13), (16384, 384, 5)]
FEW = [(4096, 512, 7), (32768, 256, 37), (8192, 1024, 1), (131072, 320, 13), (16384, 384, 5), (4096, 256, 7),
       (6000, 512, 7)]
TYPE_PAIRS = [("f16", "f16"), ("q8_0", "q8_0"), ("q4_0", "q4_0"), ("q8_0", "f16"), ("f16", "q8_0")]


def design():
    out = []
    for fa in ("on", "off"):
        for tk, tv in TYPE_PAIRS:
            if fa == "off" and tv != "f16":
                continue  # a quantized V cache needs flash attention (llama.cpp refuses)
            for ns, unified in ((1, 0), (3, 0), (4, 0), (3, 1), (4, 1)):
                for outmode in ("few", "all"):
                    for swa_full in (0, 1):
                        for vocab in ("small", "real"):
                            pts = POINTS if (tk, tv) == ("f16", "f16") and ns == 1 and not unified else FEW
                            if swa_full: pts = [p for p in pts if p in ((4096, 512, 7), (32768, 256, 37), (16384, 384, 5))]
                            if unified: pts = [p for p in pts if p in ((4096, 512, 7), (32768, 256, 37), (16384, 384, 5))]
                            if vocab == "real": pts = [p for p in pts if p in ((4096, 512, 7), (32768, 256, 37))]
                            if vocab == "real" and (swa_full or (tk, tv) not in (("f16", "f16"), ("q8_0", "q8_0"))): continue
                            for c, u, o in pts:
                                for rs in ((0, 2, 3) if vocab == "small" and not swa_full and not unified and tk == tv and (c, u, o) in FEW else (0,)):
                                    out.append(dict(vocab=vocab, n_ctx=c, n_ubatch=u, n_batch=max(u, 2048) if outmode == "few" else u,
                                                    n_outputs_max=max(o, ns) if outmode == "few" else 0, n_seq=ns, n_rs_seq=rs,
                                                    kv_unified=unified, fa=fa, type_k=tk, type_v=tv, swa_full=swa_full, threads=1))
    return out


def run_design(models, cases, probe, jobs):
    def one(c):
        c = dict(c)
        vocab = c.pop("vocab")
        path, nv = models[vocab]
        try:
            t = trace(path, c, probe)
        except Exception as e:  # a refused context (e.g. K and V types that differ on a K-only cache)
            return ("refused", c, str(e)[-300:], vocab)
        t["vars"]["n_vocab"] = nv
        t["vocab"] = nv
        return t
    with ThreadPoolExecutor(jobs) as ex:
        res = list(ex.map(one, cases))
    refused = [r for r in res if isinstance(r, tuple)]
    return [r for r in res if not isinstance(r, tuple)], refused


# --- fitting and replay -------------------------------------------------------------------------------------------
def stem(name):
    return re.sub(r"\d+", "#", name)


def signature(t):
    sig = []
    for e in t["events"]:
        if e[0] == "A": sig.append(("A", e[4], stem(e[3])))
        elif e[0] == "F": sig.append(("F", e[1]))
        else: sig.append(("X", e[1]))
    return tuple(sig)


def fit_group(traces, log):
    pts = [t["vars"] for t in traces]
    names = sorted(set.intersection(*[set(p) for p in pts]))
    tmpl, fails, cache = [], 0, {}
    for i, e0 in enumerate(traces[0]["events"]):
        if e0[0] == "F":
            tmpl.append(("F", e0[1]))
            continue
        ti, ni = (5, 6) if e0[0] == "A" else (3, 4)
        typs = [t["events"][i][ti] for t in traces]
        nes = [t["events"][i][ni] for t in traces]
        ty = typs[0] if len(set(typs)) == 1 else None
        for cand in ("type_k", "type_v"):
            if ty is None and all(t["opts"].get(cand, "f16") == x for t, x in zip(traces, typs)): ty = cand
        if ty is None:
            log(f"  type not fitted: event {i} {e0[:4]} {sorted(set(typs))}")
            fails += 1
            ty = typs[0]
        dims = []
        for d in range(4):
            ys = tuple(ne[d] for ne in nes)
            if ys not in cache:
                cache[ys] = fit_values(pts, ys, names)
            if cache[ys] is None:
                fails += 1
                log(f"  dimension not fitted: event {i} {e0[3] if e0[0] == 'A' else 'X'} dim {d}: {ys[:16]}")
            dims.append(cache[ys])
        tmpl.append(("A", e0[3], e0[4], ty, dims) if e0[0] == "A" else ("X", e0[1], ty, dims))
    return tmpl, fails


class Alloc:
    """ggml_dyn_tallocr of ggml-alloc.c: CPU alignment 32, one chunk with an endless last block"""
    def __init__(s): s.blocks = [[0, 1 << 62]]; s.max = 0
    @staticmethod
    def al(x): return (x + 31) // 32 * 32
    def alloc(s, size):
        size = s.al(size); best, bsz = -1, None
        for i in range(len(s.blocks) - 1):
            b = s.blocks[i]
            if b[1] >= size and (bsz is None or b[1] <= bsz): best, bsz = i, b[1]
        if best == -1: best = len(s.blocks) - 1
        b = s.blocks[best]; off = b[0]; b[0] += size; b[1] -= size
        if b[1] == 0: del s.blocks[best]
        s.max = max(s.max, off + size)
        return off
    def free(s, off, size):
        size = s.al(size)
        for i, b in enumerate(s.blocks):
            if b[0] + b[1] == off:
                b[1] += size
                if i < len(s.blocks) - 1 and b[0] + b[1] == s.blocks[i + 1][0]:
                    b[1] += s.blocks[i + 1][1]; del s.blocks[i + 1]
                return
            if off + size == b[0]:
                b[0] = off; b[1] += size
                if i > 0 and s.blocks[i - 1][0] + s.blocks[i - 1][1] == b[0]:
                    s.blocks[i - 1][1] += b[1]; del s.blocks[i]
                return
        j = 0
        while j < len(s.blocks) and s.blocks[j][0] < off: j += 1
        s.blocks.insert(j, [off, size])


def replay(tmpl, v, opts):
    a = Alloc(); offs, sizes = [], []
    def ty(t): return opts.get(t, "f16") if t in ("type_k", "type_v") else t
    for e in tmpl:
        if e[0] == "A":
            sz = nbytes(ty(e[3]), [int(d.eval(v)) for d in e[4]])
            offs.append(a.alloc(sz)); sizes.append(sz)
        elif e[0] == "F":
            a.free(offs[e[1]], sizes[e[1]])
        else:
            node = nbytes(ty(e[2]), [int(d.eval(v)) for d in e[3]])
            extra = Alloc.al(sizes[e[1]]) - Alloc.al(node)
            if extra > 0:
                a.free(offs[e[1]] + Alloc.al(node), extra); sizes[e[1]] = node
    return a.max


def stream_key(v):
    """The stream layout of a traced context as a template's st= names it: "1" one sequence, "N" N streams (one per
    sequence), "1u" one unified stream over several sequences."""
    return str(v["n_stream"]) if v["n_stream"] > 1 else ("1u" if v["n_seqs"] > 1 else "1")


def variant_lines(claimed, fitted):
    """The template's variants from {(fa, kv class, snapshot count, stream layout): group}. Snapshots: rs=0 and, per
    (fa, kv class), one line rs=N+ when every recorded count N, N', ... > 0 gave the same graphs (DeepSeek-V4: the
    snapshots change sizes, not the graph), else one line rs=N per recorded count (Qwen3.8-Flash-Next: one state copy
    per snapshot). Streams: no st= where every stream layout gave one graph, else one line per recorded layout st=1,
    st=N, st=1u (MiniMax-M3's MSA with flash attention loops over the streams)."""
    out = []
    for fa, kv in sorted({(k[0], k[1]) for k in claimed}, key=lambda x: (not x[0], x[1])):
        by_rs = {}
        for (f, c, n, st), gi in claimed.items():
            if (f, c) == (fa, kv): by_rs.setdefault(n, {})[st] = gi
        def lines(rs_text, stmap):
            if len(set(stmap.values())) == 1:
                return [(fa, kv, rs_text, None, fitted[next(iter(stmap.values()))])]
            return [(fa, kv, rs_text, st, fitted[gi]) for st, gi in sorted(stmap.items())]
        if 0 in by_rs: out += lines("0", by_rs[0])
        snaps = sorted(n for n in by_rs if n > 0)
        if len(snaps) > 1 and all(by_rs[n] == by_rs[snaps[0]] for n in snaps):
            out += lines(f"{snaps[0]}+", by_rs[snaps[0]])
        else:
            for n in snaps: out += lines(str(n), by_rs[n])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--release", required=True, choices=["v0.5.0", "5b4ebc5"])
    ap.add_argument("--id", required=True, help="a model id of the conformance suite (tests/conformance/suite.mjs)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--kvfit", default=os.path.join(ROOT, "build/kvfit"))
    ap.add_argument("--out", default=None, help="default data/graphs/<arch>.<release>.txt")
    ap.add_argument("--cache", default=None, help="pickle of the traces (reused when present)")
    ap.add_argument("--known", default=None, help="a template whose expressions are tried before the wide searches "
                    "(default: the other release's template of the model, when written)")
    a = ap.parse_args()
    log = lambda m: print(m, flush=True)
    work = os.path.join(ROOT, "build/graph_trace", a.release)
    probe = os.path.join(work, "llama_probe")
    if not os.path.exists(probe):
        sys.exit(f"extract: {probe} missing: run tools/graph_template/build_trace.sh {a.release}")
    models_dir = os.path.join(ROOT, "build/graph_trace/models")
    subprocess.run(["node", os.path.join(ROOT, "tests/conformance/generate.mjs"), models_dir, "--vocab", "both", a.id],
                   check=True, stdout=subprocess.DEVNULL)
    files = sorted(f for f in os.listdir(models_dir) if f.startswith(a.id + "_v") and f.endswith(".gguf"))
    by_vocab = sorted((int(re.search(r"_v(\d+)\.gguf$", f).group(1)), os.path.join(models_dir, f)) for f in files)
    models = {"small": (by_vocab[0][1], by_vocab[0][0]), "real": (by_vocab[-1][1], by_vocab[-1][0])}
    kv = json.loads(subprocess.run([a.kvfit, models["small"][0], "--json", "--llamacpp-version", a.release],
                                   check=True, capture_output=True, text=True).stdout)
    key, arch = kv["detail"]["compute_graph_key"], kv["model"]["architecture"]
    kv_real = json.loads(subprocess.run([a.kvfit, models["real"][0], "--json", "--llamacpp-version", a.release],
                                        check=True, capture_output=True, text=True).stdout)
    if kv_real["detail"]["compute_graph_key"] != key:
        sys.exit("extract: the two vocabularies give different graph keys (n_vocab must not enter the key)")
    other = {"v0.5.0": "5b4ebc5", "5b4ebc5": "v0.5.0"}[a.release]
    # the other release's file, or the file the releases share (share_releases.py)
    known = a.known or next((p for p in (os.path.join(ROOT, "data/graphs", f"{arch}.{other}.txt"),
                                         os.path.join(ROOT, "data/graphs", f"{arch}.txt")) if os.path.exists(p)), "")
    if os.path.exists(known):
        log(f"{load_known(known)} expressions of {known} tried before the wide searches")
    cases = design()
    cache = a.cache or os.path.join(work, f"traces_{a.id}.pkl")
    t0 = time.time()
    # the cache holds what was traced before; contexts the design gained since are traced and added
    traces, refused = pickle.load(open(cache, "rb")) if os.path.exists(cache) else ([], [])
    for t in traces:  # variables added since the cache was written
        t["vars"].setdefault("T_q", tokens_per_seq(t["vars"]))
    refused = [r for r in refused if len(r) > 3]  # older caches kept no vocabulary with a refusal: asked again
    vocab_name = {models["small"][1]: "small", models["real"][1]: "real"}
    case_id = lambda c: json.dumps(sorted(c.items()))
    done = {case_id(dict(t["opts"], vocab=vocab_name[t["vocab"]])) for t in traces}
    done |= {case_id(dict(r[1], vocab=r[3])) for r in refused if len(r) > 3}
    todo = [c for c in cases if case_id(c) not in done]
    if todo and (traces or refused):
        log(f"{len(todo)} contexts not in {cache}: tracing them")
    if todo:
        t_new, r_new = run_design(models, todo, probe, a.jobs)
        traces, refused = traces + t_new, refused + r_new
        pickle.dump((traces, refused), open(cache, "wb"))
    log(f"{a.id} {a.release}: {len(traces)} contexts traced, {len(refused)} refused by llama.cpp ({time.time() - t0:.0f} s)")
    for r in {x[2].split("probe failed: ")[-1][-160:] for x in refused}:
        log(f"  refused: {r}")
    groups = {}
    for t in traces: groups.setdefault(signature(t), []).append(t)
    bad = 0
    claimed = {}  # (fa, kv class, snapshot count) -> group
    fitted = []
    for gi, g in enumerate(groups.values()):
        t1 = time.time()
        tmpl, fails = fit_group(g, log)
        mism = 0
        if not fails:
            for t in g:
                r = replay(tmpl, t["vars"], t["opts"])
                if r != t["compute"]:
                    mism += 1
                    if mism <= 3: log(f"  replay {r} != llama.cpp {t['compute']}: {t['opts']}")
        keys = sorted({(t["opts"]["fa"] == "on", kv_class(t["opts"]["type_k"], t["opts"]["type_v"]), t["vars"]["n_rs"],
                        stream_key(t["vars"])) for t in g})
        log(f"group {gi}: {len(g)} contexts, {len(tmpl)} events, variants {keys}: fit failures {fails}, replay mismatches {mism} ({time.time() - t1:.0f} s)")
        bad += fails + mism
        for k in keys:
            if k in claimed:
                log(f"  variant {k} has two topologies (groups {claimed[k]} and {gi}): a setting not in the variant key changes the graph")
                bad += 1
            claimed[k] = gi
        fitted.append(tmpl)
    variants = variant_lines(claimed, fitted)
    if bad:
        sys.exit(1)
    out = a.out or os.path.join(ROOT, "data/graphs", f"{arch}.{a.release}.txt")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    meta = {"arch": arch, "release": a.release, "model": f"{kv['model']['name']} ({a.id}, conformance builder)", "key": key,
            "comments": [f"recorded by tools/graph_template/extract.py from {len(traces)} contexts of llama.cpp {a.release} "
                         f"(CPU build, node-llama-cpp), each replayed to llama.cpp's own compute buffer, byte-exact"]}
    write_template(out, meta, variants)
    log(f"wrote {out} ({os.path.getsize(out)} bytes)")


if __name__ == "__main__":
    main()
