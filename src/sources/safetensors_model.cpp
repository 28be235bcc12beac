// Safetensors tensors -> model_desc.weights (include/kvfit/safetensors.h: apply_safetensors_weights).
// The shape of the model comes from config.json; the headers give the exact bytes, grouped as llama.cpp places
// them (token embedding, blocks, output), with MTP blocks and bundled vision towers reported apart.
// Quantized checkpoints store the quantized form itself, so bytes are always the file's; only the parameter
// count needs the scheme (st_param_count).
#include "kvfit/error.h"
#include "kvfit/safetensors.h"
#include "sources/hf_detail.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include "core/util.h"

namespace kvfit {
namespace {

bool has_suffix(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(s.size() - p.size()) == p; }
bool has_prefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Scales, zero points, group indices and shape records of the quantization schemes: bytes, no parameters.
constexpr std::string_view k_aux_suffixes[] = {
    ".scales", ".qzeros", ".g_idx",                                       // GPTQ, AWQ
    ".weight_scale", ".weight_scale_inv", ".weight_scale_2",              // fp8 block-wise, ModelOpt
    ".weight_zero_point", ".weight_global_scale", ".weight_shape",        // compressed-tensors
    ".input_scale", ".input_global_scale", ".k_scale", ".v_scale",        // activation / cache scales
    "_scales",                                                            // MXFP4 (gpt-oss *_blocks + *_scales)
    ".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map", ".SCB", // bitsandbytes
};

bool is_aux(std::string_view name) {
    if (name.find(".quant_state.") != std::string_view::npos) return true;
    return std::any_of(std::begin(k_aux_suffixes), std::end(k_aux_suffixes), [&](std::string_view s) { return has_suffix(name, s); });
}

// Top-level name components of towers that are not the text model (Qwen2.5-VL visual, Llava vision_tower,
// Gemma 3 vision_tower + multi_modal_projector, Llama 4 vision_model, Qwen2.5-Omni audio_tower, ...).
constexpr std::string_view k_tower_components[] = {
    "visual", "vision_tower", "vision_model", "vision_encoder", "multi_modal_projector", "mm_projector",
    "audio_tower", "audio_model", "embed_vision", "embed_audio", "vision_embed_tokens", "image_newline",
};

bool is_tower(std::string_view name) {
    for (int i = 0; i < 2; ++i) { // "visual." or "model.visual."
        const size_t dot = name.find('.');
        const std::string_view first = name.substr(0, dot);
        if (std::find(std::begin(k_tower_components), std::end(k_tower_components), first) != std::end(k_tower_components)) return true;
        if (dot == std::string_view::npos) return false;
        name.remove_prefix(dot + 1);
    }
    return false;
}

// The name with the language model's prefix removed: "model.language_model.layers.3.x" -> "layers.3.x".
std::string_view text_name(std::string_view name) {
    for (std::string_view p : {"model.language_model.", "language_model.model.", "language_model.", "model."}) {
        if (has_prefix(name, p)) return name.substr(p.size());
    }
    return name;
}

// "layers.12.mlp.x" -> 12; nullopt for other names.
std::optional<uint32_t> layer_index(std::string_view name) {
    if (!has_prefix(name, "layers.")) return std::nullopt;
    uint64_t il = 0;
    size_t i = 7;
    for (; i < name.size() && i < 17 && name[i] >= '0' && name[i] <= '9'; ++i) il = il * 10 + uint64_t(name[i] - '0');
    if (i == 7 || i >= name.size() || name[i] != '.' || il > UINT32_MAX) return std::nullopt;
    return uint32_t(il);
}

void add(weight_group & g, const st_tensor & t, uint64_t n_params, bool expert) {
    g.n_params += n_params;
    g.bytes += t.bytes();
    if (expert) {
        g.expert_params += n_params;
        g.expert_bytes += t.bytes();
    }
}


} // namespace

st_quant st_quant_from_config(std::string_view config_json, std::string_view where, warnings & warn) {
    st_quant q;
    nlohmann::json root;
    try {
        root = detail::parse_config_json(config_json, where);
    } catch (const error &) {
        return q; // model_from_hf_config has already reported an unreadable config
    }
    const nlohmann::json * qc = nullptr;
    for (const nlohmann::json * o : {&root, root.contains("text_config") ? &root["text_config"] : nullptr}) {
        if (o && o->is_object() && o->contains("quantization_config") && (*o)["quantization_config"].is_object()) {
            qc = &(*o)["quantization_config"];
            break;
        }
    }
    if (!qc) return q;
    auto text = [&](const nlohmann::json & o, const char * key) {
        return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
    };
    auto number = [&](const nlohmann::json & o, const char * key, uint32_t def) {
        return o.contains(key) && o[key].is_number_unsigned() ? uint32_t(std::min<uint64_t>(o[key].get<uint64_t>(), 64)) : def;
    };
    q.method = detail::ascii_lower(text(*qc, "quant_method"));
    if (q.method == "gptq" || q.method == "awq") {
        q.bits = number(*qc, "bits", 4);
        q.format = fmt::format("{}-int{}", q.method, q.bits);
    } else if (q.method == "fp8") {
        q.bits = 8;
        q.format = "fp8";
    } else if (q.method == "mxfp4") {
        q.bits = 4;
        q.format = "mxfp4";
    } else if (q.method == "modelopt") {
        const std::string algo = detail::ascii_lower(text(*qc, "quant_algo"));
        q.bits = algo == "nvfp4" ? 4 : 8;
        q.format = algo.empty() ? "modelopt" : algo;
    } else if (q.method == "compressed-tensors") {
        q.bits = 8;
        if (qc->contains("config_groups") && (*qc)["config_groups"].is_object() && !(*qc)["config_groups"].empty()) {
            const auto & g = (*qc)["config_groups"].begin().value();
            if (g.is_object() && g.contains("weights") && g["weights"].is_object()) q.bits = number(g["weights"], "num_bits", 8);
        }
        const std::string fmt_name = text(*qc, "format");
        q.format = fmt_name.starts_with("nvfp4") ? "nvfp4" : fmt::format("compressed-tensors-w{}", q.bits);
    } else if (q.method == "bitsandbytes") {
        const bool four = qc->contains("load_in_4bit") && (*qc)["load_in_4bit"].is_boolean() && (*qc)["load_in_4bit"].get<bool>();
        q.bits = four ? 4 : 8;
        q.format = four ? "bnb-" + detail::ascii_lower(text(*qc, "bnb_4bit_quant_type").empty() ? "fp4" : text(*qc, "bnb_4bit_quant_type")) : "bnb-int8";
    } else {
        warn.push_back(fmt::format("{}: quantization_config: unknown quant_method '{}': parameters counted as stored "
                                   "(bytes are exact)", where, q.method));
        q.format = q.method;
    }
    return q;
}

uint64_t st_param_count(const st_tensor & t, const st_quant & q) {
    if (q.bits == 0) return t.n_elements;
    if (is_aux(t.name)) return 0;
    const uint32_t bits = st_dtype_bits(t.dtype);
    if (st_dtype_is_integer(t.dtype) && q.bits < bits) {
        return static_cast<uint64_t>(static_cast<unsigned __int128>(t.n_elements) * bits / q.bits);
    }
    return t.n_elements;
}

void apply_safetensors_weights(model_desc & m, const std::vector<safetensors_file> & shards,
                               std::string_view config_json, std::string_view where, warnings & warn) {
    const st_quant q = st_quant_from_config(config_json, where, warn);
    model_weights w;
    w.layers.assign(m.n_layer, weight_group{});
    std::map<std::string, uint64_t> bytes_by_dtype;
    std::vector<uint8_t> seen(m.n_layer, 0);
    bool has_head = false;
    uint64_t n_tower = 0, n_mtp = 0;
    for (const auto & f : shards) {
        for (const auto & t : f.tensors()) {
            const uint64_t n = st_param_count(t, q);
            bytes_by_dtype[st_dtype_name(t.dtype)] += t.bytes();
            const std::string_view name = text_name(t.name);
            const auto il = layer_index(name);
            if (is_tower(t.name)) {
                add(w.other, t, n, false);
                add(w.vision, t, n, false);
                ++n_tower;
            } else if ((il && *il >= m.n_layer) || has_prefix(name, "mtp.") || has_prefix(name, "mtp_layers.")) {
                add(w.mtp, t, n, false); // not in the totals: llama.cpp does not load them (model.h)
                ++n_mtp;
            } else if (il) {
                add(w.layers[*il], t, n, t.name.find(".experts.") != std::string::npos);
                seen[*il] = 1;
            } else if (has_prefix(name, "embed_tokens.")) {
                add(w.token_embd, t, n, false);
            } else if (has_prefix(t.name, "lm_head.") || has_prefix(name, "lm_head.") || has_prefix(name, "norm.")) {
                add(w.output, t, n, false);
                has_head |= name.find("lm_head.") != std::string_view::npos || has_prefix(t.name, "lm_head.");
            } else {
                add(w.other, t, n, false);
            }
        }
    }
    for (uint32_t il = 0; il < m.n_layer; ++il) {
        if (!seen[il]) {
            warn.push_back(fmt::format("{}: the safetensors hold no tensor for layer {} of {}", where, il, m.n_layer));
            break;
        }
    }
    if (n_tower + n_mtp > 0) {
        warn.push_back(fmt::format("{}: reported apart from the text model: {} vision/audio tensors ({} params, {} bytes, "
                                   "counted in 'other'), {} MTP tensors ({} params, {} bytes, not counted)", where, n_tower,
                                   w.vision.n_params, w.vision.bytes, n_mtp, w.mtp.n_params, w.mtp.bytes));
    }
    if (m.tied_embeddings && has_head) {
        warn.push_back(fmt::format("{}: tie_word_embeddings is set but the checkpoint holds lm_head", where));
    }
    w.exact = true;
    if (!q.format.empty()) {
        w.format = q.format;
    } else {
        const auto most = std::max_element(bytes_by_dtype.begin(), bytes_by_dtype.end(),
                                           [](const auto & a, const auto & b) { return a.second < b.second; });
        w.format = most == bytes_by_dtype.end() ? "safetensors" : detail::ascii_lower(most->first);
    }
    m.weights = std::move(w);
}

} // namespace kvfit
