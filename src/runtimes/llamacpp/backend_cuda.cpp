// The CUDA and CPU backends as llama.cpp's scheduler sees them (backend_cuda.h): what each device answers about a
// tensor, read from each release's own source (v0.5.0 and 5b4ebc5, as bundled by node-llama-cpp), every answer
// checked against the release's ggml-cuda compiled for a simulated GPU (tools/simcuda; tools/sched_check compares
// kvfit's answers with the real ones, tensor by tensor, on every graph of the conformance models).
//   ggml-cuda.cu ggml_backend_cuda_device_supports_op (v0.5.0 :5132-5591, 5b4ebc5 the same switch with the
//     differences marked below), supports_buft (:5593-5597), offload_op with get_op_batch_size (:5599-5618) and
//     op_offload_min_batch_size 32 (GGML_OP_OFFLOAD_MIN_BATCH, :5788), the buffer type's alignment 128 and
//     get_alloc_size (:902-925: the flash-attention f16 copies, MATRIX_ROW_PADDING of quantized rows), graph_optimize's
//     allocation dependencies (:4505-4600 v0.5.0: the MoE weighted reduction and the top-k MoE fusion; 5b4ebc5
//     :4499-4521: the weighted reduction only);
//   fattn.cu ggml_cuda_get_best_fattn_kernel (v0.5.0 :541-716, 5b4ebc5 :491-664) and the vector kernels a default
//     build compiles (GGML_CUDA_FA_QUANTS f16-f16, q4_0-q4_0, q8_0-q8_0, bf16-bf16), fattn-common.cuh:53-85;
//   ggml-cpu.cpp ggml_backend_cpu_device_supports_op / supports_buft (:424-489).
#include "runtimes/llamacpp/backend_cuda.h"

#include <algorithm>
#include <cstring>

