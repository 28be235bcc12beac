// quantization_config of a config.json, as vLLM's quantization methods read it (from_config of
// vllm/model_executor/layers/quantization/{fp8,mxfp4,modelopt,gptq,awq}.py and compressed_tensors/compressed_tensors.py;
// vllm-project/vllm main, read through the search index in 2026-12, docs/rules/vllm-frontier.md §8.1). Only what
// decides the bytes of each linear layer is kept (include/kvfit/model.h weight_quant).
#include "kvfit/sources.h"
#include "core/util.h"

#include "sources/hf_detail.h"
#include "sources/text.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace kvfit {
namespace {

using json = nlohmann::json;


std::string text_of(const json & o, const char * key) {
    return o.is_object() && o.contains(key) && o[key].is_string() ? detail::ascii_lower(o[key].get<std::string>()) : "";
}

uint32_t uint_of(const json & o, const char * key, uint32_t def) {
    if (!o.is_object() || !o.contains(key) || !o[key].is_number()) return def;
    const double v = o[key].get<double>();
    return v > 0 && v < 1e6 ? uint32_t(v) : def; // GPTQ group_size -1 (per channel) reads as 0 below
}

bool flag_of(const json & o, const char * key, bool def) {
    return o.is_object() && o.contains(key) && o[key].is_boolean() ? o[key].get<bool>() : def;
}

std::vector<std::string> list_of(const json & o, std::initializer_list<const char *> keys) {
    std::vector<std::string> out;
    for (const char * k : keys) {
        if (!o.is_object() || !o.contains(k) || !o[k].is_array()) continue;
        for (const auto & e : o[k]) {
            if (e.is_string()) out.push_back(e.get<std::string>());
        }
    }
    return out;
}

weight_quant fp8(const json & qc) {
    weight_quant q;
    q.method = "fp8";
    q.bits = 8;
    if (qc.contains("weight_block_size") && qc["weight_block_size"].is_array() && qc["weight_block_size"].size() == 2 &&
        qc["weight_block_size"][0].is_number_integer() && qc["weight_block_size"][1].is_number_integer() &&
        qc["weight_block_size"][0].get<int64_t>() > 0 && qc["weight_block_size"][1].get<int64_t>() > 0) {
        q.block_n = uint32_t(std::min<int64_t>(qc["weight_block_size"][0].get<int64_t>(), 1 << 20));
        q.block_k = uint32_t(std::min<int64_t>(qc["weight_block_size"][1].get<int64_t>(), 1 << 20));
    }
    q.static_input_scale = text_of(qc, "activation_scheme") == "static";
    q.ignore = list_of(qc, {"ignored_layers", "modules_to_not_convert"});
    q.label = q.block_n ? fmt::format("fp8 (block {}x{})", q.block_n, q.block_k) : "fp8 (per-tensor)";
    return q;
}

weight_quant nvfp4(uint32_t group) {
    weight_quant q;
    q.method = "nvfp4";
    q.bits = 4;
    q.group_size = group ? group : 16;
    q.label = "nvfp4";
    return q;
}

weight_quant int_n(const std::string & method, uint32_t bits, uint32_t group, bool zero) {
    weight_quant q;
    q.method = method;
    q.bits = bits;
    q.group_size = group;
    q.zero_point = zero;
    q.label = fmt::format("{}-int{}{}", method, bits, group ? fmt::format(" (group {})", group) : "");
    return q;
}

// compressed-tensors "mxfp4-pack-quantized" (vllm compressed_tensors/schemes/compressed_tensors_w4a16_mxfp4.py
// CompressedTensorsW4A16Mxfp4, and the MoE method of compressed_tensors_moe_w4a4_mxfp4.py): E2M1 values two per uint8
// (weight_packed [N, K/2]) and one uint8 E8M0 scale per 32 (weight_scale [N, K/32]), no global scale: MXFP4's bytes.
// `experts` when the group's targets name the routed experts only (Kimi-K3: "re:.*experts.*" style targets).
weight_quant mxfp4_packed(bool experts) {
    weight_quant q;
    q.method = "mxfp4";
    q.bits = 4;
    q.group_size = 32;
    q.experts_only = experts;
    q.label = experts ? "mxfp4-pack-quantized (experts)" : "mxfp4-pack-quantized";
    return q;
}

// Whether every target of a config_groups entry names routed experts (".experts." in a module name or a regex).
bool targets_experts_only(const json & group) {
    if (!group.contains("targets") || !group["targets"].is_array() || group["targets"].empty()) return false;
    return std::all_of(group["targets"].begin(), group["targets"].end(), [](const json & t) {
        return t.is_string() && t.get<std::string>().find("experts") != std::string::npos;
    });
}

// compressed-tensors: the first config_groups entry (vllm compressed_tensors.py _get_scheme_from_parts).
weight_quant compressed(const json & qc, std::string_view where, warnings & warn) {
    weight_quant q;
    const json * w = nullptr;
    const json * grp = nullptr;
    if (qc.contains("config_groups") && qc["config_groups"].is_object()) {
        for (const auto & g : qc["config_groups"]) {
            if (g.is_object() && g.contains("weights") && g["weights"].is_object()) {
                w = &g["weights"];
                grp = &g;
                break;
            }
        }
    }
    // the format names the bytes: the top level's, or the group's (both spellings are published)
    const std::string format = !text_of(qc, "format").empty() ? text_of(qc, "format") : grp ? text_of(*grp, "format") : "";
    if (format == "mxfp4-pack-quantized") {
        if (grp == nullptr) {
            warn.push_back(fmt::format("{}: quantization_config: compressed-tensors format mxfp4-pack-quantized without "
                                       "config_groups: the layers it covers are not stated; sized as MXFP4 routed experts "
                                       "(Kimi-K3's published targets), the other weights in the model dtype", where));
        }
        q = mxfp4_packed(grp == nullptr || targets_experts_only(*grp));
        q.ignore = list_of(qc, {"ignore"});
        return q;
    }
    if (w == nullptr) {
        warn.push_back(fmt::format("{}: quantization_config: compressed-tensors without config_groups weights: weights "
                                   "sized in the model dtype", where));
        return q;
    }
    const uint32_t bits = uint_of(*w, "num_bits", 8);
    const std::string type = text_of(*w, "type"), strategy = text_of(*w, "strategy");
    const uint32_t group = uint_of(*w, "group_size", 0);
    if (type == "float" && bits == 8) {
        q.method = "fp8";
        q.bits = 8;
        if (strategy == "block" && w->contains("block_structure") && (*w)["block_structure"].is_array() &&
            (*w)["block_structure"].size() == 2 && (*w)["block_structure"][0].is_number() &&
            (*w)["block_structure"][1].is_number() && (*w)["block_structure"][0].get<double>() >= 1 &&
            (*w)["block_structure"][1].get<double>() >= 1) {
            q.block_n = uint32_t((*w)["block_structure"][0].get<double>());
            q.block_k = uint32_t((*w)["block_structure"][1].get<double>());
        }
        q.per_channel = strategy == "channel";
        q.label = q.block_n ? fmt::format("fp8 (block {}x{})", q.block_n, q.block_k)
                            : q.per_channel ? "fp8 (per-channel)" : "fp8 (per-tensor)";
    } else if (type == "float" && bits == 4) {
        q = nvfp4(group);
    } else if (type == "int" || type.empty()) {
        q = int_n("compressed-tensors", bits, strategy == "group" ? group : 0, !flag_of(*w, "symmetric", true));
        q.label = fmt::format("compressed-tensors w{}a16{}", bits, q.group_size ? fmt::format(" (group {})", group) : "");
    }
    q.ignore = list_of(qc, {"ignore"});
    return q;
}

// The quantization_config of a parsed config.json (kvfit::{anonymous}: in a unity build detail has a text_of too).
weight_quant quant_of_root(const json & root, std::string_view where, warnings & warn) {
    weight_quant q;
    const json * qc = nullptr;
    for (const char * k : {"quantization_config", "text_config"}) {
        if (!root.is_object() || !root.contains(k) || !root[k].is_object()) continue;
        const json & o = root[k];
        if (std::string(k) == "quantization_config") qc = &o;
        else if (o.contains("quantization_config") && o["quantization_config"].is_object()) qc = &o["quantization_config"];
        if (qc) break;
    }
    if (qc == nullptr) return q;
    // DeepSeek-V4: "expert_dtype": "fp4" beside an fp8 block quantization_config (routed experts in FP4, e8m0 scales
    // per 32, as MXFP4 stores them)
    const bool fp4_experts = text_of(root, "expert_dtype") == "fp4";
    const std::string method = text_of(*qc, "quant_method");
    if (method == "fp8") {
        q = fp8(*qc);
    } else if (method == "mxfp4") {
        q.method = "mxfp4";
        q.bits = 4;
        q.group_size = 32;
        q.experts_only = true; // Mxfp4Config.get_quant_method: UnquantizedLinearMethod for every LinearBase
        q.ignore = list_of(*qc, {"modules_to_not_convert"});
        q.label = "mxfp4 (experts)";
    } else if (method == "modelopt" || method == "modelopt_fp4") {
        const json & inner = qc->contains("quantization") && (*qc)["quantization"].is_object() ? (*qc)["quantization"] : *qc;
        const std::string algo = text_of(inner, "quant_algo");
        if (algo == "nvfp4" || method == "modelopt_fp4") {
            q = nvfp4(uint_of(inner, "group_size", 16));
        } else if (algo == "fp8") {
            q = fp8(json::object());
            q.static_input_scale = true; // ModelOptFp8LinearMethod: weight_scale and input_scale per linear
        } else {
            warn.push_back(fmt::format("{}: quantization_config: modelopt quant_algo '{}' is not sized: weights in the model "
                                       "dtype", where, algo));
            return weight_quant{};
        }
        q.ignore = list_of(inner, {"exclude_modules", "ignore"});
    } else if (method == "gptq" || method == "gptq_marlin") {
        const uint32_t bits = uint_of(*qc, "bits", 4);
        q = int_n("gptq", bits, uint_of(*qc, "group_size", 0), true);
        q.lm_head = flag_of(*qc, "lm_head", false);
        q.ignore = list_of(*qc, {"modules_to_not_convert"});
    } else if (method == "awq" || method == "awq_marlin") {
        const uint32_t bits = uint_of(*qc, "bits", uint_of(*qc, "w_bit", 4));
        q = int_n("awq", bits, uint_of(*qc, "group_size", uint_of(*qc, "q_group_size", 128)), flag_of(*qc, "zero_point", true));
        q.ignore = list_of(*qc, {"modules_to_not_convert"});
    } else if (method == "compressed-tensors") {
        q = compressed(*qc, where, warn);
    } else if (!method.empty()) {
        warn.push_back(fmt::format("{}: quantization_config: quant_method '{}' is not sized by the serving runtimes: weights "
                                   "in the model dtype (--weights-size gives the checkpoint's size)", where, method));
    }
    if (fp4_experts && !q.method.empty()) {
        q.expert_method = "mxfp4";
        q.label += ", fp4 experts";
    }
    return q;
}

} // namespace

