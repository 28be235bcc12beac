// A Vulkan device as llama.cpp's scheduler sees it (backend_vulkan.h), read from ggml-vulkan of the release v0.5.0
// (ggml/src/ggml-vulkan/ggml-vulkan.cpp, ggml-vulkan-types.h, ggml-vulkan-debug.cpp, as bundled by node-llama-cpp;
// line numbers are that tree's):
//   ggml_backend_vk_device_supports_op :15024-15680, supports_buft :15682-15691, offload_op :15693-15697 with
//     ggml_vk_get_op_batch_size (ggml-vulkan-debug.cpp:766-779) and GGML_OP_OFFLOAD_MIN_BATCH 32 (:15831);
//   the device buffer type: get_alignment minStorageBufferOffsetAlignment (:12786-12789), get_max_size the
//     suballocation block, 1 GiB by default (:12791-12794, :4006-4015), get_alloc_size ggml_nbytes (:12796-12800:
//     no padding, unlike ggml-cuda's quantized rows and flash-attention copies);
//   the host buffer type Vulkan_Host: alignment minMemoryMapAlignment of the first Vulkan device (:12845-12849),
//     get_alloc_size the CPU's (:12864);
//   ggml_vk_graph_optimize (:14393-14762): a reorder of each split's nodes, and allocation dependencies for the
//     top-k MoE patterns (ggml-vulkan-types.h:502-552 lists the patterns). Its fusions at compute time
//     (ggml_vk_can_fuse, :13211) run on buffers already allocated: the allocator sees only the reorder and the
//     dependencies.
// Modelled from source: all of the above. Assumed (the driver reports them, kvfit cannot ask): the limits of
// vulkan_limits_of and the device features supports_op reads (subgroup shuffle/vote/arithmetic, the Vulkan memory
// model, fp16, every listed type's mul_mat_id and top-k pipelines, 64-bit shader indexing absent). The release
// 5b4ebc5 has another graph_optimize (no rms_norm patterns, no MoE dependencies): not modelled, compute_sched.cpp
// says so and does not replay it.
#include "runtimes/llamacpp/backend_vulkan.h"

#include "runtimes/llamacpp/backend_cuda.h"

#include <algorithm>
#include <initializer_list>
#include <set>

