// The scheduler's split and the graph allocator, replayed (sched.h). Each step names the lines of
// ggml/src/ggml-backend.cpp (ggml_backend_sched_split_graph) and ggml/src/ggml-alloc.c it follows, v0.5.0; 5b4ebc5
// has the same code (its graph_optimize parameters included).
#include "runtimes/llamacpp/sched.h"

#include "kvfit/error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <unordered_map>

namespace kvfit::detail {

namespace {

constexpr std::string_view k_op_names[] = {
    "NONE", "DUP", "ADD", "ADD_ID", "ADD1", "ACC", "SUB", "MUL", "DIV", "SQR", "SQRT", "LOG", "SIN", "COS", "SUM",
    "SUM_ROWS", "CUMSUM", "MEAN", "ARGMAX", "COUNT_EQUAL", "REPEAT", "REPEAT_BACK", "CONCAT", "SILU_BACK", "NORM",
    "RMS_NORM", "RMS_NORM_BACK", "GROUP_NORM", "L2_NORM", "MUL_MAT", "MUL_MAT_ID", "OUT_PROD", "SCALE", "SET", "CPY",
    "CONT", "RESHAPE", "VIEW", "PERMUTE", "TRANSPOSE", "GET_ROWS", "GET_ROWS_BACK", "SET_ROWS", "DIAG",
    "DIAG_MASK_INF", "DIAG_MASK_ZERO", "SOFT_MAX", "SOFT_MAX_BACK", "ROPE", "ROPE_BACK", "CLAMP", "CONV_TRANSPOSE_1D",
    "IM2COL", "IM2COL_BACK", "IM2COL_3D", "COL2IM_1D", "CONV_2D", "CONV_3D", "CONV_2D_DW", "CONV_TRANSPOSE_2D",
    "POOL_1D", "POOL_2D", "POOL_2D_BACK", "UPSCALE", "PAD", "PAD_REFLECT_1D", "ROLL", "ARANGE", "TIMESTEP_EMBEDDING",
    "ARGSORT", "TOP_K", "LEAKY_RELU", "TRI", "FILL", "FLASH_ATTN_EXT", "FLASH_ATTN_BACK", "SSM_CONV", "SSM_SCAN",
    "WIN_PART", "WIN_UNPART", "GET_REL_POS", "ADD_REL_POS", "RWKV_WKV6", "GATED_LINEAR_ATTN", "RWKV_WKV7", "SOLVE_TRI",
    "GATED_DELTA_NET", "LIGHTNING_INDEXER", "DSV4_HC_COMB", "DSV4_HC_PRE", "DSV4_HC_POST", "UNARY", "MAP_CUSTOM1",
    "MAP_CUSTOM2", "MAP_CUSTOM3", "CUSTOM", "CROSS_ENTROPY_LOSS", "CROSS_ENTROPY_LOSS_BACK", "OPT_STEP_ADAMW",
    "OPT_STEP_SGD", "GLU"};
static_assert(sizeof(k_op_names) / sizeof(k_op_names[0]) == size_t(gop::count));

constexpr uint8_t k_flag_input = 1, k_flag_output = 2;

uint64_t pad_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }


} // namespace

dyn_tallocr::dyn_tallocr(uint64_t alignment) : align_(alignment) {}

uint64_t dyn_tallocr::alloc(uint64_t size) {
    size = aligned(size);
    // the best fitting block but the last (ggml-alloc.c:201-214), else the last block (:216-235)
    size_t best = blocks_.size() - 1;
    uint64_t best_size = UINT64_MAX;
    for (size_t i = 0; i + 1 < blocks_.size(); ++i) {
        if (blocks_[i].size >= size && blocks_[i].size <= best_size) {
            best = i;
            best_size = blocks_[i].size;
        }
    }
    const uint64_t off = blocks_[best].offset;
    blocks_[best].offset += size;
    blocks_[best].size -= size;
    if (blocks_[best].size == 0) blocks_.erase(blocks_.begin() + std::ptrdiff_t(best));
    max_ = std::max(max_, off + size);
    return off;
}

