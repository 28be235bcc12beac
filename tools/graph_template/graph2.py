#!/usr/bin/env python3
"""Records a family's llama.cpp reserve graph as one template, parametric in the context and in the model's dimensions,
that kvfit instantiates for any model of the family and runs through its replay of llama.cpp's scheduler and
allocator (format 2: src/runtimes/llamacpp/graph_replay.cpp; src/runtimes/llamacpp/compute_sched.cpp).

  tools/graph_template/graph2.py --release v0.5.0 --out data/graphs/llama.v0.5.0.txt \\
        --shape build/shapes/v0.5.0/llama31-8b_v512.gguf --vocab-model build/shapes/v0.5.0/llama31-8b_v128256.gguf \\
        --shape build/shapes/v0.5.0/llama-s1_v512.gguf --shape ... [--check-shape held-out.gguf ...]

1. A design of contexts (n_ctx, n_ubatch down to 1 token, outputs, sequences, unified KV, K/V types, flash attention)
   on the first shape, a few contexts of every variant on the real-vocabulary file and on every other shape, each run
   through the tracing llama_probe (build_trace.sh) with GGML_SCHED_DUMP: the graph exactly as llama.cpp's scheduler
   receives it (sched_dump.inc). The graph does not depend on the backends, so the CPU build records it.
2. Contexts grouped into variants (flash attention, K/V class, stream layout); within a variant every tensor goes to the
   global segment or its layer's (blk.N., -N, _lN names; unnamed tensors follow their first user). A layer's topology
   (ops, names, sources, views, flags) is its segment kind; each layer's signature (kvfit-graph-dims: its caches, FFN,
   the layer before it, last or not) must name one kind, on every shape. A count that changes a layer's topology is in
   its signature and constant across the shapes of a kind (SIG_DIMS: MoE layers' n_expert_used, "m8", "m4").
3. Every shape, stride, view offset and op parameter of a kind fitted over all its instances: first over the context
   variables on the first shape (gfit.py), then each coefficient over the model's dimensions (global n_embd, n_expert,
   ...; the layer's own l_n_head, l_head_dim_k, ...) from the other shapes: a constant, r x a product of up to three
   dimensions, or a sum of two such. A dimension the family uses must vary across the shapes (else exit 1: it would be
   fitted as a constant), but for the dimensions the layer signature carries (SIG_DIMS: the experts used, m4), which a
   template holds at the recorded values only. Op parameters that do not fit keep the first shape's value (they size
   nothing).
4. The graph's build order as the roots llama.cpp expanded (ggml_build_forward_expand): kvfit rebuilds the node and
   leaf order by ggml_visit_parents' walk. Pattern: global roots, each layer's roots by its kind, global roots.
5. Checked: kvfit instantiates the template at recorded and held-out (--check-shape) contexts (KVFIT_SCHED_EXPORT) and
   every tensor must equal the dump's (gdiff.py). Exit 1 when a field cannot be fitted or a check differs.
"""
import argparse, itertools, json, math, os, re, subprocess, sys, tempfile
from fractions import Fraction as Fr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gtrace import parse_vars
from gfit import fit_values, Expr, MinMax, getv
import gfit
from gwrite import expr_text, kv_class

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
TYPES = {"f32": (4, 1), "f16": (2, 1), "bf16": (2, 1), "i32": (4, 1), "i64": (8, 1), "i16": (2, 1), "i8": (1, 1),
         "q8_0": (34, 32), "q4_0": (18, 32), "q4_1": (20, 32), "q5_0": (22, 32), "q5_1": (24, 32), "iq4_nl": (18, 32),
         "mxfp4": (17, 32), "q2_K": (84, 256), "q3_K": (110, 256), "q4_K": (144, 256), "q5_K": (176, 256),
         "q6_K": (210, 256), "q8_K": (292, 256), "iq2_xxs": (66, 256), "iq2_xs": (74, 256), "iq2_s": (82, 256),
         "iq3_xxs": (98, 256), "iq3_s": (110, 256), "iq4_xs": (136, 256), "iq1_s": (50, 256), "iq1_m": (56, 256)}
CTX_NAMES = ["T", "n_out", "n_seqs", "n_stream", "T_s", "n_vocab", "n_ctx_seq", "n_ctx", "n_rs", "T_q"]

# --- design -------------------------------------------------------------------------------------------------------
# (n_ctx, n_ubatch, outputs): one token (the token-generation graph llama.cpp reserves too), n_ubatch off the powers of
# two, n_ctx off multiples of 256, outputs few (llama-server's n_parallel) and all (libllama's n_batch)
POINTS = [(4096, 512, 7), (8192, 1024, 1), (32768, 256, 37), (6000, 320, 13), (16384, 96, 5), (4096, 1, 1), (4096, 3, 3),
          (8192, 16, 16), (131072, 640, 3), (4096, 2048, 2048)]
FEW = [(4096, 512, 7), (32768, 256, 37), (6000, 320, 13), (4096, 1, 1), (16384, 96, 5), (8192, 16, 16)]
TYPE_PAIRS = [("f16", "f16"), ("q8_0", "q8_0"), ("q4_0", "q4_0"), ("q8_0", "f16"), ("q4_0", "f16"), ("f16", "q8_0"),
              ("f16", "q4_0")]


def design(quick=False, extra=()):
    """the contexts of the first shape; `extra` (--extra-points) adds (n_ctx, n_ubatch, outputs) points after the rest,
    so a sibling's first --per-shape contexts of a variant stay the common ones"""
    out = []
    for fa in ("on", "off"):
        for tk, tv in TYPE_PAIRS:
            if fa == "off" and tv != "f16":
                continue  # a quantized V cache needs flash attention (llama.cpp refuses)
            for ns, unified in ((1, 0), (3, 0), (4, 0), (3, 1), (4, 1)):
                if quick and ns == 4: continue
                pts = (POINTS if (tk, tv) == ("f16", "f16") and ns == 1 else FEW) + list(extra)
                if (tk, tv) not in (("f16", "f16"), ("q8_0", "q8_0"), ("q4_0", "q4_0")) and ns != 1: continue
                # the token-generation graph llama.cpp also reserves: one token per sequence
                if ns > 1: pts = pts + [(4096, ns, ns)]
                for c, u, o in pts:
                    if u < ns: continue
                    out.append(dict(n_ctx=c, n_ubatch=u, n_batch=max(u, 2048) if o < u else u,
                                    n_outputs_max=max(o, ns) if o < u else 0, n_seq=ns, kv_unified=unified, fa=fa,
                                    type_k=tk, type_v=tv, threads=1))
    return out


def quant(t): return t not in ("f16", "f32", "bf16")


def variant_key(o, shape=None):
    """(flash attention, K/V class, stream layout, rotation): a quantized K (V) cache of heads a multiple of 64 wide is
    Hadamard-rotated, which adds tensors (kvfit-graph-dims rot_k / rot_v)"""
    st = "1" if o["n_seq"] == 1 else ("1u" if o["kv_unified"] else "N")
    rot = ""
    if shape is not None:
        rot = ("k" if quant(o["type_k"]) and shape["rot_k"] else "") + ("v" if quant(o["type_v"]) and shape["rot_v"] else "")
    return (o["fa"] == "on", kv_class(o["type_k"], o["type_v"]), st, rot or "-")


