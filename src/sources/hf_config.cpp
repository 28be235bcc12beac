// Hugging Face config.json -> model description.
// Generic keys are read here (num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads,
// head_dim, vocab_size, max_position_embeddings, tie_word_embeddings, MTP counts); the layer layout and
// the FFN/MoE mix come from the architecture's row in arch_table.cpp; parameters from hf_params.cpp.
#include "sources/hf_detail.h"

#include "kvfit/error.h"

#include <fmt/format.h>

#include <cmath>

namespace kvfit {
namespace detail {
namespace {

std::string type_of(const nlohmann::json & v) {
    if (v.is_number_float()) return fmt::format("{}", v.get<double>());
    if (v.is_number_integer()) return fmt::format("{}", v.get<int64_t>());
    return v.type_name();
}

// Python's json module writes Infinity, -Infinity and NaN (Nemotron-H's time_step_limit); strict JSON
// parsers refuse them. Outside strings they become null: kvfit never reads such a value.
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
            out += "null";
            i += skip - 1;
        }
    }
    return out;
}

nlohmann::json parse(std::string_view text, std::string_view where) {
    try {
        return nlohmann::json::parse(replace_non_finite(text));
    } catch (const nlohmann::json::exception & e) { // parse_error, and out_of_range for a number like 5e353
        std::string what = e.what();
        // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at line 1, ..."
        if (const auto close = what.find("] "); what.starts_with("[json.exception") && close != std::string::npos) {
            what = what.substr(close + 2);
        }
        throw error::at(where, "not valid JSON: " + what);
    }
}

} // namespace

nlohmann::json parse_config_json(std::string_view text, std::string_view where) { return parse(text, where); }

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

static uint64_t read_integer(const hf_keys & k, std::string_view key, const nlohmann::json & v, bool allow_zero,
                             uint64_t limit) {
    int64_t n = 0;
    if (v.is_number_integer()) {
        n = v.get<int64_t>();
    } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
               std::fabs(v.get<double>()) < 9e15) {
        n = static_cast<int64_t>(v.get<double>()); // 4096.0 is an integer written by a float formatter
    } else {
        throw k.bad(key, "expected integer, got " + type_of(v));
    }
    if (n < 0 || (n == 0 && !allow_zero)) {
        throw k.bad(key, fmt::format("must be {}, got {}", allow_zero ? "non-negative" : "positive", n));
    }
    if (static_cast<uint64_t>(n) > limit) throw k.bad(key, fmt::format("{} exceeds the limit {}", n, limit));
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

