// vLLM speculative decoding (--speculative-config): the JSON as vllm/config/speculative.py SpeculativeConfig reads it
// (fields, method normalisation, __post_init__ and _verify_args @f19b16d9), the drafter's KV layers that join the pool
// and the drafter's weights. Rules and the logs that check them: docs/rules/vllm-speculative.md.
//
// Facts used (vllm-project/vllm; commits as stored in the reference index):
// - vllm/config/speculative.py @f19b16d9: MTPModelTypes (deepseek_mtp, mimo_mtp, glm4_moe_mtp, qwen3_next_mtp,
//   qwen3_5_mtp, ... "mtp") are all rewritten to "mtp" ("method `%s` is deprecated and replaced with mtp."); method
//   "mtp" without "model" drafts from the target's own checkpoint (self.model = target_model_config.model) with the
//   target's quantization; hf_config_override turns it into an MTP model of n_predict = num_nextn_predict_layers
//   (DeepSeek-V3/V3.2, GLM, MiMo, ERNIE, Qwen3-Next, ...) or mtp_num_hidden_layers (Qwen3.5/3.6); the draft model
//   config takes the target's dtype; num_speculative_tokens > n_predict must be a multiple of it (the layers are run
//   again, no new layers); ngram / ngram_gpu / suffix load no model; suffix defaults num_speculative_tokens to
//   suffix_decoding_max_tree_depth (24); a "model" without a method is eagle when its name holds "eagle-", eagle3 when
//   it holds "eagle3", mtp when its config is an MTP type, else NotImplementedError; 'tensor_parallel_size' is refused;
//   draft_tensor_parallel_size is 1 or the target's; eagle3 needs a target model type holding llama, qwen, minicpm,
//   gpt_oss, hunyuan_vl, hunyuan_v1_dense or afmoe (_verify_args).
// - vllm/model_executor/layers/mamba/abstract.py @00b08dc4 MambaBase.get_kv_cache_spec: num_speculative_blocks =
//   vllm_config.num_speculative_tokens (any method); vllm/v1/kv_cache_interface.py @bc8282e6 MambaSpec
//   .max_memory_usage_bytes: (1 + num_speculative_blocks) pages (mode none), (2 + ...) (align), cdiv(len, B) (all).
// - vllm/model_executor/layers/mamba/mamba_utils.py @02d71083: the conv state of mamba2, gated_delta_net and kda has
//   conv_kernel - 1 + num_spec rows; mamba1 and short_conv have none more.
// - The drafter's attention layers are attention layers of the same vllm_config: get_kv_cache_spec returns them with
//   the model's, in the same groups and pool (kv_cache_utils.py's own example: "gpt-oss + eagle, 12 SWA + 13 full";
//   vllm/v1/spec_decode/draft_model.py @01dd981d DraftModelProposer.load_model loads the whole draft with get_model into
//   the same forward context, its attn_layer_names = the Attention layers of vllm_config minus the target's, and shares
//   no embedding or head).
//   Checked by two vLLM 0.20.0 logs with MTP on Qwen3.5-9B and Qwen3.6-27B ("Add 3 padding layers": 17 or 9 attention
//   layers against 48 or 24 GDN layers).
// - vllm/v1/spec_decode/llm_base_proposer.py (_maybe_share_embeddings, _maybe_share_lm_head): an MTP drafter uses the
//   target's embedding and LM head ("Detected MTP model. Sharing target model embedding weights with the draft
//   model." at PP 1); an EAGLE head shares the embedding when it has none or the same, and the LM head likewise.
#include "runtimes/vllm/layout.h"

#include "kvfit/error.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvfit {

