// The registry of config.json keys: those kvfit reads, and those known not to change memory. A key of the language
// config that is in neither list and whose name suggests memory (layer, attention, window, kv, head, expert, ...)
// is named in a warning: kvfit never ignores a key it does not understand without saying so.
#include "sources/hf_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace kvfit::detail {
namespace {

// Keys the sources read (hf_config.cpp, hf_layout.cpp, arch_ffn.cpp, hf_params.cpp), sorted.
constexpr std::array k_read = {
    "add_full_attention_sink_bias", "add_swa_attention_sink_bias", "architectures", "attention_bias",
    "attention_chunk_size", "attention_head_dim", "attention_k_eq_v", "attn_output_gate", "attn_type_list",
    "block_configs", "chunk_size", "compress_ratios", "conv_kernel", "decoder_sparse_step", "dtype",
    "enable_moe_block", "expert_intermediate_size", "experts_per_token", "first_k_dense_replace",
    "full_attention_interval", "gating", "gating_types", "global_head_dim", "hc_mult", "head_dim", "hidden_size",
    "hidden_size_per_layer_input", "hybrid_layer_pattern", "hybrid_override_pattern", "index_head_dim",
    "index_n_heads", "index_skip_topk_offset", "index_topk_freq", "index_topk_pattern", "indexer_types",
    "interleave_moe_layer_step", "intermediate_size", "intermediate_size_mlp", "kv_lora_rank", "layer_types",
    "layers_block_type", "linear_attn_config", "linear_conv_kernel_dim", "linear_key_head_dim",
    "linear_num_key_heads", "linear_num_value_heads", "linear_value_head_dim", "mamba_chunk_size", "mamba_head_dim",
    "mamba_num_heads", "mamba_proj_bias", "mamba_ssm_cache_dtype", "mamba_ssm_dtype", "max_position_embeddings",
    "max_window_layers", "mlp_bias", "mlp_hidden_act", "mlp_layer_types", "mlp_only_layers", "model_type",
    "moe_intermediate_size", "moe_latent_size", "moe_layer_freq", "moe_layers", "moe_num_experts",
    "moe_shared_expert_intermediate_size", "moe_top_k", "mtp_num_hidden_layers", "n_group", "n_groups",
    "n_routed_experts", "norm_topk_prob",
    "n_shared_experts", "no_rope_layer_interval", "no_rope_layers", "num_attention_heads",
    "num_attention_heads_per_layer", "num_experts", "num_experts_per_tok", "num_experts_per_token",
    "num_global_key_value_heads", "num_hash_layers", "num_hidden_layers", "num_key_value_heads",
    "num_kv_shared_layers", "num_local_experts", "num_mtp_modules", "num_nextn_predict_layers", "num_shared_experts",
    "o_groups", "o_lora_rank", "original_max_position_embeddings", "q_lora_rank", "qk_nope_head_dim", "qk_norm_type", "qk_rope_head_dim",
    "rope_parameters", "rope_scaling", "routed_expert_hidden_size", "routed_scaling_factor", "scoring_func",
    "share_expert_dim",
    "shared_expert_intermediate_size", "shared_intermediate_size", "sliding_window", "sliding_window_pattern",
    "sparse_attention_config", "ssm_state_size", "swa_head_dim", "swa_num_attention_heads", "swa_num_key_value_heads",
    "swa_v_head_dim", "text_config", "tie_word_embeddings", "top_k_experts", "topk_group", "topk_method", "torch_dtype",
    "use_bias",
    "use_conv_bias", "use_double_wide_mlp", "use_moe_router_bias", "use_mtp", "use_qk_norm", "use_routing_bias",
    "use_sliding_window", "v_head_dim", "vocab_size", "vocab_size_per_layer_input",
};

// Keys whose names suggest memory but that do not change it (the rule each follows is noted), sorted.
constexpr std::array k_harmless = {
    "add_cross_attention",        // PretrainedConfig generic: false for decoders
    "attention_dropout",          // training only
    "attention_value_scale",      // MiMo-V2: a scale on V, no tensor
    "chunk_size_feed_forward",    // PretrainedConfig generic: compute chunking
    "compress_rope_theta",        // DeepSeek-V4: RoPE base of the compressed caches
    "cross_attention_hidden_size",// PretrainedConfig generic: null for decoders
    "expert_dtype",               // checkpoint format of the experts (weights, not shape)
    "hc_eps", "hc_sinkhorn_iters",// DeepSeek-V4 hyper-connection numerics
    "hidden_dropout",             // training only
    "index_topk",                 // DSA: tokens selected per query, no cache
    "indexer_rope_interleave",    // DSA RoPE layout
    "index_share_for_mtp_iteration", // GLM-5.2: the MTP layer reuses the indexer's choice (MTP apart)
    "layer_norm_epsilon", "layernorm_epsilon",
    "layernorm_full_attention_alpha", "layernorm_full_attention_beta", // MiniMax-01/M1 residual scales (one GGUF
    "layernorm_linear_attention_alpha", "layernorm_linear_attention_beta", // residual_scale, conversion/minimax.py)
    "layernorm_mlp_alpha", "layernorm_mlp_beta",
    "mamba_hidden_act",           // activation
    "mla_use_nope",               // Kimi-K3: no RoPE on the MLA heads; the latent keeps its width
    "moe_apply_router_weight_on_input", // where the routing weight multiplies, no tensor
    "moe_routed_scaling_factor",  // routing numerics
    "moe_router_dtype",           // router numerics (GLM-5.2 float32)
    "moe_router_logit_softcapping", // routing numerics
    "moe_router_scaling_factor",  // routing numerics
    "moe_shared_expert_overlap",  // compute overlap of the shared expert
    "mtp_hybrid_override_pattern",// the MTP block's layout (MTP apart)
    "mtp_transformer_layers",     // MiniMax MTP depth (MTP apart)
    "mtp_use_dedicated_embeddings", // MTP apart
    "output_attentions",          // PretrainedConfig generic
    "output_hidden_states",       // PretrainedConfig generic
    "pruned_heads",               // PretrainedConfig generic: {} unless heads were pruned
    "qk_head_dim",                // GLM-5: qk_nope_head_dim + qk_rope_head_dim
    "rope_interleave",            // RoPE layout
    "rescale_prenorm_residual",   // initialisation
    "shared_moe_mode",            // MiniMax-M1: activation of the shared-expert gate (shared_intermediate_size 0: none)
    "sliding_window_size",        // MiMo-V2: repeats sliding_window
    "swa_rope_theta",             // RoPE base of window layers
    "time_step_rank",             // Nemotron-H: Mamba1's dt rank, unused by its Mamba2 mixer
    "use_bidirectional_attention",// mask only
    "use_cache",                  // HF generate flag
    "use_mamba_kernels",          // kernel choice
    "use_unified_vision_chunk",   // Kimi-K2.5 vision batching
};

// Name parts that suggest a key changes the layout, the caches or the weights: a key matches when one of its
// '_'-separated words starts with one ("num_experts" matches "expert", "do_sample" does not match "ple").
constexpr std::array k_memory_words = {
    "layer", "attn", "attention", "window", "kv", "head", "expert", "moe", "compress", "index", "state", "conv",
    "lora", "mtp", "nextn", "shared", "share", "hybrid", "block", "latent", "chunk", "ssm", "mamba", "linear", "hc",
    "ple", "sparse", "dsa", "swa", "mlp", "ffn", "intermediate", "global", "rank", "nope", "cache",
};

bool in(const auto & list, std::string_view key) {
    return std::find(list.begin(), list.end(), key) != list.end();
}

} // namespace

