// Private to the llama.cpp runtime: llama.cpp's reserve graph as ggml's scheduler receives it, and a replay of what
// the scheduler and the graph allocator do with it, to the byte.
//
//   ggml_backend_sched_split_graph (ggml/src/ggml-backend.cpp, v0.5.0 :1066-1590, 5b4ebc5 the same code): the five
//   passes that assign every tensor a backend (pre-allocated tensors to their buffer's backend, ops on weights to the
//   weights' backend or, with op offload, to a GPU that wants the op; GPU assignments expanded up and down; upgrades
//   to higher-priority backends sharing a buffer type; the rest from their sources), the splits, the copies of every
//   split input (GGML_SCHED_MAX_COPIES of each graph input under pipeline parallelism), the backends' graph_optimize
//   allocation dependencies, and the graph copy it hands to ggml-alloc;
//   ggml_gallocr_reserve_n (ggml/src/ggml-alloc.c): leafs and inputs first, then every node in order, in place over a
//   parent with one child and the same layout when the op allows it, each freed after its last child, best fit over
//   the free blocks of one dynamic allocator per buffer type.
// Checked against the release's own scheduler on a simulated CUDA device (tools/simcuda: llama_probe with a
// GGML_SCHED_DUMP tracing build gives the graph; tools/sched_check replays it and compares the graph copy and every
// buffer size): byte-exact on every graph tried.
#pragma once

#include "kvfit/ggml_type.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kvfit::detail {

/// ggml's ops, in enum ggml_op order (ggml/include/ggml.h; the same list in v0.5.0 and 5b4ebc5).
enum class gop : uint8_t {
    none, dup, add, add_id, add1, acc, sub, mul, div, sqr, sqrt, log, sin, cos, sum, sum_rows, cumsum, mean, argmax,
    count_equal, repeat, repeat_back, concat, silu_back, norm, rms_norm, rms_norm_back, group_norm, l2_norm, mul_mat,
    mul_mat_id, out_prod, scale, set, cpy, cont, reshape, view, permute, transpose, get_rows, get_rows_back, set_rows,
    diag, diag_mask_inf, diag_mask_zero, soft_max, soft_max_back, rope, rope_back, clamp, conv_transpose_1d, im2col,
    im2col_back, im2col_3d, col2im_1d, conv_2d, conv_3d, conv_2d_dw, conv_transpose_2d, pool_1d, pool_2d, pool_2d_back,
    upscale, pad, pad_reflect_1d, roll, arange, timestep_embedding, argsort, top_k, leaky_relu, tri, fill,
    flash_attn_ext, flash_attn_back, ssm_conv, ssm_scan, win_part, win_unpart, get_rel_pos, add_rel_pos, rwkv_wkv6,
    gated_linear_attn, rwkv_wkv7, solve_tri, gated_delta_net, lightning_indexer, dsv4_hc_comb, dsv4_hc_pre,
    dsv4_hc_post, unary, map_custom1, map_custom2, map_custom3, custom, cross_entropy_loss, cross_entropy_loss_back,
    opt_step_adamw, opt_step_sgd, glu, count
};

/// The op named as ggml_op_name() prints it ("MUL_MAT"); gop::count when unknown.
gop gop_from_name(std::string_view name);
/// ggml_op_name() of an op.
std::string_view gop_name(gop op);
/// ggml_is_view_op (ggml-backend.cpp:757): VIEW, RESHAPE, PERMUTE, TRANSPOSE.
bool gop_is_view(gop op);
/// ggml_op_can_inplace (ggml-alloc.c:22-49).
bool gop_can_inplace(gop op);

/// ggml_dyn_tallocr (ggml/src/ggml-alloc.c:121-360) with one chunk (no modelled buffer type has a maximum size):
/// sizes padded to the alignment; best fit over the free blocks but the last, else the last (endless) block; a
/// freed range merges with its neighbours.
class dyn_tallocr {
public:
    explicit dyn_tallocr(uint64_t alignment);
    /// Offset of `size` bytes (padded).
    uint64_t alloc(uint64_t size);
    /// Frees `size` bytes (padded) at `off`.
    void free(uint64_t off, uint64_t size);
    uint64_t alignment() const { return align_; }
    /// `n` padded to the alignment.
    uint64_t aligned(uint64_t n) const { return (n + align_ - 1) / align_ * align_; }
    /// The high-water mark: the buffer's size.
    uint64_t max_size() const { return max_; }

private:
    struct block {
        uint64_t offset, size;
    };
    uint64_t align_;
    std::vector<block> blocks_{block{0, UINT64_MAX / 2}};
    uint64_t max_ = 0;
};