void dyn_tallocr::free(uint64_t off, uint64_t size) { // ggml-alloc.c:295-335
    size = aligned(size);
    for (size_t i = 0; i < blocks_.size(); ++i) {
        block & b = blocks_[i];
        if (b.offset + b.size == off) {
            b.size += size;
            if (i + 1 < blocks_.size() && b.offset + b.size == blocks_[i + 1].offset) {
                b.size += blocks_[i + 1].size;
                blocks_.erase(blocks_.begin() + std::ptrdiff_t(i) + 1);
            }
            return;
        }
        if (off + size == b.offset) {
            b.offset = off;
            b.size += size;
            if (i > 0 && blocks_[i - 1].offset + blocks_[i - 1].size == b.offset) {
                blocks_[i - 1].size += b.size;
                blocks_.erase(blocks_.begin() + std::ptrdiff_t(i));
            }
            return;
        }
    }
    size_t at = 0;
    while (at < blocks_.size() && blocks_[at].offset < off) ++at;
    blocks_.insert(blocks_.begin() + std::ptrdiff_t(at), block{off, size});
}

gop gop_from_name(std::string_view name) {
    for (size_t i = 0; i < size_t(gop::count); ++i) {
        if (k_op_names[i] == name) return gop(i);
    }
    return gop::count;
}

std::string_view gop_name(gop op) { return op < gop::count ? k_op_names[size_t(op)] : "?"; }

bool gop_is_view(gop op) { return op == gop::view || op == gop::reshape || op == gop::permute || op == gop::transpose; }

bool gop_can_inplace(gop op) {
    switch (op) {
    case gop::fill: case gop::scale: case gop::diag_mask_zero: case gop::diag_mask_inf: case gop::add:
    case gop::add_id: case gop::add1: case gop::sub: case gop::mul: case gop::div: case gop::sqr: case gop::sqrt:
    case gop::log: case gop::unary: case gop::rope: case gop::rope_back: case gop::silu_back: case gop::rms_norm:
    case gop::rms_norm_back: case gop::clamp: case gop::soft_max: case gop::soft_max_back:
        return true;
    default:
        return false;
    }
}

uint64_t gtensor_nelements(const gtensor & t) {
    uint64_t n = 1;
    for (const int64_t x : t.ne) n *= uint64_t(std::max<int64_t>(x, 0));
    return n;
}

uint64_t gtensor_nbytes(const gtensor & t) {
    for (const int64_t x : t.ne) {
        if (x <= 0) return 0;
    }
    const ggml_type_traits & tr = ggml_traits(t.type);
    uint64_t n;
    if (tr.block_size == 1) {
        n = tr.type_size;
        for (size_t i = 0; i < 4; ++i) n += uint64_t(t.ne[i] - 1) * t.nb[i];
    } else {
        n = uint64_t(t.ne[0]) * t.nb[0] / tr.block_size;
        for (size_t i = 1; i < 4; ++i) n += uint64_t(t.ne[i] - 1) * t.nb[i];
    }
    return n;
}

std::array<uint64_t, 4> contiguous_nb(ggml_type type, const std::array<int64_t, 4> & ne) {
    const ggml_type_traits & tr = ggml_traits(type);
    std::array<uint64_t, 4> nb{};
    nb[0] = tr.type_size;
    nb[1] = nb[0] * (uint64_t(std::max<int64_t>(ne[0], 0)) / tr.block_size);
    for (size_t i = 2; i < 4; ++i) nb[i] = nb[i - 1] * uint64_t(std::max<int64_t>(ne[i - 1], 0));
    return nb;
}