namespace kvfit::detail {

namespace {

constexpr uint8_t k_flag_output = 2, k_flag_param = 4, k_flag_compute = 16;

// ggml's unary and GLU op ids (enum ggml_unary_op / ggml_glu_op, ggml.h; the same in both releases)
enum unary_op : int32_t {
    u_abs, u_sgn, u_neg, u_step, u_tanh, u_elu, u_relu, u_sigmoid, u_gelu, u_gelu_quick, u_silu, u_hardswish,
    u_hardsigmoid, u_exp, u_expm1, u_softplus, u_gelu_erf, u_xielu, u_floor, u_ceil, u_round, u_trunc
};
constexpr int32_t k_prec_f32 = 10; // GGML_PREC_F32

float param_f32(const gtensor & t, size_t i) {
    float f;
    std::memcpy(&f, &t.params[i], sizeof f);
    return f;
}

const gtensor & src(const ggraph & g, const gtensor & t, size_t i) { return g.t[size_t(t.src[i])]; }
bool has_src(const gtensor & t, size_t i) { return i < t.src.size() && t.src[i] >= 0; }

// --- ggml.c predicates --------------------------------------------------------------------------------------------
bool contiguous_m_n(const gtensor & t, int m, int n) { // ggml_is_contiguous_m_n, ggml.c:1474-1492
    const ggml_type_traits & tr = ggml_traits(t.type);
    uint64_t next = tr.type_size;
    if (t.ne[0] != int64_t(tr.block_size) && t.nb[0] != next) return false;
    next *= uint64_t(t.ne[0]) / tr.block_size;
    for (int i = 1; i < n; ++i) {
        if (i > m) {
            if (t.ne[size_t(i)] != 1 && t.nb[size_t(i)] != next) return false;
            next *= uint64_t(t.ne[size_t(i)]);
        } else {
            next = uint64_t(t.ne[size_t(i)]) * t.nb[size_t(i)];
        }
    }
    return true;
}
bool contiguous(const gtensor & t) { return contiguous_m_n(t, 0, 4); }
bool contiguous_1(const gtensor & t) { return contiguous_m_n(t, 1, 4); }
bool contiguous_2(const gtensor & t) { return contiguous_m_n(t, 2, 4); }
bool contiguous_to_3(const gtensor & t) { return contiguous_m_n(t, 0, 3); }
bool contiguous_rows(const gtensor & t) {
    const ggml_type_traits & tr = ggml_traits(t.type);
    return t.ne[0] == int64_t(tr.block_size) || t.nb[0] == tr.type_size;
}
uint64_t type_size(ggml_type t) { return ggml_traits(t).type_size; }
uint64_t element_size(const gtensor & t) { return type_size(t.type); }
bool same_shape(const gtensor & a, const gtensor & b) { return a.ne == b.ne; }
int64_t nrows(const gtensor & t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

// --- flash attention (fattn.cu) ----------------------------------------------------------------------------------
enum class fa_kernel { none, vec, tile, mma_f16 };

bool fattn_kv_type_supported(ggml_type t) { // ggml_cuda_fattn_kv_type_supported (v0.5.0 :525-539; 5b4ebc5 the same)
    switch (t) {
    case ggml_type::f32: case ggml_type::f16: case ggml_type::bf16: case ggml_type::q4_0: case ggml_type::q4_1:
    case ggml_type::q5_0: case ggml_type::q5_1: case ggml_type::q8_0:
        return true;
    default:
        return false;
    }
}

// A vector kernel instance of a default build: head sizes 64/128/256 and the pairs GGML_CUDA_FA_QUANTS compiles,
// f32 read as f16 (fattn.cu FATTN_VEC_CASE)
bool fattn_vec_case(int64_t head, ggml_type k, ggml_type v) {
    if (head != 64 && head != 128 && head != 256) return false;
    auto as16 = [](ggml_type t) { return t == ggml_type::f32 ? ggml_type::f16 : t; };
    const ggml_type a = as16(k), b = as16(v);
    if (a != b) return false;
    return a == ggml_type::f16 || a == ggml_type::q4_0 || a == ggml_type::q8_0 || a == ggml_type::bf16;
}

bool mma_may_use_sparse(int64_t dkq, int64_t dv, int ncols1, int ncols2, cuda_release r) { // fattn-mma-f16.cuh
    if (dkq == 512 && dv == 512 && ncols1 == 1 && ncols2 == 8) return true;
    if (dkq == 576 && dv == 512 && ncols1 == 1 && ncols2 == 16) return true;
    if (r == cuda_release::v0_5_0 && dkq == 256 && dv == 256 && ncols2 == 8 && (ncols1 == 1 || ncols1 == 8)) return true;
    return false;
}

bool mma_shall_use_sparse(int cc, const ggraph & g, const gtensor & dst, int ncols1, int ncols2) { // fattn.cu:128-153
    const gtensor & Q = src(g, dst, 0);
    const gtensor & K = src(g, dst, 1);
    if (!has_src(dst, 3)) return false;
    const gtensor & mask = src(g, dst, 3);
    const float max_bias = param_f32(dst, 1), softcap = param_f32(dst, 2);
    const int32_t n_kv_max = dst.params[4];
    const int64_t n_gather = (ncols1 == 1 ? std::min<int64_t>(Q.ne[1], 64 / ncols2) : ncols1) * int64_t(n_kv_max);
    return cc >= 750 && n_kv_max > 0 && max_bias == 0.0f && softcap == 0.0f && mask.ne[0] == K.ne[1] &&
           mask.ne[1] >= Q.ne[1] && mask.ne[2] == 1 && K.ne[1] >= std::max<int64_t>(4096, 2 * n_gather);
}

} // namespace

int cuda_highest_compiled_arch(int cc) {
    // __CUDA_ARCH_LIST__ of a default CMake build with CUDA >= 12.9 (ggml/src/ggml-cuda/CMakeLists.txt:27-57 v0.5.0):
    // 50/61/70/75/80-virtual, 86-real, 89-real, 90-virtual, 120a-real, 121a-real
    int best = -1;
    for (const int a : {500, 610, 700, 750, 800, 860, 890, 900, 1200, 1210}) {
        if (a <= cc) best = a;
    }
    return best;
}

namespace {

fa_kernel best_fattn_kernel(const cuda_device & dev, const ggraph & g, const gtensor & dst) {
    const int cc = dev.cc;
    const gtensor & Q = src(g, dst, 0);
    const gtensor & K = src(g, dst, 1);
    const gtensor & V = src(g, dst, 2);
    const bool has_mask = has_src(dst, 3);
    const int64_t gqa = Q.ne[2] / K.ne[2];
    const float max_bias = param_f32(dst, 1);
    bool gqa_opt = gqa >= 2 && has_mask && max_bias == 0.0f && K.ne[1] % 256 == 0; // FATTN_KQ_STRIDE
    for (int s = 0; s < 4; ++s) {
        if (s == 3 && !has_mask) continue;
        const gtensor & t = src(g, dst, size_t(s));
        if (ggml_is_quantized(t.type)) continue;
        for (size_t i = 1; i < 4; ++i) {
            if (t.nb[i] % 16 != 0) { gqa_opt = false; break; }
        }
    }
    switch (K.ne[0]) {
    case 40: case 64: case 72: case 80: case 96: case 128: case 112: case 256:
        if (V.ne[0] != K.ne[0]) return fa_kernel::none;
        break;
    case 192:
        if (V.ne[0] != 128 || !gqa_opt || gqa % 8 != 0) return fa_kernel::none;
        break;
    case 320:
        if (V.ne[0] != 256 || !gqa_opt || gqa % 32 != 0) return fa_kernel::none;
        break;
    case 512:
        if (V.ne[0] != K.ne[0] || !gqa_opt) return fa_kernel::none;
        break;
    case 576:
        if (V.ne[0] != 512 || !gqa_opt) return fa_kernel::none;
        break;
    default:
        return fa_kernel::none;
    }
    // 5b4ebc5 without GGML_CUDA_FA_ALL_QUANTS: K and V of one type only (fattn.cu:575-579 there)
    if (dev.release == cuda_release::r5b4ebc5 && K.type != V.type) return fa_kernel::none;
    if (!fattn_kv_type_supported(K.type) || !fattn_kv_type_supported(V.type)) return fa_kernel::none;
    if (has_mask && src(g, dst, 3).ne[2] != 1) return fa_kernel::none;
    const bool can_vec = Q.ne[0] <= 256 && Q.ne[0] % 64 == 0 && Q.ne[0] != 192 && K.ne[1] % 256 == 0;
    const int hca = cuda_highest_compiled_arch(cc);
    if (hca >= 750 && Q.ne[0] != 40 && Q.ne[0] != 72) { // turing_mma_available
        if (can_vec) {
            if (!ggml_is_quantized(K.type) && !ggml_is_quantized(V.type)) {
                bool sparse = false;
                if (dev.release == cuda_release::v0_5_0) {
                    sparse = gqa_opt && gqa > 4 && mma_may_use_sparse(K.ne[0], V.ne[0], 1, 8, dev.release) &&
                             mma_shall_use_sparse(cc, g, dst, 1, 8);
                    if (!sparse && cc >= 890 && Q.ne[1] == 1 && Q.ne[3] == 1 && !(gqa > 4 && (Q.ne[0] >= 256 || K.ne[1] >= 8192))) {
                        return fa_kernel::vec;
                    }
                } else if (cc >= 890 && Q.ne[1] == 1 && Q.ne[3] == 1 && !(gqa > 4 && K.ne[1] >= 8192)) {
                    return fa_kernel::vec;
                }
            } else if (cc >= 890) {
                if (Q.ne[1] <= 2) return fa_kernel::vec;
            } else if (Q.ne[1] == 1) {
                return fa_kernel::vec;
            }
            if (!gqa_opt && Q.ne[1] == 1) return fa_kernel::vec;
        }
        return fa_kernel::mma_f16;
    }
    const int64_t ncols2_max = Q.ne[0] == 320 ? 32 : ((Q.ne[0] == 576 || Q.ne[0] == 192) ? 16 : 8);
    int64_t eff = 1;
    while (gqa % (2 * eff) == 0 && eff < ncols2_max) eff *= 2;
    if (hca == 700 && Q.ne[0] != 40 && Q.ne[0] != 72) { // volta_mma_available
        if (can_vec && Q.ne[1] * eff <= 2) return fa_kernel::vec;
        if (Q.ne[1] * eff <= 16) return fa_kernel::tile;
        return fa_kernel::mma_f16;
    }
    // (AMD MFMA / WMMA: not CUDA devices)
    if (can_vec) {
        if (!ggml_is_quantized(K.type) && !ggml_is_quantized(V.type)) {
            if (Q.ne[1] == 1 && !gqa_opt) return fa_kernel::vec;
        } else if (Q.ne[1] <= 2) {
            return fa_kernel::vec;
        }
    }
    return fa_kernel::tile;
}

/// ggml_cuda_flash_attn_ext_get_alloc_size (fattn.cu:719-753 v0.5.0): nbytes(dst), then the f16 copies of K and V the
/// kernel converts (fattn-common.cuh:53-85), each 128-B aligned after the previous end.
uint64_t fattn_alloc_size(const cuda_device & dev, const ggraph & g, const gtensor & dst) {
    const gtensor & Q = src(g, dst, 0);
    const gtensor & K = src(g, dst, 1);
    const gtensor & V = src(g, dst, 2);
    bool need_k = false, need_v = false;
    switch (best_fattn_kernel(dev, g, dst)) {
    case fa_kernel::tile:
    case fa_kernel::mma_f16:
        need_k = need_v = true;
        break;
    case fa_kernel::vec: {
        const bool fallback = dev.release == cuda_release::v0_5_0 && !fattn_vec_case(Q.ne[0], K.type, V.type);
        need_k = K.type == ggml_type::f32 || fallback;
        need_v = V.type == ggml_type::f32 || fallback;
    } break;
    case fa_kernel::none:
        break;
    }
    const bool v_is_k_view = V.is_view() && (V.view_src == dst.src[1] || (V.view_src == K.view_src && V.view_offs == K.view_offs));
    auto pad128 = [](uint64_t x) { return (x + 127) / 128 * 128; };
    uint64_t end = gtensor_nbytes(dst);
    if (need_k && K.type != ggml_type::f16) end = pad128(end) + gtensor_nelements(K) * 2;
    if (need_v && V.type != ggml_type::f16 && !v_is_k_view) end = pad128(end) + gtensor_nelements(V) * 2;
    return end;
}

bool lightning_indexer_supported(const ggraph & g, const gtensor & dst) { // lightning-indexer.cu:536-586
    const gtensor & q = src(g, dst, 0);
    const gtensor & k = src(g, dst, 1);
    if (q.ne[0] != 128) return false;
    if (q.ne[1] != 64 && q.ne[1] != 32) return false;
    for (const gtensor * t : {&q, &k}) {
        if (ggml_is_quantized(t->type)) continue;
        for (size_t i = 1; i < 4; ++i) {
            if (t->nb[i] % 16 != 0) return false;
        }
    }
    switch (k.type) {
    case ggml_type::f32: case ggml_type::bf16: case ggml_type::f16: case ggml_type::q8_0: case ggml_type::q5_1:
    case ggml_type::q5_0: case ggml_type::q4_1: case ggml_type::q4_0:
        return true;
    default:
        return false;
    }
}

bool is_float_or_bf16(ggml_type t) { return t == ggml_type::f32 || t == ggml_type::f16 || t == ggml_type::bf16; }

} // namespace

bool cuda_device::supports_op(const ggraph & g, const gtensor & op, const std::vector<gbuffer> & buffers) const {
    // every source in a CUDA buffer must be on this device (:5135-5143)
    for (size_t i = 0; i < op.src.size(); ++i) {
        if (op.src[i] < 0) continue;
        const gtensor & s = g.t[size_t(op.src[i])];
        if (s.buffer >= 0) {
            const gbuft & b = buffers[size_t(s.buffer)].type;
            if (b.k == gbuft::kind::gpu && b.device != index) return false;
        }
    }
    const bool v050 = release == cuda_release::v0_5_0;
    switch (op.op) {
    case gop::unary:
        switch (op.params[0]) {
        case u_abs: case u_sgn: case u_neg: case u_step: case u_gelu: case u_silu: case u_relu: case u_sigmoid:
        case u_hardsigmoid: case u_hardswish: case u_gelu_erf: case u_gelu_quick: case u_tanh: case u_exp:
        case u_expm1: case u_softplus: case u_elu: case u_xielu: case u_floor: case u_ceil: case u_round: case u_trunc:
            return contiguous(src(g, op, 0));
        default:
            return false;
        }
    case gop::glu:
        // REGLU, GEGLU, SWIGLU, SWIGLU_OAI, GEGLU_ERF, GEGLU_QUICK, SWIGLU_CLAMP: every GLU op of both releases
        return op.params[0] >= 0 && op.params[0] <= 6 && contiguous_1(src(g, op, 0));
    case gop::mul_mat:
    case gop::mul_mat_id: {
        const gtensor & a = src(g, op, 0);
        const gtensor & b = src(g, op, 1);
        if (a.nb[0] != element_size(a) || b.nb[0] != element_size(b)) return false;
        if (b.type == ggml_type::f16 && a.type != ggml_type::f16) return false;
        if (v050 && op.op == gop::mul_mat_id && op.params[3] == k_prec_f32) return false;
        switch (a.type) {
        case ggml_type::f32: case ggml_type::f16: case ggml_type::q4_0: case ggml_type::q4_1: case ggml_type::q5_0:
        case ggml_type::q5_1: case ggml_type::q8_0: case ggml_type::mxfp4: case ggml_type::q2_k: case ggml_type::q3_k:
        case ggml_type::q4_k: case ggml_type::q5_k: case ggml_type::q6_k: case ggml_type::q8_k: case ggml_type::iq1_m:
        case ggml_type::iq1_s: case ggml_type::iq2_s: case ggml_type::iq2_xs: case ggml_type::iq2_xxs:
        case ggml_type::iq3_s: case ggml_type::iq3_xxs: case ggml_type::iq4_nl: case ggml_type::iq4_xs:
        case ggml_type::bf16:
            return true;
        default:
            return false;
        }
    }
    case gop::out_prod:
        return op.type == ggml_type::f32 && src(g, op, 0).type == ggml_type::f32 && src(g, op, 1).type == ggml_type::f32;
    case gop::get_rows: {
        const gtensor & s = src(g, op, 0);
        switch (s.type) {
        case ggml_type::f16: case ggml_type::f32: case ggml_type::bf16: case ggml_type::i32: case ggml_type::q4_0:
        case ggml_type::q4_1: case ggml_type::q5_0: case ggml_type::q5_1: case ggml_type::q8_0: case ggml_type::q2_k:
        case ggml_type::q3_k: case ggml_type::q4_k: case ggml_type::q5_k: case ggml_type::q6_k: case ggml_type::iq2_xxs:
        case ggml_type::iq2_xs: case ggml_type::iq2_s: case ggml_type::iq3_xxs: case ggml_type::iq3_s:
        case ggml_type::iq1_s: case ggml_type::iq1_m: case ggml_type::iq4_xs:
            return true;
        case ggml_type::iq4_nl:
        case ggml_type::mxfp4:
            return s.ne[0] % 256 == 0; // QK_K
        default:
            return false;
        }
    }
    case gop::get_rows_back:
        return op.type == ggml_type::f32 && src(g, op, 0).type == ggml_type::f32 && op.ne[2] == 1 && op.ne[3] == 1;
    case gop::set_rows: {
        const ggml_type t = op.type, s0 = src(g, op, 0).type, s1 = src(g, op, 1).type;
        const bool from_f32 = (t == ggml_type::f32 || t == ggml_type::f16 || t == ggml_type::bf16 || t == ggml_type::q4_0 ||
                               t == ggml_type::q4_1 || t == ggml_type::q5_0 || t == ggml_type::q5_1 || t == ggml_type::q8_0 ||
                               t == ggml_type::iq4_nl) && s0 == ggml_type::f32;
        return (from_f32 || (t == ggml_type::f16 && s0 == ggml_type::f16)) && (s1 == ggml_type::i64 || s1 == ggml_type::i32);
    }
    case gop::set: {
        const ggml_type t = op.type;
        return (t == ggml_type::f32 || t == ggml_type::i32) && t == src(g, op, 0).type && t == src(g, op, 1).type;
    }
    case gop::cpy: {
        const gtensor & a = src(g, op, 0);
        const gtensor & b = src(g, op, 1);
        const ggml_type s0 = a.type, s1 = b.type;
        if (is_float_or_bf16(s0) && is_float_or_bf16(s1)) return true;
        const ggml_type q[] = {ggml_type::q8_0, ggml_type::q4_0, ggml_type::q4_1, ggml_type::q5_0, ggml_type::q5_1};
        for (const ggml_type x : q) {
            if ((s0 == ggml_type::f32 && s1 == x) || (s0 == x && s1 == ggml_type::f32)) return true;
        }
        if (s0 == ggml_type::f32 && s1 == ggml_type::iq4_nl) return true;
        if ((s0 == ggml_type::f32 && s1 == ggml_type::i32) || (s0 == ggml_type::i32 && s1 == ggml_type::f32) ||
            (s0 == ggml_type::i32 && s1 == ggml_type::i32)) {
            return true;
        }
        return s0 == s1 && contiguous(a) && contiguous(b);
    }
    case gop::dup:
        // 5b4ebc5: not for i32 / i16 sources (ggml-cuda.cu:5372-5375 there)
        return v050 || (src(g, op, 0).type != ggml_type::i32 && src(g, op, 0).type != ggml_type::i16);
    case gop::argmax:
    case gop::count_equal:
        return true;
    case gop::repeat: {
        const ggml_type s0 = src(g, op, 0).type;
        return s0 == ggml_type::f32 || s0 == ggml_type::f16;
    }
    case gop::repeat_back:
        return op.type == ggml_type::f32 && src(g, op, 0).ne[2] * src(g, op, 0).ne[3] <= (1 << 15);
    case gop::concat: {
        const gtensor & a = src(g, op, 0);
        const gtensor & b = src(g, op, 1);
        const int32_t dim = op.params[0];
        if (a.type != b.type || a.type != op.type) return false;
        const ggml_type_traits & tr = ggml_traits(a.type);
        if (ggml_is_quantized(a.type)) {
            const bool layout = dim == 3 ? contiguous(a) && contiguous(b) : contiguous_to_3(a) && contiguous_to_3(b);
            return layout && a.ne[0] % int64_t(tr.block_size) == 0 && b.ne[0] % int64_t(tr.block_size) == 0;
        }
        return tr.block_size == 1 && (tr.type_size == 1 || tr.type_size == 2 || tr.type_size == 4 || tr.type_size == 8);
    }
    case gop::conv_transpose_1d:
        return src(g, op, 0).type == ggml_type::f32 && src(g, op, 1).type == ggml_type::f32;
    case gop::col2im_1d: {
        const gtensor & a = src(g, op, 0);
        return is_float_or_bf16(a.type) && op.type == a.type && contiguous(a) && contiguous(op);
    }
    case gop::silu_back:
        return contiguous(src(g, op, 0)) && src(g, op, 0).type == ggml_type::f32;
    case gop::norm:
    case gop::rms_norm:
    case gop::l2_norm:
        return contiguous_rows(src(g, op, 0));
    case gop::rms_norm_back:
        return contiguous(src(g, op, 0));
    case gop::none: case gop::reshape: case gop::view: case gop::permute: case gop::transpose: case gop::add_id:
    case gop::add1: case gop::scale: case gop::sqr: case gop::sqrt: case gop::sin: case gop::cos: case gop::clamp:
    case gop::log:
        return true;
    case gop::add: case gop::sub: case gop::mul: case gop::div: {
        auto f = [](ggml_type t) { return t == ggml_type::f32 || t == ggml_type::f16; };
        return f(src(g, op, 0).type) && f(src(g, op, 1).type) && f(op.type);
    }
    case gop::ssm_scan: {
        const gtensor & s0 = src(g, op, 0);
        if (src(g, op, 3).ne[0] == 1) return (s0.ne[0] == 128 || s0.ne[0] == 256) && s0.ne[1] % 16 == 0; // Mamba2
        if (op.params[0] > 1) return false;
        return s0.ne[0] == 16 && s0.ne[1] == 1 && s0.ne[2] % 128 == 0 && src(g, op, 4).ne[1] == 1;
    }
    case gop::ssm_conv:
        return src(g, op, 0).ne[1] % 128 == 0;
    case gop::cont: case gop::diag_mask_inf: case gop::soft_max:
        return true;
    case gop::soft_max_back:
        return param_f32(op, 1) == 0.0f;
    case gop::roll:
        return src(g, op, 0).type == ggml_type::f32 && contiguous(src(g, op, 0));
    case gop::rope:
    case gop::rope_back: {
        const gtensor & s0 = src(g, op, 0);
        return s0.nb[0] == type_size(s0.type) && contiguous_2(s0);
    }
    case gop::im2col: case gop::im2col_3d: case gop::conv_2d:
        return contiguous(src(g, op, 0)) && contiguous(src(g, op, 1));
    case gop::conv_2d_dw:
        return src(g, op, 0).type == ggml_type::f32;
    case gop::conv_transpose_2d: case gop::pool_1d: case gop::pool_2d:
        return true;
    case gop::acc:
        return contiguous(src(g, op, 0)) && contiguous(src(g, op, 1));
    case gop::sum:
        return contiguous_rows(src(g, op, 0));
    case gop::top_k:
    case gop::argsort:
        return true; // GGML_CUDA_USE_CUB: CUDA >= 11.7 (common.cuh:114-116)
    case gop::sum_rows:
    case gop::mean:
        if (!v050) return contiguous(src(g, op, 0)); // 5b4ebc5: with GROUP_NORM
        return src(g, op, 0).type == ggml_type::f32 && op.type == ggml_type::f32 && contiguous_rows(src(g, op, 0));
    case gop::group_norm:
        return contiguous(src(g, op, 0));
    case gop::pad: case gop::upscale: case gop::pad_reflect_1d: case gop::arange: case gop::timestep_embedding:
    case gop::leaky_relu: case gop::rwkv_wkv6: case gop::gated_linear_attn: case gop::rwkv_wkv7:
    case gop::gated_delta_net:
        return true;
    case gop::dsv4_hc_comb:
        return src(g, op, 0).type == ggml_type::f32 && src(g, op, 1).type == ggml_type::f32 &&
               src(g, op, 2).type == ggml_type::f32 && op.type == ggml_type::f32;
    case gop::dsv4_hc_pre:
        return src(g, op, 0).type == ggml_type::f32 && src(g, op, 1).type == ggml_type::f32 && op.type == ggml_type::f32;
    case gop::dsv4_hc_post: {
        const bool s3 = has_src(op, 3) ? src(g, op, 3).type == ggml_type::f32 : v050; // 5b4ebc5 requires src[3]
        return src(g, op, 0).type == ggml_type::f32 && src(g, op, 1).type == ggml_type::f32 &&
               src(g, op, 2).type == ggml_type::f32 && s3 && op.type == ggml_type::f32;
    }
    case gop::flash_attn_ext:
        return best_fattn_kernel(*this, g, op) != fa_kernel::none;
    case gop::cross_entropy_loss: case gop::cross_entropy_loss_back: case gop::opt_step_adamw: case gop::opt_step_sgd:
    case gop::fill: case gop::cumsum: case gop::tri: case gop::diag: case gop::solve_tri:
        return true;
    case gop::lightning_indexer:
        return lightning_indexer_supported(g, op);
    default:
        return false;
    }
}

bool cuda_device::offload_op(const gtensor & op) const { // get_op_batch_size >= 32 (:5599-5618)
    int64_t batch;
    switch (op.op) {
    case gop::get_rows: batch = 0; break;
    case gop::mul_mat: batch = op.ne[1]; break;
    case gop::mul_mat_id: case gop::rope: case gop::rope_back: batch = op.ne[2]; break;
    default: batch = nrows(op); break;
    }
    return batch >= op_offload_min_batch;
}

uint64_t cuda_device::alloc_size(const ggraph & g, const gtensor & t) const { // :908-925
    uint64_t size = t.op == gop::flash_attn_ext ? fattn_alloc_size(*this, g, t) : gtensor_nbytes(t);
    if (ggml_is_quantized(t.type) && t.ne[0] % 512 != 0) size += ggml_row_size(t.type, uint64_t(512 - t.ne[0] % 512));
    return size;
}

bool ggml_contiguous_m_n(const gtensor & t, int m, int n) { return contiguous_m_n(t, m, n); }
bool ggml_contiguous_rows(const gtensor & t) { return contiguous_rows(t); }

bool ggml_can_fuse_subgraph_ext(const ggraph & g, const std::vector<int32_t> & nodes, const std::vector<size_t> & idxs,
                                const std::vector<gop> & ops, const std::vector<size_t> & outputs) {
    const size_t count = idxs.size();
    for (size_t k = 0; k < count; ++k) {
        if (idxs[k] >= nodes.size()) return false;
    }
    for (size_t k = 0; k < count; ++k) {
        const gtensor & n = g.t[size_t(nodes[idxs[k]])];
        if (n.op != ops[k] || (n.flags & k_flag_compute) == 0) return false;
        if (std::find(outputs.begin(), outputs.end(), idxs[k]) != outputs.end()) continue;
        if (n.flags & k_flag_output) return false;
        int32_t uses = 0;
        for (size_t j = k + 1; j < count; ++j) {
            for (const int32_t s : g.t[size_t(nodes[idxs[j]])].src) uses += s == nodes[idxs[k]];
        }
        if (uses != g.use_count[size_t(nodes[idxs[k]])]) return false;
        for (int32_t vs = n.view_src; vs >= 0; vs = g.t[size_t(vs)].view_src) {
            bool inside = false;
            for (size_t j = 0; j < count; ++j) inside |= nodes[idxs[j]] == vs;
            const gtensor & v = g.t[size_t(vs)];
            const bool constant = v.buffer >= 0 && g.buffers[size_t(v.buffer)].weights && (v.flags & k_flag_param) == 0;
            if (!inside && !constant) return false;
        }
    }
    return true;
}

namespace {

// ggml_can_fuse_subgraph (ggml-impl.h:736-754, ggml.c:7760-7820) over nodes[i..i+count) of one split
bool can_fuse_subgraph(const ggraph & g, const std::vector<int32_t> & nodes, size_t i, size_t count,
                       const std::vector<gop> & ops, const std::vector<size_t> & outputs) {
    std::vector<size_t> idxs(count);
    for (size_t k = 0; k < count; ++k) idxs[k] = i + k;
    return ggml_can_fuse_subgraph_ext(g, nodes, idxs, ops, outputs);
}

struct weighted_reduction {
    int32_t experts = -1, expert_scale = -1, weights = -1, dst = -1;
    size_t node_count = 0;
};

// ggml_cuda_match_moe_weighted_reduction (ggml-cuda.cu:3047-3178 v0.5.0; the same in 5b4ebc5)
bool match_weighted_reduction(const ggraph & g, const std::vector<int32_t> & nodes, size_t i, weighted_reduction & m) {
    const gtensor & first = g.t[size_t(nodes[i])];
    if (first.op != gop::mul || first.type != ggml_type::f32 || !contiguous(first)) return false;
    auto split_mul = [&](const gtensor & mul, int32_t & full, int32_t & bcast) {
        auto is_weights = [&](int32_t t) {
            if (t < 0) return false;
            const gtensor & x = g.t[size_t(t)];
            return x.type == ggml_type::f32 && contiguous(x) && x.ne[0] == 1 && x.ne[1] == mul.ne[1] && x.ne[2] == mul.ne[2] &&
                   x.ne[3] == mul.ne[3];
        };
        auto is_experts = [&](int32_t t) {
            if (t < 0) return false;
            const gtensor & x = g.t[size_t(t)];
            return x.type == ggml_type::f32 && contiguous(x) && same_shape(x, mul);
        };
        const int32_t s0 = has_src(mul, 0) ? mul.src[0] : -1, s1 = has_src(mul, 1) ? mul.src[1] : -1;
        if (is_experts(s0) && is_weights(s1)) { full = s0; bcast = s1; return true; }
        if (is_experts(s1) && is_weights(s0)) { full = s1; bcast = s0; return true; }
        return false;
    };
    int32_t weighted = nodes[i], experts = -1, expert_scale = -1, weights = -1;
    int mul_count = 1;
    if (i + 1 < nodes.size()) {
        const gtensor & second = g.t[size_t(nodes[i + 1])];
        int32_t scaled = -1, route = -1, raw = -1, scale = -1;
        if (second.op == gop::mul && second.type == ggml_type::f32 && contiguous(second) && split_mul(second, scaled, route) &&
            scaled == nodes[i] && split_mul(first, raw, scale)) {
            weighted = nodes[i + 1];
            experts = raw;
            expert_scale = scale;
            weights = route;
            mul_count = 2;
        }
    }
    if (experts < 0 && !split_mul(first, experts, weights)) return false;
    const gtensor & w = g.t[size_t(weighted)];
    const int64_t n_used = w.ne[1], n_tokens = w.ne[2] * w.ne[3];
    if (n_used < 2 || n_used > 15 || n_tokens <= 0) return false; // MOE_WEIGHTED_REDUCTION_MAX_EXPERTS
    const size_t count = size_t(2 * n_used + mul_count - 1);
    if (i + count > nodes.size()) return false;
    std::vector<gop> ops(count, gop::view);
    ops[0] = gop::mul;
    if (mul_count == 2) ops[1] = gop::mul;
    std::vector<int32_t> views;
    int32_t previous = -1;
    int64_t n_adds = 0;
    for (size_t off = size_t(mul_count); off < count; ++off) {
        const int32_t ci = nodes[i + off];
        const gtensor & c = g.t[size_t(ci)];
        ops[off] = c.op;
        if (c.op == gop::view) {
            const size_t expert = views.size();
            if (int64_t(expert) >= n_used || !has_src(c, 0) || c.src[0] != weighted || c.view_src != weighted ||
                c.type != ggml_type::f32 || c.ne[0] != w.ne[0] || c.ne[1] != n_tokens || c.ne[2] != 1 || c.ne[3] != 1 ||
                c.nb[0] != w.nb[0] || c.nb[1] != w.nb[2] || c.view_offs != expert * w.nb[1]) {
                return false;
            }
            views.push_back(ci);
            continue;
        }
        if (c.op != gop::add || views.size() < 2 || n_adds + 1 >= int64_t(views.size())) return false;
        const int32_t lhs = n_adds == 0 ? views[0] : previous, rhs = views[size_t(n_adds + 1)];
        if (!has_src(c, 1) || c.src[0] != lhs || c.src[1] != rhs || c.type != ggml_type::f32) return false;
        previous = ci;
        ++n_adds;
    }
    if (int64_t(views.size()) != n_used || n_adds != n_used - 1 || previous < 0) return false;
    const gtensor & p = g.t[size_t(previous)];
    if (!contiguous(p) || p.ne[0] != w.ne[0] || p.ne[1] != n_tokens || p.ne[2] != 1 || p.ne[3] != 1) return false;
    if (!can_fuse_subgraph(g, nodes, i, count, ops, {i + count - 1})) return false;
    m = {experts, expert_scale, weights, nodes[i + count - 1], count};
    return true;
}

struct topk_args {
    bool sigmoid = false, sqrt_softplus = false, softmax = false, delayed_softmax = false, prob_bias = false, norm = false,
         scale = false;
};

// ggml_cuda_topk_moe_fusion (ggml-cuda.cu:2816-2968 v0.5.0)
bool topk_moe_fusion(const ggraph & g, const std::vector<int32_t> & nodes, size_t node_idx, topk_args & a) {
    const size_t n = nodes.size();
    auto N = [&](size_t k) -> const gtensor & { return g.t[size_t(nodes[k])]; };
    auto src0_is = [&](size_t k, size_t j) { return has_src(N(k), 0) && N(k).src[0] == nodes[j]; };
    if (N(node_idx).op == gop::soft_max) a.softmax = true;
    if (N(node_idx).op == gop::unary) {
        const int32_t u = N(node_idx).params[0];
        if (u == u_sigmoid) a.sigmoid = true;
        else if (u == u_softplus && node_idx + 1 < n && N(node_idx + 1).op == gop::sqrt && src0_is(node_idx + 1, node_idx)) {
            a.sqrt_softplus = true;
            node_idx++;
        } else {
            return false;
        }
    }
    if (N(node_idx).op == gop::argsort) a.delayed_softmax = true;
    node_idx++;
    if (a.sigmoid || a.sqrt_softplus || a.softmax) {
        if (node_idx >= n || N(node_idx).op != gop::reshape || !src0_is(node_idx, node_idx - 1)) return false;
        const int32_t probs_reshaped = nodes[node_idx];
        node_idx++;
        if (node_idx >= n) return false;
        if (N(node_idx).op == gop::add && src0_is(node_idx, node_idx - 2)) {
            a.prob_bias = true;
            node_idx++;
        }
        if (node_idx >= n || N(node_idx).op != gop::argsort) return false;
        if (a.prob_bias && !src0_is(node_idx, node_idx - 1)) return false;
        if (!a.prob_bias && !src0_is(node_idx, node_idx - 2)) return false;
        node_idx++;
        if (node_idx >= n || N(node_idx).op != gop::view || !src0_is(node_idx, node_idx - 1)) return false;
        node_idx++;
        if (node_idx >= n || N(node_idx).op != gop::get_rows) return false;
        if (!has_src(N(node_idx), 1) || N(node_idx).src[0] != probs_reshaped || N(node_idx).src[1] != nodes[node_idx - 1]) return false;
        node_idx++;
    } else if (a.delayed_softmax) {
        if (node_idx < 2) return false;
        const int32_t probs_reshaped = nodes[node_idx - 2];
        if (node_idx >= n || N(node_idx).op != gop::view || !src0_is(node_idx, node_idx - 1)) return false;
        node_idx++;
        if (node_idx >= n || !has_src(N(node_idx), 1) || N(node_idx).src[1] != nodes[node_idx - 1] || N(node_idx).src[0] != probs_reshaped) return false;
        node_idx++;
        for (const gop op : {gop::reshape, gop::soft_max, gop::reshape}) {
            if (node_idx >= n || N(node_idx).op != op || !src0_is(node_idx, node_idx - 1)) return false;
            node_idx++;
        }
    }
    if (node_idx >= n) return true;
    if (N(node_idx).op == gop::reshape) {
        a.norm = true;
        for (const gop op : {gop::reshape, gop::sum_rows, gop::clamp}) {
            if (node_idx < n && N(node_idx).op == op && src0_is(node_idx, node_idx - 1)) node_idx++;
            else {
                a.norm = false;
                return true;
            }
        }
        if (node_idx >= n || N(node_idx).op != gop::div || !has_src(N(node_idx), 1) || N(node_idx).src[1] != nodes[node_idx - 1] ||
            !src0_is(node_idx, node_idx - 3)) {
            a.norm = false;
            return true;
        }
        node_idx++;
        if (node_idx >= n || N(node_idx).op != gop::reshape || !src0_is(node_idx, node_idx - 1)) {
            a.norm = false;
            return true;
        }
        node_idx++;
    }
    if (node_idx < n && N(node_idx).op == gop::scale && src0_is(node_idx, node_idx - 1)) a.scale = true;
    return true;
}

// ggml_cuda_should_use_topk_moe (topk-moe.cu:398-440 v0.5.0)
bool should_use_topk_moe(const ggraph & g, const gtensor & gating, const gtensor & weights, const gtensor & logits,
                         const gtensor & ids) {
    const int64_t n_expert = int64_t(ids.nb[1] / ids.nb[0]);
    if (((n_expert & (n_expert - 1)) != 0 || n_expert > 512) && n_expert != 288 && n_expert != 576) return false;
    if (!contiguous(weights) || !contiguous(logits)) return false;
    if (gating.op == gop::soft_max) {
        if (!contiguous(src(g, gating, 0))) return false;
        if (param_f32(gating, 0) != 1.0f || param_f32(gating, 1) != 0.0f) return false;
        if (has_src(gating, 1) || has_src(gating, 2)) return false;
    } else if (gating.op == gop::unary) {
        if (gating.params[0] != u_sigmoid && gating.params[0] != u_softplus) return false;
    }
    return true;
}

} // namespace

void cuda_device::graph_optimize(const ggraph & g, const std::vector<int32_t> & nodes,
                                 const std::function<void(int32_t, int32_t)> & add) const {
    // add_alloc_deps (:4507-4520): every node of [start, last) and its sources stay until nodes[last]
    auto add_range = [&](size_t start, size_t last) {
        for (size_t k = start; k < last; ++k) {
            add(nodes[k], nodes[last]);
            for (const int32_t s : g.t[size_t(nodes[k])].src) {
                if (s >= 0) add(s, nodes[last]);
            }
        }
    };
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (release == cuda_release::r5b4ebc5 && g.t[size_t(nodes[i])].op != gop::mul) continue;
        weighted_reduction m;
        if (match_weighted_reduction(g, nodes, i, m)) {
            add(m.experts, m.dst);
            add(m.weights, m.dst);
            if (m.expert_scale >= 0) add(m.expert_scale, m.dst);
            i += m.node_count - 1;
        }
        if (release == cuda_release::r5b4ebc5) continue;
        const gtensor & node = g.t[size_t(nodes[i])];
        if (node.op != gop::unary && node.op != gop::soft_max && node.op != gop::argsort) continue;
        topk_args args;
        if (!topk_moe_fusion(g, nodes, i, args) || args.delayed_softmax) continue;
        std::vector<gop> ops;
        if (args.sigmoid) ops = {gop::unary};
        else if (args.sqrt_softplus) ops = {gop::unary, gop::sqrt};
        else ops = {gop::soft_max};
        const size_t i_probs = i + ops.size() - 1;
        size_t out0;
        if (args.prob_bias) {
            ops.insert(ops.end(), {gop::reshape, gop::add, gop::argsort, gop::view, gop::get_rows});
            out0 = i_probs + 4;
        } else {
            ops.insert(ops.end(), {gop::reshape, gop::argsort, gop::view, gop::get_rows});
            out0 = i_probs + 3;
        }
        if (args.norm) ops.insert(ops.end(), {gop::reshape, gop::sum_rows, gop::clamp, gop::div, gop::reshape});
        if (args.scale) ops.push_back(gop::scale);
        const size_t out1 = i + ops.size() - 1;
        if (out1 >= nodes.size() || out0 >= nodes.size()) continue;
        const gtensor & ids = g.t[size_t(nodes[out0])];
        const gtensor & weights = g.t[size_t(nodes[out1])];
        if (!has_src(node, 0)) continue;
        const gtensor & logits = src(g, node, 0);
        if (can_fuse_subgraph(g, nodes, i, ops.size(), ops, {out0, out1}) && should_use_topk_moe(g, node, weights, logits, ids)) {
            if (i + ops.size() < nodes.size()) add_range(i, i + ops.size());
            i += ops.size() - 1;
        }
    }
}

// --- the scheduler backends ----------------------------------------------------------------------------------------

std::string cuda_backend::name() const { return "CUDA" + std::to_string(dev_.index); }
gbuft cuda_backend::compute_buft() const { return {gbuft::kind::gpu, dev_.index}; }
bool cuda_backend::supports_op(const ggraph & g, int32_t t) const { return dev_.supports_op(g, g.t[size_t(t)], g.buffers); }
bool cuda_backend::offload_op(const ggraph & g, int32_t t) const { return dev_.offload_op(g.t[size_t(t)]); }
bool cuda_backend::supports_buft(const gbuft & b) const { return b.k == gbuft::kind::gpu && b.device == dev_.index; }
uint64_t cuda_backend::alloc_size(const ggraph & g, int32_t t) const { return dev_.alloc_size(g, g.t[size_t(t)]); }
void cuda_backend::graph_optimize(const ggraph & g, std::vector<int32_t> & nodes,
                                  const std::function<void(int32_t, int32_t)> & add) const {
    dev_.graph_optimize(g, nodes, add);
}

gbuft cpu_backend::compute_buft() const { return with_gpu_ ? gbuft{gbuft::kind::gpu_host, 0} : gbuft{gbuft::kind::cpu, 0}; }

bool cpu_backend::supports_op(const ggraph & g, int32_t i) const { // ggml-cpu.cpp:424-484
    const gtensor & t = g.t[size_t(i)];
    switch (t.op) {
    case gop::none: case gop::reshape: case gop::view: case gop::permute: case gop::transpose:
        return true;
    case gop::cpy:
    case gop::set_rows:
        // no from_float for the i-quants
        return t.type != ggml_type::iq3_xxs && t.type != ggml_type::iq3_s && t.type != ggml_type::iq2_xxs &&
               t.type != ggml_type::iq2_xs && t.type != ggml_type::iq2_s && t.type != ggml_type::iq1_s &&
               t.type != ggml_type::iq1_m;
    default:
        return true; // every op of the modelled graphs; MUL_MAT's f32 activations are its src1 type
    }
}

bool cpu_backend::supports_buft(const gbuft & b) const { return b.is_host(); }

} // namespace kvfit::detail
