// Hugging Face config.json -> model description.
// Generic keys are read here (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads,
// head_dim, vocab_size, max_position_embeddings, tie_word_embeddings, MTP counts), in the language config of a
// wrapper when there is one; the layer layout comes from the keys (hf_layout.cpp), the FFN/MoE mix too
// (arch_ffn.cpp), the row of arch_table.cpp named by `architectures` / model_type adds what no key says;
// parameters from hf_params.cpp; keys nobody reads are warned about (hf_known_keys.cpp).
#include "sources/hf_detail.h"
#include "core/util.h"

#include "sources/json_bounded.h"
#include "kvfit/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kvfit {
namespace detail {
namespace {

std::string type_of(const nlohmann::json & v) {
    if (v.is_number_float()) return fmt::format("{}", v.get<double>());
    if (v.is_number_integer()) return fmt::format("{}", v.get<int64_t>());
    if (v.is_string() && (v == "NaN" || v == "Infinity" || v == "-Infinity")) {
        return v.get<std::string>() + " (not a finite number)";
    }
    return v.type_name();
}

// Python's json module writes Infinity, -Infinity and NaN (Nemotron-H's time_step_limit); strict JSON
// parsers refuse them. Outside strings they become the strings "NaN", "Infinity", "-Infinity": a key kvfit does not
// read (time_step_limit) stays harmless, and one it reads as a number is refused by name ("expected number, got NaN
// (not a finite number)"), never read as absent (a NaN routed_scaling_factor was read as "not scaled": a new user's
// trial). The text is copied only when it holds one (most configs do not: no copy of a large file).
bool has_non_finite(std::string_view text) {
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == 'I' || c == 'N') {
            return true;
        }
    }
    return false;
}

std::string replace_non_finite(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            out += c;
            if (c == '\\' && i + 1 < text.size()) out += text[++i];
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        const std::string_view rest = text.substr(i);
        size_t skip = 0;
        for (std::string_view word : {"-Infinity", "Infinity", "NaN"}) {
            if (rest.starts_with(word)) skip = word.size();
            if (skip != 0) break;
        }
        if (skip == 0) {
            out += c;
        } else {
            out += '"';
            out += rest.substr(0, skip);
            out += '"';
            i += skip - 1;
        }
    }
    return out;
}

// The objects a language config may sit in (language_config() below; Qwen-Omni: thinker_config.text_config).
bool is_wrapper(std::string_view key) {
    return key == "text_config" || key == "language_config" || key == "llm_config" || key == "thinker_config";
}

// quantization_config members the quantization readers use (hf_quant.cpp weight_quant_from_config and
// safetensors_model.cpp st_quant_from_config); their objects (config_groups, modelopt's quantization) are kept whole.
// Per-module tables (AutoRound extra_config, GPTQ dynamic) are not read and not kept.
bool quant_key(std::string_view key) {
    static constexpr std::string_view keys[] = {
        "quant_method", "quant_algo", "quantization", "format", "config_groups", "weight_block_size", "activation_scheme",
        "bits", "w_bit", "num_bits", "group_size", "q_group_size", "zero_point", "sym", "lm_head", "ignore",
        "ignored_layers", "modules_to_not_convert", "exclude_modules", "load_in_4bit", "bnb_4bit_quant_type"};
    return std::find(std::begin(keys), std::end(keys), key) != std::end(keys);
}

nlohmann::json parse(std::string_view text, std::string_view where) {
    const json_limits limits; // depth 32, 262,144 kept values, strings of 64 KiB
    if (!has_non_finite(text)) return parse_json_bounded(text, where, limits, config_member_kept);
    return parse_json_bounded(replace_non_finite(text), where, limits, config_member_kept);
}

} // namespace

nlohmann::json parse_config_json(std::string_view text, std::string_view where) { return parse(text, where); }