namespace kvfit::detail {

vulkan_limits vulkan_limits_of(const std::string & vendor) {
    vulkan_limits l;
    if (vendor == "NVIDIA") {
        l.storage_alignment = 16, l.host_alignment = 64;
        l.assumed = "NVIDIA driver limits: minStorageBufferOffsetAlignment 16 B, minMemoryMapAlignment 64 B, "
                    "maxStorageBufferRange 4 GiB - 1";
    } else if (vendor == "AMD") {
        // RADV reports minMemoryMapAlignment 4096, AMD's own drivers 64: the larger is taken
        l.storage_alignment = 4, l.host_alignment = 4096;
        l.assumed = "AMD driver limits: minStorageBufferOffsetAlignment 4 B, minMemoryMapAlignment 4096 B (RADV; "
                    "AMD's drivers report 64), maxStorageBufferRange 4 GiB - 1";
    } else if (vendor == "Intel") {
        l.storage_alignment = 64, l.host_alignment = 4096;
        l.assumed = "Intel driver limits: minStorageBufferOffsetAlignment 64 B, minMemoryMapAlignment 4096 B, "
                    "maxStorageBufferRange 4 GiB - 1";
    } else {
        l.storage_alignment = 256, l.host_alignment = 4096;
        l.assumed = "unknown GPU vendor: the largest alignments Vulkan allows (minStorageBufferOffsetAlignment 256 B, "
                    "minMemoryMapAlignment 4096 B), maxStorageBufferRange 4 GiB - 1";
    }
    l.assumed += "; device features (subgroup ops, memory model, fp16) assumed present; suballocation block 1 GiB";
    return l;
}

namespace {

// ggml's unary op ids in ggml_vk_unary_mul_op_index (:9713-9721): GELU 8, SIGMOID 7, SILU 10, SOFTPLUS 15 (ggml.h)
constexpr int32_t vk_unary_sigmoid = 7, vk_unary_gelu = 8, vk_unary_silu = 10, vk_unary_softplus = 15;

const gtensor * vk_src(const ggraph & g, const gtensor & t, size_t i) {
    return i < t.src.size() && t.src[i] >= 0 ? &g.t[size_t(t.src[i])] : nullptr;
}
bool vk_f32_f16(ggml_type t) { return t == ggml_type::f32 || t == ggml_type::f16; }
bool vk_contiguous(const gtensor & t) { return ggml_contiguous_m_n(t, 0, 4); }
uint64_t vk_type_size(ggml_type t) { return ggml_traits(t).type_size; }

// the quantized and float types of the MUL_MAT / GET_ROWS switches (:15101-15169, :15219-15257); ggml types kvfit
// does not know (q1_0, q2_0, nvfp4) cannot occur in its graphs
bool vk_matmul_type(ggml_type t) {
    switch (t) {
    case ggml_type::f32: case ggml_type::f16: case ggml_type::bf16: case ggml_type::q4_0: case ggml_type::q4_1:
    case ggml_type::q5_0: case ggml_type::q5_1: case ggml_type::q8_0: case ggml_type::q2_k: case ggml_type::q3_k:
    case ggml_type::q4_k: case ggml_type::q5_k: case ggml_type::q6_k: case ggml_type::iq1_s: case ggml_type::iq1_m:
    case ggml_type::iq2_xxs: case ggml_type::iq2_xs: case ggml_type::iq2_s: case ggml_type::iq3_xxs:
    case ggml_type::iq3_s: case ggml_type::iq4_xs: case ggml_type::iq4_nl: case ggml_type::mxfp4:
    case ggml_type::tq1_0: case ggml_type::tq2_0:
        return true;
    default:
        return false;
    }
}
// the SET_ROWS / CPY destination types (:15258-15280, :15281-15345)
bool vk_cpy_type(ggml_type t) {
    switch (t) {
    case ggml_type::f32: case ggml_type::f16: case ggml_type::bf16: case ggml_type::q4_0: case ggml_type::q4_1:
    case ggml_type::q5_0: case ggml_type::q5_1: case ggml_type::q8_0: case ggml_type::iq4_nl:
        return true;
    default:
        return false;
    }
}
// ggml_vk_dim01_contiguous (:5805-5810)
bool vk_dim01_contiguous(const gtensor & t) {
    const ggml_type_traits tr = ggml_traits(t.type);
    return t.nb[0] == tr.type_size && t.nb[1] == t.nb[0] * uint64_t(t.ne[0]) / tr.block_size &&
           (t.ne[3] == 1 || t.nb[3] == t.nb[2] * uint64_t(t.ne[2]));
}
// ggml_can_repeat (ggml.c): every dimension of b a multiple of a's (an empty a only onto an empty b)
bool vk_can_repeat(const gtensor & a, const gtensor & b) {
    const bool a_empty = gtensor_nelements(a) == 0, b_empty = gtensor_nelements(b) == 0;
    if (a_empty) return b_empty;
    for (size_t i = 0; i < 4; ++i) {
        if (a.ne[i] == 0 || b.ne[i] % a.ne[i] != 0) return false;
    }
    return true;
}

} // namespace

bool vulkan_device::supports_op(const ggraph & g, const gtensor & op) const {
    // tensor_size_supported (:15031-15049): max_buffer_size is at least a suballocation block, so the storage range
    // (no 64-bit indexing, no buffer device address outside IM2COL) is the bound
    const bool uses_bda = op.op == gop::im2col || op.op == gop::im2col_3d;
    auto size_ok = [&](const gtensor & t) { return uses_bda || gtensor_nbytes(t) <= limits.max_storage_range; };
    for (const int32_t s : op.src) {
        if (s >= 0 && !size_ok(g.t[size_t(s)])) return false;
    }
    if (!size_ok(op)) return false;
    const gtensor * s0 = vk_src(g, op, 0);
    const gtensor * s1 = vk_src(g, op, 1);
    const gtensor * s2 = vk_src(g, op, 2);
    switch (op.op) {
    case gop::unary: // every unary op of ggml.h (EXP .. SGN, :15055-15083)
        return op.params[0] >= 0 && op.params[0] <= 21 && vk_f32_f16(s0->type) && vk_f32_f16(op.type) && s0->type == op.type;
    case gop::glu: // REGLU .. SWIGLU_CLAMP (:15085-15099)
        return op.params[0] >= 0 && op.params[0] <= 6 && vk_f32_f16(s0->type) && vk_f32_f16(op.type) &&
               s0->type == op.type && (s1 == nullptr || s1->type == s0->type);
    case gop::mul_mat:
    case gop::mul_mat_id: { // :15101-15169
        if (op.op == gop::mul_mat_id && op.params[3] == 10) return false; // GGML_PREC_F32
        if (!vk_matmul_type(s0->type)) return false;
        const gtensor & a = op.op == gop::mul_mat ? *s0 : *s2;
        if (a.ne[3] != s1->ne[3]) return false;
        const bool f0 = s0->type == ggml_type::f32 || s0->type == ggml_type::f16 || s0->type == ggml_type::bf16;
        if (!(vk_dim01_contiguous(*s0) || f0) || !(vk_dim01_contiguous(*s1) || vk_f32_f16(s1->type))) return false;
        return !(s0->type == ggml_type::bf16 && s1->type == ggml_type::f16);
    }
    case gop::flash_attn_ext: { // :15171-15218, coopmat2 or subgroup shuffle + vote assumed
        const gtensor * mask = vk_src(g, op, 3);
        const gtensor * sinks = vk_src(g, op, 4);
        if (s1->ne[0] % 8 != 0 || s2->ne[0] % 8 != 0) return false;
        if ((sinks && sinks->type != ggml_type::f32) || s0->type != ggml_type::f32 || op.type != ggml_type::f32) return false;
        if (mask && mask->type != ggml_type::f16) return false;
        auto kv_ok = [](ggml_type t) {
            return t == ggml_type::f32 || t == ggml_type::f16 || t == ggml_type::bf16 || t == ggml_type::q8_0 ||
                   t == ggml_type::q5_1 || t == ggml_type::q5_0 || t == ggml_type::q4_1 || t == ggml_type::q4_0 ||
                   t == ggml_type::iq4_nl;
        };
        if (!kv_ok(s1->type) || !kv_ok(s2->type)) return false;
        return (s1->type == ggml_type::bf16) == (s2->type == ggml_type::bf16);
    }
    case gop::get_rows:
        return vk_matmul_type(s0->type) || s0->type == ggml_type::i32;
    case gop::get_rows_back:
        return op.type == ggml_type::f32 && s0->type == ggml_type::f32;
    case gop::set_rows:
        return vk_f32_f16(s0->type) && (s1->type == ggml_type::i32 || s1->type == ggml_type::i64) && vk_cpy_type(op.type);
    case gop::cont:
    case gop::cpy:
    case gop::dup: { // :15281-15345
        const ggml_type a = s0->type, b = s1 ? s1->type : a;
        if (a == ggml_type::f32 && vk_cpy_type(b)) return true;
        if (b == ggml_type::f32 && vk_cpy_type(a)) return true;
        if (a == ggml_type::f16 && b == ggml_type::f16) return true;
        if ((a == ggml_type::f32 && b == ggml_type::i32) || (a == ggml_type::i32 && b == ggml_type::f32)) return true;
        return a == b && (!ggml_is_quantized(a) || (vk_contiguous(*s0) && vk_contiguous(op))) && vk_type_size(a) % 2 == 0;
    }
    case gop::repeat:
        return vk_type_size(op.type) == vk_type_size(s0->type) && (vk_type_size(op.type) == 4 || vk_type_size(op.type) == 2);
    case gop::repeat_back:
        return op.type == ggml_type::f32 && s0->type == ggml_type::f32;
    case gop::rope:
        return ggml_contiguous_rows(op) && ggml_contiguous_rows(*s0);
    case gop::rope_back: case gop::none: case gop::reshape: case gop::view: case gop::permute: case gop::transpose:
    case gop::rms_norm:
        return true;
    case gop::group_norm:
        return vk_contiguous(*s0);
    case gop::norm:
    case gop::l2_norm:
        return s0->type == ggml_type::f32 && op.type == ggml_type::f32;
    case gop::add: case gop::sub: case gop::mul: case gop::div:
        return vk_f32_f16(s0->type) && vk_f32_f16(s1->type) && vk_f32_f16(op.type);
    case gop::add_id:
        return s0->type == ggml_type::f32 && s1->type == ggml_type::f32 && s2->type == ggml_type::i32 && op.type == ggml_type::f32;
    case gop::silu_back:
    case gop::rms_norm_back:
        return vk_contiguous(*s0) && s0->type == ggml_type::f32;
    case gop::sqr: case gop::sqrt: case gop::sin: case gop::cos: case gop::clamp: case gop::leaky_relu:
    case gop::log: case gop::tri: case gop::diag:
        return vk_f32_f16(s0->type) && op.type == s0->type;
    case gop::opt_step_adamw:
    case gop::opt_step_sgd:
        return vk_contiguous(*s0) && s0->type == ggml_type::f32;
    case gop::out_prod:
        return vk_contiguous(*s0) && s0->type == ggml_type::f32 && vk_contiguous(*s1) && s1->type == ggml_type::f32 &&
               op.type == ggml_type::f32;
    case gop::argsort: // the Vulkan memory model assumed: no row-length limit
    case gop::top_k:   // a top-k pipeline assumed for every width
        return vk_contiguous(op) && vk_contiguous(*s0);
    case gop::upscale:
        // GGML_SCALE_FLAG_ANTIALIAS (1 << 9) only with GGML_SCALE_MODE_BILINEAR (1), ggml.h:2316-2324
        return s0->type == ggml_type::f32 && ((op.params[0] & 0x200) == 0 || (op.params[0] & 0xFF) == 1);
    case gop::acc:
        return s0->type == ggml_type::f32 && s1->type == ggml_type::f32 && op.type == ggml_type::f32;
    case gop::set:
        return s0->type == s1->type && s0->type == op.type && (s0->type == ggml_type::f32 || s0->type == ggml_type::i32);
    case gop::concat: { // ggml_vk_concat_supported (:298-310)
        if (s0->type != s1->type || s0->type != op.type) return false;
        if (!ggml_is_quantized(s0->type)) {
            const uint64_t ts = vk_type_size(s0->type);
            return ts == 1 || ts == 2 || ts == 4 || ts == 8;
        }
        return ggml_contiguous_rows(*s0) && ggml_contiguous_rows(*s1) && ggml_contiguous_rows(op);
    }
    case gop::add1:
        return (s0->type == ggml_type::f32 && s1->type == ggml_type::f32) ||
               (s0->type == ggml_type::f16 && (s1->type == ggml_type::f32 || s1->type == ggml_type::f16));
    case gop::arange:
        return op.type == ggml_type::f32;
    case gop::fill:
        return vk_f32_f16(op.type);
    case gop::scale:
    case gop::diag_mask_inf:
        return vk_contiguous(*s0) && s0->type == ggml_type::f32;
    case gop::pad: case gop::pad_reflect_1d: case gop::roll:
        return s0->type == ggml_type::f32;
    case gop::soft_max:
        return vk_contiguous(*s0) && s0->type == ggml_type::f32 && (s1 == nullptr || vk_f32_f16(s1->type));
    case gop::soft_max_back:
        return vk_contiguous(*s0) && s0->type == ggml_type::f32 && vk_contiguous(*s1) && s1->type == ggml_type::f32;
    case gop::sum: case gop::sum_rows: case gop::mean:
    case gop::cumsum: // subgroup arithmetic with full support assumed
        return s0->type == ggml_type::f32 && ggml_contiguous_rows(*s0);
    case gop::dsv4_hc_comb: case gop::dsv4_hc_pre: case gop::dsv4_hc_post: {
        if (op.type != ggml_type::f32) return false;
        for (const int32_t s : op.src) {
            if (s >= 0 && g.t[size_t(s)].type != ggml_type::f32) return false;
        }
        if (op.op == gop::dsv4_hc_pre && s0->ne[1] != 4) return false;
        return !(op.op == gop::dsv4_hc_post && s1->ne[1] != 4);
    }
    case gop::solve_tri: // 1024-wide workgroups and 48 KiB of shared memory assumed (the smallest of NVIDIA/AMD)
        return op.type == ggml_type::f32 && s0->type == ggml_type::f32 && s1->ne[0] <= 1024 &&
               49152 / uint64_t((s0->ne[0] + s1->ne[0]) * 4) > 0;
    case gop::argmax:
        return vk_contiguous(*s0) && s0->type == ggml_type::f32;
    case gop::count_equal:
        return vk_contiguous(*s0) && s0->type == ggml_type::i32 && vk_contiguous(*s1) && s1->type == ggml_type::i32;
    case gop::rwkv_wkv6: case gop::rwkv_wkv7:
        return true;
    case gop::gated_linear_attn:
        return s0->type == ggml_type::f32 && op.type == ggml_type::f32 && s0->ne[0] == 64;
    case gop::lightning_indexer: { // :15554-15587; fp16 assumed, tensors at aligned offsets assumed
        const gtensor * m = vk_src(g, op, 3);
        const ggml_type k = s1->type;
        const bool k_ok = k == ggml_type::f32 || k == ggml_type::f16 || k == ggml_type::bf16 || k == ggml_type::q8_0 ||
                          k == ggml_type::q5_1 || k == ggml_type::q5_0 || k == ggml_type::q4_1 || k == ggml_type::q4_0 ||
                          k == ggml_type::iq4_nl;
        if (!k_ok || s0->ne[0] != 128) return false;
        for (const gtensor * t : {s0, s1, s2, m, &op}) {
            if (t == nullptr) continue;
            const uint64_t ts = vk_type_size(t->type);
            if (t->nb[0] != ts) return false;
            for (size_t i = 1; i < 4; ++i) {
                if (t->nb[i] % ts != 0) return false;
            }
        }
        return true;
    }
    case gop::gated_delta_net: { // :15588-15600
        const int64_t sv = s2->ne[0];
        if (sv != 16 && sv != 32 && sv != 64 && sv != 128) return false;
        for (size_t i = 0; i < 6; ++i) {
            const gtensor * s = vk_src(g, op, i);
            if (s == nullptr || s->type != ggml_type::f32) return false;
        }
        return op.type == ggml_type::f32;
    }
    case gop::ssm_scan: { // :15601-15638: Mamba-2 only
        for (size_t i = 0; i < 6; ++i) {
            const gtensor * s = vk_src(g, op, i);
            if (s && ggml_is_quantized(s->type)) return false;
        }
        const gtensor * s3 = vk_src(g, op, 3);
        const gtensor * s6 = vk_src(g, op, 6);
        if ((s6 && s6->type != ggml_type::i32) || s0->type != ggml_type::f32 || op.type != ggml_type::f32) return false;
        if (!(s3 && s3->nb[1] == 4)) return false;
        return (s0->ne[0] == 128 || s0->ne[0] == 256) && s0->ne[1] % 16 == 0;
    }
    case gop::ssm_conv:
        return s0->type == ggml_type::f32;
    default: // convolutions, pooling, losses: in no graph template
        return false;
    }
}

bool vulkan_device::offload_op(const gtensor & op) const {
    int64_t batch;
    switch (op.op) {
    case gop::get_rows: batch = 0; break;
    case gop::mul_mat: batch = op.ne[1]; break;
    case gop::mul_mat_id: case gop::rope: case gop::rope_back: batch = op.ne[2]; break;
    default: batch = op.ne[1] * op.ne[2] * op.ne[3]; break; // ggml_nrows
    }
    return batch >= op_offload_min_batch;
}

namespace {

using vk_pattern = std::initializer_list<gop>;
// ggml-vulkan-types.h:502-552 (v0.5.0)
constexpr vk_pattern vk_topk_moe_early_softmax_norm{gop::soft_max, gop::reshape, gop::argsort, gop::view, gop::get_rows,
                                                    gop::reshape, gop::sum_rows, gop::clamp, gop::div, gop::reshape};
constexpr vk_pattern vk_topk_moe_sigmoid_norm_bias{gop::unary, gop::reshape, gop::add, gop::argsort, gop::view, gop::get_rows,
                                                   gop::reshape, gop::sum_rows, gop::clamp, gop::div, gop::reshape};
constexpr vk_pattern vk_topk_moe_sqrt_softplus_norm_bias{gop::unary, gop::sqrt, gop::reshape, gop::add, gop::argsort, gop::view,
                                                         gop::get_rows, gop::reshape, gop::sum_rows, gop::clamp, gop::div,
                                                         gop::reshape};
constexpr vk_pattern vk_topk_moe_early_softmax{gop::soft_max, gop::reshape, gop::argsort, gop::view, gop::get_rows};
constexpr vk_pattern vk_topk_moe_late_softmax{gop::argsort, gop::view, gop::get_rows, gop::reshape, gop::soft_max, gop::reshape};
constexpr vk_pattern vk_snake{gop::mul, gop::sin, gop::sqr, gop::mul, gop::add};
constexpr vk_pattern vk_topk_qsa{gop::get_rows, gop::permute, gop::cont, gop::cpy, gop::reshape, gop::add, gop::top_k};
constexpr vk_pattern vk_rms_norm_mul_add_mul{gop::rms_norm, gop::mul, gop::add, gop::mul};
constexpr vk_pattern vk_rms_norm_mul_add{gop::rms_norm, gop::mul, gop::add};
constexpr vk_pattern vk_rms_norm_mul_rope_view_set_rows{gop::rms_norm, gop::mul, gop::rope, gop::view, gop::set_rows};
constexpr vk_pattern vk_rms_norm_view_set_rows{gop::rms_norm, gop::view, gop::set_rows};
constexpr vk_pattern vk_rope_view_set_rows{gop::rope, gop::view, gop::set_rows};

// the state of one ggml_vk_graph_optimize pass over a split (:14393-14762)
struct vk_reorder {
    const ggraph & g;
    const std::vector<int32_t> & nodes;
    const std::function<void(int32_t, int32_t)> & add;
    int n;
    std::vector<char> used;
    std::set<int32_t> used_set; // used_node_set
    std::vector<int32_t> order;
    int first_unused = 0;