bool suggests_memory(std::string_view key) {
    for (size_t start = 0; start <= key.size();) {
        size_t end = key.find('_', start);
        if (end == std::string_view::npos) end = key.size();
        const std::string_view word = key.substr(start, end - start);
        for (std::string_view w : k_memory_words) {
            if (word.starts_with(w)) return true;
        }
        start = end + 1;
    }
    return false;
}

bool known_key(std::string_view key) { return in(k_read, key) || in(k_harmless, key); }

void warn_unknown_keys(const hf_keys & cfg, const hf_build &, warnings & warn) {
    // one warning per key, up to 16; a config with more names the count (a hostile file would otherwise print one
    // line per key it holds)
    constexpr size_t k_max_named = 16;
    size_t n_unknown = 0;
    std::string first_more;
    for (const auto & [key, value] : cfg.obj.items()) {
        if (value.is_null() || known_key(key)) continue;
        if (!suggests_memory(key)) continue;
        if (++n_unknown > k_max_named) {
            if (first_more.empty()) first_more = cfg.prefix + key;
            continue;
        }
        warn.push_back(fmt::format("{}: key '{}{}' may change memory and kvfit does not read it (value {})", cfg.where,
                                   cfg.prefix, key, value.dump().substr(0, 60)));
    }
    if (n_unknown > k_max_named) {
        warn.push_back(fmt::format("{}: {} more keys that may change memory and that kvfit does not read (the first: '{}')",
                                   cfg.where, n_unknown - k_max_named, first_more));
    }
}

} // namespace kvfit::detail