// The members of a config.json kvfit keeps (parse_json_bounded's filter): at the root and in a language config, the
// keys it reads or knows (hf_known_keys.cpp), those whose name suggests memory (warned about by name), the wrappers,
// quantization_config and vision_config, and the tokens per image a multimodal wrapper states; in quantization_config
// the keys above; in vision_config the deepstack list and the tower's shape (read_vision_tower); below those, everything. A member not kept (auto_map, id2label, a tokenizer table, any unknown key whose name does
// not suggest memory) is read past and never stored.
bool config_member_kept(const std::vector<std::string> & path, std::string_view key) {
    const bool language = path.empty() || (path.size() <= 2 && std::all_of(path.begin(), path.end(), [](const auto & k) {
                                               return is_wrapper(k);
                                           }));
    if (language) {
        return known_key(key) || suggests_memory(key) || is_wrapper(key) || key == "quantization_config" ||
               key == "vision_config" || key == "vision_soft_tokens_per_image" || key == "mm_tokens_per_image";
    }
    if (path.back() == "quantization_config") return quant_key(key);
    if (path.size() == 1 && path.back() == "vision_config") {
        // read_vision_tower's keys, and Qwen3-VL's deepstack list
        static constexpr std::string_view tower[] = {
            "deepstack_visual_indexes", "depth", "num_hidden_layers", "hidden_size", "embed_dim", "intermediate_size",
            "num_heads", "num_attention_heads", "patch_size", "spatial_merge_size", "pooling_kernel_size",
            "temporal_patch_size", "out_hidden_size", "default_output_length", "image_size"};
        return std::find(std::begin(tower), std::end(tower), key) != std::end(tower);
    }
    return true;
}


// --- hf_keys ---------------------------------------------------------------------------------------

bool hf_keys::has(std::string_view key) const {
    const auto it = obj.find(key);
    return it != obj.end() && !it->is_null();
}

kvfit::error hf_keys::bad(std::string_view key, std::string_view what) const {
    return error::bad_key(where, prefix + std::string(key), what);
}

const nlohmann::json & hf_keys::at(std::string_view key) const {
    const auto it = obj.find(key);
    if (it == obj.end()) throw error::missing_key(where, prefix + std::string(key));
    if (it->is_null()) throw bad(key, "expected a value, got null");
    return *it;
}

// A whole number at most `limit`. nlohmann reads an integer above INT64_MAX as number_unsigned (up to 2^64 - 1) and
// a longer one as a float: both are refused as too large with the value as written, not wrapped to a negative
// ("must be positive, got -9223372036854775808" for max_position_embeddings 9223372036854775808 was the old text).
static uint64_t read_integer(const hf_keys & k, std::string_view key, const nlohmann::json & v, bool allow_zero,
                             uint64_t limit) {
    const auto too_large = [&](const std::string & written) {
        return k.bad(key, fmt::format("too large (at most {}), got {}", limit, written));
    };
    int64_t n = 0;
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > limit) throw too_large(std::to_string(u));
        n = static_cast<int64_t>(u); // limit <= k_limit < 2^63
    } else if (v.is_number_integer()) {
        n = v.get<int64_t>();
    } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
               std::fabs(v.get<double>()) < 9e15) {
        n = static_cast<int64_t>(v.get<double>()); // 4096.0 is an integer written by a float formatter
    } else if (v.is_number_float() && v.get<double>() >= 9e15 && std::floor(v.get<double>()) == v.get<double>()) {
        throw too_large(v.dump()); // 1e+20: past what a 64-bit integer holds
    } else {
        throw k.bad(key, "expected integer, got " + type_of(v));
    }
    if (n < 0 || (n == 0 && !allow_zero)) {
        throw k.bad(key, fmt::format("must be {}, got {}", allow_zero ? "non-negative" : "positive", n));
    }
    if (static_cast<uint64_t>(n) > limit) throw too_large(std::to_string(n));
    return static_cast<uint64_t>(n);
}

uint64_t hf_keys::uint(std::string_view key, uint64_t limit) const {
    const auto it = obj.find(key);
    if (it == obj.end()) throw error::missing_key(where, prefix + std::string(key));
    if (it->is_null()) throw bad(key, "expected integer, got null");
    return read_integer(*this, key, *it, false, limit);
}

uint64_t hf_keys::uint_or(std::string_view key, uint64_t def, uint64_t limit) const {
    return has(key) ? read_integer(*this, key, obj.at(key), false, limit) : def;
}

uint64_t hf_keys::count_or(std::string_view key, uint64_t def, uint64_t limit) const {
    return has(key) ? read_integer(*this, key, obj.at(key), true, limit) : def;
}

double hf_keys::number_or(std::string_view key, double def) const {
    if (!has(key)) return def;
    const auto & v = obj.at(key);
    if (!v.is_number()) throw bad(key, "expected number, got " + type_of(v));
    const double d = v.get<double>();
    if (!(d > 0) || d > 1e6) throw bad(key, fmt::format("must be positive and at most 1e6, got {}", d));
    return d;
}

bool hf_keys::flag_or(std::string_view key, bool def) const {
    if (!has(key)) return def;
    const auto & v = obj.at(key);
    if (!v.is_boolean()) throw bad(key, "expected boolean, got " + type_of(v));
    return v.get<bool>();
}