    const gtensor & at(int i) const { return g.t[size_t(nodes[size_t(i)])]; }
    static int32_t src_of(const gtensor & t, size_t s) { return s < t.src.size() ? t.src[s] : -1; }
    static bool is_empty(const gtensor & t) {
        return t.op == gop::none || t.op == gop::reshape || t.op == gop::transpose || t.op == gop::view || t.op == gop::permute;
    }
    int32_t base(int32_t t) const { return g.t[size_t(t)].view_src >= 0 ? g.t[size_t(t)].view_src : t; }
    // is_src_of (:14404-14427): dst reads src, directly or through storage a view shares
    bool is_src_of(int32_t dst, int32_t src) const {
        const gtensor & d = g.t[size_t(dst)];
        const gtensor & s = g.t[size_t(src)];
        for (size_t k = 0; k < gsrc::capacity; ++k) {
            const int32_t ds = src_of(d, k), ss = src_of(s, k);
            if (ds == src) return true;
            if (is_empty(d) || is_empty(s)) continue;
            if (ds >= 0 && base(ds) == base(src)) return true;
            if (ss >= 0 && base(dst) == base(ss)) return true;
        }
        return base(dst) == base(src);
    }
    bool empty_or_scheduled_between(int lo, int hi) const {
        for (int v = lo; v < hi; ++v) {
            if (!used[size_t(v)] && !is_empty(at(v))) return false;
        }
        return true;
    }
    bool match(vk_pattern p, int start) const {
        if (start < 0 || start + int(p.size()) > n) return false;
        for (size_t j = 0; j < p.size(); ++j) {
            if (at(start + int(j)).op != p.begin()[j] || used[size_t(start) + j]) return false;
        }
        return true;
    }
    void take(int i) {
        order.push_back(nodes[size_t(i)]);
        used_set.insert(nodes[size_t(i)]);
        used[size_t(i)] = 1;
    }
    void advance() {
        while (first_unused < n && used[size_t(first_unused)]) ++first_unused;
    }
    bool keep(vk_pattern p) {
        if (!match(p, first_unused)) return false;
        for (size_t j = 0; j < p.size(); ++j) take(first_unused + int(j));
        advance();
        return true;
    }
    // keep_topk_moe_pattern with add_pattern_alloc_deps (:14477-14509): the pattern's outside sources stay until its
    // last node, or the SCALE that follows it
    bool keep_topk_moe(vk_pattern p) {
        if (!match(p, first_unused)) return false;
        int last = first_unused + int(p.size()) - 1;
        if (last + 1 < n && at(last + 1).op == gop::scale) ++last;
        std::set<int32_t> seen;
        for (size_t j = 0; j < p.size(); ++j) {
            const gtensor & node = at(first_unused + int(j));
            for (const int32_t s : node.src) {
                if (s >= 0 && seen.insert(s).second) add(s, nodes[size_t(last)]);
            }
            seen.insert(nodes[size_t(first_unused) + j]);
        }
        return keep(p);
    }
    bool starts_pattern(int j) const {
        for (int o = 0; o < int(vk_topk_qsa.size()); ++o) {
            if (match(vk_topk_qsa, j - o)) return true;
        }
        for (vk_pattern p : {vk_topk_moe_early_softmax_norm, vk_topk_moe_sigmoid_norm_bias, vk_topk_moe_sqrt_softplus_norm_bias,
                             vk_topk_moe_early_softmax, vk_topk_moe_late_softmax, vk_snake, vk_rms_norm_mul_add_mul,
                             vk_rms_norm_mul_add, vk_rms_norm_mul_rope_view_set_rows, vk_rms_norm_view_set_rows,
                             vk_rope_view_set_rows}) {
            if (match(p, j)) return true;
        }
        return false;
    }
    // ggml_vk_can_fuse_unary_mul (:13174-13202)
    bool can_fuse_unary_mul(int ui, int mi) const {
        const gtensor & u = at(ui);
        const gtensor & m = at(mi);
        const int32_t op = u.params[0];
        if (op != vk_unary_gelu && op != vk_unary_sigmoid && op != vk_unary_silu && op != vk_unary_softplus) return false;
        if (!vk_f32_f16(u.type) || u.type != m.type) return false;
        const int32_t un = nodes[size_t(ui)];
        if (src_of(m, 0) != un && src_of(m, 1) != un) return false;
        const int32_t other = src_of(m, 0) == un ? src_of(m, 1) : src_of(m, 0);
        if (other < 0 || g.t[size_t(other)].type != u.type) return false;
        if (src_of(u, 0) < 0 || !ggml_contiguous_m_n(g.t[size_t(other)], 1, 4) || !ggml_contiguous_m_n(g.t[size_t(src_of(u, 0))], 1, 4)) {
            return false;
        }
        if (src_of(m, 0) == un) return vk_can_repeat(g.t[size_t(other)], u);
        return vk_can_repeat(u, g.t[size_t(src_of(m, 0))]);
    }
    bool done_or_weight(int32_t t) const { return t >= 0 && (g.t[size_t(t)].op == gop::none || used_set.count(t) > 0); }