def per_variant(cases, n, shape=None, full=()):
    """the first n contexts of each variant (every context of the variants in `full`)"""
    seen, out = {}, []
    for c in cases:
        k = variant_key(c, shape)
        if k in full:
            out.append(c)
            continue
        if seen.get(k, 0) < n:
            seen[k] = seen.get(k, 0) + 1
            out.append(c)
    return out


# --- one dump -------------------------------------------------------------------------------------------------------
def dump(model, opts, probe, n_vocab):
    # GRAPH2_CACHE=DIR: keep each dump (re-fits without re-running llama.cpp; the file's size and time are in the key)
    cache = os.environ.get("GRAPH2_CACHE")
    if cache:
        import hashlib, pickle
        st = os.stat(model)
        h = hashlib.sha1(json.dumps([os.path.abspath(model), st.st_size, st.st_mtime, opts, probe, n_vocab], sort_keys=True).encode()).hexdigest()
        cp = os.path.join(cache, h + ".pickle")
        if os.path.exists(cp):
            with open(cp, "rb") as f: d = pickle.load(f)
            if "refused" in d: raise RuntimeError(d["refused"])
            return d
        os.makedirs(cache, exist_ok=True)
        try:
            d = dump_live(model, opts, probe, n_vocab)
        except RuntimeError as e:  # a context llama.cpp refuses: kept too, it is refused again on every run
            d = {"refused": str(e)}
        # written aside and renamed: a run stopped while writing leaves no truncated entry
        with open(cp + ".tmp", "wb") as f: pickle.dump(d, f)
        os.replace(cp + ".tmp", cp)
        if "refused" in d: raise RuntimeError(d["refused"])
        return d
    return dump_live(model, opts, probe, n_vocab)


def dump_live(model, opts, probe, n_vocab):
    fd, path = tempfile.mkstemp(prefix="gdump.", suffix=".jsonl"); os.close(fd); os.unlink(path)
    tun = os.environ.get("GLIBC_TUNABLES", "")
    env = dict(os.environ, GGML_SCHED_DUMP=path, GLIBC_TUNABLES=(tun + ":" if tun else "") + "glibc.malloc.hugetlb=1")
    env.pop("GGML_BACKEND_PATH", None)
    args = [probe, model, "no_alloc=1", "mmap=0", "--ctx"] + [f"{k}={v}" for k, v in opts.items()]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900)
    ctx = None
    for l in out.stdout.splitlines():
        j = json.loads(l)
        if j.get("kind") == "context": ctx = j
    if ctx is None or not ctx.get("ok"):
        if os.path.exists(path): os.unlink(path)
        raise RuntimeError(f"refused: {opts}")
    graphs, cur = [], None
    for line in open(path):
        d = json.loads(line)
        if d["k"] == "sched": cur = {"t": [], "order": None}; graphs.append(cur)
        elif d["k"] == "t" and d["leaf"] != 3: cur["t"].append(d)
        elif d["k"] == "order": cur["order"] = d
    os.unlink(path)
    g = graphs[-1]
    # tensors by position; sources, views and the order as positions
    pos = {t["id"]: i for i, t in enumerate(g["t"])}
    for t in g["t"]:
        t["src"] = [pos[s] if s >= 0 else -1 for s in t["src"]]
        t["view_src"] = pos[t["view_src"]] if t["view_src"] >= 0 else -1
    g["order"] = {"leafs": [pos[i] for i in g["order"]["leafs"]], "nodes": [pos[i] for i in g["order"]["nodes"]]}
    v = parse_vars(ctx["log"])
    v["n_vocab"] = n_vocab
    return {"opts": opts, "vars": v, "graph": g}


def shape_info(model):
    # KVFIT_GRAPH_DIMS: another build's kvfit-graph-dims (as KVFIT_GGUF_WRITE for the conformance writers)
    tool = os.environ.get("KVFIT_GRAPH_DIMS") or os.path.join(ROOT, "build/tools/kvfit-graph-dims")
    out = subprocess.run([tool, model], capture_output=True, text=True)
    if out.returncode != 0: raise SystemExit(f"kvfit-graph-dims {model}: {out.stderr.strip()}")
    return json.loads(out.stdout)


# --- segments -------------------------------------------------------------------------------------------------------
LAYER_RES = [re.compile(r"^blk\.(\d+)\."), re.compile(r"-(\d+)(?: \([^)]*\))*$"), re.compile(r"_l(\d+)(?: \([^)]*\))*$")]


def name_layer(name):
    for r in LAYER_RES:
        m = r.search(name)
        if m: return int(m.group(1))
    return None


def canon_name(name, il):
    # ggml names unnamed tensors by their position (node_N, leaf_N): not part of the template
    name = re.sub(r"^(node|leaf)_\d+", r"\1_#", name)
    if il is None: return name
    s = re.sub(rf"^blk\.{il}\.", "blk.{L}.", name)
    s = re.sub(rf"-{il}((?: \([^)]*\))*)$", r"-{L}\1", s)
    s = re.sub(rf"_l{il}((?: \([^)]*\))*)$", r"_l{L}\1", s)
    # a later layer's number on a tensor of this one (glm-dsa's shared top-k, named by the last layer that reads it:
    # layers_of): "{L+k}", which kvfit's replay writes back (graph_replay.cpp)
    s = re.sub(r"-(\d+)((?: \([^)]*\))*)$", lambda m: f"-{{L+{int(m.group(1)) - il}}}{m.group(2)}" if int(m.group(1)) > il else m.group(0), s)
    # the layer's number inside a copy's or view's suffix ("conv_state_update-3 (copy of conv_state_last-3)")
    s = re.sub(rf"(\((?:copy of|view of|reshaped|permuted|transposed|cont) [^)]*?)-{il}\)", r"\1-{L})", s)
    return s


