// FFN / MoE patterns of the architecture table: which layers route to experts (is_moe[il]), the dense FFN
// width of the others (n_ff[il]) and the expert widths. Each is named in a row of arch_table.cpp with its
// parameter, the config key that drives it.
#include "sources/hf_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace kvfit::detail {
namespace {

// Routed and shared experts, read from whichever key the family uses. False when the model has no experts.
// Widths: moe_intermediate_size (Qwen MoE, DeepSeek) or intermediate_size (Mixtral, gpt-oss, Llama 4).
bool read_experts(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    for (std::string_view key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
        if (cfg.has(key)) {
            m.n_expert = static_cast<uint32_t>(cfg.count_or(key, 0, 65536));
            break;
        }
    }
    if (m.n_expert == 0) return false;
    const std::string_view used_key = cfg.has("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token";
    m.n_expert_used = static_cast<uint32_t>(cfg.uint(used_key, 65536));
    if (m.n_expert_used > m.n_expert) {
        throw cfg.bad(used_key, fmt::format("{} exceeds the {} routed experts", m.n_expert_used, m.n_expert));
    }
    m.n_ff_exp = static_cast<uint32_t>(cfg.has("moe_intermediate_size") ? cfg.uint("moe_intermediate_size")
                                                                         : cfg.uint("intermediate_size"));
    for (std::string_view key : {"shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"}) {
        if (cfg.count_or(key, 0) > 0) {
            m.n_expert_shared = 1;
            m.n_ff_shexp = static_cast<uint32_t>(cfg.uint(key));
        }
    }
    if (cfg.count_or("n_shared_experts", 0, 1024) > 0) { // DeepSeek: n_shared_experts of moe_intermediate_size
        m.n_expert_shared = static_cast<uint32_t>(cfg.count_or("n_shared_experts", 0, 1024));
        m.n_ff_shexp = m.n_expert_shared * m.n_ff_exp;
    }
    return true;
}

void set_moe(hf_build & b, uint32_t il) {
    b.m.is_moe[il] = 1;
    b.m.n_ff[il] = 0;
}

// Positive integers listed under `key` (mlp_only_layers, moe_layers); empty when absent.
std::vector<uint64_t> index_list(const hf_keys & cfg, std::string_view key) {
    std::vector<uint64_t> out;
    if (!cfg.has(key)) return out;
    const auto & arr = cfg.at(key);
    if (!arr.is_array()) throw cfg.bad(key, std::string("expected array, got ") + arr.type_name());
    for (const auto & v : arr) {
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
            throw cfg.bad(key, "expected non-negative layer indices");
        }
        out.push_back(v.get<uint64_t>());
    }
    return out;
}

bool listed(const std::vector<uint64_t> & v, uint32_t il) { return std::find(v.begin(), v.end(), il) != v.end(); }

// DeciLM's width rule (convert_hf_to_gguf.py DeciModel._ffn_mult_to_intermediate_size, as modeling_decilm.py):
// _find_multiple(int(2 * ffn_mult * n_embd / 3), 256). ffn_mult 5.25, n_embd 8192: 28672.
uint32_t decilm_ffn_width(double ffn_mult, uint32_t n_embd) {
    const auto n = static_cast<uint64_t>(2 * ffn_mult * n_embd / 3);
    return static_cast<uint32_t>(n % 256 == 0 ? n : n + 256 - n % 256);
}

} // namespace

// Every layer a dense FFN of width cfg[key].
void dense(const hf_keys & cfg, std::string_view key, hf_build & b) {
    const auto n_ff = static_cast<uint32_t>(cfg.uint(key));
    for (uint32_t il = 0; il < b.m.n_layer; ++il) b.m.n_ff[il] = n_ff;
}

// Every layer MoE (Mixtral, gpt-oss).
void moe_all(const hf_keys & cfg, std::string_view, hf_build & b) {
    if (!read_experts(cfg, b)) return dense(cfg, "intermediate_size", b);
    for (uint32_t il = 0; il < b.m.n_layer; ++il) set_moe(b, il);
}