    // the nodes a first pass takes along with j (:14605-14725)
    void pull_after(int j, std::vector<int> & cur) {
        const gtensor & nj = at(j);
        int rope_idx = j;
        const int lim = std::min(j + 15, n);
        if (j > 0 && nj.op == gop::mul && at(j - 1).op == gop::rms_norm) { // RMS_NORM + MUL, then the ROPE of it
            for (int k = j + 1; k < lim; ++k) {
                const gtensor & r = at(k);
                const int32_t s1 = src_of(r, 1), s2 = src_of(r, 2);
                if (r.op == gop::rope && src_of(r, 0) == nodes[size_t(j)] && s1 >= 0 && g.t[size_t(s1)].op == gop::none &&
                    (s2 < 0 || g.t[size_t(s2)].op == gop::none)) {
                    rope_idx = k;
                    cur.push_back(k);
                    used[size_t(k)] = 1;
                    break;
                }
            }
        }
        const gop rop = at(rope_idx).op;
        if (rop == gop::rope || rop == gop::rms_norm) { // ROPE/RMS_NORM + VIEW + SET_ROWS made consecutive
            int view_idx = -1, set_rows_idx = -1;
            for (int k = rope_idx + 1; k < std::min(rope_idx + 15, n); ++k) {
                if (used[size_t(k)]) continue;
                const gtensor & t = at(k);
                if (view_idx == -1 && t.op == gop::view && src_of(t, 0) == nodes[size_t(rope_idx)]) {
                    view_idx = k;
                    continue;
                }
                if (view_idx != -1 && t.op == gop::set_rows && src_of(t, 0) == nodes[size_t(view_idx)]) {
                    set_rows_idx = k;
                    break;
                }
            }
            if (set_rows_idx != -1) {
                bool can_pull = ggml_can_fuse_subgraph_ext(g, nodes, {size_t(rope_idx), size_t(view_idx), size_t(set_rows_idx)},
                                                           {rop, gop::view, gop::set_rows}, {size_t(set_rows_idx)});
                for (int c = rope_idx + 1; can_pull && c < set_rows_idx; ++c) {
                    if (!used[size_t(c)] && c != view_idx && !is_empty(at(c)) &&
                        is_src_of(nodes[size_t(set_rows_idx)], nodes[size_t(c)])) {
                        can_pull = false;
                    }
                }
                if (can_pull) {
                    cur.push_back(view_idx);
                    cur.push_back(set_rows_idx);
                    used[size_t(view_idx)] = used[size_t(set_rows_idx)] = 1;
                }
            }
        }
        // MUL_MAT_ID + ADD_ID + MUL, MUL_MAT + ADD + ADD: the consumer whose other source is ready
        const bool id_chain = j > 0 && nj.op == gop::add_id && at(j - 1).op == gop::mul_mat_id;
        const bool add_chain = j > 0 && nj.op == gop::add && at(j - 1).op == gop::mul_mat;
        if (id_chain || add_chain) {
            const gop want = id_chain ? gop::mul : gop::add;
            for (int k = j + 1; k < lim; ++k) {
                const gtensor & t = at(k);
                if (t.op == want && src_of(t, 0) == nodes[size_t(j)] && done_or_weight(src_of(t, 1))) {
                    cur.push_back(k);
                    used[size_t(k)] = 1;
                    break;
                }
            }
        }
        if (j > 0 && nj.op == gop::add && at(j - 1).op == gop::ssm_conv) { // SSM_CONV + ADD + UNARY
            for (int k = j + 1; k < lim; ++k) {
                if (at(k).op == gop::unary && src_of(at(k), 0) == nodes[size_t(j)]) {
                    cur.push_back(k);
                    used[size_t(k)] = 1;
                    break;
                }
            }
        }
        if (j > 0 && nj.op == gop::unary) { // UNARY + MUL
            const int32_t un = nodes[size_t(j)];
            for (int k = j + 1; k < lim; ++k) {
                const gtensor & mul = at(k);
                if (mul.op != gop::mul || (src_of(mul, 0) != un && src_of(mul, 1) != un)) continue;
                const int32_t other = src_of(mul, 0) == un ? src_of(mul, 1) : src_of(mul, 0);
                if (!done_or_weight(other) || !can_fuse_unary_mul(j, k)) continue;
                cur.push_back(k);
                used[size_t(k)] = 1;
                break;
            }
        }
    }