/// Where a pre-allocated tensor lives (a weight, a KV cache), or a backend's compute buffer type.
struct gbuft {
    enum class kind : uint8_t { gpu, gpu_host, cpu };
    kind k = kind::cpu; ///< a GPU's device buffer; the GPU backend's pinned host type (CUDA_Host); plain host memory
    int device = 0;     ///< the GPU's index for kind::gpu
    bool is_host() const { return k != kind::gpu; }
    bool operator==(const gbuft &) const = default;
};

/// A tensor's sources (ggml_tensor::src): indices into the graph, -1 absent, at most GGML_MAX_SRC = 10 (ggml.h), held
/// in place so that a graph copy allocates nothing per tensor (a probe of a context search copies its graph's
/// skeleton, graph_replay.cpp). A vector's interface as far as the scheduler uses it; a push beyond 10 throws
/// std::length_error (no ggml graph has one).
class gsrc {
public:
    static constexpr size_t capacity = 10;
    gsrc() = default;
    gsrc(std::initializer_list<int32_t> l) { assign(l.begin(), l.end()); }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const int32_t * begin() const { return v_.data(); }
    const int32_t * end() const { return v_.data() + n_; }
    int32_t * begin() { return v_.data(); }
    int32_t * end() { return v_.data() + n_; }
    int32_t operator[](size_t i) const { return v_[i]; }
    int32_t & operator[](size_t i) { return v_[i]; }
    void clear() { n_ = 0; }
    void push_back(int32_t x) {
        if (n_ == capacity) throw std::length_error("a ggml tensor has at most 10 sources (GGML_MAX_SRC)");
        v_[n_++] = x;
    }
    template <class It> void assign(It first, It last) {
        clear();
        for (; first != last; ++first) push_back(*first);
    }
    bool operator==(const gsrc & o) const { return std::equal(begin(), end(), o.begin(), o.end()); }

private:
    std::array<int32_t, capacity> v_{};
    uint8_t n_ = 0;
};

/// ggml_tensor's fields the scheduler and the allocator read.
struct gtensor {
    gop op = gop::none;
    ggml_type type = ggml_type::f32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};
    std::array<uint64_t, 4> nb{0, 0, 0, 0};
    uint8_t flags = 0;                  ///< GGML_TENSOR_FLAG_INPUT 1, OUTPUT 2
    int32_t view_src = -1;              ///< index of the viewed tensor
    uint64_t view_offs = 0;
    gsrc src;                           ///< indices (-1: absent), at most GGML_MAX_SRC = 10
    std::array<int32_t, 16> params{};   ///< op_params
    int32_t buffer = -1;                ///< pre-allocated: index into ggraph::buffers (weights, KV caches); -1 none
    int16_t preset = -1;                ///< backend assigned before the split (llama.cpp's graph callback); -1 none
    std::string name;
    int32_t copy_of = -1;               ///< a split input's copy (sched_reserve): the tensor it copies
    bool is_view() const { return view_src >= 0; }
};

/// A pre-allocated buffer: its type and usage.
struct gbuffer {
    gbuft type;
    bool weights = false; ///< GGML_BACKEND_BUFFER_USAGE_WEIGHTS
};

/// A graph as the scheduler receives it: every tensor, the leafs and the nodes (indices, in graph order).
struct ggraph {
    std::vector<gtensor> t;
    std::vector<int32_t> leafs, nodes;
    std::vector<gbuffer> buffers;
    /// per tensor: how many node sources name it in the graph as built (cgraph->use_counts, ggml_visit_parents_graph,
    /// ggml.c:7236-7290); filled by sched_reserve before the split redirects sources to copies
    std::vector<int32_t> use_count;
};

/// ggml_nbytes (ggml.c): 0 when a dimension is 0 or below.
uint64_t gtensor_nbytes(const gtensor & t);
/// Elements of the tensor.
uint64_t gtensor_nelements(const gtensor & t);
/// nb of a contiguous tensor of that type and shape.
std::array<uint64_t, 4> contiguous_nb(ggml_type type, const std::array<int64_t, 4> & ne);