// Qwen2-MoE family (Qwen3-MoE, Qwen3-Next, Qwen3.5-MoE): layer il is MoE iff il is not in mlp_only_layers
// and (il + 1) % decoder_sparse_step == 0; the others a dense FFN of intermediate_size.
void moe_sparse_step(const hf_keys & cfg, std::string_view key, hf_build & b) {
    if (!read_experts(cfg, b)) return dense(cfg, "intermediate_size", b);
    const uint64_t step = cfg.uint_or(key, 1, b.m.n_layer);
    const auto mlp_only = index_list(cfg, "mlp_only_layers");
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if (!listed(mlp_only, il) && (il + 1) % step == 0) set_moe(b, il);
        else b.m.n_ff[il] = static_cast<uint32_t>(cfg.uint("intermediate_size"));
    }
}

// DeepSeek-V2/V3: layer il is MoE iff il >= first_k_dense_replace and il % moe_layer_freq == 0.
// DeepSeek-V3: il 0-2 dense (intermediate_size 18432), il 3-60 MoE.
void moe_first_k_dense(const hf_keys & cfg, std::string_view key, hf_build & b) {
    if (!read_experts(cfg, b)) return dense(cfg, "intermediate_size", b);
    const uint64_t first = cfg.count_or(key, 0, b.m.n_layer);
    const uint64_t freq = cfg.uint_or("moe_layer_freq", 1, b.m.n_layer);
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if (il >= first && il % freq == 0) set_moe(b, il);
        else b.m.n_ff[il] = static_cast<uint32_t>(cfg.uint("intermediate_size"));
    }
}

// Llama 4: moe_layers (default il = step-1, 2*step-1, ... for interleave_moe_layer_step), each with one
// shared expert of intermediate_size; dense layers use intermediate_size_mlp. Scout (step 1): all MoE.
void moe_interleave(const hf_keys & cfg, std::string_view key, hf_build & b) {
    if (!read_experts(cfg, b)) return dense(cfg, "intermediate_size", b);
    const uint64_t step = cfg.uint_or(key, 1, b.m.n_layer);
    auto moe_layers = index_list(cfg, "moe_layers");
    if (moe_layers.empty()) {
        for (uint64_t il = step - 1; il < b.m.n_layer; il += step) moe_layers.push_back(il);
    }
    b.m.n_expert_shared = 1;
    b.m.n_ff_shexp = static_cast<uint32_t>(cfg.uint("intermediate_size"));
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if (listed(moe_layers, il)) set_moe(b, il);
        else b.m.n_ff[il] = static_cast<uint32_t>(cfg.uint_or("intermediate_size_mlp", cfg.uint("intermediate_size")));
    }
}

// Nemotron-H: '-' blocks are an MLP of intermediate_size, 'E' blocks MoE; the others have no FFN.
void hybrid_ffn(const hf_keys & cfg, std::string_view key, hf_build & b) {
    const std::string p = cfg.at(key).get<std::string>(); // checked by the layout pattern
    const bool any_moe = p.find('E') != std::string::npos && read_experts(cfg, b);
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if (p[il] == '-') b.m.n_ff[il] = static_cast<uint32_t>(cfg.uint("intermediate_size"));
        if (p[il] == 'E' && any_moe) set_moe(b, il);
    }
}

// Nemotron NAS (DeciLM): per-block ffn. no_op -> no FFN (and no post_attention_layernorm);
// replace_with_linear -> one n_embd x n_embd linear; otherwise a gated MLP of decilm_ffn_width(ffn_mult).
void block_ffn(const hf_keys & cfg, std::string_view key, hf_build & b) {
    const auto & arr = cfg.at(key);
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        const hf_keys ffn = cfg.element(key, il, arr[il]).child("ffn");
        if (ffn.flag_or("no_op", false)) {
            b.n_norm[il] -= 1;
        } else if (ffn.flag_or("replace_with_linear", false)) {
            b.ffn_linear[il] = 1;
        } else {
            if (!ffn.has("ffn_mult")) throw error::missing_key(ffn.where, ffn.prefix + "ffn_mult");
            b.m.n_ff[il] = decilm_ffn_width(ffn.number_or("ffn_mult", 1.0), b.m.n_embd);
        }
    }
}

} // namespace kvfit::detail
