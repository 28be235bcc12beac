// Replay of a recorded llama.cpp reserve graph (graph_replay.h). Format of data/graphs/<arch>[+<model>][.<release>].txt,
// written by tools/graph_template/extract.py (one item per line, space-separated); a graph that several releases
// record identically is kept once, its `release` line naming them all (tools/graph_template/share_releases.py):
//   kvfit-graph 1                      header
//   arch A / release R [R...] / model M / key K
//   expr ID MODE CONST TERM...         MODE e (exact), f (floor), c (ceil) of CONST + sum of TERMs;
//                                      TERM = NUM/DEN:VAR[*VAR...]; VAR a context variable (bind_vars) or
//                                      fl<q>_<var> / ce<q>_<var> (floor / ceil of var / q)
//   seg ID                             a segment (usually one layer) of events:
//   A TYPE E0 E1 E2 E3                 allocate a tensor of ggml type TYPE (K / V: the cache's type_k / type_v)
//                                      and shape [E0..E3] (expr ids)
//   F REL                              free the tensor allocated REL allocations after the segment's first one
//                                      (negative: an earlier segment)
//   X REL TYPE E0 E1 E2 E3             free the tail of that tensor's block beyond a view of this type and shape
//                                      (ggml_gallocr_free_extra_space: a node reused a larger parent in place)
//   variant fa=0|1 kv=CLASS rs=N[+] order SEG...  the segments of one graph, in order; CLASS f16 (K and V f16),
//                                      quant (both quantized), quantk / quantv (one of them); rs=N recorded with
//                                      exactly N recurrent-state snapshots (n_rs_seq; Qwen3.8-Flash-Next's Gated
//                                      DeltaNet graph copies each snapshot's state, so each count is its own graph);
//                                      rs=N+ the same graph for every count >= N (recorded at several counts that
//                                      gave one graph: DeepSeek-V4's compressor states); optional st=1|N|1u: recorded
//                                      for one sequence (1), N streams of one sequence each (N), or one unified
//                                      stream over several sequences (1u), where the stream layout changes the graph
//                                      (MiniMax-M3's MSA with flash attention loops over the streams); absent: any
#include "runtimes/llamacpp/graph_replay.h"
#include "runtimes/llamacpp/sched.h"

#include "core/embedded.h"
#include "runtimes/llamacpp/compute.h"
#include "kvfit/ggml_type.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <charconv>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <string_view>
#include <vector>

namespace kvfit::detail {

namespace {

// --- the template ---------------------------------------------------------------------------------------------

struct var_ref {
    int base = -1; ///< index into the variable vector
    uint32_t q = 0;///< 0: the variable itself; else floor (fl) or ceil (ce) of var / q
    bool ceil = false;
};

struct term {
    int64_t num = 0, den = 1;
    std::vector<var_ref> vars;
};

struct expr {
    char mode = 'e';          ///< e exact, f floor, c ceil; m min / M max of the expressions a and b
    int64_t num = 0, den = 1; ///< the constant
    std::vector<term> terms;
    uint32_t a = 0, b = 0;    ///< min / max operands (ids of earlier expressions)
};

struct event {
    char kind = 'A';
    int32_t ref = 0;     ///< F, X: relative allocation index
    int type = -1;       ///< ggml type id; -2 type_k, -3 type_v
    uint32_t ne[4] = {}; ///< expr ids
};

struct variant {
    bool fa = true;
    uint32_t rs = 0;      ///< recurrent-state snapshots (n_rs_seq) it was recorded with
    bool rs_more = false; ///< rs=N+: also every count above rs (one graph at every recorded count)
    std::string st;       ///< st=: the stream layout it was recorded for (stream_key); empty: any
    std::string kv;
    std::vector<uint32_t> order;
};

// --- format 2: the whole graph as the scheduler receives it (tools/graph_template/graph2.py) --------------------------

/// A tensor reference of a format-2 line: g<i> the global segment's tensor i, s<i> this layer's, r<d>:<i> the layer d
/// after this one (d < 0: before), L<l>:<i> layer l's (from the global segment); '-' none.
struct tref {
    char k = '-';
    int32_t layer = 0;
    uint32_t idx = 0;
    bool from_end = false; ///< 'L' only: idx counts from the segment's end (1: its last tensor), written "L-1:-1"
};

/// One op parameter: 0, a constant, or an expression.
struct tparam {
    char k = '0'; ///< '0', '=' constant, 'e' expression
    int64_t v = 0;
};

/// One tensor line: `t KIND OP TYPE NE0 NE1 NE2 NE3 NB FLAGS VIEW_SRC VIEW_OFFS SRCS PARAMS ROLE NAME`.
struct tline {
    char kind = 'n';   ///< l leaf, n node, x in no list (a view source: a KV cache tensor)
    gop op = gop::none;
    int type = 0;      ///< ggml type id; -2 type_k, -3 type_v, -4 the model weight's own type
    int weight_type = -1; ///< a weight's recorded type (ne[] its recorded shape), for a model without a tensor list
    uint32_t ne[4] = {};
    bool nb_contiguous = true;
    uint32_t nb[4] = {}; ///< expr ids of the strides in elements of the tensor's type (nb * block / type size)
    uint8_t flags = 0;
    tref view_src;
    int32_t view_offs = -1; ///< expr id (elements), -1 none
    std::vector<tref> src;
    std::array<tparam, 16> params{};
    char role = '-';   ///< w weight, k a pre-allocated cache tensor, - computed / input
    std::string name;  ///< "{L}" for the layer index
};

struct variant2 {
    bool fa = true;
    std::string kv, st, rot; ///< rot: "k", "v", "kv" (the quantized caches Hadamard-rotated) or "-"
    uint32_t global = 0;
    std::map<std::string, uint32_t> kinds;            ///< layer signature (graph_layer_sig) -> segment
    std::vector<tref> roots_pre, roots_post;          ///< g<i> refs
    std::map<uint32_t, std::vector<tref>> roots_layer;///< segment -> its roots (s<i>, g<i>), in expand order
};

struct graph_template {
    std::string arch, model, key;
    std::vector<std::string> releases; ///< the releases that record this graph (the `release` line)
    std::string name; ///< the file's stem before the release: the arch, or <arch>+<model> for a second recorded shape
    int format = 1;
    std::vector<std::string> var_names; ///< k_var_names, then cells_<cache> as the trace named them
    std::vector<expr> exprs;
    std::vector<std::vector<event>> segs;
    std::vector<variant> variants;
    std::vector<std::vector<tline>> segs2; ///< format 2
    std::vector<variant2> variants2;
};

/// The variables a template's shapes are written in (tools/graph_template/trace.py canon()).
// T_q: the ubatch's tokens per sequence (llama_ubatch::n_seq_tokens; Qwen3.8-Flash-Next's per-layer-embedding conv
// concatenates its ple.conv_kernel - 1 history rows to each sequence's tokens)
constexpr const char * k_var_names[] = {"T", "n_out", "n_seqs", "n_stream", "T_s", "n_vocab", "n_ctx_seq", "n_ctx", "n_rs",
                                        "T_q"};
constexpr size_t k_n_fixed = std::size(k_var_names);

int var_index(std::vector<std::string> & names, std::string_view n) {
    for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == n) return int(i);
    }
    names.emplace_back(n);
    return int(names.size() - 1);
}

int64_t to_i64(std::string_view s) {
    int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) throw std::runtime_error("bad number");
    return v;
}

void parse_fraction(std::string_view s, int64_t & num, int64_t & den) {
    const size_t slash = s.find('/');
    num = to_i64(s.substr(0, slash));
    den = slash == std::string_view::npos ? 1 : to_i64(s.substr(slash + 1));
}

int parse_type(std::string_view s) {
    if (s == "K") return -2;
    if (s == "V") return -3;
    return int(ggml_type_from_name(s));
}