def layers_of(ts):
    """tensor index -> layer (None: global). Unnamed tensors take their first user's layer."""
    n = len(ts)
    lay = [name_layer(t["name"]) for t in ts]
    # a node named again by a later layer belongs where it was computed: glm-dsa's layers that share an earlier
    # layer's indexer call cb(top_k, "top_k", il) on that layer's top-k (src/models/glm-dsa.cpp, the
    # is_indexer_full(il) else-branch), so the tensor ends up named for the last layer of the run ("top_k-5" computed
    # in layer 2). Such a node precedes nodes of an earlier layer in graph order; it takes the layer of the first
    # source up its src[0] chain that carries an earlier layer's name.
    first_below = [None] * n
    last = {}
    for i, t in enumerate(ts):
        if t["leaf"] == 0 and lay[i] is not None: last[lay[i]] = i
    for i, t in enumerate(ts):
        L = lay[i]
        if t["leaf"] != 0 or L is None: continue
        if not any(l < L and p > i for l, p in last.items()): continue
        j, seen = i, set()
        while j >= 0 and j not in seen:
            seen.add(j)
            if j != i and lay[j] is not None and lay[j] < L: break
            j = ts[j]["src"][0] if ts[j]["src"] else -1
        if j >= 0 and lay[j] is not None and lay[j] < L: first_below[i] = lay[j]
    for i, l in enumerate(first_below):
        if l is not None: lay[i] = l
    users = [[] for _ in range(n)]
    for i, t in enumerate(ts):
        for s in t["src"]:
            if s >= 0: users[s].append(i)
        if t["view_src"] >= 0: users[t["view_src"]].append(i)
    # a name without a layer number that several tensors carry is no name either: llama.cpp's build_norm called with
    # il = -1 inside a layer names its output "norm" in every layer (models/gemma4.cpp ffn_post_norm); an op, not an
    # input (an iSWA model's two caches both name their inputs attn_inp_k_idxs, ...: the graph's)
    count = {}
    for t in ts:
        count[t["name"]] = count.get(t["name"], 0) + 1

    def unnamed(i):
        # a graph input (GGML_TENSOR_FLAG_INPUT) is the graph's even unnamed (5b4ebc5's iSWA cache inputs: a cache of
        # one layer has its inputs read by that layer alone)
        if ts[i]["leaf"] == 1 and ts[i]["flags"] & 1: return False
        base = re.sub(r"(?: \([^)]*\))+$", "", ts[i]["name"])
        return re.match(r"^(node|leaf)_\d+$", base) is not None or base == "" or \
            (count[ts[i]["name"]] > 1 and role(ts[i]) == "-" and ts[i]["leaf"] == 0)

    # an unnamed tensor read by several layers (a position view the first layer made, 5b4ebc5's rope inputs) is the
    # graph's, not its first user's layer's: global
    shared = [False] * n
    changed = True
    while changed:
        changed = False
        for i in range(n):
            if lay[i] is not None or shared[i] or not unnamed(i): continue
            ls = {lay[u] for u in users[i] if lay[u] is not None}
            if len(ls) > 1 or any(shared[u] for u in users[i]):
                shared[i] = True; changed = True
            elif ls and all(lay[u] is not None for u in users[i]):
                lay[i] = ls.pop(); changed = True
        if not changed:
            # users still unassigned: take the first assigned user's layer (the old rule) for the rest
            for i in range(n):
                if lay[i] is not None or shared[i] or not unnamed(i): continue
                for u in users[i]:
                    if lay[u] is not None:
                        lay[i] = lay[u]; changed = True; break
    return lay


def role(t):
    if t["buf"] is None: return "-"
    return "w" if t["usage"] == 1 else "k"


class Trace:
    """one dumped graph, cut into segments"""

    def __init__(self, d, shape):
        self.opts, self.ctx, self.shape = d["opts"], d["vars"], shape
        self.t = d["graph"]["t"]
        self.order = d["graph"]["order"]
        lay = layers_of(self.t)
        self.seg = ["g" if l is None else l for l in lay]
        self.members, self.local = {}, {}
        for i, s in enumerate(self.seg):
            self.members.setdefault(s, []).append(i)
            self.local[i] = len(self.members[s]) - 1
        self.layers = sorted(k for k in self.members if k != "g")
        self.n_layers = len(self.layers)
        if self.layers != list(range(self.n_layers)):
            raise RuntimeError(f"layer segments {self.layers[:5]}... are not 0..{self.n_layers - 1}")

    def ref(self, i, j):
        """tensor j as written in tensor i's line"""
        if j < 0: return "-"
        s, si = self.seg[j], self.seg[i]
        if s == "g": return f"g{self.local[j]}"
        if si != "g" and s == si: return f"s{self.local[j]}"
        if si != "g": return f"r{s - si}:{self.local[j]}"
        # the global segment naming a layer's tensor: from the end for the last layers (the output reads the last),
        # the tensor counted from its segment's end too ("L-1:-1": the last layer's last tensor, l_out), which a last
        # layer of another kind has at another index (gemma4 without flash attention: a padded V is one tensor more)
        if s >= self.n_layers - 4: return f"L{s - self.n_layers}:-{len(self.members[s]) - self.local[j]}"
        return f"L{s}:{self.local[j]}"

    def topo(self, i):
        t = self.t[i]
        w = role(t) == "w" and t["view_src"] < 0
        return (t["leaf"], t["op"], canon_name(t["name"], None if self.seg[i] == "g" else self.seg[i]), t["flags"],
                self.ref(i, t["view_src"]), tuple(self.ref(i, s) for s in t["src"]), role(t), w)

    def vars_at(self, il):
        v = dict(self.ctx)
        v.update(self.shape["dims"])
        if il is not None and il != "g":
            v.update(self.shape["layers"][il]["dims"])
        return v


# --- fitting --------------------------------------------------------------------------------------------------------
def solve_exact(rows, ys):
    """exact rational least solution of rows . x = ys (consistent, full column rank); None otherwise"""
    k = len(rows[0]) if rows else 0
    A = [[Fr(x) for x in r] + [Fr(y)] for r, y in zip(rows, ys)]
    piv, r = [], 0
    for c in range(k):
        p = next((i for i in range(r, len(A)) if A[i][c] != 0), None)
        if p is None: return None  # rank deficient
        A[r], A[p] = A[p], A[r]
        inv = 1 / A[r][c]
        A[r] = [x * inv for x in A[r]]
        for i in range(len(A)):
            if i != r and A[i][c] != 0:
                f = A[i][c]
                A[i] = [a - f * b for a, b in zip(A[i], A[r])]
        piv.append(c); r += 1
    for i in range(r, len(A)):
        if A[i][k] != 0: return None  # inconsistent
    return [A[i][k] for i in range(k)]


def mode_ok(x, mode):
    if mode == "exact": return x.denominator == 1
    return True


def apply_mode(x, mode):
    if mode == "exact": return x if x.denominator == 1 else None
    return Fr(math.floor(x)) if mode == "floor" else Fr(math.ceil(x))


def mon_value(v, mon):
    return math.prod(getv(v, n) for n in mon)