std::string hf_keys::text_or(std::string_view key, std::string_view def) const {
    if (!has(key)) return std::string(def);
    const auto & v = obj.at(key);
    if (!v.is_string()) throw bad(key, "expected string, got " + type_of(v));
    return v.get<std::string>();
}

hf_keys hf_keys::child(std::string_view key) const {
    const auto & v = at(key);
    if (!v.is_object()) throw bad(key, "expected object, got " + type_of(v));
    return hf_keys{v, where, prefix + std::string(key) + "."};
}

hf_keys hf_keys::element(std::string_view key, size_t i, const nlohmann::json & value) const {
    if (!value.is_object()) {
        throw bad(fmt::format("{}[{}]", key, i), "expected object, got " + type_of(value));
    }
    return hf_keys{value, where, fmt::format("{}{}[{}].", prefix, key, i)};
}

} // namespace detail

// --- model_from_hf_config --------------------------------------------------------------------------

namespace {

using detail::hf_build;
using detail::hf_keys;

using detail::u32;

// M-RoPE (Qwen2-VL, Qwen3-VL, Qwen3.5): rope_scaling or rope_parameters carries mrope_section ([11, 11, 10] for
// Qwen3.5, with mrope_interleaved); llama.cpp then feeds 4 positions per token (llama_hparams::n_pos_per_embd).
uint32_t pos_per_embd(const hf_keys & cfg) {
    for (const char * key : {"rope_scaling", "rope_parameters"}) {
        if (!cfg.has(key) || !cfg.at(key).is_object()) continue;
        const auto & sec = cfg.at(key).find("mrope_section");
        if (sec != cfg.at(key).end() && sec->is_array() && sec->size() >= 2) return 4;
    }
    return 1;
}

// The bundled vision encoder (vision_config), as the serving runtimes load and profile it: Qwen2-VL / Qwen3-VL /
// Qwen3.5 spell depth, num_heads, spatial_merge_size, temporal_patch_size, out_hidden_size; Gemma 3/4 and SigLIP
// spell num_hidden_layers, num_attention_heads, pooling_kernel_size (Gemma 4: one token per 3 x 3 patches) and state
// the tokens per image themselves (vision_soft_tokens_per_image at the top level, default_output_length,
// mm_tokens_per_image); a CLIP-style tower states image_size.
void read_vision_tower(const hf_keys & root, const hf_keys & vis, vision_tower & v) {
    v.depth = u32(vis.count_or("depth", vis.count_or("num_hidden_layers", 0, 1000), 1000));
    v.hidden = u32(vis.uint_or("hidden_size", vis.uint_or("embed_dim", 0, 1u << 16), 1u << 16));
    v.intermediate = u32(vis.uint_or("intermediate_size", 4ull * v.hidden, 1u << 18));
    v.n_head = u32(vis.count_or("num_heads", vis.count_or("num_attention_heads", 0, 4096), 4096));
    v.patch = u32(vis.uint_or("patch_size", 0, 4096));
    v.merge = std::max<uint32_t>(1, u32(vis.uint_or("spatial_merge_size", vis.uint_or("pooling_kernel_size", 1, 64), 64)));
    v.temporal_patch = std::max<uint32_t>(1, u32(vis.uint_or("temporal_patch_size", 1, 64)));
    v.out_hidden = u32(vis.uint_or("out_hidden_size", 0, 1u << 20));
    uint64_t per_image = root.uint_or("vision_soft_tokens_per_image", root.uint_or("mm_tokens_per_image", 0, 1u << 24), 1u << 24);
    if (per_image == 0) per_image = vis.uint_or("default_output_length", 0, 1u << 24);
    if (per_image == 0 && vis.has("image_size") && v.patch > 0) {
        const uint64_t side = vis.uint_or("image_size", 0, 1u << 16) / v.patch / v.merge;
        per_image = side * side;
    }
    v.max_tokens_per_image = u32(per_image);
    if (v.hidden == 0) v = vision_tower{}; // a vision_config without widths is not a tower kvfit can size
}

// The language model's keys: the top level, or the wrapper multimodal checkpoints nest it in.
hf_keys language_config(const hf_keys & root) {
    for (const char * key : {"text_config", "language_config", "llm_config", "thinker_config"}) {
        if (!root.has(key)) continue;
        const hf_keys inner = root.child(key);
        return inner.has("text_config") ? inner.child("text_config") : inner; // Qwen-Omni: thinker_config.text_config
    }
    return root;
}

// Keys a published config.json leaves to its configuration class's default, which transformers (and so vLLM and
// SGLang) fill in when it loads the file: google/gemma-3-*'s text_config states neither vocab_size nor
// sliding_window_pattern (Gemma3TextConfig: vocab_size=262208, sliding_window_pattern=6; llama.cpp's gemma3 keeps
// set_swa_pattern(6)). Keyed by the language config's model_type; each default taken is named in a warning.
struct class_default {
    const char * model_type;
    const char * key;
    uint64_t value;
    const char * config_class;
};
constexpr class_default k_class_defaults[] = {
    {"gemma3_text", "vocab_size", 262208, "Gemma3TextConfig"},
    {"gemma3_text", "sliding_window_pattern", 6, "Gemma3TextConfig"},
    {"gemma3_text", "max_position_embeddings", 131072, "Gemma3TextConfig"},
    // Gemma3TextConfig(tie_word_embeddings=True): the published text_config leaves it out and the checkpoints hold no
    // lm_head; llama.cpp's gemma3 then reads token_embd as the output (models/gemma3.cpp, TENSOR_DUPLICATED), the
    // compute graph's tied head (compute_sched.cpp split_tied_output). A boolean: 1 is true.
    {"gemma3_text", "tie_word_embeddings", 1, "Gemma3TextConfig"},
    {"gemma2", "sliding_window_pattern", 2, "Gemma2Config (layer_types: every other layer slides)"},
    {"olmo3", "sliding_window_pattern", 4, "Olmo3Config (layer_types: every 4th layer full attention)"},
};

// The language config's object inside `root` (the path language_config() took: "" or "text_config." ...).
nlohmann::json * object_at(nlohmann::json & root, const std::string & prefix) {
    nlohmann::json * at = &root;
    size_t start = 0;
    while (start < prefix.size()) {
        const size_t dot = prefix.find('.', start);
        const std::string key = prefix.substr(start, dot - start);
        if (!at->is_object() || !at->contains(key)) return nullptr;
        at = &(*at)[key];
        start = dot == std::string::npos ? prefix.size() : dot + 1;
    }
    return at->is_object() ? at : nullptr;
}

void apply_class_defaults(nlohmann::json & root, const std::string & prefix, const std::string & model_type,
                          const std::string & where, warnings & warn) {
    nlohmann::json * cfg = object_at(root, prefix);
    if (cfg == nullptr) return;
    for (const auto & d : k_class_defaults) {
        if (model_type != d.model_type) continue;
        const auto it = cfg->find(d.key);
        if (it != cfg->end() && !it->is_null()) continue;
        if (std::string_view(d.key) == "sliding_window_pattern" && (cfg->contains("layer_types") || !cfg->contains("sliding_window"))) {
            continue; // a layer list places the windows, or there is no window
        }
        if (std::string_view(d.key) == "tie_word_embeddings") {
            // a wrapper may state it at its top level (read there when the language config does not: model_from_hf_config)
            if (root.contains(d.key) && !root[d.key].is_null()) continue;
            (*cfg)[d.key] = d.value != 0;
            warn.push_back(fmt::format("{}: {}{} absent: {}'s default {} is planned", where, prefix, d.key, d.config_class,
                                       d.value != 0 ? "true" : "false"));
            continue;
        }
        (*cfg)[d.key] = d.value;
        warn.push_back(fmt::format("{}: {}{} absent: {}'s default {} is planned", where, prefix, d.key, d.config_class,
                                   d.value));
    }
}

// architectures classes (language config first, then the wrapper) and model_types: the names a row may list.
std::vector<std::string> names_of(const hf_keys & cfg, const hf_keys & root) {
    std::vector<std::string> out;
    for (const hf_keys * k : {&cfg, &root}) {
        if (!k->has("architectures") || !k->at("architectures").is_array()) continue;
        for (const auto & a : k->at("architectures")) {
            if (a.is_string()) out.push_back(a.get<std::string>());
        }
    }
    for (const hf_keys * k : {&cfg, &root}) {
        const std::string t = k->text_or("model_type", "");
        if (!t.empty()) out.push_back(t);
    }
    return out;
}

std::string names_text(const hf_keys & cfg, const hf_keys & root) {
    const std::string t = cfg.text_or("model_type", root.text_or("model_type", ""));
    if (!t.empty()) return fmt::format("model_type '{}'", t);
    for (const hf_keys * k : {&cfg, &root}) {
        if (k->has("architectures") && k->at("architectures").is_array() && !k->at("architectures").empty()) {
            return fmt::format("architectures '{}'", k->at("architectures")[0].is_string()
                                                         ? k->at("architectures")[0].get<std::string>() : "?");
        }
    }
    return "no model_type";
}

// Fields every decoder has. Per-layer defaults: attention with the config's heads, two norms.
void read_common(const hf_keys & cfg, const hf_keys & root, hf_build & b) {
    model_desc & m = b.m;
    // conversion/nemotron.py: a layers_block_type list gives num_hidden_layers = len(layers_block_type)
    const bool block_list = !cfg.has("num_hidden_layers") && cfg.has("layers_block_type") &&
                            cfg.at("layers_block_type").is_array();
    m.n_layer = block_list ? u32(cfg.at("layers_block_type").size()) : u32(cfg.uint("num_hidden_layers", max_n_layer));
    if (m.n_layer == 0 || m.n_layer > max_n_layer) {
        throw cfg.bad("layers_block_type", fmt::format("expected 1 to {} blocks", max_n_layer));
    }
    m.n_embd = u32(cfg.uint("hidden_size"));
    m.n_vocab = u32(cfg.uint("vocab_size", 1ull << 28));
    const auto n_head = u32(cfg.uint("num_attention_heads", 65536));
    // MHA when num_key_value_heads is absent or null (LlamaConfig: num_key_value_heads = num_attention_heads).
    const auto n_head_kv = u32(cfg.uint_or("num_key_value_heads", n_head, 65536));
    if (n_head % n_head_kv != 0) {
        throw cfg.bad("num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}", n_head_kv, n_head));
    }
    // A null head_dim means hidden_size / num_attention_heads, as the HF attention classes compute it.
    if (cfg.has("head_dim")) {
        b.head_dim = u32(cfg.uint("head_dim", 65536));
    } else if (cfg.has("attention_head_dim")) { // Nemotron-H
        b.head_dim = u32(cfg.uint("attention_head_dim", 65536));
    } else if (m.n_embd % n_head != 0) {
        // No plain attention width; MLA, KDA and the other mixers state their own (kv_lora_rank + qk_rope_head_dim,
        // linear_attn_config.head_dim: Kimi-K3 has 96 heads and hidden_size 7168). lay_out refuses it by this reason
        // when a layer is plain attention after all.
        b.head_dim = 0;
        b.head_dim_missing = fmt::format("{}num_attention_heads {} does not divide hidden_size {} and head_dim is absent",
                                         cfg.prefix, n_head, m.n_embd);
    } else {
        b.head_dim = m.n_embd / n_head;
    }
    // at most the -c limit, 2^32 (llama.cpp keeps n_ctx_train in 32 bits): a larger value would be searched as a -c the
    // user never gave
    m.n_ctx_train = cfg.uint_or("max_position_embeddings", 0, 1ull << 32);
    // rope_scaling (rope_parameters in transformers v5, possibly one per layer type): what vLLM's derived
    // max_model_len scales by (vllm/config/model.py _get_and_verify_max_len)
    m.original_ctx_top = cfg.uint_or("original_max_position_embeddings", 0, 1ull << 32);
    for (const char * key : {"rope_scaling", "rope_parameters"}) {
        if (!cfg.has(key) || !cfg.at(key).is_object()) continue;
        const hf_keys r = cfg.child(key);
        std::vector<hf_keys> entries;
        bool nested = !r.obj.empty();
        for (const auto & [k, v] : r.obj.items()) nested = nested && v.is_object();
        if (nested) {
            for (const auto & [k, v] : r.obj.items()) entries.push_back(r.child(k));
        } else {
            entries.push_back(r);
        }
        for (const hf_keys & e : entries) {
            model_desc::rope_scaling_entry x;
            x.type = e.text_or("rope_type", e.text_or("type", ""));
            if (e.obj.contains("factor")) { // null included: present, and not a number
                if (e.obj.at("factor").is_number()) {
                    const double f = e.at("factor").get<double>();
                    if (!(f > 0 && f <= 1024)) throw e.bad("factor", "expected a number in (0, 1024]");
                    x.factor = f;
                } else {
                    x.factor = -1; // null or a string: vLLM's product fails on it (a refusal there, not a guess here)
                }
            }
            x.original_ctx = e.uint_or("original_max_position_embeddings", m.original_ctx_top, 1ull << 32);
            x.original_in_entry = e.obj.contains("original_max_position_embeddings");
            m.rope_scaling.push_back(std::move(x));
        }
        break;
    }
    // Multimodal wrappers keep tie_word_embeddings at the top level (Qwen3.5) or in text_config.
    m.tied_embeddings = cfg.has("tie_word_embeddings") ? cfg.flag_or("tie_word_embeddings", false)
                                                       : root.flag_or("tie_word_embeddings", false);
    // MTP layers live in the checkpoint, apart: llama.cpp's trunk does not run them and -ngl does not place them
    m.n_layer_mtp_apart = u32(cfg.count_or("num_nextn_predict_layers", 0, 1000) + cfg.count_or("mtp_num_hidden_layers", 0, 1000));
    if (cfg.flag_or("use_mtp", false)) m.n_layer_mtp_apart += u32(cfg.count_or("num_mtp_modules", 0, 1000)); // MiniMax-M2
    b.mtp_own_head = cfg.count_or("num_nextn_predict_layers", 0, 1000) > 0;
    m.n_pos_per_embd = pos_per_embd(cfg);
    // Qwen3-VL deepstack: the GGUF converter writes n_deepstack_layers = len(vision_config.deepstack_visual_indexes)
    // (conversion/qwen3vl.py) and llama.cpp widens inp_embd to n_embd * (1 + n_deepstack) (llama_hparams::n_embd_inp)
    if (root.has("vision_config")) {
        const auto vis = root.child("vision_config");
        if (vis.has("deepstack_visual_indexes") && vis.at("deepstack_visual_indexes").is_array()) {
            const size_t ds = vis.at("deepstack_visual_indexes").size();
            if (ds > 0 && ds < 1000) m.n_embd_inp = m.n_embd * uint32_t(1 + ds);
        }
        read_vision_tower(root, vis, m.vision);
    }
    // Nemotron-3-Super latent experts (moe_latent_size, conversion/nemotron.py writes it as-is)
    m.moe_latent = u32(cfg.count_or("moe_latent_size", 0, 1u << 20));
    // Serving runtimes (vLLM, SGLang) size caches in these dtypes; llama.cpp does not read them.
    m.dtype = cfg.has("dtype") ? cfg.text_or("dtype", "") : cfg.has("torch_dtype") ? cfg.text_or("torch_dtype", "")
            : root.has("dtype") ? root.text_or("dtype", "") : root.text_or("torch_dtype", "");
    m.ssm_dtype = cfg.text_or("mamba_ssm_dtype", cfg.text_or("mamba_ssm_cache_dtype", "")); // Nemotron-3 spelling
    m.ssm_chunk_size = u32(cfg.uint_or("chunk_size", cfg.uint_or("mamba_chunk_size", 0, 1u << 20), 1u << 20));
    b.hc_mult = u32(cfg.uint_or("hc_mult", 0, 64));
    m.n_hc = b.hc_mult; // llama.cpp: hyper_connection.count (compute: llamacpp_compute_unmodelled)
    b.o_groups = u32(cfg.uint_or("o_groups", 0, 65536));
    b.o_lora = u32(cfg.uint_or("o_lora_rank", 0, 65536));
    b.n_hash_layers = u32(cfg.count_or("num_hash_layers", 0, 100000));
    b.n_embd_per_layer = u32(cfg.count_or("hidden_size_per_layer_input", 0, 65536));
    b.n_vocab_per_layer = b.n_embd_per_layer > 0 ? u32(cfg.uint_or("vocab_size_per_layer_input", m.n_vocab, 1ull << 28)) : 0;
    resize_layers(m);
    b.n_norm.assign(m.n_layer, b.flags.gemma_norms ? 4 : 2);
    b.attn_linear.assign(m.n_layer, 0);
    b.ffn_linear.assign(m.n_layer, 0);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        m.n_head[il] = n_head;
        m.n_head_kv[il] = n_head_kv;
        m.head_dim_k[il] = m.head_dim_v[il] = b.head_dim;
    }
}

