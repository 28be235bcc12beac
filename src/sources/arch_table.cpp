// The architecture table: one row per llama.cpp architecture, for the GGUF source (general.architecture) and
// the config.json source (`architectures` classes and model_type names). A row holds only what no key says.
// Sources of the columns:
// - gguf_arch: LLM_ARCH_NAMES, llama.cpp v0.5.0 src/llama-arch.cpp.
// - hf names: the @ModelBase.register(...) classes of convert_hf_to_gguf.py / conversion/*.py (v0.5.0) that produce
//   that arch, plus the HF model_type names of the family.
// - layout, period, window, kv_from: what llama_model_<arch>::load_arch_hparams hard-codes (src/models/<arch>.cpp).
// - flags (F): tensors the loader creates with no key to say so (load_arch_tensors) and config.json key quirks.
// - facts (A): what the runtime needs beyond the keys (model_desc::arch, include/kvfit/model.h), copied into every
//   model of the row's GGUF architecture by set_arch_facts.
// Adding an architecture is adding a row. A layout no row can express is a new gguf_layout value (arch.h) or a
// key rule in hf_layout.cpp; no `if (arch == ...)` anywhere else.
#include "sources/arch.h"

#include <algorithm>
#include <sstream>

namespace kvfit::detail {
namespace {

using L = gguf_layout;
using R = recurrent_kind;

// The two flag columns are designated initializers: a misspelt flag does not compile, and one named out of
// declaration order neither (arch.h param_flags, model.h arch_facts).
using F = param_flags;
using A = arch_facts;

} // namespace

const std::vector<arch_row> & arch_rows() {
    // models/X.cpp = llama.cpp v0.5.0 src/models/X.cpp (load_arch_hparams / load_arch_tensors);
    // hf X = transformers src/transformers/models/X (modeling_X.py).
    static const std::vector<arch_row> rows = {
        //  gguf arch        hf architectures and model_types                                                                        layout              period window rec                 mla    kv_from flags (F), facts (A)                          cite
        {"llama",          "LlamaForCausalLM LLaMAForCausalLM llama",                                                                L::attention,       0,     0,     R::none,           false, 0,  F{}, A{.no_window = true},                                      "models/llama.cpp; hf llama"},
        {"llama",          "MistralForCausalLM mistral",                                                                             L::attention,       0,     0,     R::none,           false, 0,  F{.swa_all = true}, A{.no_window = true},                               "models/llama.cpp; hf mistral (sliding_window on every layer)"},
        {"llama",          "MixtralForCausalLM mixtral",                                                                             L::attention,       0,     0,     R::none,           false, 0,  F{.swa_all = true}, A{.no_window = true},                               "models/llama.cpp; hf mixtral (MixtralSparseMoeBlock)"},
        {"mistral3",       "Mistral3ForConditionalGeneration Ministral3ForCausalLM mistral3 ministral3",                             L::attention,       0,     0,     R::none,           false, 0,  F{}, A{.no_window = true},                                      "models/mistral3.cpp"},
        {"granite",        "GraniteForCausalLM granite",                                                                             L::attention,       0,     0,     R::none,           false, 0,  F{}, A{},                                        "models/granite.cpp; conversion/granite.py GraniteModel (llama-shaped; multipliers only)"},
        {"olmo2",          "Olmo2ForCausalLM Olmo3ForCausalLM olmo2 olmo3",                                                         L::attention,       0,     0,     R::none,           false, 0,  F{.qk_norm = true}, A{},                                 "models/olmo2.cpp (sliding_window_pattern array: Olmo3); conversion/olmo.py Olmo2Model"},
        {"qwen2",          "Qwen2ForCausalLM qwen2",                                                                                 L::attention,       0,     0,     R::none,           false, 0,  F{.qkv_bias = true, .swa_if_used = true}, A{.no_window = true},                  "models/qwen2.cpp (sliding_window not read); hf qwen2 configuration (layer_types)"},
        {"qwen2moe",       "Qwen2MoeForCausalLM qwen2_moe",                                                                          L::attention,       0,     0,     R::none,           false, 0,  F{.qkv_bias = true, .shexp_gate = true, .swa_if_used = true}, A{.no_window = true},       "models/qwen2moe.cpp; hf qwen2_moe"},
        {"qwen3",          "Qwen3ForCausalLM qwen3",                                                                                 L::attention,       0,     0,     R::none,           false, 0,  F{.qk_norm = true, .swa_if_used = true}, A{.no_window = true},                   "models/qwen3.cpp; hf qwen3"},
        {"qwen3moe",       "Qwen3MoeForCausalLM qwen3_moe",                                                                          L::attention,       0,     0,     R::none,           false, 0,  F{.qk_norm = true, .swa_if_used = true}, A{.no_window = true},                   "models/qwen3moe.cpp; hf qwen3_moe"},
        {"qwen3vl",        "Qwen3VLForConditionalGeneration qwen3_vl qwen3_vl_text",                                                 L::attention,       0,     0,     R::none,           false, 0,  F{.qk_norm = true, .mrope = true}, A{},                         "models/qwen3vl.cpp; hf qwen3_vl"},
        {"qwen3vlmoe",     "Qwen3VLMoeForConditionalGeneration qwen3_vl_moe qwen3_vl_moe_text",                                      L::attention,       0,     0,     R::none,           false, 0,  F{.qk_norm = true, .mrope = true}, A{},                         "models/qwen3vlmoe.cpp; hf qwen3_vl_moe"},
        {"qwen3next",      "Qwen3NextForCausalLM qwen3_next",                                                                        L::interval,        4,     0,     R::gated_deltanet, false, 0,  F{.qk_norm = true, .shexp_gate = true, .nextn_folded = true}, A{.attn_gate = true},           "models/qwen3next.cpp (recurrent iff (i + 1) % full_attention_interval != 0); hf qwen3_next"},
        {"qwen35",         "Qwen3_5ForConditionalGeneration Qwen3_5ForCausalLM qwen3_5 qwen3_5_text",                                L::interval,        4,     0,     R::gated_deltanet, false, 0,  F{.qk_norm = true, .mrope = true, .nextn_folded = true}, A{.attn_gate = true, .rs_rollback = true},               "models/qwen35.cpp; hf qwen3_5 (Qwen3_5GatedDeltaNet)"},
        {"qwen35moe",      "Qwen3_5MoeForConditionalGeneration Qwen3_5MoeForCausalLM qwen3_5_moe qwen3_5_moe_text",                  L::interval,        4,     0,     R::gated_deltanet, false, 0,  F{.qk_norm = true, .shexp_gate = true, .mrope = true, .nextn_folded = true}, A{.attn_gate = true, .rs_rollback = true},    "models/qwen35moe.cpp; hf qwen3_5_moe"},
        {"qwen4exp",       "Qwen4ExpForConditionalGeneration Qwen4ExpForCausalLM qwen4_exp qwen4_exp_text",                          L::interval,        4,     0,     R::gated_deltanet, false, 0,  F{.qk_norm = true}, A{.attn_gate = true, .rs_rollback = true},                     "models/qwen4exp.cpp (full_attention_interval default 4; indexer keys; llama-memory-hybrid-idx.cpp)"},
        {"glm4moe",        "Glm4MoeForCausalLM Glm4vMoeForConditionalGeneration glm4_moe",                                           L::attention,       0,     0,     R::none,           false, 0,  F{.qkv_bias = true, .nextn_folded = true}, A{},                              "models/glm4-moe.cpp (nextn layers not cached)"},
        {"deepseek2",      "DeepseekV2ForCausalLM DeepseekV3ForCausalLM KimiVLForConditionalGeneration KimiK25ForConditionalGeneration "
                           "YoutuForCausalLM deepseek_v2 deepseek_v3 kimi_k2 kimi_k25",                       L::attention,       0,     0,     R::none,           true,  0,  F{}, A{},                                      "models/deepseek2.cpp (MLA when key_length_mla is set); conversion/deepseek.py DeepseekV2Model"},
        {"deepseek2",      "Glm4MoeLiteForCausalLM glm4_moe_lite",                                                                   L::attention,       0,     0,     R::none,           true,  0,  F{.nextn_folded = true}, A{},                          "models/deepseek2.cpp; conversion/glm.py Glm4MoeLiteModel (MLA, the NextN block folded)"},
        {"deepseek32",     "DeepseekV32ForCausalLM deepseek_v32",                                                                    L::attention,       0,     0,     R::none,           true,  0,  F{.mtp_probs_b = true, .nextn_folded = true}, A{},                           "models/deepseek32.cpp (MLA + DSA indexer, llama-kv-cache-dsa.cpp)"},
        {"glm-dsa",        "GlmMoeDsaForCausalLM glm_moe_dsa",                                                                       L::attention,       0,     0,     R::none,           true,  0,  F{.mtp_probs_b = true, .nextn_folded = true}, A{},                           "models/glm-dsa.cpp (indexer on layers indexer.types marks full)"},
        {"deepseek4",      "DeepseekV4ForCausalLM deepseek_v4",                                                                      L::all_swa,         0,     0,     R::none,           false, 0,  F{}, A{.rs_rollback = true},                                      "models/deepseek4.cpp (set_swa_pattern(0), compress_ratios), llama-kv-cache-dsv4.cpp"},
        {"minimax-01",     "MiniMaxText01ForCausalLM MiniMaxM1ForCausalLM MiniMaxForCausalLM "
                           "minimax_text_01 minimax_m1 minimax",                                                                     L::interval,        8,     0,     R::lightning,      false, 0,  F{}, A{},                                      "models/minimax-01.cpp (is_recr: (i + 1) % full_attention_interval != 0, default 8; n_embd_s = n_embd_head_la^2 n_head); conversion/minimax.py (writes no layer list)"},
        {"minimax-m2",     "MiniMaxM2ForCausalLM minimax_m2",                                                                        L::attention,       0,     0,     R::none,           false, 0,  F{}, A{},                                      "models/minimax-m2.cpp; conversion/minimax.py MiniMaxM2Model"},
        {"minimax-m3",     "MiniMaxM3SparseForCausalLM MiniMaxM3SparseForConditionalGeneration minimax_m3",                           L::attention,       0,     0,     R::none,           false, 0,  F{.index_sparse = true}, A{},                          "models/minimax-m3.cpp; llama-kv-cache-msa.cpp (indexer on il >= leading_dense_block_count); conversion/minimax.py MiniMaxM3Model"},
        {"mistral4",       "Mistral4ForCausalLM mistral4",                                                                            L::attention,       0,     0,     R::none,           true,  0,  F{}, A{},                                      "models/mistral4.cpp (llama_model_deepseek2: MLA); conversion/mistral3.py Mistral4Model"},
        {"phi3",           "Phi3ForCausalLM phi3",                                                                                   L::attention,       0,     0,     R::none,           false, 0,  F{.swa_all = true}, A{.no_window = true},                     "models/phi3.cpp: \"Phi SWA is currently disabled\""},
        {"gemma2",         "Gemma2ForCausalLM gemma2",                                                                               L::swa_period,      2,     4096,  R::none,           false, 0,  F{.gemma_norms = true}, A{},                           "models/gemma2.cpp: n_swa = 4096, set_swa_pattern(2)"},
        {"gemma3",         "Gemma3ForCausalLM Gemma3ForConditionalGeneration gemma3 gemma3_text",                                    L::swa_period,      6,     0,     R::none,           false, 0,  F{.qk_norm = true, .gemma_norms = true}, A{},                   "models/gemma3.cpp: set_swa_pattern(6) when sliding_window > 0"},
        {"gemma3n",        "Gemma3nForCausalLM Gemma3nForConditionalGeneration gemma3n gemma3n_text",                                L::swa_period,      5,     0,     R::none,           false, 20, F{.qk_norm = true, .gemma_norms = true}, A{.tied_output_first = true}, "models/gemma3n.cpp: set_swa_pattern(5), n_layer_kv_from_start = 20"},
        {"gemma4",         "Gemma4ForConditionalGeneration Gemma4ForCausalLM gemma4 gemma4_text",                                    L::attention,       0,     0,     R::none,           false, 0,  F{.qk_norm = true, .gemma_norms = true}, A{.h_nextn_rows = true, .tied_output_first = true, .rope_freqs_full = true}, "models/gemma4.cpp (sliding_window_pattern array, shared_kv_layers); conversion/gemma.py Gemma4Model"},
        {"gpt-oss",        "GptOssForCausalLM gpt_oss",                                                                              L::swa_period,      2,     0,     R::none,           false, 0,  F{.sinks = true, .router_bias = true, .expert_bias = true}, A{},         "models/openai-moe.cpp: set_swa_pattern(2); hf gpt_oss"},
        {"cohere2",        "Cohere2ForCausalLM cohere2",                                                                             L::swa_period,      4,     0,     R::none,           false, 0,  F{}, A{},                                      "models/cohere2.cpp: set_swa_pattern(4)"},
        {"exaone4",        "Exaone4ForCausalLM exaone4",                                                                             L::swa_period,      4,     0,     R::none,           false, 0,  F{.qk_norm = true}, A{},                               "models/exaone4.cpp: set_swa_pattern(4) when sliding_window is set"},
        {"mimo2",          "MiMoV2FlashForCausalLM MiMoV2ForCausalLM mimo_v2_flash mimo_v2",                                         L::attention,       0,     0,     R::none,           false, 0,  F{.chunk_alias = true, .nextn_folded = true}, A{},                           "models/mimo2.cpp (sliding_window_pattern array, per-layer head_count_kv); conversion/mimo.py"},
        {"step35",         "Step3p5ForCausalLM Step3p7ForConditionalGeneration step3p5 step3p7",                                     L::attention,       0,     0,     R::none,           false, 0,  F{.qk_norm = true, .mtp_trunk_tensors = true, .nextn_folded = true}, A{.head_gate = true, .h_nextn_rows = true}, "models/step35.cpp (sliding_window_pattern array, g_proj); conversion/step3.py Step35Model"},
        {"laguna",         "LagunaForCausalLM laguna",                                                                               L::swa_dense_first, 4,     0,     R::none,           false, 0,  F{.qk_norm = true}, A{},                               "models/laguna.cpp (load_swa_pattern(4, dense_first), per-layer n_head, g_proj); conversion/laguna.py"},
        {"llama4",         "Llama4ForConditionalGeneration Llama4ForCausalLM llama4 llama4_text",                                    L::chunked_period,  4,     0,  R::none,           false, 0,  F{.chunk_nope = true}, A{.n_chunk_fixed = 8192},                            "models/llama4.cpp: chunked, n_swa = 8192, set_swa_pattern(4); hf llama4 (no_rope_layers)"},
        {"mamba",          "MambaForCausalLM MambaLMHeadModel FalconMambaForCausalLM mamba falcon_mamba",                            L::all_recurrent,   0,     0,     R::mamba1,         false, 0,  F{}, A{},                                      "models/mamba.cpp"},
        {"mamba2",         "Mamba2ForCausalLM mamba2",                                                                               L::all_recurrent,   0,     0,     R::mamba2,         false, 0,  F{}, A{},                                      "models/mamba2.cpp"},
        {"nemotron_h",     "NemotronHForCausalLM nemotron_h",                                                                        L::nemotron_h,      0,     0,     R::mamba2,         false, 0,  F{.ffn_gated = false}, A{.rs_rollback = true},                             "models/nemotron-h.cpp (recurrent iff n_head_kv(i) == 0 && n_ff(i) == 0); hf nemotron_h"},
        {"nemotron_h_moe", "NemotronHPuzzleForCausalLM",                                                                             L::nemotron_h,      0,     0,     R::mamba2,         false, 0,  F{.ffn_gated = false, .nextn_folded = true}, A{.rs_rollback = true},                             "models/nemotron-h.cpp; conversion/nemotron.py (NEMOTRON_H_MOE when num_experts_per_tok is set)"},
        {"granitehybrid",  "GraniteMoeHybridForCausalLM BambaForCausalLM granitemoehybrid bamba",                                    L::kv_or_recurrent, 0,     0,     R::mamba2,         false, 0,  F{}, A{},                                      "models/granite-hybrid.cpp (recurrent iff n_head_kv(i) == 0)"},
        {"jamba",          "JambaForCausalLM jamba",                                                                                 L::kv_or_recurrent, 0,     0,     R::mamba1,         false, 0,  F{}, A{},                                      "models/jamba.cpp (recurrent iff n_head_kv(i) == 0)"},
        {"falcon-h1",      "FalconH1ForCausalLM falcon_h1",                                                                          L::parallel_hybrid, 0,     0,     R::mamba2,         false, 0,  F{}, A{},                                      "models/falcon-h1.cpp (attention and mamba2 in every layer)"},
        {"lfm2",           "Lfm2ForCausalLM LFM2ForCausalLM lfm2",                                                                   L::kv_or_recurrent, 0,     0,     R::short_conv,     false, 0,  F{}, A{.rs_rollback = true},                                      "models/lfm2.cpp (recurrent iff n_head_kv(i) == 0)"},
        {"lfm2moe",        "Lfm2MoeForCausalLM lfm2_moe",                                                                            L::kv_or_recurrent, 0,     0,     R::short_conv,     false, 0,  F{}, A{.rs_rollback = true},                                      "models/lfm2moe.cpp"},
        {"rwkv6",          "Rwkv6ForCausalLM rwkv6",                                                                                 L::all_recurrent,   0,     0,     R::rwkv,           false, 0,  F{}, A{},                                      "models/rwkv6.cpp"},
        {"rwkv7",          "Rwkv7ForCausalLM RWKV7ForCausalLM rwkv7",                                                                L::all_recurrent,   0,     0,     R::rwkv,           false, 0,  F{}, A{},                                      "models/rwkv7.cpp"},
        {"kimi-linear",    "KimiLinearForCausalLM KimiLinearModel kimi_linear",                                                      L::kv_or_recurrent, 0,     0,     R::kda,            true,  0,  F{}, A{},                                      "models/kimi-linear.cpp (KDA: llama-hparams.cpp n_embd_r/n_embd_s); conversion/kimi_linear.py"},
        {"kimi-k3",        "KimiK3ForConditionalGeneration kimi_k3",                                                                 L::kv_or_recurrent, 0,     0,     R::kda,            true,  0,  F{}, A{.rs_rollback = true},                                      "models/kimi-k3.cpp; conversion/kimi_k3.py (full_attn_layers MLA, the rest KDA)"},
        {"deci",           "DeciLMForCausalLM nemotron-nas",                                                                         L::attention,       0,     0,     R::none,           false, 0,  F{}, A{},                                      "models/deci.cpp; conversion/deci.py DeciModel; nvidia modeling_decilm.py"},
    };
    return rows;
}

const arch_row * find_arch_gguf(std::string_view arch) {
    for (const auto & r : arch_rows()) {
        if (r.gguf_arch == arch) return &r;
    }
    return nullptr;
}

void set_arch_facts(model_desc & m) {
    const arch_row * row = find_arch_gguf(m.gguf_architecture);
    m.arch = row != nullptr ? row->facts : arch_facts{};
}

const arch_row * find_arch_hf(const std::vector<std::string> & names) {
    for (const auto & name : names) {
        for (const auto & r : arch_rows()) {
            std::istringstream words{std::string(r.hf_names)};
            for (std::string w; words >> w;) {
                if (w == name) return &r;
            }
        }
    }
    return nullptr;
}

void build_layer_caches(model_desc & m, const std::vector<layer_store> & layers, uint32_t index_dim) {
    using mem = layer_store::mem;
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        const layer_store & l = layers.at(il);
        auto & cs = m.caches.at(il);
        cs.clear();
        if (l.kv_shared && (l.what == mem::attention || l.what == mem::mla)) continue; // shape, no cache
        switch (l.what) {
        case mem::attention: {
            const uint32_t window = l.attn == cache_kind::window ? m.n_swa : l.attn == cache_kind::chunked ? m.n_chunk : 0;
            cs.push_back(layer_cache::attention(l.attn, m.n_head_kv[il], m.head_dim_k[il], m.head_dim_v[il], window));
            break;
        }
        case mem::mla:       set_mla_layer(m, il); break;
        case mem::dsv4:      add_dsv4_caches(m, il, l.compress, m.head_dim_k[il], index_dim); break;
        case mem::recurrent: add_recurrent_state(m, il); break;
        case mem::none:      break;
        }
        if (l.indexer && (l.what == mem::attention || l.what == mem::mla)) cs.push_back(layer_cache::indexer(index_dim));
        if (l.parallel_state && l.what == mem::attention) add_recurrent_state(m, il);
        if (l.ple_state > 0 && l.what == mem::recurrent) cs.push_back(layer_cache::state(cache_kind::ple_state, l.ple_state));
    }
}

void set_mla_layer(model_desc & m, uint32_t il) {
    m.n_head_kv[il] = 1;
    m.head_dim_k[il] = m.kv_lora_rank + m.n_rot_mla;
    m.head_dim_v[il] = m.kv_lora_rank;
    m.caches[il].push_back(layer_cache::latent(m.kv_lora_rank + m.n_rot_mla));
}

void add_dsv4_caches(model_desc & m, uint32_t il, uint32_t ratio, uint32_t head_dim, uint32_t index_dim) {
    auto & cs = m.caches[il];
    cs.push_back(layer_cache::attention(cache_kind::window, 1, head_dim, 0, m.n_swa));
    if (ratio == 0) return;
    cs.push_back(layer_cache::compressed(head_dim, ratio));
    if (ratio == 4) cs.push_back(layer_cache::indexer(index_dim, ratio));
}

} // namespace kvfit::detail