class DimFitter:
    """coefficient(dims) as a constant, r * a product of up to three dimensions, or a sum of two such"""

    def __init__(self, dim_points):
        # dim_points: one dict per group (the model's and the layer's dimensions)
        self.points = dim_points
        names = sorted(set.intersection(*[set(p) for p in dim_points])) if dim_points else []
        names = [n for n in names if len({p[n] for p in dim_points}) > 1 and all(p[n] > 0 for p in dim_points)]
        # preference when two fit: the layer's own dimensions, then the model's, then a cache kind's first layer's
        rank = lambda n: (0 if n.startswith("l_") else 2 if re.match(r"^[A-Z]_", n) else 1, n)
        self.names = sorted(names, key=rank)
        mons = [(n,) for n in self.names]
        mons += [tuple(x) for x in itertools.combinations_with_replacement(self.names, 2)]
        mons += [tuple(x) for x in itertools.combinations_with_replacement(self.names, 3)]
        self.mons = mons
        self.vals = [[math.prod(p[n] for n in m) for p in dim_points] for m in mons]
        self.memo = {}

    def fit(self, cs):
        """cs: one coefficient per group -> [(r, mon)] (mon () for the constant) or None"""
        key = tuple(cs)
        if key in self.memo: return self.memo[key]
        self.memo[key] = r = self._fit(cs)
        return r

    def _fit(self, cs):
        if all(c == cs[0] for c in cs): return [(cs[0], ())] if cs[0] != 0 else []
        if len(cs) < 2: return None
        # r * mon: a monomial as it is first (r = 1), then an integer r (a width is a product of counts), then a
        # fraction. r = 1 first: where the recorded shapes tie two dimensions (deepseek4's were all recorded with the
        # indexer's top-k at 4 windows: 512 = 4 x 128), the dimension itself is the rule llama.cpp applies
        # (deepseek4.cpp:672 v0.5.0, build_lid_top_k: min(indexer_top_k, the scored cells)), not a multiple of another that happens to agree
        for integral in ("one", True, False):
            for m, vals in zip(self.mons, self.vals):
                if vals[0] == 0: continue
                r = Fr(cs[0]) / vals[0]
                if integral == "one" and r != 1: continue
                if integral is True and r.denominator != 1: continue
                if all(r * v == c for v, c in zip(vals, cs)): return [(r, m)]
        # r * mon + d: solved from two groups where the monomial differs (not only the first two: the first shapes may
        # share a value, Qwen3.5's d_conv 4 beside one shape's 3)
        for m, vals in zip(self.mons, self.vals):
            if len(cs) < 3: continue
            j = next((j for j in range(1, len(vals)) if vals[j] != vals[0]), None)
            if j is None: continue
            r = Fr(cs[j] - cs[0]) / (vals[j] - vals[0]); d = cs[0] - r * vals[0]
            if all(r * v + d == c for v, c in zip(vals, cs)): return [(r, m), (d, ())]
        # r1 * mon1 + r2 * mon2 (degree <= 2 each)
        if len(cs) >= 3:
            small = [(m, v) for m, v in zip(self.mons, self.vals) if len(m) <= 2]
            for (m1, v1), (m2, v2) in itertools.combinations(small, 2):
                # two groups whose values make the system solvable (the first pair may be singular)
                ij = next(((i, j) for i in range(len(cs)) for j in range(i + 1, len(cs))
                           if v1[i] * v2[j] - v1[j] * v2[i] != 0), None)
                if ij is None: continue
                i, j = ij
                det = v1[i] * v2[j] - v1[j] * v2[i]
                r1 = Fr(cs[i] * v2[j] - cs[j] * v2[i], det)
                r2 = Fr(v1[i] * cs[j] - v1[j] * cs[i], det)
                if r1 == 0 or r2 == 0: continue
                if all(r1 * a + r2 * b == c for a, b, c in zip(v1, v2, cs)): return [(r1, m1), (r2, m2)]
        return None


class SlotFitter:
    """one field of one tensor position over all its instances: context structure from the first shape, coefficients
    over the model's dimensions"""

    def __init__(self, dim_names):
        self.dim_names = set(dim_names)
        self.ctx_memo = {}
        self.dfit_memo = {}

    def dfitter(self, dkeys, dpoints):
        if dkeys not in self.dfit_memo: self.dfit_memo[dkeys] = DimFitter(dpoints)
        return self.dfit_memo[dkeys]

    def fit(self, points, ys):
        ys = [Fr(y) for y in ys]
        if all(y == ys[0] for y in ys): return Expr([], ys[0], "exact")
        # groups: the dimensions' values
        groups = {}
        for p, y in zip(points, ys):
            dk = tuple(sorted((k, v) for k, v in p.items() if k in self.dim_names))
            groups.setdefault(dk, []).append((p, y))
        keys = list(groups)
        # the base group: the one with the most contexts (the first shape's full design), not the most points: a shape
        # of many layers gives a layer kind as many points per context (glm-5-idxtypes' 78 layers beside a full design
        # of 18: its 4 contexts per variant would fit the context structure)
        ctx_of = lambda p: tuple(sorted((n, v) for n, v in p.items() if n not in self.dim_names))
        base = max(keys, key=lambda k: (len({ctx_of(p) for p, _ in groups[k]}), len(groups[k])))
        bp = [p for p, _ in groups[base]]; by = [y for _, y in groups[base]]
        ck = (tuple(tuple(sorted((k, v) for k, v in p.items() if k not in self.dim_names)) for p in bp), tuple(by))
        if ck not in self.ctx_memo:
            self.ctx_memo[ck] = fit_values([{k: v for k, v in p.items() if k not in self.dim_names} for p in bp], by,
                                           [n for n in CTX_NAMES + sorted({k for p in bp for k in p}) if n not in self.dim_names])
        e = self.ctx_memo[ck]
        if e is None: return None
        if len(keys) == 1: return e
        r = self.fit_minmax(e, groups, keys, base) if isinstance(e, MinMax) else self.fit_linear(e, groups, keys)
        if r is not None: return r
        # the base's simplest expression can be a coincidence of the first shape (deepseek4's HCA state reads,
        # 128 (floor(T/128) + n_seqs), fitted as 128 n_seqs + cells_swa - 256: at a 128-token window the window's cells
        # track the ubatch): a known expression (--known, or found for an earlier slot) that fits the base too is
        # tried over the siblings, and kept only where it reproduces every group
        bctx = [{k: v for k, v in p.items() if k not in self.dim_names} for p in bp]
        for k in gfit.KNOWN:
            if k is e: continue
            try:
                if not all(k.eval(c) == y for c, y in zip(bctx, by)): continue
            except KeyError:
                continue
            r = self.fit_minmax(k, groups, keys, base) if isinstance(k, MinMax) else self.fit_linear(k, groups, keys)
            if r is not None: return r
        return None

    def coefs_in_group(self, e, pts):
        """the coefficients of e's structure (terms, then the constant) that reproduce the group's values"""
        mons = [ns for _, ns in e.terms]
        rows = [[mon_value(p, m) for m in mons] + [1] for p, _ in pts]
        ys = [y for _, y in pts]
        if e.mode == "exact":
            sol = solve_exact(rows, ys)
            if sol is not None: return sol
            # a context variable this group does not vary (n_vocab: only the real-vocabulary file changes it): its
            # term keeps the base's coefficient, the rest is solved
            fixed = [j for j in range(len(mons)) if len({r[j] for r in rows}) == 1]
            if not fixed: return None
            free = [j for j in range(len(mons)) if j not in fixed]
            ys2 = [y - sum(e.terms[j][0] * r[j] for j in fixed) for r, y in zip(rows, ys)]
            sub = solve_exact([[r[j] for j in free] + [1] for r in rows], ys2)
            if sub is None: return None
            out = [Fr(0)] * (len(mons) + 1)
            for j in fixed: out[j] = e.terms[j][0]
            for k, j in enumerate(free): out[j] = sub[k]
            out[-1] = sub[-1]
            return out
        # floor / ceil: the base's structure with coefficients scaled by one factor (block sizes)
        return None

    def fit_linear(self, e, groups, keys):
        cols, solved = [], []
        for k in keys:
            sol = self.coefs_in_group(e, groups[k])
            if sol is None and e.mode == "exact" and len(keys) > 2 and \
                    len({tuple(mon_value(p, m) for _, m in e.terms) for p, _ in groups[k]}) <= len(e.terms):
                # a group of too few contexts to solve the structure (deepseek4's real-vocabulary file, two per
                # variant): left out of the fit over the dimensions, and checked below with every other group
                continue
            if sol is None: return None
            cols.append(sol)
            solved.append(k)
        dpoints = [dict(k) for k in solved]
        df = self.dfitter(tuple(solved), dpoints)
        terms = []
        for j in range(len(cols[0])):
            f = df.fit([c[j] for c in cols])
            if f is None: return None
            ctx_mon = e.terms[j][1] if j < len(e.terms) else ()
            for r, dm in f:
                terms.append((r, tuple(ctx_mon) + tuple(dm)))
        d = sum((r for r, m in terms if m == ()), Fr(0))
        terms = [(r, m) for r, m in terms if m != () and r != 0]
        out = Expr(terms, d, e.mode)
        for k in keys:
            for p, y in groups[k]:
                if out.eval(p) != y: return None
        return out

    def fit_minmax(self, e, groups, keys, base):
        """each operand fitted on the points where it is the one taken (its value equals the slot's): on the base group
        the base's operands say which; a sibling group whose points all fit one operand's structure gives that
        operand's coefficients. A sibling that takes both (glm-dsa's min(top_k, cells): a top-k above some contexts'
        cells) is split by an operand fitted first: its points where that operand is not the value belong to the
        other (a min below it, a max above)"""
        def ctx(p): return {n: v for n, v in p.items() if n not in self.dim_names}

        def fit_side(side, lists):
            # lists: group key -> [(p, y)] the side may take; the side's coefficients per group, then over the dims
            cols, kk = [], []
            for k, lst in lists.items():
                if not lst: continue
                # a group whose every point has one value tells nothing of a side that varies with the context: it
                # solves with that side's coefficients 0 (glm-dsa: a sibling whose top-k is below every context's
                # cells, min(top_k, cells) always the top-k, "fits" the cells side as 0 x cells + top_k)
                if side.terms and len({y for _, y in lst}) == 1: continue
                sol = self.coefs_in_group(side, lst)
                if sol is None: continue  # the group mixes branches
                cols.append(sol); kk.append(k)
            # one group (the base alone takes this side): the base's coefficients, constant over the dimensions,
            # checked below on every group; so too where no group tells the side's coefficients apart (deepseek4's
            # min(T, 8 n_seqs): one sequence in every context, and the base takes T at one ubatch only)
            if not kk: return side, 0
            df = self.dfitter(tuple(kk), [dict(k) for k in kk])
            terms = []
            for j in range(len(cols[0])):
                f = df.fit([c[j] for c in cols])
                if f is None: return None
                ctx_mon = side.terms[j][1] if j < len(side.terms) else ()
                for r, dm in f: terms.append((r, tuple(ctx_mon) + tuple(dm)))
            d = sum((r for r, m in terms if m == ()), Fr(0))
            return Expr([(r, m) for r, m in terms if m != () and r != 0], d, side.mode), len(kk)

        sides = (e.a, e.b)
        lists = []
        for side in sides:
            lists.append({k: [(p, y) for p, y in groups[k] if k != base or side.eval(ctx(p)) == y] for k in keys})
        first = [fit_side(sides[0], lists[0]), fit_side(sides[1], lists[1])]

        def valid(a, b):
            out = MinMax(e.op, a, b)
            return out if all(out.eval(p) == y for k in keys for p, y in groups[k]) else None
        if first[0] is not None and first[1] is not None:
            out = valid(first[0][0], first[1][0])
            if out is not None: return out
        # either side as fitted splits the mixed siblings for the other (the cells side, its coefficients constant,
        # leaves the top-k side the siblings' points above their cells)
        for i, j in ((0, 1), (1, 0)):
            if first[i] is None: continue
            known = first[i][0]
            split = {k: [(p, y) for p, y in groups[k] if known.eval(p) != y] for k in keys if k != base}
            split[base] = lists[j][base]
            r = fit_side(sides[j], split)
            if r is None: continue
            out = valid(*((known, r[0]) if i == 0 else (r[0], known)))
            if out is not None: return out
        return None