std::vector<uint64_t> galloc_reserve(const ggraph & g, const std::vector<std::pair<int32_t, int>> & nodes,
                                     const std::vector<std::pair<int32_t, int>> & leafs,
                                     const std::vector<const sched_backend *> & backends) {
    // one allocator per buffer type (ggml_gallocr_new_n, :496-512)
    const size_t nb = backends.size();
    std::vector<dyn_tallocr> tallocs;
    std::vector<size_t> talloc_of(nb);
    for (size_t i = 0; i < nb; ++i) {
        size_t same = i;
        for (size_t j = 0; j < i; ++j) {
            if (backends[j]->compute_buft() == backends[i]->compute_buft()) { same = j; break; }
        }
        if (same == i) {
            talloc_of[i] = tallocs.size();
            tallocs.emplace_back(backends[i]->alignment());
        } else {
            talloc_of[i] = talloc_of[same];
        }
    }
    struct hash_node {
        int n_children = 0, n_views = 0, buffer_id = -1;
        uint64_t offset = 0;
        bool allocated = false;
    };
    std::vector<hash_node> hn(g.t.size());
    static const bool trace = std::getenv("KVFIT_GALLOC_TRACE") != nullptr;
    auto size_in = [&](int32_t t, int buffer) { return backends[size_t(buffer)]->alloc_size(g, t); };
    auto is_own = [&](int32_t t) { return hn[size_t(t)].allocated; };
    auto is_allocated = [&](int32_t t) { return g.t[size_t(t)].buffer >= 0 || is_own(t); };
    auto same_layout = [&](const gtensor & a, const gtensor & b) { return a.type == b.type && a.ne == b.ne && a.nb == b.nb; };
    auto free_extra = [&](int32_t node, int32_t parent) { // ggml_gallocr_free_extra_space, :584-607
        const hash_node & h = hn[size_t(node)];
        const hash_node & ph = hn[size_t(parent)];
        dyn_tallocr & a = tallocs[talloc_of[size_t(ph.buffer_id)]];
        const uint64_t ps = pad_to(size_in(parent, ph.buffer_id), a.alignment());
        const uint64_t ns = pad_to(size_in(node, h.buffer_id), a.alignment());
        if (ps > ns) a.free(ph.offset + ns, ps - ns);
    };
    // the sources of a copy node: as the copy holds them (redirected to the input copies)
    auto allocate = [&](int32_t i, int buffer, const gsrc & srcs) { // ggml_gallocr_allocate_node, :609-676
        const gtensor & t = g.t[size_t(i)];
        hash_node & h = hn[size_t(i)];
        if (is_allocated(i) || t.is_view()) return;
        h.allocated = true;
        if (gop_can_inplace(t.op)) {
            for (const int32_t pi : srcs) {
                if (pi < 0 || !is_own(pi)) continue;
                const gtensor & p = g.t[size_t(pi)];
                if ((p.flags & k_flag_output) || (p.is_view() && (g.t[size_t(p.view_src)].flags & k_flag_output))) continue;
                if (!same_layout(t, p)) continue;
                hash_node & ph = hn[size_t(pi)];
                if (ph.n_children != 1 || ph.n_views != 0) continue;
                if (p.is_view()) {
                    hash_node & vh = hn[size_t(p.view_src)];
                    // view_src->data == parent->data: a view at offset 0 of its source
                    if (vh.n_views == 1 && vh.n_children == 0 && g.t[size_t(p.view_src)].buffer < 0 && p.view_offs == 0) {
                        h.buffer_id = ph.buffer_id;
                        h.offset = ph.offset;
                        ph.allocated = false;
                        vh.allocated = false;
                        free_extra(i, p.view_src);
                        return;
                    }
                } else {
                    h.buffer_id = ph.buffer_id;
                    h.offset = ph.offset;
                    ph.allocated = false;
                    free_extra(i, pi);
                    return;
                }
            }
        }
        h.buffer_id = buffer;
        h.offset = tallocs[talloc_of[size_t(buffer)]].alloc(size_in(i, buffer));
        if (trace) std::fprintf(stderr, "A %d %llu %llu %s\n", buffer, (unsigned long long) h.offset, (unsigned long long) size_in(i, buffer), t.name.c_str());
    };
    auto free_node = [&](int32_t i) { // ggml_gallocr_free_node, :678-698
        if (g.t[size_t(i)].flags & k_flag_output) return;
        hash_node & h = hn[size_t(i)];
        tallocs[talloc_of[size_t(h.buffer_id)]].free(h.offset, size_in(i, h.buffer_id));
        h.allocated = false;
    };
    static const gsrc no_src;
    // ggml_gallocr_alloc_graph_impl (:704-796): leafs; children and views counted, inputs allocated; then nodes
    for (const auto & [i, b] : leafs) allocate(i, b, no_src);
    for (const auto & [i, b] : nodes) {
        const gtensor & t = g.t[size_t(i)];
        if (t.is_view() && t.op != gop::none) hn[size_t(t.view_src)].n_views += 1;
        if (t.flags & k_flag_input) allocate(i, b, t.src);
        for (const int32_t s : t.src) {
            if (s < 0) continue;
            hn[size_t(s)].n_children += 1;
            if (g.t[size_t(s)].flags & k_flag_input) allocate(s, b, g.t[size_t(s)].src);
        }
    }
    for (const auto & [i, b] : nodes) {
        const gtensor & t = g.t[size_t(i)];
        for (const int32_t s : t.src) {
            if (s >= 0) allocate(s, b, g.t[size_t(s)].src);
        }
        allocate(i, b, t.src);
        for (const int32_t s : t.src) {
            if (s < 0) continue;
            hash_node & ph = hn[size_t(s)];
            ph.n_children -= 1;
            if (ph.n_children != 0 || ph.n_views != 0) continue;
            const gtensor & p = g.t[size_t(s)];
            if (p.is_view()) {
                hash_node & vh = hn[size_t(p.view_src)];
                vh.n_views -= 1;
                if (vh.n_views == 0 && vh.n_children == 0 && vh.allocated) free_node(p.view_src);
            } else if (ph.allocated) {
                free_node(s);
            }
        }
    }
    std::vector<uint64_t> out(nb);
    for (size_t i = 0; i < nb; ++i) out[i] = tallocs[talloc_of[i]].max_size();
    return out;
}