tref parse_ref(std::string_view w) {
    tref r;
    if (w == "-") return r;
    r.k = w.at(0);
    if (r.k == 'g' || r.k == 's') {
        r.idx = uint32_t(to_i64(w.substr(1)));
    } else if (r.k == 'r' || r.k == 'L') {
        const size_t colon = w.find(':');
        if (colon == std::string_view::npos) throw std::runtime_error("bad tensor reference");
        r.layer = int32_t(to_i64(w.substr(1, colon - 1)));
        const int64_t idx = to_i64(w.substr(colon + 1));
        // graph2.py writes the global segment's references into the last layers from the segment's end: the same
        // tensor (l_out) sits at another index in a last layer of another kind
        r.from_end = r.k == 'L' && idx < 0;
        if (idx < 0 && !r.from_end) throw std::runtime_error("bad tensor reference");
        r.idx = uint32_t(r.from_end ? -idx : idx);
    } else {
        throw std::runtime_error("bad tensor reference");
    }
    return r;
}

/// The words of one template line, read in place (no stream, no copy): a "t" line is most of a template's 124,000
/// lines, and reading its words through an istringstream was half of the parse (issue 28: a whole plan's start).
struct line_words {
    std::string_view s;
    size_t p = 0;
    static bool space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
    /// The next word; empty at the end of the line.
    std::string_view next() {
        while (p < s.size() && space(s[p])) ++p;
        const size_t b = p;
        while (p < s.size() && !space(s[p])) ++p;
        return s.substr(b, p - b);
    }
    /// The next word, which the line must have.
    std::string_view need() {
        const std::string_view w = next();
        if (w.empty()) throw std::runtime_error("short tensor line");
        return w;
    }
    /// The rest of the line after the spaces before it.
    std::string_view rest() {
        while (p < s.size() && space(s[p])) ++p;
        return s.substr(p);
    }
};

/// One tensor line of a format-2 segment, the words after its "t".
tline parse_tline(std::string_view text, size_t n_exprs) {
    tline l;
    line_words ls{text};
    const std::string_view kind = ls.need(), op = ls.need(), type = ls.need();
    l.kind = kind[0];
    l.op = gop_from_name(op);
    if (l.op == gop::count) throw std::runtime_error("unknown op " + std::string(op));
    auto expr_id = [&](std::string_view x) {
        const int64_t e = to_i64(x);
        if (e < 0 || size_t(e) >= n_exprs) throw std::runtime_error("expr id out of range");
        return uint32_t(e);
    };
    // a weight: "w" (the model's own tensor), or "w=TYPE" with its recorded shape's expressions, which stand in for a
    // model that lists no tensors (config.json)
    const bool weight = type == "w" || type.starts_with("w=");
    l.type = weight ? -4 : parse_type(type);
    if (weight && type.size() > 2 && type.substr(2) != "-") l.weight_type = parse_type(type.substr(2));
    for (uint32_t & d : l.ne) {
        const std::string_view w = ls.need();
        if (weight && l.weight_type < 0 && w != "-") throw std::runtime_error("a weight's shape without its type");
        d = weight && w == "-" ? 0 : expr_id(w);
    }
    std::string_view w = ls.need();
    if (weight || w == "c") {
        l.nb_contiguous = true;
    } else {
        l.nb_contiguous = false;
        size_t p = 0;
        for (uint32_t & d : l.nb) {
            if (p > w.size()) throw std::runtime_error("bad strides");
            const size_t comma = std::min(w.find(',', p), w.size());
            d = expr_id(w.substr(p, comma - p));
            p = comma + 1;
        }
    }
    int64_t flags = 0;
    {
        const std::string_view f = ls.need();
        const auto r = std::from_chars(f.data(), f.data() + f.size(), flags);
        if (r.ec != std::errc() || r.ptr != f.data() + f.size() || flags < 0 || flags > 255) throw std::runtime_error("bad flags");
    }
    l.flags = uint8_t(flags);
    l.view_src = parse_ref(ls.need());
    w = ls.need();
    l.view_offs = w == "-" ? -1 : int32_t(expr_id(w));
    w = ls.need();
    if (w != "-") {
        size_t p = 0;
        while (true) {
            const size_t bar = w.find('|', p);
            l.src.push_back(parse_ref(w.substr(p, bar == std::string_view::npos ? std::string_view::npos : bar - p)));
            if (l.src.size() > gsrc::capacity) throw std::runtime_error("more than GGML_MAX_SRC = 10 sources");
            if (bar == std::string_view::npos) break;
            p = bar + 1;
        }
    }
    w = ls.need();
    if (w != "-") {
        size_t i = 0;
        for (size_t p = 0; p <= w.size();) {
            const size_t comma = std::min(w.find(',', p), w.size());
            const std::string_view x = w.substr(p, comma - p);
            p = comma + 1;
            if (i >= 16) throw std::runtime_error("too many op params");
            tparam & q = l.params[i++];
            if (x == "0") continue;
            if (x.empty()) throw std::runtime_error("bad op param");
            q.k = x[0];
            if (q.k == '=') q.v = to_i64(x.substr(1));
            else if (q.k == 'e') q.v = expr_id(x.substr(1));
            else throw std::runtime_error("bad op param");
        }
    }
    l.role = ls.need()[0];
    l.name = std::string(ls.rest());
    if (l.name.empty()) throw std::runtime_error("short tensor line");
    return l;
}