/// One backend of the scheduler as its device states it (a ggml backend's device interface). `g` is the graph as
/// the scheduler sees it at the call: sources may be copies made by earlier splits.
class sched_backend {
public:
    virtual ~sched_backend() = default;
    /// ggml_backend_name: "CUDA0", "CPU"; copies of split inputs are named "<name>#<tensor>#<copy>"
    virtual std::string name() const = 0;
    /// The buffer type of its compute buffer (llama.cpp gives the CPU backend the first GPU's host type).
    virtual gbuft compute_buft() const = 0;
    /// get_alignment of that buffer type.
    virtual uint64_t alignment() const = 0;
    /// supports_op.
    virtual bool supports_op(const ggraph & g, int32_t t) const = 0;
    /// offload_op (false: the device never asks for ops of host weights).
    virtual bool offload_op(const ggraph & g, int32_t t) const = 0;
    /// supports_buft.
    virtual bool supports_buft(const gbuft & b) const = 0;
    /// get_alloc_size of its compute buffer type (ggml_nbytes unless the device pads).
    virtual uint64_t alloc_size(const ggraph & g, int32_t t) const { return gtensor_nbytes(g.t[size_t(t)]); }
    /// graph_optimize over one split's nodes (indices into g.t, in graph order): calls add_dep(tensor, until) for
    /// every allocation dependency it adds (the tensor stays allocated until `until` is computed), and may reorder
    /// `nodes` (ggml-vulkan does; ggml-cuda does not): the scheduler's graph copy, and so ggml-alloc, sees the new
    /// order (ggml-backend.cpp:1459-1463: split->graph is a view of the graph's node array).
    virtual void graph_optimize(const ggraph &, std::vector<int32_t> &, const std::function<void(int32_t, int32_t)> &) const {}
};

/// What the scheduler made of a graph: the graph copy ggml-alloc allocates and the peak of each backend's buffer.
struct sched_result {
    std::vector<uint64_t> buffer_bytes; ///< per backend: the compute buffer (0 for a backend sharing an earlier one's type)
    int n_splits = 0;
    /// the graph copy: tensors (the graph's, then the copies and dependency views added), node and leaf order with
    /// their backend ids
    ggraph copy;
    std::vector<std::pair<int32_t, int>> copy_nodes, copy_leafs;
};

/// How the scheduler was created and which release's split it runs.
struct sched_options {
    int n_copies = 1;         ///< 1, or GGML_SCHED_MAX_COPIES = 4 under pipeline parallelism (llama-context.cpp)
    bool op_offload = true;   ///< cparams.op_offload (--no-op-offload: false)
    /// 5b4ebc5 (ggml 0.23.0) starts a new split when one already holds inputs_capacity inputs (GGML_SCHED_MAX_SPLIT_INPUTS
    /// = 30, doubled when one node's sources pass it) and a source needs another copy (ggml-backend.cpp:1365-1375 there);
    /// v0.5.0 removed the check and grows the list instead
    bool split_inputs_capped = false;
};

/// ggml_backend_sched_split_graph + ggml_gallocr_reserve_n_size over `g` with `backends` (highest priority first, the
/// CPU last). Throws kvfit::error when a tensor is left without a backend (ggml aborts there too).
sched_result sched_reserve(const ggraph & g, const std::vector<const sched_backend *> & backends, const sched_options & o);
/// The same, on a graph the caller no longer needs: it becomes sched_result::copy without being copied (a plan's
/// graphs hold thousands of named tensors; copying them was a tenth of a plan's instructions).
sched_result sched_reserve(ggraph && g, const std::vector<const sched_backend *> & backends, const sched_options & o);

/// ggml_gallocr_reserve_n_size alone over a graph copy (nodes with their sources already redirected, leafs), with
/// the buffer types of `backends`: the peak per backend.
std::vector<uint64_t> galloc_reserve(const ggraph & g, const std::vector<std::pair<int32_t, int>> & nodes,
                                     const std::vector<std::pair<int32_t, int>> & leafs,
                                     const std::vector<const sched_backend *> & backends);

} // namespace kvfit::detail