namespace {

bool one_of(const std::string & s, std::initializer_list<const char *> xs) {
    return std::any_of(xs.begin(), xs.end(), [&](const char * x) { return s == x; });
}

// MTPModelTypes of vllm/config/speculative.py @f19b16d9.
bool mtp_type(const std::string & m) {
    return one_of(m, {"deepseek_mtp", "mimo_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp",
                      "exaone_moe_mtp", "qwen3_next_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "mtp",
                      "pangu_ultra_moe_mtp", "step3p5_mtp"});
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

} // namespace

vllm_speculative parse_speculative_config(const std::string & text) {
    vllm_speculative sp;
    sp.json = text;
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception & e) {
        std::string why = e.what();
        if (const size_t at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
        throw error(fmt::format("--speculative-config: not valid JSON ({}); expected an object such as "
                                "'{{\"method\":\"mtp\",\"num_speculative_tokens\":2}}'", why));
    }
    if (!j.is_object()) {
        throw error("--speculative-config: expected a JSON object such as '{\"method\":\"mtp\",\"num_speculative_tokens\":2}'");
    }
    auto str = [&](const char * key) -> std::string {
        if (!j.contains(key) || j[key].is_null()) return "";
        if (!j[key].is_string()) throw error(fmt::format("--speculative-config: \"{}\" must be a string", key));
        return j[key].get<std::string>();
    };
    auto count = [&](const char * key) -> int64_t {
        if (!j.contains(key) || j[key].is_null()) return 0;
        if (!j[key].is_number_integer()) throw error(fmt::format("--speculative-config: \"{}\" must be an integer", key));
        return j[key].get<int64_t>();
    };
    // SpeculativeConfig's fields @f19b16d9, by what they do to memory.
    static const char * modelled[] = {"method", "model", "num_speculative_tokens", "draft_tensor_parallel_size",
                                      "suffix_decoding_max_tree_depth"};
    static const char * no_memory[] = {"revision", "code_revision", "disable_by_batch_size", "disable_padded_drafter_batch",
                                       "prompt_lookup_max", "prompt_lookup_min", "max_model_len",
                                       "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob"};
    static const char * unmodelled[] = {"quantization", "speculative_token_tree", "parallel_drafting", "draft_load_config",
                                        "enforce_eager", "suffix_decoding_max_cached_requests"};
    auto in = [](const std::string & k, const auto & list) {
        return std::any_of(std::begin(list), std::end(list), [&](const char * x) { return k == x; });
    };
    for (const auto & kv : j.items()) {
        const std::string & k = kv.key();
        if (k == "tensor_parallel_size") { // _verify_args
            throw error("vllm: ValueError: 'tensor_parallel_size' is not a valid argument in the speculative_config. "
                        "Please pass 'draft_tensor_parallel_size' instead.");
        }
        if (in(k, modelled) || in(k, no_memory)) continue;
        if (in(k, unmodelled)) {
            sp.warnings.push_back(fmt::format("--speculative-config \"{}\": its effect on memory is not modelled (the "
                                              "drafter's {}); the plan is uncertain by it", k,
                                              k == "enforce_eager" ? "CUDA graphs" : k == "quantization" ? "weights are sized in the target's format"
                                              : k == "suffix_decoding_max_cached_requests" ? "suffix trees live in host memory"
                                              : "extra draft tokens and buffers"));
            continue;
        }
        sp.warnings.push_back(fmt::format("--speculative-config \"{}\": not a field of vLLM's SpeculativeConfig "
                                          "(vllm/config/speculative.py); not modelled, the plan is uncertain by it", k));
    }
    sp.method = str("method");
    sp.model = str("model");
    const int64_t n_spec = count("num_speculative_tokens");
    if (j.contains("num_speculative_tokens") && n_spec <= 0) {
        throw error(fmt::format("vllm: ValueError: Expected num_speculative_tokens to be greater than zero ({}).", n_spec));
    }
    if (n_spec > 4096) throw error(fmt::format("--speculative-config num_speculative_tokens {}: exceeds the limit 4096", n_spec));
    sp.num_speculative_tokens = uint32_t(n_spec);
    const int64_t dtp = count("draft_tensor_parallel_size");
    if (j.contains("draft_tensor_parallel_size") && (dtp < 1 || dtp > 1024)) {
        throw error("--speculative-config draft_tensor_parallel_size: must be at least 1");
    }
    sp.draft_tensor_parallel_size = uint32_t(dtp);

    // __post_init__: the deprecated MTP names, ngram spellings, the model-less methods
    if (mtp_type(sp.method) && sp.method != "mtp") sp.method = "mtp";
    if (sp.method == "[ngram]" || (sp.method.empty() && (sp.model == "ngram" || sp.model == "[ngram]"))) sp.method = "ngram";
    const bool no_model = one_of(sp.method, {"ngram", "ngram_gpu", "suffix"});
    if (no_model) sp.model.clear();
    if (sp.method == "suffix" && sp.num_speculative_tokens == 0) {
        const int64_t depth = j.contains("suffix_decoding_max_tree_depth") ? count("suffix_decoding_max_tree_depth") : 24;
        if (depth < 1) throw error(fmt::format("vllm: ValueError: suffix_decoding_max_tree_depth={} must be >= 1", depth));
        sp.num_speculative_tokens = uint32_t(std::min<int64_t>(depth, 4096));
    }
    if (sp.model.empty() && !no_model && sp.method != "mtp") {
        if (sp.method.empty()) throw error("--speculative-config: give \"method\" (mtp, eagle, eagle3, draft_model, ngram, suffix) or \"model\"");
        throw error(fmt::format("vllm: ValueError: num_speculative_tokens was provided but without speculative model. "
                                "(method {} needs \"model\": the draft checkpoint)", sp.method));
    }
    if (!sp.model.empty() && sp.method.empty()) {
        const std::string l = lower(sp.model);
        if (l.find("eagle-") != std::string::npos) sp.method = "eagle";
        else if (l.find("eagle3") != std::string::npos) sp.method = "eagle3";
        // else: mtp when the draft's config has MTP layers, decided once it is read (vllm_resolve_speculative)
    }
    const bool known = sp.method.empty() || one_of(sp.method, {"mtp", "eagle", "eagle3", "draft_model", "ngram", "ngram_gpu",
                                                              "suffix", "medusa", "mlp_speculator"});
    if (!known) {
        sp.warnings.push_back(fmt::format("--speculative-config method '{}': not a method kvfit models (mtp, eagle, eagle3, "
                                          "draft_model, ngram, ngram_gpu, suffix); its drafter's weights and KV are not "
                                          "counted, the plan is uncertain", sp.method));
    } else if (sp.method == "medusa" || sp.method == "mlp_speculator") {
        sp.warnings.push_back(fmt::format("--speculative-config method {}: the drafter's heads are not counted (no KV; "
                                          "their weights are not modelled); the plan is uncertain", sp.method));
    }
    if (sp.num_speculative_tokens == 0 && sp.model.empty()) { // _verify_args
        throw error("vllm: ValueError: num_speculative_tokens must be provided with speculative model unless the draft "
                    "model config contains an n_predict parameter.");
    }
    return sp;
}

namespace detail {

namespace {

// The target's layer an MTP layer repeats: the last layer whose attention is not windowed (DeepSeek / GLM: MLA with the
// indexer on DSA models; Qwen3.5/3.6, Qwen3-Next: a full-attention layer, as their MTP decoder layers are).
int64_t mtp_template(const model_desc & m) {
    for (int64_t il = int64_t(m.n_layer) - 1; il >= 0; --il) {
        const layer_cache * a = m.attention_cache(uint32_t(il));
        if (a != nullptr && (a->kind == cache_kind::full || a->kind == cache_kind::latent)) return il;
    }
    return -1;
}

void push_layer(model_desc & out, const model_desc & src, uint32_t il, std::vector<layer_cache> caches) {
    out.caches.push_back(std::move(caches));
    auto at = [&](const std::vector<uint32_t> & v) { return il < v.size() ? v[il] : 0u; };
    out.n_head.push_back(at(src.n_head));
    out.n_head_kv.push_back(at(src.n_head_kv));
    out.head_dim_k.push_back(at(src.head_dim_k));
    out.head_dim_v.push_back(at(src.head_dim_v));
    out.n_ff.push_back(at(src.n_ff));
    out.is_moe.push_back(il < src.is_moe.size() ? src.is_moe[il] : 0);
    out.weights.layers.push_back(il < src.weights.layers.size() ? src.weights.layers[il] : weight_group{});
    ++out.n_layer;
}

} // namespace

void vllm_resolve_speculative(const model_desc & m, vllm_settings & s, std::vector<std::string> & notes) {
    vllm_speculative & sp = s.speculative;
    if (sp.method.empty() && !sp.model.empty()) {
        if (sp.draft && sp.draft->n_layer_mtp_apart > 0) sp.method = "mtp";
        else {
            throw error("vllm: NotImplementedError: Unsupported speculative method: 'None' (a \"model\" whose name holds "
                        "neither \"eagle-\" nor \"eagle3\" and whose config is no MTP model: add \"method\": "
                        "\"draft_model\", \"eagle\" or \"eagle3\")");
        }
    }
    if (sp.method == "mtp") {
        const model_desc & src = sp.draft && sp.draft->n_layer_mtp_apart > 0 ? *sp.draft : m;
        const uint32_t n_predict = src.n_layer_mtp_apart;
        if (n_predict == 0) {
            throw error("vllm: --speculative-config method mtp: the model's config has no MTP layers "
                        "(num_nextn_predict_layers / mtp_num_hidden_layers), so vLLM has no drafter to build");
        }
        if (sp.num_speculative_tokens == 0) sp.num_speculative_tokens = n_predict; // n_predict default (model given)
        if (sp.num_speculative_tokens > n_predict && sp.num_speculative_tokens % n_predict != 0) {
            throw error(fmt::format("vllm: ValueError: num_speculative_tokens:{} must be divisible by n_predict={}",
                                    sp.num_speculative_tokens, n_predict));
        }
        if (sp.num_speculative_tokens > n_predict) {
            notes.push_back(fmt::format("Enabling num_speculative_tokens > 1 will run multiple times of forward on same "
                                        "MTP layer: {} draft tokens from {} MTP layer{} (no more KV layers)",
                                        sp.num_speculative_tokens, n_predict, n_predict == 1 ? "" : "s"));
        }
    }
    if (sp.method == "eagle3") { // SpeculativeConfig._verify_args: eagle3_target_supported, a substring of the model type
        static const char * ok[] = {"llama", "qwen", "minicpm", "gpt_oss", "hunyuan_vl", "hunyuan_v1_dense", "afmoe"};
        const bool supported = std::any_of(std::begin(ok), std::end(ok), [&](const char * t) {
            return m.architecture.find(t) != std::string::npos;
        });
        if (!supported && !m.architecture.empty()) {
            throw error(fmt::format("vllm: ValueError: Eagle3 is only supported for ['llama', 'qwen', 'minicpm', 'gpt_oss', "
                                    "'hunyuan_vl', 'hunyuan_v1_dense', 'afmoe'] models. Got "
                                    "self.target_model_config.hf_text_config.model_type='{}'", m.architecture));
        }
    }
    if ((sp.method == "eagle" || sp.method == "eagle3" || sp.method == "draft_model") && !sp.draft) {
        throw error(fmt::format("vllm: --speculative-config method {}: the draft checkpoint's config was not read", sp.method));
    }
    if (sp.draft_tensor_parallel_size != 0 && sp.draft_tensor_parallel_size != 1 && sp.draft_tensor_parallel_size != s.tp) {
        throw error(fmt::format("vllm: ValueError: speculative_draft_tensor_parallel_size={} cannot be other value than 1 "
                                "or target model tensor_parallel_size", sp.draft_tensor_parallel_size));
    }
    if (sp.method == "draft_model" && sp.draft && sp.draft->n_vocab != m.n_vocab && sp.draft->n_vocab && m.n_vocab) {
        throw error(fmt::format("vllm: ValueError: Target and draft model should have the same vocabulary size. Target "
                                "model vocab_size={}. Draft model vocab_size={}.", m.n_vocab, sp.draft->n_vocab));
    }
}

model_desc vllm_with_draft_layers(const model_desc & m, const vllm_settings & s, vllm_spec_plan & sp,
                                  std::vector<std::string> & warnings) {
    model_desc out = m;
    const vllm_speculative & c = s.speculative;
    sp.method = c.method;
    sp.num_speculative_tokens = c.num_speculative_tokens;
    if (c.method.empty()) return out;
    if (m.rec_kind == recurrent_kind::gated_deltanet || m.rec_kind == recurrent_kind::mamba2 || m.rec_kind == recurrent_kind::kda) {
        if (m.count(layer_kind::recurrent) > 0) sp.mamba_conv_rows_added = c.num_speculative_tokens;
    }
    if (m.count(layer_kind::recurrent) > 0) sp.mamba_blocks_added = c.num_speculative_tokens;
    if (m.rec_kind == recurrent_kind::mamba2 && m.count(layer_kind::recurrent) > 0) {
        // gated_delta_net's rows are checked by the Qwen3.6-27B log (block 1600); for mamba2 the read builds differ:
        // NemotronH get_mamba_state_shape_from_config passes num_spec, an older MambaMixer2.get_state_shape does not
        warnings.push_back(fmt::format("--speculative-config: the mamba2 conv state is planned with {} more rows "
                                       "(num_spec, as builds that pass it); builds whose MambaMixer2 passes none hold "
                                       "fewer: an estimate", c.num_speculative_tokens));
    }
    bool compressed = false;
    for (const auto & layer : m.caches) {
        for (const auto & cc : layer) compressed |= cc.kind == cache_kind::compressed;
    }
    if (c.method == "mtp") {
        sp.draft_layers = m.n_layer_mtp_apart;
        // SpeculativeConfig.hf_config_override @f19b16d9 turns these model types (or MiMo's / GLM-4's architectures) into
        // MTP drafters; another type keeps its own architecture as the draft, which vLLM may refuse or load otherwise
        static const char * mapped[] = {"deepseek_v3", "deepseek_v32", "deepseek_mtp", "glm_moe_dsa", "pangu_ultra_moe",
                                        "mimo", "glm4_moe", "glm_ocr", "ernie4_5_moe", "ernie_mtp", "qwen3_next",
                                        "exaone_moe", "qwen3_5", "longcat_flash", "step3p5"};
        const bool known = std::any_of(std::begin(mapped), std::end(mapped), [&](const char * t) {
            return m.architecture.find(t) != std::string::npos;
        });
        if (!known) {
            warnings.push_back(fmt::format(
                "--speculative-config mtp: vLLM's SpeculativeConfig.hf_config_override (vllm/config/speculative.py) maps "
                "only DeepSeek-V3/V3.2, GLM-4.x/5, MiMo, ERNIE-4.5, Qwen3-Next, Qwen3.5/3.6, EXAONE-MoE, LongCat-Flash, "
                "Step-3.5 and Pangu to an MTP drafter; model type '{}' is not among them (a newer build may map it): "
                "the drafter is planned from the config's MTP keys", m.architecture));
        }
        const int64_t t = mtp_template(m);
        if (compressed || t < 0) {
            warnings.push_back("--speculative-config mtp: the MTP layers' KV on this attention layout (compressed / "
                               "windowed only) is not modelled: the pool is planned without it, the plan is uncertain");
            return out;
        }
        if (m.count(layer_kind::swa) > 0 || m.count(layer_kind::chunked) > 0) {
            warnings.push_back("--speculative-config mtp: the MTP layers of a model with sliding-window layers are planned "
                               "as full-attention layers (an estimate: which attention its MTP layers use was not read)");
        }
        std::vector<layer_cache> caches;
        for (const layer_cache & cc : m.caches[size_t(t)]) {
            if (!cc.is_state()) caches.push_back(cc);
        }
        for (uint32_t i = 0; i < m.n_layer_mtp_apart; ++i) push_layer(out, m, uint32_t(t), caches);
        sp.draft_kv_layers = m.n_layer_mtp_apart;
        return out;
    }
    if ((c.method == "eagle" || c.method == "eagle3" || c.method == "draft_model") && c.draft) {
        const model_desc & d = *c.draft;
        sp.draft_layers = d.n_layer;
        if (compressed) {
            warnings.push_back("--speculative-config: a drafter beside a compressed-attention (DeepSeek-V4) pool is not "
                               "modelled: its KV layers are left out, the plan is uncertain");
            return out;
        }
        const uint32_t dtp = c.draft_tensor_parallel_size ? c.draft_tensor_parallel_size : s.tp;
        for (uint32_t il = 0; il < d.n_layer; ++il) {
            if (d.is_recurrent(il)) {
                warnings.push_back("--speculative-config: the draft model's recurrent layers are not modelled (their state "
                                   "is left out), the plan is uncertain");
                break;
            }
        }
        for (uint32_t il = 0; il < d.n_layer; ++il) {
            if (!d.has_kv(il)) continue;
            std::vector<layer_cache> caches;
            for (layer_cache cc : d.caches[il]) {
                if (cc.is_state()) continue;
                // a draft at TP 1 beside a target at TP > 1 keeps every KV head on each rank: the page divides by the
                // target's TP (attention_bytes_per_token), so the heads are scaled up by it
                if (dtp == 1 && s.tp > 1 && cc.kind != cache_kind::latent && cc.kind != cache_kind::indexer) cc.n_head *= s.tp;
                caches.push_back(cc);
            }
            push_layer(out, d, il, caches);
            ++sp.draft_kv_layers;
        }
        return out;
    }
    return out; // ngram, ngram_gpu, suffix: no model, no weights, no KV layers; the mamba terms above still apply
}

} // namespace detail

} // namespace kvfit