/// Parses one template file.
graph_template parse_template(std::string_view text) {
    graph_template t;
    t.var_names.assign(std::begin(k_var_names), std::end(k_var_names));
    std::vector<std::string> & names = t.var_names;
    // the lines split in place, and one line stream reset for each line: constructing a stream per line (its locale)
    // was most of the parse (124,000 lines in the embedded templates)
    std::string line, word;
    std::istringstream ls;
    for (size_t at = 0; at < text.size();) {
        const size_t eol = std::min(text.find('\n', at), text.size());
        const std::string_view lv = text.substr(at, eol - at);
        at = eol + 1;
        if (lv.empty() || lv[0] == '#') continue;
        if (lv.starts_with("t ")) { // a tensor line (most lines), its words read in place
            if (t.segs2.empty()) throw std::runtime_error("tensor outside a segment");
            t.segs2.back().push_back(parse_tline(lv.substr(2), t.exprs.size()));
            continue;
        }
        line.assign(lv);
        ls.clear();
        ls.str(line);
        ls >> word;
        if (word == "kvfit-graph") ls >> t.format;
        else if (word == "arch") ls >> t.arch;
        else if (word == "release") {
            while (ls >> word) t.releases.push_back(word);
        }
        else if (word == "key") ls >> t.key;
        else if (word == "model") std::getline(ls >> std::ws, t.model);
        else if (word == "expr") {
            size_t id = 0;
            std::string mode, c;
            ls >> id >> mode;
            if (id != t.exprs.size()) throw std::runtime_error("expr ids out of order");
            expr e;
            if (mode == "min" || mode == "max") {
                e.mode = mode == "min" ? 'm' : 'M';
                ls >> e.a >> e.b;
                if (!ls || e.a >= id || e.b >= id) throw std::runtime_error("bad min/max operands");
                t.exprs.push_back(std::move(e));
                continue;
            }
            ls >> c;
            if (mode != "e" && mode != "f" && mode != "c") throw std::runtime_error("bad expression mode");
            e.mode = mode.at(0);
            parse_fraction(c, e.num, e.den);
            while (ls >> word) {
                term tm;
                const size_t colon = word.find(':');
                parse_fraction(std::string_view(word).substr(0, colon), tm.num, tm.den);
                std::string_view vs = std::string_view(word).substr(colon + 1);
                while (!vs.empty()) {
                    const size_t star = vs.find('*');
                    const std::string_view v = vs.substr(0, star);
                    var_ref r;
                    if ((v.rfind("fl", 0) == 0 || v.rfind("ce", 0) == 0) && v.find('_') != std::string_view::npos &&
                        v.size() > 2 && v[2] >= '0' && v[2] <= '9') {
                        const size_t us = v.find('_');
                        r.q = uint32_t(to_i64(v.substr(2, us - 2)));
                        r.ceil = v[0] == 'c';
                        r.base = var_index(names, v.substr(us + 1));
                    } else {
                        r.base = var_index(names, v);
                    }
                    tm.vars.push_back(r);
                    vs = star == std::string_view::npos ? std::string_view() : vs.substr(star + 1);
                }
                e.terms.push_back(std::move(tm));
            }
            t.exprs.push_back(std::move(e));
        } else if (word == "seg" && t.format == 2) {
            size_t id = 0;
            ls >> id;
            if (id != t.segs2.size()) throw std::runtime_error("segment ids out of order");
            t.segs2.emplace_back();
        } else if (word == "t") {
            if (t.segs2.empty()) throw std::runtime_error("tensor outside a segment");
            const std::streamoff after_t = ls.tellg(); // "t" and its words after other spaces than one
            if (after_t < 0) throw std::runtime_error("short tensor line");
            t.segs2.back().push_back(parse_tline(std::string_view(line).substr(size_t(after_t)), t.exprs.size()));
        } else if (word == "kinds" || word == "roots_pre" || word == "roots_post" || word == "roots_layer") {
            if (t.variants2.empty()) throw std::runtime_error(word + " before a variant");
            variant2 & v = t.variants2.back();
            auto refs = [](std::string_view w) {
                std::vector<tref> out;
                if (w == "-") return out;
                size_t p = 0;
                while (p <= w.size()) {
                    const size_t c = w.find(',', p);
                    out.push_back(parse_ref(w.substr(p, c == std::string_view::npos ? std::string_view::npos : c - p)));
                    if (c == std::string_view::npos) break;
                    p = c + 1;
                }
                return out;
            };
            std::string item;
            while (ls >> item) {
                if (word == "roots_pre") v.roots_pre = refs(item);
                else if (word == "roots_post") v.roots_post = refs(item);
                else {
                    const size_t sep = word == "kinds" ? item.rfind('=') : item.find(':');
                    if (sep == std::string::npos) throw std::runtime_error("bad " + word + " item");
                    if (word == "kinds") {
                        const int64_t k = to_i64(std::string_view(item).substr(sep + 1));
                        if (k < 0 || size_t(k) >= t.segs2.size()) throw std::runtime_error("segment kind out of range");
                        v.kinds[item.substr(0, sep)] = uint32_t(k);
                    } else {
                        const int64_t k = to_i64(std::string_view(item).substr(0, sep));
                        if (k < 0 || size_t(k) >= t.segs2.size()) throw std::runtime_error("segment kind out of range");
                        v.roots_layer[uint32_t(k)] = refs(std::string_view(item).substr(sep + 1));
                    }
                }
            }
        } else if (word == "variant" && t.format == 2) {
            variant2 v;
            while (ls >> word && word != "global") {
                if (word.rfind("fa=", 0) == 0) v.fa = word == "fa=1";
                else if (word.rfind("kv=", 0) == 0) v.kv = word.substr(3);
                else if (word.rfind("st=", 0) == 0) v.st = word.substr(3);
                else if (word.rfind("rot=", 0) == 0) v.rot = word.substr(4);
            }
            ls >> v.global;
            if (!ls || v.global >= t.segs2.size()) throw std::runtime_error("bad variant line");
            t.variants2.push_back(std::move(v));
        } else if (word == "seg") {
            size_t id = 0;
            ls >> id;
            if (id != t.segs.size()) throw std::runtime_error("segment ids out of order");
            t.segs.emplace_back();
        } else if (word == "A" || word == "F" || word == "X") {
            if (t.segs.empty()) throw std::runtime_error("event outside a segment");
            event ev;
            ev.kind = word[0];
            if (ev.kind != 'A') ls >> ev.ref;
            if (ev.kind != 'F') {
                ls >> word;
                ev.type = parse_type(word);
                for (uint32_t & d : ev.ne) {
                    ls >> d;
                    if (d >= t.exprs.size()) throw std::runtime_error("expr id out of range");
                }
            }
            if (!ls) throw std::runtime_error("short event line");
            t.segs.back().push_back(ev);
        } else if (word == "variant") {
            variant v;
            while (ls >> word && word != "order") {
                if (word.rfind("fa=", 0) == 0) v.fa = word == "fa=1";
                else if (word.rfind("kv=", 0) == 0) v.kv = word.substr(3);
                else if (word.rfind("st=", 0) == 0) v.st = word.substr(3);
                else if (word.rfind("rs=", 0) == 0) {
                    std::string_view n = std::string_view(word).substr(3);
                    if (!n.empty() && n.back() == '+') {
                        v.rs_more = true;
                        n.remove_suffix(1);
                    }
                    const auto r = std::from_chars(n.data(), n.data() + n.size(), v.rs);
                    if (n.empty() || r.ec != std::errc() || r.ptr != n.data() + n.size())
                        throw std::runtime_error("bad rs= in a variant line");
                }
            }
            uint32_t s = 0;
            while (ls >> s) {
                if (s >= t.segs.size()) throw std::runtime_error("segment id out of range");
                v.order.push_back(s);
            }
            t.variants.push_back(std::move(v));
        }
    }
    return t;
}

/// One embedded template file, data/graphs/<arch>[+<model>][.<release>].txt, parsed on first use.
struct template_file {
    std::string arch;
    std::vector<std::string> releases; ///< from the file's `release` line (one file may serve several releases)
    int format = 1; ///< 2: a scheduler graph (`kvfit-graph 2` on the first line)
    std::string name; ///< <arch> or <arch>+<model>, the file name before the release
    std::string_view text;
    std::once_flag once;
    std::unique_ptr<graph_template> parsed;
    std::string error;

    bool has_release(const std::string & r) const { return std::find(releases.begin(), releases.end(), r) != releases.end(); }
};

/// The releases a template file's `release` line names (its header's first lines: kvfit's start-up parses no more).
std::vector<std::string> header_releases(std::string_view text) {
    std::vector<std::string> out;
    const size_t at = text.substr(0, 512).find("\nrelease ");
    if (at == std::string_view::npos) return out;
    std::string_view line = text.substr(at + 9);
    line = line.substr(0, line.find('\n'));
    while (!line.empty()) {
        const size_t sp = line.find(' ');
        if (sp != 0) out.emplace_back(line.substr(0, sp));
        if (sp == std::string_view::npos) break;
        line.remove_prefix(sp + 1);
    }
    return out;
}

/// The embedded template files by architecture and release, from their names and `release` lines only: kvfit's
/// start-up does not parse them, and a plan parses only its own architecture's.
std::vector<std::unique_ptr<template_file>> & template_files() {
    static std::vector<std::unique_ptr<template_file>> files = [] {
        std::vector<std::unique_ptr<template_file>> out;
        for (const embedded_file & f : embedded_files()) {
            std::string_view p = f.path;
            if (p.rfind("graphs/", 0) != 0 || p.size() < 11 || p.substr(p.size() - 4) != ".txt") continue;
            p = p.substr(7, p.size() - 11);
            auto tf = std::make_unique<template_file>();
            // <arch>[+<model>][.<release>]: the arch, a second recorded shape of one architecture, the release when
            // only one release records this graph (the `release` line is what counts)
            const std::string_view stem = p.substr(0, p.find('.'));
            tf->arch = std::string(stem.substr(0, stem.find('+')));
            tf->name = std::string(stem);
            tf->releases = header_releases(f.bytes);
            tf->text = f.bytes;
            tf->format = f.bytes.rfind("kvfit-graph 2", 0) == 0 ? 2 : 1;
            out.push_back(std::move(tf));
        }
        return out;
    }();
    return files;
}

