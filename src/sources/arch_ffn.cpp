// config.json -> FFN of each layer, from the keys: which layers route to experts (is_moe[il]), the dense width of
// the others (n_ff[il]) and the expert shapes. Experts under any spelling:
//   routed:  n_routed_experts | num_experts | num_local_experts | moe_num_experts
//   per token: num_experts_per_tok | experts_per_token | top_k_experts | moe_top_k | num_experts_per_token
//   width:   moe_intermediate_size | expert_intermediate_size, else intermediate_size (Mixtral, gpt-oss, MiniMax)
//   shared:  shared_expert_intermediate_size | moe_shared_expert_intermediate_size | share_expert_dim |
//            shared_intermediate_size, else n_shared_experts (num_shared_experts) x the routed width (DeepSeek)
//   latent:  moe_latent_size (Nemotron-3: experts run in a 1,024-wide latent)
// Which layers (first rule present wins): the block list (hybrid_override_pattern 'E', layers_block_type "moe");
// mlp_layer_types (Laguna: "sparse" = MoE);
// moe_layer_freq as a list (MiMo-V2: 1 = MoE); first_k_dense_replace with moe_layer_freq as an int (DeepSeek:
// il >= k and il % freq == 0); moe_layers / interleave_moe_layer_step (Llama 4); decoder_sparse_step with
// mlp_only_layers (Qwen MoE); else every layer. enable_moe_block (Gemma 4): a dense MLP and the experts side by side.
#include "sources/hf_detail.h"
#include "core/util.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace kvfit::detail {
namespace {

using detail::u32;

std::string_view first_present(const hf_keys & cfg, std::initializer_list<std::string_view> keys) {
    for (auto k : keys) {
        if (cfg.has(k)) return k;
    }
    return {};
}

// Routed and shared experts. False when the model has no experts.
bool read_experts(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    const auto n_key = first_present(cfg, {"n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"});
    if (n_key.empty()) return false;
    m.n_expert = u32(cfg.count_or(n_key, 0, 65536));
    const auto used_key = first_present(cfg, {"num_experts_per_tok", "experts_per_token", "top_k_experts", "moe_top_k",
                                              "num_experts_per_token"});
    if (m.n_expert == 0) {
        // 0 routed experts is a dense model only where the modeling code says so: transformers' and vLLM's Qwen2-MoE /
        // Qwen3-MoE / Qwen3-Next build a dense MLP when `config.num_experts > 0` fails (modeling_qwen3_moe.py
        // Qwen3MoeDecoderLayer). A config that also routes each token to experts (a per-token count > 0) describes a
        // class with experts by construction: transformers' GptOssMLP (GptOssTopKRouter of num_local_experts rows),
        // MixtralSparseMoeBlock and DeepseekV3MoE build a router of 0 rows whose top-k fails, and llama.cpp's
        // loaders refuse "n_expert must be > 0 for QWEN3MOE" (models/qwen3moe.cpp, qwen2moe.cpp, deepseek2.cpp);
        // its gpt-oss loader creates ffn_gate_inp {n_embd, n_expert} unconditionally (models/openai-moe.cpp).
        // Planning it dense gave gpt-oss-20b 2.39 B parameters instead of 20.9 B: refused with the key named.
        if (!used_key.empty() && cfg.count_or(used_key, 0, 65536) > 0) {
            throw cfg.bad(n_key, fmt::format("must be positive, got 0 ({} is {}: the model routes each token to experts)",
                                             cfg.prefix + std::string(used_key), cfg.at(used_key).dump()));
        }
        return false;
    }
    if (used_key.empty()) throw error::missing_key(cfg.where, cfg.prefix + "num_experts_per_tok");
    m.n_expert_used = u32(cfg.uint(used_key, 65536));
    if (m.n_expert_used > m.n_expert) {
        throw cfg.bad(used_key, fmt::format("{} exceeds the {} routed experts", m.n_expert_used, m.n_expert));
    }
    const auto w_key = first_present(cfg, {"moe_intermediate_size", "expert_intermediate_size"});
    m.n_ff_exp = u32(cfg.uint(w_key.empty() ? "intermediate_size" : w_key));
    const auto sh_key = first_present(cfg, {"shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                                            "share_expert_dim", "shared_intermediate_size"});
    const uint64_t n_shared = cfg.count_or("n_shared_experts", cfg.count_or("num_shared_experts", 0, 1024), 1024); // Kimi-K3
    if (!sh_key.empty()) {
        m.n_ff_shexp = u32(cfg.count_or(sh_key, 0));
        m.n_expert_shared = m.n_ff_shexp > 0 ? u32(std::max<uint64_t>(1, n_shared)) : 0;
    } else if (n_shared > 0) { // DeepSeek: n_shared_experts of moe_intermediate_size, fused in one MLP
        m.n_expert_shared = u32(n_shared);
        m.n_ff_shexp = m.n_expert_shared * m.n_ff_exp;
    }
    // Nemotron-3 moe_latent_size; Kimi-K3 routed_expert_hidden_size (llama_hparams::n_expert_latent)
    b.moe_latent = u32(cfg.uint_or("moe_latent_size", cfg.uint_or("routed_expert_hidden_size", 0, 65536), 65536));
    m.n_expert_latent = b.moe_latent;
    return true;
}

void set_moe(hf_build & b, uint32_t il) {
    b.m.is_moe[il] = 1;
    b.m.n_ff[il] = 0;
}

// Non-negative layer indices listed under `key` (mlp_only_layers, moe_layers); empty when absent.
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

// DeciLM's width rule (conversion/deci.py DeciModel._ffn_mult_to_intermediate_size, as modeling_decilm.py):
// _find_multiple(int(2 * ffn_mult * n_embd / 3), 256). ffn_mult 5.25, n_embd 8192: 28672.
uint32_t decilm_ffn_width(double ffn_mult, uint32_t n_embd) {
    const auto n = static_cast<uint64_t>(2 * ffn_mult * n_embd / 3);
    return static_cast<uint32_t>(n % 256 == 0 ? n : n + 256 - n % 256);
}

// Nemotron NAS (DeciLM): per-block ffn. no_op -> no FFN (and no post_attention_layernorm);
// replace_with_linear -> one n_embd x n_embd linear; otherwise a gated MLP of decilm_ffn_width(ffn_mult).
void block_ffn(const hf_keys & cfg, hf_build & b) {
    // checked here too: a layer list (hybrid_override_pattern) can place the layers while block_configs is not a list
    const auto & arr = per_layer_array(cfg, b, "block_configs");
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        const hf_keys ffn = cfg.element("block_configs", il, arr[il]).child("ffn");
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

// Hybrid block lists: 'E' / "moe" blocks route to experts, '-' / "mlp" blocks a dense MLP, the others no FFN.
bool block_list_ffn(const hf_keys & cfg, hf_build & b, bool experts) {
    std::vector<char> kind(b.m.n_layer, 0);
    const bool other_list = cfg.has("layer_types") || cfg.has("hybrid_layer_pattern");
    if (cfg.has("layers_block_type") && !other_list) {
        const auto & arr = cfg.at("layers_block_type"); // checked by the layout
        for (uint32_t il = 0; il < b.m.n_layer; ++il) {
            kind[il] = arr[il] == "moe" ? 'E' : arr[il] == "mlp" ? '-' : ' ';
        }
    } else if (cfg.has("hybrid_override_pattern") && !other_list) {
        const std::string p = cfg.at("hybrid_override_pattern").get<std::string>();
        for (uint32_t il = 0; il < b.m.n_layer; ++il) kind[il] = p[il];
    } else {
        return false;
    }
    for (uint32_t il = 0; il < b.m.n_layer; ++il) {
        if (kind[il] == '-') b.m.n_ff[il] = u32(cfg.uint("intermediate_size"));
        if (kind[il] == 'E') {
            if (!experts) throw refuse(cfg, b, fmt::format("block {} is MoE but no expert count is given", il));
            set_moe(b, il);
        }
    }
    return true;
}

} // namespace

void lay_out_ffn(const hf_keys & cfg, hf_build & b) {
    model_desc & m = b.m;
    b.ffn_dense.assign(m.n_layer, 0);
    if (cfg.has("block_configs")) return block_ffn(cfg, b);
    const bool experts = read_experts(cfg, b);
    if (block_list_ffn(cfg, b, experts)) return;
    // Llama 4: dense layers use intermediate_size_mlp; experts and the shared expert intermediate_size
    const bool llama4_widths = cfg.has("intermediate_size_mlp");
    const auto dense_width = [&] {
        return u32(llama4_widths ? cfg.uint("intermediate_size_mlp") : cfg.uint("intermediate_size"));
    };
    if (!experts) {
        // Gemma 3n/4 use_double_wide_mlp: KV-shared layers have twice the MLP width (conversion/gemma.py Gemma4Model)
        const bool wide = cfg.flag_or("use_double_wide_mlp", false);
        for (uint32_t il = 0; il < m.n_layer; ++il) m.n_ff[il] = dense_width() * (wide && b.kv_shared[il] ? 2 : 1);
        return;
    }
    if (llama4_widths && m.n_ff_shexp == 0) {
        m.n_expert_shared = 1;
        m.n_ff_shexp = u32(cfg.uint("intermediate_size"));
    }
    std::vector<uint8_t> moe(m.n_layer, 1);
    if (cfg.has("mlp_layer_types")) { // Laguna: "dense" / "sparse" per layer
        const auto & arr = cfg.at("mlp_layer_types");
        if (!arr.is_array() || arr.size() != m.n_layer) {
            throw cfg.bad("mlp_layer_types", fmt::format("has {} entries for num_hidden_layers {}", arr.is_array() ? arr.size() : 0, m.n_layer));
        }
        for (uint32_t il = 0; il < m.n_layer; ++il) {
            if (arr[il] != "dense" && arr[il] != "sparse") {
                throw refuse(cfg, b, fmt::format("{}mlp_layer_types[{}] {}: an FFN kind kvfit does not know", cfg.prefix, il, arr[il].dump()));
            }
            moe[il] = arr[il] == "sparse";
        }
    } else if (cfg.has("moe_layer_freq") && cfg.at("moe_layer_freq").is_array()) {
        const auto & arr = cfg.at("moe_layer_freq");
        if (arr.size() != m.n_layer) {
            throw cfg.bad("moe_layer_freq", fmt::format("has {} entries for num_hidden_layers {}", arr.size(), m.n_layer));
        }
        for (uint32_t il = 0; il < m.n_layer; ++il) moe[il] = arr[il] != 0;
    } else if (cfg.has("first_k_dense_replace") || cfg.has("moe_layer_freq")) {
        const uint64_t first = cfg.count_or("first_k_dense_replace", 0, m.n_layer);
        const uint64_t freq = cfg.uint_or("moe_layer_freq", 1, m.n_layer);
        for (uint32_t il = 0; il < m.n_layer; ++il) moe[il] = il >= first && il % freq == 0;
    } else if (cfg.has("moe_layers") || cfg.has("interleave_moe_layer_step")) {
        const uint64_t step = cfg.uint_or("interleave_moe_layer_step", 1, m.n_layer);
        auto moe_layers = index_list(cfg, "moe_layers");
        if (moe_layers.empty()) {
            for (uint64_t il = step - 1; il < m.n_layer; il += step) moe_layers.push_back(il);
        }
        for (uint32_t il = 0; il < m.n_layer; ++il) moe[il] = listed(moe_layers, il);
    } else {
        const uint64_t step = cfg.uint_or("decoder_sparse_step", 1, m.n_layer);
        const auto mlp_only = index_list(cfg, "mlp_only_layers");
        for (uint32_t il = 0; il < m.n_layer; ++il) moe[il] = !listed(mlp_only, il) && (il + 1) % step == 0;
    }
    const bool side_by_side = cfg.flag_or("enable_moe_block", false);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (moe[il]) {
            set_moe(b, il);
            // Gemma 4 enable_moe_block: the dense MLP runs beside the experts on every MoE layer (models/gemma4.cpp
            // "MLP (shared exp)"); n_ff keeps its width there, as a GGUF's ffn_up.weight in the block gives it
            // (gguf_model.cpp), so both sources describe the same layer (graph_layer_sig "m8d")
            if (side_by_side) b.ffn_dense[il] = m.n_ff[il] = dense_width();
        } else {
            m.n_ff[il] = dense_width();
        }
    }
}

} // namespace kvfit::detail
