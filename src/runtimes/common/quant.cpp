// Weights per TP rank from the model's shapes and quantization, as vLLM's (and SGLang's) create_weights allocate them
// (src/runtimes/common/quant.h; docs/rules/vllm-frontier.md §8.1-8.3). Worked figures, tests/test_vllm.cpp:
// DeepSeek-V3 fp8 block 128x128 at TP 8: 85,140,130,848 B; gpt-oss-120b MXFP4 at TP 1: 65,248,820,352 B.
#include "runtimes/common/quant.h"
#include "core/util.h"

#include "kvfit/sources.h"
#include "runtimes/common/torch.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <regex>

namespace kvfit::detail {
namespace {

enum class split : uint8_t { column, row, replicated };

// One linear layer (N outputs x K inputs), `copies` alike (routed experts), on one rank.
struct linear_ctx {
    const weight_quant & q;
    uint32_t tp;
    uint32_t s; // model dtype bytes
};

bool glob(const std::string & pat, const std::string & s, size_t i = 0, size_t j = 0) {
    while (i < pat.size()) {
        if (pat[i] == '*') {
            for (size_t k = j; k <= s.size(); ++k) {
                if (glob(pat, s, i + 1, k)) return true;
            }
            return false;
        }
        if (j >= s.size() || pat[i] != s[j]) return false;
        ++i, ++j;
    }
    return j == s.size();
}

// Bytes of an N x K linear on one rank: the weight, its scales, zero points and indices (create_weights).
uint64_t linear_bytes(const linear_ctx & c, uint64_t N, uint64_t K, split sp, bool quantized, uint32_t shards = 1) {
    if (sp == split::column) N /= c.tp;
    if (sp == split::row) K /= c.tp;
    if (!quantized || c.q.method.empty() || c.q.experts_only) return N * K * c.s;
    const weight_quant & q = c.q;
    if (q.method == "fp8") {
        uint64_t b = N * K;
        if (q.block_n) b += cdiv(N, q.block_n) * cdiv(K, q.block_k) * 4; // weight_scale_inv fp32
        else if (q.per_channel) b += N * 4;
        else b += 4ull * shards;                                           // weight_scale per shard
        if (q.static_input_scale) b += 4ull * shards;
        return b;
    }
    if (q.method == "nvfp4") { // u8 packed pairs, fp8 scale per group, fp32 global scale and input scale per shard
        return N * K / 2 + N * cdiv(K, q.group_size) + 8ull * shards;
    }
    if (q.method == "mxfp4") { // compressed-tensors mxfp4-pack-quantized on every linear (compressed_tensors_w4a16_mxfp4.py):
        return N * K / 2 + N * cdiv(K, q.group_size); // u8 packed pairs, a u8 E8M0 scale per group of 32
    }
    // GPTQ / AWQ / compressed-tensors wNa16: packed ints, fp16 scales per group, packed zeros, (GPTQ) g_idx
    const uint64_t g = q.group_size ? q.group_size : K;
    const uint64_t groups = cdiv(K, g);
    uint64_t b = N * K * q.bits / 8 + groups * N * 2;
    if (q.method == "gptq") b += groups * N * q.bits / 8 + K * 4;
    else if (q.method == "awq") b += q.zero_point ? groups * N * q.bits / 8 : 0;
    else b += (q.zero_point ? groups * N * q.bits / 8 : 0) + 16; // compressed-tensors: zero points, weight_shape
    return b;
}

// Bytes per element of the quantized format on average, for parameters kvfit cannot split into linears (recurrent
// mixers, DeepSeek-V4 blocks): the same formulas with the group spread evenly. An estimate.
double average_bytes(const linear_ctx & c) {
    const weight_quant & q = c.q;
    if (q.method.empty() || q.experts_only) return c.s;
    if (q.method == "fp8") return 1.0 + (q.block_n ? 4.0 / (double(q.block_n) * q.block_k) : 0.0);
    if (q.method == "nvfp4") return 0.5 + 1.0 / q.group_size;
    if (q.method == "mxfp4") return 0.5 + 1.0 / q.group_size;
    const double g = q.group_size ? q.group_size : 4096;
    return q.bits / 8.0 + 2.0 / g + (q.zero_point ? q.bits / 8.0 / g : 0.0);
}

} // namespace

bool quant_ignored(const std::vector<std::string> & ignore, const std::string & name) {
    for (const auto & e : ignore) {
        if (e.starts_with("re:")) {
            if (!detail::regex_unsafe(e.substr(3)).empty()) continue; // as an invalid pattern: matches nothing
            try {
                if (std::regex_match(name, std::regex(e.substr(3)))) return true;
            } catch (const std::regex_error &) {
            }
            continue;
        }
        // the name or a dotted prefix of it
        for (size_t end = 0; end != std::string::npos;) {
            end = name.find('.', end + 1);
            if (glob(e, name.substr(0, end))) return true;
        }
        if (!e.starts_with("model.")) { // a dotted tail: "lm_head", "mlp.gate", "self_attn"
            const std::string dotted = "." + e;
            if (name.ends_with(dotted) || name.find(dotted + ".") != std::string::npos || name == e) return true;
        }
    }
    return false;
}

rank_weight_bytes quant_rank_weights(const model_desc & m, uint32_t tp, uint32_t first, uint32_t n, bool first_stage,
                                     bool last_stage, bool pp_tied_copy, const quant_target & t) {
    const weight_quant & q = m.quant;
    const uint32_t s = torch_dtype_bytes(m.dtype, 2, "dtype");
    const linear_ctx c{q, tp, s};
    auto skipped = [&](const std::string & name) { return quant_ignored(q.ignore, name); };
    rank_weight_bytes r;
    const uint64_t H = m.n_embd;
    for (uint32_t il = first; il < first + n && il < m.n_layer; ++il) {
        const std::string pre = fmt::format("model.layers.{}.", il);
        const weight_group & g = m.weights.layers.at(il);
        uint64_t counted = 0;       // parameters accounted for by the linears below
        uint64_t replicated = 0;    // parameters kept whole on every rank in the model dtype (norms, router, o bias)
        uint64_t fp32 = 0;          // kept in fp32 (sinks, score bias)
        uint64_t split_small = 0;   // biases of column-parallel layers: divided by tp
        // attention
        const layer_kind kind = m.kind_of(il);
        if (kind == layer_kind::mla && m.kv_lora_rank > 0) {
            const uint64_t h = m.n_head[il], qk = m.head_dim_qk_nope + m.n_rot_mla, kl = m.kv_lora_rank, ql = m.q_lora_rank;
            const std::string a = pre + "self_attn.";
            uint64_t b = 0;
            if (ql > 0) { // fused_qkv_a_proj (q_a_proj + kv_a_proj_with_mqa), disable_tp: replicated
                b += linear_bytes(c, ql + kl + m.n_rot_mla, H, split::replicated, !skipped(a + "q_a_proj"), 2);
                b += linear_bytes(c, h * qk, ql, split::column, !skipped(a + "q_b_proj"));
                counted += (ql + kl + m.n_rot_mla) * H + h * qk * ql + ql + kl;
                replicated += ql + kl; // q_a_layernorm, kv_a_layernorm
            } else {
                b += linear_bytes(c, h * qk, H, split::column, !skipped(a + "q_proj"));
                b += linear_bytes(c, kl + m.n_rot_mla, H, split::replicated, !skipped(a + "kv_a_proj_with_mqa"));
                counted += h * qk * H + (kl + m.n_rot_mla) * H + kl;
                replicated += kl;
            }
            b += linear_bytes(c, h * (m.head_dim_qk_nope + m.head_dim_v_mla), kl, split::column, !skipped(a + "kv_b_proj"));
            b += linear_bytes(c, H, h * m.head_dim_v_mla, split::row, !skipped(a + "o_proj"));
            counted += h * (m.head_dim_qk_nope + m.head_dim_v_mla) * kl + H * h * m.head_dim_v_mla;
            r.attention += b;
        } else if ((kind == layer_kind::full || kind == layer_kind::swa || kind == layer_kind::chunked) && m.n_head[il] > 0 &&
                   m.q_lora_rank == 0 && std::none_of(m.caches[il].begin(), m.caches[il].end(), [](const layer_cache & lc) {
                       return lc.kind == cache_kind::compressed;
                   })) { // plain q/k/v/o attention (not DeepSeek-V4's low-rank, grouped-output blocks: left below)
            const uint64_t hq = m.n_head[il], hkv = m.n_head_kv[il], dk = m.head_dim_k[il], dv = m.head_dim_v[il];
            const uint64_t qw = hq * dk * (m.parts.attn_gate ? 2 : 1);
            const std::string a = pre + "self_attn.";
            // K and V heads below tp are replicated (QKVParallelLinear: num_kv_head_replicas)
            const uint64_t kv_rank = std::max<uint64_t>(1, hkv / tp) * tp;
            const uint64_t qkv_n = qw + kv_rank * (dk + dv);
            r.attention += linear_bytes(c, qkv_n, H, split::column, !skipped(a + "q_proj"), 3);
            r.attention += linear_bytes(c, H, hq * dv, split::row, !skipped(a + "o_proj"));
            counted += (qw + hkv * (dk + dv)) * H + H * hq * dv;
            if (m.parts.qkv_bias) split_small += qkv_n, counted += qw + hkv * (dk + dv);
            if (m.parts.o_bias) replicated += H, counted += H;
            if (m.parts.sinks) fp32 += hq / tp, counted += hq;
        }
        // feed-forward
        const bool moe = !m.is_moe.empty() && m.is_moe[il];
        const uint64_t n_mat = m.ffn_gated ? 3 : 2;
        if (moe && m.n_expert > 0) {
            const uint64_t E = m.n_expert, I = m.n_ff_exp;
            // latent experts (Nemotron-3 moe_latent_size, Kimi-K3 routed_expert_hidden_size): FusedMoE runs in the
            // latent width (vLLM nemotron_h.py NemotronHMoE: FusedMoE(hidden_size=moe_latent_size)); the projections
            // into and out of it are left to "other" below
            const uint64_t He = m.n_expert_latent ? m.n_expert_latent : H;
            const bool quant_exp = !q.method.empty() && !skipped(pre + "mlp.experts");
            uint64_t b = 0;
            if ((q.method == "mxfp4" || q.expert_method == "mxfp4") && quant_exp) { // mxfp4.py: w13 (E, 2Ip, H/2) + (E, 2Ip, H/32); w2 (E, H, Ip/2) + (E, H, Ip/32)
                // compressed-tensors' mxfp4-pack-quantized (CompressedTensorsW4A4Mxfp4MoEMethod.create_weights,
                // compressed_tensors_moe_w4a4_mxfp4.py) creates the same tensors unpadded
                const bool packed = q.label.starts_with("mxfp4-pack-quantized");
                const uint64_t Ip = packed ? I / tp : cdiv(I / tp, t.mxfp4_pad) * t.mxfp4_pad;
                const uint64_t Hp = t.pad_hidden && !packed ? cdiv(He, t.mxfp4_pad) * t.mxfp4_pad : He;
                b = E * ((n_mat - 1) * Ip * Hp / 2 + (n_mat - 1) * Ip * Hp / 32 + Hp * Ip / 2 + Hp * Ip / 32);
                if (m.parts.expert_bias) b += E * ((n_mat - 1) * Ip + Hp) * 2; // w13_bias, w2_bias (whole) bf16
            } else if (quant_exp && q.method == "fp8" && q.block_n) { // Fp8MoEMethod: scales per 128 x 128 block
                const uint64_t Ir = I / tp;
                b = E * ((n_mat - 1) * Ir * He + (n_mat - 1) * cdiv(Ir, q.block_n) * cdiv(He, q.block_k) * 4 +
                         He * Ir + cdiv(He, q.block_n) * cdiv(Ir, q.block_k) * 4);
                if (m.parts.expert_bias) b += E * ((n_mat - 1) * Ir + He) * s;
            } else {
                linear_ctx ce = c;
                weight_quant qq = q;
                qq.experts_only = false;
                const linear_ctx cq{qq, tp, s};
                const linear_ctx & use = quant_exp ? cq : ce;
                b = E * (linear_bytes(use, (n_mat - 1) * I, He, split::column, quant_exp, 2) +
                         linear_bytes(use, He, I, split::row, quant_exp));
                if (m.parts.expert_bias) b += E * ((n_mat - 1) * I / tp + He) * s;
            }
            r.experts += b;
            counted += g.expert_params;
            replicated += E * H + (m.parts.router_bias ? E : 0); // the router: ReplicatedLinear, quant_config None
            counted += E * H + (m.parts.router_bias ? E : 0);
            if (m.parts.score_bias) fp32 += E, counted += E;
            if (m.n_ff_shexp > 0) {
                const std::string sh = pre + "mlp.shared_experts.";
                r.dense += linear_bytes(c, (n_mat - 1) * m.n_ff_shexp, H, split::column, !skipped(sh + "gate_up_proj"), 2) +
                           linear_bytes(c, H, m.n_ff_shexp, split::row, !skipped(sh + "down_proj"));
                counted += n_mat * H * m.n_ff_shexp;
            }
        } else if (!m.n_ff.empty() && m.n_ff[il] > 0) {
            const std::string mp = pre + "mlp.";
            r.dense += linear_bytes(c, (n_mat - 1) * m.n_ff[il], H, split::column, !skipped(mp + "gate_up_proj"), 2) +
                       linear_bytes(c, H, m.n_ff[il], split::row, !skipped(mp + "down_proj"));
            counted += n_mat * H * m.n_ff[il];
        }
        replicated += 2 * H; // input_layernorm, post_attention_layernorm
        counted += 2 * H;
        // what is left (other norms, recurrent or DeepSeek-V4 mixers, indexers, gates): linears of unknown shape,
        // divided over the ranks at the format's average size
        const uint64_t left = g.n_params > counted ? g.n_params - counted : 0;
        r.other += replicated * s + fp32 * 4 + split_small / tp * s;
        r.other += uint64_t(double(left) / tp * average_bytes(c));
    }
    // embedding and LM head: VocabParallelEmbedding / ParallelLMHead, vocab padded to 64, split over tp
    const uint64_t vocab_rank = cdiv(cdiv(m.n_vocab, 64) * 64, tp);
    if (first_stage) {
        r.embed += vocab_rank * H * s;
        const uint64_t extra = m.weights.token_embd.n_params > uint64_t(m.n_vocab) * H ? m.weights.token_embd.n_params - uint64_t(m.n_vocab) * H : 0;
        r.embed += extra / tp * s;                                  // per-layer embeddings (Gemma 4)
        r.other += m.weights.other.n_params / tp * s;
    }
    if (last_stage) {
        if (!m.tied_embeddings) {
            const linear_ctx ch{q, tp, s};
            r.embed += q.lm_head && !skipped("lm_head") ? linear_bytes(ch, vocab_rank * tp, H, split::column, true)
                                                         : vocab_rank * H * s;
            r.other += H * s; // final norm
        } else if (pp_tied_copy) {
            r.embed += vocab_rank * H * s;
        }
    }
    r.total = r.experts + r.attention + r.dense + r.embed + r.other;
    return r;
}

bool quant_sized(const model_desc & m) {
    return !m.weights.exact && !m.quant.method.empty() &&
           (m.weights.format == m.quant.label || weight_quant_from_name(m.weights.format).method == m.quant.method);
}

quant_target vllm_quant_target(double cc) {
    return cc >= 10.0 ? quant_target{256, true} : quant_target{64, false};
}

std::string apply_quant_weights(model_desc & m, const quant_target & t) {
    const uint32_t s = torch_dtype_bytes(m.dtype, 2, "dtype");
    model_weights & w = m.weights;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const rank_weight_bytes r = quant_rank_weights(m, 1, il, 1, false, false, false, t);
        w.layers[il].bytes = r.total;
        w.layers[il].expert_bytes = r.experts;
    }
    const rank_weight_bytes first = quant_rank_weights(m, 1, 0, 0, true, false, false, t);
    w.token_embd.bytes = first.embed;
    w.other.bytes = first.other;
    w.token_embd.expert_bytes = w.other.expert_bytes = 0;
    const rank_weight_bytes last = quant_rank_weights(m, 1, 0, 0, false, true, false, t);
    w.output.bytes = m.tied_embeddings ? 0 : last.total;
    w.exact = false;
    w.format = m.quant.label;
    return fmt::format("weights sized from the checkpoint's quantization_config ({}{}{}), linear by linear as vLLM's and SGLang's "
                       "create_weights allocates them", m.quant.label,
                       m.quant.ignore.empty() ? "" : fmt::format("; not converted: {}", fmt::join(m.quant.ignore, ", ")),
                       s == 2 && m.dtype.empty() ? "; unquantized parts in bfloat16" : "");
}

// vLLM loads the checkpoint as stored: a quantization_config sizes each linear layer (runtimes/common/quant.cpp), the
// rest is in the config's dtype; a config that states no dtype is taken as bfloat16, and the warning says so.
void serving_default_weights(model_desc & m, std::vector<std::string> & warn) {
    const bool stated = !m.dtype.empty();
    const std::string dtype = m.dtype == "float16" ? "float16" : m.dtype == "float32" ? "float32" : "bfloat16";
    const std::string why = stated ? fmt::format("the config's dtype is {}", m.dtype)
                                   : "the config states no torch_dtype or dtype; bfloat16 assumed, as most checkpoints store";
    if (!m.quant.method.empty()) {
        warn.push_back(fmt::format("{}; {}", apply_quant_weights(m, quant_target{}), why));
        return;
    }
    const char * name = dtype == "float16" ? "f16" : dtype == "float32" ? "f32" : "bf16";
    apply_weight_format(m, name, true);
    warn.push_back(fmt::format("weights sized as {} ({}); --weights (fp8, nvfp4, awq, gptq, ...) or --weights-size for "
                               "another checkpoint", dtype, why));
}

} // namespace kvfit::detail