/// The parsed template of one file; nullptr when it does not parse (a build defect: tests parse every file).
const graph_template * parsed(template_file & f) {
    std::call_once(f.once, [&f] {
        try {
            f.parsed = std::make_unique<graph_template>(parse_template(f.text));
            f.parsed->name = f.name;
        } catch (const std::exception & e) {
            f.error = e.what();
        }
    });
    return f.parsed.get();
}

int64_t floor_div(__int128 a, __int128 b) {
    __int128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return int64_t(q);
}

/// Value of expression e of template t; nullopt when an exact expression does not divide (a context outside what was
/// recorded) or a variable is unbound.
std::optional<int64_t> eval(const graph_template & t, const expr & e, const std::vector<int64_t> & v) {
    if (e.mode == 'm' || e.mode == 'M') {
        const auto x = eval(t, t.exprs[e.a], v), y = eval(t, t.exprs[e.b], v);
        if (!x || !y) return std::nullopt;
        return e.mode == 'm' ? std::min(*x, *y) : std::max(*x, *y);
    }
    int64_t den = e.den;
    for (const term & t : e.terms) den = std::lcm(den, t.den);
    __int128 sum = __int128(e.num) * (den / e.den);
    for (const term & t : e.terms) {
        __int128 p = __int128(t.num) * (den / t.den);
        for (const var_ref & r : t.vars) {
            int64_t x = v[size_t(r.base)];
            if (x < 0) return std::nullopt; // unbound
            if (r.q) x = r.ceil ? (x + r.q - 1) / r.q : x / r.q;
            p *= x;
        }
        sum += p;
    }
    if (e.mode == 'e') {
        if (sum % den != 0) return std::nullopt;
        return int64_t(sum / den);
    }
    if (e.mode == 'f') return floor_div(sum, den);
    return -floor_div(-sum, den);
}

std::string kv_class(ggml_type k, ggml_type v) {
    const bool qk = ggml_is_quantized(k), qv = ggml_is_quantized(v);
    if (qk && qv) return "quant";
    if (qk && v == ggml_type::f16) return "quantk";
    if (qv && k == ggml_type::f16) return "quantv";
    if (k == ggml_type::f16 && v == ggml_type::f16) return "f16";
    return std::string(ggml_traits(k).name) + "/" + std::string(ggml_traits(v).name);
}

void fnv(uint64_t & h, uint64_t x) {
    for (int i = 0; i < 8; ++i) {
        h ^= (x >> (8 * i)) & 0xff;
        h *= 1099511628211ull;
    }
}

} // namespace