def elems(nb, typ):
    ts, bs = TYPES.get(typ, (None, None))
    if ts is None: return None
    out = []
    for x in nb:
        if (x * bs) % ts: return None
        out.append(x * bs // ts)
    return out


def contiguous_nb(typ, ne):
    ts, bs = TYPES[typ]
    nb = [ts, ts * (ne[0] // bs)]
    nb.append(nb[1] * ne[1]); nb.append(nb[2] * ne[2])
    return nb


# --- roots ----------------------------------------------------------------------------------------------------------
def visit_parents(T, t, visited, en, el, limit=None):
    """ggml_visit_parents (ggml.c) from t, without recursion: sources first in order, then the tensor itself, appended
    to the nodes (en) or, for an op NONE, the leafs (el); False as soon as more than limit nodes were appended"""
    stack = [(t, 0)]
    while stack:
        x, k = stack.pop()
        if k == 0:
            if x in visited: continue
            visited.add(x)
        srcs = T[x]["src"]
        if k < len(srcs):
            stack.append((x, k + 1))
            if srcs[k] >= 0 and srcs[k] not in visited: stack.append((srcs[k], 0))
            continue
        (el if T[x]["op"] == "NONE" else en).append(x)
        if limit is not None and len(en) > limit: return False
    return True


def infer_roots(tr):
    """the tensors llama.cpp expanded into the graph, in order, such that ggml_visit_parents' walk from them gives the
    recorded node and leaf order"""
    T = tr.t
    nodes, leafs = tr.order["nodes"], tr.order["leafs"]
    consumed = set()
    for n in nodes:
        for s in T[n]["src"]:
            if s >= 0: consumed.add(s)
    visited = set()

    def walk(t, en, el, limit):
        return visit_parents(T, t, visited, en, el, limit)

    consumed_leafs = set()
    for n in nodes:
        for x in T[n]["src"]:
            if x >= 0 and T[x]["op"] == "NONE": consumed_leafs.add(x)
    roots, p, lp = [], 0, 0
    while p < len(nodes) or lp < len(leafs):
        # a leaf no node reads, next in the leaf order: expanded itself (an unused graph input)
        if lp < len(leafs) and leafs[lp] not in consumed_leafs and leafs[lp] not in visited:
            visited.add(leafs[lp]); roots.append(leafs[lp]); lp += 1
            continue
        if p >= len(nodes): raise RuntimeError(f"leaf {T[leafs[lp]]['name']} after the last node")
        # the latest node whose walk gives the recorded nodes from p and the recorded leafs from lp
        q_max = next((q for q in range(p, len(nodes)) if nodes[q] not in consumed), len(nodes) - 1)
        found = False
        for q in range(q_max, p - 1, -1):
            saved = set(visited); en, el = [], []
            ok = walk(nodes[q], en, el, q - p + 1)
            if ok and en == nodes[p:q + 1] and el == leafs[lp:lp + len(el)]:
                roots.append(nodes[q]); p = q + 1; lp += len(el); found = True
                break
            visited.clear(); visited.update(saved)
        if not found and lp < len(leafs) and leafs[lp] not in visited:
            # a leaf expanded itself before the nodes that read it (deepseek4.cpp's graph expands the raw attention's
            # kq_mask input, ggml_build_forward_expand(gf, inp_attn->self_kq_mask), before the first layer's
            # hyper-connection mixes read any weight): ggml_visit_parents appends it to the leafs then
            visited.add(leafs[lp]); roots.append(leafs[lp]); lp += 1
            continue
        if not found: raise RuntimeError(f"no expanded root reproduces the order at node {p} ({T[nodes[p]]['name']}), leaf {lp}")
    # check
    visited.clear(); en_all, el_all = [], []
    for r in roots:
        en, el = [], []
        walk(r, en, el, 1 << 30)
        en_all += en; el_all += el
    if en_all != nodes or el_all != leafs:
        k = next((i for i, (a, b) in enumerate(zip(en_all, nodes)) if a != b), min(len(en_all), len(nodes)))
        j = next((i for i, (a, b) in enumerate(zip(el_all, leafs)) if a != b), min(len(el_all), len(leafs)))
        raise RuntimeError(f"the inferred roots do not reproduce the recorded order (nodes {len(en_all)}/{len(nodes)} from {k}, "
                           f"leafs {len(el_all)}/{len(leafs)} from {j}: {T[el_all[j]]['name'] if j < len(el_all) else '-'} / "
                           f"{T[leafs[j]]['name'] if j < len(leafs) else '-'})")
    return roots


def walk_order(tr, roots):
    """the node and leaf order ggml_visit_parents gives when the roots are expanded in this order"""
    visited, en, el = set(), [], []
    for r in roots:
        visit_parents(tr.t, r, visited, en, el)
    return en, el


def root_pattern(tr, roots):
    """(global prefix, per-layer roots, global suffix): roots = prefix, layer 0's, ..., layer n-1's, suffix; a global
    root met after a layer's own began is listed with the next layer's (g<i> among its s<i>)"""
    seq = [(tr.seg[r], tr.local[r]) for r in roots]
    pre, post, per, pending = [], [], {}, []
    cur = None
    for s, l in seq:
        if s == "g":
            (pre if cur is None else pending).append(f"g{l}")
            continue
        if cur is not None and s < cur: raise RuntimeError(f"layer {s}'s roots after layer {cur}'s")
        cur = s
        per.setdefault(s, []).extend(pending)
        pending = []
        per[s].append(f"s{l}")
    post = pending
    return pre, per, post


def runs(ids):
    out = []
    for l in ids:
        if out and out[-1][0] + out[-1][1] == l: out[-1][1] += 1
        else: out.append([l, 1])
    return " ".join(f"{a}+{c}" for a, c in out) or "-"


# --- one variant ----------------------------------------------------------------------------------------------------
# dimensions a layer's signature carries (graph_layer_sig: m4, the experts used, is the number of adds in the layer's
# graph): a template holds the values recorded, so they may be the same on every shape
# the indexer's head width too (glm-dsa: graph_layer_sig's "I128"): ggml-cuda fuses the lightning indexer for 128-wide
# heads only, and a device without it gets another graph (fused_lid off), so the shapes hold it and the signature names it
# DeepSeek-V4 (graph_shape.cpp layer_features): the hyper-connection count ("hc4"), the hash-routed layers ("H": which
# layers route by the token-id table, so hash_layer_count itself sizes nothing) and the compress ratio of each
# compressed cache ("Z4", "Z128"; the indexer only on ratio-4 layers) are in every layer's signature, and the indexer's
# head width (attention.indexer.key_length) is the "I128" of it; deepseek2's gating function ("f2") too
SIG_DIMS = ("n_expert_used", "I_c_k", "I_head_dim_k", "I_rot_k", "g_expert_gating_func", "n_hc", "g_hash_layer_count",
            "Z_ratio", "I_ratio", "g_attention_indexer_key_length")
# a layer's own cache ratios (l_c<i>_ratio): carried by its signature as well
SIG_LAYER_DIMS = re.compile(r"^l_c\d+_ratio$")


def constant_dims(trs, family):
    """the dimensions the family varies that are constant among the shapes of these traces (names), where the fit
    could not tell them from constants"""
    shapes = {id(t.shape): t.shape for t in trs}.values()
    def flat(s):
        d = dict(s["dims"], n_vocab=s["n_vocab"])
        for l in s["layers"]:
            for k, v in l["dims"].items(): d.setdefault(k, v)
        return d
    fam = [flat(s) for s in family]
    mine = [flat(s) for s in shapes]
    if len(mine) < 2: return []
    out = []
    for n in sorted(set().union(*fam)):
        if len({f.get(n, 0) for f in fam}) > 1 and len({m.get(n, 0) for m in mine}) == 1 and n not in ("n_layer_mtp",) + SIG_DIMS \
                and not SIG_LAYER_DIMS.match(n):
            out.append(n)
    return out


def build_variant(key, trs, eid, sfit):
    """one variant over its traces: (global lines, kind lines by kind id, sig -> kind, root pattern)"""
    g_topo = None
    kinds = {}      # topology -> kind index (within the variant)
    inst = {}       # kind -> [(trace, il)]
    sig_kind = {}
    g_from = None
    for tr in trs:
        gt = tuple(tr.topo(i) for i in tr.members["g"])
        if g_topo is None: g_topo, g_from = gt, tr
        elif gt != g_topo:
            at = next((i for i, (a, b) in enumerate(zip(gt, g_topo)) if a != b), min(len(gt), len(g_topo)))
            raise RuntimeError(f"variant {key}: the global segment differs between shapes / contexts ({g_from.shape['n_layer']} "
                               f"layers {g_from.opts} vs {tr.shape['n_layer']} layers {tr.opts}: {len(g_topo)} vs {len(gt)} "
                               f"tensors; first difference at tensor {at}: {g_topo[at] if at < len(g_topo) else '-'} vs "
                               f"{gt[at] if at < len(gt) else '-'})")
        for il in tr.layers:
            tp = tuple(tr.topo(i) for i in tr.members[il])
            k = kinds.setdefault(tp, len(kinds))
            inst.setdefault(k, []).append((tr, il))
            sig = tr.shape["layers"][il]["sig"] if il < len(tr.shape["layers"]) else f"extra{il}"
            if sig_kind.setdefault(sig, k) != k:
                # name where the two graphs part: the first tensor whose topology differs
                other = next(t for t, kk in kinds.items() if kk == sig_kind[sig])
                at = next((i for i, (a, b) in enumerate(zip(tp, other)) if a != b), min(len(tp), len(other)))
                where = (f"{len(tp)} vs {len(other)} tensors; first difference at tensor {at}: "
                         f"{tp[at] if at < len(tp) else '-'} vs {other[at] if at < len(other) else '-'}")
                raise RuntimeError(f"variant {key}: layers with signature {sig} have different graphs "
                                   f"({os.path.basename(tr.shape.get('path', '?'))} il {il}: {where})")

    def lines_for(members_of, topo_tensors):
        """fitted lines of one segment kind; members_of: [(trace, [indices], il)]"""
        n = len(members_of[0][1])
        lines = []
        for p in range(n):
            ts = [(tr, tr.t[idx[p]], il) for tr, idx, il in members_of]
            tr0, t0, il0 = ts[0]
            seg0 = "g" if il0 is None else il0
            name = canon_name(t0["name"], None if seg0 == "g" else seg0)
            kind = {0: "n", 1: "l", 2: "x"}[t0["leaf"]]
            i0 = idx0 = members_of[0][1][p]
            if role(t0) == "w" and t0["view_src"] < 0:
                # the model's own tensor; its recorded type and shape (fitted over the dimensions) stand in for a model
                # that lists no tensors (a config.json): a weight is a leaf, its type and shape size no compute buffer
                # but place its users' ops
                # (the conformance builders give a weight different types on different shapes: the first shape's
                # stands in; kvfit uses the recorded weights only where their type sizes nothing, compute_sched.cpp)
                wt = t0["type"]
                pts = [tr.vars_at(il) for tr, _, il in ts]
                wne = []
                for d in range(4):
                    e = sfit.fit(pts, [t["ne"][d] for _, t, _ in ts])
                    wne.append(str(eid(e)) if e is not None and wt != "-" else "-")
                if "-" in wne: wt = "-"
                lines.append(f"t {kind} {t0['op']} w={wt} {' '.join(wne) if wt != '-' else '- - - -'} w {t0['flags']} - - - - w {name}")
                continue
            types = [t["type"] for _, t, _ in ts]
            if len(set(types)) == 1: ty = types[0]
            elif all(x == tr.opts["type_k"] for x, (tr, _, _) in zip(types, ts)): ty = "K"
            elif all(x == tr.opts["type_v"] for x, (tr, _, _) in zip(types, ts)): ty = "V"
            else: raise RuntimeError(f"type of {name} not fitted: {sorted(set(types))}")
            pts = [tr.vars_at(il) for tr, _, il in ts]

            def fitted(ys, what, soft=False):
                e = sfit.fit(pts, ys)
                if e is None:
                    if soft: return None
                    if os.environ.get("GRAPH2_DEBUG"):  # the failing slot's points, for a look at the fit by hand
                        import pickle
                        with open(os.environ["GRAPH2_DEBUG"] + "." + re.sub(r"[^A-Za-z0-9]+", "_", what), "wb") as f:
                            pickle.dump((pts, ys, what, sfit.dim_names), f)
                    raise RuntimeError(f"no expression for {what}: {sorted(set(ys))[:8]}")
                return eid(e)
            ne = [fitted([t["ne"][d] for _, t, _ in ts], f"{name} ne{d}") for d in range(4)]
            if all(t["type"] in TYPES and t["nb"] == contiguous_nb(t["type"], t["ne"]) for _, t, _ in ts):
                nb = "c"
            else:
                el = [elems(t["nb"], t["type"]) for _, t, _ in ts]
                if any(e is None for e in el): raise RuntimeError(f"strides of {name} not in elements")
                nb = ",".join(str(fitted([e[d] for e in el], f"{name} nb{d}")) for d in range(4))
            if t0["view_src"] >= 0:
                offs = []
                for _, t, _ in ts:
                    e = elems([t["view_offs"]], t["type"])
                    if e is None: raise RuntimeError(f"view offset of {name} not in elements")
                    offs.append(e[0])
                vo = str(fitted(offs, f"{name} view_offs"))
            else:
                vo = "-"
            params = []
            for q in range(16):
                vals = [t["params"][q] for _, t, _ in ts]
                if all(v == 0 for v in vals): params.append("0")
                elif len(set(vals)) == 1: params.append("=" + str(vals[0]))
                else:
                    e = sfit.fit(pts, vals)
                    # only an integer-valued fit whose terms are all integers (a count, a width): float parameters
                    # (scales as their bits) would be fitted as a meaningless line through the shapes' values
                    if e is not None and (isinstance(e, MinMax) or e.d.denominator != 1 or abs(e.d) > (1 << 20) or
                                          any(c.denominator != 1 for c, _ in e.terms)):
                        e = None
                    e = eid(e) if e is not None else None
                    # an op parameter the dimensions do not give (a float's bits): the first shape's value; it sizes
                    # nothing the scheduler or the allocator reads
                    params.append("e" + str(e) if e is not None else "=" + str(vals[0]))
            while params and params[-1] == "0": params.pop()
            pr = ",".join(params) if params else "-"
            topo = topo_tensors[p]
            srcs = "|".join(topo[5]) or "-"
            lines.append(f"t {kind} {t0['op']} {ty} {ne[0]} {ne[1]} {ne[2]} {ne[3]} {nb} {t0['flags']} {topo[4]} {vo} {srcs} {pr} {role(t0)} {name}")
        return lines

    glob = lines_for([(tr, tr.members["g"], None) for tr in trs], g_topo)
    kind_lines = {}
    for tp, k in kinds.items():
        kind_lines[k] = lines_for([(tr, tr.members[il], il) for tr, il in inst[k]], tp)
    # roots: per layer kind the roots llama.cpp expands. infer_roots leaves out a root the next expand's walk reaches
    # at the same place anyway, so layers of one kind can differ by such redundant roots (Qwen3.5's first full
    # attention layer lists attn_gated, the later ones do not: the first visit of the graph's inputs differs). Each
    # kind takes the longest list that holds every other as a subsequence, and every trace's recorded order is then
    # rebuilt from the merged pattern (walk_order) and must be the same.
    pre0 = post0 = None
    cands = {}
    for tr in trs:
        pre, per, post = root_pattern(tr, infer_roots(tr))
        if pre0 is None: pre0, post0 = pre, post
        if pre != pre0 or post != post0:
            raise RuntimeError(f"variant {key}: the global roots differ between shapes / contexts")
        for il in tr.layers:
            k = kinds[tuple(tr.topo(i) for i in tr.members[il])]
            got = tuple(per.get(il, []))
            if got not in cands.setdefault(k, []): cands[k].append(got)

    def subseq(a, b):
        it = iter(b)
        return all(x in it for x in a)
    by_kind = {}
    for k, lists in cands.items():
        best = max(lists, key=len)
        bad = [l for l in lists if not subseq(l, best)]
        if bad: raise RuntimeError(f"variant {key}: layers of one kind expand different roots ({list(bad[0])} vs {list(best)})")
        by_kind[k] = best
    for tr in trs:
        roots = [tr.members["g"][int(x[1:])] for x in pre0]
        for il in tr.layers:
            k = kinds[tuple(tr.topo(i) for i in tr.members[il])]
            roots += [tr.members["g" if x[0] == "g" else il][int(x[1:])] for x in by_kind[k]]
        roots += [tr.members["g"][int(x[1:])] for x in post0]
        en, el = walk_order(tr, roots)
        if en != tr.order["nodes"] or el != tr.order["leafs"]:
            raise RuntimeError(f"variant {key}: the merged roots do not rebuild the recorded order of {tr.opts}")
    pat = (tuple(pre0), tuple(sorted(by_kind.items())), tuple(post0))
    return glob, kind_lines, sig_kind, pat


def log(s): print(s, file=sys.stderr, flush=True)




def check_dims_vary(shapes):
    """every dimension the family uses must take two values across the recorded shapes"""
    names = set()
    for s in shapes: names |= set(s["dims"])
    bad = []
    for n in sorted(names):
        vals = {s["dims"].get(n, 0) for s in shapes}
        if len(vals) == 1 and next(iter(vals)) not in (0, 1) and n not in ("n_layer_mtp", "n_pos_per_embd") + SIG_DIMS:
            bad.append(f"{n}={next(iter(vals))}")
    lnames = set()
    for s in shapes:
        for l in s["layers"]: lnames |= set(l["dims"])
    for n in sorted(lnames):
        vals = {l["dims"].get(n, 0) for s in shapes for l in s["layers"]}
        if len(vals) == 1 and next(iter(vals)) not in (0, 1) and not SIG_LAYER_DIMS.match(n): bad.append(f"{n}={next(iter(vals))}")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", required=True)
    ap.add_argument("--shape", action="append", required=True, help="a model file of the family; the first gets the full design")
    ap.add_argument("--vocab-model")
    ap.add_argument("--n-vocab", type=int, default=512)
    ap.add_argument("--vocab-n", type=int)
    ap.add_argument("--per-shape", type=int, default=4, help="contexts per variant on every shape but the first")
    ap.add_argument("--out", required=True)
    ap.add_argument("--probe")
    ap.add_argument("--name", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--allow-constant-dims", action="store_true")
    ap.add_argument("--full-design-new-kinds", action="store_true",
                    help="the full design for every shape with a layer kind (signature) the full-design shapes before it lack")
    ap.add_argument("--known", action="append", help="a file of `expr` lines (template syntax) tried first for every "
                    "slot's context structure (tools/graph_template/deepseek4.known: the compressor-state inputs)")
    ap.add_argument("--skip-failed-variants", action="store_true",
                    help="write the variants that fit and name the others in the file's comment: kvfit then says no "
                    "scheduler graph was recorded for them and falls back (deepseek4's quantized caches)")
    ap.add_argument("--extra-points", default="", help="N_CTX:N_UBATCH:OUTPUTS,... added to every variant's design: "
                    "contexts below a family's threshold (glm-dsa: fewer cells than the indexer's top-k, 1024:512:7)")
    args = ap.parse_args()
    for k in args.known or []:
        import gfit
        log(f"{gfit.load_known(k)} known expressions from {k}")
    extra = [tuple(int(x) for x in p.split(":")) for p in args.extra_points.split(",") if p]
    probe = args.probe or os.path.join(ROOT, "build/graph_trace", args.release, "llama_probe")
    shapes = [shape_info(m) for m in args.shape]
    arch = shapes[0]["arch"]
    if any(s["arch"] != arch for s in shapes): raise SystemExit("the shapes are of different architectures")
    if len(shapes) > 1:
        bad = check_dims_vary(shapes)
        if bad and not args.allow_constant_dims:
            raise SystemExit(f"dimensions constant across the shapes (record a sibling that changes them): {', '.join(bad)}")
    cases = design(args.quick, extra)
    traces, refused = [], []
    plan = [(args.shape[0], shapes[0], c, shapes[0]["n_vocab"]) for c in cases]
    if args.vocab_model:
        vs = shape_info(args.vocab_model)
        plan += [(args.vocab_model, vs, c, vs["n_vocab"]) for c in per_variant(cases, 2)]
    base_keys = {variant_key(c, shapes[0]) for c in cases}
    kinds = lambda s: {l["sig"] for l in s["layers"] if not l["sig"].startswith("x")}  # x: a NextN block, not in the graph
    full_kinds = kinds(shapes[0])
    for f, s in zip(args.shape[1:], shapes[1:]):
        # --full-design-new-kinds: a shape with a layer kind no earlier full-design shape has gets the full design too, so
        # the kind's context structure is fitted on a full design (glm-dsa: the all-full indexer layers of GLM-5 beside
        # GLM-5.2's shared ones, which no one shape can both end with)
        if args.full_design_new_kinds and kinds(s) - full_kinds:
            plan += [(f, s, c, s["n_vocab"]) for c in cases]
            full_kinds |= kinds(s)
            base_keys |= {variant_key(c, s) for c in cases}
            continue
        # a variant the first shape does not have (no rotation for heads of another width): the full design here
        new = {variant_key(c, s) for c in cases} - base_keys
        plan += [(f, s, c, s["n_vocab"]) for c in per_variant(cases, args.per_shape, s, new)]
        base_keys |= new
    for f, s, c, nv in plan:
        try:
            traces.append(Trace(dump(f, c, probe, nv), s))
        except RuntimeError as e:
            refused.append(f"{os.path.basename(f)}: {e}")
    log(f"{len(traces)} contexts dumped, {len(refused)} refused")
    groups = {}
    for t in traces: groups.setdefault(variant_key(t.opts, t.shape), []).append(t)
    # n_vocab is a dimension of the shape (the logits' width), fitted like the others
    dim_names = {"n_vocab"}
    for s in shapes:
        dim_names |= set(s["dims"])
        for l in s["layers"]: dim_names |= set(l["dims"])
    sfit = SlotFitter(dim_names)
    exprs = {}

    def eid(e):
        txt = expr_text(e) if not hasattr(e, "op") else f"{e.op} {eid(e.a)} {eid(e.b)}"
        if txt not in exprs: exprs[txt] = len(exprs)
        return exprs[txt]
    segs = {}
    out_var = []
    failed = []
    for key in sorted(groups, key=str):
        trs = groups[key]
        cd = constant_dims(trs, shapes)
        if cd and not args.allow_constant_dims:
            failed.append(f"{key}: dimensions constant among this variant's shapes: {', '.join(cd)}")
            log(failed[-1])
            continue
        try:
            glob, kind_lines, sig_kind, pat = build_variant(key, trs, eid, sfit)
        except RuntimeError as e:
            failed.append(f"{key}: {e}")
            log(f"variant {key}: {e}")
            continue
        gid = segs.setdefault(tuple(glob), len(segs))
        kid = {k: segs.setdefault(tuple(lines), len(segs)) for k, lines in kind_lines.items()}
        fa, kv, st, rot = key
        kinds = " ".join(f"{sig}={kid[k]}" for sig, k in sorted(sig_kind.items()))
        roots = " ".join(f"{kid[k]}:{','.join(v) or '-'}" for k, v in pat[1])
        out_var.append(f"variant fa={int(fa)} kv={kv} st={st} rot={rot} contexts={len(trs)} global {gid}\nkinds {kinds}\n"
                       f"roots_pre {','.join(pat[0]) or '-'}\nroots_layer {roots}\nroots_post {','.join(pat[2]) or '-'}")
        log(f"variant {key}: {len(trs)} contexts, {len(glob)} global tensors, {len(kind_lines)} layer kinds")
    if failed and (not args.skip_failed_variants or not out_var):
        raise SystemExit("not written: " + "; ".join(failed))
    with open(args.out, "w") as f:
        f.write("kvfit-graph 2\n")
        f.write(f"arch {arch}\nrelease {args.release}\nmodel {args.name}\nkey {shapes[0]['key']}\n")
        shp = ", ".join(f"{os.path.basename(m)} ({s['n_layer']} layers, n_embd {s['dims']['n_embd']})" for m, s in zip(args.shape, shapes))
        f.write(f"# recorded by tools/graph_template/graph2.py from {len(traces)} contexts of llama.cpp {args.release} "
                f"(the scheduler's graph, GGML_SCHED_DUMP) on {len(shapes)} shapes: {shp}; {len(refused)} contexts refused\n")
        for x in failed:  # --skip-failed-variants: what is not in the file, and why
            f.write("# variant not written (kvfit falls back, named): " + x.replace("\n", " ")[:400] + "\n")
        for t, i in sorted(exprs.items(), key=lambda x: x[1]): f.write(f"expr {i} {t}\n")
        for content, i in sorted(segs.items(), key=lambda x: x[1]):
            f.write(f"seg {i}\n")
            for l in content: f.write(l + "\n")
        for v in out_var: f.write(v + "\n")


if __name__ == "__main__":
    main()