sched_result sched_reserve(const ggraph & graph, const std::vector<const sched_backend *> & backends, const sched_options & o) {
    return sched_reserve(ggraph(graph), backends, o);
}

sched_result sched_reserve(ggraph && graph, const std::vector<const sched_backend *> & backends, const sched_options & o) {
    const int n_copies = o.n_copies;
    const bool op_offload = o.op_offload;
    sched_result res;
    res.copy = std::move(graph);
    ggraph & g = res.copy; // the copies and dependency views are appended; node sources are redirected
    const int n_b = int(backends.size());
    const int cpu = n_b - 1;
    g.use_count.assign(g.t.size(), 0);
    for (const int32_t n : g.nodes) {
        for (const int32_t s : g.t[size_t(n)].src) {
            if (s >= 0) g.use_count[size_t(s)] += 1;
        }
    }
    std::vector<int> bid(g.t.size(), -1);
    for (size_t i = 0; i < g.t.size(); ++i) bid[i] = g.t[i].preset;
    auto T = [&](int32_t i) -> const gtensor & { return g.t[size_t(i)]; };
    auto buffer_of = [&](int32_t i) { // view_src ? view_src->buffer : tensor->buffer
        const gtensor & t = T(i);
        return t.is_view() ? T(t.view_src).buffer : t.buffer;
    };
    auto buft_of_buffer = [&](int32_t buf) { return g.buffers[size_t(buf)].type; };
    auto from_buffer = [&](int32_t tensor, int32_t op) { // ggml_backend_sched_backend_from_buffer, :888-910
        const int32_t buf = buffer_of(tensor);
        if (buf < 0) return -1;
        for (int b = 0; b < n_b; ++b) {
            if (backends[size_t(b)]->supports_buft(buft_of_buffer(buf)) && backends[size_t(b)]->supports_op(g, op)) return b;
        }
        return -1;
    };
    auto from_cur = [&](int32_t i) -> int { // ggml_backend_sched_backend_id_from_cur, :921-985
        const gtensor & t = T(i);
        int b = from_buffer(i, i);
        if (b != -1) return b;
        if (t.is_view()) {
            b = from_buffer(t.view_src, i);
            if (b != -1) return b;
        }
        if (buffer_of(i) >= 0) {
            throw error(fmt::format("llama.cpp's scheduler: the pre-allocated tensor {} cannot run {} on any backend "
                                    "(ggml aborts)", t.name, gop_name(t.op)));
        }
        if (t.flags & k_flag_input) return cpu;
        if (t.op != gop::rope && t.op != gop::flash_attn_ext) {
            for (const int32_t s : t.src) {
                if (s < 0) continue;
                const gtensor & src = T(s);
                if (src.buffer < 0 || !g.buffers[size_t(src.buffer)].weights) continue;
                const int sb = from_buffer(s, i);
                if (op_offload && sb == cpu && buft_of_buffer(src.buffer).is_host()) {
                    for (int o = 0; o < sb; ++o) {
                        if (backends[size_t(o)]->supports_op(g, i) && backends[size_t(o)]->offload_op(g, i)) return o;
                    }
                }
                return sb;
            }
        }
        return -1;
    };
    auto buffer_supported = [&](int32_t i, int b) { // ggml_backend_sched_buffer_supported, :1037-1056
        const int32_t buf = buffer_of(i);
        gbuft type;
        if (buf >= 0) type = buft_of_buffer(buf);
        else {
            int tb = bid[size_t(i)];
            if (tb == -1 && T(i).is_view()) tb = bid[size_t(T(i).view_src)];
            if (tb == -1) return false;
            type = backends[size_t(tb)]->compute_buft();
        }
        return backends[size_t(b)]->supports_buft(type);
    };

    // pass 1 (:1087-1124)
    for (const int32_t i : g.leafs) {
        if (bid[size_t(i)] == -1) bid[size_t(i)] = from_cur(i);
    }
    for (const int32_t i : g.nodes) {
        if (bid[size_t(i)] == -1) bid[size_t(i)] = from_cur(i);
    }
    // pass 2: expand GPU assignments down and up, then any assignment (:1126-1200)
    auto expand = [&](bool up, bool skip_cpu) {
        int cur = -1;
        const size_t n = g.nodes.size();
        for (size_t k = 0; k < n; ++k) {
            const int32_t i = g.nodes[up ? n - 1 - k : k];
            if (gop_is_view(T(i).op)) continue;
            const int b = bid[size_t(i)];
            if (b != -1) cur = skip_cpu && b == cpu ? -1 : b;
            else if (cur != -1 && backends[size_t(cur)]->supports_op(g, i)) bid[size_t(i)] = cur;
        }
    };
    expand(false, true);
    expand(true, true);
    expand(false, false);
    expand(true, false);
    // pass 3: unassigned nodes to the backend with the most supported inputs; upgrades (:1202-1258)
    for (const int32_t i : g.nodes) {
        const gtensor & t = T(i);
        if (gop_is_view(t.op)) continue;
        int & b0 = bid[size_t(i)];
        if (b0 == -1) {
            int best = -1;
            for (int b = 0; b < n_b; ++b) {
                if (!backends[size_t(b)]->supports_op(g, i)) continue;
                int n = 0;
                for (const int32_t s : t.src) {
                    if (s < 0) continue;
                    const bool assigned = bid[size_t(s)] != -1 || (T(s).is_view() && bid[size_t(T(s).view_src)] != -1);
                    if (assigned && buffer_supported(s, b)) ++n;
                }
                if (n > best) {
                    best = n;
                    b0 = b;
                }
            }
        } else {
            for (int b = 0; b < b0; ++b) {
                if (!(backends[size_t(b)]->compute_buft() == backends[size_t(b0)]->compute_buft()) ||
                    !backends[size_t(b)]->supports_op(g, i)) {
                    continue;
                }
                bool ok = true;
                for (const int32_t s : t.src) {
                    if (s >= 0 && !buffer_supported(s, b)) { ok = false; break; }
                }
                if (ok) { b0 = b; break; }
            }
        }
    }
    // pass 4: sources and views from their users (:1260-1290)
    for (const int32_t i : g.nodes) {
        const gtensor & t = T(i);
        int & cur = bid[size_t(i)];
        if (t.is_view() && cur == -1) cur = bid[size_t(t.view_src)];
        for (const int32_t s : t.src) {
            if (s < 0) continue;
            int & sb = bid[size_t(s)];
            if (sb == -1) sb = T(s).is_view() ? bid[size_t(T(s).view_src)] : cur;
        }
        for (int b = 0; b < n_b && cur == -1; ++b) {
            if (backends[size_t(b)]->supports_op(g, i)) cur = b;
        }
        if (cur == -1) {
            throw error(fmt::format("llama.cpp's scheduler: no backend runs {} ({}) (ggml aborts)", t.name, gop_name(t.op)));
        }
    }

    // pass 5: splits and the copies of their inputs (:1292-1420)
    struct split {
        int backend = 0;
        size_t start = 0, end = 0;
        std::vector<int32_t> inputs;
        size_t capacity = 0; ///< 5b4ebc5's inputs_capacity: 0, GGML_SCHED_MAX_SPLIT_INPUTS = 30, then doubled
    };
    std::vector<split> splits;
    std::map<std::tuple<int32_t, int, int>, int32_t> copies; // (tensor, backend, copy) -> copy
    std::vector<int32_t> graph_inputs;
    auto dup = [&](int32_t src, int backend, int c) {
        gtensor d = T(src);
        d.name = fmt::format("{}#{}#{}", backends[size_t(backend)]->name(), T(src).name, c);
        d.op = gop::none;
        d.view_src = -1;
        d.view_offs = 0;
        d.src.clear();
        d.buffer = -1;
        d.preset = -1;
        d.flags = 0;
        d.copy_of = src;
        g.t.push_back(std::move(d));
        g.use_count.push_back(0);
        bid.push_back(-1);
        return int32_t(g.t.size() - 1);
    };
    size_t k = 0;
    while (k < g.nodes.size() && gop_is_view(T(g.nodes[k]).op)) ++k;
    split cur_split;
    cur_split.backend = k < g.nodes.size() ? bid[size_t(g.nodes[k])] : 0;
    int cur = cur_split.backend;
    for (size_t pos = k; pos < g.nodes.size(); ++pos) {
        const int32_t i = g.nodes[pos];
        if (gop_is_view(T(i).op)) continue;
        const int nb = bid[size_t(i)];
        bool need_new = false;
        if (nb == cur && !cur_split.inputs.empty()) {
            for (const int32_t s : g.t[size_t(i)].src) {
                if (s < 0) continue;
                const gtensor & src = T(s);
                if (src.buffer >= 0 && g.buffers[size_t(src.buffer)].weights && bid[size_t(s)] != cur && !buffer_supported(s, cur)) {
                    need_new = true;
                    break;
                }
                if (o.split_inputs_capped && cur_split.inputs.size() >= cur_split.capacity && bid[size_t(s)] != cur &&
                    !copies.count({s, cur, 0}) && !buffer_supported(s, cur)) {
                    need_new = true;
                    break;
                }
            }
        }
        if (nb != cur || need_new) {
            cur_split.end = pos;
            splits.push_back(std::move(cur_split));
            cur_split = split{};
            cur_split.backend = nb;
            cur_split.start = pos;
            cur = nb;
        }
        for (size_t j = 0; j < g.t[size_t(i)].src.size(); ++j) {
            const int32_t s = g.t[size_t(i)].src[j];
            if (s < 0) continue;
            const int sb = bid[size_t(s)];
            if (sb == -1) throw error(fmt::format("llama.cpp's scheduler: {} has no backend (ggml asserts)", T(s).name));
            if ((T(s).flags & k_flag_input) && n_copies > 1 && !copies.count({s, sb, 0})) {
                for (int c = 0; c < n_copies; ++c) {
                    const int32_t cid = c == 0 ? s : dup(s, sb, c);
                    g.t[size_t(cid)].flags |= k_flag_input | k_flag_output;
                    copies[{s, sb, c}] = cid;
                }
                graph_inputs.push_back(s);
            }
            if (sb != cur && !buffer_supported(s, cur)) {
                if (!copies.count({s, cur, 0})) {
                    for (int c = 0; c < n_copies; ++c) {
                        const int32_t cid = dup(s, cur, c);
                        if (n_copies > 1) g.t[size_t(cid)].flags |= k_flag_input | k_flag_output;
                        copies[{s, cur, c}] = cid;
                    }
                    if (cur_split.inputs.size() >= cur_split.capacity) {
                        cur_split.capacity = cur_split.capacity == 0 ? 30 : 2 * cur_split.capacity;
                    }
                    cur_split.inputs.push_back(s);
                }
                g.t[size_t(i)].src[j] = copies[{s, cur, 0}];
            }
        }
    }
    cur_split.end = g.nodes.size();
    splits.push_back(std::move(cur_split));
    res.n_splits = int(splits.size());

    // the backends' allocation dependencies over each split (:1437-1463)
    std::unordered_map<int32_t, std::vector<int32_t>> deps;
    for (const split & sp : splits) {
        std::vector<int32_t> nodes(g.nodes.begin() + std::ptrdiff_t(sp.start), g.nodes.begin() + std::ptrdiff_t(sp.end));
        backends[size_t(sp.backend)]->graph_optimize(g, nodes, [&](int32_t tensor, int32_t until) {
            auto & keep = deps[until];
            if (std::find(keep.begin(), keep.end(), tensor) == keep.end()) keep.push_back(tensor);
        });
        std::copy(nodes.begin(), nodes.end(), g.nodes.begin() + std::ptrdiff_t(sp.start)); // a reorder, if any
    }
    // the graph copy (:1484-1583)
    auto view_of = [&](int32_t src) {
        gtensor d = T(src);
        d.name = T(src).name + " (view)";
        d.op = gop::none;
        d.view_src = src;
        d.view_offs = 0;
        d.src.clear();
        d.buffer = -1;
        d.preset = -1;
        d.flags = 0;
        g.t.push_back(std::move(d));
        g.use_count.push_back(0);
        return int32_t(g.t.size() - 1);
    };
    for (const split & sp : splits) {
        for (const int32_t in : sp.inputs) {
            const int32_t dep = view_of(in);
            g.t[size_t(dep)].src = {in};
            res.copy_nodes.emplace_back(dep, bid[size_t(in)]);
            res.copy_nodes.emplace_back(copies[{in, sp.backend, 0}], sp.backend);
        }
        for (size_t pos = sp.start; pos < sp.end; ++pos) {
            const int32_t i = g.nodes[pos];
            res.copy_nodes.emplace_back(i, bid[size_t(i)]);
            const auto it = deps.find(i);
            if (it == deps.end()) continue;
            const std::vector<int32_t> keep = it->second;
            for (size_t kk = 0; kk < keep.size(); kk += 10) {
                const int32_t dep = view_of(keep[kk]);
                g.t[size_t(dep)].src.assign(keep.begin() + std::ptrdiff_t(kk), keep.begin() + std::ptrdiff_t(std::min(keep.size(), kk + 10)));
                res.copy_nodes.emplace_back(dep, sp.backend);
            }
        }
    }
    if (n_copies > 1) {
        for (const int32_t in : graph_inputs) {
            for (int c = 0; c < n_copies; ++c) res.copy_leafs.emplace_back(copies[{in, bid[size_t(in)], c}], bid[size_t(in)]);
        }
        for (const split & sp : splits) {
            for (const int32_t in : sp.inputs) {
                for (int c = 0; c < n_copies; ++c) res.copy_leafs.emplace_back(copies[{in, sp.backend, c}], sp.backend);
            }
        }
    }
    for (const int32_t i : g.leafs) res.copy_leafs.emplace_back(i, bid[size_t(i)]);
    res.buffer_bytes = galloc_reserve(g, res.copy_nodes, res.copy_leafs, backends);
    return res;
}

} // namespace kvfit::detail