// Fields every decoder has. Per-layer defaults: full attention with the config's heads, two norms.
void read_common(const hf_keys & cfg, const hf_keys & root, hf_build & b) {
    model_desc & m = b.m;
    m.n_layer = static_cast<uint32_t>(cfg.uint("num_hidden_layers", max_n_layer));
    m.n_embd = static_cast<uint32_t>(cfg.uint("hidden_size"));
    m.n_vocab = static_cast<uint32_t>(cfg.uint("vocab_size", 1ull << 28));
    const auto n_head = static_cast<uint32_t>(cfg.uint("num_attention_heads", 65536));
    // MHA when num_key_value_heads is absent or null (LlamaConfig: num_key_value_heads = num_attention_heads).
    const auto n_head_kv = static_cast<uint32_t>(cfg.uint_or("num_key_value_heads", n_head, 65536));
    if (n_head % n_head_kv != 0) {
        throw cfg.bad("num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}", n_head_kv, n_head));
    }
    // A null head_dim means hidden_size / num_attention_heads, as the HF attention classes compute it.
    if (cfg.has("head_dim")) {
        b.head_dim = static_cast<uint32_t>(cfg.uint("head_dim", 65536));
    } else if (cfg.has("attention_head_dim")) { // Nemotron-H
        b.head_dim = static_cast<uint32_t>(cfg.uint("attention_head_dim", 65536));
    } else if (m.n_embd % n_head != 0) {
        throw cfg.bad("num_attention_heads",
                      fmt::format("{} does not divide hidden_size {} and head_dim is absent", n_head, m.n_embd));
    } else {
        b.head_dim = m.n_embd / n_head;
    }
    m.n_ctx_train = cfg.uint_or("max_position_embeddings", 0, 1ull << 40);
    // Multimodal wrappers keep tie_word_embeddings at the top level (Qwen3.5) or in text_config.
    m.tied_embeddings = cfg.has("tie_word_embeddings") ? cfg.flag_or("tie_word_embeddings", false)
                                                       : root.flag_or("tie_word_embeddings", false);
    m.n_layer_mtp = static_cast<uint32_t>(cfg.count_or("num_nextn_predict_layers", 0, 1000) +
                                          cfg.count_or("mtp_num_hidden_layers", 0, 1000));
    m.n_pos_per_embd = pos_per_embd(cfg);
    // Serving runtimes (vLLM, SGLang) size caches in these dtypes; llama.cpp does not read them.
    m.dtype = cfg.has("dtype") ? cfg.text_or("dtype", "") : cfg.has("torch_dtype") ? cfg.text_or("torch_dtype", "")
            : root.has("dtype") ? root.text_or("dtype", "") : root.text_or("torch_dtype", "");
    m.ssm_dtype = cfg.text_or("mamba_ssm_dtype", "");
    m.ssm_chunk_size = static_cast<uint32_t>(cfg.uint_or("chunk_size", cfg.uint_or("mamba_chunk_size", 0, 1u << 20), 1u << 20));
    resize_layers(m);
    b.n_norm.assign(m.n_layer, 2);
    b.kind.assign(m.n_layer, layer_kind::full);
    b.attn_linear.assign(m.n_layer, 0);
    b.ffn_linear.assign(m.n_layer, 0);
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        b.kind[il] = layer_kind::full;
        m.n_head[il] = n_head;
        m.n_head_kv[il] = n_head_kv;
        m.head_dim_k[il] = m.head_dim_v[il] = b.head_dim;
    }
}

void apply_config_flags(const hf_keys & cfg, detail::param_flags & f) {
    if (cfg.flag_or("attention_bias", false)) f.qkv_bias = f.o_bias = true;
    f.attn_gate = cfg.flag_or("attn_output_gate", f.attn_gate);
    f.mlp_bias = cfg.flag_or("mlp_bias", f.mlp_bias);
    f.conv_bias = cfg.flag_or("use_conv_bias", f.conv_bias);
    f.ssm_proj_bias = cfg.flag_or("use_bias", f.ssm_proj_bias);
}

} // namespace

model_desc model_from_hf_config(std::string_view json_text, std::string_view where, warnings & warn) {
    const std::string where_s(where);
    const nlohmann::json root_json = detail::parse(json_text, where);
    if (!root_json.is_object()) throw error::at(where, "expected a JSON object, got " + detail::type_of(root_json));
    const hf_keys root{root_json, where_s, ""};
    // Multimodal wrappers (Qwen3.5, Llama 4, Gemma 3, Mistral 3) nest the language model in text_config.
    const hf_keys cfg = root.has("text_config") ? root.child("text_config") : root;

    const std::string model_type = cfg.text_or("model_type", root.text_or("model_type", ""));
    const detail::arch_row * row = detail::find_arch(model_type);
    if (row == nullptr) {
        row = &detail::generic_arch();
        warn.push_back(fmt::format(
            "{}: unknown model_type '{}': assumed a dense decoder (layer_types if present, else full attention on "
            "every layer; gated FFN of intermediate_size; untied unless tie_word_embeddings)",
            where, model_type));
    }

    hf_build b;
    b.m.architecture = model_type;
    b.m.gguf_architecture = std::string(row->gguf_arch);
    b.m.name = where_s;
    b.m.source = where_s;
    read_common(cfg, root, b);
    if (b.m.n_ctx_train == 0) warn.push_back(where_s + ": max_position_embeddings absent: training context unknown");
    b.flags = row->flags;
    apply_config_flags(cfg, b.flags);
    if (b.flags.mrope) b.m.n_pos_per_embd = 4; // llama_model_rope_type: LLM_ARCH_QWEN35/QWEN35MOE -> IMROPE
    row->layout(cfg, row->layout_key, b, warn);
    row->ffn(cfg, row->ffn_key, b);
    detail::caches_from_kinds(b);
    detail::count_params(b);
    b.m.validate();
    return b.m;
}

} // namespace kvfit
