#!/usr/bin/env python3
"""Compares a graph kvfit's scheduler replay built (KVFIT_SCHED_EXPORT=FILE kvfit ...) with the graph a tracing build of
llama.cpp dumped for the same context (GGML_SCHED_DUMP=FILE, tools/simcuda/sched_dump.inc): leaf by leaf and node by
node (name, op, type, shape, strides, buffer, preset backend, sources by position), then the scheduler's graph copy
(node names and backends). Prints the first differences.

  gdiff.py REAL.jsonl[:GRAPH] KVFIT.jsonl[:GRAPH]
"""
import json, sys


def load(spec):
    path, _, g = spec.partition(":")
    graphs = []
    for line in open(path):
        d = json.loads(line)
        if d["k"] == "sched": graphs.append({"sched": d, "t": {}, "order": None, "copy": None})
        elif d["k"] == "t": graphs[-1]["t"][d["id"]] = d
        elif d["k"] in ("order", "copy"): graphs[-1][d["k"]] = d
    return graphs[int(g or 0)]


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    shown = 0
    for what in ("leafs", "nodes"):
        la, lb = a["order"][what], b["order"][what]
        if len(la) != len(lb): print(f"{what}: {len(la)} real, {len(lb)} kvfit")
        pos = lambda g, lst: {i: k for k, i in enumerate(lst)}
        pa, pb = pos(a, la), pos(b, lb)
        for k, (ia, ib) in enumerate(zip(la, lb)):
            ta, tb = a["t"][ia], b["t"][ib]
            diffs = []
            for f in ("name", "op", "type", "ne", "nb", "flags", "view_offs", "preset"):
                if ta.get(f) != tb.get(f): diffs.append(f"{f} {ta.get(f)} / {tb.get(f)}")
            if (ta.get("buf") or None) != (tb.get("buf") or None): diffs.append(f"buf {ta.get('buf')} / {tb.get('buf')}")
            sa = [a["t"][s]["name"] if s >= 0 else "-" for s in ta["src"]]
            sb = [b["t"][s]["name"] if s >= 0 else "-" for s in tb["src"]]
            if sa != sb: diffs.append(f"src {sa} / {sb}")
            if diffs and shown < 30:
                print(f"{what}[{k}] {ta['name']}: " + "; ".join(diffs)); shown += 1
    ca = [(a["t"][n]["name"], be) for n, be in a["copy"]["nodes"]]
    cb = [tuple(x) for x in b["copy"]["nodes"]]
    k = 0
    while k < min(len(ca), len(cb)) and ca[k] == cb[k]: k += 1
    print(f"copy: {len(ca)} real, {len(cb)} kvfit nodes; first difference at {k}: "
          f"{ca[k] if k < len(ca) else 'end'} / {cb[k] if k < len(cb) else 'end'}")
    if "sizes" in b["sched"]: print("kvfit sizes", b["sched"]["sizes"])


if __name__ == "__main__":
    main()