weight_quant weight_quant_from_config(std::string_view config_json, std::string_view where, warnings & warn) {
    json root;
    try {
        root = detail::parse_config_json(config_json, where);
    } catch (const error &) {
        return {}; // model_from_hf_config reports an unreadable config
    }
    return quant_of_root(root, where, warn);
}

weight_quant detail::weight_quant_from_json(const nlohmann::json & root, std::string_view where, warnings & warn) {
    return quant_of_root(root, where, warn);
}

weight_quant weight_quant_from_name(std::string_view name_in) {
    const std::string name = detail::ascii_lower(std::string(name_in));
    if (name == "fp8") return fp8(json::object());
    if (name == "fp8-block" || name == "fp8_block") return fp8(json{{"weight_block_size", {128, 128}}});
    if (name == "nvfp4" || name == "modelopt_fp4") return nvfp4(16);
    if (name == "mxfp4") {
        weight_quant q;
        q.method = "mxfp4";
        q.bits = 4;
        q.group_size = 32;
        q.experts_only = true;
        q.label = "mxfp4 (experts)";
        return q;
    }
    if (name == "gptq" || name == "gptq_marlin" || name == "int4") return int_n("gptq", 4, 128, true);
    if (name == "awq" || name == "awq_marlin") return int_n("awq", 4, 128, true);
    if (name == "int8") return int_n("gptq", 8, 128, true);
    return {};
}

} // namespace kvfit