std::string llamacpp_graph_key(const model_desc & m) {
    uint64_t h = 1469598103934665603ull;
    for (char ch : m.gguf_architecture) fnv(h, uint8_t(ch));
    for (uint64_t x : {uint64_t(m.n_layer), uint64_t(m.n_embd), uint64_t(m.n_swa), uint64_t(m.n_chunk),
                       uint64_t(m.n_pos_per_embd), uint64_t(m.n_embd_inp), uint64_t(m.moe_latent), uint64_t(m.n_hc),
                       uint64_t(m.n_embd_ple), uint64_t(m.tied_embeddings), uint64_t(m.ffn_gated), uint64_t(m.kv_lora_rank),
                       uint64_t(m.n_rot_mla), uint64_t(m.q_lora_rank), uint64_t(m.head_dim_qk_nope), uint64_t(m.head_dim_v_mla),
                       uint64_t(m.indexer_n_head), uint64_t(m.indexer_top_k), uint64_t(m.ssm_d_conv), uint64_t(m.ssm_d_inner),
                       uint64_t(m.ssm_d_state), uint64_t(m.ssm_n_group), uint64_t(m.ssm_n_head), uint64_t(m.ssm_head_dim),
                       uint64_t(m.rwkv_head_size), uint64_t(m.rec_kind), uint64_t(m.n_expert), uint64_t(m.n_expert_used),
                       uint64_t(m.n_expert_shared), uint64_t(m.n_ff_exp), uint64_t(m.n_expert_latent), uint64_t(m.attn_res_block),
                       // the shared experts' width as llama.cpp builds them: n_ff_exp x n_expert_shared unless stated
                       uint64_t(m.n_ff_shexp ? m.n_ff_shexp : uint64_t(m.n_expert_shared) * m.n_ff_exp)}) {
        fnv(h, x);
    }
    for (const auto & [name, value] : m.graph_dims) {
        for (char ch : name) fnv(h, uint8_t(ch));
        fnv(h, value);
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        for (uint64_t x : {uint64_t(m.n_head[il]), uint64_t(m.n_head_kv[il]), uint64_t(m.head_dim_k[il]),
                           uint64_t(m.head_dim_v[il]), uint64_t(m.n_ff[il]), uint64_t(il < m.is_moe.size() ? m.is_moe[il] : 0)}) {
            fnv(h, x);
        }
        for (const layer_cache & c : m.caches[il]) {
            for (uint64_t x : {uint64_t(c.kind), uint64_t(c.n_head), uint64_t(c.head_dim_k), uint64_t(c.head_dim_v),
                               uint64_t(c.window), uint64_t(c.ratio)}) {
                fnv(h, x);
            }
        }
        fnv(h, 0xffff);
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::string release_tag(const llamacpp_settings & s) { return s.release == llamacpp_release::v0_5_0 ? "v0.5.0" : "5b4ebc5"; }

namespace {

/// The context's variables, as the trace named them (tools/graph_template/gtrace.py canon): the reserve graph's (tg:
/// the token-generation graph llama.cpp reserves too, graph_reserve(n_seqs, n_seqs, n_seqs): one token per sequence).
std::vector<int64_t> bind_vars(const graph_template & t, const model_desc & m, const llamacpp_settings & s,
                               const llamacpp_context & c, bool tg) {
    const std::vector<std::string> & names = t.var_names;
    std::vector<int64_t> v(names.size(), -1);
    const compute_graph g = compute_graph_of(m, s, c);
    const std::vector<kv_cache_buffer> caches = llamacpp_kv_caches(m, s, c);
    const uint32_t n_stream = c.n_stream;
    const uint64_t T = tg ? g.n_seq : g.n_tokens;
    v[0] = int64_t(T);
    v[1] = int64_t(tg ? g.n_seq : g.n_outputs);
    v[2] = int64_t(g.n_seq);
    v[3] = int64_t(n_stream);
    v[4] = int64_t(T / std::max<uint32_t>(1, n_stream));
    v[5] = int64_t(m.n_vocab);
    v[6] = int64_t(c.n_ctx_seq);
    v[7] = int64_t(c.n_ctx);
    v[8] = int64_t(c.n_rs_seq);
    v[9] = int64_t(T / std::max<uint32_t>(1, g.n_seq));
    for (const kv_cache_buffer & kb : caches) {
        for (size_t i = k_n_fixed; i < names.size(); ++i) {
            if (names[i] == "cells_" + kb.name) v[i] = int64_t(kb.cells_per_stream);
        }
    }
    return v;
}

/// The template recorded for m's graph in s's release and the variant for s's flash attention and K/V types; the
/// reason in `why` when there is none.
/// The release as template files name it (data/graphs/<arch>.<release>.txt).

/// The stream layout as a template's st= names it: "1" one sequence, "N" N streams (one per sequence), "1u" one unified
/// stream over several sequences.
std::string stream_key(uint32_t n_stream, uint32_t n_seq) {
    if (n_stream > 1) return std::to_string(n_stream);
    return n_seq > 1 ? "1u" : "1";
}

const variant * find_variant(const model_desc & m, const llamacpp_settings & s, bool fa, uint32_t n_rs,
                             const std::string & st, const graph_template ** out, std::string * why) {
    const std::string release = release_tag(s);
    const graph_template * tp = nullptr;
    bool arch_seen = false;
    std::string key;
    // a config.json whose names kvfit does not know (no llama.cpp arch; its layout read from its keys) is replayed when
    // it has every dimension of a recorded model: its key taken with that template's arch equals the template's
    const bool unnamed = m.gguf_architecture.empty();
    const std::string arch = unnamed ? "this model's architecture" : m.gguf_architecture;
    std::string broken; // a template of this architecture and release that failed to parse: "<name>: <error>"
    for (auto & f : template_files()) {
        if (f->format != 1 || (!unnamed && f->arch != m.gguf_architecture) || !f->has_release(release)) continue;
        arch_seen = true;
        std::string k;
        if (unnamed) {
            model_desc named = m;
            named.gguf_architecture = f->arch;
            k = llamacpp_graph_key(named);
        } else {
            if (key.empty()) key = llamacpp_graph_key(m);
            k = key;
        }
        const graph_template * t = parsed(*f);
        if (t != nullptr && t->format == 1 && t->key == k) tp = t;
        if (t == nullptr && why && broken.empty()) broken = f->name + ": " + f->error;
    }
    if (unnamed && key.empty()) key = llamacpp_graph_key(m);
    if (tp == nullptr && !broken.empty()) { // loud: a recorded graph that does not parse is a defect, not "none"
        if (why) *why = "the recorded graph " + broken + " does not parse";
        return nullptr;
    }
    if (tp == nullptr) {
        if (why) {
            *why = arch_seen && !unnamed ? "no graph recorded for this model shape (" + arch + " graph " + key + ")"
                                         : "no graph recorded for " + arch + " in llama.cpp " + release;
        }
        return nullptr;
    }
    const std::string kv = kv_class(s.type_k, s.type_v);
    std::vector<std::string> counts; // the snapshot counts recorded for this fa and K/V class, for the reason
    std::vector<std::string> layouts; // the stream layouts recorded for this fa, K/V class and snapshot count
    for (const variant & v : tp->variants) {
        if (v.fa != fa || v.kv != kv) continue;
        const bool rs_ok = v.rs == n_rs || (v.rs_more && n_rs > v.rs);
        if (rs_ok && (v.st.empty() || v.st == st)) {
            *out = tp;
            return &v;
        }
        if (rs_ok) layouts.push_back(v.st);
        const std::string count = std::to_string(v.rs) + (v.rs_more ? " or more" : "");
        if (v.rs > 0 && std::find(counts.begin(), counts.end(), count) == counts.end()) counts.push_back(count);
    }
    if (why) {
        const auto layout = [](const std::string & k) {
            return k == "1" ? std::string("one sequence")
                 : k == "1u" ? std::string("a unified stream over several sequences")
                             : k + " streams";
        };
        const auto join = [](const std::vector<std::string> & items, const char * sep) {
            std::string out;
            for (const std::string & i : items) out += (out.empty() ? "" : sep) + i;
            return out;
        };
        std::vector<std::string> recorded;
        for (const std::string & k : layouts) recorded.push_back(layout(k));
        *why = "no " + arch + " graph recorded for " + kv + " K/V with flash attention " + (fa ? "on" : "off") +
               (n_rs == 0 ? std::string()
                          : " and " + std::to_string(n_rs) + " recurrent-state snapshots (recorded: " +
                                (counts.empty() ? std::string("none") : join(counts, ", ")) + ")") +
               (layouts.empty() ? std::string()
                                : " with " + layout(st) + " (the stream layout changes this graph; recorded: " +
                                      join(recorded, "; ") + ")");
    }
    return nullptr;
}

} // namespace

bool replay_recorded_for_arch(const model_desc & m, const llamacpp_settings & s) {
    const std::string release = release_tag(s);
    if (m.gguf_architecture.empty()) return false;
    for (auto & f : template_files()) {
        if (f->format == 1 && f->arch == m.gguf_architecture && f->has_release(release)) return true;
    }
    return false;
}

bool replay_covers(const model_desc & m, const llamacpp_settings & s, std::string * why) {
    const graph_template * tp = nullptr;
    // the stream layout of llamacpp_context_size: one unified stream, else one per sequence
    const uint32_t n_stream = s.kv_unified ? 1 : std::max<uint32_t>(1, s.n_seq);
    return find_variant(m, s, s.flash_attn != flash_attn_mode::off, 0, stream_key(n_stream, s.n_seq), &tp, why) != nullptr;
}

std::optional<graph_replay_result> replay_compute(const model_desc & m, const llamacpp_settings & s,
                                                  const llamacpp_context & c, std::string * why) {
    const graph_template * tp = nullptr;
    // recurrent-state snapshots (n_rs_seq > 0: MTP targets) add state inputs and copies to the graph: own variants
    const variant * var = find_variant(m, s, c.flash_attn, c.n_rs_seq, stream_key(c.n_stream, c.n_seq), &tp, why);
    if (var == nullptr) return std::nullopt;

    const std::vector<int64_t> v = bind_vars(*tp, m, s, c, false);

    dyn_tallocr alloc(32); // the CPU buffer type's alignment
    std::vector<uint64_t> offsets, sizes;
    for (uint32_t sid : var->order) {
        const int64_t base = int64_t(offsets.size());
        for (const event & ev : tp->segs[sid]) {
            if (ev.kind == 'F') {
                const int64_t i = base + ev.ref;
                if (i < 0 || i >= int64_t(offsets.size())) return std::nullopt;
                alloc.free(offsets[size_t(i)], sizes[size_t(i)]);
                continue;
            }
            const ggml_type type = ev.type == -2 ? s.type_k : ev.type == -3 ? s.type_v : ggml_type(ev.type);
            uint64_t ne[4];
            for (int d = 0; d < 4; ++d) {
                const auto x = eval(*tp, tp->exprs[ev.ne[d]], v);
                if (!x || *x < 0) {
                    if (why) *why = "the recorded graph does not cover this context";
                    return std::nullopt;
                }
                ne[d] = uint64_t(*x);
            }
            const uint64_t bytes = ggml_row_size(type, ne[0]) * ne[1] * ne[2] * ne[3];
            if (ev.kind == 'A') {
                offsets.push_back(alloc.alloc(bytes));
                sizes.push_back(bytes);
            } else { // X: the block of ref keeps `bytes`, its tail is freed
                const int64_t i = base + ev.ref;
                if (i < 0 || i >= int64_t(offsets.size())) return std::nullopt;
                const uint64_t have = alloc.aligned(sizes[size_t(i)]), keep = alloc.aligned(bytes);
                if (have > keep) {
                    alloc.free(offsets[size_t(i)] + keep, have - keep);
                    sizes[size_t(i)] = bytes;
                }
            }
        }
    }
    graph_replay_result r;
    r.bytes = alloc.max_size();
    r.variant = tp->name + " " + release_tag(s) + " fa=" + (var->fa ? "1" : "0") + " kv=" + var->kv + (var->rs > 0 ? " rs=" + std::to_string(var->rs) + (var->rs_more ? "+" : "") : "") +
                 (var->st.empty() ? "" : " st=" + var->st);
    return r;
}


namespace {

/// The per-search skeleton of a format-2 reserve graph: everything of the instance that does not depend on the
/// context (tensor names, ops, flags, types, sources, views, weight placement keys, the leaf and node order, the
/// variant), built once per model and settings, with per tensor what a context re-evaluates: its shapes, strides, view
/// offset and op parameters. The graph's topology is the template's segments for the model's layer kinds and the model's
/// weights; only bind_vars' context variables (T, n_ctx, cells_*, ...) change between the probes of a search, and they
/// enter the shapes alone. No answer is kept: every probe evaluates its own shapes.
struct graph_skeleton {
    // what the skeleton was built from (compared in full, no hash): the template and variant, the cache types, the
    // model's layer kinds and per-layer variables, its weights and the facts fill reads of it
    const graph_template * tp = nullptr;
    const variant2 * var = nullptr;
    ggml_type type_k = ggml_type::f16, type_v = ggml_type::f16;
    std::vector<uint32_t> kind;
    std::vector<std::vector<std::pair<size_t, int64_t>>> layer_vars; ///< per layer: its l_* bindings (variable, value)
    std::vector<weight_tensor> weights;
    bool tied = false;
    uint32_t n_layer = 0;

    /// How a probe completes tensor i: e_params (a model weight: op parameters), e_weight (a weight of a model that
    /// lists no tensors: its recorded shape, then op parameters), e_full (a computed tensor: shape, strides, view
    /// offset, op parameters), c_params / c_full (a tensor of a layer alike an earlier one: its view offset and op
    /// parameters, and for c_full its shape and strides too, copied from that layer's tensor `from`).
    enum class step : uint8_t { e_params, e_weight, e_full, c_params, c_full };
    graph_instance inst;          ///< shapes of computed tensors left for the probe
    std::vector<step> steps;
    std::vector<int32_t> from;    ///< c_*: the alike tensor of the earlier layer
    std::vector<const tline *> line;
    std::vector<uint32_t> distinct; ///< the layers whose tensors are evaluated (their own first alike), in order
    /// the first structural failure, in fill's order: the tensor it stops at (n: none), whether its shapes are
    /// evaluated first (a source that does not resolve) and the reason; a failure of the whole graph after every tensor
    size_t fail_at = 0;
    bool fail_after_eval = false, fail_if_empty = false, post_fail = false;
    std::string fail_why;
};

/// The variable index of each of the template's non-fixed variable names (per template: they are distinct, var_index).
const std::unordered_map<std::string_view, size_t> & var_index_of(const graph_template & tp) {
    thread_local const graph_template * last = nullptr;
    thread_local std::unordered_map<std::string_view, size_t> at;
    if (last != &tp) {
        at.clear();
        at.reserve(tp.var_names.size());
        for (size_t i = k_n_fixed; i < tp.var_names.size(); ++i) at.emplace(tp.var_names[i], i);
        last = &tp;
    }
    return at;
}

/// Builds the skeleton of the key fields already set in `sk` (tp, var, kind, layer_vars, weights, tied, n_layer, the
/// cache types), with the structural part of instantiate_graph's fill: the same order, the same failures.
void build_skeleton(graph_skeleton & sk) {
    const graph_template & tp = *sk.tp;
    const variant2 & var = *sk.var;
    const size_t n_layers = sk.kind.size();
    std::vector<size_t> base(n_layers + 1);
    size_t n = tp.segs2[var.global].size();
    for (size_t il = 0; il < n_layers; ++il) {
        base[il] = n;
        n += tp.segs2[sk.kind[il]].size();
    }
    graph_instance & out = sk.inst;
    out.g.t.assign(n, gtensor{});
    out.layer.assign(n, -1);
    out.weight.assign(n, 0);
    out.cache.assign(n, 0);
    sk.steps.assign(n, graph_skeleton::step::e_full);
    sk.from.assign(n, -1);
    sk.line.assign(n, nullptr);
    sk.distinct.clear();
    sk.fail_at = n, sk.fail_after_eval = sk.fail_if_empty = sk.post_fail = false;
    sk.fail_why.clear();
    bool bad_ref = false;
    auto resolve = [&](const tref & r, int32_t il) -> int32_t {
        switch (r.k) {
        case '-': return -1;
        case 'g': return r.idx < tp.segs2[var.global].size() ? int32_t(r.idx) : (bad_ref = true, -1);
        case 's':
        case 'r':
        case 'L': {
            const int64_t l = r.k == 's' ? il : r.k == 'r' ? int64_t(il) + r.layer : r.layer < 0 ? int64_t(n_layers) + r.layer : r.layer;
            if (l < 0 || size_t(l) >= n_layers) return bad_ref = true, -1;
            const size_t seg_n = tp.segs2[sk.kind[size_t(l)]].size();
            if (r.from_end ? (r.idx == 0 || r.idx > seg_n) : r.idx >= seg_n) return bad_ref = true, -1;
            return int32_t(base[size_t(l)] + (r.from_end ? seg_n - r.idx : r.idx));
        }
        }
        return -1;
    };
    std::unordered_map<std::string_view, const weight_tensor *> weights; // hashed: a GGUF lists hundreds of tensors
    weights.reserve(sk.weights.size());
    for (const weight_tensor & w : sk.weights) weights.emplace(w.name, &w);
    const auto stop = [&](size_t at, bool after_eval, bool if_empty, std::string why) {
        sk.fail_at = at, sk.fail_after_eval = after_eval, sk.fail_if_empty = if_empty, sk.fail_why = std::move(why);
        return false;
    };
    // one tensor: from < 0 filled from its line (its shapes evaluated by the probe), else alike the tensor `from` of an
    // earlier layer of the same kind and the same variables (its shapes copied by the probe)
    auto place = [&](const tline & l, size_t at, int32_t il, int32_t from) -> bool {
        gtensor & t = out.g.t[at];
        sk.line[at] = &l;
        sk.from[at] = from;
        t.op = l.op;
        t.flags = l.flags;
        t.name = l.name;
        if (il >= 0) {
            for (size_t p = t.name.find("{L}"); p != std::string::npos; p = t.name.find("{L}")) t.name.replace(p, 3, std::to_string(il));
            // "{L+k}": a tensor named for a later layer (glm-dsa's shared top-k, named by the last layer that reads it:
            // graph_shape.cpp top_k_sharing; tools/graph_template/graph2.py canon_name)
            for (size_t p = t.name.find("{L+"); p != std::string::npos; p = t.name.find("{L+", p + 1)) {
                const size_t e = t.name.find('}', p);
                int32_t k = 0;
                if (e == std::string::npos) break;
                if (std::from_chars(t.name.data() + p + 3, t.name.data() + e, k).ec != std::errc()) break;
                t.name.replace(p, e + 1 - p, std::to_string(il + k));
            }
        }
        const std::string & name = t.name;
        out.layer[at] = il;
        if (l.type == -4) { // a weight: the model's own tensor
            auto it = weights.find(name);
            // a tied head: llama.cpp creates output.weight as token_embd again (TENSOR_DUPLICATED), in the output's buffer
            if (it == weights.end() && name == "output.weight" && sk.tied) it = weights.find("token_embd.weight");
            if (it != weights.end()) {
                t.type = it->second->type;
                for (size_t d = 0; d < 4; ++d) t.ne[d] = int64_t(it->second->ne[d]);
                t.nb = contiguous_nb(t.type, t.ne);
                sk.steps[at] = from < 0 ? graph_skeleton::step::e_params : graph_skeleton::step::c_params;
            } else if (sk.weights.empty() && (from >= 0 || l.weight_type >= 0)) {
                // a model that lists no tensors (config.json, the catalog): the recorded type and shape. A leaf: it
                // sizes no compute buffer; its place (weight_device, by its name) places its users
                t.type = from >= 0 ? out.g.t[size_t(from)].type : ggml_type(l.weight_type);
                sk.steps[at] = from < 0 ? graph_skeleton::step::e_weight : graph_skeleton::step::c_full;
            } else {
                return stop(at, false, false, "the recorded graph reads the weight " + name + ", which the model does not have");
            }
            out.weight[at] = 1;
        } else {
            t.type = l.type == -2 ? sk.type_k : l.type == -3 ? sk.type_v : ggml_type(l.type);
            out.cache[at] = l.role == 'k';
            sk.steps[at] = from < 0 ? graph_skeleton::step::e_full : graph_skeleton::step::c_full;
        }
        if (from < 0) {
            for (size_t p = 0; p < 16; ++p) {
                if (l.params[p].k == '=') t.params[p] = int32_t(l.params[p].v);
            }
        }
        t.view_src = resolve(l.view_src, il);
        for (const tref & r : l.src) t.src.push_back(resolve(r, il));
        if (bad_ref) return stop(at, true, true, "the recorded graph does not cover this context");
        return true;
    };
    bool ok = true;
    const auto & glob = tp.segs2[var.global];
    for (size_t i = 0; i < glob.size() && ok; ++i) ok = place(glob[i], i, -1, -1);
    // the layers that are their own first alike, in order: a layer is compared with those alone (the first of them
    // that matches is the first matching layer). The l_* variables are bound by the layer alone (bind_vars leaves them
    // unbound, graph_dims names none of them), so two layers are alike in every context or in none
    for (size_t il = 0; il < n_layers && ok; ++il) {
        size_t from = il;
        for (const uint32_t j : sk.distinct) {
            if (sk.kind[j] == sk.kind[il] && sk.layer_vars[j] == sk.layer_vars[il]) {
                from = j;
                break;
            }
        }
        if (from == il) sk.distinct.push_back(uint32_t(il));
        const auto & seg = tp.segs2[sk.kind[il]];
        for (size_t i = 0; i < seg.size() && ok; ++i) {
            ok = place(seg[i], base[il] + i, int32_t(il), from == il ? -1 : int32_t(base[from] + i));
        }
    }
    if (!ok) return;
    // a layer weight of the model (blk.<il>., il < n_layer) that the recorded graph never reads: the model's layer
    // builds ops no recorded shape had, whatever its signature says (gemma4 without attention_k_eq_v: a V projection on
    // the full-attention layers, models/gemma4.cpp `wv ? build_lora_mm(wv, cur) : Kcur`). NextN blocks (il >= n_layer)
    // are outside the target graph where the template did not record them.
    if (!sk.weights.empty()) {
        std::unordered_set<std::string_view> read;
        for (size_t i = 0; i < n; ++i) {
            if (out.weight[i]) read.emplace(out.g.t[i].name);
        }
        for (const weight_tensor & w : sk.weights) {
            if (w.name.rfind("blk.", 0) != 0) continue;
            const size_t dot = w.name.find('.', 4);
            uint32_t il = 0;
            const auto [p, ec] = std::from_chars(w.name.data() + 4, w.name.data() + std::min(dot, w.name.size()), il);
            if (ec != std::errc() || il >= sk.n_layer || read.count(w.name)) continue;
            sk.post_fail = true, sk.fail_why = "the recorded graph does not read the model's weight " + w.name;
            return;
        }
    }
    // the node and leaf order: ggml_visit_parents' walk (ggml.c ggml_visit_parents_graph: sources in order, a tensor
    // after its sources, GGML_OP_NONE a leaf) from the roots llama.cpp expanded, in order
    std::vector<uint8_t> visited(n, 0);
    auto walk = [&](int32_t root) {
        std::vector<std::pair<int32_t, size_t>> stack{{root, 0}};
        while (!stack.empty()) {
            auto & [x, k] = stack.back();
            if (k == 0) {
                if (visited[size_t(x)]) { stack.pop_back(); continue; }
                visited[size_t(x)] = 1;
            }
            const gtensor & t = out.g.t[size_t(x)];
            if (k < t.src.size()) {
                const int32_t src = t.src[k++];
                if (src >= 0 && !visited[size_t(src)]) stack.emplace_back(src, 0);
                continue;
            }
            (t.op == gop::none ? out.g.leafs : out.g.nodes).push_back(x);
            stack.pop_back();
        }
    };
    for (const tref & r : var.roots_pre) walk(resolve(r, -1));
    for (size_t il = 0; il < n_layers; ++il) {
        const auto it = var.roots_layer.find(sk.kind[il]);
        if (it == var.roots_layer.end()) continue;
        for (const tref & r : it->second) walk(resolve(r, int32_t(il)));
    }
    for (const tref & r : var.roots_post) walk(resolve(r, -1));
    if (bad_ref) sk.post_fail = true, sk.fail_why = "the recorded graph's roots do not resolve";
}

} // namespace

std::optional<graph_instance> instantiate_graph(const model_desc & m, const llamacpp_settings & s, const llamacpp_context & c,
                                                bool tg, std::string * why) {
    const std::string release = release_tag(s);
    const graph_template * tp = nullptr;
    std::string broken;
    for (auto & f : template_files()) {
        if (f->format != 2 || f->arch != m.gguf_architecture || !f->has_release(release)) continue;
        const graph_template * t = parsed(*f);
        if (t != nullptr && t->format == 2) tp = t;
        if (t == nullptr && broken.empty()) broken = f->name + ": " + f->error;
    }
    if (tp == nullptr && !broken.empty()) { // loud: a recorded graph that does not parse is a defect, not "none"
        if (why) *why = "the recorded scheduler graph " + broken + " does not parse";
        return std::nullopt;
    }
    if (tp == nullptr) {
        if (why) *why = "no scheduler graph recorded for " + (m.gguf_architecture.empty() ? std::string("this architecture") : m.gguf_architecture) + " in llama.cpp " + release;
        return std::nullopt;
    }
    // recurrent-state snapshots of compressor states (an MTP target's n_rs_seq rollback copies: DeepSeek-V4 keeps
    // n_stream x (1 + n_rs_seq) planes of each compressor state, llama-kv-cache-dsv4.cpp, and the graph's state
    // inputs and copies grow with them): graph2.py's design records no snapshots, so such a context is not this
    // template's; the reserve-graph replay (format 1, its rs=2+ variants) or the estimate takes it, named
    if (c.n_rs_seq > 0) {
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            for (const layer_cache & k : m.caches[il]) {
                if (k.kind != cache_kind::compressed) continue;
                if (why) *why = "the scheduler graph of " + tp->arch + " was recorded without recurrent-state snapshots (n_rs_seq " +
                                std::to_string(c.n_rs_seq) + ", an MTP target's)";
                return std::nullopt;
            }
        }
    }
    // llama.cpp always rotates K where a DeepSeek lightning indexer is as wide as the attention head
    // (llama-kv-cache.cpp:326-331 v0.5.0, "always create Hadamard rotation tensors for DeepSeek lightning indexers":
    // n_embd_head_k_full == indexer_head_size), unquantized caches too: a graph graph2.py's variants do not key
    // (no recorded shape has it: tests/conformance/shapes.mjs deepseek4), so it is named, not replayed
    for (uint32_t il = 0; il < m.n_layer && il < m.head_dim_k.size(); ++il) {
        for (const layer_cache & k : m.caches[il]) {
            if (k.kind != cache_kind::indexer || k.head_dim_k != m.head_dim_k[il]) continue;
            if (why) *why = "layer " + std::to_string(il) + "'s heads are as wide as its lightning indexer's (" + std::to_string(k.head_dim_k) +
                            "), where llama.cpp always rotates K: not recorded for " + tp->arch;
            return std::nullopt;
        }
    }
    const compute_graph cg = compute_graph_of(m, s, c);
    const std::string kv = kv_class(s.type_k, s.type_v);
    // format 2 records one graph for every stream count above one (3 and 4 streams: one topology, n_stream a variable)
    const std::string st = c.n_stream > 1 ? "N" : c.n_seq > 1 ? "1u" : "1";
    const std::string rot = cg.rot_k || cg.rot_v ? std::string(cg.rot_k ? "k" : "") + (cg.rot_v ? "v" : "") : "-";
    const variant2 * var = nullptr;
    for (const variant2 & v : tp->variants2) {
        if (v.fa == c.flash_attn && v.kv == kv && v.st == st && v.rot == rot) var = &v;
    }
    if (var == nullptr) {
        // say which of the variant's keys no recording has: the rotation (a quantized cache of heads that are not a
        // multiple of 64 is not rotated, llama_kv_cache::build_input_k_rot), else the stream layout, else the types
        bool other_rot = false, other_st = false;
        for (const variant2 & v : tp->variants2) {
            if (v.fa != c.flash_attn || v.kv != kv) continue;
            other_rot |= v.st == st;
            other_st = true;
        }
        if (why) {
            *why = "no scheduler graph recorded for " + kv + " K/V with flash attention " + (c.flash_attn ? "on" : "off") +
                   (rot != "-" ? " and rotated caches" : "") +
                   (other_rot ? (rot == "-" ? std::string(" with caches not rotated (K/V heads not a multiple of 64 wide: "
                                                          "llama.cpp rotates a quantized cache's heads only then)")
                                            : std::string(" with this rotation"))
                    : other_st ? std::string(" in this stream layout") : std::string());
        }
        return std::nullopt;
    }
    // each layer's segment kind by its signature. NextN/MTP blocks (signature "x") are in the graph only where the
    // template recorded them: the target graph of qwen35 builds n_layer blocks (models/qwen35.cpp; the MTP head runs in
    // a context of its own, ctx_type mtp), measured on qwen35-9b-mtp (tests/test_cuda_sched.cpp)
    bool nextn_in_graph = false;
    for (const auto & [sig, k] : var->kinds) nextn_in_graph |= sig.rfind("x", 0) == 0;
    const size_t n_layers = size_t(m.n_layer) + (nextn_in_graph ? m.n_layer_mtp : 0);
    std::vector<uint32_t> kind(n_layers);
    for (size_t il = 0; il < n_layers; ++il) {
        const std::string sig = graph_layer_sig(m, uint32_t(il));
        const auto it = var->kinds.find(sig);
        if (it == var->kinds.end()) {
            if (why) *why = "layer " + std::to_string(il) + "'s kind (" + sig + ": " + describe_layer_sig(sig) + ") was not recorded for " + tp->arch;
            return std::nullopt;
        }
        kind[il] = it->second;
    }
    // the model's and each layer's own variables (l_*), bound through the template's index of names
    const std::unordered_map<std::string_view, size_t> & var_at = var_index_of(*tp);
    std::vector<std::vector<std::pair<size_t, int64_t>>> layer_vars(n_layers);
    for (size_t il = 0; il < n_layers; ++il) {
        for (const auto & [k, x] : graph_layer_dims(m, uint32_t(il))) {
            if (const auto it = var_at.find(k); it != var_at.end()) layer_vars[il].emplace_back(it->second, x);
        }
    }
    // the skeleton of this model and these settings: the last few kept per thread (a search's probes, the prompt and
    // the token graph, and a report's alternatives ask for the same ones), each compared in full with what it was
    // built from
    thread_local std::array<std::unique_ptr<graph_skeleton>, 4> kept;
    thread_local size_t next_slot = 0;
    graph_skeleton * sk = nullptr;
    for (auto & k : kept) {
        if (k && k->tp == tp && k->var == var && k->type_k == s.type_k && k->type_v == s.type_v && k->tied == m.tied_embeddings &&
            k->n_layer == m.n_layer && k->kind == kind && k->layer_vars == layer_vars && k->weights == m.weights.tensors) {
            sk = k.get();
            break;
        }
    }
    if (sk == nullptr) {
        auto & slot = kept[next_slot];
        next_slot = (next_slot + 1) % kept.size();
        slot.reset(); // a skeleton is kept only once built whole
        auto built = std::make_unique<graph_skeleton>();
        built->tp = tp, built->var = var, built->type_k = s.type_k, built->type_v = s.type_v, built->tied = m.tied_embeddings;
        built->n_layer = m.n_layer, built->kind = std::move(kind), built->layer_vars = std::move(layer_vars);
        built->weights = m.weights.tensors;
        build_skeleton(*built);
        built->inst.variant = tp->name + " " + release + " graph fa=" + (var->fa ? "1" : "0") + " kv=" + var->kv +
                              " st=" + var->st + (var->rot != "-" ? " rot=" + var->rot : "");
        slot = std::move(built);
        sk = slot.get();
    }
    // the variables: the context's, the model's dimensions, and per evaluated layer its own
    std::vector<int64_t> v = bind_vars(*tp, m, s, c, tg);
    for (const auto & [k, x] : graph_dims(m)) {
        if (const auto it = var_at.find(k); it != var_at.end()) v[it->second] = x;
    }
    std::vector<std::vector<int64_t>> lv(sk->kind.size());
    for (const uint32_t il : sk->distinct) {
        lv[il] = v;
        for (const auto & [i, x] : sk->layer_vars[il]) lv[il][i] = x;
    }
    // the probe's part: each tensor's shapes, in fill's order (the first failure in that order is the one reported)
    const size_t n = sk->inst.g.t.size();
    graph_instance out = sk->inst;
    using step = graph_skeleton::step;
    for (size_t at = 0; at < n; ++at) {
        if (at == sk->fail_at && !sk->fail_after_eval) break;
        const tline & l = *sk->line[at];
        gtensor & t = out.g.t[at];
        const step sp = sk->steps[at];
        if (sp == step::c_params || sp == step::c_full) {
            const gtensor & f = out.g.t[size_t(sk->from[at])];
            if (sp == step::c_full) t.ne = f.ne, t.nb = f.nb;
            t.view_offs = f.view_offs, t.params = f.params;
        } else {
            const int32_t il = out.layer[at];
            const std::vector<int64_t> & vars = il < 0 ? v : lv[size_t(il)];
            auto ev = [&](uint32_t id) -> std::optional<int64_t> { return eval(*tp, tp->exprs[id], vars); };
            const std::string & name = t.name;
            if (sp == step::e_weight) {
                for (size_t d = 0; d < 4; ++d) {
                    const auto x = ev(l.ne[d]);
                    if (!x || *x <= 0) {
                        if (why) *why = "the recorded graph's weight " + name + " has no shape for this model";
                        return std::nullopt;
                    }
                    t.ne[d] = *x;
                }
                t.nb = contiguous_nb(t.type, t.ne);
            } else if (sp == step::e_full) {
                const auto fail = [&](const char * what) {
                    if (why) *why = "the recorded graph's " + name + " " + what + " does not evaluate for this model and context";
                    return std::nullopt;
                };
                for (size_t d = 0; d < 4; ++d) {
                    const auto x = ev(l.ne[d]);
                    if (!x || *x < 0) return fail("shape");
                    t.ne[d] = *x;
                }
                const ggml_type_traits & tr = ggml_traits(t.type);
                if (l.nb_contiguous) {
                    t.nb = contiguous_nb(t.type, t.ne);
                } else {
                    for (size_t d = 0; d < 4; ++d) {
                        const auto x = ev(l.nb[d]);
                        if (!x || *x < 0) return fail("strides");
                        t.nb[d] = uint64_t(*x) * tr.type_size / tr.block_size;
                    }
                }
                if (l.view_offs >= 0) {
                    const auto x = ev(uint32_t(l.view_offs));
                    if (!x || *x < 0) return fail("view offset");
                    t.view_offs = uint64_t(*x) * tr.type_size / tr.block_size;
                }
            }
            for (size_t p = 0; p < 16; ++p) {
                if (l.params[p].k != 'e') continue;
                const auto x = ev(uint32_t(l.params[p].v));
                if (!x) {
                    if (why) *why = "the recorded graph's " + name + " op parameter does not evaluate for this model";
                    return std::nullopt;
                }
                t.params[p] = int32_t(*x);
            }
        }
        if (at == sk->fail_at) break;
    }
    if (sk->fail_at < n) {
        if (why && (!sk->fail_if_empty || why->empty())) *why = sk->fail_why;
        return std::nullopt;
    }
    if (sk->post_fail) {
        if (why) *why = sk->fail_why;
        return std::nullopt;
    }
    return out;
}

std::vector<std::string> graph_template_errors() {
    std::vector<std::string> out;
    for (auto & f : template_files()) {
        if (parsed(*f) == nullptr) out.push_back(f->name + ": " + f->error);
    }
    return out;
}

std::string graph_template_parse_error(std::string_view text) {
    try {
        (void)parse_template(text);
        return "";
    } catch (const std::exception & e) {
        return e.what();
    }
}

} // namespace kvfit::detail