// Parameter flags keys state (over the row's).
void apply_config_flags(const hf_keys & cfg, hf_build & b) {
    detail::param_flags & f = b.flags;
    if (cfg.flag_or("attention_bias", false)) f.qkv_bias = f.o_bias = true;
    b.attn_gate = cfg.flag_or("attn_output_gate", b.attn_gate);
    f.mlp_bias = cfg.flag_or("mlp_bias", f.mlp_bias);
    f.conv_bias = cfg.flag_or("use_conv_bias", f.conv_bias);
    f.ssm_proj_bias = cfg.flag_or("use_bias", cfg.flag_or("mamba_proj_bias", f.ssm_proj_bias));
    f.qk_norm = cfg.flag_or("use_qk_norm", f.qk_norm);
    b.qk_norm_full = cfg.text_or("qk_norm_type", "") == "per_layer"; // MiniMax-M2: one norm over all heads
    // an expert score-correction bias (e_score_correction_bias / router bias) of n_expert values
    f.score_bias = f.score_bias || cfg.text_or("topk_method", "") == "noaux_tc" || cfg.flag_or("use_routing_bias", false) ||
                   cfg.flag_or("use_moe_router_bias", false);
    if (cfg.text_or("mlp_hidden_act", "") == "relu2") f.ffn_gated = false; // Nemotron-H: up, relu^2, down
}

