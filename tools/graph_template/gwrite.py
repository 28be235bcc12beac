"""Writes a graph template file (format: src/runtimes/llamacpp/graph_replay.cpp) from fitted groups."""
import re
from fractions import Fraction as Fr

LAYER = re.compile(r"-(\d+)(?: \([^)]*\))*$")

def frac(c):
    c = Fr(c)
    return str(c.numerator) if c.denominator == 1 else f"{c.numerator}/{c.denominator}"

def expr_text(e):
    mode = {"exact": "e", "floor": "f", "ceil": "c"}[e.mode]
    return " ".join([mode, frac(e.d)] + [f"{frac(c)}:{'*'.join(ns)}" for c, ns in e.terms])

def kv_class(tk, tv):
    q = lambda t: t not in ("f16", "f32", "bf16")
    if q(tk) and q(tv): return "quant"
    if q(tk) and tv == "f16": return "quantk"
    if q(tv) and tk == "f16": return "quantv"
    if tk == "f16" and tv == "f16": return "f16"
    return f"{tk}/{tv}"

def segments(tmpl):
    """splits the event list at layer boundaries: a new segment at the first allocation of each new layer"""
    segs, cur, cur_layer, base, nA = [], [], None, 0, 0
    for e in tmpl:
        if e[0] == "A":
            m = LAYER.search(e[1])
            il = int(m.group(1)) if m else None
            if il is not None and il != cur_layer and (cur_layer is None or il > cur_layer):
                if cur: segs.append((base, cur))
                cur, cur_layer, base = [], il, nA
            nA += 1
        cur.append(e)
    if cur: segs.append((base, cur))
    return segs

def write_template(path, meta, variants):
    """variants: list of (fa, kv class, recurrent-state snapshots as written: "0", "3" or "2+", stream layout "1", "N",
    "1u" or None for any, tmpl)"""
    exprs, seg_ids, seg_list, lines_var = {}, {}, [], []
    def eid(e):
        if hasattr(e, "op"):
            t = f"{e.op} {eid(e.a)} {eid(e.b)}"
        else:
            t = expr_text(e)
        if t not in exprs: exprs[t] = len(exprs)
        return exprs[t]
    def tyname(t): return {"type_k": "K", "type_v": "V"}.get(t, t)
    for fa, kv, rs, st, tmpl in variants:
        order = []
        # A indices are global over the graph; refs become relative to the segment's first allocation
        for base, evs in segments(tmpl):
            out = []
            nA = base
            for e in evs:
                if e[0] == "A":
                    out.append(("A", tyname(e[3]), *[eid(d) for d in e[4]]))
                elif e[0] == "F":
                    out.append(("F", e[1] - base))
                else:
                    out.append(("X", e[1] - base, tyname(e[2]), *[eid(d) for d in e[3]]))
            key = tuple(out)
            if key not in seg_ids:
                seg_ids[key] = len(seg_list); seg_list.append(key)
            order.append(seg_ids[key])
        lines_var.append(f"variant fa={1 if fa else 0} kv={kv} rs={rs}" + (f" st={st}" if st else "") + " order " + " ".join(map(str, order)))
    with open(path, "w") as f:
        f.write("kvfit-graph 1\n")
        for k in ("arch", "release", "model", "key"): f.write(f"{k} {meta[k]}\n")
        for c in meta.get("comments", []): f.write(f"# {c}\n")
        for t, i in sorted(exprs.items(), key=lambda x: x[1]): f.write(f"expr {i} {t}\n")
        for i, s in enumerate(seg_list):
            f.write(f"seg {i}\n")
            for ev in s: f.write(" ".join(map(str, ev)) + "\n")
        for l in lines_var: f.write(l + "\n")
