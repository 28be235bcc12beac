// llama.cpp's AMX and CPU_REPACK weight buffers (include/kvfit/llamacpp_cpu.h; docs/rules/llamacpp-cpu-repack.md).
// Variants: ggml/src/CMakeLists.txt:494-517 (GGML_CPU_ALL_VARIANTS), scores: ggml-cpu/arch/x86/cpu-feats.cpp:263-322;
// ops: LLM_TENSOR_INFOS, src/llama-arch.cpp (v0.5.0 :719-1056); acceptance: amx/amx.cpp:145-190, repack.cpp:4773-4810.
#include "kvfit/llamacpp_cpu.h"

#include "kvfit/error.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <map>

namespace kvfit {
namespace {

// x86 feature bits and their score (cpu-feats.cpp ggml_backend_cpu_x86_score).
enum feat : uint32_t {
    FMA = 1, F16C = 2, SSE42 = 4, BMI2 = 8, AVX = 16, AVX2 = 32, AVX_VNNI = 64, AVX512 = 128, AVX512_VBMI = 256,
    AVX512_BF16 = 512, AVX512_VNNI = 1024, AMX_INT8 = 2048,
};

struct variant { std::string_view name; uint32_t feats; };

// The variants node-llama-cpp's linux-x64 build ships, with their compiled features (AMX_TILE is not scored).
constexpr uint32_t k_haswell = SSE42 | AVX | F16C | FMA | AVX2 | BMI2;
constexpr uint32_t k_skylakex = k_haswell | AVX512;
constexpr std::array<variant, 14> k_variants = {{
    {"x64", 0}, {"sse42", SSE42}, {"sandybridge", SSE42 | AVX}, {"ivybridge", SSE42 | AVX | F16C},
    {"piledriver", SSE42 | AVX | F16C | FMA}, {"haswell", k_haswell}, {"skylakex", k_skylakex},
    {"cannonlake", k_skylakex | AVX512_VBMI}, {"cascadelake", k_skylakex | AVX512_VNNI},
    {"icelake", k_skylakex | AVX512_VBMI | AVX512_VNNI}, {"cooperlake", k_skylakex | AVX512_VNNI | AVX512_BF16},
    {"zen4", k_skylakex | AVX512_VBMI | AVX512_VNNI | AVX512_BF16}, {"alderlake", k_haswell | AVX_VNNI},
    {"sapphirerapids", k_skylakex | AVX512_VBMI | AVX512_VNNI | AVX512_BF16 | AMX_INT8},
}};

bool has_word(std::string_view flags, std::string_view w) {
    size_t pos = 0;
    while ((pos = flags.find(w, pos)) != std::string_view::npos) {
        const bool start = pos == 0 || flags[pos - 1] == ' ' || flags[pos - 1] == '\t';
        const size_t end = pos + w.size();
        if (start && (end == flags.size() || flags[end] == ' ' || flags[end] == '\t' || flags[end] == '\n')) return true;
        pos = end;
    }
    return false;
}

cpu_features from_variant(const variant & v, bool amx_granted) {
    cpu_features c;
    c.variant = std::string(v.name);
    c.avx2 = (v.feats & AVX2) != 0;
    c.avx512 = (v.feats & AVX512) != 0;
    c.amx = (v.feats & AMX_INT8) != 0 && amx_granted;
    return c;
}

// The template of a tensor name: "blk.12.attn_q.weight" -> "blk.%d.attn_q".
std::string name_template(std::string_view name) {
    if (name.ends_with(".weight")) name.remove_suffix(7);
    std::string out;
    for (size_t i = 0; i < name.size(); ++i) {
        if (std::isdigit(static_cast<unsigned char>(name[i])) && i > 0 && name[i - 1] == '.') {
            size_t j = i;
            while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
            if (j == name.size() || name[j] == '.') {
                out += "%d";
                i = j - 1;
                continue;
            }
        }
        out += name[i];
    }
    return out;
}

enum class weight_op : uint8_t { other, mul_mat, mul_mat_id };

// LLM_TENSOR_INFOS (src/llama-arch.cpp, v0.5.0): the tensors whose op is MUL_MAT or MUL_MAT_ID. Every other weight
// (norms, GET_ROWS embeddings, SSM_CONV kernels, biases) stays in the plain CPU buffer.
weight_op op_of(std::string_view name) {
    static const std::map<std::string, weight_op, std::less<>> ops = [] {
        std::map<std::string, weight_op, std::less<>> m;
        constexpr std::string_view mul_mat =
            "altup_proj altup_unembd_proj blk.%d.altup_correct_coef blk.%d.altup_predict_coef blk.%d.altup_router "
            "blk.%d.attn_compressor_gate blk.%d.attn_compressor_kv blk.%d.attn_conv_proj blk.%d.attn_gate blk.%d.attn_k "
            "blk.%d.attn_k_b blk.%d.attn_kv blk.%d.attn_kv_a_mqa blk.%d.attn_kv_b blk.%d.attn_output blk.%d.attn_output_a "
            "blk.%d.attn_output_b blk.%d.attn_q blk.%d.attn_q_a blk.%d.attn_q_b blk.%d.attn_qkv blk.%d.attn_v "
            "blk.%d.attn_v_b blk.%d.channel_mix_key blk.%d.channel_mix_receptance blk.%d.channel_mix_value "
            "blk.%d.ffn_conv_proj blk.%d.ffn_down blk.%d.ffn_down_shexp blk.%d.ffn_gate blk.%d.ffn_gate_inp "
            "blk.%d.ffn_gate_inp_shexp blk.%d.ffn_gate_shexp blk.%d.ffn_latent_down blk.%d.ffn_latent_up "
            "blk.%d.ffn_routed_down blk.%d.ffn_routed_up blk.%d.ffn_up blk.%d.ffn_up_shexp blk.%d.hc_attn_down "
            "blk.%d.hc_attn_fn blk.%d.hc_attn_inject blk.%d.hc_attn_up blk.%d.hc_ffn_down blk.%d.hc_ffn_fn "
            "blk.%d.hc_ffn_inject blk.%d.hc_ffn_up blk.%d.indexer.attn_k blk.%d.indexer.attn_q_b blk.%d.indexer.k_proj "
            "blk.%d.indexer.proj blk.%d.indexer.q_proj blk.%d.indexer_compressor_gate blk.%d.indexer_compressor_kv "
            "blk.%d.inp_gate blk.%d.laurel_l blk.%d.laurel_r blk.%d.nextn.eh_proj blk.%d.nextn.shared_head_head "
            "blk.%d.ple_key blk.%d.ple_value blk.%d.proj blk.%d.shortconv.in_proj blk.%d.shortconv.out_proj "
            "blk.%d.ssm_alpha blk.%d.ssm_ba blk.%d.ssm_beta blk.%d.ssm_dt blk.%d.ssm_f_a blk.%d.ssm_f_b blk.%d.ssm_g "
            "blk.%d.ssm_g_a blk.%d.ssm_g_b blk.%d.ssm_in blk.%d.ssm_out blk.%d.ssm_x blk.%d.time_mix_a1 "
            "blk.%d.time_mix_a2 blk.%d.time_mix_decay_w1 blk.%d.time_mix_decay_w2 blk.%d.time_mix_g1 "
            "blk.%d.time_mix_g2 blk.%d.time_mix_gate blk.%d.time_mix_key blk.%d.time_mix_output "
            "blk.%d.time_mix_receptance blk.%d.time_mix_v1 blk.%d.time_mix_v2 blk.%d.time_mix_value blk.%d.time_mix_w1 "
            "blk.%d.time_mix_w2 blk.%d.vis_attn_output blk.%d.vis_attn_qkv blk.%d.vis_down blk.%d.vis_gate "
            "blk.%d.vis_up cls cls.output conf_proj convnext.%d.pw1 convnext.%d.pw2 dense_2 dense_3 fc markov_w2 "
            "nextn.post_projection nextn.pre_projection output output_hc_down output_hc_fn output_hc_up "
            "per_layer_model_proj selector_hidden";
        constexpr std::string_view mul_mat_id = "blk.%d.ffn_down_chexps blk.%d.ffn_down_exps blk.%d.ffn_gate_chexps "
                                                "blk.%d.ffn_gate_exps blk.%d.ffn_gate_up_exps blk.%d.ffn_up_chexps "
                                                "blk.%d.ffn_up_exps";
        for (auto [list, op] : {std::pair{mul_mat, weight_op::mul_mat}, std::pair{mul_mat_id, weight_op::mul_mat_id}}) {
            size_t start = 0;
            while (start < list.size()) {
                const size_t end = std::min(list.find(' ', start), list.size());
                m.emplace(std::string(list.substr(start, end - start)), op);
                start = end + 1;
            }
        }
        return m;
    }();
    const auto it = ops.find(name_template(name));
    return it == ops.end() ? weight_op::other : it->second;
}

uint32_t n_dims(const weight_tensor & t) {
    uint32_t n = 4;
    while (n > 1 && t.ne[n - 1] == 1) --n;
    return n;
}

uint64_t pad32(uint64_t n) { return (n + 31) / 32 * 32; }

} // namespace

cpu_features cpu_features_from_flags(std::string_view flags, bool amx_granted) {
    uint32_t have = 0;
    const std::pair<uint32_t, std::vector<std::string_view>> words[] = {
        {FMA, {"fma"}}, {F16C, {"f16c"}}, {SSE42, {"sse4_2"}}, {BMI2, {"bmi2"}}, {AVX, {"avx"}}, {AVX2, {"avx2"}},
        {AVX_VNNI, {"avx_vnni"}}, {AVX512, {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}},
        {AVX512_VBMI, {"avx512vbmi"}}, {AVX512_BF16, {"avx512_bf16"}}, {AVX512_VNNI, {"avx512_vnni"}},
        {AMX_INT8, {"amx_int8"}},
    };
    for (const auto & [bit, names] : words) {
        if (std::all_of(names.begin(), names.end(), [&](std::string_view w) { return has_word(flags, w); })) have |= bit;
    }
    // ggml_backend_load_best: the highest score among the variants whose every feature is present (first on a tie)
    const variant * best = &k_variants[0];
    for (const auto & v : k_variants) {
        if ((v.feats & have) == v.feats && v.feats + 1 > best->feats + 1) best = &v;
    }
    cpu_features c = from_variant(*best, amx_granted);
    c.source = "this machine (/proc/cpuinfo)";
    return c;
}

cpu_features parse_cpu_features(std::string_view text) {
    const std::pair<std::string_view, std::string_view> names[] = {
        {"none", "x64"}, {"avx2", "haswell"}, {"avx512", "zen4"}, {"amx", "sapphirerapids"}};
    for (const auto & entry : names) {  // not a structured binding: clang 14 cannot capture one in a lambda
        const std::string_view name = entry.first, v = entry.second;
        if (text != name) continue;
        const auto it = std::find_if(k_variants.begin(), k_variants.end(), [&](const variant & x) { return x.name == v; });
        cpu_features c = from_variant(*it, true);
        c.source = "--cpu-features";
        return c;
    }
    throw error(fmt::format("--cpu-features '{}': expected none, avx2, avx512 or amx", text));
}

const char * cpu_buffer_name(cpu_buffer b) {
    switch (b) {
    case cpu_buffer::cpu:    return "CPU";
    case cpu_buffer::amx:    return "AMX";
    case cpu_buffer::repack: return "CPU_REPACK";
    }
    return "?";
}

cpu_buffer llamacpp_cpu_buffer_of(const weight_tensor & t, const cpu_features & cpu) {
    const weight_op op = op_of(t.name);
    const uint64_t ne0 = t.ne[0], ne1 = t.ne[1];
    if (cpu.amx && op == weight_op::mul_mat && ne1 % 32 == 0) {
        using T = ggml_type;
        const bool ok = (t.type == T::f16 && ne0 % 16 == 0) ||
                        ((t.type == T::q4_0 || t.type == T::q4_1 || t.type == T::q8_0) && ne0 % 32 == 0) ||
                        ((t.type == T::q4_k || t.type == T::q5_k || t.type == T::q6_k || t.type == T::iq4_xs) && ne0 % 256 == 0);
        if (ok) return cpu_buffer::amx;
    }
    const bool shape = (op == weight_op::mul_mat && n_dims(t) == 2) || (op == weight_op::mul_mat_id && n_dims(t) == 3);
    if (shape && ne1 % 8 == 0) {
        using T = ggml_type;
        if (cpu.avx2 && (t.type == T::q4_0 || t.type == T::q4_k || t.type == T::iq4_nl || t.type == T::mxfp4)) return cpu_buffer::repack;
        if (cpu.avx512 && t.type == T::q2_k) return cpu_buffer::repack;
    }
    return cpu_buffer::cpu;
}

uint64_t llamacpp_cpu_buffer_bytes(const weight_tensor & t, cpu_buffer b) {
    if (b != cpu_buffer::amx || t.type == ggml_type::f16) return pad32(t.bytes);
    const ggml_type_traits & tr = ggml_traits(t.type);
    const uint64_t c = t.type == ggml_type::q8_0 || t.type == ggml_type::q4_k || t.type == ggml_type::q5_k ? 4
                     : t.type == ggml_type::iq4_xs                                                          ? 2
                                                                                                            : 0;
    return pad32(t.ne[1] * (t.ne[0] / tr.block_size) * (tr.type_size + c)); // ne1 only, as amx/mmq.cpp:2273-2278
}

cpu_weight_buffers llamacpp_cpu_weight_buffers(const std::vector<weight_tensor> & tensors, const cpu_features & cpu,
                                               bool mmap) {
    cpu_weight_buffers out;
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> range; // file -> [min offset, max end) of the plain-CPU weights
    for (const auto & t : tensors) {
        const cpu_buffer b = llamacpp_cpu_buffer_of(t, cpu);
        if (b == cpu_buffer::amx) out.amx_bytes += llamacpp_cpu_buffer_bytes(t, b);
        if (b == cpu_buffer::repack) out.repack_bytes += llamacpp_cpu_buffer_bytes(t, b);
        if (b != cpu_buffer::cpu) continue;
        if (!mmap) {
            out.mapped_bytes += pad32(t.bytes);
            continue;
        }
        auto [it, fresh] = range.try_emplace(t.file, t.offset, t.offset + t.bytes);
        if (!fresh) {
            it->second.first = std::min(it->second.first, t.offset);
            it->second.second = std::max(it->second.second, t.offset + t.bytes);
        }
    }
    for (const auto & [file, r] : range) out.mapped_bytes += r.second - r.first;
    return out;
}

} // namespace kvfit