// The GGUF arch the converter writes: a row's "<arch>_moe" sibling when the config has experts
// (conversion/nemotron.py NemotronHModel: NEMOTRON_H_MOE when num_experts_per_tok is set).
std::string gguf_arch_of(const detail::arch_row * row, const model_desc & m) {
    if (row == nullptr) return "";
    if (m.n_expert > 0) {
        if (const auto * moe = detail::find_arch_gguf(std::string(row->gguf_arch) + "_moe")) return std::string(moe->gguf_arch);
    }
    return std::string(row->gguf_arch);
}

} // namespace

model_desc model_from_hf_config(std::string_view json_text, std::string_view where, warnings & warn) {
    const std::string where_s(where);
    nlohmann::json root_json = detail::parse(json_text, where);
    if (!root_json.is_object()) throw error::at(where, "expected a JSON object, got " + detail::type_of(root_json));
    {
        const hf_keys probe = language_config(hf_keys{root_json, where_s, ""});
        if (probe.obj.is_object() && probe.obj.contains("model_type") && probe.obj["model_type"].is_string()) {
            apply_class_defaults(root_json, probe.prefix, probe.obj["model_type"].get<std::string>(), where_s, warn);
        }
    }
    const hf_keys root{root_json, where_s, ""};
    const hf_keys cfg = language_config(root);

    hf_build b;
    const auto names = names_of(cfg, root);
    b.row = detail::find_arch_hf(names);
    b.names = names_text(cfg, root);
    if (b.row != nullptr) b.flags = b.row->flags, b.attn_gate = b.row->facts.attn_gate;
    b.m.architecture = cfg.text_or("model_type", root.text_or("model_type", ""));
    // transformers' class: the root's architectures[0], as vLLM and SGLang read hf_config.architectures[0]
    if (root.has("architectures") && root.at("architectures").is_array() && !root.at("architectures").empty() &&
        root.at("architectures")[0].is_string()) {
        b.m.hf_architecture = root.at("architectures")[0].get<std::string>();
    }
    b.m.name = where_s;
    b.m.source = where_s;
    apply_config_flags(cfg, b);
    read_common(cfg, root, b);
    if (b.m.n_ctx_train == 0) warn.push_back(where_s + ": max_position_embeddings absent: training context unknown");
    if (b.flags.mrope) b.m.n_pos_per_embd = 4; // llama_model_rope_type: LLM_ARCH_QWEN35/QWEN35MOE -> IMROPE
    detail::lay_out(cfg, b, warn);
    detail::lay_out_ffn(cfg, b);
    detail::build_caches(b);
    detail::count_params(b);
    {
        const detail::param_flags & f = b.flags;
        b.m.parts = {f.qkv_bias, f.o_bias, b.attn_gate, std::find(b.sinks.begin(), b.sinks.end(), 1) != b.sinks.end(),
                     f.router_bias && b.m.n_expert > 0, f.score_bias && b.m.n_expert > 0, f.expert_bias && b.m.n_expert > 0};
    }
    b.m.quant = detail::weight_quant_from_json(root_json, where, warn);
    b.m.gguf_architecture = gguf_arch_of(b.row, b.m);
    if (b.m.gguf_architecture == "deepseek2" && b.m.n_expert > 0) {
        // the router keys the converter writes for deepseek2 (model_desc::graph_dims; gguf_model.cpp graph_dim_keys):
        // n_group / topk_group as expert_group_count / expert_group_used_count where the config has them (TextModel.
        // set_gguf_parameters, conversion/base.py; absent: 0, as the GGUF source reads a file without them),
        // scoring_func as expert_gating_func (sigmoid 2, softmax 1: conversion/deepseek.py DeepseekV2Model.
        // set_gguf_parameters; a config without it routes by softmax, transformers' DeepseekV2 default)
        // (one group or none is ungrouped routing, build_moe_ffn's n_expert_groups > 1: both 0, as the GGUF source)
        const uint32_t groups = u32(cfg.uint_or("n_group", 0, 65536));
        b.m.graph_dims["expert_group_count"] = groups > 1 ? groups : 0;
        b.m.graph_dims["expert_group_used_count"] = groups > 1 ? u32(cfg.uint_or("topk_group", 0, 65536)) : 0;
        const std::string scoring = cfg.text_or("scoring_func", "softmax");
        if (scoring != "sigmoid" && scoring != "softmax") {
            throw cfg.bad("scoring_func", "'" + scoring + "': llama.cpp's deepseek2 routes by sigmoid or softmax only");
        }
        b.m.graph_dims["expert_gating_func"] = scoring == "sigmoid" ? 2 : 1;
        // norm_topk_prob as expert_weights_norm, routed_scaling_factor as expert_weights_scale (DeepseekV2Model), which
        // scales the routing weights unless it is 1 (build_moe_ffn; gguf_model.cpp: expert_weights_scaled)
        b.m.graph_dims["expert_weights_norm"] = cfg.flag_or("norm_topk_prob", false) ? 1 : 0;
        const double scale_d = cfg.number_or("routed_scaling_factor", 1.0);
        if (!std::isfinite(scale_d) || scale_d <= 0) {
            throw cfg.bad("routed_scaling_factor", fmt::format("{}: the routing weights' scale must be a positive number", scale_d));
        }
        const float scale = float(scale_d);
        b.m.graph_dims["expert_weights_scaled"] = scale != 1.0f ? 1 : 0;
    }
    detail::set_arch_facts(b.m);
    // the GGUF llama.cpp's converter writes from this checkpoint: NextN/MTP blocks appended to block_count by default
    // (arch_row nextn_folded), so -ngl counts them and -ts splits them as it does a GGUF's (issue 24 item 6: GLM-5.2's
    // block_count 79 = 78 + 1, its -ts split over 80 layers). The row of the GGUF architecture, which may be the MoE
    // variant's (nemotron_h -> nemotron_h_moe: conversion/nemotron.py folds the block for MoE models only).
    if (b.row != nullptr) {
        const detail::arch_row * g = b.m.gguf_architecture == b.row->gguf_arch ? b.row : detail::find_arch_gguf(b.m.gguf_architecture);
        if (g != nullptr && g->flags.nextn_folded) b.m.n_layer_mtp = b.m.n_layer_mtp_apart;
    }
    // the row was found by an architectures class while model_type names another architecture, or none kvfit knows
    // (a fine-tune that renamed it): planned by the class, as llama.cpp's converter (ModelBase.from_model_architecture,
    // hparams["architectures"][0]) and vLLM (ModelRegistry by architectures) choose the model, and said so
    if (b.row != nullptr && !b.m.architecture.empty()) {
        const detail::arch_row * by_type = detail::find_arch_hf({b.m.architecture});
        if (by_type == nullptr || by_type->gguf_arch != b.row->gguf_arch) {
            std::string cls;
            for (const auto & n : names) {
                if (detail::find_arch_hf({n}) == b.row) { cls = n; break; }
            }
            warn.push_back(by_type == nullptr
                ? fmt::format("{}: model_type '{}' is not one kvfit knows; planned as {} by its architectures class '{}' "
                              "(llama.cpp's converter and vLLM choose the model by that class)", where_s, b.m.architecture,
                              b.row->gguf_arch, cls)
                : fmt::format("{}: model_type '{}' is {} but the architectures class '{}' is {}; planned as {} (llama.cpp's "
                              "converter and vLLM choose the model by the class)", where_s, b.m.architecture,
                              by_type->gguf_arch, cls, b.row->gguf_arch, b.row->gguf_arch));
        }
    }
    if (b.row == nullptr) {
        std::string listed;
        std::vector<std::string> seen;
        for (const auto & n : names) {
            if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
            seen.push_back(n);
            listed += (listed.empty() ? "'" : ", '") + n + "'";
        }
        warn.push_back(fmt::format("{}: unknown architecture ({}): planned from its keys alone; no llama.cpp "
                                   "architecture is known for it", where_s, listed.empty() ? "no names" : listed));
    }
    detail::warn_unknown_keys(cfg, b, warn);
    b.m.validate();
    return b.m;
}

} // namespace kvfit