    // the exceptions of the first pass's dependency check (:14590-14600): a fusion with the node just taken
    bool fusable_after(int c, int j, int back) const {
        if (c != back) return false;
        const gop a = at(c).op, b = at(j).op;
        if ((a == gop::rms_norm || a == gop::unary) && b == gop::mul && empty_or_scheduled_between(c + 1, j)) return true;
        if (j != c + 1) return false;
        return (a == gop::mul_mat && b == gop::add) || (a == gop::mul_mat_id && (b == gop::add_id || b == gop::mul)) ||
               (a == gop::add && b == gop::add) || (a == gop::ssm_conv && (b == gop::add || b == gop::unary));
    }

    void run() {
        constexpr int num_to_check = 20;
        while (first_unused < n) {
            if (keep_topk_moe(vk_topk_moe_early_softmax_norm) || keep_topk_moe(vk_topk_moe_sigmoid_norm_bias) ||
                keep_topk_moe(vk_topk_moe_sqrt_softplus_norm_bias) || keep_topk_moe(vk_topk_moe_early_softmax) ||
                keep_topk_moe(vk_topk_moe_late_softmax) || keep(vk_snake) || keep(vk_topk_qsa) ||
                keep(vk_rms_norm_mul_add_mul) || keep(vk_rms_norm_mul_add) || keep(vk_rms_norm_mul_rope_view_set_rows) ||
                keep(vk_rms_norm_view_set_rows) || keep(vk_rope_view_set_rows)) {
                continue;
            }
            std::vector<int> cur{first_unused};
            const int end = std::min(first_unused + num_to_check, n);
            // first pass: real nodes that depend on nothing unscheduled
            for (int j = first_unused + 1; j < end; ++j) {
                if (used[size_t(j)] || is_empty(at(j)) || starts_pattern(j)) continue;
                bool ok = true;
                for (int c = first_unused; c < j && ok; ++c) {
                    if (!used[size_t(c)] && is_src_of(nodes[size_t(j)], nodes[size_t(c)]) && !fusable_after(c, j, cur.back())) ok = false;
                }
                if (!ok) continue;
                cur.push_back(j);
                pull_after(j, cur);
            }
            // second pass: the views whose sources are scheduled or taken (not after an ADD: add->rms_norm fusion)
            if (at(cur.back()).op != gop::add) {
                for (int j = first_unused + 1; j < end; ++j) {
                    if (used[size_t(j)] || !is_empty(at(j))) continue;
                    bool ok = true;
                    for (int c = first_unused; c < j && ok; ++c) {
                        if (!used[size_t(c)] && is_src_of(nodes[size_t(j)], nodes[size_t(c)]) &&
                            std::find(cur.begin(), cur.end(), c) == cur.end()) {
                            ok = false;
                        }
                    }
                    if (ok) cur.push_back(j);
                }
            }
            for (const int c : cur) take(c);
            advance();
        }
    }
};

} // namespace

void vulkan_device::graph_optimize(const ggraph & g, std::vector<int32_t> & nodes,
                                   const std::function<void(int32_t, int32_t)> & add) const {
    vk_reorder r{g, nodes, add, int(nodes.size()), std::vector<char>(nodes.size(), 0), {}, {}, 0};
    r.order.reserve(nodes.size());
    r.run();
    nodes = std::move(r.order);
}

std::string vulkan_backend::name() const { return "Vulkan" + std::to_string(dev_.index); }
gbuft vulkan_backend::compute_buft() const { return {gbuft::kind::gpu, dev_.index}; }
bool vulkan_backend::supports_op(const ggraph & g, int32_t t) const { return dev_.supports_op(g, g.t[size_t(t)]); }
bool vulkan_backend::offload_op(const ggraph & g, int32_t t) const { return dev_.offload_op(g.t[size_t(t)]); }
bool vulkan_backend::supports_buft(const gbuft & b) const { return b.k == gbuft::kind::gpu && b.device == dev_.index; }
void vulkan_backend::graph_optimize(const ggraph & g, std::vector<int32_t> & nodes,
                                    const std::function<void(int32_t, int32_t)> & add) const {
    dev_.graph_optimize(g, nodes, add);
}

} // namespace kvfit::detail
