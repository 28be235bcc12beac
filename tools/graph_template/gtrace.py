"""One traced context: run llama_probe (build_trace.sh: linked to the allocation-tracing libggml-base), parse the
trace of ggml_gallocr and the context variables from llama.cpp's log.

trace(model, opts, probe) -> {events, vars, compute, graphs, opts}
  events: ('A', id, bytes, name, op, type, ne[4])   an allocation, ids in order
          ('F', id, bytes)                          a free of allocation id
          ('X', id, bytes, type, ne[4])             the tail of allocation id freed beyond a view of that shape
  vars:   the variables templates are written in (canon()), as llama.cpp sized this context
  compute: the compute buffer llama.cpp reported (memory breakdown, bytes)
"""
import json, os, re, subprocess, tempfile

def _right(parts):
    # ... NAME OP TYPE [ne0,ne1,ne2,ne3]
    ne = [int(x) for x in parts[-1].strip("[]").split(",")]
    return parts[-3], parts[-2], ne

CACHE_KEYS = [("non-SWA", "base"), ("SWA", "swa"), ("CSA compressed", "csa"), ("HCA compressed", "hca"),
              ("lightning-indexer", "lid")]

# llama_context's log lines "llama_context: <key> = N" and the variable each binds
CONTEXT_LINES = [("n_outputs_max", "n_outputs_max"), ("n_ubatch", "n_ubatch"), ("n_rs_seq", "n_rs"),
                 ("n_seq_max", "n_seqs"), ("n_ctx_seq", "n_ctx_seq"), ("n_ctx", "n_ctx")]


def parse_vars(log):
    v = {}
    pending = None
    for l in log:
        m = re.search(r"creating (.*?)(?:KV )?cache, size = (\d+) cells", l)
        if m:
            what = m.group(1)
            key = None
            for pat, k in CACHE_KEYS:
                if pat in what:
                    key = k
                    break
            if key is None:
                key = re.sub(r"[^a-z0-9]+", "_", what.lower()).strip("_")
            pending = key
            pass
            continue
        m = re.search(r"llama_kv_cache: size = .*\(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)/(\d+) seqs\)", l)
        if m and pending:
            v["cells_" + pending] = int(m.group(1))
            v["streams_" + pending] = int(m.group(4))
            pending = None
        for key, var in CONTEXT_LINES:
            m = re.search(rf"llama_context: {key}\s+= (\d+)", l)
            if m: v[var] = int(m.group(1))
    if "n_ubatch" in v and "n_ctx" in v:
        # graph_reserve rounds n_tokens up to a multiple of n_seqs (llama-context.cpp, ubatch_reserve)
        nt = min(v["n_ubatch"], v["n_ctx"])
        ns = v.get("n_seqs", 1)
        v["T"] = (nt + ns - 1) // ns * ns
        v["n_out"] = min(nt, v.get("n_outputs_max", nt))
    return canon(v)

def tokens_per_seq(v):
    """T_q: the ubatch's tokens per sequence (llama_ubatch::n_seq_tokens), from canon()'s T and n_seqs"""
    return v["T"] // max(1, v.get("n_seqs", 1))

def canon(v):
    """the variables a template is written in (kvfit binds the same names: graph_replay.cpp)"""
    out = {k: v[k] for k in ("T", "n_out", "n_seqs", "n_ctx_seq", "n_ctx", "n_rs") if k in v}
    out.setdefault("n_rs", 0)
    streams = [v[k] for k in v if k.startswith("streams_")]
    out["n_stream"] = max(streams) if streams else 1
    out["T_s"] = out["T"] // out["n_stream"]
    out["T_q"] = tokens_per_seq(out)
    for k in v:
        if k.startswith("cells_") and k != "cells_base": out[k] = v[k]
    if "n_vocab" in v: out["n_vocab"] = v["n_vocab"]
    return out

def trace(model, opts, probe, model_opts="no_alloc=1 mmap=0"):
    fd, path = tempfile.mkstemp(prefix="gtrace.", suffix=".txt"); os.close(fd)
    os.unlink(path)
    # glibc's malloc.hugetlb=1: llama.cpp clears every context buffer it allocates, and 4 KiB page faults were most of
    # a trace's time (tests/conformance/run.sh); no size in the trace depends on the page size
    tun = os.environ.get("GLIBC_TUNABLES", "")
    env = dict(os.environ, GGML_ALLOC_TRACE=path, GLIBC_TUNABLES=(tun + ":" if tun else "") + "glibc.malloc.hugetlb=1")
    args = [probe, model] + model_opts.split() + ["--ctx"] + [f"{k}={v}" for k, v in opts.items()]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    ctx = None
    for l in out.stdout.splitlines():
        j = json.loads(l)
        if j.get("kind") == "context": ctx = j
    if ctx is None or not ctx.get("ok"):
        raise RuntimeError(f"probe failed: {opts}: {out.stderr[-500:]} {ctx and ctx.get('log', [])[-5:]}")
    compute = sum(b.get("compute", 0) for b in ctx["breakdown"])
    events = []
    live = {}  # offset -> A id
    nA = 0
    graphs = 0
    for line in open(path):
        parts = line.rstrip("\n").split(" ")
        k = parts[0]
        if k == "Z":
            live = {}; events = []; nA = 0
            continue
        if k == "G":
            graphs += 1; continue
        if k == "A":
            off, size = int(parts[3]), int(parts[4])
            name_end = len(parts) - 3
            name = " ".join(parts[5:name_end])
            op, typ, ne = _right(parts)
            events.append(("A", nA, size, name, op, typ, ne))
            live[off] = nA; nA += 1
        elif k == "F":
            off, size = int(parts[3]), int(parts[4])
            ref = live.pop(off)
            events.append(("F", ref, size))
        elif k == "X":
            off, size = int(parts[3]), int(parts[4])
            op, typ, ne = _right(parts)
            # the freed tail starts at `off` inside the block of the node that reused its parent
            owner = max(o for o in live if o < off)
            events.append(("X", live[owner], size, typ, ne))
    os.unlink(path)
    v = parse_vars(ctx["log"])
    return dict(events=events, vars=v, compute=compute, graphs=graphs, opts=opts)

if __name__ == "__main__":
    import sys
    probe = os.environ.get("PROBE", "/work/scratch/probe050/llama_probe")
    t = trace(sys.argv[1], json.loads(sys.argv[2]), probe)
    print(t["vars"], t["compute"], len(t["events"]), t["graphs"])
